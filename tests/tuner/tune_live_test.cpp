// Live tuning of real programs against Debian's libraries: nested OpenBLAS in OpenMP, spin
// interference, TBB beside OpenMP; the preload shim; crashes, hangs, and kill -9 then resume.
// The guides are what the hypothesis rules state for these patterns (kind, controls,
// constraint, remedies); the strategy sees nothing else of the programs.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <thread>

#include "tests/tuner/analyze_support.h"
#include "tests/tuner/tune_cli_support.h"
#include "tuner/analyze.h"
#include "tuner/measure.h"
#include "tuner/run.h"
#include "tuner/session.h"
#include "tuner/space.h"

using namespace syspilot::tuner;

namespace {

std::string program(const std::string& name) { return std::string(SYSPILOT_TEST_PROGRAMS) + "/" + name; }

Param param(const std::string& n, std::vector<std::string> values, std::string def, bool numeric = true) {
  Param p;
  p.name = n;
  p.values = std::move(values);
  p.default_value = std::move(def);
  p.numeric = numeric;
  return p;
}

std::string ncpus() { return std::to_string(MachineFacts::detect().ncpus); }

std::vector<std::string> thread_domain() {
  std::vector<std::string> v;
  for (int i = 1; i <= MachineFacts::detect().ncpus; ++i) v.push_back(std::to_string(i));
  return v;
}

struct Outcome {
  TuneResult result;
  Verification reported;  // what `syspilot tune` prints: 5 interleaved pairs after the search
  Verification check;     // a second, independent fresh measurement: 7 interleaved pairs
};

// Tunes within 12 runs, reports as the CLI does, then re-measures default against the best.
Outcome tune_and_check(const Space& space, const std::vector<Guide>& guides, const std::vector<std::string>& argv,
                       const std::map<std::string, std::string>& user_env = {}) {
  StrategyContext ctx;
  ctx.guides = guides;
  ctx.machine = MachineFacts::detect();
  auto st = make_strategy("syspilot", space, ctx);
  ObjectiveSpec spec;
  spec.argv = argv;
  spec.timeout_s = 60;
  spec.env = user_env;
  LiveObjective obj(space, spec);
  TuneOptions o;
  o.budget = 12;
  o.progress = [](const std::string& l) { std::fprintf(stderr, "  %s\n", l.c_str()); };
  Outcome out;
  out.result = tune(*st, obj, o);
  if (out.result.best >= 0) {
    const Config& best = out.result.trials[out.result.best].config;
    out.reported = verify(obj, {}, best, 5);
    out.check = verify(obj, {}, best, 7, false);
  }
  std::fprintf(stderr, "  search %.2fx, reported %.2fx +-%.0f%%, re-measured %.2fx +-%.0f%%\n", out.result.speedup,
               out.reported.speedup, out.reported.spread * 100, out.check.speedup, out.check.spread * 100);
  return out;
}

void expect_found_and_reproduced(const Outcome& o) {
  ASSERT_GE(o.result.best, 0);
  EXPECT_LE(o.result.runs, 12);
  ASSERT_TRUE(o.reported.ok) << o.reported.failure;
  ASSERT_TRUE(o.check.ok) << o.check.failure;
  // Found within the budget: the search's best is at least 1.3x faster than the default in a
  // fresh interleaved measurement (median of 7 pairs).
  EXPECT_GE(o.check.speedup, 1.3) << to_string(o.result.trials[o.result.best].config);
  // What the tuner reports is reproduced within the stated spreads, or within a third. The
  // stated spread is that of back-to-back pairs; between two rounds of pairs a few seconds
  // apart the nested program's default drifted by more (on a clean CI machine: 2.29x +-8%
  // reported, 1.72x +-12% re-measured right after; 2.32x +-2% against 1.65x +-27% idle), which
  // the spread of one round cannot show. A report off by more than a third still fails.
  double allowed = std::max(o.reported.spread + o.check.spread, 1.0 / 3);
  EXPECT_GE(o.check.speedup, o.reported.speedup * (1 - allowed))
      << "reported " << o.reported.speedup << " re-measured " << o.check.speedup;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// A session of 9 grid trials over K resumed after a kill: every stored trial is distinct, and
// none of the runs logged from `from` on (after the resume) measured a configuration in `done`
// (finished before the kill). The log holds one K (or "default") per run.
void expect_resumed_without_repeats(const std::vector<Trial>& all, const std::set<Config>& done,
                                    const std::vector<std::string>& lines, size_t from) {
  EXPECT_EQ(all.size(), 9u);
  std::set<Config> distinct;
  for (const auto& t : all) distinct.insert(t.config);
  EXPECT_EQ(distinct.size(), all.size()) << "a trial was repeated";
  for (size_t i = from; i < lines.size(); ++i) {
    Config c;
    if (lines[i] != "default") c["K"] = lines[i];
    EXPECT_FALSE(done.count(c)) << "re-ran " << lines[i] << " after the resume";
  }
}

}  // namespace

TEST(TuneLive, NestedOpenBlasInOpenMp) {
  if (MachineFacts::detect().ncpus < 2) GTEST_SKIP() << "needs 2 CPUs";
  Space s;
  s.params = {param("OMP_NUM_THREADS", thread_domain(), ncpus()), param("OPENBLAS_NUM_THREADS", thread_domain(), ncpus())};
  Guide g;
  g.id = "nested_oversubscription:libgomp>openblas";
  g.kind = "nested_oversubscription";
  g.controls = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"};
  g.constraint = "OMP_NUM_THREADS * OPENBLAS_NUM_THREADS <= ncores";
  s.constraints = {g.constraint};
  Outcome o = tune_and_check(s, {g}, {program("omp_blas")});
  expect_found_and_reproduced(o);
  // Every configuration the search proposed met the hypothesis' constraint (the default, the
  // reference, is the only one that may break it).
  for (const auto& t : o.result.trials) {
    if (!t.config.empty()) {
      EXPECT_TRUE(s.admits(t.config, MachineFacts::detect())) << to_string(t.config);
    }
  }
}

TEST(TuneLive, SpinInterferenceBesidePthreadPool) {
  if (MachineFacts::detect().ncpus < 2) GTEST_SKIP() << "needs 2 CPUs";
  Space s;
  s.params = {param("OMP_WAIT_POLICY", {"active", "passive"}, "active", false),
              param("GOMP_SPINCOUNT", {"0", "1000", "300000", "30000000"}, "300000")};
  Guide g;
  g.id = "spin_interference:libgomp|app-threads";
  g.kind = "spin_interference";
  g.controls = {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"};
  g.remedies = {{{"OMP_WAIT_POLICY", "passive"}}, {{"GOMP_SPINCOUNT", "0"}}};
  // The user exported OMP_WAIT_POLICY=active (as the analysis test does). One pool thread
  // beside the two-thread OpenMP team fills both CPUs, and the OpenMP thread spinning between
  // regions is a third runnable thread: about 1.5x on 2 idle CPUs. (With libgomp's default
  // bounded spin, or a larger pool, the effect on an idle machine is 1.15-1.3x: too close to
  // the bound to assert.)
  Outcome o = tune_and_check(s, {g}, {program("spin_pool"), "200", "1"}, {{"OMP_WAIT_POLICY", "active"}});
  expect_found_and_reproduced(o);
}

// A TBB parallel_for whose body runs a fine-grained OpenMP loop: every TBB worker starts its
// own OpenMP team sized to the machine, and 2 x ncpus threads meet at OpenMP barriers on ncpus
// cores (3-13x on 2 idle CPUs against one OpenMP thread, see docs/tuner.md). Nothing is written
// by hand here: the space and the guides are what the analysis of the binary gives, as
// `syspilot tune -- tbb_nested` uses them.
TEST(TuneLive, TbbBesideOpenMp) {
  if (MachineFacts::detect().ncpus < 2) GTEST_SKIP() << "needs 2 CPUs";
  std::vector<std::string> argv = {program("tbb_nested"), "128"};
  AnalyzeOptions ao;
  ao.compose.binary = argv[0];
  ao.compose.synthesize = false;  // libgomp and onetbb have corpus contracts; nothing to draft
  ao.profile.run.argv = argv;
  ao.profile.run.timeout_s = 60;
  ao.profile.repeats = 2;
  Analysis an = analyze(ao);
  std::vector<Guide> gs = guides(an.hypotheses);
  // Without source the analysis cannot tell nesting from co-running: either diagnosis of the
  // libgomp/onetbb pair (or libgomp's spinning) names the OpenMP controls that resolve it.
  const Guide* found = nullptr;
  for (const auto& g : gs)
    if ((g.kind == "nested_oversubscription" || g.kind == "spin_interference" || g.kind == "corun_oversubscription") &&
        g.id.find("libgomp") != std::string::npos && g.id.find("onetbb") != std::string::npos)
      found = &g;
  ASSERT_NE(found, nullptr) << "the analysis confirmed no contention between libgomp and onetbb";
  EXPECT_TRUE(std::any_of(found->controls.begin(), found->controls.end(),
                          [](const std::string& c) { return c.rfind("OMP_", 0) == 0 || c.rfind("GOMP_", 0) == 0; }))
      << found->id;
  syspilot::Diagnostics diags;
  Space s = build_space(contracts_of(an.composition), gs, SpaceScope::Hypotheses, {}, MachineFacts::detect(), diags);
  ASSERT_FALSE(s.params.empty()) << space_to_json(s);
  Outcome o = tune_and_check(s, gs, argv);
  expect_found_and_reproduced(o);
}

// An API control reaches the library through the preload shim: omp_set_num_threads(1) called
// before main leaves the OpenMP loop without its second thread. The run lasts ~0.1 s so that
// the 5 ms sampler sees the team (at 16 iterations it lasted 5 ms and sometimes saw 1 thread).
TEST(TuneLive, ShimAppliesApiControl) {
  if (MachineFacts::detect().ncpus < 2) GTEST_SKIP() << "needs 2 CPUs";
  std::string shim = shim_path();
  ASSERT_FALSE(shim.empty()) << "libsyspilot_shim.so not found beside this test; set SYSPILOT_SHIM";
  Space s;
  Param setter = param("omp_set_num_threads", thread_domain(), ncpus());
  setter.kind = Param::Kind::Api;
  s.params = {setter};
  auto threads = [&](const Config& c) {
    RunSpec rs;
    rs.argv = {program("omp_blas"), "1500"};
    rs.env_set = environment_for(s, c, shim, {});
    rs.env_set["OPENBLAS_NUM_THREADS"] = "1";
    rs.env_set["OMP_NUM_THREADS"] = ncpus();
    rs.sample_interval_s = 0.005;
    RunResult r = run(rs);
    EXPECT_TRUE(r.ok()) << r.failure << r.stderr_text;
    EXPECT_EQ(r.stderr_text.find("syspilot shim"), std::string::npos) << r.stderr_text;
    return r.max_threads;
  };
  int by_default = threads({});
  int with_setter = threads({{"omp_set_num_threads", "1"}});
  EXPECT_GT(by_default, with_setter);
  EXPECT_EQ(with_setter, 1);

  // A setter the program does not define is reported, and the run goes on.
  Param missing = param("no_such_setter", {"1"}, "");
  missing.kind = Param::Kind::Api;
  s.params.push_back(missing);
  RunSpec rs;
  rs.argv = {program("omp_blas"), "4", "32"};
  rs.env_set = environment_for(s, {{"no_such_setter", "1"}}, shim, {});
  RunResult r = run(rs);
  EXPECT_TRUE(r.ok()) << r.failure;
  EXPECT_NE(r.stderr_text.find("no_such_setter is not defined"), std::string::npos);
}

// A program that crashes under some configurations and hangs under another: each is a failed
// trial with its reason, and the session goes on to find the best working configuration.
TEST(TuneLive, CrashAndHangAreFailedTrials) {
  Space s;
  s.params = {param("MODE", {"crash", "hang", "slow", "fast", "exit3"}, "slow", false)};
  ObjectiveSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "case \"$MODE\" in crash) kill -SEGV $$;; hang) sleep 30;; fast) sleep 0.05;; exit3) exit 3;; "
               "*) sleep 0.3;; esac"};
  spec.timeout_s = 1;
  LiveObjective obj(s, spec);
  auto st = make_strategy("grid", s, {});
  TuneOptions o;
  o.budget = 12;
  auto t0 = std::chrono::steady_clock::now();
  TuneResult r = tune(*st, obj, o);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 15);
  std::map<std::string, std::string> failures;
  for (const auto& t : r.trials)
    if (!t.m.ok) failures[t.config.at("MODE")] = t.m.failure;
  ASSERT_EQ(failures.size(), 3u);
  EXPECT_NE(failures["crash"].find("SEGV"), std::string::npos) << failures["crash"];
  EXPECT_NE(failures["hang"].find("timeout"), std::string::npos) << failures["hang"];
  EXPECT_NE(failures["exit3"].find("3"), std::string::npos) << failures["exit3"];
  ASSERT_GE(r.best, 0);
  EXPECT_EQ(r.trials[r.best].config.at("MODE"), "fast");
  EXPECT_GT(r.speedup, 2.0);
}

// A tuning process killed with SIGKILL mid-session resumes from the store: finished trials are
// not measured again and the session completes its budget.
TEST(TuneLive, KillNineThenResumeRepeatsNoTrial) {
  auto dir = std::filesystem::temp_directory_path() / ("syspilot-resume-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string db = (dir / "t.db").string();
  std::string log = (dir / "runs.log").string();
  Space s;
  s.params = {param("K", {"1", "2", "3", "4", "5", "6", "7", "8"}, "", true)};
  ObjectiveSpec spec;
  // Every run appends its configuration to a log: the proof of what was run, and when.
  spec.argv = {"/bin/sh", "-c", "echo \"${K:-default}\" >> " + log + "; sleep 0.2"};
  std::int64_t id;
  {
    SessionStore st(db);
    SessionInfo i;
    i.argv = spec.argv;
    i.strategy = "grid";
    i.budget = 9;
    i.space_json = space_to_json(s);
    id = st.create(i);
  }
  auto session = [&](std::vector<Trial> resumed) {
    SessionStore st(db);
    LiveObjective obj(s, spec);
    auto strategy = make_strategy("grid", s, {});
    TuneOptions o;
    o.budget = 9;
    o.max_repeats = 1;
    o.resumed = std::move(resumed);
    o.on_trial = [&](const Trial& t) { st.add_trial(id, t); };
    return tune(*strategy, obj, o);
  };
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    session({});
    _exit(0);
  }
  // Kill it once three trials are stored.
  for (int i = 0; i < 300; ++i) {
    if (SessionStore(db).trials(id).size() >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  auto stored = SessionStore(db).trials(id);
  ASSERT_GE(stored.size(), 3u);
  ASSERT_LT(stored.size(), 9u);
  std::set<Config> done;
  for (const auto& t : stored) done.insert(t.config);

  TuneResult r = session(stored);
  EXPECT_EQ(r.runs, 9);
  auto all = SessionStore(db).trials(id);
  auto lines = read_lines(log);
  expect_resumed_without_repeats(all, done, lines, lines.size() - (all.size() - stored.size()));
  std::filesystem::remove_all(dir);
}

#ifdef SYSPILOT_CLI
namespace {

using testing_support::Scratch;
using testing_support::tune_cli;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> v;
  std::string l;
  for (char c : text) {
    if (c == '\n') {
      v.push_back(l);
      l.clear();
    } else {
      l += c;
    }
  }
  if (!l.empty()) v.push_back(l);
  return v;
}

}  // namespace

// --metric REGEX with --maximize: the number the application prints is the objective; --export
// leaves nothing on stdout but the export lines; progress goes to stderr.
TEST(TuneCli, MetricMaximizeExportAndProgressOnStderr) {
  Scratch s("cli-metric");
  RunResult r = tune_cli({"--db", s / "t.db", "--budget", "10", "--max-repeats", "1", "--strategy", "grid",
                          "--add", "X=1,2,3,4", "--metric", "rate ([0-9.]+)", "--maximize", "--export", "--",
                          "/bin/sh", "-c", "echo \"rate $(( ${X:-1} * 10 ))\""});
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  EXPECT_EQ(lines_of(r.stdout_text), std::vector<std::string>{"export X=4"}) << r.stdout_text;
  // Trials done, the budget, the best so far and its speedup, on stderr.
  EXPECT_NE(r.stderr_text.find("runs 5/10"), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("X=4  40 (x1)  best 40 (4x)"), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("speedup 4.00x"), std::string::npos) << r.stderr_text;

  // Without --maximize the smallest rate wins: the default's own value (X=1 is the default).
  RunResult m = tune_cli({"--db", s / "t.db", "--budget", "10", "--max-repeats", "1", "--strategy", "grid",
                          "--add", "X=1,2,3,4", "--metric", "rate ([0-9.]+)", "--export", "--", "/bin/sh", "-c",
                          "echo \"rate $(( ${X:-2} * 10 ))\""});
  ASSERT_TRUE(m.ok()) << m.failure << m.stderr_text;
  EXPECT_EQ(lines_of(m.stdout_text), std::vector<std::string>{"export X=1"}) << m.stdout_text;

  // A default whose metric is 0 has no ratio to the best: its run fails with that reason, and
  // the speedup is said to be n/a, not printed as 0x.
  RunResult zero = tune_cli({"--db", s / "t.db", "--budget", "6", "--max-repeats", "1", "--strategy", "grid",
                             "--add", "X=1,2", "--metric", "rate ([0-9.]+)", "--maximize", "--", "/bin/sh", "-c",
                             "echo \"rate $(( ${X:-0} * 10 ))\""});
  ASSERT_TRUE(zero.ok()) << zero.failure << zero.stderr_text;
  EXPECT_NE(zero.stdout_text.find("X=2"), std::string::npos) << zero.stdout_text;
  EXPECT_NE(zero.stdout_text.find("# speedup n/a"), std::string::npos) << zero.stdout_text;

  // A metric the output does not contain fails each trial with the reason, and no export is made.
  RunResult miss = tune_cli({"--db", s / "t.db", "--budget", "4", "--max-repeats", "1", "--add", "X=1,2",
                             "--metric", "rate ([0-9.]+)", "--export", "--", "/bin/echo", "nothing"});
  EXPECT_EQ(lines_of(miss.stdout_text), std::vector<std::string>{}) << miss.stdout_text;
  EXPECT_NE(miss.stderr_text.find("rate"), std::string::npos) << miss.stderr_text;
}

// The metric is read line by line: a 60 KB token before it neither crashes tune (std::regex
// recursed once per character) nor hides it; a match that is not a whole number is none, and
// a metric that is not a positive number fails its run with that reason.
TEST(TuneCli, MetricsAreReadLineByLineAndMustBePositive) {
  EXPECT_EQ(read_metric("score: " + std::string(60000, '7') + "\nscore: 2.5\n", R"(score: (\S+))"), 2.5);
  EXPECT_EQ(read_metric(std::string(100000, 'x') + " rate 4\n", R"(rate ([0-9.]+))"), std::nullopt)
      << "a line is matched on its first 4 KiB";
  EXPECT_EQ(read_metric("score: 0.15abc\n", R"(score: (\S+))"), std::nullopt);
  EXPECT_EQ(read_metric("score: 0.15 \n", R"(score: (\S+))"), 0.15);
  Scratch s("cli-metric-lines");
  for (std::string value : {"-5", "0", "1e-320"}) {
    RunResult r = tune_cli({"--db", s / "t.db", "--budget", "4", "--max-repeats", "1", "--strategy", "grid", "--add",
                            "X=1,2", "--metric", "score: (\\S+)", "--export", "--", "/bin/sh", "-c",
                            "python3 -c \"print('score: ' + '7' * 60000)\" >/dev/null; echo \"score: " + value + "\""});
    EXPECT_NE(r.stderr_text.find("must be a positive number"), std::string::npos) << value << ": " << r.stderr_text;
    EXPECT_EQ(lines_of(r.stdout_text), std::vector<std::string>{}) << value << ": " << r.stdout_text;
  }
  RunResult big = tune_cli({"--db", s / "t.db", "--budget", "4", "--max-repeats", "1", "--strategy", "grid", "--add",
                            "X=1,2", "--metric", "score: (\\S+)", "--", "/bin/sh", "-c",
                            "python3 -c \"print('score: ' + '7' * 60000)\"; echo \"score: ${X:-3}\""});
  EXPECT_TRUE(big.ok()) << big.failure << big.stderr_text.substr(0, 2000);
}

// A metric printed after 2.7 MB of output (past the 1 MiB kept of stdout) is read from the
// output's last lines; where none is printed, the failure says the output was cut and by how much.
TEST(TuneCli, AMetricAfterALongOutputIsReadAndAMissingOneSaysTheOutputWasCut) {
  Scratch s("cli-metric-long");
  const std::vector<std::string> args = {"--budget", "4", "--max-repeats", "1", "--strategy", "grid", "--verify", "0",
                                         "--minimise-runs", "0", "--add", "X=1,2", "--metric", "score: (\\S+)"};
  auto tune_of = [&](const std::string& db, const std::string& command) {
    std::vector<std::string> a = {"--db", s / db};
    a.insert(a.end(), args.begin(), args.end());
    a.insert(a.end(), {"--", "/bin/sh", "-c", command});
    return tune_cli(a);
  };
  RunResult read = tune_of("read.db", "seq 1 400000; echo \"score: ${X:-3}\"");
  EXPECT_TRUE(read.ok()) << read.failure << read.stderr_text.substr(0, 2000);
  EXPECT_EQ(read.stderr_text.find("no metric"), std::string::npos) << read.stderr_text;
  EXPECT_NE(read.stdout_text.find("X=1"), std::string::npos) << read.stdout_text;
  SessionStore st(s / "read.db");
  for (const auto& t : st.trials(1)) EXPECT_TRUE(t.m.ok) << t.m.failure;

  RunResult missing = tune_of("missing.db", "seq 1 400000");
  EXPECT_EQ(missing.exit_code, 1) << missing.stderr_text;
  EXPECT_TRUE(std::regex_search(missing.stderr_text,
                                std::regex("no metric: /score: \\(\\\\S\\+\\)/ matched no number in the output "
                                           "\\(the output was cut: [0-9]+ bytes in the middle of stdout were not kept\\)")))
      << missing.stderr_text.substr(0, 3000);
}

// --score-cmd: a command scores each run from its output file; the smallest score wins.
TEST(TuneCli, ScoreCommandScoresEachRun) {
  Scratch s("cli-score");
  RunResult r = tune_cli({"--db", s / "t.db", "--budget", "10", "--max-repeats", "1", "--strategy", "grid",
                          "--add", "X=1,2,3,4", "--score-cmd",
                          "v=$(cat \"$SYSPILOT_OUTPUT\"); echo $(( (v - 30) * (v - 30) + 1 ))", "--", "/bin/sh",
                          "-c", "echo $(( ${X:-1} * 10 ))"});
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  EXPECT_EQ(lines_of(r.stdout_text).at(0), "X=3") << r.stdout_text;
  // Default scores (10-30)^2+1 = 401, the best 1.
  EXPECT_NE(r.stdout_text.find("speedup 401.00x"), std::string::npos) << r.stdout_text;
}

// --compare runs strategies on one space and budget and prints them side by side; --report
// writes the Markdown report with its SVG plot beside it.
TEST(TuneCli, CompareSideBySideWithReport) {
  Scratch s("cli-compare");
  RunResult r = tune_cli({"--db", s / "t.db", "--budget", "6", "--max-repeats", "1", "--add", "X=1,2,3,4",
                          "--metric", "rate ([0-9.]+)", "--maximize", "--compare", "grid,random", "--report",
                          s / "r.md", "--", "/bin/sh", "-c", "echo \"rate $(( ${X:-1} * 10 ))\""});
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  auto out = lines_of(r.stdout_text);
  ASSERT_GE(out.size(), 3u) << r.stdout_text;
  EXPECT_EQ(out[0].rfind("strategy", 0), 0u) << r.stdout_text;
  EXPECT_EQ(out[1].rfind("grid", 0), 0u) << r.stdout_text;
  EXPECT_EQ(out[2].rfind("random", 0), 0u) << r.stdout_text;
  ASSERT_TRUE(std::filesystem::exists(s / "r.md"));
  ASSERT_TRUE(std::filesystem::exists(s / "r.svg"));
  std::ifstream md(s / "r.md"), svg(s / "r.svg");
  std::string mds((std::istreambuf_iterator<char>(md)), {}), svgs((std::istreambuf_iterator<char>(svg)), {});
  EXPECT_NE(mds.find("r.svg"), std::string::npos);
  EXPECT_NE(mds.find("grid"), std::string::npos);
  EXPECT_NE(mds.find("random"), std::string::npos);
  EXPECT_NE(svgs.find("<svg"), std::string::npos);
}

// --space all searches every control of every composed contract (libgomp and onetbb here), not
// only those of confirmed hypotheses; --pin fixes a control in every trial, --drop removes one.
TEST(TuneCli, SpaceAllWithPinAndDrop) {
  Scratch s("cli-space");
  RunResult r = tune_cli({"--db", s / "t.db", "--space", "all", "--budget", "4", "--max-repeats", "1", "--verify",
                          "0", "--strategy", "random", "--pin", "OMP_DYNAMIC=true", "--drop", "GOMP_SPINCOUNT", "--",
                          program("tbb_phases"), "2", "1000"});
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.stderr_text, m, std::regex("tune: ([0-9]+) controls"))) << r.stderr_text;
  EXPECT_GE(std::stoi(m[1]), 6) << r.stderr_text;  // libgomp's env controls alone are more
  SessionStore st(s / "t.db");
  auto info = st.get(1);
  ASSERT_TRUE(info);
  Space space = space_from_json(info->space_json);
  EXPECT_EQ(space.find("GOMP_SPINCOUNT"), nullptr);
  EXPECT_NE(space.find("OMP_WAIT_POLICY"), nullptr);
  auto trials = st.trials(1);
  ASSERT_GE(trials.size(), 2u);
  for (const auto& t : trials) {
    if (t.config.empty()) continue;  // the default, the reference
    EXPECT_EQ(t.config.count("GOMP_SPINCOUNT"), 0u) << to_string(t.config);
    ASSERT_EQ(t.config.count("OMP_DYNAMIC"), 1u) << to_string(t.config);
    EXPECT_EQ(t.config.at("OMP_DYNAMIC"), "true");
  }
}

// The analysis' runs are syspilot's first trials, charged to the budget: its default runs the
// reference, each probe inside the space a trial (stored with the session like any other).
TEST(TuneCli, AnalysisRunsAreTheFirstTrials) {
  Scratch s("cli-analysis-trials");
  RunResult r = tune_cli({"--db", s / "t.db", "--budget", "8", "--verify", "0", "--", program("omp_blas"), "200"});
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.stderr_text, m, std::regex("the analysis' ([0-9]+) runs count as ([0-9]+) trials")))
      << r.stderr_text;
  int runs = std::stoi(m[1]), trials = std::stoi(m[2]);
  EXPECT_GE(trials, 2) << r.stderr_text;  // the reference and at least the nested probe
  SessionStore st(s / "t.db");
  auto stored = st.trials(1);
  ASSERT_GE(stored.size(), static_cast<size_t>(trials));
  EXPECT_TRUE(stored[0].config.empty());
  EXPECT_EQ(stored[0].strategy, "reference");
  int counted = 0;
  for (int i = 0; i < trials; ++i) {
    if (i > 0) {
      EXPECT_EQ(stored[i].strategy, "probe") << to_string(stored[i].config);
    }
    EXPECT_EQ(stored[i].runs_before, counted);
    counted += stored[i].m.repeats;
  }
  EXPECT_EQ(counted, runs);
  // The budget holds them: the search spent what was left.
  int total = 0;
  for (const auto& t : stored) total += t.m.repeats;
  EXPECT_LE(total, 8) << r.stderr_text;
}

// With a metric as the objective the profile's runs are no trials (it reads no metric), but
// they were spent: syspilot is charged for them, and the session stays inside its budget.
TEST(TuneCli, AnalysisRunsNotReadByTheObjectiveAreCharged) {
  Scratch s("cli-analysis-spent");
  RunResult r = tune_cli({"--db", s / "t.db", "--budget", "9", "--verify", "0", "--metric", "checksum ([0-9.]+)",
                          "--maximize", "--", program("omp_blas"), "200"});
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.stderr_text, m, std::regex("the analysis' other ([0-9]+) runs"))) << r.stderr_text;
  int spent = std::stoi(m[1]);
  EXPECT_GE(spent, 2) << r.stderr_text;  // a default run and at least one probe
  EXPECT_EQ(r.stderr_text.find("count as"), std::string::npos) << r.stderr_text;
  SessionStore st(s / "t.db");
  int total = spent;
  for (const auto& t : st.trials(1)) total += t.m.repeats;
  EXPECT_LE(total, 9) << r.stderr_text;
  std::string all = r.stdout_text + r.stderr_text;
  ASSERT_TRUE(std::regex_search(all, m, std::regex("([0-9]+)/9 runs"))) << all;
  EXPECT_EQ(std::stoi(m[1]), total) << r.stdout_text;
}

// `syspilot tune` killed with SIGKILL mid-session, then `--resume ID`: the trials stored before
// the kill are not run again and the session completes its budget.
TEST(TuneCli, ResumeAfterKillNine) {
  Scratch s("cli-resume");
  std::string log = s / "runs.log";
  std::vector<std::string> argv = {SYSPILOT_CLI, "tune", "--db", s / "t.db", "--budget", "9", "--max-repeats", "1",
                                   "--strategy", "grid", "--verify", "0", "--add", "K=1,2,3,4,5,6,7,8", "--",
                                   "/bin/sh", "-c", "echo \"${K:-default}\" >> " + log + "; sleep 0.25"};
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    std::vector<char*> a;
    for (auto& x : argv) a.push_back(x.data());
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  // Kill it once three trials are stored.
  std::vector<Trial> stored;
  for (int i = 0; i < 1000 && stored.size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (std::filesystem::exists(s / "t.db")) stored = SessionStore(s / "t.db").trials(1);
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  stored = SessionStore(s / "t.db").trials(1);
  ASSERT_GE(stored.size(), 3u);
  ASSERT_LT(stored.size(), 9u);
  std::set<Config> done;
  for (const auto& t : stored) done.insert(t.config);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the killed run's shell finishes its line
  size_t logged_before = read_lines(log).size();

  RunResult r = tune_cli({"--db", s / "t.db", "--resume", "1", "--verify", "0"});
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("resuming session 1: " + std::to_string(stored.size()) + " trials done"),
            std::string::npos)
      << r.stderr_text;
  auto all = SessionStore(s / "t.db").trials(1);
  auto lines = read_lines(log);
  ASSERT_GT(lines.size(), logged_before);
  expect_resumed_without_repeats(all, done, lines, logged_before);
}
#endif  // SYSPILOT_CLI
