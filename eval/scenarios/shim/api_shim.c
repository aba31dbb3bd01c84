/* Applies API controls to a scenario: LD_PRELOAD this and set SYSPILOT_API_<control>=VALUE;
   the shim replaces the value the application passes to the library's setter. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

static int override(const char* control, int value) {
  char name[128] = "SYSPILOT_API_";
  int i = 13;
  for (const char* c = control; *c && i < 127; ++c) name[i++] = *c;
  name[i] = 0;
  const char* v = getenv(name);
  return v && *v ? atoi(v) : value;
}

void fftw_plan_with_nthreads(int n) {
  static void (*real)(int);
  if (!real) real = (void (*)(int))dlsym(RTLD_NEXT, "fftw_plan_with_nthreads");
  real(override("fftw_plan_with_nthreads", n));
}

/* ZSTD_c_nbWorkers is 400 in zstd.h; the parameter type is an enum passed as int. */
size_t ZSTD_CCtx_setParameter(void* cctx, int param, int value) {
  static size_t (*real)(void*, int, int);
  if (!real) real = (size_t (*)(void*, int, int))dlsym(RTLD_NEXT, "ZSTD_CCtx_setParameter");
  if (param == 400) value = override("ZSTD_c_nbWorkers", value);
  return real(cctx, param, value);
}
