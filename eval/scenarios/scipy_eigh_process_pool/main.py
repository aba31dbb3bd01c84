"""Many independent eigen-decompositions as SciPy users batch them: a multiprocessing pool of
worker processes, each calling scipy.linalg.eigh (LAPACK through the BLAS Debian selects, the
pthreads OpenBLAS, whose pool is sized for the whole machine in every process).
Usage: main.py TASKS SIZE PROCESSES"""
import sys
from multiprocessing import Pool

import numpy as np
from scipy.linalg import eigh


def work(seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((SIZE, SIZE))
    w = eigh(a @ a.T, eigvals_only=True)
    return float(w[-1])


def main():
    global SIZE
    tasks, SIZE, procs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    with Pool(procs) as pool:
        top = pool.map(work, range(tasks), chunksize=1)
    print(f"{tasks} eigh of {SIZE}x{SIZE} on {procs} processes: {max(top):.1f}")


SIZE = 0
if __name__ == "__main__":
    main()
