// Scenario: an OpenMP loop over independent blocks, each a DGEMM from pthreads OpenBLAS.
// Each OpenMP thread calls into OpenBLAS, whose own pool assumes the whole machine.
#include <cblas.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const int blocks = argc > 1 ? std::atoi(argv[1]) : 48;
  const int n = argc > 2 ? std::atoi(argv[2]) : 160;
  std::vector<double> a(n * n), b(n * n);
  for (int i = 0; i < n * n; ++i) { a[i] = (i % 7) * 0.5; b[i] = (i % 5) * 0.25; }
  double checksum = 0;
#pragma omp parallel for reduction(+ : checksum) schedule(dynamic)
  for (int k = 0; k < blocks; ++k) {
    std::vector<double> c(n * n, 0.0);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0 + k, a.data(), n, b.data(), n,
                0.0, c.data(), n);
    checksum += c[k % (n * n)];
  }
  std::printf("checksum %.3f\n", checksum);
  return 0;
}
