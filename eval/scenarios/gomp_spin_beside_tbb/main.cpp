// Scenario: a time-step loop alternating an OpenMP (libgomp) phase and a TBB phase.
// After each OpenMP region libgomp's threads spin, taking the cores the TBB workers need.
#include <omp.h>
#include <tbb/parallel_for.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "eval/scenarios/common/work.h"

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 400;
  const int items = 64, inner = 300;
  std::vector<double> a(items), b(items);
  for (int s = 0; s < steps; ++s) {
#pragma omp parallel for
    for (int i = 0; i < items; ++i) a[i] = work(i + s, inner);
    tbb::parallel_for(0, items, [&](int i) { b[i] = work(i - s, inner) + a[(i + 1) % items]; });
  }
  double sum = 0;
  for (double v : b) sum += v;
  std::printf("checksum %.6f\n", sum);
  return 0;
}
