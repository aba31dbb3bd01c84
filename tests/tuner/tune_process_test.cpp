// `syspilot tune` on batch work: a script running an OpenMP program two at a time through
// `xargs -P` (ImageMagick's convert when Debian's imagemagick is installed, else our omp_loop)
// gets per-process threads; a process count given as a placeholder in the arguments
// (`xargs -P {NPROC:-2}`) is searched with --add.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tests/tuner/analyze_support.h"
#include "tests/tuner/tune_cli_support.h"
#include "tuner/run.h"
#include "tuner/session.h"

#ifdef SYSPILOT_CLI
namespace fs = std::filesystem;
using namespace syspilot::tuner;

namespace {

std::string program(const std::string& name) { return std::string(SYSPILOT_TEST_PROGRAMS) + "/" + name; }
const char* kConvert = "/usr/bin/convert-im6.q16";

using testing_support::Scratch;

// The defaults under test: each process sizes its OpenMP team for the machine.
RunResult tune_cli(std::vector<std::string> args) {
  return testing_support::tune_cli(std::move(args), 240,
                                   {"OMP_NUM_THREADS", "OMP_THREAD_LIMIT", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "NPROC",
                                    "OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"});
}

}  // namespace

// The brief's case: `bash batch.sh` (xargs -P 2 over an OpenMP program). The analysis derives
// process oversubscription from the children; tune tries a per-process thread count.
TEST(TuneProcesses, BatchScriptGetsPerProcessThreads) {
  if (online_cpus() < 2) GTEST_SKIP() << "one CPU: one thread per process is the default";
  Scratch s("tune-batch");
  bool magick = fs::exists(kConvert);
  // Many short parallel regions (one blur per image of 61), so that two processes of
  // machine-sized teams really contend: a thread that waits at a region's barrier spins while
  // its partner is descheduled by the other process. One long blur per process instead is a
  // single region whose threads rarely wait, and the probe then runs as fast as the default
  // or, by noise, slower (1.47 s against 1.40 s here, probes up to 31% slower on a loaded
  // machine), which refutes the hypothesis rightly. This job: default about 2.1 s, one thread
  // per process about 1.6 s on 2 cores.
  std::string job = magick ? std::string(kConvert) + " -size 16x8400 gradient: -duplicate 60 -gaussian-blur 0x0.5 null:"
                           : program("omp_loop") + " 60 100000 @";
  std::string script = s / "batch.sh";
  std::ofstream(script) << "#!/bin/sh\nseq 1 4 | xargs -I @ -P \"${NPROC:-2}\" " << job << "\n";
  RunResult r = tune_cli({"--db", s / "t.db", "--budget", "6", "--verify", "0", "--", "bash", script});
  ASSERT_TRUE(r.ok()) << (magick ? "ImageMagick: " : "omp_loop: ") << r.failure << "\n" << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("hypothesis process_oversubscription:libgomp:"), std::string::npos) << r.stderr_text;
  // The search tries a per-process thread count within the machine: 2 processes at a time.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.stderr_text, m, std::regex("trial [0-9]+ +runs [0-9]+/[0-9]+ +OMP_NUM_THREADS=([0-9]+) ")))
      << r.stderr_text;
  EXPECT_LE(2 * std::stoi(m[1]), std::max(2, online_cpus())) << r.stderr_text;
  // The answer is either the verdict to keep the defaults (on 2 cores, 2 processes of 2 threads
  // can beat 2 of 1: the last job runs alone) or a configuration of the OpenMP runtime's
  // controls (a per-process thread count, or OMP_DYNAMIC=true, which lets libgomp shrink each
  // team to the load: the minimised answer may keep either); a thread count it recommends stays
  // within the machine.
  bool keep = r.stdout_text.find("# keep your defaults") != std::string::npos;
  std::vector<std::string> exported;
  std::istringstream lines(r.stdout_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::string name = line.substr(0, line.find('='));
    exported.push_back(name);
    EXPECT_TRUE(name.rfind("OMP_", 0) == 0 || name.rfind("GOMP_", 0) == 0) << line << "\n" << r.stdout_text;
    if (name == "OMP_NUM_THREADS") {
      EXPECT_LE(2 * std::stoi(line.substr(line.find('=') + 1)), std::max(2, online_cpus())) << r.stdout_text;
    }
  }
  EXPECT_TRUE(keep != !exported.empty()) << "either keep the defaults or export a configuration\n" << r.stdout_text;
}

// `xargs -P {NPROC:-2}` without a script: every trial replaces the placeholder with the
// configuration's NPROC (else 2); the hypothesis names NPROC, --add gives its values, and no
// trial fails (a placeholder left as written would make xargs refuse "-P {NPROC:-2}": exit 1).
TEST(TuneProcesses, PlaceholderProcessCountIsSearched) {
  if (online_cpus() < 2) GTEST_SKIP() << "one CPU";
  Scratch s("tune-placeholder");
  std::ofstream(s / "inputs") << "1\n2\n3\n4\n";
  RunResult r = tune_cli({"--db", s / "t.db", "--budget", "8", "--verify", "0", "--max-repeats", "1", "--add",
                          "NPROC=1,2", "--", "xargs", "-a", s / "inputs", "-n", "1", "-P", "{NPROC:-2}",
                          program("omp_loop"), "60", "100000"});
  ASSERT_TRUE(r.ok()) << r.failure << "\n" << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("hypothesis process_oversubscription:libgomp:"), std::string::npos) << r.stderr_text;
  SessionStore st(s / "t.db");
  auto trials = st.trials(1);
  ASSERT_GE(trials.size(), 3u) << r.stderr_text;
  bool one_process = false;
  for (const auto& t : trials) {
    // Capped (3x slower than the best: the default under outside load) is no failure of the run.
    EXPECT_TRUE(t.m.ok || t.m.failure.rfind("capped at", 0) == 0) << to_string(t.config) << ": " << t.m.failure;
    one_process |= t.config.count("NPROC") && t.config.at("NPROC") == "1";
  }
  EXPECT_TRUE(one_process) << "the remedy NPROC=1 with all threads was not tried\n" << r.stderr_text;
  auto session = st.get(1);
  ASSERT_TRUE(session);
  auto guides = nlohmann::json::parse(session->guides_json);
  bool named = false;
  for (auto& g : guides)
    if (g.value("id", "") == "process_oversubscription:libgomp")
      named = g.value("constraint", "") == "NPROC * OMP_NUM_THREADS <= ncores";
  EXPECT_TRUE(named) << session->guides_json;
}
#endif  // SYSPILOT_CLI
