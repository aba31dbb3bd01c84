// Test program: a oneTBB parallel_for whose body runs a fine-grained OpenMP (libgomp) loop, the
// way a TBB application calls a library that parallelises with OpenMP inside. Every TBB worker
// starts its own OpenMP team sized to the machine: 2 x ncpus threads meet at OpenMP barriers on
// ncpus cores (nested oversubscription; remedy: one OpenMP thread inside TBB).
// Args: [items] [regions per item].
#include <omp.h>
#include <tbb/parallel_for.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

// A dependent chain: compute-bound, no memory traffic, the same cost on every iteration.
static double chain(double seed, long steps) {
  for (long i = 0; i < steps; ++i) seed = seed * 1.0000001 + 1e-9;
  return seed;
}

int main(int argc, char** argv) {
  int items = argc > 1 ? std::atoi(argv[1]) : 256;
  int regions = argc > 2 ? std::atoi(argv[2]) : 1000;
  if (items <= 0 || regions <= 0) {
    std::fprintf(stderr, "usage: tbb_nested [items>0] [regions>0]\n");
    return 2;
  }
  std::vector<double> out(items);
  tbb::parallel_for(0, items, [&](int item) {
    double acc = 0;
    for (int r = 0; r < regions; ++r) {
#pragma omp parallel for reduction(+ : acc)
      for (int i = 0; i < 2; ++i) acc += chain(i + item, 200);
    }
    out[item] = acc;
  });
  double sum = 0;
  for (double v : out) sum += v;
  std::printf("acc %.6g\n", sum);
  return 0;
}
