// Scenario: a tbb::parallel_for whose body calls DGEMM from BLIS (its OpenMP build).
// Each TBB worker starts a BLIS team of BLIS_NUM_THREADS: TBB x BLIS threads.
#include <cblas.h>
#include <tbb/parallel_for.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const int blocks = argc > 1 ? std::atoi(argv[1]) : 48;
  const int n = argc > 2 ? std::atoi(argv[2]) : 160;
  std::vector<double> a(n * n), b(n * n);
  for (int i = 0; i < n * n; ++i) { a[i] = (i % 7) * 0.5; b[i] = (i % 5) * 0.25; }
  std::vector<double> sums(blocks);
  tbb::parallel_for(0, blocks, [&](int k) {
    std::vector<double> c(n * n, 0.0);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0 + k, a.data(), n, b.data(), n,
                0.0, c.data(), n);
    sums[k] = c[k % (n * n)];
  });
  double checksum = 0;
  for (double s : sums) checksum += s;
  std::printf("checksum %.3f\n", checksum);
  return 0;
}
