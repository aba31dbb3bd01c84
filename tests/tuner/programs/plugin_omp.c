/* Test plugin, built with -fopenmp and loaded with dlopen by plugin_host.c: many short OpenMP
 * regions separated by serial work, so that with OMP_WAIT_POLICY=active its idle team spins
 * beside the host's own threads. */
static double work(long steps) {
  double x = 1.0;
  for (long i = 0; i < steps; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

double plugin_rounds(int rounds) {
  double acc = 0;
  for (int r = 0; r < rounds; ++r) {
#pragma omp parallel for reduction(+ : acc)
    for (int i = 0; i < 64; ++i) acc += work(2000);
    acc += work(400000); /* serial phase: the team is idle here */
  }
  return acc;
}
