// Scenario: the application uses LLVM libomp; a plugin it loads was built against libgomp.
// Two OpenMP runtimes in one process, each spinning after its regions while the other works.
#include <dlfcn.h>
#include <omp.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "eval/scenarios/common/work.h"

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 300;
  const int items = 64;
  const int inner = argc > 2 ? std::atoi(argv[2]) : 300;
  // RTLD_DEEPBIND keeps the plugin bound to its own OpenMP runtime, as Python extensions are.
  std::string self = argv[0];
  std::string plugin = self.substr(0, self.rfind('/') + 1) + "libtwo_omp_plugin.so";
  void* h = dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (!h) {
    std::fprintf(stderr, "two_omp_runtimes: cannot load %s: %s\n", plugin.c_str(), dlerror());
    return 2;
  }
  using Phase = void (*)(double*, const double*, int, int, int);
  auto plugin_phase = reinterpret_cast<Phase>(dlsym(h, "plugin_phase"));
  std::vector<double> a(items), b(items);
  for (int s = 0; s < steps; ++s) {
#pragma omp parallel for
    for (int i = 0; i < items; ++i) a[i] = work(i + s, inner);
    plugin_phase(b.data(), a.data(), items, inner, s);
  }
  double sum = 0;
  for (double v : b) sum += v;
  std::printf("checksum %.6f\n", sum);
  return 0;
}
