// Scenario: OpenMP (libgomp) phases and a std::thread pool created after start-up.
// With OMP_PROC_BIND set, libgomp pins the initial thread before main; the pool inherits one CPU.
#include <omp.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "eval/scenarios/common/work.h"

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 30;
  const int items = 64, inner = 3000;
  const int pool_size = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<double> a(items), b(items);
  for (int s = 0; s < steps; ++s) {
#pragma omp parallel for
    for (int i = 0; i < items; ++i) a[i] = work(i + s, inner);
    std::vector<std::thread> pool;
    for (int t = 0; t < pool_size; ++t)
      pool.emplace_back([&, t] {
        for (int i = t; i < items; i += pool_size) b[i] = work(i - s, inner) + a[(i + 1) % items];
      });
    for (auto& t : pool) t.join();
  }
  double sum = 0;
  for (double v : b) sum += v;
  std::printf("checksum %.6f\n", sum);
  return 0;
}
