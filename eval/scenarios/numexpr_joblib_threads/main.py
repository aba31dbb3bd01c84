"""Per-chunk feature scoring with joblib's thread backend, as numexpr users parallelise a loop:
Parallel(n_jobs={NJOBS}, prefer="threads") over chunks; each chunk draws its samples with
numpy, scores them with numexpr.evaluate (numexpr's virtual machine runs its own thread pool,
sized for the whole machine, and serialises the callers of evaluate on a global lock) and
ranks the scores with numpy's partition and sort (which release the GIL).
Usage: main.py CHUNKS ROWS NJOBS"""
import sys

import numexpr as ne
import numpy as np
from joblib import Parallel, delayed


def score(seed, rows):
    rng = np.random.default_rng(seed)
    a, b, c = rng.standard_normal(rows), rng.standard_normal(rows), rng.random(rows)
    s = ne.evaluate("exp(-0.5 * (a * a + b * b)) * log1p(c) + sin(a * b) ** 2")
    top = np.sort(np.partition(s, rows - rows // 10)[rows - rows // 10:])
    return float(top[-1] - top[0]) + float(np.median(s))


def main():
    chunks, rows, jobs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    spreads = Parallel(n_jobs=jobs, prefer="threads")(
        delayed(score)(seed, rows) for seed in range(chunks))
    print(f"{chunks} chunks of {rows}, {jobs} threads: {sum(spreads):.4f}")


if __name__ == "__main__":
    main()
