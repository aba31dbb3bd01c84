// `regen --executor slurm` against a cluster that runs each job in this process (the job's side,
// run_regen_job, as `syspilot trial-run` runs it on a node): the releases, contracts and
// changelog are those of a local regen; a job the cluster loses is resubmitted once away from
// its node, and a release that fails, or whose jobs are both lost, does not stop the others.
// tests/cluster/slurm_regen_test.sh runs the same on a real Slurm cluster.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "service/regen.h"
#include "service/schema.h"
#include "store/store.h"
#include "tests/service/fixture.h"
#include "tuner/slurm.h"

namespace syspilot::service::test {
namespace {

using nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a job when it is submitted, unless the job is to be lost: then it never writes a
// result and the scheduler reports it NODE_FAIL on node n1.
class InProcessCluster : public tuner::Cluster {
 public:
  std::set<std::string> lose;          // spec files whose jobs are lost, every time
  std::set<std::string> lose_once;     // spec files whose first job is lost
  std::vector<tuner::JobRequest> submitted;

  std::string submit(const tuner::JobRequest& r) override {
    submitted.push_back(r);
    std::string id = std::to_string(submitted.size());
    bool lost = lose.count(r.spec_path) || lose_once.erase(r.spec_path) > 0;
    if (lost) {
      states_[id] = {"NODE_FAIL", "n1", "None"};
      return id;
    }
    auto result = run_regen_job(slurp(r.spec_path));
    EXPECT_TRUE(result.has_value()) << r.spec_path << " is no regen spec";
    std::ofstream(r.result_path, std::ios::binary) << result.value_or("");
    states_[id] = {"COMPLETED", "n2", "None"};
    return id;
  }
  tuner::JobStatus status(const std::string& job) override { return states_[job]; }

 private:
  std::map<std::string, tuner::JobStatus> states_;
};

struct RegenCluster : ::testing::Test {
  TempDir tmp;
  std::string config_path;
  RegenConfig cfg;

  void SetUp() override {
    fs::path releases = tmp.path() / "root" / "releases";
    write_foo_release(releases / "foo-1.0.0", "1.0.0");
    write_foo_release(releases / "foo-1.1.0", "1.1.0");
    write_foo_release(releases / "foo-1.2.0", "1.2.0");
    // A release with nothing the extractors read: it fails, the others go on.
    fs::create_directories(releases / "foo-1.1.5");
    std::ofstream(releases / "foo-1.1.5" / "data.bin", std::ios::binary) << std::string("\x01\x02\x03", 3);
    json j = {{"source_roots", {tmp.str("root")}},
              {"work_dir", tmp.str("work")},
              {"libraries", {{{"name", "foo"}, {"feeds", {{{"kind", "dir"}, {"path", releases.string()}}}}}}}};
    config_path = tmp.str("regen.json");
    std::ofstream(config_path) << j.dump(2);
    Diagnostics d;
    ASSERT_TRUE(load_regen_config(config_path, cfg, d)) << d.str();
  }

  ClusterRegen how(InProcessCluster& c) {
    ClusterRegen h;
    h.cluster = &c;
    h.dir = tmp.str("slurm");
    h.config_path = config_path;
    h.poll_s = 0.01;
    h.unknown_s = 0.1;
    h.grace_s = 0.05;
    return h;
  }
};

// The changelog without its first lines (the date of the run).
std::string body(const std::string& md) { return md.substr(md.find("\n## ")); }

TEST_F(RegenCluster, StoresWhatALocalRegenStores) {
  store::Store local = open_store(tmp.str("local.sqlite"));
  RegenReport l = regenerate(local, cfg);
  store::Store remote = open_store(tmp.str("cluster.sqlite"));
  InProcessCluster c;
  RegenReport r = regenerate_on_cluster(remote, cfg, how(c));

  ASSERT_EQ(r.outcomes.size(), 4u) << r.summary();
  ASSERT_EQ(l.outcomes.size(), 4u) << l.summary();
  EXPECT_EQ(c.submitted.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.outcomes[i].version, l.outcomes[i].version);
    EXPECT_EQ(r.outcomes[i].status, l.outcomes[i].status) << r.outcomes[i].diags.str();
    EXPECT_EQ(r.outcomes[i].contract_digest, l.outcomes[i].contract_digest) << r.outcomes[i].version;
    EXPECT_EQ(r.outcomes[i].previous_version, l.outcomes[i].previous_version);
  }
  EXPECT_EQ(r.outcomes[2].version, "1.1.5");
  EXPECT_EQ(r.outcomes[2].status, "failed");
  EXPECT_EQ(r.outcomes[2].diags.items().front().code, "no-facts");
  EXPECT_EQ(r.outcomes[3].previous_version, "1.1.0");
  EXPECT_TRUE(r.failed());
  EXPECT_EQ(body(r.changelog_markdown()), body(l.changelog_markdown()));
  ASSERT_EQ(remote.versions("foo").size(), 3u);
  for (auto& v : remote.versions("foo")) {
    auto a = remote.get_contract("foo", v.version), b = local.get_contract("foo", v.version);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->digest, b->digest);
    EXPECT_EQ(a->rounds.size(), b->rounds.size());
    EXPECT_EQ(a->facts.size(), b->facts.size());
  }
  // The facts went to the submitter's cache: a local forced rebuild reuses them.
  ReleaseRequest again{"foo", "1.2.0", {}, {}, true, {}};
  std::vector<Release> rel;
  Diagnostics d;
  ASSERT_TRUE(list_releases(cfg.libraries[0], policy_of(cfg), rel, d));
  again.source = rel.back().source;
  ReleaseOutcome o = build_release(remote, policy_of(cfg), again);
  EXPECT_TRUE(o.facts_cached) << o.diags.str();

  // Again: only the release not stored (the failed one) is a job again, as locally.
  RegenReport again_all = regenerate_on_cluster(remote, cfg, how(c));
  ASSERT_EQ(again_all.outcomes.size(), 1u) << again_all.summary();
  EXPECT_EQ(again_all.outcomes[0].version, "1.1.5");
  EXPECT_EQ(c.submitted.size(), 5u);
  EXPECT_EQ(remote.versions("foo").size(), 3u);
}

TEST_F(RegenCluster, ALostJobIsResubmittedOnceAwayFromItsNode) {
  store::Store st = open_store(tmp.str("cluster.sqlite"));
  InProcessCluster c;
  ClusterRegen h = how(c);
  // The spec files are named by submission order: 1.0.0 is the first, 1.1.0 the second.
  c.lose_once.insert(h.dir + "/regen-1-foo-1.0.0.spec.json");
  c.lose.insert(h.dir + "/regen-2-foo-1.1.0.spec.json");
  std::vector<std::string> notes;
  h.note = [&](const std::string& l) { notes.push_back(l); };
  RegenReport r = regenerate_on_cluster(st, cfg, h);
  ASSERT_EQ(r.outcomes.size(), 4u) << r.summary();
  EXPECT_EQ(r.outcomes[0].status, "stored") << r.outcomes[0].diags.str();
  EXPECT_EQ(r.outcomes[1].status, "failed");
  EXPECT_EQ(r.outcomes[1].diags.items().front().code, "slurm-no-result");
  EXPECT_EQ(r.outcomes[3].status, "stored") << r.outcomes[3].diags.str();
  EXPECT_EQ(r.outcomes[3].previous_version, "1.0.0");  // 1.1.0 never stored
  // 4 first submissions, then one resubmission each for 1.0.0 and 1.1.0, away from n1.
  ASSERT_EQ(c.submitted.size(), 6u);
  EXPECT_EQ(c.submitted[4].exclude, "n1");
  EXPECT_EQ(c.submitted[5].exclude, "n1");
  bool said = false;
  for (auto& n : notes) said |= n.find("NODE_FAIL without a result; resubmitting it once, away from n1") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST_F(RegenCluster, MalformedSpecsAreErrorsAndTrialSpecsAreNotRegenSpecs) {
  EXPECT_FALSE(run_regen_job(R"({"objective": {}})").has_value());
  EXPECT_THROW(run_regen_job("not json"), std::runtime_error);
  EXPECT_THROW(run_regen_job(R"({"regen": 3})"), std::runtime_error);
  EXPECT_THROW(run_regen_job(R"({"regen": {"library": "foo"}})"), std::runtime_error);
  // A config the node cannot read is the release's failure, reported in its result.
  json spec = {{"regen",
                {{"config", tmp.str("missing.json")},
                 {"library", "foo"},
                 {"version", "1.0.0"},
                 {"source", {{"kind", "dir"}, {"path", tmp.str("root")}}}}}};
  auto out = run_regen_job(spec.dump());
  ASSERT_TRUE(out);
  EXPECT_EQ(json::parse(*out).at("status"), "failed");
}

}  // namespace
}  // namespace syspilot::service::test
