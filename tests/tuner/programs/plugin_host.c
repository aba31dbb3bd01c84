/* Test program: links no OpenMP runtime itself but loads a plugin (argv[1]) with dlopen, whose
 * OpenMP team runs beside a pthread pool of the host; the runtime is only seen at run time.
 * Args: PLUGIN [rounds] [pool threads]. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;
static long pool_steps;

static double work(long steps) {
  double x = 1.0;
  for (long i = 0; i < steps; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

static void* pool_worker(void* arg) {
  (void)arg;
  sink = work(pool_steps);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: plugin_host PLUGIN [rounds] [pool threads]\n");
    return 2;
  }
  int rounds = argc > 2 ? atoi(argv[2]) : 200;
  int pool = argc > 3 ? atoi(argv[3]) : 1;
  if (rounds <= 0 || pool <= 0 || pool > 64) return 2;
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "plugin_host: %s\n", dlerror());
    return 1;
  }
  double (*plugin_rounds)(int) = (double (*)(int))dlsym(h, "plugin_rounds");
  if (!plugin_rounds) return 1;
  pool_steps = (long)rounds * 400000L;
  pthread_t tids[64];
  for (int i = 0; i < pool; ++i) pthread_create(&tids[i], NULL, pool_worker, NULL);
  double acc = plugin_rounds(rounds);
  for (int i = 0; i < pool; ++i) pthread_join(tids[i], NULL);
  printf("acc %.3f\n", acc + sink);
  return 0;
}
