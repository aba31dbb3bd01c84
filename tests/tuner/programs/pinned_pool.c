// OpenMP phases, then a pthread pool started after them, in steps. With OMP_PROC_BIND set,
// libgomp pins the initial thread before main; the pool's threads inherit its one-CPU mask
// and queue there, while libgomp's idle worker spins on the other CPU.
// Usage: pinned_pool [STEPS [INNER]]. INNER sets the work per item; pool threads that live a
// few milliseconds may stay on their creator's CPU even unpinned, so few long steps show the
// pinning more clearly than many short ones.
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { ITEMS = 64, MAX_POOL = 64 };
static double a[ITEMS], b[ITEMS];
static int pool_size, step, inner = 3000;

static double work(int seed, int n) {
  double x = seed * 0.001;
  for (int i = 0; i < n; ++i) x = sin(x) + cos(x * 0.5) + 1e-9 * i;
  return x;
}

static void* pool_worker(void* arg) {
  long t = (long)arg;
  for (int i = (int)t; i < ITEMS; i += pool_size) b[i] = work(i - step, inner) + a[(i + 1) % ITEMS];
  return NULL;
}

int main(int argc, char** argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 50;
  if (argc > 2 && atoi(argv[2]) > 0) inner = atoi(argv[2]);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  pool_size = n < 1 ? 1 : n > MAX_POOL ? MAX_POOL : (int)n;
  for (step = 0; step < steps; ++step) {
#pragma omp parallel for
    for (int i = 0; i < ITEMS; ++i) a[i] = work(i + step, inner);
    pthread_t pool[MAX_POOL];
    for (long t = 0; t < pool_size; ++t) pthread_create(&pool[t], NULL, pool_worker, (void*)t);
    for (int t = 0; t < pool_size; ++t) pthread_join(pool[t], NULL);
  }
  double sum = 0;
  for (int i = 0; i < ITEMS; ++i) sum += b[i];
  printf("checksum %.6f\n", sum);
  return 0;
}
