"""Batch scoring of card transactions, as a fraud model runs over a day of data: a
HistGradientBoostingClassifier (scikit-learn's OpenMP loops, libgomp) is fitted on a sample,
then each batch of raw columns gets its features from numexpr.evaluate (numexpr's own thread
pool) and is scored with predict_proba (OpenMP again). The two pools take turns, both sized
for the whole machine; libgomp's team spins for a while after each parallel loop.
Usage: main.py TRAIN_ROWS BATCHES BATCH_ROWS"""
import sys

import numexpr as ne
import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier


def raw_batch(rng, rows):
    amount = rng.lognormal(3.0, 1.2, rows)
    hour = rng.integers(0, 24, rows).astype(np.float64)
    dist = rng.exponential(20.0, rows)
    avg = rng.lognormal(3.0, 0.8, rows)
    age = rng.integers(1, 3650, rows).astype(np.float64)
    return amount, hour, dist, avg, age


def features(amount, hour, dist, avg, age):
    return np.column_stack([
        ne.evaluate("log1p(amount)"),
        ne.evaluate("amount / (avg + 1)"),
        ne.evaluate("sin(2 * 3.141592653589793 * hour / 24)"),
        ne.evaluate("cos(2 * 3.141592653589793 * hour / 24)"),
        ne.evaluate("log1p(dist) * exp(-age / 365)"),
        ne.evaluate("where(amount > 3 * avg, 1.0, 0.0) + sqrt(dist / (age + 1))"),
        ne.evaluate("arctan2(dist, amount)"),
        ne.evaluate("log1p(age)"),
    ])


def label(rng, amount, hour, dist, avg, age):
    logit = ne.evaluate("1.5 * log1p(amount / (avg + 1)) + 0.04 * dist - 0.002 * age - 3 + 0.3 * cos(hour)")
    return (rng.random(len(amount)) < 1 / (1 + np.exp(-logit))).astype(int)


def main():
    train_rows, batches, batch_rows = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(5)
    cols = raw_batch(rng, train_rows)
    model = HistGradientBoostingClassifier(max_iter=30, early_stopping=False, random_state=0)
    model.fit(features(*cols), label(rng, *cols))
    flagged = 0
    for _ in range(batches):
        p = model.predict_proba(features(*raw_batch(rng, batch_rows)))[:, 1]
        flagged += int((p > 0.5).sum())
    print(f"{batches} batches of {batch_rows}: {flagged} flagged")


if __name__ == "__main__":
    main()
