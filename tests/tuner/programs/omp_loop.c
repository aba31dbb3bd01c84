// Many short OpenMP loops, the way an image filter runs row after row: each loop ends at a
// barrier, so a team sized for the whole machine in each of several processes at once waits on
// threads the other processes preempted. Args: loops (default 2000), elements (default 20000),
// and any further words (a batch driver's input name; ignored).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int loops = argc > 1 ? atoi(argv[1]) : 2000;
  int n = argc > 2 ? atoi(argv[2]) : 20000;
  if (loops <= 0 || n <= 0) {
    fprintf(stderr, "usage: omp_loop [LOOPS] [ELEMENTS]\n");
    return 2;
  }
  double* a = malloc(sizeof(double) * (size_t)n);
  if (!a) return 1;
  for (int i = 0; i < n; ++i) a[i] = i * 1e-3;
  for (int r = 0; r < loops; ++r) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) a[i] = a[i] * 0.999 + sin(a[i] + r) * 1e-3;
  }
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += a[i];
  printf("%.6f\n", sum);
  free(a);
  return 0;
}
