"""Customer segmentation and per-segment profiles, as an analyst's script runs on a cluster node
whose environment module exports OMP_PROC_BIND=true and OMP_PLACES=cores: KMeans
(scikit-learn's OpenMP loops, libgomp) splits the customers into segments, then a
ThreadPoolExecutor with one thread per CPU profiles the segments (numpy sorts, quantiles and
ufuncs, which release the GIL; a covariance spectrum through OpenBLAS). The threads are
created by the main thread after libgomp has bound it to its first place.
Usage: main.py ROWS COLS SEGMENTS"""
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.cluster import KMeans


def profile(x, rng_seed):
    rng = np.random.default_rng(rng_seed)
    boot = x[rng.integers(0, len(x), (16, len(x)))]
    q = np.quantile(boot, [0.1, 0.5, 0.9], axis=1)
    spread = np.sort(np.abs(boot - boot.mean(axis=1, keepdims=True)), axis=1)[:, -len(x) // 20:]
    w = np.linalg.eigvalsh(np.cov(x, rowvar=False))
    return float(q.std() + spread.mean() + w[-1] / w.sum())


def main():
    rows, cols, segments = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(2)
    centers = rng.normal(0, 4, (segments, cols))
    x = centers[rng.integers(0, segments, rows)] + rng.standard_normal((rows, cols))
    km = KMeans(n_clusters=segments, n_init=3, max_iter=100, random_state=0).fit(x)
    groups = [x[km.labels_ == k] for k in range(segments)]
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        scores = list(pool.map(profile, groups, range(segments)))
    print(f"{rows} customers, {segments} segments: {sum(scores):.3f}")


if __name__ == "__main__":
    main()
