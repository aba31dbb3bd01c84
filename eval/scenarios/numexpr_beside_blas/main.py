"""Feature engineering beside model scoring, as an analytics service writes it: a thread pool
with one worker per CPU; half the tasks evaluate an array expression with numexpr (its own
thread pool), the other half multiply matrices with numpy (the BLAS Debian selects, the pthreads
OpenBLAS, with its pool). Each library sizes its pool for the whole machine inside every worker.
Usage: main.py TASKS N SIZE"""
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numexpr as ne
import numpy as np


def main():
    tasks, n, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(11)
    x, y = rng.standard_normal(n), rng.standard_normal(n)
    a, b = rng.standard_normal((size, size)), rng.standard_normal((size, size))

    def task(i):
        if i % 2:
            return float(ne.evaluate("2 * x + 3 * y ** 2 - sin(x)", local_dict={"x": x, "y": y})[0])
        return float((a @ b)[0, 0])

    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        total = sum(pool.map(task, range(tasks)))
    print(f"{tasks} tasks: checksum {total:.3f}")


if __name__ == "__main__":
    main()
