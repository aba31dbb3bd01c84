"""A thread pool of numpy matrix products, as a data pipeline writes it: one worker per CPU,
each multiplying its own pair of matrices. numpy calls the BLAS Debian selects (the pthreads
OpenBLAS), which sizes its own pool for the whole machine inside every worker.
Usage: main.py TASKS SIZE"""
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def main():
    tasks, size = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(7)
    pairs = [(rng.standard_normal((size, size)), rng.standard_normal((size, size))) for _ in range(4)]

    def product(i):
        a, b = pairs[i % len(pairs)]
        return float((a @ b)[0, 0])

    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        total = sum(pool.map(product, range(tasks)))
    print(f"{tasks} products of {size}x{size}: checksum {total:.3f}")


if __name__ == "__main__":
    main()
