// `syspilot sessions list|show|export` over a real store holding sessions written through the
// SessionStore API, as `syspilot tune` writes them: the text, the JSON form (the one
// session_to_json() defines), the export lines a shell evaluates, and the exit codes.
#include <nlohmann/json.hpp>

#include "store/store.h"
#include "tests/cli/cli_support.h"
#include "tuner/session.h"

using namespace syspilot;
using namespace syspilot::tuner;
using namespace syspilot::cli::testing;

namespace {

Trial trial(int index, Config c, bool ok, double value, int repeats, int runs_before, std::string failure = {}) {
  Trial t;
  t.index = index;
  t.config = std::move(c);
  t.strategy = index < 2 ? "analysis" : "syspilot";
  t.m.ok = ok;
  t.m.value = value;
  t.m.repeats = repeats;
  t.m.failure = std::move(failure);
  t.m.spread = ok && repeats > 1 ? 0.02 : 0;
  if (ok)
    for (int i = 0; i < repeats; ++i) t.m.samples.push_back(value);
  t.runs_before = runs_before;
  return t;
}

class SessionsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(SYSPILOT_BINARY)) << SYSPILOT_BINARY << " is missing: build syspilot first";
    db = dir.file("s.db");
    store::Store core(db);  // a store as tune opens it: contracts and sessions in one file
    SessionStore s(db);
    Space space;
    Param omp;
    omp.name = "OMP_NUM_THREADS";
    omp.values = {"1", "2", "4"};
    omp.library = "libgomp";
    omp.numeric = true;
    Param arenas;
    arenas.name = "narenas";
    arenas.kind = Param::Kind::Option;
    arenas.carrier = "MALLOC_CONF";
    arenas.item_sep = ",";
    arenas.kv_sep = ":";
    arenas.values = {"1", "2", "4"};
    arenas.library = "jemalloc";
    Param api;
    api.name = "openblas_set_num_threads";
    api.kind = Param::Kind::Api;
    api.values = {"1", "2"};
    api.library = "openblas_pthread";
    space.params = {omp, arenas, api};
    space.constraints = {"OMP_NUM_THREADS * openblas_set_num_threads <= ncpus"};

    SessionInfo info;
    info.argv = {"/usr/bin/prog", "--size", "64"};
    info.strategy = "syspilot";
    info.budget = 12;
    info.seed = 7;
    info.space_json = space_to_json(space);
    info.guides_json = R"([{"id": "nested_oversubscription:libgomp/openblas_pthread", "kind": "nested_oversubscription",
                            "controls": ["OMP_NUM_THREADS"], "constraint": "", "remedies": [], "weight": 1}])";
    info.options_json = nlohmann::json{{"timeout", 60}, {"metric", ""}, {"maximize", false}, {"score_cmd", ""},
                                       {"analysis_spent", 2}}
                            .dump();
    good = s.create(info);
    s.add_trial(good, trial(0, {}, true, 1.0, 3, 0));
    s.add_trial(good, trial(1, {{"OMP_NUM_THREADS", "1"}}, true, 0.5, 2, 3));
    s.add_trial(good, trial(2, {{"OMP_NUM_THREADS", "4"}}, false, 0, 1, 5, "exit 3"));
    s.add_trial(good, trial(3, {{"OMP_NUM_THREADS", "2"}}, false, 4.0, 1, 6,
                            "capped at 4.0 s (3x the incumbent's 1.0 s + 1 s)"));
    s.add_trial(good, trial(4, {{"OMP_NUM_THREADS", "1"}, {"narenas", "2"}, {"openblas_set_num_threads", "1"}}, true,
                            0.25, 2, 7));
    s.finish(good, "finished");

    SessionInfo bad = info;
    bad.argv = {"/usr/bin/crashes"};
    bad.options_json = "{}";
    failed = s.create(bad);
    s.add_trial(failed, trial(0, {}, false, 0, 1, 0, "signal 11 (SIGSEGV)"));
    s.finish(failed, "failed");
  }

  TempDir dir;
  std::string db;
  std::int64_t good = 0, failed = 0;
};

TEST_F(SessionsCli, ListShowsEverySessionNewestFirst) {
  CliRun r = run_cli(dir, "sessions list --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  const auto first = r.out.find("\n" + std::to_string(failed) + " ");
  const auto second = r.out.find("\n" + std::to_string(good) + " ");
  ASSERT_NE(first, std::string::npos) << r.out;
  ASSERT_NE(second, std::string::npos) << r.out;
  EXPECT_LT(first, second) << "newest first\n" << r.out;
  const std::string line = r.out.substr(second, r.out.find('\n', second + 1) - second);
  EXPECT_NE(line.find("syspilot"), std::string::npos) << line;
  EXPECT_NE(line.find("finished"), std::string::npos) << line;
  EXPECT_NE(line.find("11/12"), std::string::npos) << "runs: trials' repeats + the analysis' other runs\n" << line;
  EXPECT_NE(line.find("4.00x"), std::string::npos) << line;
  EXPECT_NE(line.find("/usr/bin/prog --size 64"), std::string::npos) << line;

  r = run_cli(dir, "sessions list --json --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["id"], failed);
  EXPECT_EQ(j[1]["id"], good);
  EXPECT_EQ(j[1]["trials"], 5);
  EXPECT_EQ(j[1]["best"]["config"]["narenas"], "2");
  EXPECT_DOUBLE_EQ(j[1]["speedup"].get<double>(), 4.0);
  EXPECT_TRUE(j[0]["best"].is_null());
}

TEST_F(SessionsCli, ShowGivesTheWholeSessionAndItsJsonIsTheSharedForm) {
  CliRun r = run_cli(dir, "sessions show " + std::to_string(good) + " --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  for (const char* want : {"finished, strategy syspilot", "command:   /usr/bin/prog --size 64",
                           "budget 12 runs, 11 spent; seed 7", "machine:   (not recorded)",
                           "3 controls, 18 configurations", "narenas (option of MALLOC_CONF, jemalloc): 1, 2, 4",
                           "constraint OMP_NUM_THREADS * openblas_set_num_threads <= ncpus",
                           "guided by: nested_oversubscription:libgomp/openblas_pthread", "FAILED: exit 3",
                           "capped at 4.0 s (3x the incumbent's 1.0 s + 1 s)",
                           "best:      trial 5, OMP_NUM_THREADS=1 narenas=2 openblas_set_num_threads=1: 0.250 s",
                           "speedup:   4.00x"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;

  r = run_cli(dir, "sessions show " + std::to_string(good) + " --json --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  SessionStore s(db);
  EXPECT_EQ(j, session_to_json(*s.get(good), s.trials(good))) << "one JSON form for the CLI and the service";
  EXPECT_EQ(j["program"], "/usr/bin/prog");
  EXPECT_EQ(j["args"], nlohmann::json({"--size", "64"}));
  EXPECT_EQ(j["status"], "finished");
  EXPECT_EQ(j["budget"], 12);
  EXPECT_EQ(j["runs"], 11);
  EXPECT_EQ(j["objective"], "wall time (s)");
  EXPECT_TRUE(j["machine"].is_null());
  ASSERT_EQ(j["trials"].size(), 5u);
  EXPECT_TRUE(j["trials"][2]["value"].is_null());
  EXPECT_EQ(j["trials"][2]["failure"], "exit 3");
  EXPECT_TRUE(j["trials"][3]["capped"].get<bool>());
  EXPECT_DOUBLE_EQ(j["trials"][3]["value"].get<double>(), 4.0);
  EXPECT_EQ(j["best"]["trial"], 4);
  EXPECT_EQ(j["reference"]["trial"], 0);
  EXPECT_DOUBLE_EQ(j["speedup"].get<double>(), 4.0);
  EXPECT_EQ(j["space"]["params"].size(), 3u);
  EXPECT_EQ(j["capped"], 1);
  EXPECT_EQ(j["failed"], 1);

  r = run_cli(dir, "sessions show " + std::to_string(failed) + " --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("FAILED: signal 11 (SIGSEGV)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best:      none"), std::string::npos) << r.out;
}

// export prints what a shell evaluates: env controls, option keys joined into their carrier,
// API controls through the preload shim (said on stderr, so stdout stays evaluable).
TEST_F(SessionsCli, ExportPrintsTheBestConfigurationForAShell) {
  const std::string env = "-u LD_PRELOAD -u MALLOC_CONF SYSPILOT_SHIM=/opt/syspilot/libsyspilot_shim.so";
  CliRun r = run_cli(dir, "sessions export " + std::to_string(good) + " --db " + db, env);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(r.out,
            "export LD_PRELOAD=/opt/syspilot/libsyspilot_shim.so\n"
            "export MALLOC_CONF=narenas:2\n"
            "export OMP_NUM_THREADS=1\n"
            "export SYSPILOT_SHIM_CALLS='openblas_set_num_threads=1;'\n");
  EXPECT_NE(r.err.find("openblas_set_num_threads=1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("preload shim"), std::string::npos) << r.err;

  // A shell takes the lines as they are.
  spit(dir.file("eval.sh"), "eval \"$(" + std::string(SYSPILOT_BINARY) + " sessions export " + std::to_string(good) +
                                " --db " + db + " 2>/dev/null)\"\necho \"$OMP_NUM_THREADS $MALLOC_CONF $SYSPILOT_SHIM_CALLS\"\n");
  std::string cmd = "env -u LD_PRELOAD -u MALLOC_CONF SYSPILOT_SHIM=/nonexistent.so sh " + dir.file("eval.sh") + " >" +
                    dir.file("eval.out") + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(slurp(dir.file("eval.out")), "1 narenas:2 openblas_set_num_threads=1;\n");

  r = run_cli(dir, "sessions export " + std::to_string(good) + " --json --db " + db, env);
  ASSERT_EQ(r.exit, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["env"]["OMP_NUM_THREADS"], "1");
  EXPECT_EQ(j["api_controls"], nlohmann::json({"openblas_set_num_threads=1"}));
  EXPECT_EQ(j["config"]["narenas"], "2");

  // No trial succeeded: nothing to export, exit 1.
  r = run_cli(dir, "sessions export " + std::to_string(failed) + " --db " + db, env);
  EXPECT_EQ(r.exit, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("every trial failed"), std::string::npos) << r.err;
}

TEST_F(SessionsCli, UnknownIdsMissingAndForeignStoresAreUsageErrors) {
  CliRun r = run_cli(dir, "sessions show 999 --db " + db);
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find("no tuning session 999"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stored: " + std::to_string(failed) + ", " + std::to_string(good)), std::string::npos) << r.err;
  r = run_cli(dir, "sessions export 999 --db " + db);
  EXPECT_EQ(r.exit, 2);
  r = run_cli(dir, "sessions show abc --db " + db);
  EXPECT_EQ(r.exit, 2);
  r = run_cli(dir, "sessions");
  EXPECT_EQ(r.exit, 2);

  // A store that does not exist: list says so and creates nothing; show is an error.
  r = run_cli(dir, "sessions list --db " + dir.file("none/absent.db"));
  EXPECT_EQ(r.exit, 0);
  EXPECT_NE(r.err.find("no tuning sessions"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("none")));
  r = run_cli(dir, "sessions list --json --db " + dir.file("none/absent.db"));
  EXPECT_EQ(r.out, "[]\n");
  r = run_cli(dir, "sessions show 1 --db " + dir.file("none/absent.db"));
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find("no store at"), std::string::npos) << r.err;

  spit(dir.file("notes.db"), std::string(5000, 'n'));
  r = run_cli(dir, "sessions list --db " + dir.file("notes.db"));
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find("not a database"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(dir.file("notes.db")), std::string(5000, 'n'));

  // A store with contracts and no tuning yet lists nothing.
  { store::Store contracts_only(dir.file("contracts.db")); }
  r = run_cli(dir, "sessions list --db " + dir.file("contracts.db"));
  EXPECT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.err.find("no tuning sessions in"), std::string::npos) << r.err;
}

}  // namespace
