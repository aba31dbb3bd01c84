/* Test program: a pool of threads that each allocate, touch and free 128-512 KiB buffers, as a
 * request handler does with records and payloads (64 kept in flight). Under glibc's defaults the buffers come from fresh
 * mmaps or trimmed heap, so the run is dominated by page faults and kernel time (allocator
 * contention). Args: [rounds per thread] [threads]. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rounds;
static volatile long sink;

static void* worker(void* arg) {
  unsigned seed = (unsigned)(size_t)arg * 2654435761u + 7;
  char* window[64] = {0};
  long acc = 0;
  for (int r = 0; r < rounds; ++r) {
    seed = seed * 1103515245u + 12345u;
    size_t size = (seed >> 8) % 8 == 0 ? (128u << 10) + ((seed >> 4) % 4) * (128u << 10) : 16 + (seed >> 12) % 2048;
    char* p = malloc(size);
    if (!p) return NULL;
    memset(p, r & 0xff, size);
    acc += p[size / 2];
    char** slot = &window[(seed >> 20) % 64];
    free(*slot);
    *slot = p;
  }
  for (int i = 0; i < 64; ++i) free(window[i]);
  sink += acc;
  return NULL;
}

int main(int argc, char** argv) {
  rounds = argc > 1 ? atoi(argv[1]) : 3000;
  int threads = argc > 2 ? atoi(argv[2]) : 8;
  if (rounds <= 0 || threads <= 0 || threads > 64) {
    fprintf(stderr, "usage: alloc_storm [rounds>0] [threads 1..64]\n");
    return 2;
  }
  pthread_t tids[64];
  for (int i = 0; i < threads; ++i) pthread_create(&tids[i], NULL, worker, (void*)(size_t)i);
  for (int i = 0; i < threads; ++i) pthread_join(tids[i], NULL);
  printf("sink %ld\n", (long)sink);
  return 0;
}
