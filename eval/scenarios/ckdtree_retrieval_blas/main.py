"""Near-duplicate search over an image collection's descriptors, as a retrieval script runs
it: the collection's descriptors are reduced by PCA (a covariance matrix and its eigenvectors:
BLAS and LAPACK in the pthreads OpenBLAS) and indexed with scipy's cKDTree; each batch of
query descriptors is projected (a matrix product in OpenBLAS), searched with
cKDTree.query(workers=WORKERS) (scipy's own query threads; 0 passes -1, one per CPU) and its
candidates are re-ranked on the full descriptors (numpy, one thread). The OpenBLAS pool and
the query threads take turns, each sized for the whole machine.
Usage: main.py DB BATCHES BATCH DIM KEEP WORKERS"""
import sys

import numpy as np
from scipy.spatial import cKDTree


def main():
    db_size, batches, batch, dim, keep, workers = (int(a) for a in sys.argv[1:7])
    rng = np.random.default_rng(17)
    basis = rng.standard_normal((48, dim))
    db = rng.standard_normal((db_size, 48)) ** 3 @ basis + 0.1 * rng.standard_normal((db_size, dim))
    mean = db.mean(axis=0)
    centred = db - mean
    _, vecs = np.linalg.eigh(centred.T @ centred / db_size)
    components = vecs[:, -keep:]
    tree = cKDTree(centred @ components)
    found = 0
    for _ in range(batches):
        truth = rng.integers(0, db_size, batch)
        queries = db[truth] + 0.3 * rng.standard_normal((batch, dim))
        _, idx = tree.query((queries - mean) @ components, k=8, workers=workers or -1)
        exact = ((db[idx] - queries[:, None, :]) ** 2).sum(axis=2)
        found += int((idx[np.arange(batch), exact.argmin(axis=1)] == truth).sum())
    print(f"{found}/{batches * batch} queries matched their source")


if __name__ == "__main__":
    main()
