"""Cross-validation of a gradient-boosted tree model as scikit-learn users write it:
cross_val_score with n_jobs worker processes (joblib's loky), each fitting a
HistGradientBoostingClassifier whose histogram loops are scikit-learn's own OpenMP (libgomp).
Usage: main.py SAMPLES JOBS"""
import sys

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import cross_val_score


def main():
    samples, jobs = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(5)
    x = rng.standard_normal((samples, 40))
    y = (x[:, :5].sum(axis=1) + 0.5 * rng.standard_normal(samples) > 0).astype(int)
    model = HistGradientBoostingClassifier(max_iter=40, early_stopping=False, random_state=0)
    scores = cross_val_score(model, x, y, cv=3, n_jobs=jobs)
    print(f"{samples} samples, {jobs} jobs: accuracy {scores.mean():.3f}")


if __name__ == "__main__":
    main()
