// Tests of the contention the analysis derives beyond plain nesting: thread pools kept in
// containers, runtimes that alternate, a runtime seen only at run time (dlopen), allocator
// contention through the C library, and undoing a user's pinning export. Programs that need
// unusual builds (a plugin, a host that dlopens it) are compiled here with the system compiler.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tests/tuner/analyze_support.h"
#include "tuner/analyze.h"

namespace fs = std::filesystem;
using namespace syspilot;
using namespace syspilot::tuner;

namespace {

std::string program(const std::string& name) { return std::string(SYSPILOT_TEST_PROGRAMS) + "/" + name; }
std::string program_source(const std::string& name) { return std::string(SYSPILOT_TEST_PROGRAM_SOURCES) + "/" + name; }
std::string corpus() { return std::string(SYSPILOT_TEST_PROGRAM_SOURCES) + "/../../../corpus"; }

// A private folder for sources written by a test and for programs compiled by it.
struct Scratch : testing_support::Scratch {
  Scratch() : testing_support::Scratch("contention") {}
};

using testing_support::find_h;
using testing_support::has_relation;

std::string relations_text(const Composition& c) {
  std::string out = "relations:";
  for (auto& r : c.relations) out += " " + r.outer + (r.kind == Relation::Kind::Nested ? ">" : "+") + r.inner + "(" + r.how + ")";
  out += " contracts:";
  for (auto& u : c.contracts) out += " " + u.contract.name;
  return out;
}

bool names(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

ComposeOptions compose_options(const std::string& prog, const std::string& contracts, const std::string& source_dir = {}) {
  ComposeOptions o;
  o.binary = prog;
  o.contract_dirs = {contracts};
  o.synthesize = false;
  o.source_dir = source_dir;
  return o;
}

// Analysis of `argv` (its first word the binary) against `contracts`, nothing drafted.
AnalyzeOptions analyze_options(const std::vector<std::string>& argv, const std::string& contracts) {
  AnalyzeOptions o;
  o.compose = compose_options(argv.front(), contracts);
  o.profile.run.argv = argv;
  o.profile.run.timeout_s = 30;
  return o;
}

bool has_remedy(const Hypothesis& h, const std::string& control, const std::string& value) {
  for (auto& r : h.remedies)
    if (auto it = r.find(control); it != r.end() && it->second == value) return true;
  return false;
}

}  // namespace

TEST(Contention, ThreadsStartedThroughAContainerAreApplicationThreads) {
  Scratch s;
  s.write("pool.cpp", R"(#include <thread>
#include <vector>
int main() {
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t) pool.emplace_back([t] { volatile int x = t; (void)x; });
#pragma omp parallel for
  for (int i = 0; i < 8; ++i) {}
  for (auto& t : pool) t.join();
}
)");
  ComposeOptions o = compose_options(program("spin_pool"), SYSPILOT_TEST_CONTRACTS, s.dir.string());
  Diagnostics d;
  Composition c = compose(o, d);
  EXPECT_TRUE(c.app_threads);
  EXPECT_TRUE(has_relation(c, Relation::Kind::CoRun, "app-threads", "libgomp")) << relations_text(c);
  auto hs = hypothesize(c, d);
  const Hypothesis* spin = find_h(hs, "spin_interference:libgomp>app-threads");
  ASSERT_NE(spin, nullptr);
  EXPECT_TRUE(names(spin->controls, "OMP_WAIT_POLICY"));
  EXPECT_TRUE(has_remedy(*spin, "OMP_WAIT_POLICY", "passive"));
}

TEST(Contention, RuntimesThatTakeTurnsRunBesideEachOther) {
  Scratch s;
  s.write("phases.cpp", R"(#include <tbb/parallel_for.h>
int main() {
  double a[64] = {0};
  for (int step = 0; step < 10; ++step) {
#pragma omp parallel for
    for (int i = 0; i < 64; ++i) a[i] += i;
    tbb::parallel_for(0, 64, [&](int i) { a[i] *= 0.5; });
  }
}
)");
  ComposeOptions o = compose_options(program("tbb_omp"), SYSPILOT_TEST_CONTRACTS, s.dir.string());
  Diagnostics d;
  Composition c = compose(o, d);
  ASSERT_TRUE(has_relation(c, Relation::Kind::CoRun, "libgomp", "onetbb")) << relations_text(c);
  EXPECT_FALSE(has_relation(c, Relation::Kind::Nested, "libgomp", "onetbb"));
  bool alternating = false;
  for (auto& r : c.relations) alternating |= r.how == "alternating";
  EXPECT_TRUE(alternating);
  auto hs = hypothesize(c, d);
  EXPECT_NE(find_h(hs, "spin_interference:libgomp>onetbb"), nullptr) << relations_text(c);
}

TEST(Contention, PinningExportIsUndoneByTheProbeAndTheRemedy) {
  ComposeOptions o = compose_options(program("spin_pool"), SYSPILOT_TEST_CONTRACTS);
  ::unsetenv("OMP_PROC_BIND");
  ::unsetenv("OMP_PLACES");
  ::unsetenv("GOMP_CPU_AFFINITY");
  Scratch s;
  s.write("spin_pool.c", [] {
    std::ifstream in(program_source("spin_pool.c"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }());
  o.source_dir = s.dir.string();
  Diagnostics d;
  // Nothing exported: nothing to undo, so no probe is spent and the hypothesis cannot hold.
  Composition plain = compose(o, d);
  const Hypothesis* h = nullptr;
  auto hs_plain = hypothesize(plain, d);
  h = find_h(hs_plain, "affinity_collision:libgomp>app-threads");
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(h->probe.empty());
  EXPECT_TRUE(h->remedies.empty());
  // The user exported OMP_PROC_BIND: the probe and the remedy unset it (value "").
  o.env["OMP_PROC_BIND"] = "true";
  Composition pinned = compose(o, d);
  auto hs = hypothesize(pinned, d);
  h = find_h(hs, "affinity_collision:libgomp>app-threads");
  ASSERT_NE(h, nullptr);
  ASSERT_EQ(h->probe.count("OMP_PROC_BIND"), 1u);
  EXPECT_EQ(h->probe.at("OMP_PROC_BIND"), "");
  EXPECT_EQ(h->probe.count("OMP_PLACES"), 0u);  // not exported, left alone
  EXPECT_TRUE(has_remedy(*h, "OMP_PROC_BIND", ""));
}

// A command that gives a control a value of its own (`export OMP_PROC_BIND={OMP_PROC_BIND:-true}`)
// sets it as surely as an export does: the pinning is the user's, counted as set, and undone by
// the library's stated default (false), since unsetting it brings the command's value back. A
// control the contract states no default for (OMP_PLACES) is left as the command gives it.
TEST(Contention, PinningTheCommandGivesIsSetAndUndoneByTheLibrarysDefault) {
  if (online_cpus() < 2) GTEST_SKIP() << "needs 2 CPUs to pin apart";
  ::unsetenv("OMP_PROC_BIND");
  ::unsetenv("OMP_PLACES");
  ::unsetenv("GOMP_CPU_AFFINITY");
  auto pinning = [](const Analysis& a) -> const Hypothesis* {
    for (auto& h : a.hypotheses)
      if (h.id.rfind("affinity_collision:libgomp>", 0) == 0) return &h;
    return nullptr;
  };
  // An OpenMP loop over the pthreads OpenBLAS, started by a shell that pins it.
  const std::string prog = "'" + program("omp_blas") + "' 2000 96";
  AnalyzeOptions o = analyze_options(
      {"/bin/sh", "-c", "export OMP_PROC_BIND={OMP_PROC_BIND:-true} OMP_PLACES={OMP_PLACES:-cores}; exec " + prog}, corpus());
  o.profile.run.env_unset = {"OMP_PROC_BIND", "OMP_PLACES", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS",
                             "OPENBLAS_NUM_THREADS", "GOMP_CPU_AFFINITY"};
  o.profile.repeats = 1;
  Analysis a = analyze(o);
  EXPECT_EQ(a.composition.command_values.count("OMP_PROC_BIND"), 1u) << to_text(a);
  const Hypothesis* h = pinning(a);
  ASSERT_NE(h, nullptr) << to_text(a);
  ASSERT_EQ(h->probe.count("OMP_PROC_BIND"), 1u) << to_text(a);
  EXPECT_EQ(h->probe.at("OMP_PROC_BIND"), "false") << "unset, the command's own value comes back";
  EXPECT_EQ(h->probe.count("OMP_PLACES"), 0u) << "no stated default to undo it with";
  EXPECT_TRUE(has_remedy(*h, "OMP_PROC_BIND", "false"));
  const Evidence* set = nullptr;
  for (auto& e : h->evidence)
    if (e.signal == "controls_set") set = &e;
  ASSERT_NE(set, nullptr) << to_text(a);
  EXPECT_GE(set->value, 1) << "the command's pinning is set for the run\n" << to_text(a);
  EXPECT_EQ(a.profile.signals.at("main_pinned"), 1) << "the command's value reached the program\n" << to_text(a);

  // Without the command's pinning, nothing is set and nothing is undone.
  o = analyze_options({"/bin/sh", "-c", "exec " + prog}, corpus());
  o.profile.run.env_unset = {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"};
  o.profile.repeats = 1;
  o.profile.probes = false;
  Analysis plain = analyze(o);
  EXPECT_TRUE(plain.composition.command_values.empty());
  if ((h = pinning(plain))) EXPECT_TRUE(h->probe.empty()) << to_text(plain);
}

// The user exported OMP_PROC_BIND/OMP_PLACES: the pthread pool started after libgomp pinned the
// initial thread inherits its one-CPU mask. The run shows it (the initial thread pinned),
// and unpinning with libgomp's idle threads waiting passively runs faster. Unpinned alone is
// not enough here: libgomp's spinning worker would take the CPU the pool gets back.
TEST(Contention, InheritedPinIsSeenAndConfirmed) {
  if (online_cpus() < 2) GTEST_SKIP() << "needs 2 CPUs to pin apart";
  Scratch s;
  std::string pool = s.compile("pinned_pool", "-fopenmp -pthread '" + program_source("pinned_pool.c") + "' -lm");
  ASSERT_FALSE(pool.empty()) << "cc failed on pinned_pool.c";
  // 5 steps of 60000 (0.5 s pinned): unpinned with passive waiting runs 1.32-1.44x faster in
  // 10 of 10 idle pairs; 100 steps of 3000, the same work in short-lived pool threads, ran
  // 1.09-1.39x, too close to the rule's 1.2 to call reliably.
  AnalyzeOptions o = analyze_options({pool, "5", "60000"}, corpus());
  o.compose.env = {{"OMP_PROC_BIND", "true"}, {"OMP_PLACES", "cores"}};
  o.profile.run.env_set = o.compose.env;
  o.profile.run.env_unset = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS", "GOMP_CPU_AFFINITY"};
  o.profile.repeats = 3;
  // The probe's gain is a timing (1.3-1.45x idle): on a machine where something else runs for a
  // moment one analysis can miss it, so a second one is allowed. Both missing it fails, unless
  // other work held the CPUs meanwhile (MEASUREMENT.md): then the timing is not this program's.
  double load = 0;
  auto analyse = [&] {
    rusage self0{}, kids0{}, self1{}, kids1{};
    getrusage(RUSAGE_SELF, &self0);
    getrusage(RUSAGE_CHILDREN, &kids0);
    double busy0 = machine_busy_seconds();
    auto t0 = std::chrono::steady_clock::now();
    Analysis x = analyze(o);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double busy = machine_busy_seconds() - busy0;
    getrusage(RUSAGE_SELF, &self1);
    getrusage(RUSAGE_CHILDREN, &kids1);
    auto secs = [](const timeval& a, const timeval& b) { return (b.tv_sec - a.tv_sec) + (b.tv_usec - a.tv_usec) / 1e6; };
    double own = secs(self0.ru_utime, self1.ru_utime) + secs(self0.ru_stime, self1.ru_stime) +
                 secs(kids0.ru_utime, kids1.ru_utime) + secs(kids0.ru_stime, kids1.ru_stime);
    if (wall > 0) load = std::max(load, (busy - own) / wall);
    return x;
  };
  Analysis a = analyse();
  const Hypothesis* h = find_h(a.hypotheses, "affinity_collision:libgomp>app-threads");
  ASSERT_NE(h, nullptr) << to_text(a);
  if (h->verdict != Verdict::Confirmed) {
    std::cout << "first analysis: " << h->reason << "; analysing again\n";
    a = analyse();
    h = find_h(a.hypotheses, "affinity_collision:libgomp>app-threads");
    ASSERT_NE(h, nullptr) << to_text(a);
  }
  EXPECT_EQ(a.profile.signals.at("main_pinned"), 1) << to_text(a);
  EXPECT_GE(a.profile.signals.at("pinned_sharing"), 1) << to_text(a);
  EXPECT_EQ(h->probe.at("OMP_PROC_BIND"), "");
  EXPECT_EQ(h->probe.at("OMP_WAIT_POLICY"), "passive");
  EXPECT_TRUE(has_remedy(*h, "OMP_WAIT_POLICY", "passive"));
  Verdict verdict = h->verdict;
  std::string reason = h->reason, text = to_text(a);

  // Not pinned: no thread runs confined to fewer CPUs than the program started with.
  o.compose.env.clear();
  o.profile.run.env_set.clear();
  o.profile.run.env_unset.push_back("OMP_PROC_BIND");
  o.profile.run.env_unset.push_back("OMP_PLACES");
  o.profile.repeats = 1;
  o.profile.probes = false;
  Analysis plain = analyze(o);
  EXPECT_EQ(plain.profile.signals.at("pinned_sharing"), 0) << to_text(plain);
  EXPECT_EQ(plain.profile.signals.at("main_pinned"), 0) << to_text(plain);

  if (verdict != Verdict::Confirmed && load > 0.3)
    GTEST_SKIP() << "outside load up to " << load << " cores during the analyses: " << reason;
  EXPECT_EQ(verdict, Verdict::Confirmed) << "outside load up to " << load << " cores\n" << text;
}

// zstd's fewest threads are nbWorkers = 0 (the caller compresses), not 1: the co-run remedy
// that gives zstd its fewest threads says so, and the constraint names the library's own
// control, not ZSTD_NBTHREADS, which only the zstd command reads.
TEST(Contention, ZstdBesideOpenMpRemediesUseTheLibrarysFewestThreads) {
  Scratch s;
  s.write("main.cpp", R"(#include <omp.h>
#include <zstd.h>
#include <thread>
#include <vector>
int main() {
  std::vector<char> src(1 << 20, 'a'), dst(ZSTD_compressBound(1 << 20));
  std::thread compressor([&] {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_nbWorkers, 4);
    ZSTD_compress2(cctx, dst.data(), dst.size(), src.data(), src.size());
    ZSTD_freeCCtx(cctx);
  });
  double x = 0;
#pragma omp parallel for reduction(+ : x)
  for (int i = 0; i < 1000; ++i) x += i;
  compressor.join();
  return x > 0 ? 0 : 1;
}
)");
  std::string bin = (s.dir / "zstd_omp").string();
  std::string cmd = "c++ -O1 -w -fopenmp -pthread '" + (s.dir / "main.cpp").string() + "' -lzstd -o '" + bin + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "c++ failed";
  ComposeOptions o = compose_options(bin, corpus());
  o.source_dir = s.dir.string();
  Diagnostics d;
  Composition c = compose(o, d);
  ASSERT_NE(c.find_contract("zstd"), nullptr) << relations_text(c);
  auto hs = hypothesize(c, d);
  const Hypothesis* h = find_h(hs, "corun_oversubscription:libgomp>zstd");
  if (!h) h = find_h(hs, "corun_oversubscription:zstd>libgomp");
  ASSERT_NE(h, nullptr) << relations_text(c);
  EXPECT_TRUE(has_remedy(*h, "ZSTD_c_nbWorkers", "0"));
  EXPECT_TRUE(has_remedy(*h, "OMP_NUM_THREADS", "1"));
  EXPECT_NE(h->constraint.find("ZSTD_c_nbWorkers"), std::string::npos) << h->constraint;
  EXPECT_FALSE(names(h->controls, "ZSTD_NBTHREADS"));
}

TEST(Contention, AllocatorContentionConfirmedThroughTheCLibrary) {
  Scratch s;
  std::string storm = s.compile("alloc_storm", "-pthread '" + program_source("alloc_storm.c") + "'");
  ASSERT_FALSE(storm.empty()) << "cc failed on alloc_storm.c";
  AnalyzeOptions o = analyze_options({storm, "3000", "8"}, corpus());
  Analysis a = analyze(o);
  // The program starts threads, so the C library's allocator contract joins.
  ASSERT_NE(a.composition.find_contract("glibc_malloc"), nullptr) << to_text(a);
  const Hypothesis* h = find_h(a.hypotheses, "allocator_contention:glibc_malloc");
  ASSERT_NE(h, nullptr) << to_text(a);
  EXPECT_EQ(h->verdict, Verdict::Confirmed) << to_text(a);
  EXPECT_TRUE(names(h->controls, "MALLOC_ARENA_MAX"));
  EXPECT_TRUE(names(h->controls, "LD_PRELOAD"));
  EXPECT_TRUE(has_remedy(*h, "LD_PRELOAD", "libjemalloc.so.2"));
  // Decided by the default run's own signals: no probe is charged for it.
  EXPECT_TRUE(a.profile.probes.empty());
  auto g = guides(a.hypotheses);
  ASSERT_FALSE(g.empty());
  EXPECT_EQ(g.front().kind, "allocator_contention");
}

TEST(Contention, AllocatorContentionRefutedWhereThreadsOnlyCompute) {
  AnalyzeOptions o = analyze_options({program("spin_pool"), "20", "1"}, corpus());
  o.profile.probes = false;
  Analysis a = analyze(o);
  const Hypothesis* h = find_h(a.hypotheses, "allocator_contention:glibc_malloc");
  ASSERT_NE(h, nullptr) << to_text(a);
  EXPECT_EQ(h->verdict, Verdict::Refuted) << to_text(a);
}

TEST(Contention, SingleThreadedProgramDoesNotComposeTheCLibrary) {
  ComposeOptions o = compose_options(program("calm"), corpus());
  Diagnostics d;
  Composition c = compose(o, d);
  EXPECT_EQ(c.find_contract("glibc_malloc"), nullptr) << relations_text(c);
}

// A host without OpenMP loads a plugin built with it; the runtime appears only at run time.
class Plugin : public ::testing::Test {
 protected:
  Scratch s;
  std::string host, plugin;
  void SetUp() override {
    plugin = s.compile("plugin_omp.so", "-fopenmp -shared -fPIC '" + program_source("plugin_omp.c") + "'");
    host = s.compile("plugin_host", "-pthread '" + program_source("plugin_host.c") + "' -ldl");
    ASSERT_FALSE(plugin.empty() || host.empty()) << "cc failed on the plugin test programs";
  }
  AnalyzeOptions options(const std::string& wait_policy) {
    AnalyzeOptions o = analyze_options({host, plugin, "100", "1"}, SYSPILOT_TEST_CONTRACTS);
    o.profile.run.env_set = {{"OMP_WAIT_POLICY", wait_policy}, {"OMP_NUM_THREADS", "2"}};
    o.compose.env = o.profile.run.env_set;
    return o;
  }
};

TEST_F(Plugin, DlopenedRuntimeIsComposedAndItsSpinningConfirmed) {
  Analysis a = analyze(options("active"));
  const Library* gomp = nullptr;
  for (auto& l : a.composition.libraries)
    if (l.soname.rfind("libgomp", 0) == 0) gomp = &l;
  ASSERT_NE(gomp, nullptr) << to_text(a);
  EXPECT_EQ(gomp->found_by, "dlopen");
  EXPECT_EQ(gomp->contract, "libgomp");
  EXPECT_TRUE(has_relation(a.composition, Relation::Kind::CoRun, "libgomp", "app-threads")) << to_text(a);
  const Hypothesis* h = find_h(a.hypotheses, "spin_interference:libgomp>app-threads");
  ASSERT_NE(h, nullptr) << to_text(a);
  EXPECT_EQ(h->verdict, Verdict::Confirmed) << to_text(a);
  EXPECT_TRUE(names(h->controls, "OMP_WAIT_POLICY"));
  // The discovery run is the profile's first default run: one default per pair (a ratio
  // close to a threshold takes more pairs), no separate discovery run.
  size_t pairs = 0;
  for (auto& p : a.profile.probes) pairs = std::max(pairs, p.runs.size());
  EXPECT_EQ(a.profile.default_runs.size(), pairs);
}

TEST_F(Plugin, PassiveWaitingRefutesTheSpinning) {
  Analysis a = analyze(options("passive"));
  const Hypothesis* h = find_h(a.hypotheses, "spin_interference:libgomp>app-threads");
  ASSERT_NE(h, nullptr) << to_text(a);
  EXPECT_EQ(h->verdict, Verdict::Refuted) << to_text(a);
}

TEST(Contention, RuleCheckMayPassOnAnAlternativeSignal) {
  Scratch s;
  s.write("nested.json", R"({"kind": "nested_oversubscription", "relation": "nested",
    "roles": [{"name": "outer", "any": ["provides:region"]}, {"name": "inner", "any": ["demand:cpu.threads"]}],
    "probes": [{"inner:cpu.threads": "1"}],
    "checks": [{"signal": "probe.ivcs_ratio", "op": ">=", "value": 1000,
                "or": {"signal": "threads_max", "op": ">=", "value": 1}}]})");
  AnalyzeOptions o = analyze_options({program("omp_blas")}, SYSPILOT_TEST_CONTRACTS);
  o.compose.manifest = s.write("m.txt", "nested libgomp > openblas\n");
  o.rules_dir = s.dir.string();
  Analysis a = analyze(o);
  ASSERT_EQ(a.hypotheses.size(), 1u) << to_text(a);
  const Hypothesis& h = a.hypotheses.front();
  ASSERT_EQ(h.checks.size(), 1u);
  EXPECT_EQ(h.checks[0].or_signal, "threads_max");
  // No program switches 1000x less with one thread: the alternative decided.
  EXPECT_EQ(h.verdict, Verdict::Confirmed) << to_text(a);
  ASSERT_EQ(h.evidence.size(), 1u);
  EXPECT_EQ(h.evidence[0].signal, "threads_max");
}

// A probe ratio too close to a rule's threshold to call takes more default/probe pairs, up
// to max_repeats; one far from it is decided by the first pair.
TEST(Contention, RatioCloseToTheThresholdTakesMorePairs) {
  Scratch s;
  auto rule = [&](const char* value) {
    s.write("nested.json", std::string(R"({"kind": "nested_oversubscription", "relation": "nested",
      "roles": [{"name": "outer", "any": ["provides:region"]}, {"name": "inner", "any": ["demand:cpu.threads"]}],
      "probes": [{"inner:cpu.threads": "2"}],
      "checks": [{"signal": "probe.wall_ratio", "op": ">=", "value": )") + value + "}]}");
  };
  AnalyzeOptions o = analyze_options({program("omp_blas"), "150"}, SYSPILOT_TEST_CONTRACTS);
  o.compose.manifest = s.write("m.txt", "nested libgomp > openblas\n");
  o.rules_dir = s.dir.string();
  // Close: every finite ratio counts as close to the threshold 1.0, so the pairs taken do not
  // hang on one pair's noise (on a busy machine a single pair of this short run can differ 2x).
  o.profile.near = 1e6;
  o.profile.max_repeats = 3;

  rule("1.0");
  Analysis close = analyze(o);
  ASSERT_EQ(close.hypotheses.size(), 1u) << to_text(close);
  ASSERT_EQ(close.profile.probes.size(), 1u);
  EXPECT_EQ(close.profile.default_runs.size(), 3u) << to_text(close);
  EXPECT_EQ(close.profile.probes[0].runs.size(), 3u);
  ASSERT_FALSE(close.hypotheses[0].evidence.empty());
  EXPECT_NE(close.hypotheses[0].evidence[0].note.find("median of 3 interleaved pair(s)"), std::string::npos)
      << close.hypotheses[0].evidence[0].note;

  // A limit on runs in all (tune's budget) bounds the extra pairs: 4 runs allow one more pair.
  o.profile.max_runs = 4;
  Analysis capped = analyze(o);
  EXPECT_EQ(capped.profile.default_runs.size(), 2u) << to_text(capped);
  EXPECT_EQ(capped.profile.probes[0].runs.size(), 2u);
  o.profile.max_runs = 0;

  // Far: a ratio of about 1 (the probe changes little) lies 99% from the threshold 100.
  o.profile.near = 0.5;
  rule("100");
  Analysis far = analyze(o);
  ASSERT_EQ(far.hypotheses.size(), 1u) << to_text(far);
  EXPECT_EQ(far.profile.default_runs.size(), 1u) << to_text(far);
  EXPECT_EQ(far.hypotheses[0].verdict, Verdict::Refuted) << to_text(far);
}

TEST(Contention, StdThreadInTheBinaryMeansApplicationThreadsWithoutSource) {
  Diagnostics d;
  Composition c = compose(compose_options(program("tbb_omp"), SYSPILOT_TEST_CONTRACTS), d);
  EXPECT_TRUE(c.app_threads);  // std::thread starts in libstdc++, not through pthread_create
  Composition calm = compose(compose_options(program("calm"), SYSPILOT_TEST_CONTRACTS), d);
  EXPECT_FALSE(calm.app_threads);
}
