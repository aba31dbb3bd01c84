// The evaluation suite's proof: scenarios are well formed, the committed tables cover their
// spaces with one contracts digest, replay is deterministic and within the measured noise,
// every tuner keeps to its budget, the CLI writes the report, and one scenario checked live.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "eval/eval.h"
#include "tuner/analyze.h"
#include "tuner/measure.h"

namespace fs = std::filesystem;
using namespace syspilot;
using namespace syspilot::eval;

namespace {

// A scenario with a large default-vs-best effect and short runs.
const char* const kLiveScenario = "pinning_collision";

Table load_committed(const std::string& name) {
  Table t;
  Diagnostics d;
  EXPECT_TRUE(load_table(data_dir() + "/" + name + ".json", t, d)) << d.str();
  return t;
}

// The CPU count a committed table's space was built for.
int table_cpus(const Table& t) {
  auto n = t.machine.find("ncpus");
  if (n == t.machine.end()) n = t.machine.find("nproc");
  return n == t.machine.end() ? 0 : std::atoi(n->second.c_str());
}

// The scenarios as their committed tables were measured (built for the tables' CPU count, so
// that these tests hold on a machine with another count).
const std::vector<Scenario>& scenarios() {
  static std::vector<Scenario> s = [] {
    Diagnostics d;
    auto v = load_scenarios(scenarios_dir(), d);
    EXPECT_FALSE(d.has_errors()) << d.str();
    for (auto& sc : v)
      if (int n = table_cpus(load_committed(sc.name)); n > 0 && n != sc.ncpus) {
        tuner::MachineFacts m = tuner::MachineFacts::detect();
        m.ncpus = m.ncores = n;
        build_for(sc, m);
      }
    return v;
  }();
  return s;
}

const Scenario& scenario(const std::string& name) {
  for (const auto& s : scenarios())
    if (s.name == name) return s;
  throw std::runtime_error("no scenario " + name);
}

const Table& table(const std::string& name) {
  static std::map<std::string, Table> tables;
  auto it = tables.find(name);
  if (it != tables.end()) return it->second;
  return tables[name] = load_committed(name);
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST(Scenarios, AtLeastEightWellFormed) {
  ASSERT_GE(scenarios().size(), 8u);
  for (const auto& s : scenarios()) {
    SCOPED_TRACE(s.name);
    EXPECT_FALSE(s.readme.empty());
    EXPECT_TRUE(fs::exists(command_line(s).front())) << "scenario program not built or not installed";
    EXPECT_FALSE(s.space.empty());
    auto all = enumerate(s);
    std::set<Config> distinct;
    for (const auto& c : all) distinct.insert(normalise(s, c));
    EXPECT_EQ(distinct.size(), all.size()) << "two configurations apply the same settings";
    EXPECT_TRUE(distinct.count(normalise(s, {}))) << "the user's default must be in the space";
    for (const auto& e : s.expert) EXPECT_TRUE(search_space(s).find(e)) << e << " is not a control of the space";
  }
}

TEST(Scenarios, EnvironmentAppliesEveryKind) {
  const Scenario& z = scenario("zstd_beside_omp");
  Environment e = environment(z, {{"ZSTD_c_nbWorkers", "1"}, {"OMP_NUM_THREADS", "2"}});
  EXPECT_EQ(e.set["SYSPILOT_API_ZSTD_c_nbWorkers"], "1");
  EXPECT_EQ(e.set["OMP_NUM_THREADS"], "2");
  EXPECT_NE(e.set["LD_PRELOAD"].find("libsyspilot_api_shim.so"), std::string::npos);
  EXPECT_NE(std::find(e.unset.begin(), e.unset.end(), "OMP_WAIT_POLICY"), e.unset.end());
  const Scenario& p = scenario("pinning_collision");
  Environment d = environment(p, {});
  EXPECT_EQ(d.set["OMP_PROC_BIND"], "true") << "the user's default applies to the empty configuration";
  Environment u = environment(p, {{"OMP_PROC_BIND", ""}});
  EXPECT_FALSE(u.set.count("OMP_PROC_BIND"));
  EXPECT_NE(std::find(u.unset.begin(), u.unset.end(), "OMP_PROC_BIND"), u.unset.end());
}

// `xargs -P {NPROC:-2}`: NPROC=2 runs the same command as NPROC unset, so it is the default's
// entry; any other value, or a placeholder a composed library reads, stays what it is.
TEST(Scenarios, AnArgumentsFallbackValueIsTheControlUnset) {
  Scenario s;
  s.args = {"-c", "seq 1 4 | xargs -P {NPROC:-2} -I @ prog {BLOCK:-8} {OMP_NUM_THREADS:-2}"};
  s.libraries = {"libgomp"};
  s.space = {{"NPROC", "xargs", "env", {"", "1", "4"}, {}, ""},
             {"BLOCK", "prog", "env", {"", "8", "16"}, {}, ""},
             {"OMP_NUM_THREADS", "libgomp", "env", {"", "1", "2"}, {}, ""}};
  EXPECT_EQ(normalise(s, {{"NPROC", "2"}}), Config{});
  EXPECT_EQ(normalise(s, {{"NPROC", "2"}, {"BLOCK", "8"}}), Config{});
  EXPECT_EQ(normalise(s, {{"NPROC", "4"}}), (Config{{"NPROC", "4"}}));
  EXPECT_EQ(normalise(s, {{"NPROC", "2"}, {"OMP_NUM_THREADS", "2"}}), (Config{{"OMP_NUM_THREADS", "2"}}))
      << "libgomp reads OMP_NUM_THREADS itself: set to 2 it is not the same run as unset";
  s.user_default = {{"NPROC", "4"}};
  EXPECT_EQ(normalise(s, {{"NPROC", "2"}}), Config{}) << "the fallback is what runs, whatever the user exported";
  EXPECT_EQ(normalise(s, {}), (Config{{"NPROC", "4"}}));
}

// A table entry is stored normalised; measuring it must apply exactly the settings of the
// configuration it stands for, unset controls included (where the user's default sets them).
TEST(Scenarios, EntriesRunAsTheConfigurationsTheyStandFor) {
  for (const auto& s : scenarios()) {
    SCOPED_TRACE(s.name);
    for (const auto& c : enumerate(s)) {
      Config n = normalise(s, c);
      EXPECT_EQ(normalise(s, assignment(s, n)), n);
      Environment want = environment(s, c), got = environment(s, assignment(s, n));
      EXPECT_EQ(got.set, want.set) << tuner::to_string(n);
      EXPECT_EQ(got.unset, want.unset) << tuner::to_string(n);
    }
  }
  const Scenario& p = scenario("pinning_collision");
  Environment e = environment(p, assignment(p, {{"OMP_WAIT_POLICY", "passive"}}));
  EXPECT_FALSE(e.set.count("OMP_PROC_BIND")) << "the entry unsets what the user exported";
}

// A remedy's computed value outside the measured domain goes to the nearest measured value of
// that control (log scale); an unmeasured non-numeric value is dropped, the rest kept.
TEST(Guidance, RemedyValuesGoToTheNearestMeasuredValue) {
  const Scenario& s = scenario("malloc_arenas");
  fs::path dir = fs::temp_directory_path() / ("syspilot-guidance-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "malloc_arenas.analysis.json") << R"({"scenario": "malloc_arenas", "profiling_runs": 1,
    "default_runs": 1, "note": "", "guides": [{"id": "g", "kind": "allocator_contention", "weight": 1,
    "constraint": "", "controls": ["MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "LD_PRELOAD"],
    "remedies": [{"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": "33554432"},
                 {"MALLOC_MMAP_THRESHOLD_": "70000"}, {"LD_PRELOAD": "libtcmalloc.so.4"},
                 {"LD_PRELOAD": "libtcmalloc.so.4", "MALLOC_ARENA_MAX": "3"}]}]})";
  const char* old = std::getenv("SYSPILOT_EVAL_DATA");
  std::string saved = old ? old : "";
  ::setenv("SYSPILOT_EVAL_DATA", dir.c_str(), 1);
  Diagnostics d;
  Guidance g = analyse(s, false, d);
  old ? (void)::setenv("SYSPILOT_EVAL_DATA", saved.c_str(), 1) : (void)::unsetenv("SYSPILOT_EVAL_DATA");
  fs::remove_all(dir);
  ASSERT_EQ(g.guides.size(), 1u);
  const auto& r = g.guides[0].remedies;
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], (Config{{"MALLOC_ARENA_MAX", "2"}, {"MALLOC_MMAP_THRESHOLD_", "4194304"}}));
  EXPECT_EQ(r[1], (Config{{"MALLOC_MMAP_THRESHOLD_", "65536"}}));
  EXPECT_EQ(r[2], (Config{{"MALLOC_ARENA_MAX", "2"}})) << "3 arenas: nearest measured is 2; tcmalloc dropped";
}

TEST(Tables, CoverEverySpaceWithOneDigestAndTheMachine) {
  std::map<std::string, std::set<std::string>> digests;  // per group: held-out tables come after the freeze
  int best_not_all_ones = 0;
  for (const auto& s : scenarios()) {
    SCOPED_TRACE(s.name);
    const Table& t = table(s.name);
    ASSERT_FALSE(t.entries.empty());
    digests[s.group].insert(t.contracts_digest);
    for (const char* key : {"nproc", "model name", "kernel"}) EXPECT_TRUE(t.machine.count(key)) << key;
    EXPECT_TRUE(t.machine.count("env OPENBLAS_CORETYPE") || !std::getenv("OPENBLAS_CORETYPE"));
    for (const auto& c : enumerate(s)) EXPECT_TRUE(t.find(normalise(s, c))) << tuner::to_string(c) << " not measured";
    EXPECT_GE(t.repeats, 2);
    for (const auto& e : t.entries) EXPECT_TRUE(e.failed() || static_cast<int>(e.samples.size()) >= 2);
    ASSERT_TRUE(t.best_entry());
    EXPECT_GT(t.best(), 0.0);
    EXPECT_TRUE(t.find(normalise(s, {})) && !t.find(normalise(s, {}))->samples.empty()) << "default not measured";
    // "All thread counts to 1": every *_THREADS / nbWorkers control set to 1.
    bool all_ones = true, any = false;
    for (const auto& c : s.space)
      if (c.name.find("THREADS") != std::string::npos || c.name.find("Workers") != std::string::npos ||
          c.name.find("nthreads") != std::string::npos) {
        auto it = t.best_entry()->config.find(c.name);
        all_ones = all_ones && it != t.best_entry()->config.end() && it->second == "1";
        any = true;
      }
    best_not_all_ones += !(any && all_ones);
  }
  // The held-out tables are measured after one freeze, against its corpus. The dev group also
  // holds the scenarios held out under earlier freezes, measured against earlier corpora: its
  // tables may disagree (the report says so), but each names its own.
  for (const auto& [group, ds] : digests) {
    EXPECT_FALSE(ds.count("")) << "a " << group << " table records no contracts digest";
    if (group == "held-out")
      EXPECT_EQ(ds.size(), 1u) << "the held-out tables were measured against different contract corpora";
  }
  EXPECT_GE(best_not_all_ones * 2, static_cast<int>(scenarios().size()))
      << "the best configuration is 'all thread counts to 1' in more than half of the scenarios";
}

// A table records the arguments it was measured with; resuming it for a scenario that now runs
// other arguments would mix two workloads' samples: an error, and the table is left as it was.
// Every committed table was measured with its scenario's arguments.
TEST(Tables, ArgumentsChangedIsAnErrorAndTheTableIsKept) {
  for (const auto& s : scenarios()) EXPECT_EQ(table(s.name).args, s.args) << s.name;

  Scenario s = scenario(kLiveScenario);
  fs::path dir = fs::temp_directory_path() / ("syspilot-eval-args-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string path = (dir / "t.json").string();
  fs::copy_file(data_dir() + "/" + s.name + ".json", path);
  std::string before = read(path);
  s.args = {"7"};
  Diagnostics d;
  MeasureOptions o;
  o.repeats = 4;
  measure(s, path, o, d);
  EXPECT_TRUE(d.has_errors());
  EXPECT_NE(d.str().find("eval-args-changed"), std::string::npos) << d.str();
  EXPECT_NE(d.str().find("'7'"), std::string::npos) << d.str();
  EXPECT_EQ(read(path), before);
  fs::remove_all(dir);

  // Nor is such a table replayed.
  std::map<std::string, Table> tables{{s.name, table(s.name)}};
  CompareOptions co;
  co.budgets = {5};
  co.seeds = 1;
  co.tuners = {"random"};
  Diagnostics cd;
  Comparison c = compare({s}, tables, co, [](const Scenario&) { return Guidance{}; }, cd);
  EXPECT_TRUE(cd.has_errors());
  EXPECT_NE(cd.str().find("eval-args-changed"), std::string::npos) << cd.str();
  EXPECT_TRUE(c.scenarios.empty());
}

TEST(Replay, DeterministicPerSeedAndDrawnFromTheTable) {
  const Scenario& s = scenarios().front();
  const Table& t = table(s.name);
  auto configs = enumerate(s);
  auto draw = [&](std::uint64_t seed) {
    ReplayObjective r(s, t, seed);
    std::vector<double> v;
    for (int i = 0; i < 40; ++i) v.push_back(r.evaluate(configs[i % configs.size()]).value);
    return v;
  };
  EXPECT_EQ(draw(7), draw(7));
  EXPECT_NE(draw(7), draw(8));
  ReplayObjective r(s, t, 3);
  for (const auto& c : configs) {
    tuner::Measurement m = r.evaluate(c);
    const Entry* e = t.find(normalise(s, c));
    if (e->failed()) {
      EXPECT_FALSE(m.ok);
      EXPECT_FALSE(m.failure.empty());
      continue;
    }
    ASSERT_TRUE(m.ok);
    EXPECT_NE(std::find(e->samples.begin(), e->samples.end(), m.value), e->samples.end());
  }
  tuner::Measurement bad = r.evaluate({{"NO_SUCH_CONTROL", "1"}});
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.failure.find("not in the measured table"), std::string::npos);
}

TEST(Replay, MedianOfManyDrawsIsTheTablesMedian) {
  for (const auto& s : scenarios()) {
    const Table& t = table(s.name);
    const Entry* best = t.best_entry();
    ASSERT_TRUE(best);
    ReplayObjective r(s, t, 11);
    std::vector<double> v;
    for (int i = 0; i < 301; ++i) v.push_back(r.evaluate(assignment(s, best->config)).value);
    double lo = *std::min_element(best->samples.begin(), best->samples.end());
    double hi = *std::max_element(best->samples.begin(), best->samples.end());
    double m = tuner::median(v);
    EXPECT_GE(m, lo);
    EXPECT_LE(m, hi);
    EXPECT_NEAR(m / best->median(), 1.0, std::max(0.02, tuner::relative_spread(best->samples)) + 1e-9) << s.name;
  }
}

// Every tuner on every scenario: budgets kept, incumbents from the table, identical per seed.
TEST(Compare, BudgetsKeptAndDeterministicForEveryTuner) {
  std::map<std::string, Table> tables;
  for (const auto& s : scenarios()) tables[s.name] = table(s.name);
  CompareOptions o;
  o.budgets = {5, 10, 20};
  o.seeds = 2;
  o.tuners = {"syspilot", "random", "expert"};
  auto guidance = [](const Scenario& s) {
    Diagnostics d;
    return analyse(s, false, d);
  };
  Diagnostics d;
  Comparison a = compare(scenarios(), tables, o, guidance, d);
  ASSERT_FALSE(d.has_errors()) << d.str();
  Comparison b = compare(scenarios(), tables, o, guidance, d);
  ASSERT_EQ(a.scenarios.size(), scenarios().size());
  std::map<std::string, std::set<std::string>> group_digests;  // group -> its tables' digests
  for (const auto& s : scenarios()) group_digests[s.group].insert(tables.at(s.name).contracts_digest);
  for (const auto& [group, ds] : group_digests)
    EXPECT_EQ(a.group_digests.count(group), ds.size() == 1 ? 1u : 0u)
        << "a group's digest is named only when its tables share one corpus (" << group << ")";
  if (group_digests.count("held-out")) EXPECT_TRUE(a.group_digests.count("held-out"));
  for (size_t i = 0; i < a.scenarios.size(); ++i) {
    const auto& r = a.scenarios[i];
    SCOPED_TRACE(r.scenario);
    ASSERT_EQ(r.sessions.size(), 3u * 2u);
    for (size_t k = 0; k < r.sessions.size(); ++k) {
      const Session& s = r.sessions[k];
      EXPECT_TRUE(s.error.empty()) << s.tuner << ": " << s.error;
      EXPECT_LE(s.runs, 20) << s.tuner;
      EXPECT_GE(s.runs, 1);
      EXPECT_EQ(s.best_by_run, b.scenarios[i].sessions[k].best_by_run) << s.tuner << " seed " << s.seed;
      // The incumbent is chosen on the noisy values the tuner saw, so its table median may
      // rise when a lucky draw displaces it; it is always a measured configuration.
      if (s.best_by_run.back() > 0) {
        EXPECT_TRUE(tables[r.scenario].find(s.best)) << s.tuner;
      }
      for (double v : s.best_by_run) {
        if (v > 0) {
          EXPECT_GE(v, 1.0 - 1e-12) << "better than the exhaustive best";
        }
      }
      if (s.tuner == "syspilot") {
        EXPECT_GE(s.runs, s.profiling_runs);
      }
    }
    EXPECT_GE(median_best(r, "random", 20), 1.0);
  }
}

// Without any guide the syspilot strategy samples the space instead of crawling it: over the
// scenarios (60 seeds each, so a lucky seed does not decide) it needs at most 10% more runs
// than random search to come within 5% of the exhaustive best, and is no worse at 10 and 20
// runs. (On the tables of 2026-12-03 11:14 it took 184.5 runs against random's 175, 5.4% more,
// while its best at 10 runs was better: its local steps and model picks trade a little of
// random's reach into small top-5% sets for faster early gains.)
TEST(Compare, SyspilotWithoutGuidesIsNoWorseThanRandom) {
  std::map<std::string, Table> tables;
  for (const auto& s : scenarios()) tables[s.name] = table(s.name);
  CompareOptions o;
  o.budgets = {10, 20, 50};
  o.seeds = 60;
  o.tuners = {"syspilot", "random"};
  Diagnostics d;
  Comparison c = compare(scenarios(), tables, o, [](const Scenario&) { return Guidance{}; }, d);
  ASSERT_FALSE(d.has_errors()) << d.str();
  double log_sp10 = 0, log_rnd10 = 0, log_sp20 = 0, log_rnd20 = 0, runs_sp = 0, runs_rnd = 0;
  for (const auto& r : c.scenarios) {
    log_sp10 += std::log(median_best(r, "syspilot", 10));
    log_rnd10 += std::log(median_best(r, "random", 10));
    log_sp20 += std::log(median_best(r, "syspilot", 20));
    log_rnd20 += std::log(median_best(r, "random", 20));
    auto runs = [](double x) { return x < 0 ? 60.0 : x; };  // not within 5% in 50 runs
    runs_sp += runs(median_runs_to_within(r, "syspilot"));
    runs_rnd += runs(median_runs_to_within(r, "random"));
  }
  EXPECT_LE(runs_sp, runs_rnd * 1.10) << "runs to 5%, summed over scenarios";
  EXPECT_LE(log_sp10, log_rnd10 + 0.05 * c.scenarios.size()) << "geometric mean of best @10";
  EXPECT_LE(log_sp20, log_rnd20 + 0.05 * c.scenarios.size()) << "geometric mean of best @20";
}

TEST(Compare, OptunaSamplersReplayDeterministically) {
  const Scenario& s = scenario("openblas_pthreads_in_omp");
  std::map<std::string, Table> tables{{s.name, table(s.name)}};
  CompareOptions o;
  o.budgets = {10, 20};
  o.seeds = 2;
  o.tuners = {"optuna-tpe", "optuna-cmaes"};
  Diagnostics d;
  Comparison a = compare({s}, tables, o, {}, d);
  Comparison b = compare({s}, tables, o, {}, d);
  ASSERT_EQ(a.scenarios.size(), 1u);
  for (size_t k = 0; k < a.scenarios[0].sessions.size(); ++k) {
    const Session& x = a.scenarios[0].sessions[k];
    ASSERT_TRUE(x.error.empty()) << x.error;
    EXPECT_LE(x.runs, 20);
    EXPECT_EQ(x.best_by_run, b.scenarios[0].sessions[k].best_by_run) << x.tuner;
  }
}

TEST(Report, MarkdownWithPlotsAndTargets) {
  const Scenario& s = scenarios().front();
  std::map<std::string, Table> tables{{s.name, table(s.name)}};
  CompareOptions o;
  o.budgets = {5, 10};
  o.seeds = 3;
  o.tuners = {"random", "expert"};
  Diagnostics d;
  Comparison c = compare({s}, tables, o, {}, d);
  fs::path dir = fs::temp_directory_path() / "syspilot-eval-report";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string md = write_report(c, (dir / "r.md").string());
  EXPECT_NE(md.find("| scenario |"), std::string::npos);
  EXPECT_NE(md.find("## Targets"), std::string::npos);
  std::string svg = read((dir / ("r-" + s.name + ".svg")).string());
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("random"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "r-summary.svg"));
  fs::remove_all(dir);
}

// A runs target missed because syspilot's analysis alone costs more than a third of what the
// fastest general-purpose tuner needs says so, with the analysis' runs.
TEST(Report, MissedRunsTargetNamesTheAnalysisRuns) {
  auto session = [](const char* tuner, int within_at, int profiling) {
    Session x;
    x.tuner = tuner;
    x.seed = 1;
    x.profiling_runs = profiling;
    for (int r = 1; r <= 50; ++r) x.best_by_run.push_back(r < within_at ? 1.3 : 1.0);
    return x;
  };
  auto report_of = [&](Session syspilot, Session general) {
    Comparison c;
    c.budgets = {5, 10, 20, 50};
    c.seeds = 1;
    ScenarioResult r;
    r.scenario = "two_causes";
    r.exhaustive_best = 0.2;
    r.default_value = 0.3;
    r.configurations = 12;
    r.sessions = {syspilot, general};
    c.scenarios = {r};
    fs::path dir = fs::temp_directory_path() / ("syspilot-eval-why-" + std::to_string(getpid()));
    fs::create_directories(dir);
    std::string md = write_report(c, (dir / "r.md").string());
    fs::remove_all(dir);
    return md;
  };
  std::string md = report_of(session("syspilot", 19, 7), session("random", 14, 0));
  EXPECT_NE(md.find("syspilot 19 runs vs random 14; a third of 14 runs is fewer than syspilot's 7 analysis runs"),
            std::string::npos)
      << md;
  // One run short: the analysis fits in a third, the first candidate does not.
  md = report_of(session("syspilot", 9, 2), session("optuna-tpe", 8, 0));
  EXPECT_NE(md.find("syspilot 9 runs vs optuna-tpe 8; a third of 8 runs is fewer than syspilot's 2 analysis runs plus one candidate"),
            std::string::npos)
      << md;
  // Nobody within 5%: said of every tuner.
  md = report_of(session("syspilot", 99, 2), session("random", 99, 0));
  EXPECT_NE(md.find("does not come within 5% in 50 runs, nor does any general-purpose tuner's"), std::string::npos) << md;
  EXPECT_EQ(md.find("Within reach of any tuner"), std::string::npos) << md;
  // A general tuner within 5% in 2 runs and at 1.00 at 10 runs: no tuner could meet either target,
  // and the report says so with the scenario.
  md = report_of(session("syspilot", 3, 2), session("random", 2, 0));
  EXPECT_NE(md.find("the runs target on 0/1, the 1.2x target on 0/1"), std::string::npos) << md;
  EXPECT_NE(md.find("fewer than 3 runs (two_causes), so \"every scenario\" cannot be met"), std::string::npos) << md;
  EXPECT_NE(md.find("within 1.2x of the best at 10 runs (two_causes), so \"at least half\" cannot be met"),
            std::string::npos)
      << md;
}

// A held-out scenario: its group, an absolute program, {scenario_dir} in its arguments; a group
// other than dev or held-out is an error.
TEST(Scenarios, HeldOutWithAnApplicationNobodyHereWrote) {
  fs::path dir = fs::temp_directory_path() / ("syspilot-eval-held-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "py" );
  fs::create_directories(dir / "bad");
  std::ofstream(dir / "py" / "scenario.json")
      << R"({"name": "py", "group": "held-out", "program": "/usr/bin/python3", "args": ["{scenario_dir}/main.py", "3"],
             "space": [{"control": "OPENBLAS_NUM_THREADS", "values": ["", "1"]}]})";
  std::ofstream(dir / "bad" / "scenario.json")
      << R"({"name": "bad", "group": "test", "program": "x", "space": [{"control": "X", "values": ["", "1"]}]})";
  Diagnostics d;
  auto v = load_scenarios(dir.string(), d);
  ASSERT_EQ(v.size(), 1u) << d.str();
  EXPECT_EQ(v[0].group, "held-out");
  EXPECT_EQ(command_line(v[0]), (std::vector<std::string>{"/usr/bin/python3", (dir / "py").string() + "/main.py", "3"}));
  EXPECT_NE(d.str().find("group must be \"dev\" or \"held-out\", not \"test\""), std::string::npos) << d.str();
  for (const auto& s : scenarios()) EXPECT_EQ(command_line(s).front().front(), '/') << s.name;
  fs::remove_all(dir);
}

// The report splits dev and held-out scenarios, each with its summary and targets, and names the
// freeze; a frozen path changed since is said plainly.
TEST(Report, HeldOutScenariosHaveTheirOwnSectionAndNameTheFreeze) {
  Comparison c;
  c.budgets = {5, 10};
  c.seeds = 1;
  auto result = [](const char* name, const char* group) {
    ScenarioResult r;
    r.scenario = name;
    r.group = group;
    r.exhaustive_best = 1, r.default_value = 1.5, r.configurations = 4;
    Session x;
    x.tuner = "random";
    x.best_by_run = {1.5, 1.2, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    r.sessions = {x};
    return r;
  };
  c.scenarios = {result("made_here", "dev"), result("numpy_pool", "held-out")};
  c.freeze.commit = "0123456789abcdef0123";
  c.freeze.date = "2026-12-05";
  c.freeze.paths = {"tuner/rules", "corpus"};
  c.freeze.changed = false;
  c.freeze.changed_note = "unchanged since the freeze";
  fs::path dir = fs::temp_directory_path() / ("syspilot-eval-groups-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string md = write_report(c, (dir / "r.md").string());
  size_t dev = md.find("## Dev scenarios"), held = md.find("## Held-out scenarios");
  ASSERT_NE(dev, std::string::npos) << md;
  ASSERT_NE(held, std::string::npos) << md;
  EXPECT_LT(dev, held);
  // Each group's own summary lists its scenarios only.
  std::string dev_part = md.substr(dev, held - dev), held_part = md.substr(held, md.find("## made_here") - held);
  EXPECT_NE(dev_part.find("| made_here |"), std::string::npos) << dev_part;
  EXPECT_EQ(dev_part.find("numpy_pool"), std::string::npos) << dev_part;
  EXPECT_NE(held_part.find("| numpy_pool |"), std::string::npos) << held_part;
  EXPECT_EQ(held_part.find("made_here"), std::string::npos) << held_part;
  EXPECT_NE(held_part.find("### Targets"), std::string::npos);
  EXPECT_NE(held_part.find("Written after the freeze at commit `0123456789ab` (2026-12-05)"), std::string::npos) << held_part;
  EXPECT_NE(held_part.find("`tuner/rules`, `corpus`"), std::string::npos) << held_part;
  EXPECT_NE(md.find("## numpy_pool (held-out)"), std::string::npos);
  EXPECT_EQ(md.find("A frozen path changed"), std::string::npos);
  c.freeze.changed = true;
  c.freeze.changed_note = "changed since the freeze: tuner/rules/x.json";
  md = write_report(c, (dir / "r.md").string());
  EXPECT_NE(md.find("changed since the freeze: tuner/rules/x.json. **A frozen path changed"), std::string::npos) << md;
  // Only dev scenarios: one summary, as before.
  c.scenarios.pop_back();
  md = write_report(c, (dir / "r.md").string());
  EXPECT_EQ(md.find("Held-out"), std::string::npos);
  EXPECT_NE(md.find("## Targets"), std::string::npos);
  fs::remove_all(dir);
}

// The freeze file is read and checked against the history with git: a path absent from both
// sides is unchanged, a path that did not exist at the first commit has changed, and a commit
// that is no hex is never handed to git.
TEST(Freeze, ChangedPathsAreFoundWithGit) {
  fs::path dir = fs::temp_directory_path() / ("syspilot-eval-freeze-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto freeze = [&](const std::string& commit, const std::string& path) {
    std::ofstream(dir / "f.json") << nlohmann::json{{"commit", commit}, {"date", "d"}, {"paths", {path}}}.dump();
    return load_freeze((dir / "f.json").string());
  };
  Freeze bad = freeze("HEAD; rm -rf /", "corpus");
  EXPECT_FALSE(bad.changed.has_value());
  EXPECT_EQ(bad.changed_note, "no commit named");
  EXPECT_TRUE(load_freeze((dir / "none.json").string()).commit.empty());
  const std::string git = "git -C " + std::string(SYSPILOT_SOURCE_DIR) + " ";
  auto out = [&](const std::string& cmd) {
    std::string text;
    FILE* p = popen((git + cmd + " 2>/dev/null").c_str(), "r");
    if (!p) return text;
    char buf[256];
    while (fgets(buf, sizeof buf, p)) text += buf;
    pclose(p);
    while (!text.empty() && (text.back() == '\n')) text.pop_back();
    return text;
  };
  const std::string head = out("rev-parse HEAD"), root = out("rev-list --max-parents=0 HEAD");
  if (head.empty() || root.empty() || root == head) GTEST_SKIP() << "no git history at hand";
  Freeze same = freeze(head, "no/such/path/in/any/commit");
  ASSERT_TRUE(same.changed.has_value()) << same.changed_note;
  EXPECT_FALSE(*same.changed);
  Freeze old = freeze(root.substr(0, root.find('\n')), "corpus");
  ASSERT_TRUE(old.changed.has_value()) << old.changed_note;
  EXPECT_TRUE(*old.changed);
  EXPECT_EQ(old.changed_note.rfind("changed since the freeze: corpus/", 0), 0u) << old.changed_note;
  fs::remove_all(dir);
}

// The committed documents' figures are what `syspilot eval --docs` writes from the data: the
// scenarios' spaces, the measured tables, the committed analyses and the replayed report.
TEST(Docs, CommittedDocumentsAgreeWithTheData) {
  auto blocks = document_blocks(scenarios(), data_dir(), read(std::string(SYSPILOT_SOURCE_DIR) + "/eval/report.md"));
  ASSERT_EQ(blocks.size(), 6u);
  for (const auto& b : blocks) EXPECT_FALSE(b.text.empty()) << b.file << " " << b.name;
  auto drift = update_documents(SYSPILOT_SOURCE_DIR, blocks, true);
  for (const auto& d : drift)
    ADD_FAILURE() << d.file << ": " << d.block << ": " << d.why << " (run: syspilot eval --docs)";
  // Every scenario appears in the README's group tables, the spaces, the tables and the analyses.
  const std::string readme = read(std::string(SYSPILOT_SOURCE_DIR) + "/README.md");
  const std::string analysis = read(std::string(SYSPILOT_SOURCE_DIR) + "/docs/analysis.md");
  for (const auto& s : scenarios()) {
    EXPECT_NE(readme.find("| " + s.name + " | " + std::to_string(enumerate(s).size()) + " |"), std::string::npos) << s.name;
    EXPECT_NE(analysis.find("| " + s.name + " | " + s.group + " |"), std::string::npos) << s.name;
  }
}

namespace {
// A copy of the documents, the report and the data in a fresh folder: the drift tests edit it.
struct DocsCopy {
  fs::path root = fs::temp_directory_path() / ("syspilot-docs-" + std::to_string(::getpid()));
  DocsCopy() {
    fs::remove_all(root);
    for (const char* f : {"README.md", "docs/eval.md", "docs/analysis.md", "eval/report.md"}) {
      fs::create_directories((root / f).parent_path());
      fs::copy_file(fs::path(SYSPILOT_SOURCE_DIR) / f, root / f);
    }
    fs::copy(data_dir(), root / "data", fs::copy_options::recursive);
  }
  ~DocsCopy() { fs::remove_all(root); }
  std::vector<DocBlock> blocks() const {
    return document_blocks(scenarios(), (root / "data").string(), read((root / "eval/report.md").string()));
  }
};

// The document with every generated block's lines taken out: what a rewrite must keep.
std::string outside_blocks(const std::string& text) {
  std::string out;
  bool inside = false;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("<!-- generated by syspilot eval --docs: ", 0) == 0) inside = true;
    if (!inside) out += line + "\n";
    if (line.rfind("<!-- end of generated ", 0) == 0) inside = false;
  }
  return out;
}
}  // namespace

// A changed analysis drifts exactly its block; rewriting puts the new figure there and keeps
// every byte outside the markers, and the next check is clean.
TEST(Docs, ADriftedBlockIsFoundAndOnlyItIsRewritten) {
  DocsCopy c;
  const Scenario& sc = scenarios().front();
  fs::path a = c.root / "data" / (sc.name + ".analysis.json");
  auto j = nlohmann::json::parse(read(a.string()));
  j["profiling_runs"] = 97;
  std::ofstream(a) << j.dump(1);
  auto drift = update_documents(c.root.string(), c.blocks(), true);
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].file, "docs/analysis.md");
  EXPECT_EQ(drift[0].block, "eval-analyses");
  const std::string before = read((c.root / "docs/analysis.md").string());
  EXPECT_EQ(before, read(std::string(SYSPILOT_SOURCE_DIR) + "/docs/analysis.md")) << "a check writes nothing";
  update_documents(c.root.string(), c.blocks(), false);
  const std::string after = read((c.root / "docs/analysis.md").string());
  EXPECT_NE(after.find("| " + sc.name + " | " + sc.group + " |"), std::string::npos);
  EXPECT_NE(after.find(" | 97 |\n"), std::string::npos);
  EXPECT_EQ(outside_blocks(after), outside_blocks(before));
  EXPECT_TRUE(update_documents(c.root.string(), c.blocks(), true).empty());
}

// A document whose markers are gone is reported, never guessed at; a report without a group's
// summary is an error, not an empty table.
TEST(Docs, MissingMarkersAndAReportWithoutSummaryAreErrors) {
  DocsCopy c;
  std::string readme = read((c.root / "README.md").string());
  auto at = readme.find("<!-- end of generated eval-held-out -->");
  ASSERT_NE(at, std::string::npos);
  readme.erase(at, std::string("<!-- end of generated eval-held-out -->").size());
  std::ofstream(c.root / "README.md") << readme;
  auto drift = update_documents(c.root.string(), c.blocks(), false);
  ASSERT_EQ(drift.size(), 1u);
  EXPECT_EQ(drift[0].block, "eval-held-out");
  EXPECT_EQ(drift[0].why.rfind("markers missing", 0), 0u) << drift[0].why;
  EXPECT_EQ(read((c.root / "README.md").string()), readme) << "nothing is inserted";
  EXPECT_THROW(document_blocks(scenarios(), (c.root / "data").string(), "# no report\n"), std::runtime_error);
}

// The command: --check exits 1 and names the block on drift and writes nothing; --docs rewrites
// and exits 0; then --check exits 0.
TEST(Cli, DocsCheckAndRewrite) {
  if (!fs::exists(SYSPILOT_BINARY)) GTEST_SKIP() << "syspilot not built";
  DocsCopy c;
  std::string report = read((c.root / "eval/report.md").string());
  auto at = report.find("| " + scenarios().front().name + " | ");
  ASSERT_NE(at, std::string::npos);
  auto bar = report.find(" | ", report.find(" | ", at + 2) + 3);  // after the configs cell
  report.replace(bar + 3, report.find(" |", bar + 3) - bar - 3, "9.99x");
  std::ofstream(c.root / "eval/report.md") << report;
  const std::string base = std::string(SYSPILOT_BINARY) + " eval --docs --root " + c.root.string() + " --data " +
                           (c.root / "data").string();
  const std::string err = (c.root / "err.txt").string();
  int rc = std::system((base + " --check >/dev/null 2>" + err).c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  EXPECT_NE(read(err).find("README.md: eval-dev"), std::string::npos) << read(err);
  EXPECT_EQ(read(err).find("docs/analysis.md"), std::string::npos) << read(err);
  rc = std::system((base + " >/dev/null 2>&1").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  EXPECT_NE(read((c.root / "README.md").string()).find("| 9.99x |"), std::string::npos);
  rc = std::system((base + " --check >/dev/null 2>&1").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  rc = std::system((base + " --scenario " + scenarios().front().name + " >/dev/null 2>&1").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2) << "--docs writes every scenario's figures";
}

TEST(Cli, ReplayPrintsSummaryAndRejectsBadInput) {
  if (!fs::exists(SYSPILOT_BINARY)) GTEST_SKIP() << "syspilot not built";
  fs::path dir = fs::temp_directory_path() / "syspilot-eval-cli";
  fs::create_directories(dir);
  std::string out = (dir / "out.txt").string();
  std::string cmd = std::string(SYSPILOT_BINARY) + " eval --replay --as-measured --scenario " + scenarios().front().name +
                    " --tuner random --tuner expert --seeds 2 --budgets 5,10 --report " + (dir / "r.md").string() +
                    " >" + out + " 2>/dev/null";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  EXPECT_NE(read(out).find("| scenario |"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "r.md"));
  rc = std::system((std::string(SYSPILOT_BINARY) + " eval --scenario no_such_scenario 2>/dev/null >/dev/null").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  rc = std::system((std::string(SYSPILOT_BINARY) + " eval --tuner hillclimb 2>/dev/null >/dev/null").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  fs::remove_all(dir);
}

// The spot check: one scenario run live. A live tuning session keeps its budget and finds a
// configuration the replay also rates well, and the default-vs-best ratio measured now, in
// interleaved runs, agrees with the table's ratio within the table's noise band.
TEST(Live, SpotCheckAgreesWithTheTable) {
  if (const char* v = std::getenv("SYSPILOT_EVAL_LIVE"); v && std::string(v) == "0")
    GTEST_SKIP() << "SYSPILOT_EVAL_LIVE=0";
  const Scenario& s = scenario(kLiveScenario);
  const Table& t = table(s.name);
  const Entry* best = t.best_entry();
  const Entry* def = t.find(normalise(s, {}));
  ASSERT_TRUE(best && def && !def->samples.empty());

  std::vector<double> dv, bv, load;
  for (int i = 0; i < 5; ++i) {
    eval::Run a = run_once(s, {}), b = run_once(s, assignment(s, best->config));
    ASSERT_TRUE(a.ok && b.ok) << a.failure << b.failure;
    dv.push_back(a.wall_s);
    bv.push_back(b.wall_s);
    load.push_back(a.outside_load);
    load.push_back(b.outside_load);
  }
  // The table was measured with at most t.max_load cores of outside work; a machine busier
  // than that measures something else (MEASUREMENT.md), so the comparison is not made. (A
  // nice-19 busy loop shows as about 0.4 cores here and takes the CPUs that passive waiting
  // frees: the table's best then runs slower than the default.)
  double outside = tuner::median(load);
  if (outside > (t.max_load > 0 ? t.max_load : 0.3))
    GTEST_SKIP() << "outside load " << outside << " cores during the spot check";
  std::cout << "outside load during the spot check: median " << outside << " cores\n";

  std::map<std::string, Table> tables{{s.name, t}};
  CompareOptions o;
  o.budgets = {8};
  o.seeds = 1;
  o.tuners = {"syspilot"};
  o.live = true;
  Diagnostics d;
  auto guidance = [](const Scenario& x) {
    Diagnostics dd;
    return analyse(x, false, dd);
  };
  Comparison live = compare({s}, tables, o, guidance, d);
  ASSERT_EQ(live.scenarios.size(), 1u);
  const Session& session = live.scenarios[0].sessions.at(0);
  ASSERT_TRUE(session.error.empty()) << session.error;
  EXPECT_LE(session.runs, 8);
  EXPECT_TRUE(t.find(session.best)) << "the live best is a measured configuration";
  o.live = false;
  o.seeds = 20;
  Comparison replay = compare({s}, tables, o, guidance, d);
  // One live session is one draw: it must fall within what the replayed sessions span.
  double lo = 1e9, hi = 0;
  for (const auto& r : replay.scenarios[0].sessions) {
    lo = std::min(lo, r.best_by_run.back());
    hi = std::max(hi, r.best_by_run.back());
  }
  double band = 1 + 2 * std::max(t.noise(), 0.1);
  EXPECT_LE(session.best_by_run.back(), hi * band) << "live best vs replayed " << lo << ".." << hi;
  EXPECT_GE(session.best_by_run.back(), lo);

  double live_ratio = tuner::median(dv) / tuner::median(bv);
  double table_ratio = def->median() / best->median();
  // Both sides' spreads count: the table's samples and the five live pairs measured here (on
  // 2 cores one live pair in five can run 20% off its median).
  double spread = tuner::relative_spread(def->samples) + tuner::relative_spread(best->samples) +
                  tuner::relative_spread(dv) + tuner::relative_spread(bv) + 2 * t.noise();
  EXPECT_GT(live_ratio, table_ratio / (1 + std::max(spread, 0.25)))
      << "live default/best " << live_ratio << " vs table " << table_ratio;
  EXPECT_LT(live_ratio, table_ratio * (1 + std::max(spread, 0.25)));
}

// The scenario files build each machine's space: the committed thread counts are the measured
// values on the tables' CPU count and scale with the CPUs elsewhere; no "{=" is left.
TEST(Scenarios, SpacesAreBuiltForTheMachine) {
  auto on = [](int cpus) {
    tuner::MachineFacts m = tuner::MachineFacts::detect();
    m.ncpus = m.ncores = cpus;
    Diagnostics d;
    auto v = load_scenarios(scenarios_dir(), d, m);
    EXPECT_FALSE(d.has_errors()) << d.str();
    std::map<std::string, Scenario> by;
    for (auto& s : v) by[s.name] = s;
    return by;
  };
  auto values = [](const Scenario& s, const std::string& control) {
    for (const auto& c : s.space)
      if (c.name == control) return c.values;
    return std::vector<std::string>{};
  };
  auto two = on(2), sixteen = on(16), sixty_four = on(64);
  ASSERT_EQ(two.size(), scenarios().size());
  for (const auto& s : scenarios()) {
    if (table_cpus(table(s.name)) != 2) continue;
    SCOPED_TRACE(s.name);
    const Scenario& b = two.at(s.name);
    EXPECT_EQ(b.ncpus, 2);
    EXPECT_EQ(b.args, table(s.name).args);
    for (const auto& c : enumerate(b)) EXPECT_TRUE(table(s.name).find(normalise(b, c))) << tuner::to_string(c);
  }
  for (const auto* by : {&two, &sixteen, &sixty_four})
    for (const auto& [name, s] : *by) {
      for (const auto& c : s.space)
        for (const auto& v : c.values) EXPECT_EQ(v.find("{="), std::string::npos) << name << " " << c.name << "=" << v;
      for (const auto& [k, v] : s.user_default) EXPECT_EQ(v.find("{="), std::string::npos) << name << " " << k;
    }
  EXPECT_EQ(values(two.at("gomp_spin_beside_tbb"), "OMP_NUM_THREADS"), (std::vector<std::string>{"", "1", "4"}));
  EXPECT_EQ(values(sixteen.at("gomp_spin_beside_tbb"), "OMP_NUM_THREADS"), (std::vector<std::string>{"", "1", "32"}));
  EXPECT_EQ(values(sixteen.at("openblas_pthreads_in_omp"), "OPENBLAS_NUM_THREADS"),
            (std::vector<std::string>{"", "1", "16", "32"}));
  EXPECT_EQ(sixteen.at("blis_in_tbb").user_default.at("BLIS_NUM_THREADS"), "16");
  EXPECT_EQ(values(sixty_four.at("xz_cli_beside_numpy_pool"), "XZ_DEFAULTS"), (std::vector<std::string>{"", "-T0", "-T64"}));
  EXPECT_EQ(values(sixty_four.at("malloc_arenas"), "MALLOC_ARENA_MAX"), (std::vector<std::string>{"", "1", "64", "256"}));
  // A value that is no thread count stays as written.
  EXPECT_EQ(values(sixty_four.at("gomp_spin_beside_tbb"), "GOMP_SPINCOUNT"), values(two.at("gomp_spin_beside_tbb"), "GOMP_SPINCOUNT"));
}

// "ladder" and "{=EXPR}" on a scenario written here, for 2, 12, 16 and 64 CPUs; expressions that
// do not give a whole number are errors that name them, and the other scenarios still load.
TEST(Scenarios, LaddersAndExpressionsFollowTheCpuCount) {
  fs::path dir = fs::temp_directory_path() / ("syspilot-eval-ladder-" + std::to_string(getpid()));
  fs::remove_all(dir);
  for (const char* n : {"ok", "frac", "unknown", "open"}) fs::create_directories(dir / n);
  std::ofstream(dir / "ok" / "scenario.json") << R"({"name": "ok", "program": "p", "args": ["{=100*ncpus}", "x{=ncpus/2}y"],
      "default": {"T": "{=ncpus}"},
      "space": [{"control": "T", "values": [""], "ladder": "2*ncpus"},
                {"control": "U", "values": ["", "1", "{=ncpus}"], "ladder": "ncpus/2"}]})";
  std::ofstream(dir / "frac" / "scenario.json")
      << R"({"name": "frac", "program": "p", "space": [{"control": "T", "values": ["{=ncpus/3}"]}]})";
  std::ofstream(dir / "unknown" / "scenario.json")
      << R"({"name": "unknown", "program": "p", "space": [{"control": "T", "values": [""], "ladder": "2*cores"}]})";
  std::ofstream(dir / "open" / "scenario.json")
      << R"({"name": "open", "program": "p", "args": ["{=ncpus"], "space": [{"control": "T", "values": [""]}]})";
  struct Want {
    int cpus;
    std::vector<std::string> t, u, args;
    std::string dflt;
  };
  for (const Want& w : {Want{2, {"", "1", "2", "4"}, {"", "1", "2"}, {"200", "x1y"}, "2"},
                        Want{12, {"", "1", "2", "4", "8", "12", "16", "24"}, {"", "1", "12", "2", "4"}, {"1200", "x6y"}, "12"},
                        Want{16, {"", "1", "2", "4", "8", "16", "32"}, {"", "1", "16", "2", "4", "8"}, {"1600", "x8y"}, "16"},
                        Want{64, {"", "1", "2", "4", "8", "16", "32", "64", "128"}, {"", "1", "64", "2", "4", "8", "16", "32"},
                             {"6400", "x32y"}, "64"}}) {
    SCOPED_TRACE(w.cpus);
    tuner::MachineFacts m;
    m.ncpus = m.ncores = w.cpus;
    Diagnostics d;
    auto v = load_scenarios(dir.string(), d, m);
    ASSERT_EQ(v.size(), w.cpus % 3 == 0 ? 2u : 1u) << d.str();  // ncpus/3 is whole on 12 CPUs
    const Scenario& s = v.front().name == "ok" ? v.front() : v.back();
    EXPECT_EQ(s.space[0].values, w.t);
    EXPECT_EQ(s.space[1].values, w.u);
    EXPECT_EQ(s.args, w.args);
    EXPECT_EQ(s.user_default.at("T"), w.dflt);
    EXPECT_EQ(s.ncpus, w.cpus);
    if (w.cpus % 3 != 0) EXPECT_NE(d.str().find("\"ncpus/3\" is not a whole number"), std::string::npos) << d.str();
    EXPECT_NE(d.str().find("\"2*cores\" does not evaluate"), std::string::npos) << d.str();
    EXPECT_NE(d.str().find("without its \"}\""), std::string::npos) << d.str();
  }
  fs::remove_all(dir);
}

// A table holds the space of the CPU count it was measured on: replayed for a scenario built
// for another count it is refused, and replayed as measured it runs, as from the CLI.
TEST(Replay, ATableFromAnotherCpuCountIsReplayedOnlyAsMeasured) {
  const Scenario& measured = scenario(kLiveScenario);
  const Table& t = table(kLiveScenario);
  int cpus = table_cpus(t);
  ASSERT_GT(cpus, 0);
  Scenario other = measured;
  tuner::MachineFacts m = tuner::MachineFacts::detect();
  m.ncpus = m.ncores = cpus * 8;
  build_for(other, m);
  std::map<std::string, Table> tables{{measured.name, t}};
  CompareOptions o;
  o.budgets = {5};
  o.seeds = 2;
  o.tuners = {"random"};
  Diagnostics d;
  Comparison refused = compare({other}, tables, o, {}, d);
  EXPECT_TRUE(refused.scenarios.empty());
  EXPECT_NE(d.str().find("eval-machine-differs"), std::string::npos) << d.str();
  EXPECT_NE(d.str().find("measured on " + std::to_string(cpus) + " CPUs"), std::string::npos) << d.str();
  o.as_measured = true;
  Diagnostics d2;
  Comparison replayed = compare({other}, tables, o, {}, d2);
  EXPECT_FALSE(d2.has_errors()) << d2.str();
  ASSERT_EQ(replayed.scenarios.size(), 1u);
  Diagnostics d3;
  Comparison same = compare({measured}, tables, o, {}, d3);
  ASSERT_EQ(same.scenarios.size(), 1u);
  EXPECT_EQ(replayed.scenarios[0].sessions[0].best_by_run, same.scenarios[0].sessions[0].best_by_run);

  if (!fs::exists(SYSPILOT_BINARY)) return;
  std::string base = "SYSPILOT_NCPUS=" + std::to_string(cpus * 8) + " " + SYSPILOT_BINARY + " eval --scenario " +
                     measured.name + " --tuner random --seeds 1 --budgets 5";
  EXPECT_EQ(WEXITSTATUS(std::system((base + " --replay >/dev/null 2>&1").c_str())), 1);
  EXPECT_EQ(WEXITSTATUS(std::system((base + " --replay --as-measured >/dev/null 2>&1").c_str())), 0);
  EXPECT_EQ(WEXITSTATUS(std::system((base + " --measure >/dev/null 2>&1").c_str())), 2);
  EXPECT_EQ(WEXITSTATUS(std::system((base + " --live --as-measured >/dev/null 2>&1").c_str())), 2);
}

// The analysis is drawn as `syspilot tune --budget 10` runs it: a draw records the cap it ran
// under. One stored without a cap that ran past it is reported when replayed (the cap would have
// cut it short); one made under the cap is not, even where its first pass alone ran past it.
// Every committed draw was made under the cap.
TEST(Guidance, DrawsBeyondTunesAnalysisCapAreReported) {
  const Scenario& s = scenario("gomp_spin_beside_tbb");
  fs::path dir = fs::temp_directory_path() / ("syspilot-cap-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int cap = tuner::analysis_run_cap(kDrawBudget);
  ASSERT_EQ(cap, 5);
  std::ofstream(dir / "gomp_spin_beside_tbb.analysis.json")
      << R"({"profiling_runs": 8, "default_runs": 3, "guides": [], "hypotheses": []})";
  std::ofstream(dir / "gomp_spin_beside_tbb.analysis-2.json")
      << R"({"profiling_runs": 6, "default_runs": 1, "max_runs": 5, "guides": [], "hypotheses": []})";
  std::ofstream(dir / "gomp_spin_beside_tbb.analysis-3.json")
      << R"({"profiling_runs": 4, "default_runs": 1, "guides": [], "hypotheses": []})";
  const char* old = std::getenv("SYSPILOT_EVAL_DATA");
  std::string saved = old ? old : "";
  ::setenv("SYSPILOT_EVAL_DATA", dir.c_str(), 1);
  Diagnostics d;
  auto draws = analysis_draws(s, d);
  old ? (void)::setenv("SYSPILOT_EVAL_DATA", saved.c_str(), 1) : (void)::unsetenv("SYSPILOT_EVAL_DATA");
  fs::remove_all(dir);
  ASSERT_EQ(draws.size(), 3u);
  EXPECT_EQ(draws[0].max_runs, 0);
  EXPECT_EQ(draws[1].max_runs, 5);
  int reported = 0;
  for (const auto& item : d.items()) {
    if (item.code != "eval-draw-beyond-cap") continue;
    ++reported;
    EXPECT_NE(item.loc.file.find("gomp_spin_beside_tbb.analysis.json"), std::string::npos) << item.loc.file;
    EXPECT_NE(item.message.find("8 profiling runs"), std::string::npos) << item.message;
  }
  EXPECT_EQ(reported, 1) << d.str();

  for (const auto& sc : scenarios()) {
    Diagnostics committed;
    auto stored = analysis_draws(sc, committed);
    for (const auto& item : committed.items()) EXPECT_NE(item.code, "eval-draw-beyond-cap") << item.str();
    for (const auto& g : stored) EXPECT_EQ(g.max_runs, cap) << sc.name;
  }
}

// Stored analysis draws are replayed in turn: seed k with draw (k - 1) mod n, each with its own
// guides and profiling runs; the report says how often each hypothesis was confirmed. A draw
// written before verdicts were recorded counts its guides as confirmed; a stored draw is not
// analysed again, and a broken one ends the draws read.
TEST(Guidance, DrawsAreReplayedInTurnAndTheirConfirmationsReported) {
  const Scenario& s = scenario("gomp_spin_beside_tbb");
  fs::path dir = fs::temp_directory_path() / ("syspilot-draws-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string spin = R"({"id": "spin_interference:libgomp>onetbb", "kind": "spin_interference", "weight": 2,
      "constraint": "", "controls": ["GOMP_SPINCOUNT", "OMP_WAIT_POLICY"], "remedies": [{"OMP_WAIT_POLICY": "passive"}]})";
  // Draw 1 predates verdicts; draw 2 confirmed nothing (two profiling runs); draw 3 the spin.
  std::ofstream(dir / "gomp_spin_beside_tbb.analysis.json")
      << R"({"profiling_runs": 3, "default_runs": 2, "note": "first", "guides": [)" << spin << "]}";
  std::ofstream(dir / "gomp_spin_beside_tbb.analysis-2.json")
      << R"({"profiling_runs": 2, "default_runs": 2, "note": "second", "guides": [],
            "hypotheses": [{"id": "spin_interference:libgomp>onetbb", "verdict": "refuted"},
                           {"id": "corun_oversubscription:libgomp>onetbb", "verdict": "unknown"}]})";
  std::ofstream(dir / "gomp_spin_beside_tbb.analysis-3.json")
      << R"({"profiling_runs": 4, "default_runs": 2, "note": "third", "guides": [)" << spin << R"(],
            "hypotheses": [{"id": "spin_interference:libgomp>onetbb", "verdict": "confirmed"},
                           {"id": "corun_oversubscription:libgomp>onetbb", "verdict": "refuted"}]})";
  std::ofstream(dir / "gomp_spin_beside_tbb.analysis-5.json") << "{}";  // after a gap: not read
  auto before = fs::last_write_time(dir / "gomp_spin_beside_tbb.analysis-3.json");
  const char* old = std::getenv("SYSPILOT_EVAL_DATA");
  std::string saved = old ? old : "";
  ::setenv("SYSPILOT_EVAL_DATA", dir.c_str(), 1);
  Diagnostics d;
  auto draws = analysis_draws(s, d);
  auto again = draw_analyses(s, 3, false, d);  // all three stored: nothing runs
  std::ofstream(dir / "gomp_spin_beside_tbb.analysis-4.json") << "not json";
  Diagnostics broken;
  auto upto = analysis_draws(s, broken);
  old ? (void)::setenv("SYSPILOT_EVAL_DATA", saved.c_str(), 1) : (void)::unsetenv("SYSPILOT_EVAL_DATA");
  EXPECT_EQ(fs::last_write_time(dir / "gomp_spin_beside_tbb.analysis-3.json"), before);
  ASSERT_EQ(draws.size(), 3u) << d.str();
  EXPECT_EQ(again.size(), 3u);
  EXPECT_EQ(upto.size(), 3u);
  EXPECT_NE(broken.str().find("unreadable analysis"), std::string::npos) << broken.str();
  EXPECT_EQ(draws[0].confirmed, (std::vector<std::string>{"spin_interference:libgomp>onetbb"}));
  EXPECT_TRUE(draws[1].confirmed.empty());
  EXPECT_EQ(draws[1].hypotheses.size(), 2u);

  std::map<std::string, Table> tables{{s.name, table(s.name)}};
  CompareOptions o;
  o.budgets = {5, 10};
  o.seeds = 6;
  o.tuners = {"syspilot"};
  Diagnostics cd;
  Comparison c = compare_draws({s}, tables, o, [&](const Scenario&) { return draws; }, cd);
  ASSERT_EQ(c.scenarios.size(), 1u) << cd.str();
  const ScenarioResult& r = c.scenarios[0];
  EXPECT_EQ(r.draws, 3);
  EXPECT_EQ(r.guides_note.rfind("first;", 0), 0u) << r.guides_note;
  EXPECT_EQ(r.confirmations.at("spin_interference:libgomp>onetbb"), std::make_pair(3, 2));
  EXPECT_EQ(r.confirmations.at("corun_oversubscription:libgomp>onetbb"), std::make_pair(2, 0));
  ASSERT_EQ(r.sessions.size(), 6u);
  const std::vector<int> profiling{3, 2, 4};
  for (const auto& ses : r.sessions) {
    EXPECT_EQ(ses.draw, static_cast<int>((ses.seed - 1) % 3)) << ses.seed;
    EXPECT_EQ(ses.profiling_runs, profiling[ses.draw]) << ses.seed;
  }
  std::string md = write_report(c, (dir / "r.md").string());
  EXPECT_NE(md.find("## Analysis draws"), std::string::npos);
  EXPECT_NE(md.find("| gomp_spin_beside_tbb | 3 | spin_interference:libgomp>onetbb 2/3 | "
                    "corun_oversubscription:libgomp>onetbb 2/3, spin_interference:libgomp>onetbb 1/3 |"),
            std::string::npos)
      << md;
  fs::remove_all(dir);
}

// ---- the peers' space: screened controls -----------------------------------------------------

// A value is inert when every run of it lies within the default's runs widened by the
// tolerance on both sides; no run, or no default, is no evidence.
TEST(Screen, InertIsTheDefaultsRangeWidenedByTheTolerance) {
  const std::vector<double> def = {1.0, 1.02};
  EXPECT_TRUE(inert({1.01}, def, 0.05));
  EXPECT_TRUE(inert({0.951, 1.07}, def, 0.05));
  EXPECT_FALSE(inert({1.072}, def, 0.05));        // above 1.02 x 1.05
  EXPECT_FALSE(inert({0.949}, def, 0.05));        // below 1.0 x 0.95
  EXPECT_FALSE(inert({1.01, 1.5}, def, 0.05));    // one run outside is enough
  EXPECT_TRUE(inert({1.3}, def, 0.3));
  EXPECT_FALSE(inert({}, def, 0.05));
  EXPECT_FALSE(inert({1.0}, {}, 0.05));

  // The screen's default against the table's: a drift beyond the tolerance is reported.
  Screen sc;
  sc.table_default = 1.0;
  sc.tolerance = 0.1;
  EXPECT_FALSE(sc.default_drifted()) << "no default run yet";
  sc.default_samples = {1.05, 0.95, 1.08};
  EXPECT_FALSE(sc.default_drifted());
  sc.default_samples = {3.3, 3.4, 0.4};
  EXPECT_TRUE(sc.default_drifted());
  sc.default_samples = {0.8};
  EXPECT_TRUE(sc.default_drifted());

  // A value is judged against the default's runs around it in time.
  sc.default_samples = {1.0, 1.5, 2.0};
  ScreenedValue v;
  EXPECT_EQ(neighbours(sc, v), sc.default_samples) << "place not recorded: every default run";
  v.after_default = 0;
  EXPECT_EQ(neighbours(sc, v), (std::vector<double>{1.0, 1.5}));
  v.after_default = 2;
  EXPECT_EQ(neighbours(sc, v), (std::vector<double>{2.0}));
  v.after_default = 7;
  EXPECT_EQ(neighbours(sc, v), sc.default_samples);
}

// The candidates are the env controls of the scenario's contracts that the table does not
// vary, at the space builder's domains for the scenario's machine: thread counts follow the
// CPU count, strings and API setters are not offered.
TEST(Screen, CandidatesAreTheContractsEnvControlsBeyondTheTable) {
  auto candidates = [](int cpus) {
    tuner::MachineFacts m = tuner::MachineFacts::detect();
    m.ncpus = m.ncores = cpus;
    Diagnostics d;
    auto all = load_scenarios(scenarios_dir(), d, m);
    auto s = std::find_if(all.begin(), all.end(), [](const Scenario& x) { return x.name == "pinning_collision"; });
    EXPECT_NE(s, all.end());
    auto c = screen_candidates(*s, d);
    EXPECT_FALSE(d.has_errors()) << d.str();
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& x : c) {
      EXPECT_EQ(x.library, "libgomp") << x.name;
      for (const auto& v : x.values) out[x.name].push_back(v.value);
    }
    return std::make_pair(*s, out);
  };
  auto [s2, two] = candidates(2);
  for (const auto& cs : s2.space) EXPECT_EQ(two.count(cs.name), 0u) << cs.name << " is in the table";
  EXPECT_EQ(two.count("GOMP_CPU_AFFINITY"), 0u) << "a string has no domain to search";
  EXPECT_EQ(two.count("omp_set_num_threads"), 0u) << "API setters are not the user's environment";
  EXPECT_EQ(two["GOMP_SPINCOUNT"], (std::vector<std::string>{"0", "100", "1000", "30000", "300000", "3000000"}));
  EXPECT_EQ(two["OMP_THREAD_LIMIT"], (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(two["OMP_DYNAMIC"], (std::vector<std::string>{"false", "true"}));
  auto [s16, sixteen] = candidates(16);
  EXPECT_EQ(sixteen["OMP_THREAD_LIMIT"], (std::vector<std::string>{"1", "2", "4", "8", "16"}));
  EXPECT_EQ(sixteen["GOMP_SPINCOUNT"], two["GOMP_SPINCOUNT"]);
}

// The peers' space adds each screened control with its inert values only; replay answers
// such a configuration by projection (the table's entry without it), a session's incumbent is
// always a table entry, and the report says what the peers searched.
TEST(Screen, PeersSearchInertValuesAnsweredByProjection) {
  const Scenario& s = scenario(kLiveScenario);
  const Table& t = table(s.name);
  Screen sc;
  sc.scenario = s.name;
  sc.args = s.args;
  sc.tolerance = 0.1;
  sc.controls.push_back({"GOMP_SPINCOUNT", "libgomp", {{"0", {1}, {0}, "", true}, {"1000", {9}, {0}, "", false},
                                                       {"3000000", {1}, {0}, "", true}}});
  sc.controls.push_back({"OMP_THREAD_LIMIT", "libgomp", {{"1", {9}, {0}, "", false}, {"2", {9}, {0}, "", false}}});
  sc.controls.push_back({"OMP_DYNAMIC", "libgomp", {{"true", {}, {}, "exit 1", false}, {"false", {1}, {0}, "", true}}});

  std::vector<std::string> projected;
  tuner::Space peers = peer_space(s, &sc, &projected);
  EXPECT_EQ(projected, (std::vector<std::string>{"GOMP_SPINCOUNT", "OMP_DYNAMIC"}));
  ASSERT_EQ(peers.params.size(), s.space.size() + 2);
  ASSERT_TRUE(peers.find("GOMP_SPINCOUNT"));
  EXPECT_EQ(peers.find("GOMP_SPINCOUNT")->values, (std::vector<std::string>{"", "0", "3000000"}));
  EXPECT_TRUE(peers.find("GOMP_SPINCOUNT")->numeric);
  EXPECT_EQ(peers.find("OMP_DYNAMIC")->values, (std::vector<std::string>{"", "false"}));
  EXPECT_FALSE(peers.find("OMP_THREAD_LIMIT")) << "no inert value: not offered";
  EXPECT_EQ(peer_space(s, nullptr).params.size(), s.space.size());

  const Entry* best = t.best_entry();
  ASSERT_TRUE(best && !best->samples.empty());
  Config c = assignment(s, best->config);
  c["GOMP_SPINCOUNT"] = "3000000";
  ReplayObjective plain(s, t, 5), projecting(s, t, 5, projected);
  EXPECT_FALSE(plain.evaluate(c).ok) << "without projection the configuration is not in the table";
  tuner::Measurement m = projecting.evaluate(c);
  ASSERT_TRUE(m.ok) << m.failure;
  EXPECT_NE(std::find(best->samples.begin(), best->samples.end(), m.value), best->samples.end());

  std::map<std::string, Table> tables{{s.name, t}};
  std::map<std::string, Screen> screens{{s.name, sc}};
  CompareOptions o;
  o.budgets = {5, 30};
  o.seeds = 4;
  o.tuners = {"random", "syspilot"};
  o.screens = &screens;
  Diagnostics d;
  Comparison cmp = compare({s}, tables, o, [](const Scenario&) { return Guidance{}; }, d);
  ASSERT_EQ(cmp.scenarios.size(), 1u) << d.str();
  const ScenarioResult& r = cmp.scenarios[0];
  EXPECT_EQ(r.peer_controls, s.space.size() + 2);
  EXPECT_EQ(r.peer_configurations, peers.size());
  EXPECT_NE(r.peer_note.find("2 screened inert"), std::string::npos) << r.peer_note;
  EXPECT_NE(r.peer_note.find("GOMP_SPINCOUNT (2 of 3)"), std::string::npos) << r.peer_note;
  EXPECT_NE(r.peer_note.find("left out (the table would have to vary them): OMP_THREAD_LIMIT"), std::string::npos)
      << r.peer_note;
  for (const auto& session : r.sessions) {
    ASSERT_TRUE(session.error.empty()) << session.error;
    EXPECT_TRUE(t.find(session.best)) << session.tuner << " " << tuner::to_string(session.best);
    EXPECT_EQ(session.best.count("GOMP_SPINCOUNT") + session.best.count("OMP_DYNAMIC"), 0u);
    EXPECT_LE(session.runs, 30);
  }
  std::string report_path = (fs::temp_directory_path() / ("syspilot-screen-report-" + std::to_string(getpid()) + ".md")).string();
  cmp.freeze = load_freeze();
  write_report(cmp, report_path);
  EXPECT_NE(read(report_path).find("Space of the general-purpose tuners (" + std::to_string(peers.size()) +
                                   " configurations): the general-purpose tuners search"),
            std::string::npos);
  for (const auto& f : fs::directory_iterator(fs::temp_directory_path()))
    if (f.path().filename().string().rfind("syspilot-screen-report-" + std::to_string(getpid()), 0) == 0) fs::remove(f);
}

// A live screen of a program where one value of one control is slow: that value is not inert,
// the others of its control are, the runs are kept beside the table and a second screen runs
// nothing again; a malformed screen is an error that leaves the file as it was.
TEST(Screen, LiveScreenFindsTheValueThatMattersAndResumes) {
  fs::path dir = fs::temp_directory_path() / ("syspilot-screen-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "scenarios" / "slow_limit");
  {
    std::ofstream(dir / "scenarios" / "slow_limit" / "scenario.json") << R"({
      "name": "slow_limit", "program": "/bin/sh",
      "args": ["-c", "if [ \"$OMP_THREAD_LIMIT\" = 1 ]; then sleep 0.9; else sleep 0.25; fi"],
      "libraries": ["libgomp"], "default": {},
      "space": [{"control": "OMP_WAIT_POLICY", "library": "libgomp", "kind": "env", "values": ["", "passive"]}],
      "expert": ["OMP_WAIT_POLICY"], "timeout_s": 5})";
  }
  Diagnostics d;
  auto loaded = load_scenarios((dir / "scenarios").string(), d);
  ASSERT_EQ(loaded.size(), 1u) << d.str();
  Scenario s = loaded[0];
  MeasureOptions o;
  o.max_load = 1000;  // sleeps: the wall time does not depend on other work on the machine
  // The table as measured on a busy machine (spawning a shell can take 0.1 s more there): its
  // default's runs and its noise set the band.
  Table t;
  t.scenario = s.name;
  t.repeats = 2;
  t.entries.push_back(Entry{normalise(s, {}), {0.24, 0.36}, {0, 0}, 0, "", 0});
  t.entries.push_back(Entry{normalise(s, {{"OMP_WAIT_POLICY", "passive"}}), {0.25, 0.37}, {0, 0}, 0, "", 0});
  std::string path = (dir / "slow_limit.screen.json").string();
  Screen sc = screen(s, t, path, o, d);
  ASSERT_FALSE(d.has_errors()) << d.str();
  const ScreenedControl* limit = sc.find("OMP_THREAD_LIMIT");
  ASSERT_TRUE(limit);
  ASSERT_EQ(limit->values.size(), 2u);
  EXPECT_EQ(limit->values[0].value, "1");
  EXPECT_FALSE(limit->values[0].inert) << "0.9 s against a default of 0.25 s";
  EXPECT_GE(limit->values[0].samples.at(0), 0.9);
  EXPECT_TRUE(limit->values[1].inert) << limit->values[1].samples.at(0) << " s";
  EXPECT_FALSE(sc.find("OMP_WAIT_POLICY")) << "the table varies it";
  EXPECT_GE(sc.default_samples.size(), 2u);
  size_t values = 0;
  int last = -1;
  for (const auto& c : sc.controls)
    for (const auto& v : c.values) {
      ++values;
      EXPECT_GE(v.after_default, last) << "the default run before each value, in the order they ran";
      EXPECT_LT(v.after_default, static_cast<int>(sc.default_samples.size()));
      EXPECT_GE(v.after_default, 0);
      last = v.after_default;
    }
  EXPECT_GE(sc.default_samples.size(), 1 + (values - 1) / 4) << "a default run every four runs";

  Screen back;
  ASSERT_TRUE(load_screen(path, back, d)) << d.str();
  EXPECT_EQ(back.controls.size(), sc.controls.size());
  EXPECT_EQ(back.find("OMP_THREAD_LIMIT")->values[0].samples, limit->values[0].samples);
  EXPECT_EQ(back.find("OMP_THREAD_LIMIT")->values[0].outside_load.size(), 1u);
  EXPECT_EQ(back.default_load.size(), back.default_samples.size());
  const std::string before = read(path);
  Screen again = screen(s, t, path, o, d);
  EXPECT_EQ(again.default_samples.size(), sc.default_samples.size()) << "nothing left to screen, nothing run";
  EXPECT_EQ(read(path), before);

  std::vector<std::string> projected;
  tuner::Space peers = peer_space(s, &back, &projected);
  ASSERT_TRUE(peers.find("OMP_THREAD_LIMIT"));
  EXPECT_EQ(peers.find("OMP_THREAD_LIMIT")->values, (std::vector<std::string>{"", "2"}));

  std::ofstream(path, std::ios::trunc) << "{\"scenario\": \"slow_limit\", \"controls\": 3}";
  const std::string bad = read(path);
  Diagnostics bd;
  screen(s, t, path, o, bd);
  EXPECT_TRUE(bd.has_errors());
  EXPECT_NE(bd.str().find("eval-bad-screen"), std::string::npos) << bd.str();
  EXPECT_EQ(read(path), bad);
  fs::remove_all(dir);
}
