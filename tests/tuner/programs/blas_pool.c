// A pool of one pthread per CPU (WORKERS overrides), each task a DGEMM through the pthreads
// OpenBLAS, whose own threads size themselves for the machine too: the application's pool and
// the library's oversubscribe the CPUs together. No OpenMP: OpenBLAS's thread controls are the
// only ones its contracts offer.
// Usage: blas_pool [TASKS [N]]
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int tasks = 64, n = 128, next_task;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static double total;

static void* worker(void* arg) {
  (void)arg;
  double* a = malloc(sizeof(double) * n * n);
  double* b = malloc(sizeof(double) * n * n);
  double* c = malloc(sizeof(double) * n * n);
  for (int i = 0; i < n * n; ++i) a[i] = 1.0, b[i] = 0.5;
  for (;;) {
    pthread_mutex_lock(&lock);
    int t = next_task++;
    pthread_mutex_unlock(&lock);
    if (t >= tasks) break;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
    pthread_mutex_lock(&lock);
    total += c[t % (n * n)];
    pthread_mutex_unlock(&lock);
  }
  free(a), free(b), free(c);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) tasks = atoi(argv[1]);
  if (argc > 2) n = atoi(argv[2]);
  const char* w = getenv("WORKERS");
  long workers = w ? atol(w) : sysconf(_SC_NPROCESSORS_ONLN);
  if (workers < 1) workers = 1;
  if (workers > 64) workers = 64;
  pthread_t ts[64];
  for (long i = 0; i < workers; ++i) pthread_create(&ts[i], NULL, worker, NULL);
  for (long i = 0; i < workers; ++i) pthread_join(ts[i], NULL);
  printf("%g\n", total);
  return 0;
}
