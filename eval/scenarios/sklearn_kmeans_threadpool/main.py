"""Several k-means fits at once, as a user sweeps the cluster count: a ThreadPoolExecutor of
{WORKERS} threads, each fit running scikit-learn's OpenMP loops (libgomp), whose team is sized
for the whole machine in every thread. Usage: main.py ROWS WORKERS"""
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.cluster import KMeans


def main():
    rows, workers = int(sys.argv[1]), int(sys.argv[2])
    x = np.random.default_rng(3).standard_normal((rows, 16))

    def fit(k):
        return KMeans(n_clusters=k, n_init=1, max_iter=60, tol=0, random_state=k, algorithm="lloyd").fit(x).inertia_

    with ThreadPoolExecutor(max_workers=workers) as pool:
        inertias = list(pool.map(fit, range(4, 12)))
    print(f"{rows} rows, {workers} workers: {sum(inertias):.1f}")


if __name__ == "__main__":
    main()
