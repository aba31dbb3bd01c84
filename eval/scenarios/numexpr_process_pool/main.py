"""Array expressions evaluated by numexpr in a pool of worker processes, as numexpr users write
it: a multiprocessing.Pool of {NPROC} processes, each evaluating its chunks with
numexpr.evaluate, whose virtual machine runs a thread pool sized for the whole machine in
every process.
Usage: main.py CHUNKS ROWS NPROC"""
import sys
from multiprocessing import Pool

import numexpr as ne
import numpy as np


def work(args):
    seed, rows = args
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(rows), rng.standard_normal(rows)
    total = 0.0
    for _ in range(6):
        total += float(ne.evaluate("sum(sin(a) * exp(-b * b) + sqrt(abs(a * b)))"))
    return total


def main():
    chunks, rows, nproc = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    with Pool(nproc) as pool:
        total = sum(pool.map(work, [(s, rows) for s in range(chunks)]))
    print(f"{chunks} chunks of {rows}, {nproc} processes: {total:.1f}")


if __name__ == "__main__":
    main()
