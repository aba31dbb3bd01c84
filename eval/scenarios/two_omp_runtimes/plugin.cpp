// The plugin half of two_omp_runtimes: an OpenMP phase built against GCC's libgomp.
#include <cmath>

#include "eval/scenarios/common/work.h"

extern "C" void plugin_phase(double* b, const double* a, int items, int inner, int step) {
#pragma omp parallel for
  for (int i = 0; i < items; ++i) b[i] = work(i - step, inner) + a[(i + 1) % items];
}
