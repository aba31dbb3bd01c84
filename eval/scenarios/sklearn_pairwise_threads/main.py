"""Nearest-neighbour distances as scikit-learn users compute them: pairwise_distances with
n_jobs threads (joblib's threading backend), each chunk a matrix product in the BLAS Debian
selects (the pthreads OpenBLAS), whose pool is sized for the whole machine in every thread.
Usage: main.py ROWS COLUMNS JOBS"""
import sys

import numpy as np
from sklearn.metrics import pairwise_distances_chunked


def main():
    rows, cols, jobs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(7)
    x = rng.standard_normal((rows, cols))
    y = rng.standard_normal((rows // 2, cols))
    nearest = 0.0
    for _ in range(3):
        for chunk in pairwise_distances_chunked(x, y, n_jobs=jobs, working_memory=16):
            nearest += float(chunk.min(axis=1).sum())
    print(f"{rows}x{cols}, {jobs} jobs: {nearest:.3f}")


if __name__ == "__main__":
    main()
