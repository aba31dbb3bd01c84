"""Which features matter to a kernel ridge model, as scikit-learn users ask it:
permutation_importance(n_jobs={NJOBS}) scores the permuted columns in loky worker processes;
in each, the model's predictions are kernel matrix products in the pthreads OpenBLAS, sized for
the whole machine in every process.
Usage: main.py ROWS NJOBS"""
import sys

import numpy as np
from sklearn.inspection import permutation_importance
from sklearn.kernel_ridge import KernelRidge


def main():
    rows, jobs = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(11)
    x = rng.standard_normal((rows, 12))
    y = x[:, 0] - 2 * x[:, 3] + 0.1 * rng.standard_normal(rows)
    model = KernelRidge(alpha=1.0, kernel="rbf").fit(x, y)
    r = permutation_importance(model, x, y, n_repeats=2, random_state=0, n_jobs=jobs)
    print(f"{rows} rows, {jobs} jobs: top feature {int(np.argmax(r.importances_mean))}")


if __name__ == "__main__":
    main()
