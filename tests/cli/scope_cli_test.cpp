// `syspilot extract --scope` and `syspilot synth --scope` as processes: a tree whose library,
// tool and test each read a variable of their own; extract keeps the library's by default and
// more on request, synth grounds a contract in library facts alone, also from a facts file
// written with --scope all, and an unknown scope is a usage error.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/cli/cli_support.h"

using namespace syspilot::cli::testing;
namespace fs = std::filesystem;

namespace {

// libpool: src/ is the library (CMake add_library), tools/ a program, tests/ a test.
std::string make_tree(const TempDir& dir) {
  const std::string root = dir.file("pool");
  fs::create_directories(root + "/src");
  fs::create_directories(root + "/tools");
  fs::create_directories(root + "/tests");
  spit(root + "/CMakeLists.txt",
       "add_library(pool src/pool.c)\nadd_executable(pool-cli tools/cli.c)\n"
       "add_executable(pool_test tests/pool_test.c)\nadd_test(NAME pool COMMAND pool_test)\n");
  spit(root + "/src/pool.c",
       "#include <stdlib.h>\n#include <pthread.h>\n"
       "int demo_threads(void) { const char* s = getenv(\"DEMO_NUM_THREADS\"); return s ? atoi(s) : 0; }\n");
  spit(root + "/tools/cli.c",
       "#include <stdlib.h>\nint main(void) { const char* s = getenv(\"DEMO_CLI_NUM_THREADS\"); return s ? atoi(s) : 0; }\n");
  spit(root + "/tests/pool_test.c",
       "#include <stdlib.h>\nint main(void) { return getenv(\"DEMO_TEST_NUM_THREADS\") != 0; }\n");
  return root;
}

std::set<std::string> env_names(const std::string& facts_json) {
  std::set<std::string> out;
  auto j = nlohmann::json::parse(facts_json);
  for (auto& e : j["env_vars"]) out.insert(e["name"].get<std::string>() + ":" + e.value("scope", std::string("?")));
  return out;
}

}  // namespace

TEST(ExtractScope, LibraryByDefaultMoreOnRequestAndUnknownIsAUsageError) {
  TempDir dir;
  const std::string tree = make_tree(dir);
  CliRun def = run_cli(dir, "extract " + tree + " --lib pool --no-api --json");
  ASSERT_EQ(def.exit, 0) << def.err;
  EXPECT_EQ(env_names(def.out), (std::set<std::string>{"DEMO_NUM_THREADS:library"})) << def.out;

  CliRun two = run_cli(dir, "extract " + tree + " --lib pool --no-api --json --scope library,tool");
  ASSERT_EQ(two.exit, 0) << two.err;
  EXPECT_EQ(env_names(two.out), (std::set<std::string>{"DEMO_NUM_THREADS:library", "DEMO_CLI_NUM_THREADS:tool"}));

  CliRun all = run_cli(dir, "extract " + tree + " --lib pool --no-api --json --scope all");
  ASSERT_EQ(all.exit, 0) << all.err;
  EXPECT_EQ(env_names(all.out), (std::set<std::string>{"DEMO_NUM_THREADS:library", "DEMO_CLI_NUM_THREADS:tool",
                                                       "DEMO_TEST_NUM_THREADS:test"}));

  CliRun bad = run_cli(dir, "extract " + tree + " --no-api --scope libary");
  EXPECT_EQ(bad.exit, 2) << bad.err;
  EXPECT_NE(bad.err.find("unknown scope 'libary'"), std::string::npos) << bad.err;
}

TEST(SynthScope, AContractClaimsLibraryFactsEvenFromAnAllScopeFactsFile) {
  TempDir dir;
  const std::string tree = make_tree(dir);
  const std::string facts = dir.file("facts.json");
  const std::string overlay = dir.file("pool.lpcl");  // the tree builds no shared object to bind
  spit(overlay, "contract pool \"1\" {\n  binds soname \"libpool.so.1\";\n}\n");
  CliRun ex = run_cli(dir, "extract " + tree + " --lib pool --no-api --json --scope all -o " + facts);
  ASSERT_EQ(ex.exit, 0) << ex.err;

  CliRun lib = run_cli(dir, "synth " + facts + " --lib pool --lib-version 1 --no-store -q --overlay " + overlay, "-u SYSPILOT_LLM_URL");
  ASSERT_EQ(lib.exit, 0) << lib.err;
  EXPECT_NE(lib.out.find("DEMO_NUM_THREADS"), std::string::npos) << lib.out;
  EXPECT_EQ(lib.out.find("DEMO_CLI_NUM_THREADS"), std::string::npos) << lib.out;
  EXPECT_EQ(lib.out.find("DEMO_TEST_NUM_THREADS"), std::string::npos) << lib.out;

  CliRun tool = run_cli(dir, "synth " + tree + " --lib pool --lib-version 1 --no-store -q --scope library,tool --overlay " + overlay,
                        "-u SYSPILOT_LLM_URL");
  ASSERT_EQ(tool.exit, 0) << tool.err;
  EXPECT_NE(tool.out.find("DEMO_CLI_NUM_THREADS"), std::string::npos) << tool.out;
  EXPECT_EQ(tool.out.find("DEMO_TEST_NUM_THREADS"), std::string::npos) << tool.out;

  CliRun bad = run_cli(dir, "synth " + facts + " --lib pool --lib-version 1 --no-store --scope nope",
                       "-u SYSPILOT_LLM_URL");
  EXPECT_EQ(bad.exit, 2) << bad.err;
}
