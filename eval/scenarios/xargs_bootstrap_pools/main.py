"""Bootstrap intervals of a regional demand model, as an analyst's script is run once per
region (`printf '%s\n' REGIONS | xargs -P N -I@ python3 main.py @ ...`): the region's records
are generated from its name, the model is a least-squares fit through the normal equations
(X.T @ X and a solve: BLAS and LAPACK in the pthreads OpenBLAS, whose pool is sized for the
whole machine in every process), and the bootstrap replicates are spread over a
multiprocessing.Pool (POOL; 0: Pool()'s own default, one process per CPU).
Usage: main.py REGION ROWS COLS REPS POOL"""
import sys
import zlib
from multiprocessing import Pool

import numpy as np

X = Y = None


def load(region, rows, cols):
    rng = np.random.default_rng(zlib.crc32(region.encode()))
    x = rng.standard_normal((rows, cols))
    x[:, 0] = 1.0
    beta = rng.standard_normal(cols) / np.sqrt(cols)
    return x, x @ beta + 0.5 * rng.standard_normal(rows)


def fit(x, y):
    return np.linalg.solve(x.T @ x, x.T @ y)


def replicate(seed):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(Y), len(Y))
    return fit(X[idx], Y[idx])


def main():
    global X, Y
    region = sys.argv[1]
    rows, cols, reps, pool = (int(a) for a in sys.argv[2:6])
    X, Y = load(region, rows, cols)
    beta = fit(X, Y)
    with Pool(pool or None) as workers:
        boot = np.array(workers.map(replicate, range(reps)))
    lo, hi = np.percentile(boot, [2.5, 97.5], axis=0)
    clear = int(((lo > 0) | (hi < 0)).sum())
    print(f"{region}: {reps} replicates, {clear}/{cols} coefficients clear of zero, "
          f"largest {float(np.abs(beta).max()):.4f}")


if __name__ == "__main__":
    main()
