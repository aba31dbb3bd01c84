"""Monte Carlo price paths streamed to a compressor, as a simulation feeds a shell pipeline
(`main.py BLOCKS PATHS STEPS | zstd -T0 -c > paths.zst`): each block draws its shocks with
numpy, turns them into geometric Brownian motion paths with numexpr.evaluate (numexpr's own
thread pool, sized for the whole machine) and writes them to stdout as raw float32, so the
simulation and zstd's compression workers run side by side, paced by the pipe.
Usage: main.py BLOCKS PATHS STEPS"""
import sys

import numexpr as ne
import numpy as np


def main():
    blocks, paths, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(11)
    s0, mu, sigma, dt = 100.0, 0.03, 0.25, 1.0 / 252
    out = sys.stdout.buffer
    for _ in range(blocks):
        z = rng.standard_normal((paths, steps), dtype=np.float32)
        logret = ne.evaluate("(mu - 0.5 * sigma ** 2) * dt + sigma * sqrt(dt) * z")
        s = ne.evaluate("s0 * exp(logret)")
        np.cumprod(s / s0, axis=1, out=s)
        prices = np.round(ne.evaluate("s * s0"), 2)
        out.write(prices.astype(np.float32).tobytes())
    out.flush()


if __name__ == "__main__":
    main()
