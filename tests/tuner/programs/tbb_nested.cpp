// Test program: oneTBB runs one lane per CPU, and every lane's work runs fine-grained OpenMP
// (libgomp) loops, the way a TBB application calls a library that parallelises with OpenMP
// inside. Every TBB thread starts its own OpenMP team sized to the machine: 2 x ncpus threads
// meet at OpenMP barriers on ncpus cores (nested oversubscription; remedy: one OpenMP thread
// inside TBB). The lanes wait for each other before working (for at most a second), so that
// every run nests: left to work stealing alone, a cold TBB pool sometimes never woke its worker
// and the run was an order of magnitude faster than its neighbours.
// Args: [items] [regions per item].
#include <omp.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <thread>
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
  const int lanes = std::max(1u, std::thread::hardware_concurrency());
  std::vector<double> out(items);
  std::atomic<int> arrived{0};
  tbb::parallel_for(
      0, lanes,
      [&](int lane) {
        ++arrived;
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
        while (arrived.load() < lanes && std::chrono::steady_clock::now() < until) std::this_thread::yield();
        for (int item = lane; item < items; item += lanes) {
          double acc = 0;
          for (int r = 0; r < regions; ++r) {
#pragma omp parallel for reduction(+ : acc)
            for (int i = 0; i < 2; ++i) acc += chain(i + item, 200);
          }
          out[item] = acc;
        }
      },
      tbb::simple_partitioner());
  double sum = 0;
  for (double v : out) sum += v;
  std::printf("acc %.6g\n", sum);
  return 0;
}
