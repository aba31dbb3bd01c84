/* The README's example application: a blocked matrix product C = A * B whose tiles are spread
 * over an OpenMP team, each tile computed by cblas_dgemm from the pthreads OpenBLAS build.
 * Under defaults every OpenMP thread wakes OpenBLAS's own pool as well: nested
 * oversubscription. `syspilot analyze --source examples/nested_blas -- ./nested_blas` finds it.
 * Args: [matrix size, a multiple of the tile] [tile] [repetitions]. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1024;
  int tile = argc > 2 ? atoi(argv[2]) : 128;
  int reps = argc > 3 ? atoi(argv[3]) : 6;
  if (n <= 0 || tile <= 0 || n % tile != 0 || reps <= 0) {
    fprintf(stderr, "usage: nested_blas [n (multiple of tile)] [tile] [repetitions]\n");
    return 2;
  }
  double* a = malloc(sizeof(double) * n * n);
  double* b = malloc(sizeof(double) * n * n);
  double* c = calloc((size_t)n * n, sizeof(double));
  if (!a || !b || !c) {
    fprintf(stderr, "nested_blas: out of memory for n=%d\n", n);
    return 1;
  }
  for (long i = 0; i < (long)n * n; ++i) {
    a[i] = (double)(i % 13) / 13.0;
    b[i] = (double)(i % 7) / 7.0;
  }
  int tiles = n / tile;
  for (int r = 0; r < reps; ++r) {
    /* One task per output tile; each accumulates over the k tiles with a BLAS call. */
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (int ti = 0; ti < tiles; ++ti)
      for (int tj = 0; tj < tiles; ++tj)
        for (int tk = 0; tk < tiles; ++tk)
          cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, tile, tile, tile, 1.0,
                      a + (long)ti * tile * n + (long)tk * tile, n, b + (long)tk * tile * n + (long)tj * tile, n,
                      tk == 0 && r == 0 ? 0.0 : 1.0, c + (long)ti * tile * n + (long)tj * tile, n);
  }
  printf("c[0]=%.4f c[last]=%.4f\n", c[0], c[(long)n * n - 1]);
  free(a);
  free(b);
  free(c);
  return 0;
}
