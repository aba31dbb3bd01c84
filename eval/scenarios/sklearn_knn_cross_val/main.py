"""Nearest-neighbour classification scored by cross-validation, as scikit-learn users write it:
cross_val_score(n_jobs={NJOBS}) runs the folds in loky worker processes; in each, the
neighbour search runs scikit-learn's OpenMP reduction (libgomp) over BLAS matrix products
(the pthreads OpenBLAS), both sized for the whole machine in every process.
Usage: main.py ROWS NJOBS"""
import sys

import numpy as np
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier


def main():
    rows, jobs = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(5)
    x = rng.standard_normal((rows, 48))
    y = (x[:, 0] + 0.5 * rng.standard_normal(rows) > 0).astype(int)
    scores = cross_val_score(KNeighborsClassifier(n_neighbors=5), x, y, cv=4, n_jobs=jobs)
    print(f"{rows} rows, {jobs} jobs: {scores.mean():.3f}")


if __name__ == "__main__":
    main()
