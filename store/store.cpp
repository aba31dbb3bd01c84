// The contract store over Database: the core component's tables (libraries, versions,
// contract revisions, content-addressed facts, provenance, validation rounds, LLM calls).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <mutex>

#include "store/store.h"

namespace syspilot::store {

namespace {

// The core component's migrations. Append new versions; never edit a released one.
constexpr const char* kCoreV1 = R"sql(
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

// Review state. Rows written before it: contracts imported from files (drafter manual: the
// corpus and other hand-written contracts) are reviewed; drafts are not.
constexpr const char* kCoreV2 = R"sql(
ALTER TABLE contracts ADD COLUMN review TEXT NOT NULL DEFAULT 'unreviewed'
  CHECK (review IN ('reviewed', 'unreviewed'));
ALTER TABLE contracts ADD COLUMN reviewed_at TEXT;
UPDATE contracts SET review = 'reviewed', reviewed_at = created_at WHERE drafter = 'manual';
)sql";

void register_core() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_migration("core", 1, kCoreV1);
    register_migration("core", 2, kCoreV2);
  });
}

// Registering in the constructor's initialiser list runs before Database opens the file.
OpenOptions with_core(OpenOptions o) {
  register_core();
  return o;
}

ContractStatus status_from(const std::string& s) {
  return s == "open-diagnostics" ? ContractStatus::OpenDiagnostics : ContractStatus::Converged;
}
Review review_from(const std::string& s) { return s == "reviewed" ? Review::Reviewed : Review::Unreviewed; }
Drafter drafter_from(const std::string& s) {
  if (s == "llm") return Drafter::Llm;
  if (s == "manual") return Drafter::Manual;
  return Drafter::Offline;
}

// Parses JSON text with a nesting limit, so hostile input cannot exhaust the stack.
nlohmann::json parse_json(std::string_view text, const std::string& what) {
  constexpr int kMaxDepth = 256;
  try {
    return nlohmann::json::parse(
        text.begin(), text.end(),
        [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
          if (depth > kMaxDepth)
            throw StoreError(what + " nests deeper than " + std::to_string(kMaxDepth) + " levels");
          return true;
        });
  } catch (const nlohmann::json::exception& e) {
    throw StoreError(what + " is not valid JSON: " + e.what());
  }
}

std::string canonical_json(std::string_view text, const std::string& what) {
  // nlohmann::json keeps object keys sorted; dump() without indent has no whitespace.
  try {
    return parse_json(text, what).dump();
  } catch (const nlohmann::json::exception& e) {
    throw StoreError(what + " cannot be stored: " + e.what());
  }
}

void require_name(const std::string& value, const char* field) {
  if (value.empty()) throw StoreError(std::string("put_contract: the ") + field + " is empty");
  if (value.size() > 256)
    throw StoreError(std::string("put_contract: the ") + field + " is longer than 256 bytes");
  for (unsigned char c : value)
    if (c < 0x20 || c == 0x7f)
      throw StoreError(std::string("put_contract: the ") + field + " '" + value +
                       "' contains a control character");
}

const char* kVersionInfoColumns =
    "c.revision, c.digest, c.status, c.drafter, c.model, c.created_at, c.review,"
    " (SELECT COALESCE(MAX(r.revision), 0) FROM contracts r"
    "  WHERE r.version_id = c.version_id AND r.review = 'reviewed')";
VersionInfo read_version_info(const Stmt& s, int first) {
  VersionInfo v;
  v.revision = static_cast<int>(s.column_int(first));
  v.digest = s.column_text(first + 1);
  v.status = status_from(s.column_text(first + 2));
  v.drafter = drafter_from(s.column_text(first + 3));
  v.model = s.column_text(first + 4);
  v.created_at = s.column_text(first + 5);
  v.review = review_from(s.column_text(first + 6));
  v.reviewed_revision = static_cast<int>(s.column_int(first + 7));
  return v;
}

}  // namespace

const char* to_string(ContractStatus s) {
  return s == ContractStatus::OpenDiagnostics ? "open-diagnostics" : "converged";
}
const char* to_string(Review r) { return r == Review::Reviewed ? "reviewed" : "unreviewed"; }
const char* to_string(Drafter d) {
  switch (d) {
    case Drafter::Llm: return "llm";
    case Drafter::Manual: return "manual";
    default: return "offline";
  }
}

Store::Store(const std::string& path, OpenOptions opts) : db_(path, with_core(opts)) {}

PutResult Store::put_contract(const ContractRecord& rec) {
  require_name(rec.library, "library name");
  require_name(rec.version, "version");
  if (rec.lpcl.empty())
    throw StoreError("put_contract: the LPCL text of " + rec.library + " " + rec.version +
                     " is empty");
  std::string json = rec.json.empty() ? std::string("null")
                                      : canonical_json(rec.json, "the contract JSON of " +
                                                                     rec.library + " " + rec.version);
  std::string diagnostics = rec.diagnostics.empty() ? "[]" : rec.diagnostics;
  parse_json(diagnostics, "the diagnostics of " + rec.library + " " + rec.version);
  std::string digest = rec.digest.empty() ? sha256_hex(rec.lpcl) : rec.digest;

  Transaction tx(db_);
  db_.prepare("INSERT INTO libraries (name) VALUES (?) ON CONFLICT (name) DO NOTHING")
      .bind_all(rec.library)
      .run();
  std::int64_t library_id = *db_.query_int("SELECT id FROM libraries WHERE name = ?", rec.library);
  db_.prepare("INSERT INTO versions (library_id, version) VALUES (?, ?) "
              "ON CONFLICT (library_id, version) DO NOTHING")
      .bind_all(library_id, rec.version)
      .run();
  std::int64_t version_id = *db_.query_int(
      "SELECT id FROM versions WHERE library_id = ? AND version = ?", library_id, rec.version);

  PutResult result;
  auto previous = db_.query_text(
      "SELECT digest FROM contracts WHERE version_id = ? ORDER BY revision DESC LIMIT 1",
      version_id);
  result.changed = !previous || *previous != digest;
  result.revision = static_cast<int>(
      db_.query_int("SELECT COALESCE(MAX(revision), 0) + 1 FROM contracts WHERE version_id = ?",
                    version_id)
          .value_or(1));
  std::optional<std::string> reviewed_at;
  if (rec.review == Review::Reviewed)
    reviewed_at = rec.reviewed_at.empty()
                      ? *db_.query_text("SELECT strftime('%Y-%m-%dT%H:%M:%fZ','now')")
                      : rec.reviewed_at;
  db_.prepare(
         "INSERT INTO contracts (version_id, revision, lpcl, json, digest, status, diagnostics,"
         " prompt_id, prompt_version, drafter, model, source, review, reviewed_at)"
         " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind_all(version_id, result.revision, rec.lpcl, json, digest, to_string(rec.status),
                diagnostics, rec.prompt_id, rec.prompt_version, to_string(rec.drafter), rec.model,
                rec.source, to_string(rec.review), reviewed_at)
      .run();
  result.id = db_.last_insert_rowid();

  Stmt link = db_.prepare(
      "INSERT INTO contract_facts (contract_id, facts_digest, source) VALUES (?, ?, ?) "
      "ON CONFLICT (contract_id, facts_digest) DO NOTHING");
  for (const FactsSource& f : rec.facts) {
    std::string fd = f.json.empty() ? f.digest : put_facts(f.json);
    if (!db_.query_int("SELECT 1 FROM facts WHERE digest = ?", fd))
      throw StoreError(db_.path() + ": put_contract: facts '" + fd + "' of " + rec.library + " " +
                       rec.version + " are not stored; pass their JSON in FactsSource::json");
    link.bind_all(result.id, fd, f.source).run();
  }
  Stmt round = db_.prepare(
      "INSERT INTO validation_rounds (contract_id, round, drafter, diagnostics, repairs)"
      " VALUES (?, ?, ?, ?, ?)");
  for (const ValidationRound& r : rec.rounds) {
    round
        .bind_all(result.id, r.round, r.drafter, r.diagnostics.empty() ? "[]" : r.diagnostics,
                  r.repairs.empty() ? "[]" : r.repairs)
        .run();
  }
  tx.commit();
  return result;
}

std::optional<ContractRecord> Store::get_contract(const std::string& lib,
                                                  const std::string& version,
                                                  int revision) const {
  Stmt s = db_.prepare(
      "SELECT c.id, c.revision, c.lpcl, c.json, c.digest, c.status, c.diagnostics, c.prompt_id,"
      " c.prompt_version, c.drafter, c.model, c.source, c.created_at, c.review, c.reviewed_at"
      " FROM contracts c JOIN versions v ON v.id = c.version_id"
      " JOIN libraries l ON l.id = v.library_id"
      " WHERE l.name = ? AND v.version = ? AND (? = 0 OR c.revision = ?)"
      " ORDER BY c.revision DESC LIMIT 1");
  s.bind_all(lib, version, revision, revision);
  if (!s.step()) return std::nullopt;
  ContractRecord r;
  r.library = lib;
  r.version = version;
  r.id = s.column_int(0);
  r.revision = static_cast<int>(s.column_int(1));
  r.lpcl = s.column_text(2);
  r.json = s.column_text(3);
  r.digest = s.column_text(4);
  r.status = status_from(s.column_text(5));
  r.diagnostics = s.column_text(6);
  r.prompt_id = s.column_text(7);
  r.prompt_version = static_cast<int>(s.column_int(8));
  r.drafter = drafter_from(s.column_text(9));
  r.model = s.column_text(10);
  r.source = s.column_text(11);
  r.created_at = s.column_text(12);
  r.review = review_from(s.column_text(13));
  r.reviewed_at = s.column_text(14);
  r.facts = contract_facts(r.id);
  r.rounds = rounds(r.id);
  return r;
}

std::optional<ContractRecord> Store::latest_contract(const std::string& lib) const {
  auto vs = versions(lib);
  if (vs.empty()) return std::nullopt;
  return get_contract(lib, vs.back().version);
}

std::optional<ContractRecord> Store::reviewed_contract(const std::string& lib) const {
  auto vs = versions(lib);
  for (auto v = vs.rbegin(); v != vs.rend(); ++v)
    if (v->reviewed_revision > 0) return get_contract(lib, v->version, v->reviewed_revision);
  return std::nullopt;
}

std::vector<ContractRecord> Store::lookup_contracts() const {
  std::vector<ContractRecord> reviewed, drafts;
  for (const LibraryInfo& l : libraries()) {
    auto vs = versions(l.name);
    if (vs.empty()) continue;
    for (auto v = vs.rbegin(); v != vs.rend(); ++v)
      if (v->reviewed_revision > 0) {
        if (auto r = get_contract(l.name, v->version, v->reviewed_revision)) reviewed.push_back(std::move(*r));
        break;
      }
    if (vs.back().review == Review::Unreviewed)
      if (auto d = get_contract(l.name, vs.back().version)) drafts.push_back(std::move(*d));
  }
  for (auto& d : drafts) reviewed.push_back(std::move(d));
  for (auto& r : reviewed) {  // callers compose; provenance is for `contracts show`
    r.facts.clear();
    r.rounds.clear();
  }
  return reviewed;
}

std::optional<int> Store::set_review(const std::string& lib, const std::string& version, int revision,
                                     Review review) {
  Transaction tx(db_);
  auto target = db_.query_int(
      "SELECT c.id FROM contracts c JOIN versions v ON v.id = c.version_id"
      " JOIN libraries l ON l.id = v.library_id"
      " WHERE l.name = ? AND v.version = ? AND (? = 0 OR c.revision = ?)"
      " ORDER BY c.revision DESC LIMIT 1",
      lib, version, revision, revision);
  if (!target) return std::nullopt;
  if (review == Review::Reviewed)
    db_.prepare("UPDATE contracts SET review = 'reviewed',"
                " reviewed_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?")
        .bind_all(*target)
        .run();
  else
    db_.prepare("UPDATE contracts SET review = 'unreviewed', reviewed_at = NULL WHERE id = ?")
        .bind_all(*target)
        .run();
  int marked = static_cast<int>(*db_.query_int("SELECT revision FROM contracts WHERE id = ?", *target));
  tx.commit();
  return marked;
}

std::vector<LibraryInfo> Store::libraries() const {
  std::vector<LibraryInfo> out;
  Stmt s = db_.prepare("SELECT l.name, v.version FROM libraries l"
                       " JOIN versions v ON v.library_id = l.id ORDER BY l.name");
  while (s.step()) {
    std::string name = s.column_text(0), version = s.column_text(1);
    if (out.empty() || out.back().name != name) out.push_back({name, 0, {}});
    LibraryInfo& li = out.back();
    ++li.versions;
    if (li.latest_version.empty() || compare_versions(version, li.latest_version) > 0)
      li.latest_version = version;
  }
  return out;
}

std::vector<VersionInfo> Store::versions(const std::string& lib) const {
  std::vector<VersionInfo> out;
  Stmt s = db_.prepare(std::string("SELECT v.version, ") + kVersionInfoColumns +
                       " FROM versions v JOIN libraries l ON l.id = v.library_id"
                       " JOIN contracts c ON c.version_id = v.id"
                       " WHERE l.name = ? AND c.revision ="
                       " (SELECT MAX(revision) FROM contracts WHERE version_id = v.id)");
  s.bind_all(lib);
  while (s.step()) {
    VersionInfo v = read_version_info(s, 1);
    v.version = s.column_text(0);
    out.push_back(std::move(v));
  }
  std::stable_sort(out.begin(), out.end(), [](const VersionInfo& a, const VersionInfo& b) {
    return compare_versions(a.version, b.version) < 0;
  });
  return out;
}

std::vector<VersionInfo> Store::revisions(const std::string& lib,
                                          const std::string& version) const {
  std::vector<VersionInfo> out;
  Stmt s = db_.prepare(std::string("SELECT ") + kVersionInfoColumns +
                       " FROM contracts c JOIN versions v ON v.id = c.version_id"
                       " JOIN libraries l ON l.id = v.library_id"
                       " WHERE l.name = ? AND v.version = ? ORDER BY c.revision");
  s.bind_all(lib, version);
  while (s.step()) {
    VersionInfo v = read_version_info(s, 0);
    v.version = version;
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<FactsSource> Store::contract_facts(std::int64_t contract_id) const {
  std::vector<FactsSource> out;
  Stmt s = db_.prepare("SELECT facts_digest, source FROM contract_facts WHERE contract_id = ?"
                       " ORDER BY rowid");
  s.bind_all(contract_id);
  while (s.step()) out.push_back({s.column_text(0), {}, s.column_text(1)});
  return out;
}

std::vector<ValidationRound> Store::rounds(std::int64_t contract_id) const {
  std::vector<ValidationRound> out;
  Stmt s = db_.prepare("SELECT round, drafter, diagnostics, repairs FROM validation_rounds"
                       " WHERE contract_id = ? ORDER BY round");
  s.bind_all(contract_id);
  while (s.step())
    out.push_back({static_cast<int>(s.column_int(0)), s.column_text(1), s.column_text(2),
                   s.column_text(3)});
  return out;
}

bool Store::remove_contract(const std::string& lib, const std::string& version) {
  Transaction tx(db_);
  auto ids = db_.prepare("SELECT l.id, v.id FROM versions v JOIN libraries l ON l.id = v.library_id"
                         " WHERE l.name = ? AND v.version = ?");
  ids.bind_all(lib, version);
  if (!ids.step()) return false;
  std::int64_t library_id = ids.column_int(0), version_id = ids.column_int(1);
  ids.reset();
  db_.prepare("DELETE FROM versions WHERE id = ?").bind_all(version_id).run();
  if (!db_.query_int("SELECT 1 FROM versions WHERE library_id = ?", library_id))
    db_.prepare("DELETE FROM libraries WHERE id = ?").bind_all(library_id).run();
  tx.commit();
  return true;
}

std::string Store::put_facts(std::string_view json_text) {
  std::string canonical = canonical_json(json_text, "the facts");
  std::string digest = sha256_hex(canonical);
  db_.prepare("INSERT INTO facts (digest, json, bytes) VALUES (?, ?, ?)"
              " ON CONFLICT (digest) DO NOTHING")
      .bind_all(digest, canonical, static_cast<std::int64_t>(canonical.size()))
      .run();
  return digest;
}

std::optional<std::string> Store::get_facts(const std::string& digest) const {
  return db_.query_text("SELECT json FROM facts WHERE digest = ?", digest);
}

std::optional<std::string> Store::cached_answer(const std::string& model,
                                                const std::string& prompt_digest) const {
  return db_.query_text(
      "SELECT answer FROM llm_calls WHERE model = ? AND prompt_digest = ? AND status = 'ok'"
      " AND cached = 0 ORDER BY id DESC LIMIT 1",
      model, prompt_digest);
}

void Store::set_llm_call_status(std::int64_t id, const std::string& status) {
  db_.prepare("UPDATE llm_calls SET status = ? WHERE id = ?").bind_all(status, id).step();
}

std::int64_t Store::record_llm_call(const LlmCall& c) {
  if (c.model.empty() || c.prompt_digest.empty())
    throw StoreError(db_.path() + ": record_llm_call: model and prompt digest must be set");
  db_.prepare("INSERT INTO llm_calls (library, version, model, prompt_digest, prompt_tokens,"
              " completion_tokens, latency_ms, status, answer, cached)"
              " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind_all(c.library, c.version, c.model, c.prompt_digest, c.prompt_tokens,
                c.completion_tokens, c.latency_ms, c.status.empty() ? "ok" : c.status, c.answer,
                c.cached ? 1 : 0)
      .run();
  return db_.last_insert_rowid();
}

std::vector<LlmCall> Store::llm_calls(const std::string& lib, const std::string& version) const {
  std::vector<LlmCall> out;
  Stmt s = db_.prepare(
      "SELECT id, model, prompt_digest, prompt_tokens, completion_tokens, latency_ms, status,"
      " answer, cached, created_at FROM llm_calls WHERE library = ? AND version = ? ORDER BY id");
  s.bind_all(lib, version);
  while (s.step()) {
    LlmCall c;
    c.library = lib;
    c.version = version;
    c.id = s.column_int(0);
    c.model = s.column_text(1);
    c.prompt_digest = s.column_text(2);
    c.prompt_tokens = s.column_int(3);
    c.completion_tokens = s.column_int(4);
    c.latency_ms = s.column_double(5);
    c.status = s.column_text(6);
    c.answer = s.column_text(7);
    c.cached = s.column_int(8) != 0;
    c.created_at = s.column_text(9);
    out.push_back(std::move(c));
  }
  return out;
}

Usage Store::usage(const std::string& lib, const std::string& version) const {
  Stmt s = db_.prepare(
      "SELECT COALESCE(SUM(cached = 0), 0), COALESCE(SUM(cached), 0),"
      " COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0),"
      " COALESCE(SUM(latency_ms), 0) FROM llm_calls WHERE library = ? AND version = ?");
  s.bind_all(lib, version);
  Usage u;
  if (s.step()) {
    u.calls = s.column_int(0);
    u.cache_hits = s.column_int(1);
    u.prompt_tokens = s.column_int(2);
    u.completion_tokens = s.column_int(3);
    u.latency_ms = s.column_double(4);
  }
  return u;
}

}  // namespace syspilot::store
