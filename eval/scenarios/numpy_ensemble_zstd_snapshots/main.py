"""An ensemble simulation that writes compressed snapshots while it runs, as modelling scripts
keep their state: every step propagates an ensemble of states through a dense linear model
(a matrix product in the pthreads OpenBLAS, whose pool is sized for the whole machine) and a
nonlinearity; every few steps the ensemble is saved (np.save) into `zstd -T<ZSTD_T>` (0: one
compression worker per core) from a background thread, so compression overlaps the next steps.
Usage: main.py STATE MEMBERS STEPS EVERY ZSTD_T"""
import io
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def snapshot(x, level, threads):
    buf = io.BytesIO()
    np.save(buf, x)
    subprocess.run(["zstd", "-q", f"-{level}", f"-T{threads}", "-c"], input=buf.getvalue(),
                   stdout=subprocess.DEVNULL, check=True)


def main():
    n, members, steps, every, zstd_t = (int(a) for a in sys.argv[1:6])
    rng = np.random.default_rng(7)
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    a = 0.5 * (a + a.T) + 0.2 * np.eye(n)
    x = rng.standard_normal((n, members))
    forcing = 0.1 * np.sin(np.linspace(0, 20, n))[:, None]
    pending = []
    with ThreadPoolExecutor(max_workers=1) as writer:
        for step in range(1, steps + 1):
            x = np.tanh(a @ x + forcing)
            if step % every == 0:
                pending.append(writer.submit(snapshot, x.copy(), 3, zstd_t))
        for p in pending:
            p.result()
    print(f"{steps} steps of {n}x{members}, {len(pending)} snapshots: {float(np.abs(x).mean()):.5f}")


if __name__ == "__main__":
    main()
