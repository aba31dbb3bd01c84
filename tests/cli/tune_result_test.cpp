// What `syspilot tune` hands back, run as a process on real programs: the minimised
// configuration (controls that make no difference dropped, the runs counted), one value for an
// env control and the API setter of the same resource, LD_PRELOAD only for an API control in the
// result, the plan and estimate before and during the runs, and `--json` (the session as
// `sessions show --json` prints it, tune's conclusion under "result").
#include <nlohmann/json.hpp>
#include <regex>

#include "lpcl/lpcl.h"
#include "tests/cli/cli_support.h"
#include "tuner/consistency.h"
#include "tuner/session.h"
#include "tuner/space.h"

using namespace syspilot;
using namespace syspilot::cli::testing;
using syspilot::tuner::Config;

namespace {

std::string q(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Fast (0.2 s against 1 s) only with X=1; Y and Z change nothing. Long enough that process
// start-up and load add a few percent at most to a run, within the minimisation's tolerance.
const std::string kOnlyX = "/bin/sh -c " + q("if [ \"$X\" = 1 ]; then sleep 0.2; else sleep 1; fi");

nlohmann::json parse_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not one JSON document:\n" << text;
  return j;
}

}  // namespace

// Grid sets every control in every configuration: the best found sets X, Y and Z, and
// minimisation must drop Y and Z (no difference) but keep X (dropping it is 5x slower).
TEST(TuneResult, MinimisedDropsTheControlsThatMakeNoDifference) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  CliRun r = run_cli(dir, "tune --json --db " + db +
                              " --budget 10 --verify 2 --strategy grid --add X=1,2 --add Y=1,2 --add Z=1,2 -- " + kOnlyX);
  ASSERT_EQ(r.exit, 0) << r.err;
  nlohmann::json j = parse_json(r.out);
  ASSERT_TRUE(j.contains("result") && j["result"].is_object()) << r.out;
  const nlohmann::json& res = j["result"];
  EXPECT_EQ(res["verdict"], "configuration") << res.dump(2);
  EXPECT_EQ(res["config"].get<Config>(), (Config{{"X", "1"}})) << res.dump(2) << r.err;
  EXPECT_EQ(res["full_best"].size(), 3u) << res.dump(2);
  EXPECT_EQ(res["full_best"]["X"], "1") << res.dump(2);
  EXPECT_EQ(res["minimise"]["controls"], 3);
  EXPECT_EQ(res["minimise"]["dropped"].size(), 2u);
  const int mruns = res["minimise"]["runs"].get<int>();
  EXPECT_GT(mruns, 0);
  EXPECT_LE(mruns, 16);
  EXPECT_EQ(res["runs"]["minimise"], mruns);
  EXPECT_EQ(res["runs"]["total"].get<int>(),
            res["runs"]["search"].get<int>() + res["runs"]["verification"].get<int>() + mruns);
  EXPECT_TRUE(res["speedup"].get<double>() > 1) << res.dump(2);
  EXPECT_EQ(res["exit"], 0);
  EXPECT_FALSE(res["env"].contains("LD_PRELOAD")) << "no API control in the result: " << res.dump(2);
  EXPECT_TRUE(res["shim"].is_null());
  // The announcement on stderr, the plan before any run, an estimate and each line's ETA.
  EXPECT_TRUE(std::regex_search(r.err, std::regex("minimise: " + std::to_string(mruns) + " runs, dropped 2 of 3 controls")))
      << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("tune: plan: at most 32 \\(the budget's 10.*6 to re-measure.*at most "
                                                  "16 to minimise")))
      << r.err;
  EXPECT_LT(r.err.find("tune: plan:"), r.err.find("tune: analysing")) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("tune: estimated time: about [0-9]+ s more \\([0-9]+ runs at most x "
                                                  "median [0-9.e-]+ s\\)")))
      << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("tune: trial [0-9]+ .* eta ~[0-9]+ s\n"))) << r.err;
  // `sessions show --json` prints the same document.
  CliRun show = run_cli(dir, "sessions show " + std::to_string(j["id"].get<long>()) + " --json --db " + db);
  ASSERT_EQ(show.exit, 0) << show.err;
  EXPECT_EQ(parse_json(show.out), j);
}

// The README's example, tuned as the main job tunes it: what is exported is a few controls (the
// thread count of one pool does most of the work), each kept because dropping it measurably
// costs speed, and the speedup is re-measured beyond noise.
TEST(TuneResult, TheReadmeExampleExportsAFewControls) {
  TempDir dir;
  CliRun r = run_cli(dir, "tune --json --db " + dir.file("t.db") + " --budget 12 -- " + SYSPILOT_EXAMPLE);
  ASSERT_EQ(r.exit, 0) << r.err;
  nlohmann::json j = parse_json(r.out);
  // A machine busy with other work can make the closing re-measurement too noisy to call a real
  // gain one (keep defaults with a spread of +-20% or more; a verdict the tool is right to give):
  // the session is run once more, and the second must show it.
  if (j["result"]["verdict"] == "keep defaults" && j["result"]["speedup_spread"].get<double>() >= 0.2) {
    std::cerr << "first session too noisy to judge (" << j["result"].dump() << "); once more\n";
    r = run_cli(dir, "tune --json --db " + dir.file("t.db") + " --budget 12 -- " + SYSPILOT_EXAMPLE);
    ASSERT_EQ(r.exit, 0) << r.err;
    j = parse_json(r.out);
  }
  const nlohmann::json& res = j["result"];
  ASSERT_EQ(res["verdict"], "configuration") << res.dump(2) << r.err;
  const Config exported = res["config"].get<Config>();
  EXPECT_GE(exported.size(), 1u);
  EXPECT_LE(exported.size(), 3u) << res.dump(2) << r.err;
  EXPECT_TRUE(exported.count("OPENBLAS_NUM_THREADS") || exported.count("OMP_NUM_THREADS")) << res.dump(2);
  if (res["minimise"].is_object())
    EXPECT_EQ(res["minimise"]["controls"].get<size_t>() - res["minimise"]["dropped"].size(), exported.size())
        << res.dump(2);
  EXPECT_GT(res["speedup"].get<double>() * (1 - res["speedup_spread"].get<double>()), 1.0) << res.dump(2);
}

// --no-minimise prints the best as found: every control grid set.
TEST(TuneResult, NoMinimisePrintsTheFullBest) {
  TempDir dir;
  CliRun r = run_cli(dir, "tune --no-minimise --db " + dir.file("t.db") +
                              " --budget 8 --verify 2 --strategy grid --add X=1,2 --add Y=1,2 -- " + kOnlyX);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("(^|\n)X=1\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("(^|\n)Y=[12]\n"))) << r.out;
  EXPECT_EQ(r.out.find("minimise"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("minimising"), std::string::npos) << r.err;
}

// One value per resource, derived from the real contracts: OpenBLAS's setters, its own
// variables, but not OMP_NUM_THREADS, which OpenBLAS only borrows as a fallback from libgomp.
TEST(TuneConsistency, OneValuePerResourceFromTheContracts) {
  Diagnostics diags;
  std::vector<lpcl::Contract> contracts;
  for (const char* f : {"/corpus/openblas_pthread.lpcl", "/corpus/libgomp.lpcl"})
    for (auto& c : lpcl::parse_file(std::string(SYSPILOT_CHECKOUT) + f, diags).contracts) contracts.push_back(c);
  ASSERT_EQ(contracts.size(), 2u);
  tuner::Guide g;
  g.id = "nested";
  g.controls = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "openblas_set_num_threads",
                "goto_set_num_threads"};
  tuner::MachineFacts m;
  m.ncpus = m.ncores = 4;
  tuner::Space space = tuner::build_space(contracts, {g}, tuner::SpaceScope::Hypotheses, {}, m, diags);
  ASSERT_NE(space.find("openblas_set_num_threads"), nullptr);
  space.one_value = tuner::one_value_groups(contracts, space);
  ASSERT_EQ(space.one_value.size(), 1u) << tuner::space_to_json(space);
  const auto& group = space.one_value.front();
  for (const char* n : {"openblas_set_num_threads", "goto_set_num_threads", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS"})
    EXPECT_NE(std::find(group.begin(), group.end(), n), group.end()) << n;
  EXPECT_EQ(std::find(group.begin(), group.end(), "OMP_NUM_THREADS"), group.end());
  // The setter's value wins; controls the configuration leaves unset stay unset.
  EXPECT_EQ(tuner::consistent(space, {{"OPENBLAS_NUM_THREADS", "4"}, {"openblas_set_num_threads", "1"},
                                      {"OMP_NUM_THREADS", "2"}}),
            (Config{{"OPENBLAS_NUM_THREADS", "1"}, {"openblas_set_num_threads", "1"}, {"OMP_NUM_THREADS", "2"}}));
  // Every strategy's proposals agree, the blind ones included.
  for (const char* name : {"random", "grid", "syspilot"}) {
    auto s = tuner::make_strategy(name, space, {{g}, m, 7, 0.05});
    std::vector<tuner::Trial> history;
    for (int i = 0; i < 60; ++i) {
      auto c = s->next(history);
      if (!c) break;
      EXPECT_TRUE(tuner::is_consistent(space, *c)) << name << ": " << tuner::to_string(*c);
      tuner::Trial t;
      t.index = i;
      t.config = *c;
      t.m.ok = true;
      t.m.repeats = 1;
      t.m.value = 1 + 0.01 * i;
      t.m.samples = {t.m.value};
      history.push_back(t);
    }
  }
}

// A stored session over fast_mode (see above): its space ties fast_mode_set (API) to FAST_MODE
// (env), beside X, which changes nothing.
std::int64_t fast_mode_session(const std::string& db) {
  tuner::SessionStore store(db);
  tuner::Space space;
  tuner::Param api;
  api.name = "fast_mode_set";
  api.kind = tuner::Param::Kind::Api;
  api.values = {"0", "1"};
  api.numeric = true;
  tuner::Param env = api;
  env.name = "FAST_MODE";
  env.kind = tuner::Param::Kind::Env;
  tuner::Param x = env;
  x.name = "X";
  x.values = {"1", "2"};
  space.params = {env, x, api};
  space.one_value = {{"fast_mode_set", "FAST_MODE"}};
  tuner::SessionInfo s;
  s.argv = {CLI_FAST_MODE};
  s.strategy = "grid";
  s.budget = 12;
  s.space_json = tuner::space_to_json(space);
  s.options_json = R"({"timeout": 20})";
  return store.create(s);
}

// Through the command, on a program with an API control of its own: a stored session whose
// space ties fast_mode_set (API) to FAST_MODE (env). Every trial gives them one value; the
// minimised result keeps the setter alone, so LD_PRELOAD names the shim, which exists.
TEST(TuneConsistency, ApiControlInTheResultBringsTheShim) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  const std::int64_t id = fast_mode_session(db);
  CliRun r = run_cli(dir, "tune --resume " + std::to_string(id) + " --verify 2 --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  {
    tuner::SessionStore store(db);
    auto trials = store.trials(id);
    ASSERT_GT(trials.size(), 3u);
    for (const auto& t : trials) {
      if (!t.config.count("FAST_MODE") || !t.config.count("fast_mode_set")) continue;
      EXPECT_EQ(t.config.at("FAST_MODE"), t.config.at("fast_mode_set")) << tuner::to_string(t.config);
    }
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("(^|\n)LD_PRELOAD=([^\n]+)\n"))) << r.out << r.err;
  EXPECT_TRUE(std::filesystem::exists(m[2].str())) << m[2];
  EXPECT_NE(r.out.find("SYSPILOT_SHIM_CALLS='fast_mode_set=1;'"), std::string::npos) << r.out;
  EXPECT_FALSE(std::regex_search(r.out, std::regex("(^|\n)(X|FAST_MODE)="))) << "dropped controls exported:\n" << r.out;
  EXPECT_NE(r.out.find("is the build tree's"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# minimise: "), std::string::npos) << r.out;
}

// Installed (cmake --install), syspilot exports the shim installed beside it, and the exported
// environment, applied to the program by hand, makes the setter take effect.
TEST(TuneConsistency, InstalledSyspilotExportsItsInstalledShim) {
  TempDir dir;
  const std::string prefix = dir.file("inst");
  const std::string install =
      std::string(CMAKE_COMMAND) + " --install " + SYSPILOT_BUILD_DIR + " --prefix " + q(prefix) + " >/dev/null";
  ASSERT_EQ(std::system(install.c_str()), 0) << install;
  const std::string installed = prefix + "/bin/syspilot", shim = prefix + "/lib/syspilot/libsyspilot_shim.so";
  ASSERT_TRUE(std::filesystem::exists(installed) && std::filesystem::exists(shim));
  const std::string db = dir.file("t.db");
  const std::int64_t id = fast_mode_session(db);
  const std::string out = dir.file("o"), err = dir.file("e");
  const std::string cmd = "env -u SYSPILOT_DB -u SYSPILOT_SHIM -u SYSPILOT_DATA_DIR " + q(installed) + " tune --resume " +
                          std::to_string(id) + " --verify 2 --export --db " + q(db) + " >" + out + " 2>" + err;
  ASSERT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0) << slurp(err);
  const std::string exported = slurp(out);
  EXPECT_NE(exported.find("export LD_PRELOAD=" + shim + "\n"), std::string::npos) << exported;
  EXPECT_NE(slurp(err).find(shim + " is installed beside syspilot"), std::string::npos) << slurp(err);
  // The user's next step: source the exports, run the program.
  spit(dir.file("env.sh"), exported);
  const std::string ran = dir.file("ran");
  ASSERT_EQ(std::system((". " + q(dir.file("env.sh")) + " && " + CLI_FAST_MODE + " >" + ran).c_str()), 0);
  EXPECT_EQ(slurp(ran), "fast\n");
}
