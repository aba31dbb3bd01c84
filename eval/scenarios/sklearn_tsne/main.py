"""A two-dimensional map of a feature matrix, as scikit-learn users draw one: TSNE with its PCA
initialisation (LAPACK through the pthreads OpenBLAS), the neighbour search (BLAS products)
and the Barnes-Hut gradient descent in scikit-learn's OpenMP loops (libgomp), one phase after
the other.
Usage: main.py ROWS"""
import sys

import numpy as np
from sklearn.manifold import TSNE


def main():
    rows = int(sys.argv[1])
    rng = np.random.default_rng(7)
    x = np.vstack([rng.standard_normal((rows // 4, 40)) + 4 * k for k in range(4)])
    y = TSNE(n_components=2, init="pca", learning_rate="auto", perplexity=30, n_iter=250,
             random_state=0).fit_transform(x)
    print(f"{rows} rows: spread {float(np.ptp(y)):.1f}")


if __name__ == "__main__":
    main()
