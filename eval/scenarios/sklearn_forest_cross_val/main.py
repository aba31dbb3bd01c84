"""Cross-validation of a random forest on PCA features, as scikit-learn users write it:
cross_val_score(n_jobs={NJOBS}) runs the folds in loky worker processes; in each, the
pipeline's PCA (randomized SVD: BLAS products and LAPACK in the pthreads OpenBLAS) feeds a
RandomForestClassifier(n_jobs={TREE_JOBS}) whose trees are grown by a joblib thread pool of
its own, nested inside every worker process.
Usage: main.py ROWS FEATURES TREES NJOBS TREE_JOBS"""
import sys

from sklearn.datasets import make_classification
from sklearn.decomposition import PCA
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def main():
    rows, features, trees, jobs, tree_jobs = (int(a) for a in sys.argv[1:6])
    x, y = make_classification(n_samples=rows, n_features=features, n_informative=12,
                               n_classes=4, class_sep=1.5, random_state=5)
    model = make_pipeline(
        StandardScaler(),
        PCA(n_components=40, svd_solver="randomized", random_state=0),
        RandomForestClassifier(n_estimators=trees, n_jobs=tree_jobs, random_state=0))
    scores = cross_val_score(model, x, y, cv=5, n_jobs=jobs)
    print(f"{rows}x{features}, {trees} trees, {jobs} jobs x {tree_jobs} tree jobs: "
          f"accuracy {scores.mean():.3f}")


if __name__ == "__main__":
    main()
