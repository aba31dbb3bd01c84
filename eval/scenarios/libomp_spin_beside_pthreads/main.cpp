// Scenario: an OpenMP (LLVM libomp) phase hands each step to a std::thread pool and waits.
// libomp's threads spin for KMP_BLOCKTIME after each region while the pool needs the cores.
#include <omp.h>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "eval/scenarios/common/work.h"

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 300;
  const int items = 64, inner = 300;
  const int pool_size = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<double> a(items), b(items);
  std::mutex m;
  std::condition_variable go, done;
  int generation = 0, finished = 0;
  bool stop = false;
  std::vector<std::thread> pool;
  for (int t = 0; t < pool_size; ++t)
    pool.emplace_back([&, t] {
      int seen = 0;
      for (;;) {
        std::unique_lock<std::mutex> lock(m);
        go.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
        lock.unlock();
        for (int i = t; i < items; i += pool_size) b[i] = work(i - seen, inner) + a[(i + 1) % items];
        lock.lock();
        if (++finished == pool_size) done.notify_one();
      }
    });
  for (int s = 0; s < steps; ++s) {
#pragma omp parallel for
    for (int i = 0; i < items; ++i) a[i] = work(i + s, inner);
    std::unique_lock<std::mutex> lock(m);
    finished = 0;
    ++generation;
    go.notify_all();
    done.wait(lock, [&] { return finished == pool_size; });
  }
  {
    std::lock_guard<std::mutex> lock(m);
    stop = true;
  }
  go.notify_all();
  for (auto& t : pool) t.join();
  double sum = 0;
  for (double v : b) sum += v;
  std::printf("checksum %.6f\n", sum);
  return 0;
}
