"""The numpy program of the CLI tests: a thread pool of matrix products, one worker per CPU,
through Debian's numpy and the BLAS it selects (the pthreads OpenBLAS, loaded at run time).
Usage: blas_pool.py TASKS SIZE"""
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

tasks, size = int(sys.argv[1]), int(sys.argv[2])
a = np.random.default_rng(3).standard_normal((size, size))
with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
    print(sum(pool.map(lambda i: float((a @ a)[0, 0]), range(tasks))))
