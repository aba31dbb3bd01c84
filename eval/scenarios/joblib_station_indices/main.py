"""Climate indices for a network of weather stations, one joblib task per station, as the
analysis script spreads them with Parallel(n_jobs=NJOBS) (loky worker processes): each
station's hourly ensemble is derived with numexpr.evaluate (dew point, heat index, vapour
pressure deficit: numexpr's own thread pool) and a seasonal harmonic model of its heat index
is fitted by least squares (numpy.linalg.lstsq: LAPACK through the pthreads OpenBLAS).
Usage: main.py STATIONS YEARS MEMBERS HARMONICS NJOBS"""
import sys

import numexpr as ne
import numpy as np
from joblib import Parallel, delayed


def station(seed, years, members, harmonics):
    rng = np.random.default_rng(seed)
    hours = int(years * 8766)
    t = np.arange(hours, dtype=np.float64)
    lat = rng.uniform(30, 60)
    season = np.cos(2 * np.pi * t / 8766) * (lat - 20) / 2 + 4 * np.cos(2 * np.pi * t / 24)
    temp = 35 - lat / 2 + season + 3 * rng.standard_normal((members, hours))
    rh = np.clip(60 + 20 * rng.standard_normal((members, hours)), 5, 100)
    gamma = ne.evaluate("log(rh / 100) + 17.62 * temp / (243.12 + temp)")
    dew = ne.evaluate("243.12 * gamma / (17.62 - gamma)")
    vpd = ne.evaluate("0.6108 * exp(17.27 * temp / (temp + 237.3)) * (1 - rh / 100)")
    f = ne.evaluate("temp * 1.8 + 32")
    hi = ne.evaluate("where(f > 80, -42.379 + 2.04901523 * f + 10.14333127 * rh"
                     " - 0.22475541 * f * rh - 0.00683783 * f * f - 0.05481717 * rh * rh"
                     " + 0.00122874 * f * f * rh + 0.00085282 * f * rh * rh"
                     " - 0.00000199 * f * f * rh * rh, f)")
    k = np.arange(1, harmonics + 1)
    phase = 2 * np.pi * np.outer(t, k) / 8766
    design = np.hstack([np.ones((hours, 1)), np.cos(phase), np.sin(phase)])
    coef, *_ = np.linalg.lstsq(design, hi.mean(axis=0), rcond=None)
    return float(dew.mean()), float(vpd.max()), float(np.hypot(coef[1], coef[1 + harmonics]))


def main():
    stations, years, members, harmonics, n_jobs = (int(a) for a in sys.argv[1:6])
    rows = Parallel(n_jobs=n_jobs)(
        delayed(station)(s, years, members, harmonics) for s in range(stations))
    dew, vpd, amp = np.array(rows).T
    print(f"{stations} stations: mean dew point {dew.mean():.2f} C, "
          f"max VPD {vpd.max():.2f} kPa, mean seasonal amplitude {amp.mean():.2f} F")


if __name__ == "__main__":
    main()
