"""A process pool over numpy, as a batch job writes it: multiprocessing.Pool with one process
per CPU, each multiplying matrices with the BLAS Debian selects (the pthreads OpenBLAS), whose
pool in every process is sized for the whole machine.
Usage: main.py TASKS SIZE"""
import os
import sys
from multiprocessing import Pool

import numpy as np

SIZE = int(sys.argv[2]) if len(sys.argv) > 2 else 128


def product(i):
    rng = np.random.default_rng(i % 4)
    a, b = rng.standard_normal((SIZE, SIZE)), rng.standard_normal((SIZE, SIZE))
    total = 0.0
    for _ in range(20):
        total += float((a @ b)[0, 0])
    return total


def main():
    tasks = int(sys.argv[1])
    with Pool(os.cpu_count()) as pool:
        total = sum(pool.map(product, range(tasks), chunksize=4))
    print(f"{tasks} tasks of {SIZE}x{SIZE}: checksum {total:.3f}")


if __name__ == "__main__":
    main()
