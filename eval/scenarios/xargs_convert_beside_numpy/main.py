"""Eigen-decompositions of a few symmetric matrices, as numpy users write it:
numpy.linalg.eigh (LAPACK's symmetric eigensolver through the pthreads OpenBLAS, whose pool
is sized for the whole machine).
Usage: main.py N COUNT"""
import sys

import numpy as np


def main():
    n, count = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(7)
    spread = 0.0
    for _ in range(count):
        a = rng.standard_normal((n, n))
        w, v = np.linalg.eigh(a @ a.T / n)
        spread += float(w[-1] - w[0]) + float(np.abs(v[:, -1]).max())
    print(f"{count} matrices of {n}: spread {spread:.3f}")


if __name__ == "__main__":
    main()
