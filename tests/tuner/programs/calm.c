/* Test program without contention: BLAS calls and OpenMP regions one after the other, never
 * nested, never at the same time. Args: [rounds]. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 8;
  const int n = 256;
  double* a = malloc(sizeof(double) * n * n);
  double* b = malloc(sizeof(double) * n * n);
  double* c = malloc(sizeof(double) * n * n);
  double acc = 0;
  for (int r = 0; r < rounds; ++r) {
#pragma omp parallel for
    for (int i = 0; i < n * n; ++i) {
      a[i] = (i % 7) * 0.5 + r;
      b[i] = (i % 5) * 0.25;
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
    acc += c[n + 1];
  }
  printf("acc %.3f\n", acc);
  free(a);
  free(b);
  free(c);
  return 0;
}
