"""Cross-spectral analysis of multichannel recordings in a thread pool, as SciPy users write
it: a ThreadPoolExecutor of {WORKERS} threads, each transforming its recording with
scipy.fft.rfft(workers={FFT_WORKERS}) (pocketfft's own threads) and then forming the
cross-spectral matrix of every frequency band (a complex matrix product in the pthreads
OpenBLAS, whose pool is sized for the whole machine under every thread) and its largest
eigenvalue with scipy.linalg.eigvalsh (LAPACK).
Usage: main.py RECORDINGS CHANNELS SAMPLES WORKERS FFT_WORKERS"""
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.fft
import scipy.linalg


def analyse(seed, channels, samples, fft_workers):
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(samples)
    x = rng.standard_normal((channels, samples)) + 0.3 * common
    spectrum = scipy.fft.rfft(x, axis=1, workers=fft_workers)
    coherence = 0.0
    for band in np.array_split(spectrum, 8, axis=1):
        csd = band @ band.conj().T / band.shape[1]
        coherence += float(scipy.linalg.eigvalsh(csd)[-1] / np.trace(csd).real)
    return coherence


def main():
    recordings, channels, samples, workers, fft_workers = (int(a) for a in sys.argv[1:6])
    with ThreadPoolExecutor(max_workers=workers) as pool:
        total = sum(pool.map(lambda s: analyse(s, channels, samples, fft_workers),
                             range(recordings)))
    print(f"{recordings} recordings of {channels}x{samples}, {workers} threads, "
          f"{fft_workers} FFT workers: coherence {total:.3f}")


if __name__ == "__main__":
    main()
