"""Per-tile processing of a large raster, as numpy users spread it over a thread pool:
ThreadPoolExecutor(max_workers=WORKERS; 0: the executor's own default, min(32, CPUs + 4))
over the tiles of a synthetic elevation model; each tile is smoothed with a box filter
(cumulative sums), its slope and a normalised hillshade are computed and its percentiles taken.
numpy releases the GIL in these loops, so the threads run at once, and every step allocates
tile-sized temporaries through glibc malloc (an arena per thread, mmap above a threshold).
Usage: main.py TILES TILE WORKERS"""
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def box(a, r):
    c = np.cumsum(np.cumsum(np.pad(a, r + 1, mode="edge"), axis=0), axis=1)
    k = 2 * r + 1
    return (c[k:, k:] - c[:-k, k:] - c[k:, :-k] + c[:-k, :-k]) / (k * k)


def tile_stats(seed, size):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    z = 800 * np.sin(3 * x + seed) * np.cos(2 * y) + 50 * rng.standard_normal((size, size))
    z = box(z, 3)
    gy, gx = np.gradient(z, 30.0)
    slope = np.degrees(np.arctan(np.hypot(gx, gy)))
    aspect = np.arctan2(-gx, gy)
    shade = np.cos(np.radians(45)) * np.cos(np.radians(slope)) + np.sin(np.radians(45)) * np.sin(
        np.radians(slope)) * np.cos(np.radians(315) - aspect)
    shade = (shade - shade.min()) / (np.ptp(shade) + 1e-12)
    return np.percentile(slope, [5, 50, 95]).sum() + float(np.median(shade))


def main():
    tiles, size, workers = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    with ThreadPoolExecutor(max_workers=workers or None) as pool:
        total = sum(pool.map(tile_stats, range(tiles), [size] * tiles))
    print(f"{tiles} tiles of {size}x{size}: {total:.3f}")


if __name__ == "__main__":
    main()
