"""QR factorisations of several matrices in a thread pool, as numpy users write it: a
concurrent.futures.ThreadPoolExecutor of {NTHREADS} threads, each calling numpy.linalg.qr
(LAPACK through the pthreads OpenBLAS, which releases the GIL and sizes its own pool for the
whole machine under every thread).
Usage: main.py ROWS COLS MATRICES NTHREADS"""
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def factor(seed, rows, cols):
    rng = np.random.default_rng(seed)
    q, r = np.linalg.qr(rng.standard_normal((rows, cols)))
    return float(np.abs(np.diag(r)).min())


def main():
    rows, cols, matrices, threads = (int(a) for a in sys.argv[1:5])
    with ThreadPoolExecutor(max_workers=threads) as pool:
        smallest = min(pool.map(lambda s: factor(s, rows, cols), range(matrices)))
    print(f"{matrices} matrices of {rows}x{cols}, {threads} threads: min |r_ii| {smallest:.3f}")


if __name__ == "__main__":
    main()
