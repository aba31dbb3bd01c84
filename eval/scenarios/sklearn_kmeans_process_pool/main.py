"""k-means clustering of several datasets in a pool of worker processes, as scikit-learn users
write it: a multiprocessing.Pool of {NPROC} processes maps KMeans fits over the datasets;
in every process KMeans runs its Lloyd iterations in scikit-learn's OpenMP loops (libgomp)
over BLAS products (the pthreads OpenBLAS), both sized for the whole machine.
Usage: main.py DATASETS ROWS NPROC"""
import sys
from multiprocessing import Pool

import numpy as np
from sklearn.cluster import KMeans


def fit(args):
    seed, rows = args
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((16, 24)) * 4
    x = centers[rng.integers(0, 16, rows)] + rng.standard_normal((rows, 24))
    km = KMeans(n_clusters=16, n_init=2, max_iter=50, random_state=seed).fit(x)
    return km.inertia_


def main():
    datasets, rows, nproc = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    with Pool(nproc) as pool:
        inertias = pool.map(fit, [(s, rows) for s in range(datasets)])
    print(f"{datasets} datasets of {rows} rows, {nproc} processes: "
          f"mean inertia {np.mean(inertias):.0f}")


if __name__ == "__main__":
    main()
