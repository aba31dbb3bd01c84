// Scenario: a background thread compresses a buffer with multi-threaded zstd while the main
// thread runs OpenMP compute. A negative control: measured effects here are within noise.
#include <omp.h>
#include <zstd.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "eval/scenarios/common/work.h"

int main(int argc, char** argv) {
  const int megabytes = argc > 1 ? std::atoi(argv[1]) : 24;
  const int workers = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<char> src(static_cast<size_t>(megabytes) << 20);
  unsigned state = 12345;
  for (size_t i = 0; i < src.size(); ++i) {
    state = state * 1103515245u + 12345u;
    src[i] = static_cast<char>("abcdefgh"[(state >> 16) & 7] + ((i >> 12) & 3));
  }
  size_t compressed = 0;
  std::thread compressor([&] {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_nbWorkers, workers);
    std::vector<char> dst(ZSTD_compressBound(src.size()));
    compressed = ZSTD_compress2(cctx, dst.data(), dst.size(), src.data(), src.size());
    ZSTD_freeCCtx(cctx);
  });
  std::vector<double> a(64);
  for (int s = 0; s < 40; ++s) {
#pragma omp parallel for
    for (int i = 0; i < 64; ++i) a[i] = work(i + s, 1500);
  }
  compressor.join();
  if (ZSTD_isError(compressed)) {
    std::fprintf(stderr, "zstd_beside_omp: %s\n", ZSTD_getErrorName(compressed));
    return 1;
  }
  double sum = 0;
  for (double v : a) sum += v;
  std::printf("compressed %zu checksum %.6f\n", compressed, sum);
  return 0;
}
