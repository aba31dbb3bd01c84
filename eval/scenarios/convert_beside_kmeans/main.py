"""k-means clustering of a feature matrix, as scikit-learn users write it: KMeans runs its
Lloyd iterations in scikit-learn's OpenMP loops (libgomp) over BLAS products (the pthreads
OpenBLAS).
Usage: main.py ROWS"""
import sys

import numpy as np
from sklearn.cluster import KMeans


def main():
    rows = int(sys.argv[1])
    rng = np.random.default_rng(3)
    x = rng.standard_normal((rows, 32))
    km = KMeans(n_clusters=24, n_init=3, max_iter=60, random_state=0).fit(x)
    print(f"{rows} rows: inertia {km.inertia_:.0f}")


if __name__ == "__main__":
    main()
