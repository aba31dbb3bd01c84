// `syspilot analyze` keeps what it concluded in the store the service reads: the --db store,
// else the default one (never the user's in these tests: run_cli points XDG_DATA_HOME at the
// test's folder); --no-store keeps nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "store/store.h"
#include "tests/cli/cli_support.h"
#include "tuner/session.h"

using namespace syspilot;
using namespace syspilot::cli::testing;

namespace {

TEST(AnalyzeCli, KeepsTheAnalysisInTheStore) {
  TempDir dir;
  spit(dir.file("app.manifest"), "library libgomp.so.1\n");
  const std::string db = dir.file("s.db");
  const std::string args = "analyze --no-profile --no-synth --json --manifest " + dir.file("app.manifest");
  CliRun r = run_cli(dir, args + " --db " + db + " -- /bin/true");
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.err.find("analyze: analysis 1 kept in " + db), std::string::npos) << r.err;
  {
    tuner::SessionStore st(db);
    auto list = st.analyses();
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].origin, "analyze");
    EXPECT_EQ(list[0].argv, std::vector<std::string>{"/bin/true"});
    auto one = st.analysis(list[0].id);
    ASSERT_TRUE(one);
    // The stored document is the one printed.
    EXPECT_EQ(nlohmann::json::parse(one->document_json), nlohmann::json::parse(r.out));
    auto summary = nlohmann::json::parse(one->summary_json);
    EXPECT_EQ(summary["hypotheses"].get<size_t>(), nlohmann::json::parse(r.out)["hypotheses"].size());
  }
  // Without --db: the default store, created as `syspilot tune` creates it.
  r = run_cli(dir, args + " -- /bin/true");
  ASSERT_EQ(r.exit, 0) << r.err;
  const std::string fallback = dir.file("xdg") + "/syspilot/syspilot.db";
  ASSERT_TRUE(std::filesystem::exists(fallback)) << r.err;
  EXPECT_EQ(tuner::SessionStore(fallback).analyses().size(), 1u);
  // --no-store keeps nothing.
  r = run_cli(dir, args + " --no-store --db " + db + " -- /bin/true");
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(tuner::SessionStore(db).analyses().size(), 1u);
  EXPECT_EQ(r.err.find("kept in"), std::string::npos) << r.err;
}

}  // namespace

namespace {

// A store written before analyses were kept (tuner schema 3) gains the table when opened, and
// keeps its sessions.
TEST(AnalysesStore, AnOlderStoreIsMigrated) {
  TempDir dir;
  const std::string db = dir.file("old.db");
  std::int64_t id = 0;
  {
    tuner::SessionStore st(db);
    tuner::SessionInfo s;
    s.argv = {"/bin/true"};
    s.strategy = "random";
    s.budget = 3;
    s.space_json = R"({"params":[]})";
    id = st.create(s);
  }
  {
    store::Database raw(db);
    raw.exec("DROP TABLE tune_owners; DROP TABLE tune_analyses; "
             "DELETE FROM schema_migrations WHERE component = 'tuner' AND version >= 4;");
    EXPECT_EQ(raw.schema_version("tuner"), 3);
  }
  tuner::SessionStore st(db);
  EXPECT_TRUE(st.analyses().empty());
  ASSERT_TRUE(st.get(id));
  EXPECT_EQ(st.add_analysis({"/bin/true"}, "analyze", R"({"hypotheses":[]})"), 1);
  EXPECT_EQ(store::Database(db).schema_version("tuner"), store::known_schema_version("tuner"));
}

}  // namespace
