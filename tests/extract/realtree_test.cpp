// Real Debian source trees (.deps/sources, fetched by the extract_fetch_sources ctest fixture):
// env-var (and, where listed, API-control) recall >= 95% and precision >= 90% against the
// hand-built expected lists.
#include <gtest/gtest.h>

#include <filesystem>

#include "extract/evaluate.h"
#include "extract/extract.h"

namespace fs = std::filesystem;
using namespace syspilot::extract;

namespace {

void check_tree(const std::string& dir, const std::string& expected) {
  fs::path tree = fs::path(EXTRACT_SOURCES) / dir;
  if (!fs::exists(tree / ".fetched")) GTEST_SKIP() << tree << " not fetched (scripts/fetch-sources.sh)";
  ExpectedList want = load_expected(std::string(EXTRACT_EXPECTED) + "/" + expected);
  ExtractOptions o;
  o.paths = {tree.string()};
  o.threads = 2;
  o.api_controls = want.has_api;
  o.scope = "all";  // the expected lists cover all code in the tree: library, tools, tests
  Facts f = extract(o);
  Score env = score(want.env, env_names(f));
  ::testing::Test::RecordProperty("env", env.str());
  std::string missed, extra;
  for (auto& m : env.missed) missed += m + " ";
  for (auto& x : env.extra) extra += x + " ";
  EXPECT_GE(env.recall(), 0.95) << env.str() << " missed: " << missed;
  EXPECT_GE(env.precision(), 0.90) << env.str() << " extra: " << extra;
  if (want.has_api) {
    Score api = score(want.api, api_names(f));
    EXPECT_GE(api.recall(), 0.95) << "API controls " << api.str();
    EXPECT_GE(api.precision(), 0.90) << "API controls " << api.str();
  }
  // provenance: every read names a file inside the tree and a line
  for (auto& e : f.env_vars) {
    EXPECT_TRUE(fs::exists(tree / e.file)) << e.file;
    EXPECT_GT(e.line, 0) << e.name;
  }
}

}  // namespace

TEST(ExtractRealTree, OpenBlas0321) { check_tree("openblas-0.3.21+ds", "openblas-0.3.21.txt"); }
TEST(ExtractRealTree, Jemalloc530) { check_tree("jemalloc-5.3.0", "jemalloc-5.3.0.txt"); }
