// Review state of stored contracts: the migration of files written before it, marking and
// revoking, and the order in which composition is offered contracts (reviewed before drafts).
#include <sqlite3.h>

#include <algorithm>

#include "tests/store/fixture.h"

using namespace syspilot;
using namespace syspilot::store;
using store::testing::TempDir;

namespace {

// The core schema as SysPilot released it before the review state (core version 1), frozen
// here: a file written then must open with its rows sensibly classified.
const char* kReleasedCoreV1 = R"sql(
CREATE TABLE libraries (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE TABLE versions (
  id INTEGER PRIMARY KEY,
  library_id INTEGER NOT NULL REFERENCES libraries(id) ON DELETE CASCADE,
  version TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  UNIQUE (library_id, version)
);
CREATE TABLE contracts (
  id INTEGER PRIMARY KEY,
  version_id INTEGER NOT NULL REFERENCES versions(id) ON DELETE CASCADE,
  revision INTEGER NOT NULL CHECK (revision >= 1),
  lpcl TEXT NOT NULL,
  json TEXT NOT NULL,
  digest TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('converged', 'open-diagnostics')),
  diagnostics TEXT NOT NULL DEFAULT '[]',
  prompt_id TEXT NOT NULL DEFAULT '',
  prompt_version INTEGER NOT NULL DEFAULT 0,
  drafter TEXT NOT NULL CHECK (drafter IN ('offline', 'llm', 'manual')),
  model TEXT NOT NULL DEFAULT '',
  source TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  UNIQUE (version_id, revision)
);
CREATE INDEX contracts_digest ON contracts(digest);
CREATE TABLE facts (
  digest TEXT PRIMARY KEY,
  json TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
) WITHOUT ROWID;
CREATE TABLE contract_facts (
  contract_id INTEGER NOT NULL REFERENCES contracts(id) ON DELETE CASCADE,
  facts_digest TEXT NOT NULL REFERENCES facts(digest),
  source TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (contract_id, facts_digest)
);
CREATE INDEX contract_facts_by_digest ON contract_facts(facts_digest);
CREATE TABLE validation_rounds (
  contract_id INTEGER NOT NULL REFERENCES contracts(id) ON DELETE CASCADE,
  round INTEGER NOT NULL,
  drafter TEXT NOT NULL,
  diagnostics TEXT NOT NULL DEFAULT '[]',
  repairs TEXT NOT NULL DEFAULT '[]',
  PRIMARY KEY (contract_id, round)
);
CREATE TABLE llm_calls (
  id INTEGER PRIMARY KEY,
  library TEXT NOT NULL DEFAULT '',
  version TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL,
  prompt_digest TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  latency_ms REAL NOT NULL DEFAULT 0,
  status TEXT NOT NULL,
  answer TEXT NOT NULL DEFAULT '',
  cached INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
);
CREATE INDEX llm_calls_by_prompt ON llm_calls(model, prompt_digest);
CREATE INDEX llm_calls_by_library ON llm_calls(library, version);
)sql";

void exec_raw(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n" << sql;
}

ContractRecord record(const std::string& lib, const std::string& version, Drafter drafter, const std::string& body = "") {
  ContractRecord r;
  r.library = lib;
  r.version = version;
  r.lpcl = "contract " + lib + " \"" + version + "\" {\n  binds soname \"lib" + lib + ".so.1\";\n" + body + "}\n";
  r.drafter = drafter;
  return r;
}

std::vector<std::string> names(const std::vector<ContractRecord>& rs) {
  std::vector<std::string> out;
  for (auto& r : rs)
    out.push_back(r.library + "@" + r.version + "#" + std::to_string(r.revision) + ":" + to_string(r.review));
  return out;
}

}  // namespace

// A store written before the review state: contracts imported from files (the corpus, drafter
// manual) come out reviewed, drafts unreviewed, and nothing else changes.
TEST(Review, OlderStoresAreMigratedImportsReviewedDraftsNot) {
  TempDir dir;
  const std::string path = dir.file("old.db");
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    exec_raw(raw,
             "CREATE TABLE schema_migrations (component TEXT NOT NULL, version INTEGER NOT NULL,"
             " applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),"
             " PRIMARY KEY (component, version)); PRAGMA user_version = 1;");
    exec_raw(raw, kReleasedCoreV1);
    exec_raw(raw,
             "INSERT INTO schema_migrations (component, version) VALUES ('core', 1);"
             "INSERT INTO libraries (id, name) VALUES (1, 'jemalloc'), (2, 'zstd');"
             "INSERT INTO versions (id, library_id, version) VALUES (1, 1, '5.3.0'), (2, 2, '1.5.4');"
             "INSERT INTO contracts (version_id, revision, lpcl, json, digest, status, drafter, source, created_at)"
             " VALUES (1, 1, 'contract jemalloc \"5.3.0\" {}', 'null', 'd1', 'converged', 'manual',"
             "         'import:/corpus/jemalloc.lpcl', '2025-01-01T00:00:00.000Z'),"
             "        (1, 2, 'contract jemalloc \"5.3.0\" { }', 'null', 'd2', 'converged', 'offline', 'synth', '2025-02-01T00:00:00.000Z'),"
             "        (2, 1, 'contract zstd \"1.5.4\" {}', 'null', 'd3', 'open-diagnostics', 'llm', 'synth', '2025-03-01T00:00:00.000Z');");
    sqlite3_close(raw);
  }
  Store s(path);
  EXPECT_EQ(s.db().schema_version("core"), known_schema_version("core"));
  EXPECT_EQ(s.db().integrity_check(), "ok");
  auto imported = s.get_contract("jemalloc", "5.3.0", 1);
  ASSERT_TRUE(imported);
  EXPECT_EQ(imported->review, Review::Reviewed);
  EXPECT_EQ(imported->reviewed_at, "2025-01-01T00:00:00.000Z");  // as reviewed as when it was imported
  auto draft = s.get_contract("jemalloc", "5.3.0");
  ASSERT_TRUE(draft);
  EXPECT_EQ(draft->revision, 2);
  EXPECT_EQ(draft->review, Review::Unreviewed);
  EXPECT_TRUE(draft->reviewed_at.empty());
  EXPECT_EQ(s.get_contract("zstd", "1.5.4")->review, Review::Unreviewed);
  auto vs = s.versions("jemalloc");
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].review, Review::Unreviewed);
  EXPECT_EQ(vs[0].reviewed_revision, 1);
  // The reviewed revision is what composition takes; the newer draft comes after everything reviewed.
  EXPECT_EQ(names(s.lookup_contracts()),
            (std::vector<std::string>{"jemalloc@5.3.0#1:reviewed", "jemalloc@5.3.0#2:unreviewed", "zstd@1.5.4#1:unreviewed"}));
  // A second open applies nothing twice.
  Store again(path);
  EXPECT_EQ(again.get_contract("jemalloc", "5.3.0", 1)->review, Review::Reviewed);
}

// put -> get keeps the state; marking a revision reviewed and revoking it round-trips; a new
// draft revision does not inherit the review of the one before.
TEST(Review, MarkRevokeAndNewRevisions) {
  TempDir dir;
  Store s(dir.file("s.db"));
  s.put_contract(record("jemalloc", "5.3.0", Drafter::Offline));
  auto r = s.get_contract("jemalloc", "5.3.0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->review, Review::Unreviewed);
  EXPECT_FALSE(s.reviewed_contract("jemalloc"));

  EXPECT_EQ(s.set_review("jemalloc", "5.3.0", 0, Review::Reviewed).value_or(-1), 1);
  r = s.get_contract("jemalloc", "5.3.0");
  EXPECT_EQ(r->review, Review::Reviewed);
  EXPECT_FALSE(r->reviewed_at.empty());
  ASSERT_TRUE(s.reviewed_contract("jemalloc"));

  // Re-synthesis adds revision 2, a draft again; revision 1 stays the reviewed one.
  s.put_contract(record("jemalloc", "5.3.0", Drafter::Offline, "  # redrafted\n"));
  EXPECT_EQ(s.get_contract("jemalloc", "5.3.0")->review, Review::Unreviewed);
  EXPECT_EQ(s.reviewed_contract("jemalloc")->revision, 1);
  EXPECT_EQ(s.versions("jemalloc")[0].reviewed_revision, 1);

  // A newer version drafted later does not displace the reviewed older one.
  s.put_contract(record("jemalloc", "5.3.1", Drafter::Llm));
  EXPECT_EQ(s.reviewed_contract("jemalloc")->version, "5.3.0");
  EXPECT_EQ(s.latest_contract("jemalloc")->version, "5.3.1");

  EXPECT_EQ(s.set_review("jemalloc", "5.3.0", 1, Review::Unreviewed).value_or(-1), 1);
  EXPECT_FALSE(s.reviewed_contract("jemalloc"));
  EXPECT_FALSE(s.set_review("jemalloc", "9.9", 0, Review::Reviewed));
  EXPECT_FALSE(s.set_review("jemalloc", "5.3.0", 7, Review::Reviewed));

  // Stored reviewed from the start (an import), with its time stamped.
  ContractRecord imported = record("zstd", "1.5.4", Drafter::Manual);
  imported.review = Review::Reviewed;
  s.put_contract(imported);
  EXPECT_EQ(s.get_contract("zstd", "1.5.4")->review, Review::Reviewed);
  EXPECT_FALSE(s.get_contract("zstd", "1.5.4")->reviewed_at.empty());
}

// Composition takes the first match: every reviewed contract before any draft, whatever the
// library names; a library with only a draft still offers it, last.
TEST(Review, LookupOffersReviewedContractsBeforeDrafts) {
  TempDir dir;
  Store s(dir.file("s.db"));
  s.put_contract(record("aaa_draft", "1", Drafter::Offline));
  ContractRecord b = record("bbb", "2", Drafter::Manual);
  b.review = Review::Reviewed;
  s.put_contract(b);
  s.put_contract(record("bbb", "3", Drafter::Llm));
  auto all = s.lookup_contracts();
  EXPECT_EQ(names(all), (std::vector<std::string>{"bbb@2#1:reviewed", "aaa_draft@1#1:unreviewed", "bbb@3#1:unreviewed"}));
  for (auto& r : all) {
    EXPECT_TRUE(r.rounds.empty());
    EXPECT_FALSE(r.lpcl.empty());
  }
}
