"""Low-rank compression of a batch of images in a thread pool, as a Python image pipeline
writes it: a ThreadPoolExecutor of {WORKERS} threads, each running ImageMagick's convert
(OpenMP through libgomp, a team sized for the whole machine in every process) to render and
blur its image into raw grey pixels on a pipe, then taking the image's singular value
decomposition with numpy.linalg.svd (LAPACK through the pthreads OpenBLAS, which releases the
GIL and sizes its own pool for the whole machine under every thread).
Usage: main.py IMAGES WIDTH HEIGHT RANK WORKERS"""
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

CONVERT = "/usr/bin/convert-im6.q16"


def compress(index, width, height, rank):
    pixels = subprocess.run(
        [CONVERT, "-size", f"{width}x{height}", "gradient:white-black",
         "-swirl", str(60 + 25 * index), "-wave", f"{8 + index}x{40 + 10 * index}",
         "-blur", "0x4", "-depth", "8", "gray:-"],
        check=True, capture_output=True).stdout
    image = np.frombuffer(pixels, dtype=np.uint8).reshape(-1, width).astype(np.float64)
    s = np.linalg.svd(image, compute_uv=False)
    return float((s[rank:] ** 2).sum() / (s ** 2).sum())


def main():
    images, width, height, rank, workers = (int(a) for a in sys.argv[1:6])
    with ThreadPoolExecutor(max_workers=workers) as pool:
        lost = list(pool.map(lambda i: compress(i, width, height, rank), range(images)))
    print(f"{images} images of {width}x{height}, {workers} threads: rank {rank} loses "
          f"{min(lost):.2e}-{max(lost):.2e} of the energy")


if __name__ == "__main__":
    main()
