// Tests of analysis across processes: placeholders in a command's arguments, the runner's count
// of processes per library, scripts composed from their interpreter, process counts a command
// exposes to its launcher, and process oversubscription (xargs -P over OpenMP programs: our
// omp_loop, and ImageMagick's convert from Debian when it is installed) derived and confirmed.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "tests/tuner/analyze_support.h"
#include "tuner/analyze.h"
#include "tuner/compose.h"

namespace fs = std::filesystem;
using namespace syspilot;
using namespace syspilot::tuner;
using testing_support::find_h;

namespace {

std::string program(const std::string& name) { return std::string(SYSPILOT_TEST_PROGRAMS) + "/" + name; }
std::string corpus() { return std::string(SYSPILOT_TEST_PROGRAM_SOURCES) + "/../../../corpus"; }
const char* kConvert = "/usr/bin/convert-im6.q16";  // Debian's imagemagick-6.q16 (OpenMP build)

struct Scratch : testing_support::Scratch {
  Scratch() : testing_support::Scratch("process") {}
};

const LibraryUse* use_of(const RunResult& r, const std::string& fragment) {
  for (auto& u : r.library_use)
    if (u.path.find(fragment) != std::string::npos) return &u;
  return nullptr;
}

bool has_remedy(const Hypothesis& h, const Config& want) {
  return std::find(h.remedies.begin(), h.remedies.end(), want) != h.remedies.end();
}

// The batch script of the tests: `command` once per input line, NPROC at a time (xargs -I:
// the line replaces @ where the command has one).
std::string batch_script(const Scratch& s, const std::string& command, int inputs) {
  return s.write("batch.sh",
                 "#!/bin/sh\n"
                 "# one job per input, NPROC at a time\n"
                 "seq 1 " + std::to_string(inputs) + " | \\\n"
                 "  xargs -I @ -P \"${NPROC:-2}\" " + command + "\n",
                 true);
}

// Outside load on the machine while `f` ran, in cores (MEASUREMENT.md): the busy time /proc/stat
// counted less this process' and its children's own CPU time, per wall second.
template <class F>
double outside_load(F&& f) {
  rusage self0{}, kids0{}, self1{}, kids1{};
  getrusage(RUSAGE_SELF, &self0);
  getrusage(RUSAGE_CHILDREN, &kids0);
  double busy0 = machine_busy_seconds();
  auto t0 = std::chrono::steady_clock::now();
  f();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double busy = machine_busy_seconds() - busy0;
  getrusage(RUSAGE_SELF, &self1);
  getrusage(RUSAGE_CHILDREN, &kids1);
  auto secs = [](const timeval& a, const timeval& b) { return (b.tv_sec - a.tv_sec) + (b.tv_usec - a.tv_usec) / 1e6; };
  double own = secs(self0.ru_utime, self1.ru_utime) + secs(self0.ru_stime, self1.ru_stime) +
               secs(kids0.ru_utime, kids1.ru_utime) + secs(kids0.ru_stime, kids1.ru_stime);
  return wall > 0 ? (busy - own) / wall : 0;
}

AnalyzeOptions batch_options(const std::vector<std::string>& argv) {
  AnalyzeOptions o;
  o.compose.binary = argv.front();
  o.compose.contract_dirs = {corpus()};
  o.compose.synthesize = false;
  o.profile.run.argv = argv;
  o.profile.run.timeout_s = 60;
  // The defaults under test: every process sizes its OpenMP team for the machine and spins.
  o.profile.run.env_unset = {"OMP_NUM_THREADS", "OMP_THREAD_LIMIT", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "NPROC",
                             "OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"};
  return o;
}

// Analyses until the hypothesis is confirmed, twice at most (a moment of outside work can
// hide a timing); returns the last analysis and the most outside load seen.
std::pair<Analysis, double> analyse_batch(const AnalyzeOptions& o, const std::string& id) {
  Analysis a;
  double load = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    load = std::max(load, outside_load([&] { a = analyze(o); }));
    const Hypothesis* h = find_h(a.hypotheses, id);
    if (h && h->verdict == Verdict::Confirmed) break;
    std::cout << "analysis " << attempt + 1 << ": " << (h ? h->reason : "no " + id) << "\n";
  }
  return {a, load};
}

}  // namespace

// {NAME} and {NAME:-DEFAULT} in arguments take the child's environment; the shell's ${NAME},
// lower-case words (awk's {print}) and names without a value stay as written.
TEST(Processes, PlaceholdersTakeTheChildsEnvironment) {
  std::vector<std::string> argv = {"/bin/echo", "{NPROC:-3}", "-j{NPROC}", "x{A}y{B:-b}", "${HOME}", "{print}", "{NOPE}"};
  auto ps = placeholders(argv);
  ASSERT_EQ(ps.size(), 5u);
  EXPECT_EQ(ps[0].name, "NPROC");
  EXPECT_TRUE(ps[0].has_fallback);
  EXPECT_EQ(ps[0].fallback, "3");
  EXPECT_EQ(ps[0].arg, 1u);
  EXPECT_EQ(ps[3].name, "B");
  EXPECT_EQ(ps[4].name, "NOPE");
  EXPECT_FALSE(ps[4].has_fallback);

  RunSpec rs;
  rs.argv = argv;
  rs.env_set = {{"NPROC", "4"}, {"A", "a"}};
  rs.env_unset = {"B", "NOPE"};
  rs.sample_interval_s = 0;
  rs.perf = false;
  RunResult r = run(rs);
  ASSERT_TRUE(r.ok()) << r.failure;
  EXPECT_EQ(r.stdout_text, "4 -j4 xayb ${HOME} {print} {NOPE}\n");
  rs.env_set.erase("NPROC");
  rs.env_unset.push_back("NPROC");
  r = run(rs);
  ASSERT_TRUE(r.ok()) << r.failure;
  EXPECT_EQ(r.stdout_text, "3 -j{NPROC} xayb ${HOME} {print} {NOPE}\n");
  // An empty value counts as unset: the default applies.
  rs.env_set["NPROC"] = "";
  r = run(rs);
  EXPECT_EQ(r.stdout_text.substr(0, 2), "3 ");
  // A command that passes placeholders on (syspilot tune started by a test) gets them as written.
  rs.placeholders = false;
  r = run(rs);
  EXPECT_EQ(r.stdout_text, "{NPROC:-3} -j{NPROC} x{A}y{B:-b} ${HOME} {print} {NOPE}\n");
}

// Two OpenMP processes started by a shell at once: the runner sees libgomp in both, at the
// same time, only in children; the shell's own libc in the started process.
TEST(Processes, RunnerCountsProcessesPerLibrary) {
  std::string p = program("omp_loop") + " 1500 20000";
  RunSpec rs;
  rs.argv = {"/bin/sh", "-c", p + " >/dev/null & " + p + " >/dev/null & wait"};
  rs.env_set = {{"OMP_NUM_THREADS", "2"}, {"OMP_WAIT_POLICY", "passive"}};
  rs.timeout_s = 60;
  RunResult r = run(rs);
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  const LibraryUse* gomp = use_of(r, "libgomp");
  ASSERT_NE(gomp, nullptr) << "libgomp not seen in the children";
  EXPECT_EQ(gomp->processes, 2);
  EXPECT_EQ(gomp->max_concurrent, 2) << "wall " << r.wall_s << " s, " << r.samples << " samples";
  EXPECT_GE(gomp->max_threads, 3);  // two teams of two, sampled at once (a worker may start late)
  EXPECT_LE(gomp->max_threads, 4);
  EXPECT_FALSE(gomp->in_root);
  const LibraryUse* libc = use_of(r, "libc.so");
  ASSERT_NE(libc, nullptr);
  EXPECT_TRUE(libc->in_root);
  EXPECT_GE(libc->max_concurrent, 3);  // sh and both children
  EXPECT_GE(r.max_processes, 3);
  EXPECT_NE(std::find_if(r.libraries.begin(), r.libraries.end(),
                         [](const std::string& l) { return l.find("libgomp") != std::string::npos; }),
            r.libraries.end());
}

// The runner records the program each process ran, and the processes seen with each object:
// two children's libraries have no process in common, libc is in every one.
TEST(Processes, RunnerRecordsProgramsAndTheirProcesses) {
  std::string p = program("omp_loop") + " 300 20000";
  RunSpec rs;
  rs.argv = {"/bin/sh", "-c", p + " >/dev/null & /bin/sleep 0.4; wait"};
  rs.env_set = {{"OMP_NUM_THREADS", "2"}, {"OMP_WAIT_POLICY", "passive"}};
  rs.timeout_s = 60;
  RunResult r = run(rs);
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  auto has = [&](const std::string& fragment) {
    return std::any_of(r.executables.begin(), r.executables.end(),
                       [&](const std::string& e) { return e.find(fragment) != std::string::npos; });
  };
  EXPECT_TRUE(has("omp_loop"));
  EXPECT_TRUE(has("sleep"));
  for (auto& e : r.executables) EXPECT_EQ(std::find(r.libraries.begin(), r.libraries.end(), e), r.libraries.end()) << e;
  const LibraryUse* gomp = use_of(r, "libgomp");
  const LibraryUse* sleep = nullptr;
  for (auto& u : r.library_use)
    if (u.executable && u.path.find("sleep") != std::string::npos) sleep = &u;
  ASSERT_TRUE(gomp && sleep);
  EXPECT_FALSE(gomp->executable);
  ASSERT_EQ(gomp->pids.size(), 1u);
  ASSERT_EQ(sleep->pids.size(), 1u);
  EXPECT_NE(gomp->pids[0], sleep->pids[0]);
  const LibraryUse* libc = use_of(r, "libc.so");
  ASSERT_NE(libc, nullptr);
  EXPECT_GE(libc->pids.size(), 3u);  // sh, omp_loop and sleep
  EXPECT_TRUE(std::is_sorted(libc->pids.begin(), libc->pids.end()));
}

// Apart: two contracts whose libraries no one process held. Decided from the run's PIDs alone.
TEST(Processes, ContractsSeenInDifferentProcessesAreApart) {
  Composition c;
  for (auto [soname, contract] : {std::pair{"liba.so.1", "alib"}, {"libb.so.1", "blib"}, {"libc2.so.1", "clib"},
                                  {"libd.so.1", "dlib"}}) {
    Library l;
    l.soname = soname;
    l.path = std::string("/opt/") + soname;
    l.contract = contract;
    c.libraries.push_back(l);
  }
  RunResult r;
  auto use = [&](const std::string& path, std::vector<int> pids) {
    LibraryUse u;
    u.path = path;
    u.pids = pids;
    u.processes = static_cast<int>(pids.size());
    u.max_concurrent = 1;
    r.library_use.push_back(u);
  };
  use("/opt/liba.so.1", {10, 11});
  use("/opt/libb.so.1", {12});
  use("/opt/libc2.so.1", {11});  // shares process 11 with alib
  // dlib: never seen mapped (a manifest's library): it may meet anything
  compose_processes(c, r);
  EXPECT_EQ(c.apart, (std::set<std::pair<std::string, std::string>>{{"alib", "blib"}, {"blib", "clib"}}));
}

// A script runs Debian's zstd command (libzstd linked in, stripped) beside an OpenMP program:
// zstd is found in its child's program, and the two, in different processes, co-run but never
// nest.
TEST(Processes, ALibraryLinkedIntoAChildsProgramIsComposed) {
  if (!fs::exists("/usr/bin/zstd")) GTEST_SKIP() << "Debian's zstd package is not installed";
  Scratch s;
  std::string input = s.write("input.txt", [] {
    std::string t;
    for (long i = 0; i < 400000; ++i) t += std::to_string(i * 7919 % 100003) + "\n";
    return t;
  }());
  std::string script = s.write("both.sh",
                               "#!/bin/sh\n"
                               "zstd -q -15 -c < '" + input + "' > /dev/null &\n" +
                                   program("omp_loop") + " 300 20000 > /dev/null\n"
                                   "wait\n",
                               true);
  AnalyzeOptions o = batch_options({"/bin/sh", script});
  o.profile.probes = false;
  Analysis a = analyze(o);
  std::string text = to_text(a);
  const Composition& c = a.composition;
  ASSERT_TRUE(a.profile.default_runs.front().ok()) << text;
  const Library* z = nullptr;
  for (auto& l : c.libraries)
    if (l.contract == "zstd") z = &l;
  ASSERT_NE(z, nullptr) << text;
  EXPECT_EQ(z->found_by.rfind("child process, embedded: holds the names ", 0), 0u) << z->found_by;
  EXPECT_EQ(z->path, fs::canonical("/usr/bin/zstd").string());
  ASSERT_NE(c.find_contract("libgomp"), nullptr) << text;
  EXPECT_TRUE(c.apart.count({"libgomp", "zstd"})) << text;
  EXPECT_EQ(find_h(a.hypotheses, "nested_oversubscription:libgomp>zstd"), nullptr) << text;
  EXPECT_EQ(find_h(a.hypotheses, "nested_oversubscription:zstd>libgomp"), nullptr) << text;
  bool corun = std::any_of(a.hypotheses.begin(), a.hypotheses.end(), [](const Hypothesis& h) {
    return h.kind == "corun_oversubscription" && std::count(h.libraries.begin(), h.libraries.end(), "zstd") &&
           std::count(h.libraries.begin(), h.libraries.end(), "libgomp");
  });
  EXPECT_TRUE(corun) << text;
  EXPECT_NE(text.find("libgomp and zstd ran in different processes"), std::string::npos) << text;
}

// The launchers' options name a command's process count: placeholders in the arguments,
// variables in script text, never an unrelated option (xargs -n) or a fixed number.
TEST(Processes, ProcessControlsFromArgumentsAndScripts) {
  Diagnostics d;
  auto launchers = compose_detail::load_launchers({}, d);
  ASSERT_FALSE(launchers.empty()) << "tuner/rules/launchers.json";
  using compose_detail::find_process_controls;
  auto one = [&](const std::vector<std::string>& args, const std::string& script = {}) {
    std::vector<std::pair<std::string, std::string>> scripts;
    if (!script.empty()) scripts.emplace_back("batch.sh", script);
    return find_process_controls(args, scripts, launchers);
  };
  auto pcs = one({"/usr/bin/xargs", "-a", "list", "-n", "{N}", "-P", "{NPROC:-2}", "prog"});
  ASSERT_EQ(pcs.size(), 1u);  // -n is xargs' arguments per command, not a process count
  EXPECT_EQ(pcs[0].name, "NPROC");
  EXPECT_EQ(pcs[0].fallback, "2");
  EXPECT_EQ(pcs[0].option, "-P");
  EXPECT_EQ(pcs[0].tool, "xargs");
  EXPECT_EQ(pcs[0].where, "argv");
  pcs = one({"make", "-j{JOBS}", "all"});
  ASSERT_EQ(pcs.size(), 1u);
  EXPECT_EQ(pcs[0].name, "JOBS");
  EXPECT_EQ(pcs[0].fallback, "");
  pcs = one({"mpirun", "-np", "{RANKS:-4}", "./solver"});
  ASSERT_EQ(pcs.size(), 1u);
  EXPECT_EQ(pcs[0].name, "RANKS");
  pcs = one({"/bin/sh", "-c", "ls *.png | xargs -P $WORKERS -n 1 convert"});
  ASSERT_EQ(pcs.size(), 1u);
  EXPECT_EQ(pcs[0].name, "WORKERS");
  pcs = one({"awk", "{print}", "-P", "{X}"});  // awk is no launcher: X is only a candidate count
  ASSERT_EQ(pcs.size(), 1u);
  EXPECT_EQ(pcs[0].option, "");
  EXPECT_TRUE(one({"make", "-j{jobs}"}).empty());                      // not a placeholder we replace
  pcs = one({"bash", "batch.sh"}, "#!/bin/bash\n# xargs -P $COMMENTED\nfind . -name '*.png' -print0 |\n"
                                  "  xargs -0 \\\n    -P \"${NPROC:-4}\" -n 1 convert\nmake --jobs=${J-2}\n");
  ASSERT_EQ(pcs.size(), 2u);
  EXPECT_EQ(pcs[0].name, "NPROC");
  EXPECT_EQ(pcs[0].fallback, "4");
  EXPECT_EQ(pcs[0].where, "batch.sh:4");  // the line where the continued command starts
  EXPECT_EQ(pcs[1].name, "J");
  EXPECT_EQ(pcs[1].fallback, "2");
  std::vector<std::string> fixed;
  std::vector<std::pair<std::string, std::string>> scripts = {{"b.sh", "seq 1 8 | xargs -P 2 -n 1 prog\n"}};
  EXPECT_TRUE(find_process_controls({"sh", "b.sh"}, scripts, launchers, &fixed).empty());
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_EQ(fixed[0], "b.sh:1: xargs -P 2");
}

// Where no launcher names a count, a placeholder passed to a program that is no launcher, with a
// number or nothing as its default, is the candidate process count (the program's own pool);
// never one a launcher is given, one with a word as its default, or the shell's own ${...}.
TEST(Processes, PlaceholderPassedToAProgramIsTheCandidateCount) {
  Diagnostics d;
  auto launchers = compose_detail::load_launchers({}, d);
  ASSERT_FALSE(launchers.empty()) << "tuner/rules/launchers.json";
  auto one = [&](const std::vector<std::string>& args) {
    return compose_detail::find_process_controls(args, {}, launchers);
  };
  auto pcs = one({"/bin/sh", "-c", "exec /usr/bin/python3 fit.py 6000 {NJOBS:-2}"});
  ASSERT_EQ(pcs.size(), 1u);
  EXPECT_EQ(pcs[0].name, "NJOBS");
  EXPECT_EQ(pcs[0].fallback, "2");
  EXPECT_EQ(pcs[0].option, "");  // a candidate: the command does not say what it counts
  EXPECT_EQ(pcs[0].tool, "python3");
  EXPECT_EQ(pcs[0].where, "argv");
  pcs = one({"OMP_NUM_THREADS=1", "python3", "fit.py", "--jobs={N}", "{WORKERS:-4}"});
  ASSERT_EQ(pcs.size(), 2u);  // both, in the order written; the first is the hypotheses'
  EXPECT_EQ(pcs[0].name, "N");
  EXPECT_EQ(pcs[0].fallback, "");
  EXPECT_EQ(pcs[1].name, "WORKERS");
  // A launcher's count comes first and alone: SIZE is not looked at.
  pcs = one({"xargs", "-a", "list", "-P", "{NPROC:-2}", "prog", "{SIZE:-9}"});
  ASSERT_EQ(pcs.size(), 1u);
  EXPECT_EQ(pcs[0].name, "NPROC");
  EXPECT_EQ(pcs[0].option, "-P");
  EXPECT_TRUE(one({"xargs", "-P", "2", "-n", "{N:-1}", "prog"}).empty());  // given to a launcher
  EXPECT_TRUE(one({"python3", "fit.py", "{MODE:-fast}"}).empty());          // a word, not a count
  EXPECT_TRUE(one({"sh", "-c", "python3 fit.py ${JOBS:-2}"}).empty());      // the shell's variable
  EXPECT_TRUE(one({"python3", "fit.py", "{jobs}"}).empty());                // not our placeholder
}

// A script is composed from its #! interpreter (env looks it up on PATH) instead of refused;
// its process count is found in its text. A file that is neither ELF nor script is refused.
TEST(Processes, ScriptIsComposedFromItsInterpreter) {
  Scratch s;
  std::string script = s.write("run.sh", "#!/usr/bin/env sh\nseq 1 2 | xargs -n 1 -P \"${NPROC:-2}\" true\n", true);
  ComposeOptions o;
  o.binary = script;
  o.args = {script};
  o.contract_dirs = {corpus()};
  o.synthesize = false;
  Diagnostics d;
  Composition c = compose(o, d);
  EXPECT_FALSE(d.has_errors()) << d.items().front().message;
  EXPECT_EQ(c.application, script);
  EXPECT_EQ(fs::path(c.interpreter).filename(), "sh") << c.interpreter;
  EXPECT_FALSE(c.libraries.empty());  // the interpreter's (libc)
  ASSERT_EQ(c.process_controls.size(), 1u);
  EXPECT_EQ(c.process_controls[0].name, "NPROC");
  EXPECT_EQ(c.process_controls[0].where, script + ":2");
  bool noted = false;
  for (auto& x : d.items()) noted |= x.code == "script";
  EXPECT_TRUE(noted);

  // `sh run.sh`: the interpreter is the application; the script argument is read for counts.
  o.binary = "/bin/sh";
  o.args = {"/bin/sh", script};
  Diagnostics d2;
  c = compose(o, d2);
  EXPECT_FALSE(d2.has_errors());
  EXPECT_TRUE(c.interpreter.empty());
  ASSERT_EQ(c.process_controls.size(), 1u);
  EXPECT_EQ(c.process_controls[0].name, "NPROC");

  o.binary = s.write("data.txt", "not a program\n");
  o.args = {o.binary};
  Diagnostics d3;
  compose(o, d3);
  ASSERT_TRUE(d3.has_errors());
  EXPECT_EQ(d3.items().front().code, "bad-binary");
  EXPECT_NE(d3.items().front().message.find("no #! line"), std::string::npos) << d3.items().front().message;
  o.binary = s.write("lost.sh", "#!/nonexistent/shell\n", true);
  Diagnostics d4;
  compose(o, d4);
  ASSERT_TRUE(d4.has_errors());
  EXPECT_NE(d4.items().front().message.find("/nonexistent/shell"), std::string::npos) << d4.items().front().message;
}

// `bash batch.sh` running omp_loop four times, two at a time: libgomp found in the children,
// two processes at once, each with a team sized for the machine. The hypothesis names the
// script's NPROC and OMP's thread count; the probe (the machine shared between the processes)
// confirms it.
TEST(Processes, BatchOfOpenMpProcessesIsOversubscribed) {
  if (online_cpus() < 2) GTEST_SKIP() << "one CPU: a team of one per process is the default";
  Scratch s;
  std::string script = batch_script(s, program("omp_loop") + " 60 100000 @", 4);
  AnalyzeOptions o = batch_options({"/bin/bash", script});
  auto [a, load] = analyse_batch(o, "process_oversubscription:libgomp");
  std::string text = to_text(a);
  const Composition& c = a.composition;
  const Library* gomp = nullptr;
  for (auto& l : c.libraries)
    if (l.contract == "libgomp") gomp = &l;
  ASSERT_NE(gomp, nullptr) << text;
  EXPECT_EQ(gomp->found_by, "child process");
  EXPECT_EQ(c.processes.at("libgomp"), 2) << text;
  EXPECT_GT(c.process_threads.at("libgomp"), online_cpus()) << text;
  ASSERT_EQ(c.process_controls.size(), 1u) << text;
  EXPECT_EQ(c.process_controls[0].name, "NPROC");

  const Hypothesis* h = find_h(a.hypotheses, "process_oversubscription:libgomp");
  ASSERT_NE(h, nullptr) << text;
  std::string n = std::to_string(online_cpus());
  std::string per = std::to_string(std::max(1, online_cpus() / 2));
  EXPECT_EQ(h->constraint, "NPROC * OMP_NUM_THREADS <= ncores");
  EXPECT_NE(std::find(h->controls.begin(), h->controls.end(), "NPROC"), h->controls.end());
  EXPECT_NE(std::find(h->controls.begin(), h->controls.end(), "OMP_NUM_THREADS"), h->controls.end());
  EXPECT_TRUE(has_remedy(*h, {{"OMP_NUM_THREADS", per}})) << text;
  EXPECT_TRUE(has_remedy(*h, {{"NPROC", "1"}, {"OMP_NUM_THREADS", n}})) << text;
  EXPECT_EQ(h->probe, (std::map<std::string, std::string>{{"OMP_NUM_THREADS", per}}));
  ASSERT_FALSE(h->evidence.empty());
  EXPECT_EQ(h->evidence[0].signal, "lib_threads_max");
  EXPECT_TRUE(h->evidence[0].passed) << text;
  if (h->verdict != Verdict::Confirmed && load > 0.3)
    GTEST_SKIP() << "outside load up to " << load << " cores during the analyses: " << h->reason;
  EXPECT_EQ(h->verdict, Verdict::Confirmed) << "outside load up to " << load << " cores\n" << text;
}

// Twice as many jobs at once as CPUs, each a short OpenMP loop and then a long serial part:
// with more processes than CPUs only one process at a time removes the cause, and that probe
// empties the run queue but serialises the jobs' serial parts, so the run is about twice as
// slow. The oversubscription is real and is not what limits the run: refuted on the run time.
TEST(Processes, AProbeThatEmptiesTheRunQueueButRunsSlowerRefutes) {
  if (online_cpus() < 2) GTEST_SKIP() << "one CPU";
  Scratch s;
  const int n = online_cpus();
  const std::string omp = program("omp_loop");
  std::string script = s.write("serial_tail.sh",
                               "#!/bin/sh\n"
                               "seq 1 " + std::to_string(2 * n) + " | \\\n"
                               "  xargs -I @ -P \"${NPROC:-" + std::to_string(2 * n) + "}\" sh -c '" + omp +
                                   " 3 100000 @; OMP_NUM_THREADS=1 " + omp + " 500 100000 @'\n",
                               true);
  AnalyzeOptions o = batch_options({"/bin/sh", script});
  Analysis a;
  double load = outside_load([&] { a = analyze(o); });
  std::string text = to_text(a);
  const Hypothesis* h = find_h(a.hypotheses, "process_oversubscription:libgomp");
  ASSERT_NE(h, nullptr) << text;
  EXPECT_EQ(h->probe, (std::map<std::string, std::string>{{"NPROC", "1"}, {"OMP_NUM_THREADS", std::to_string(n)}}))
      << text;
  const Evidence* wall = nullptr;
  for (auto& e : h->evidence)
    if (e.signal == "probe.wall_ratio") wall = &e;
  ASSERT_NE(wall, nullptr) << text;
  // Work beside the test takes the CPUs that running the jobs at once would use.
  if (wall->passed && load > 0.3) GTEST_SKIP() << "outside load up to " << load << " cores: " << h->reason;
  EXPECT_FALSE(wall->passed) << text;
  EXPECT_LT(wall->value, 0.85) << text;
  EXPECT_EQ(h->verdict, Verdict::Refuted) << text;
}

// One process at a time (NPROC=1): libgomp never runs in two processes at once; no hypothesis.
TEST(Processes, OneProcessAtATimeDerivesNothing) {
  Scratch s;
  std::string script = batch_script(s, program("omp_loop") + " 200 20000 @", 3);
  AnalyzeOptions o = batch_options({"/bin/bash", script});
  o.profile.run.env_set = {{"NPROC", "1"}};
  o.profile.probes = false;
  Analysis a = analyze(o);
  EXPECT_EQ(a.composition.processes.at("libgomp"), 1) << to_text(a);
  EXPECT_EQ(find_h(a.hypotheses, "process_oversubscription:libgomp"), nullptr) << to_text(a);
}

// The same through Debian's ImageMagick: `convert` (libMagickCore, OpenMP inside) blurring a
// generated image, four jobs two at a time. The hypothesis is derived from the children and
// decided by its signals.
TEST(Processes, ImageMagickBatchThroughXargs) {
  if (!fs::exists(kConvert)) GTEST_SKIP() << kConvert << " missing: install imagemagick (scripts/setup.sh)";
  if (online_cpus() < 2) GTEST_SKIP() << "one CPU";
  Scratch s;
  // One job: ~0.3 s of CPU on the idle development VM. ImageMagick sizes a loop's team by its
  // rows: the whole thread limit (ncpus) from 8192 rows up, one thread below 128, so a tall image.
  std::string script = batch_script(s, std::string(kConvert) + " -size 150x8400 gradient: -gaussian-blur 0x2 null:", 4);
  AnalyzeOptions o = batch_options({"/bin/bash", script});
  auto [a, load] = analyse_batch(o, "process_oversubscription:libgomp");
  std::string text = to_text(a);
  ASSERT_TRUE(a.profile.default_runs.front().ok()) << text;
  EXPECT_EQ(a.composition.processes.at("libgomp"), 2) << text;
  const Hypothesis* h = find_h(a.hypotheses, "process_oversubscription:libgomp");
  ASSERT_NE(h, nullptr) << text;
  EXPECT_EQ(h->constraint, "NPROC * OMP_NUM_THREADS <= ncores");
  ASSERT_EQ(h->evidence.size(), 3u) << text;
  EXPECT_TRUE(h->evidence[0].passed) << text;  // lib_threads_max > ncpus
  std::cout << "ImageMagick: " << to_string(h->verdict) << " (" << h->reason << "), outside load " << load << "\n";
  if (h->verdict != Verdict::Confirmed && load > 0.3)
    GTEST_SKIP() << "outside load up to " << load << " cores during the analyses: " << h->reason;
  EXPECT_EQ(h->verdict, Verdict::Confirmed) << text;
}

// A composition of corpus contracts by name with what a first run would have counted: `procs`
// processes at once for `lib`, and a process count `control` the command exposes ("" none).
Composition counted(const std::vector<std::string>& libs, const std::vector<std::pair<std::string, std::string>>& co_run,
                    const std::map<std::string, int>& procs, const std::string& control) {
  NamedComposition req;
  req.libraries = libs;
  req.co_run = co_run;
  req.contract_dirs = {corpus()};
  Diagnostics d;
  Composition c = compose_named(req, d);
  EXPECT_FALSE(d.has_errors()) << d.str();
  for (auto& [lib, n] : procs) {
    c.processes[lib] = n;
    c.process_threads[lib] = 2 * n;
  }
  if (!control.empty()) c.process_controls.push_back({control, "2", "", "python3", "argv"});
  return c;
}

// The machine facts the hypotheses are written for (SYSPILOT_NCPUS), restored after.
struct Cpus {
  explicit Cpus(int n) { ::setenv("SYSPILOT_NCPUS", std::to_string(n).c_str(), 1); }
  ~Cpus() { ::unsetenv("SYSPILOT_NCPUS"); }
};

// A probe tests whether a cause is the cause only where it removes it: with more processes
// than CPUs, one thread each still oversubscribes, and the probe is one process when the
// command exposes the count; with the count at most the CPUs, the share per process is.
TEST(Processes, TheProbeIsTheAlternativeThatRemovesTheCause) {
  auto probe = [](int ncpus, int procs, const std::string& control) {
    Cpus cpus(ncpus);
    Composition c = counted({"openblas_pthread"}, {}, {{"openblas_pthread", procs}}, control);
    Diagnostics d;
    auto hs = hypothesize(c, d);
    const Hypothesis* h = find_h(hs, "process_oversubscription:openblas_pthread");
    EXPECT_NE(h, nullptr) << d.str();
    return h ? h->probe : Config{};
  };
  using C = Config;
  EXPECT_EQ(probe(2, 4, "NJOBS"), (C{{"NJOBS", "1"}, {"OPENBLAS_NUM_THREADS", "2"}}));
  EXPECT_EQ(probe(2, 2, "NJOBS"), (C{{"OPENBLAS_NUM_THREADS", "1"}}));
  EXPECT_EQ(probe(16, 4, "NJOBS"), (C{{"OPENBLAS_NUM_THREADS", "4"}}));
  EXPECT_EQ(probe(16, 32, "NJOBS"), (C{{"NJOBS", "1"}, {"OPENBLAS_NUM_THREADS", "16"}}));
  // No count to lower: nothing removes the cause, and the share is still the probe.
  EXPECT_EQ(probe(2, 4, ""), (C{{"OPENBLAS_NUM_THREADS", "1"}}));
}

// A co-running side that runs in several processes brings each process' threads: the command's
// process count joins the hypothesis, first remedy one process with the cores split. A side
// in one process does not make the count a party.
TEST(Processes, ACoRunSideInSeveralProcessesBringsTheProcessCount) {
  Cpus cpus(2);
  auto corun = [](int gomp_procs, const std::string& control) {
    Composition c = counted({"libgomp", "openblas_pthread"}, {{"libgomp", "openblas_pthread"}},
                            {{"libgomp", gomp_procs}, {"openblas_pthread", 1}}, control);
    Diagnostics d;
    auto hs = hypothesize(c, d);
    for (auto& h : hs)
      if (h.kind == "corun_oversubscription") return h;
    ADD_FAILURE() << "no co-run hypothesis";
    return Hypothesis{};
  };
  Hypothesis several = corun(3, "NP");
  EXPECT_NE(std::find(several.controls.begin(), several.controls.end(), "NP"), several.controls.end());
  ASSERT_FALSE(several.remedies.empty());
  EXPECT_EQ(several.remedies[0], (Config{{"NP", "1"}, {"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}}));
  EXPECT_TRUE(has_remedy(several, {{"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}}));
  for (auto& one : {corun(1, "NP"), corun(3, "")}) {
    EXPECT_EQ(std::find(one.controls.begin(), one.controls.end(), "NP"), one.controls.end());
    for (auto& r : one.remedies) EXPECT_EQ(r.count("NP"), 0u) << to_string(r);
    ASSERT_FALSE(one.remedies.empty());
    EXPECT_EQ(one.remedies[0], (Config{{"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}}));
  }
}

// Both co-running sides in the same workers (OpenMP and OpenBLAS in each of three processes):
// fewer processes scale both alike, so the count is no control of the co-run; it stays the
// process oversubscription's, one per side.
TEST(Processes, CoRunSidesInTheSameWorkersLeaveTheCountToProcessOversubscription) {
  Cpus cpus(2);
  Composition c = counted({"libgomp", "openblas_pthread"}, {{"libgomp", "openblas_pthread"}},
                          {{"libgomp", 3}, {"openblas_pthread", 3}}, "NP");
  Diagnostics d;
  auto hs = hypothesize(c, d);
  int coruns = 0, process_rules = 0;
  for (auto& h : hs) {
    const bool names_count = std::find(h.controls.begin(), h.controls.end(), "NP") != h.controls.end();
    if (h.kind == "corun_oversubscription") {
      ++coruns;
      EXPECT_FALSE(names_count) << h.id;
      for (auto& r : h.remedies) EXPECT_EQ(r.count("NP"), 0u) << h.id << ": " << to_string(r);
      ASSERT_FALSE(h.remedies.empty());
      EXPECT_EQ(h.remedies[0], (Config{{"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}}));
    }
    if (h.kind == "process_oversubscription") {
      ++process_rules;
      EXPECT_TRUE(names_count) << h.id;
    }
  }
  EXPECT_EQ(coruns, 1) << d.str();
  EXPECT_EQ(process_rules, 2) << d.str();
}

#ifdef SYSPILOT_CLI
// `syspilot analyze -- ./batch.sh` (a script, not bash script.sh) is analysed, not refused.
TEST(Processes, CliAnalysesAScript) {
  Scratch s;
  std::string script = batch_script(s, program("omp_loop") + " 200 20000 @", 2);
  std::string cmd = std::string(SYSPILOT_CLI) + " analyze --json --no-synth --no-probe --no-store --contracts " + corpus() +
                    " -- " + script + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t k; (k = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, k);
  int st = ::pclose(p);
  int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  ASSERT_TRUE(rc == 0 || rc == 1) << rc << out;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(fs::path(j["interpreter"].get<std::string>()).filename(), "sh");
  ASSERT_EQ(j["process_controls"].size(), 1u);
  EXPECT_EQ(j["process_controls"][0]["name"], "NPROC");
  EXPECT_EQ(j["processes"]["libgomp"]["max_concurrent"], 2) << out;
  bool derived = false;
  for (auto& h : j["hypotheses"]) derived |= h["id"] == "process_oversubscription:libgomp";
  EXPECT_TRUE(derived) << out;
}
#endif

