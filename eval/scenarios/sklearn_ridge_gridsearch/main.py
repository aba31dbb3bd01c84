"""A ridge-regression hyper-parameter search on wide data, as scikit-learn users write it:
GridSearchCV over Ridge's alpha with n_jobs={NJOBS} runs the fits in loky worker processes;
in each, Ridge's Cholesky solve forms and factors the Gram matrix in BLAS and LAPACK (the
pthreads OpenBLAS, sized for the whole machine in every process).
Usage: main.py ROWS FEATURES NJOBS"""
import sys

import numpy as np
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV


def main():
    rows, features, jobs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(11)
    x = rng.standard_normal((rows, features))
    coef = rng.standard_normal(features) * (rng.random(features) < 0.1)
    y = x @ coef + rng.standard_normal(rows)
    search = GridSearchCV(Ridge(), {"alpha": np.logspace(-2, 3, 8)}, cv=5, n_jobs=jobs)
    search.fit(x, y)
    print(f"{rows}x{features}, {jobs} jobs: alpha {search.best_params_['alpha']:.3g}, "
          f"R2 {search.best_score_:.3f}")


if __name__ == "__main__":
    main()
