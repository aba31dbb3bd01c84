// The Slurm executor without Slurm: per-node references and their scaling, the retry of a job
// the cluster lost, the budget's last run kept on the reference node, and the spec and result
// files, on a fake cluster that "runs" each job at once on a node it picks. The real cluster's
// tests are tests/cluster/slurm_tune_test.sh.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tuner/analyze.h"
#include "tuner/slurm.h"

namespace syspilot::tuner {
namespace {

namespace fs = std::filesystem;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Nodes "a" (speed 1) and "b" (twice as slow); a job's value is its configuration's base value
// times its node's slowness. Jobs go to the nodes in turn unless pinned or excluded; `lose` names
// job numbers (1-based) that end NODE_FAIL without a result.
class FakeCluster : public Cluster {
 public:
  std::vector<std::string> nodes = {"a", "b"};
  std::map<std::string, double> slowness = {{"a", 1}, {"b", 2}};
  std::map<std::string, double> base = {{"", 1.0}, {"X=1", 0.5}, {"X=2", 0.8}};
  std::set<int> lose;
  std::set<int> vanish;  // jobs (1-based) the scheduler forgets without a result
  // Jobs (1-based) whose run fails (SIGTERM): killed as their node went down (NODE_FAIL), or a
  // configuration that crashes on its own (FAILED).
  std::set<int> killed, crashed;
  std::vector<JobRequest> requests;
  std::map<std::string, JobStatus> states;

  std::string submit(const JobRequest& r) override {
    requests.push_back(r);
    const std::string id = std::to_string(requests.size());
    std::string node = r.nodelist;
    for (size_t i = 0; node.empty(); ++i) {
      const std::string& n = nodes[(requests.size() - 1 + i) % nodes.size()];
      if (n != r.exclude) node = n;
    }
    if (vanish.count(static_cast<int>(requests.size()))) return id;
    if (lose.count(static_cast<int>(requests.size()))) {
      states[id] = {"NODE_FAIL", node, "None"};
      return id;
    }
    TrialSpec spec = trial_spec_from_json(read(r.spec_path));
    std::string key;
    for (const auto& [k, v] : spec.config) key += k + "=" + v;
    TrialResult res;
    const int n = static_cast<int>(requests.size());
    if (killed.count(n) || crashed.count(n)) {
      res.m.repeats = 1;
      res.m.failure = "signal 15 (SIGTERM)";
      res.m.node = node;
      std::ofstream(r.result_path) << trial_result_to_json(res);
      states[id] = {killed.count(n) ? "NODE_FAIL" : "FAILED", node, "None"};
      return id;
    }
    res.m.ok = true;
    res.m.repeats = 1;
    res.m.value = base.at(key) * slowness.at(node);
    res.m.samples = {res.m.value};
    res.m.walls = {res.m.value};
    res.m.node = node;
    std::ofstream(r.result_path) << trial_result_to_json(res);
    states[id] = {"COMPLETED", node, "None"};
    return id;
  }
  JobStatus status(const std::string& job) override { return states[job]; }
};

struct SlurmFake : ::testing::Test {
  fs::path dir;
  FakeCluster cluster;
  Space space;
  std::vector<ClusterJob> submitted;
  std::vector<std::string> notes;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("syspilot-slurm-fake-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    Param p;
    p.name = "X";
    p.values = {"1", "2"};
    space.params = {p};
  }
  void TearDown() override { fs::remove_all(dir); }
  std::unique_ptr<SlurmObjective> objective() {
    ObjectiveSpec os;
    os.argv = {"/bin/true"};
    os.timeout_s = 30;
    auto o = std::make_unique<SlurmObjective>(cluster, space, os, dir.string());
    o->poll_s = 0;
    o->grace_s = 0;
    o->on_submit = [this](const ClusterJob& j) { submitted.push_back(j); };
    o->note = [this](const std::string& line) { notes.push_back(line); };
    return o;
  }
};

TEST(NodeReferences, ScalesToTheFirstNodesDefault) {
  NodeReferences r;
  r.record("a", 1.0);
  r.record("b", 2.0);
  r.record("a", 5.0);  // the first value measured stays the node's reference
  EXPECT_EQ(r.reference_node(), "a");
  EXPECT_DOUBLE_EQ(r.defaults().at("a"), 1.0);
  EXPECT_DOUBLE_EQ(r.scale("b", 1.6), 0.8);
  EXPECT_DOUBLE_EQ(r.scale("a", 0.7), 0.7);
  EXPECT_DOUBLE_EQ(r.scale("c", 0.7), 0.7);  // unknown: unchanged
  // Negated (maximised) metrics keep their sign: the ratio of two negative defaults is positive.
  NodeReferences m;
  m.record("a", -100);
  m.record("b", -50);
  EXPECT_DOUBLE_EQ(m.scale("b", -40), -80);
}

// A trial on a node whose default is unknown: one pinned run of the default there, charged to
// the trial, and the trial's value scaled to the reference node.
TEST_F(SlurmFake, NewNodeGetsItsDefaultMeasuredAndTheTrialScaled) {
  auto o = objective();
  Measurement ref = o->evaluate({});  // node a
  EXPECT_TRUE(ref.ok);
  EXPECT_EQ(ref.node, "a");
  Measurement x = o->evaluate({{"X", "1"}});  // node b: 0.5 x 2 measured
  ASSERT_TRUE(x.ok) << x.failure;
  EXPECT_EQ(x.node, "b");
  EXPECT_EQ(x.repeats, 2);  // the trial's run and b's default
  EXPECT_DOUBLE_EQ(x.value, 0.5);
  ASSERT_EQ(cluster.requests.size(), 3u);
  EXPECT_EQ(cluster.requests[2].nodelist, "b");
  EXPECT_EQ(submitted[2].kind, "reference");
  EXPECT_DOUBLE_EQ(o->references().defaults().at("b"), 2.0);
  // b's default known now: the next trial there costs one run.
  Measurement y = o->evaluate({{"X", "2"}});  // job 4: node b
  EXPECT_EQ(y.node, "b");
  EXPECT_EQ(y.repeats, 1);
  EXPECT_DOUBLE_EQ(y.value, 0.8);
  EXPECT_EQ(cluster.requests.size(), 4u);
}

// A job the cluster lost is resubmitted once, away from its node; its trial is not failed.
TEST_F(SlurmFake, LostJobIsRetriedOnceElsewhere) {
  cluster.lose = {2};
  auto o = objective();
  o->evaluate({});
  Measurement x = o->evaluate({{"X", "1"}});  // job 2 on b, lost; job 3 excludes b: a
  ASSERT_TRUE(x.ok) << x.failure;
  EXPECT_EQ(x.node, "a");
  EXPECT_EQ(x.repeats, 1);
  ASSERT_EQ(cluster.requests.size(), 3u);
  EXPECT_EQ(cluster.requests[2].exclude, "b");
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.front().find("NODE_FAIL"), std::string::npos) << notes.front();
  // Lost twice: an error that says what to check, not a failed trial.
  cluster.lose = {4, 5};
  EXPECT_THROW(o->evaluate({{"X", "2"}}), std::runtime_error);
}

// A run killed as its node went down writes a failed result (SIGTERM), but the job ends
// NODE_FAIL: the cluster's doing, resubmitted once like a job that wrote nothing. The same
// failure in a job that ended FAILED is the configuration's: a failed trial, not resubmitted.
TEST_F(SlurmFake, RunKilledWithItsNodeIsRetriedNotFailed) {
  cluster.killed = {2};
  auto o = objective();
  o->evaluate({});
  Measurement x = o->evaluate({{"X", "1"}});  // job 2 on b, killed with b; job 3 excludes b: a
  ASSERT_TRUE(x.ok) << x.failure;
  EXPECT_EQ(x.node, "a");
  ASSERT_EQ(cluster.requests.size(), 3u);
  EXPECT_EQ(cluster.requests[2].exclude, "b");
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.front().find("NODE_FAIL"), std::string::npos) << notes.front();
  cluster.crashed = {4};
  Measurement y = o->evaluate({{"X", "2"}});
  EXPECT_FALSE(y.ok);
  EXPECT_NE(y.failure.find("SIGTERM"), std::string::npos) << y.failure;
  EXPECT_EQ(cluster.requests.size(), 4u);
}

// A job the scheduler no longer knows, without a result: gone once unknown_s has passed, and
// resubmitted like a lost one.
TEST_F(SlurmFake, VanishedJobIsRetriedAfterItsSilence) {
  cluster.vanish = {1};
  auto o = objective();
  o->unknown_s = 0.1;
  const auto t0 = std::chrono::steady_clock::now();
  Measurement m = o->evaluate({});
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.1);
  ASSERT_TRUE(m.ok) << m.failure;
  EXPECT_EQ(cluster.requests.size(), 2u);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.front().find("left the queue"), std::string::npos) << notes.front();
}

// The budget's last run has no room for a new node's reference: it runs on the reference node.
TEST_F(SlurmFake, LastRunOfTheBudgetStaysOnTheReferenceNode) {
  auto o = objective();
  o->evaluate({});
  o->plan({1, 1, 1, "test"});
  Measurement x = o->evaluate({{"X", "1"}});
  EXPECT_EQ(cluster.requests.back().nodelist, "a");
  EXPECT_EQ(x.repeats, 1);
  EXPECT_EQ(submitted.back().trial, 1);
}

// tune() over the fake, one run at a time and in batches: every job is a run of the budget, the
// node references' included, and the budget is never exceeded.
TEST_F(SlurmFake, TuneChargesEveryJobAndKeepsTheBudget) {
  auto o = objective();
  struct Grid : Strategy {
    std::vector<Config> todo = {{{"X", "1"}}, {{"X", "2"}}};
    std::string name() const override { return "grid"; }
    std::optional<Config> next(const std::vector<Trial>&) override {
      if (todo.empty()) return std::nullopt;
      Config c = todo.front();
      todo.erase(todo.begin());
      return c;
    }
  } grid;
  for (int budget : {3, 4, 5, 8}) for (int parallel : {1, 2}) {
    cluster.requests.clear();
    submitted.clear();
    auto fresh = objective();
    TuneOptions to;
    to.budget = budget;
    to.max_repeats = 1;
    to.parallel = parallel;
    grid.todo = {{{"X", "1"}}, {{"X", "2"}}};
    TuneResult r = tune(grid, *fresh, to);
    EXPECT_LE(r.runs, budget);
    EXPECT_EQ(static_cast<int>(cluster.requests.size()), r.runs) << "budget " << budget << ", parallel " << parallel;
    int repeats = 0;
    for (const auto& t : r.trials) repeats += t.m.repeats;
    EXPECT_EQ(repeats, r.runs);
    for (const auto& j : submitted) EXPECT_GE(j.trial, 0);
  }
}

TEST(TrialFiles, SpecAndResultRoundTrip) {
  TrialSpec s;
  Param p;
  p.name = "OMP_NUM_THREADS";
  p.values = {"1", "2"};
  s.space.params = {p};
  s.objective.argv = {"prog", "a b"};
  s.objective.timeout_s = 7;
  s.objective.metric_regex = "rate ([0-9.]+)";
  s.objective.maximize = true;
  s.objective.env = {{"K", "V"}};
  s.config = {{"OMP_NUM_THREADS", "2"}};
  s.limit_s = 1.5;
  s.reference_output = "warning\n";
  TrialSpec t = trial_spec_from_json(trial_spec_to_json(s));
  EXPECT_EQ(t.objective.argv, s.objective.argv);
  EXPECT_EQ(t.objective.metric_regex, s.objective.metric_regex);
  EXPECT_TRUE(t.objective.maximize);
  EXPECT_EQ(t.objective.env, s.objective.env);
  EXPECT_EQ(t.config, s.config);
  EXPECT_DOUBLE_EQ(t.limit_s, 1.5);
  EXPECT_EQ(t.reference_output, "warning\n");
  EXPECT_EQ(t.space.params.at(0).values, p.values);
  EXPECT_THROW(trial_spec_from_json("{\"space\": 1}"), std::runtime_error);
  EXPECT_THROW(trial_spec_from_json("not json"), std::runtime_error);

  TrialResult r;
  r.m.capped = true;
  r.m.lower_bound = 2.5;
  r.m.value = 2.5;
  r.m.failure = "capped at 2.5 s";
  r.m.repeats = 1;
  r.m.node = "node7";
  TrialResult q = trial_result_from_json(trial_result_to_json(r));
  EXPECT_FALSE(q.m.ok);
  EXPECT_TRUE(q.m.capped);
  EXPECT_DOUBLE_EQ(q.m.lower_bound, 2.5);
  EXPECT_EQ(q.m.node, "node7");
  EXPECT_THROW(trial_result_from_json("{\"ok\": true}"), std::runtime_error);
}

// The node's side runs the live objective: a failing configuration is a failed measurement
// with the same failure text as locally, and the result names this machine.
TEST(TrialFiles, RunTrialMeasuresAsLocally) {
  TrialSpec s;
  Param p;
  p.name = "MODE";
  p.values = {"ok", "crash"};
  s.space.params = {p};
  s.objective.argv = {"/bin/sh", "-c", "[ \"$MODE\" = crash ] && kill -SEGV $$; exit 0"};
  s.objective.timeout_s = 10;
  TrialResult ok = run_trial(s);
  EXPECT_TRUE(ok.m.ok) << ok.m.failure;
  EXPECT_FALSE(ok.m.node.empty());
  s.config = {{"MODE", "crash"}};
  TrialResult bad = run_trial(s);
  EXPECT_FALSE(bad.m.ok);
  LiveObjective live(s.space, s.objective);
  EXPECT_EQ(bad.m.failure, live.evaluate(s.config).failure);
}

// sbatch's command line: one node to itself, no requeue (a lost job is ours to retry), the time
// limit in whole minutes above the run's own, the user's arguments, and the job script with the
// trial-run command as its arguments.
TEST(SlurmCluster, SbatchArguments) {
  if (::access("/usr/bin/sbatch", X_OK) != 0) GTEST_FAIL() << "sbatch is missing: run scripts/setup.sh";
  SlurmOptions so;
  so.partition = "batch";
  so.args = {"--account=proj"};
  so.dir = "/shared/r";
  so.syspilot = "/opt/syspilot/bin/syspilot";
  SlurmCluster c(so);
  JobRequest r;
  r.spec_path = "/shared/r/s.json";
  r.result_path = "/shared/r/o.json";
  r.limit_s = 61;
  r.exclude = "n3";
  auto a = c.sbatch_argv(r);
  auto has = [&](const std::string& w) { return std::find(a.begin(), a.end(), w) != a.end(); };
  EXPECT_TRUE(has("--exclusive"));
  EXPECT_TRUE(has("-N1"));
  EXPECT_TRUE(has("--no-requeue"));
  EXPECT_TRUE(has("--time=3"));  // 61 s + 60 s margin: 3 minutes
  EXPECT_TRUE(has("--partition=batch"));
  EXPECT_TRUE(has("--exclude=n3"));
  EXPECT_TRUE(has("--account=proj"));
  EXPECT_TRUE(has("--output=/shared/r/job-%j.out"));
  const std::vector<std::string> job = {"/shared/r/syspilot-job.sh", "/opt/syspilot/bin/syspilot", "trial-run", "--spec",
                                        "/shared/r/s.json", "--out", "/shared/r/o.json"};
  EXPECT_EQ(std::vector<std::string>(a.end() - 7, a.end()), job);
}

}  // namespace
}  // namespace syspilot::tuner

namespace syspilot::tuner {
namespace {

// A cluster whose one job is the analysis: it answers with a stored analysis, or loses the job.
class AnalysisCluster : public Cluster {
 public:
  std::string answer;  // the analysis' JSON the node writes ("" : the job ends without one)
  std::vector<JobRequest> requests;
  std::string submit(const JobRequest& r) override {
    requests.push_back(r);
    if (!answer.empty()) std::ofstream(r.result_path) << answer;
    return std::to_string(requests.size());
  }
  JobStatus status(const std::string&) override { return {answer.empty() ? "NODE_FAIL" : "COMPLETED", "n1", "None"}; }
};

}  // namespace

// The analysis job's spec round-trips and is told from a trial spec; its result's hypotheses come
// back with their verdicts and evidence, so that guides() ranks them as on the node; a job that
// ends without a result is an error that says so.
TEST(SlurmAnalysis, VerdictsComeBackFromTheNode) {
  AnalysisSpec spec;
  spec.argv = {"/bin/prog", "3"};
  spec.source = "/src";
  spec.timeout_s = 7;
  spec.max_runs = 4;
  auto back = analysis_spec_from_json(analysis_spec_to_json(spec));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->argv, spec.argv);
  EXPECT_EQ(back->source, "/src");
  EXPECT_EQ(back->timeout_s, 7);
  EXPECT_EQ(back->max_runs, 4);
  EXPECT_FALSE(analysis_spec_from_json(R"({"space": {}, "objective": {}, "config": {}})"));
  EXPECT_THROW(analysis_spec_from_json(R"({"analysis": {"argv": []}})"), std::runtime_error);
  EXPECT_THROW(analysis_spec_from_json(R"({"analysis": {"argv": ["x"], "timeout_s": -1}})"), std::runtime_error);

  Analysis an;
  Hypothesis h;
  h.id = "spin_interference:a>b";
  h.kind = "spin_interference";
  h.controls = {"OMP_WAIT_POLICY"};
  h.remedies = {{{"OMP_WAIT_POLICY", "passive"}}};
  h.verdict = Verdict::Confirmed;
  h.evidence = {{"probe.cpu_ratio", 2.2, ">=", 1.15, true, ""}, {"cpu_util", std::nan(""), ">=", 0.5, false, ""}};
  Hypothesis r = h;
  r.id = "corun_oversubscription:a>b";
  r.verdict = Verdict::Refuted;
  an.hypotheses = {h, r};
  an.profiled = true;
  an.profile.default_runs.resize(2);
  an.profile.probes.resize(1);
  an.profile.probes[0].runs.resize(1);
  AnalysisCluster cluster;
  cluster.answer = to_json(an).dump();
  fs::path dir = fs::temp_directory_path() / ("syspilot-slurm-analysis-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  nlohmann::json j = analyse_on_node(cluster, dir.string(), spec, 100);
  ASSERT_EQ(cluster.requests.size(), 1u);
  EXPECT_EQ(cluster.requests[0].limit_s, 100);
  EXPECT_EQ(analysis_spec_from_json(read(cluster.requests[0].spec_path))->argv, spec.argv);
  auto hs = hypotheses_from_json(j);
  ASSERT_EQ(hs.size(), 2u);
  EXPECT_EQ(hs[0].verdict, Verdict::Confirmed);
  EXPECT_EQ(hs[1].verdict, Verdict::Refuted);
  EXPECT_TRUE(std::isnan(hs[0].evidence[1].value));
  EXPECT_EQ(profile_runs_from_json(j), 3);
  auto here = guides(an.hypotheses), there = guides(hs);
  ASSERT_EQ(there.size(), 1u);
  EXPECT_EQ(there[0].id, here[0].id);
  EXPECT_DOUBLE_EQ(there[0].weight, here[0].weight);
  EXPECT_EQ(there[0].remedies, here[0].remedies);

  cluster.answer.clear();
  try {
    analyse_on_node(cluster, dir.string(), spec, 100);
    ADD_FAILURE() << "a lost analysis job gave an analysis";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the analysis job 2 on n1 ended NODE_FAIL without a result"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(hypotheses_from_json(nlohmann::json::parse(R"({"hypotheses": [{"kind": "x"}]})")), std::runtime_error);
  fs::remove_all(dir);
}

}  // namespace syspilot::tuner
