// Test program: OpenMP (libgomp) phases beside oneTBB phases in two threads at once; both
// runtimes size their pools for the whole machine (co-run oversubscription).
// Args: [rounds].
#include <omp.h>
#include <tbb/parallel_for.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

static double work(long steps) {
  double x = 1.0;
  for (long i = 0; i < steps; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  if (rounds <= 0) {
    std::fprintf(stderr, "usage: tbb_omp [rounds>0]\n");
    return 2;
  }
  double omp_acc = 0, tbb_acc = 0;
  std::thread omp_side([&] {
    for (int r = 0; r < rounds; ++r) {
      double acc = 0;
#pragma omp parallel for reduction(+ : acc)
      for (int i = 0; i < 64; ++i) acc += work(40000);
      omp_acc += acc;
    }
  });
  for (int r = 0; r < rounds; ++r) {
    tbb::parallel_for(0, 64, [&](int) { volatile double v = work(40000); (void)v; });
    tbb_acc += r;
  }
  omp_side.join();
  std::printf("acc %.3f\n", omp_acc + tbb_acc);
  return 0;
}
