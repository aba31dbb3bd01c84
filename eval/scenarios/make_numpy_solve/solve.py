"""One linear-algebra job of a batch, as a numpy script a Makefile target runs: build a
random N-by-N system from SEED, solve it with numpy.linalg.solve and check it with matrix
products (LAPACK and BLAS through the pthreads OpenBLAS, whose pool is sized for the whole
machine in every job).
Usage: solve.py N SEED"""
import sys

import numpy as np


def main():
    n, seed = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal((n, n))
    residual = 0.0
    for _ in range(4):
        x = np.linalg.solve(a, b)
        residual += float(np.abs(a @ x - b).max())
        b = a @ b / n
    print(f"system {seed} of {n}: residual {residual:.2e}")


if __name__ == "__main__":
    main()
