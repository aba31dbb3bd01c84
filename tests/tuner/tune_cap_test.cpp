// Adaptive capping: the cap computed from the incumbent, the limit each run is given, capped
// trials charged and never the incumbent; and on real processes, a configuration that hangs is
// stopped a few times the default's time in, through the library and through `syspilot tune`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tuner/measure.h"
#include "tuner/run.h"
#include "tuner/space.h"

using namespace syspilot::tuner;

namespace {

using Clock = std::chrono::steady_clock;

Param param(const std::string& n, std::vector<std::string> values, std::string def) {
  Param p;
  p.name = n;
  p.values = std::move(values);
  p.default_value = std::move(def);
  p.numeric = true;
  return p;
}

Trial trial(int index, bool ok, double value, std::vector<double> walls) {
  Trial t;
  t.index = index;
  t.config = {{"X", std::to_string(index)}};
  t.m.ok = ok;
  t.m.value = value;
  t.m.repeats = static_cast<int>(std::max<size_t>(1, walls.size()));
  if (ok) t.m.samples.assign(walls.size(), value);
  t.m.walls = std::move(walls);
  return t;
}

// Answers from a table of wall times without running anything, and records the limit each run
// was given. It cannot stop a run early: tune() caps a run longer than its limit afterwards.
struct Recorded : Objective {
  std::map<std::string, double> seconds;  // X -> the run's wall time ("" = the default)
  std::vector<double> limits;
  std::map<std::string, int> runs;
  Measurement evaluate(const Config& c) override { return evaluate_within(c, 0); }
  Measurement evaluate_within(const Config& c, double limit_s) override {
    std::string x = c.count("X") ? c.at("X") : "";
    limits.push_back(limit_s);
    ++runs[x];
    Measurement m;
    m.ok = true;
    m.repeats = 1;
    m.value = seconds.at(x);
    m.samples = {m.value};
    m.walls = {m.value};
    return m;
  }
};

Space x_space() {
  Space s;
  s.params = {param("X", {"2", "3"}, "1")};
  return s;
}

}  // namespace

// The cap is factor x the best successful trial's median wall time + slack, whatever the
// objective's value measures; no cap without such a trial, or with factor 0.
TEST(TuneCap, ComputedFromTheIncumbentsMedianWallTime) {
  std::vector<Trial> ts = {trial(0, true, 2.0, {1.0, 3.0, 2.0}),  // not the best
                           trial(1, true, 1.0, {0.5, 0.9, 0.7}),  // the incumbent: median wall 0.7
                           trial(2, false, 0, {})};               // failed
  Trial capped = trial(3, false, 0.1, {});
  capped.m.capped = true;
  capped.m.lower_bound = 0.1;
  ts.push_back(capped);  // a capped trial is never the incumbent, whatever its value

  RunCap c = run_cap(ts, 3, 1);
  EXPECT_EQ(c.incumbent, 1);
  EXPECT_DOUBLE_EQ(c.incumbent_s, 0.7);
  EXPECT_DOUBLE_EQ(c.limit_s, 3 * 0.7 + 1);
  EXPECT_EQ(capped_text(c), "capped at 3.1 s (3x the incumbent's 0.7 s + 1 s)");
  EXPECT_DOUBLE_EQ(run_cap(ts, 2.5, 0).limit_s, 2.5 * 0.7);

  // A metric objective: the value is no time; the cap still follows the wall times.
  std::vector<Trial> metric = {trial(0, true, -400, {0.2}), trial(1, true, -900, {0.3})};
  EXPECT_DOUBLE_EQ(run_cap(metric, 3, 1).limit_s, 3 * 0.3 + 1);

  EXPECT_EQ(run_cap(ts, 0, 1).limit_s, 0);  // --cap-factor 0: off
  EXPECT_EQ(run_cap({}, 3, 1).limit_s, 0);  // nothing measured yet: the first run has no cap
  EXPECT_EQ(run_cap({trial(0, false, 0, {})}, 3, 1).limit_s, 0);
  // The incumbent's wall times unknown (a trial stored without them): no cap.
  EXPECT_EQ(run_cap({trial(0, true, 1.0, {})}, 3, 1).limit_s, 0);
}

// tune() gives the first run no limit and every later run the cap of the moment; a run longer
// than its cap is capped: charged one run, no repeats, never the best; the rest goes on.
TEST(TuneCap, LaterRunsGetTheCapAndACappedTrialIsChargedOnce) {
  Space s = x_space();
  Recorded obj;
  obj.seconds = {{"", 0.5}, {"2", 10.0}, {"3", 0.4}};
  auto st = make_strategy("grid", s, {});
  TuneOptions o;
  o.budget = 20;
  std::vector<std::string> lines;
  o.progress = [&](const std::string& l) { lines.push_back(l); };
  TuneResult r = tune(*st, obj, o);

  ASSERT_GE(obj.limits.size(), 4u);
  EXPECT_EQ(obj.limits[0], 0);  // the reference's first run: only the objective's timeout
  // The grid's runs are capped by the reference (0.5 s); once the grid is spent, the
  // re-measurement of the leader X=3 by X=3 itself (0.4 s): the cap follows the incumbent.
  size_t grid_runs = 0;
  for (const auto& t : r.trials)
    if (t.strategy != "re-measure") grid_runs += static_cast<size_t>(t.m.repeats);
  ASSERT_LE(grid_runs, obj.limits.size());
  for (size_t i = 1; i < grid_runs; ++i) EXPECT_DOUBLE_EQ(obj.limits[i], 3 * 0.5 + 1) << "run " << i;
  for (size_t i = grid_runs; i < obj.limits.size(); ++i) EXPECT_DOUBLE_EQ(obj.limits[i], 3 * 0.4 + 1) << "run " << i;

  const Trial* slow = nullptr;
  for (const auto& t : r.trials)
    if (t.config.count("X") && t.config.at("X") == "2") slow = &t;
  ASSERT_NE(slow, nullptr);
  EXPECT_FALSE(slow->m.ok);
  EXPECT_TRUE(slow->m.capped);
  EXPECT_EQ(slow->m.repeats, 1);
  EXPECT_EQ(obj.runs["2"], 1);
  EXPECT_DOUBLE_EQ(slow->m.lower_bound, 2.5);
  EXPECT_DOUBLE_EQ(slow->m.value, 2.5);
  EXPECT_EQ(slow->m.failure, "capped at 2.5 s (3x the incumbent's 0.5 s + 1 s)");
  EXPECT_EQ(r.trials[slow->index + 1].runs_before, slow->runs_before + 1);
  EXPECT_EQ(r.capped, 1);
  ASSERT_GE(r.best, 0);
  EXPECT_EQ(r.trials[r.best].config.at("X"), "3");
  int runs = 0;
  for (const auto& [x, n] : obj.runs) runs += n;
  EXPECT_EQ(r.runs, runs);
  bool said = false;
  for (const auto& l : lines) said = said || l.find("X=2  capped at 2.5 s (3x the incumbent's 0.5 s + 1 s)") != std::string::npos;
  EXPECT_TRUE(said);

  // --cap-factor 0: no limit is given and the slow configuration is a slow success.
  Recorded off;
  off.seconds = obj.seconds;
  auto st2 = make_strategy("grid", s, {});
  TuneOptions o2;
  o2.budget = 20;
  o2.cap_factor = 0;
  TuneResult r2 = tune(*st2, off, o2);
  for (double l : off.limits) EXPECT_EQ(l, 0);
  EXPECT_EQ(r2.capped, 0);
  for (const auto& t : r2.trials) {
    EXPECT_TRUE(t.m.ok) << to_string(t.config);
    EXPECT_FALSE(t.m.capped);
  }
}

namespace {

// What one live session did: trials, and how long each took from the end of the one before.
struct Live {
  TuneResult result;
  std::vector<double> took;  // per trial, seconds
  std::vector<std::string> lines;
  double total_s = 0;
};

// Grid over NAP; the default naps 0.2 s, NAP=600 hangs. 60 s timeout, as the CLI's default.
Live tune_naps(const std::vector<std::string>& argv) {
  Space s;
  s.params = {param("NAP", {"600", "0.1", "0.3"}, "0.2")};
  ObjectiveSpec spec;
  spec.argv = argv;
  spec.timeout_s = 60;
  LiveObjective obj(s, spec);
  auto st = make_strategy("grid", s, {});
  TuneOptions o;
  o.budget = 8;
  Live out;
  auto t0 = Clock::now(), last = t0;
  o.on_trial = [&](const Trial&) {
    auto now = Clock::now();
    out.took.push_back(std::chrono::duration<double>(now - last).count());
    last = now;
  };
  o.progress = [&](const std::string& l) {
    out.lines.push_back(l);
    std::fprintf(stderr, "  %s\n", l.c_str());
  };
  out.result = tune(*st, obj, o);
  out.total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

// The hanging trial: capped at 3x the incumbent's median wall time + 1 s, stopped within half a
// second of that (far below the 60 s timeout), charged one run; the session goes on and ends
// with the fast configuration as best.
void expect_hang_capped(const Live& l) {
  const TuneResult& r = l.result;
  ASSERT_EQ(l.took.size(), r.trials.size());
  int hang = -1;
  for (const auto& t : r.trials)
    if (t.config.count("NAP") && t.config.at("NAP") == "600") hang = t.index;
  ASSERT_GE(hang, 1);
  const Trial& h = r.trials[hang];
  std::vector<Trial> before(r.trials.begin(), r.trials.begin() + hang);
  RunCap cap = run_cap(before, 3, 1);
  ASSERT_GT(cap.incumbent_s, 0.15);
  EXPECT_FALSE(h.m.ok);
  EXPECT_TRUE(h.m.capped) << h.m.failure;
  EXPECT_EQ(h.m.repeats, 1);
  EXPECT_DOUBLE_EQ(h.m.lower_bound, cap.limit_s);
  EXPECT_EQ(h.m.failure.rfind("capped at ", 0), 0u) << h.m.failure;
  EXPECT_NE(h.m.failure.find("(3x the incumbent's "), std::string::npos) << h.m.failure;
  EXPECT_LT(l.took[hang], 3 * cap.incumbent_s + 1 + 0.5)
      << "the capped run was not stopped at its cap of " << cap.limit_s << " s";
  EXPECT_LT(l.took[hang], 10);
  EXPECT_LT(l.total_s, 20);
  ASSERT_GT(r.trials.size(), static_cast<size_t>(hang + 1)) << "the session did not go on";
  EXPECT_EQ(r.trials[hang + 1].runs_before, h.runs_before + 1);
  EXPECT_EQ(r.capped, 1);
  ASSERT_GE(r.best, 0);
  EXPECT_EQ(r.trials[r.best].config.at("NAP"), "0.1");
  bool said = false;
  for (const auto& line : l.lines) said = said || line.find("NAP=600  capped at ") != std::string::npos;
  EXPECT_TRUE(said);
}

}  // namespace

TEST(TuneCapLive, HangingConfigurationIsCappedAndTheSessionGoesOn) {
  Live l = tune_naps({"/bin/sh", "-c", "sleep \"${NAP:-0.2}\""});
  expect_hang_capped(l);
}

// With a metric read from the output as the objective, the cap still counts wall time: here
// the metric is in the hundreds (3x it would be no cap at all), the runs take 0.2 s.
TEST(TuneCapLive, MetricObjectiveIsCappedByWallTime) {
  Live l;
  {
    Space sp;
    sp.params = {param("NAP", {"600", "0.1", "0.3"}, "0.2")};
    ObjectiveSpec spec;
    spec.argv = {"/bin/sh", "-c", "n=\"${NAP:-0.2}\"; sleep \"$n\"; [ \"$n\" = 0.1 ] && echo 'cost 100' || echo 'cost 300'"};
    spec.timeout_s = 60;
    spec.metric_regex = "cost ([0-9.]+)";
    LiveObjective obj(sp, spec);
    auto st = make_strategy("grid", sp, {});
    TuneOptions o;
    o.budget = 8;
    auto t0 = Clock::now(), last = t0;
    o.on_trial = [&](const Trial&) {
      auto now = Clock::now();
      l.took.push_back(std::chrono::duration<double>(now - last).count());
      last = now;
    };
    o.progress = [&](const std::string& line) { l.lines.push_back(line); };
    l.result = tune(*st, obj, o);
    l.total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  expect_hang_capped(l);
  EXPECT_DOUBLE_EQ(l.result.speedup, 3.0);
  for (const auto& t : l.result.trials)
    if (t.m.ok) {
      ASSERT_FALSE(t.m.walls.empty());
      EXPECT_LT(t.m.walls.front(), 5);
    }
}

#ifdef SYSPILOT_CLI
// `syspilot tune`: the hanging configuration is reported "capped at" in the progress, counted in
// the summary, and the session ends with the fast configuration. With --cap-factor 0 only the
// timeout stops it, and it is a failed trial.
TEST(TuneCapLive, CliReportsCappedTrials) {
  auto dir = std::filesystem::temp_directory_path() / ("syspilot-cap-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto tune_cli = [&](std::vector<std::string> extra) {
    RunSpec rs;
    rs.argv = {SYSPILOT_CLI, "tune", "--db", (dir / "t.db").string(), "--budget", "8", "--max-repeats", "1",
               "--strategy", "grid", "--verify", "0", "--add", "NAP=600,0.1"};
    rs.argv.insert(rs.argv.end(), extra.begin(), extra.end());
    for (std::string a : {"--", "/bin/sh", "-c", "sleep \"${NAP:-0.2}\""}) rs.argv.push_back(a);
    rs.timeout_s = 120;
    rs.sample_interval_s = 0;
    rs.perf = false;
    return run(rs);
  };
  auto t0 = Clock::now();
  RunResult r = tune_cli({"--cap-factor", "3", "--cap-slack", "1"});
  double took = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  EXPECT_LT(took, 40) << r.stderr_text;
  EXPECT_TRUE(std::regex_search(r.stderr_text, std::regex("NAP=600  capped at [0-9.]+ s \\(3x the incumbent's [0-9.]+ s \\+ 1 s\\)")))
      << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("NAP=0.1"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("trials (1 capped)"), std::string::npos) << r.stdout_text;

  RunResult off = tune_cli({"--cap-factor", "0", "--timeout", "3"});
  ASSERT_TRUE(off.ok()) << off.failure << off.stderr_text;
  EXPECT_NE(off.stderr_text.find("NAP=600  FAILED: timeout after 3 s"), std::string::npos) << off.stderr_text;
  EXPECT_NE(off.stdout_text.find("trials (0 capped)"), std::string::npos) << off.stdout_text;
  std::filesystem::remove_all(dir);
}
#endif  // SYSPILOT_CLI
