// Scenario: a request-processing pool of 4 x nproc threads, each allocating and freeing
// buffers of mixed sizes (small records and 128-512 KiB payloads), the allocator is shared.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int requests = argc > 1 ? std::atoi(argv[1]) : 6000;
  const int threads = 4 * static_cast<int>(std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  std::vector<unsigned long> sums(threads);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      unsigned state = 7u + t;
      std::vector<char*> window(64, nullptr);
      unsigned long sum = 0;
      for (int r = 0; r < requests; ++r) {
        state = state * 1103515245u + 12345u;
        size_t size = (state >> 8) % 8 == 0 ? (128u << 10) + ((state >> 4) % 4) * (128u << 10)
                                            : 16 + (state >> 12) % 2048;
        char* p = static_cast<char*>(std::malloc(size));
        std::memset(p, r & 0xff, size);
        sum += static_cast<unsigned char>(p[size / 2]);
        char*& slot = window[(state >> 20) % window.size()];
        std::free(slot);
        slot = p;
      }
      for (char* p : window) std::free(p);
      sums[t] = sum;
    });
  unsigned long total = 0;
  for (int t = 0; t < threads; ++t) {
    pool[t].join();
    total += sums[t];
  }
  std::printf("checksum %lu\n", total);
  return 0;
}
