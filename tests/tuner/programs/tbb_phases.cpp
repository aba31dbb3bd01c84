// Test program: a pipeline step that alternates an OpenMP (libgomp) loop with a oneTBB
// parallel_for in the main thread, both runtimes sized to the machine. Between its regions
// libgomp's idle team spins (GOMP_SPINCOUNT, OMP_WAIT_POLICY) on the cores TBB's workers need.
// Args: [rounds] [steps per item].
#include <omp.h>
#include <tbb/parallel_for.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

// A dependent chain: compute-bound, no memory traffic, the same cost on every item.
static double chain(double seed, long steps) {
  for (long i = 0; i < steps; ++i) seed = seed * 1.0000001 + 1e-9;
  return seed;
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  long steps = argc > 2 ? std::atol(argv[2]) : 20000;
  if (rounds <= 0 || steps <= 0) {
    std::fprintf(stderr, "usage: tbb_phases [rounds>0] [steps>0]\n");
    return 2;
  }
  std::vector<double> out(64);
  double acc = 0;
  for (int r = 0; r < rounds; ++r) {
    // OpenMP phase (say, a filter over the batch) ...
#pragma omp parallel for reduction(+ : acc)
    for (int i = 0; i < 64; ++i) acc += chain(i, steps);
    // ... then a TBB phase (say, a library's transform) on the same batch.
    tbb::parallel_for(0, 64, [&](int i) { out[i] = chain(i, steps); });
    acc += out[r % 64];
  }
  std::printf("acc %.6g\n", acc);
  return 0;
}
