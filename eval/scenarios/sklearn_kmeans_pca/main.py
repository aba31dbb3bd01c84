"""A scikit-learn model fit as a notebook writes it: PCA (LAPACK through the BLAS Debian
selects, the pthreads OpenBLAS) then k-means (scikit-learn's OpenMP loops, libgomp). Each
runtime sizes its pool for the whole machine.
Usage: main.py SAMPLES FEATURES"""
import sys

import numpy as np
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA


def main():
    samples, features = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(3)
    x = rng.standard_normal((samples, features))
    reduced = PCA(n_components=features // 2, random_state=0).fit_transform(x)
    model = KMeans(n_clusters=32, n_init=3, random_state=0).fit(reduced)
    print(f"{samples}x{features}: inertia {model.inertia_:.1f}")


if __name__ == "__main__":
    main()
