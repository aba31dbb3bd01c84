"""Summary statistics of one shard of a data release, as a numpy script a Makefile target runs:
generate the shard's records from SEED, form their covariance matrix and its eigenvalues
(BLAS and LAPACK through the pthreads OpenBLAS, whose pool is sized for the whole machine in
every job).
Usage: stats.py ROWS COLS SEED"""
import sys

import numpy as np


def main():
    rows, cols, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(seed)
    factors = rng.standard_normal((rows, 12))
    x = factors @ rng.standard_normal((12, cols)) + rng.standard_normal((rows, cols))
    x -= x.mean(axis=0)
    cov = x.T @ x / (rows - 1)
    w = np.linalg.eigvalsh(cov)
    print(f"shard {seed}: {rows}x{cols}, top 12 eigenvalues explain {w[-12:].sum() / w.sum():.3f}")


if __name__ == "__main__":
    main()
