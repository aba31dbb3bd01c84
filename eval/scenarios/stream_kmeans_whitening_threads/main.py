"""Online clustering of a sensor stream, as a monitoring service runs it in two stages on
threads joined by a queue: the whitening stage mixes each batch of raw readings (matrix
products in the pthreads OpenBLAS) and refreshes its whitening transform from a running
covariance every few batches (numpy.linalg.eigh, LAPACK), while the clustering stage feeds
the whitened batches to scikit-learn's MiniBatchKMeans.partial_fit (OpenMP loops, libgomp;
each call caps OpenBLAS at one thread, for the whole process, through threadpoolctl). Both
pools are sized for the whole machine and work at the same time.
Usage: main.py BATCHES ROWS DIM CLUSTERS"""
import queue
import sys
import threading

import numpy as np
from sklearn.cluster import MiniBatchKMeans


def whiten(batches, rows, dim, out):
    rng = np.random.default_rng(3)
    mix = rng.standard_normal((dim, dim)) / np.sqrt(dim)
    centres = 3.0 * rng.standard_normal((24, dim))
    mean, cov, w = np.zeros(dim), np.eye(dim), np.eye(dim)
    for i in range(batches):
        raw = (centres[rng.integers(0, len(centres), rows)] + rng.standard_normal((rows, dim))) @ mix
        mean = 0.9 * mean + 0.1 * raw.mean(axis=0)
        centred = raw - mean
        cov = 0.9 * cov + 0.1 * (centred.T @ centred) / rows
        if i % 4 == 0:
            vals, vecs = np.linalg.eigh(cov)
            w = vecs / np.sqrt(np.maximum(vals, 1e-9))
        out.put(centred @ w)
    out.put(None)


def main():
    batches, rows, dim, clusters = (int(a) for a in sys.argv[1:5])
    stream = queue.Queue(maxsize=4)
    stage = threading.Thread(target=whiten, args=(batches, rows, dim, stream))
    stage.start()
    model = MiniBatchKMeans(n_clusters=clusters, n_init=3, random_state=0)
    seen = 0
    while (batch := stream.get()) is not None:
        model.partial_fit(batch)
        seen += len(batch)
    stage.join()
    print(f"{seen} readings in {batches} batches, {clusters} clusters, "
          f"last batch inertia {model.inertia_:.1f}")


if __name__ == "__main__":
    main()
