"""Many linear systems solved in a thread pool, as SciPy users write it: a
ThreadPoolExecutor of {WORKERS} threads, each factorising its matrices with
scipy.linalg.lu_factor and solving with lu_solve (LAPACK through the pthreads OpenBLAS, which
releases the GIL and sizes its own pool for the whole machine under every thread).
Usage: main.py N SYSTEMS WORKERS"""
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.linalg import lu_factor, lu_solve


def solve(seed, n):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) + n * np.eye(n)
    b = rng.standard_normal((n, 8))
    return float(np.abs(lu_solve(lu_factor(a), b)).sum())


def main():
    n, systems, workers = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    with ThreadPoolExecutor(max_workers=workers) as pool:
        total = sum(pool.map(lambda s: solve(s, n), range(systems)))
    print(f"{systems} systems of {n}, {workers} workers: {total:.1f}")


if __name__ == "__main__":
    main()
