/* Test program that never ends: a child process and a thread that both wait forever, so a
 * timeout must kill the whole process group. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void* forever(void* arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, forever, NULL);
  if (fork() == 0) forever(NULL);
  printf("hanging\n");
  fflush(stdout);
  forever(NULL);
  return 0;
}
