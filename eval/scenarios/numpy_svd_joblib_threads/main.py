"""Batched decompositions with joblib's thread backend, as a user parallelises a loop:
Parallel(n_jobs={NJOBS}, prefer="threads") over numpy.linalg.svd (LAPACK through the pthreads
OpenBLAS, whose pool is sized for the whole machine). Usage: main.py COUNT SIZE NJOBS"""
import sys

import numpy as np
from joblib import Parallel, delayed


def main():
    count, size, jobs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(11)
    mats = [rng.standard_normal((size, size)) for _ in range(count)]
    sv = Parallel(n_jobs=jobs, prefer="threads")(delayed(np.linalg.svd)(m, compute_uv=False) for m in mats)
    print(f"{count} x {size}, {jobs} jobs: {sum(float(s[0]) for s in sv):.2f}")


if __name__ == "__main__":
    main()
