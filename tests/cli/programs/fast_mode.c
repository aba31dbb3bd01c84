/* A program with an API control of its own: fast_mode_set(1), called by the preload shim before
 * main, makes it sleep 150 ms instead of 700 ms. Its symbol is exported (-rdynamic) so that the
 * shim finds it the way it finds a library's setter. */
#include <stdio.h>
#include <unistd.h>

static int fast;

void fast_mode_set(int on) { fast = on; }

int main(void) {
  usleep(fast == 1 ? 150000 : 700000);
  printf("%s\n", fast == 1 ? "fast" : "slow");
  return 0;
}
