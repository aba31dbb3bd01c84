/* Test program: many short OpenMP regions separated by serial work on the main thread, while
 * a pthread pool computes beside them. With OMP_WAIT_POLICY=active the idle OpenMP threads
 * spin between regions and take the cores the pool needs (spin interference).
 * Args: [rounds] [pool threads]. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

static double work(long steps) {
  double x = 1.0;
  for (long i = 0; i < steps; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

static long pool_steps;

static void* pool_worker(void* arg) {
  (void)arg;
  sink = work(pool_steps);
  return NULL;
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 300;
  int pool = argc > 2 ? atoi(argv[2]) : 2;
  if (rounds <= 0 || pool <= 0 || pool > 64) {
    fprintf(stderr, "usage: spin_pool [rounds>0] [pool threads 1..64]\n");
    return 2;
  }
  pool_steps = (long)rounds * 400000L;
  pthread_t tids[64];
  for (int i = 0; i < pool; ++i) pthread_create(&tids[i], NULL, pool_worker, NULL);
  double acc = 0;
  for (int r = 0; r < rounds; ++r) {
#pragma omp parallel for reduction(+ : acc)
    for (int i = 0; i < 64; ++i) acc += work(2000);
    acc += work(400000); /* serial phase: the OpenMP team is idle here */
  }
  for (int i = 0; i < pool; ++i) pthread_join(tids[i], NULL);
  printf("acc %.3f\n", acc + sink);
  return 0;
}
