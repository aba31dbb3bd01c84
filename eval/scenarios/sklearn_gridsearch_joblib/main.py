"""A scikit-learn hyper-parameter search as its users write it: GridSearchCV over kernel ridge
regression with n_jobs worker processes (joblib's loky), each fit solving with the BLAS Debian
selects (the pthreads OpenBLAS). joblib caps the BLAS threads of its workers itself.
Usage: main.py SAMPLES JOBS"""
import sys

import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV


def main():
    samples, jobs = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(3)
    x = rng.standard_normal((samples, 50))
    y = x @ rng.standard_normal(50) + rng.standard_normal(samples)
    grid = {"alpha": [0.1, 1.0], "gamma": [0.01, 0.1]}
    search = GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=3, n_jobs=jobs).fit(x, y)
    print(f"{samples} samples, {jobs} jobs: best {search.best_params_}")


if __name__ == "__main__":
    main()
