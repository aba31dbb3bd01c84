// Parse+check throughput of LPCL on a generated large contract file, in MB/s.
// Usage: lpcl_bench [MEGABYTES] [RUNS]   (default 20 MB, 5 runs; prints medians)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lpcl/lpcl.h"

using namespace syspilot;
using Clock = std::chrono::steady_clock;

namespace {

// A realistic mix: controls with domains, defaults, docs and provenance; demands with
// fallbacks; comments; assumptions, behaviors and signals.
std::string generate(size_t bytes, size_t& controls) {
  std::string t = "# generated benchmark contract\ncontract bench \"1.0\" {\n  origin extracted, manual;\n";
  controls = 0;
  while (t.size() < bytes) {
    std::string i = std::to_string(controls++);
    t += "  # knob " + i + " as documented upstream\n";
    t += "  control LIB_KNOB_" + i + " : env int in [1, 4 * ncpus] default min(ncores, 8) read_at init sets cpu.threads\n";
    t += "      doc \"threads used by pool " + i + " when no other setting is given\" @ \"src/env.c:" + std::to_string(controls) +
         "\" origin extracted confidence 0.9;\n";
    t += "  control LIB_MODE_" + i + " : env enum{passive, active} default passive fallback_for LIB_KNOB_" + i + ";\n";
    t += "  demand cpu.threads = LIB_KNOB_" + i + " ?? ncpus when LIB_MODE_" + i + " == active && nnuma <= 2;\n";
  }
  t += "  assume exclusive(cpu.cores);\n  behavior spin_wait idle_timeout 200ms;\n  signal os.threads expect cpu.threads + 1;\n}\n";
  return t;
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  size_t mb = argc > 1 ? std::stoul(argv[1]) : 20;
  int runs = argc > 2 ? std::stoi(argv[2]) : 5;
  size_t controls = 0;
  std::string text = generate(mb * 1000 * 1000, controls);
  std::string path = "/tmp/lpcl_bench." + std::to_string(::getpid()) + ".lpcl";
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
  double size_mb = text.size() / 1e6;
  std::printf("lpcl_bench: %.1f MB generated contract, %zu controls, %d runs (medians)\n", size_mb, 2 * controls, runs);
  // CPU seconds as well as wall seconds: on a shared machine the CPU figure is the stable one.
  std::vector<double> parse_s, check_s, total_s, format_s, json_s, cpu_s;
  for (int r = 0; r < runs; ++r) {
    Diagnostics d;
    std::clock_t c0 = std::clock();
    auto t0 = Clock::now();
    lpcl::Document doc = lpcl::parse_file(path, d);
    auto t1 = Clock::now();
    bool ok = lpcl::check(doc, d);
    auto t2 = Clock::now();
    cpu_s.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
    if (d.has_errors() || !ok) {
      std::fprintf(stderr, "lpcl_bench: generated contract has errors:\n%s", d.str().substr(0, 2000).c_str());
      std::remove(path.c_str());
      return 1;
    }
    std::string f = lpcl::format(doc);
    auto t3 = Clock::now();
    std::string j = lpcl::to_json(doc).dump();
    auto t4 = Clock::now();
    parse_s.push_back(seconds(t0, t1));
    check_s.push_back(seconds(t1, t2));
    total_s.push_back(seconds(t0, t2));
    format_s.push_back(seconds(t2, t3));
    json_s.push_back(seconds(t3, t4));
  }
  std::remove(path.c_str());
  std::printf("parse+check: %.1f MB/s  (parse %.3f s, check %.3f s; %.1f MB per CPU second)\n", size_mb / median(total_s),
              median(parse_s), median(check_s), size_mb / median(cpu_s));
  std::printf("format:      %.1f MB/s\n", size_mb / median(format_s));
  std::printf("to_json:     %.1f MB/s of LPCL text\n", size_mb / median(json_s));
  return 0;
}
