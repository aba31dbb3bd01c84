/* Test program: an OpenMP parallel loop whose iterations each call cblas_dgemm from the
 * pthreads OpenBLAS build, the textbook nested oversubscription. Args: [iterations] [n]. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 3000;
  int n = argc > 2 ? atoi(argv[2]) : 128;
  if (iters <= 0 || n <= 0) {
    fprintf(stderr, "usage: omp_blas [iterations>0] [n>0]\n");
    return 2;
  }
  double checksum = 0;
#pragma omp parallel reduction(+ : checksum)
  {
    /* Per-thread matrices, allocated once: the loop measures BLAS, not the allocator. */
    double* a = malloc(sizeof(double) * n * n);
    double* b = malloc(sizeof(double) * n * n);
    double* c = malloc(sizeof(double) * n * n);
#pragma omp for schedule(dynamic, 1)
    for (int it = 0; it < iters; ++it) {
      for (int i = 0; i < n * n; ++i) {
        a[i] = (i % 7) * 0.5 + it;
        b[i] = (i % 5) * 0.25;
      }
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
      checksum += c[n + 1];
    }
    free(a);
    free(b);
    free(c);
  }
  printf("checksum %.3f\n", checksum);
  return 0;
}
