// Scenario: an OpenMP loop over a batch of signals, each transformed by a threaded FFTW plan.
// The plan was made with fftw_plan_with_nthreads(nproc): FFTW's pool runs inside every OpenMP thread.
#include <fftw3.h>
#include <omp.h>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int signals = argc > 1 ? std::atoi(argv[1]) : 192;
  const int n = 1 << 14;
  fftw_init_threads();
  fftw_plan_with_nthreads(static_cast<int>(std::thread::hardware_concurrency()));
  fftw_complex* in = fftw_alloc_complex(n);
  fftw_complex* out = fftw_alloc_complex(n);
  fftw_plan plan = fftw_plan_dft_1d(n, in, out, FFTW_FORWARD, FFTW_ESTIMATE);
  double checksum = 0;
#pragma omp parallel reduction(+ : checksum)
  {
    fftw_complex* x = fftw_alloc_complex(n);
    fftw_complex* y = fftw_alloc_complex(n);
#pragma omp for schedule(dynamic)
    for (int s = 0; s < signals; ++s) {
      for (int i = 0; i < n; ++i) { x[i][0] = (i * (s + 1)) % 17; x[i][1] = 0; }
      fftw_execute_dft(plan, x, y);  // new-array execute: thread-safe on a shared plan
      checksum += y[s % n][0];
    }
    fftw_free(x);
    fftw_free(y);
  }
  fftw_destroy_plan(plan);
  fftw_free(in);
  fftw_free(out);
  fftw_cleanup_threads();
  std::printf("checksum %.3f\n", checksum);
  return 0;
}
