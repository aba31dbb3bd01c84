/* LD_PRELOAD shim for API controls: calls library setters with one int argument just before
 * the application's main(), after every constructor has run (so the library's own
 * initialisation cannot undo the setting). Configured by SYSPILOT_SHIM_CALLS:
 *   "openblas_set_num_threads=1;omp_set_num_threads=2;"
 * A setter the process does not define is reported on stderr and skipped. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*main_fn)(int, char**, char**);
typedef int (*start_fn)(main_fn, int, char**, void (*)(void), void (*)(void), void (*)(void), void*);

static main_fn real_main;

static void apply_calls(void) {
  const char* spec = getenv("SYSPILOT_SHIM_CALLS");
  if (!spec || !*spec) return;
  char* copy = strdup(spec);
  if (!copy) return;
  char* save = NULL;
  for (char* item = strtok_r(copy, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
    char* eq = strchr(item, '=');
    if (!eq) continue;
    *eq = '\0';
    char* end = NULL;
    long v = strtol(eq + 1, &end, 0);
    if (end == eq + 1 || *end) {
      fprintf(stderr, "syspilot shim: %s: value '%s' is not an integer; skipped\n", item, eq + 1);
      continue;
    }
    void* sym = dlsym(RTLD_DEFAULT, item);
    if (!sym) {
      fprintf(stderr, "syspilot shim: %s is not defined in this process; skipped\n", item);
      continue;
    }
    ((void (*)(int))sym)((int)v);
  }
  free(copy);
}

static int shim_main(int argc, char** argv, char** envp) {
  apply_calls();
  return real_main(argc, argv, envp);
}

/* glibc calls __libc_start_main with the program's main; wrapping it runs the setters first. */
int __libc_start_main(main_fn main, int argc, char** argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void* stack_end) {
  start_fn real = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
  real_main = main;
  return real(shim_main, argc, argv, init, fini, rtld_fini, stack_end);
}
