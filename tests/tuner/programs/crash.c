/* Test program that crashes: a write through a null pointer after a little output. */
#include <stdio.h>

int main(void) {
  printf("about to crash\n");
  fflush(stdout);
  volatile int* p = 0;
  *p = 42;
  return 0;
}
