// Which contract analysis takes for a library: a reviewed one (the store's, else the contract
// folders', corpus/ being reviewed) before a draft nobody has reviewed, and the report says
// which it took. The library-level order (tuner/contract_lookup.h), then `syspilot analyze`.
#include <nlohmann/json.hpp>

#include "lpcl/lpcl.h"
#include "store/store.h"
#include "tests/cli/cli_support.h"
#include "tuner/contract_lookup.h"

using namespace syspilot;
using namespace syspilot::cli::testing;

namespace {

// Two contracts for libgomp: a reviewed one in a contract folder, an unreviewed draft in the store.
const char* kReviewed = R"(contract gomp_reviewed "12.2.0" {
  binds soname "libgomp.so.1";
  control OMP_NUM_THREADS : env int in [1, ncpus] sets cpu.threads;
}
)";
const char* kDraft = R"(contract gomp_draft "12.2.0" {
  binds soname "libgomp.so.1";
  control OMP_NUM_THREADS : env int sets cpu.threads;
}
)";

void store_draft(const std::string& db) {
  store::Store s(db);
  store::ContractRecord r;
  r.library = "gomp_draft";
  r.version = "12.2.0";
  r.lpcl = kDraft;
  r.drafter = store::Drafter::Offline;  // as `syspilot synth` stores it: unreviewed
  s.put_contract(r);
}

tuner::ContractUse folder_contract(const std::string& path) {
  Diagnostics d;
  auto doc = lpcl::parse(kReviewed, path, d);
  EXPECT_FALSE(d.has_errors()) << d.str();
  return {doc.contracts.at(0), "corpus", path, {}};
}

TEST(ContractLookup, ReviewedContractsComeBeforeUnreviewedDrafts) {
  TempDir dir;
  const std::string db = dir.file("s.db");
  store_draft(db);
  Diagnostics diags;
  std::vector<tuner::ContractUse> all;
  tuner::add_store_contracts(all, db, diags);
  ASSERT_EQ(all.size(), 1u) << diags.str();
  EXPECT_TRUE(tuner::unreviewed_draft(all[0])) << all[0].path;
  EXPECT_EQ(all[0].path, db + "#gomp_draft@12.2.0 revision 1, unreviewed draft");
  EXPECT_EQ(tuner::contract_origin(all[0]), "store, unreviewed draft");
  all.push_back(folder_contract(dir.file("corpus/gomp_reviewed.lpcl")));
  tuner::prefer_reviewed(all);
  EXPECT_EQ(all[0].contract.name, "gomp_reviewed");
  EXPECT_EQ(tuner::contract_origin(all[0]), "corpus, reviewed");
  EXPECT_EQ(all[1].contract.name, "gomp_draft");

  // Reviewed in the store, it comes first again.
  store::Store(db).set_review("gomp_draft", "12.2.0", 0, store::Review::Reviewed);
  all.clear();
  tuner::add_store_contracts(all, db, diags);
  all.push_back(folder_contract(dir.file("corpus/gomp_reviewed.lpcl")));
  tuner::prefer_reviewed(all);
  EXPECT_EQ(all[0].contract.name, "gomp_draft");
  EXPECT_EQ(tuner::contract_origin(all[0]), "store, reviewed");
  EXPECT_FALSE(diags.has_errors()) << diags.str();

  // No store file: nothing added, nothing created.
  all.clear();
  tuner::add_store_contracts(all, dir.file("absent.db"), diags);
  EXPECT_TRUE(all.empty());
  EXPECT_FALSE(std::filesystem::exists(dir.file("absent.db")));
}

// `syspilot analyze` over a manifest naming libgomp: the reviewed folder contract wins over
// the store's draft until someone reviews the draft; the JSON says which and from where.
TEST(AnalyzeCli, PrefersTheReviewedContractOverAnUnreviewedDraft) {
  ASSERT_TRUE(std::filesystem::exists("/usr/lib/x86_64-linux-gnu/libgomp.so.1") ||
              std::filesystem::exists("/usr/lib/libgomp.so.1"))
      << "libgomp.so.1 (Debian's libgomp1) is needed";
  TempDir dir;
  const std::string db = dir.file("s.db");
  store_draft(db);
  std::filesystem::create_directories(dir.file("corpus"));
  spit(dir.file("corpus/gomp_reviewed.lpcl"), kReviewed);
  spit(dir.file("app.manifest"), "library libgomp.so.1\n");
  const std::string args = "analyze --no-profile --no-synth --json --db " + db + " --contracts " + dir.file("corpus") +
                           " --manifest " + dir.file("app.manifest") + " -- /bin/true";
  auto used = [&](const CliRun& r) {
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    if (j.is_discarded() || !j.contains("contracts") || j["contracts"].size() != 1) {
      ADD_FAILURE() << "expected one contract:\n" << r.out;
      return nlohmann::json::object();
    }
    return j["contracts"][0];
  };
  CliRun r = run_cli(dir, args);
  ASSERT_EQ(r.exit, 0) << r.err;
  auto c = used(r);
  EXPECT_EQ(c.value("name", ""), "gomp_reviewed") << r.out;
  EXPECT_EQ(c.value("source", ""), "corpus") << r.out;

  r = run_cli(dir, "contracts review gomp_draft 12.2.0 --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  r = run_cli(dir, args);
  ASSERT_EQ(r.exit, 0) << r.err;
  c = used(r);
  EXPECT_EQ(c.value("name", ""), "gomp_draft") << r.out;
  EXPECT_EQ(c.value("source", ""), "store") << r.out;
  EXPECT_EQ(c.value("path", ""), db + "#gomp_draft@12.2.0 revision 1, reviewed") << r.out;
}

}  // namespace
