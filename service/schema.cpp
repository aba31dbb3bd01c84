// Service tables and bearer-token administration: tokens are random, shown once, and stored
// only as SHA-256 digests, so a copy of the database does not reveal a usable token.
#include "service/schema.h"

#include <openssl/rand.h>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "tuner/session.h"

namespace syspilot::service {

namespace {
const char* kSchemaV1 = R"sql(
CREATE TABLE service_tokens(
  id INTEGER PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  scope TEXT NOT NULL CHECK(scope IN ('read', 'write')),
  label TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  revoked_at TEXT);
CREATE TABLE service_jobs(
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  library TEXT NOT NULL DEFAULT '',
  version TEXT NOT NULL DEFAULT '',
  request TEXT NOT NULL,
  state TEXT NOT NULL CHECK(state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  stage TEXT NOT NULL DEFAULT '',
  progress REAL NOT NULL DEFAULT 0,
  log TEXT NOT NULL DEFAULT '[]',
  diagnostics TEXT NOT NULL DEFAULT '[]',
  result TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  started_at TEXT,
  finished_at TEXT);
CREATE INDEX service_jobs_state ON service_jobs(state, created_at);
-- input digest (git tree, .dsc digest, tarball digest, directory digest) -> stored facts
CREATE TABLE service_facts_cache(
  input_digest TEXT PRIMARY KEY,
  facts_digest TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')));
-- which input produced the stored contract of (library, version)
CREATE TABLE service_inputs(
  library TEXT NOT NULL,
  version TEXT NOT NULL,
  input_digest TEXT NOT NULL,
  contract_digest TEXT NOT NULL,
  source TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  PRIMARY KEY(library, version));
)sql";
}  // namespace

void register_schema() {
  static std::once_flag once;
  std::call_once(once, [] {
    store::register_migration("service", 1, kSchemaV1);
    // The sessions and analyses the dashboard reads: their tables exist before a tune runs.
    tuner::register_session_schema();
  });
}

store::Store open_store(const std::string& path) {
  register_schema();
  return store::Store(path);
}

const char* to_string(Scope s) { return s == Scope::Write ? "write" : "read"; }

std::optional<Scope> scope_from_string(const std::string& s) {
  if (s == "read") return Scope::Read;
  if (s == "write") return Scope::Write;
  return std::nullopt;
}

std::optional<Scope> verify_token(const store::Database& db, const std::string& token) {
  if (token.size() < 8 || token.size() > 256) return std::nullopt;
  auto scope = db.query_text("SELECT scope FROM service_tokens WHERE hash = ?1 AND revoked_at IS NULL",
                             store::sha256_hex(token));
  if (!scope) return std::nullopt;
  return scope_from_string(*scope);
}

std::string create_token(const std::string& db_path, Scope scope, const std::string& label) {
  unsigned char raw[24];
  if (RAND_bytes(raw, sizeof raw) != 1) throw std::runtime_error("no randomness available for a token");
  static const char* digits = "0123456789abcdef";
  std::string token = "spt_";
  for (unsigned char c : raw) {
    token += digits[c >> 4];
    token += digits[c & 15];
  }
  store::Store st = open_store(db_path);
  st.db().prepare("INSERT INTO service_tokens(hash, prefix, scope, label) VALUES (?1, ?2, ?3, ?4)")
      .bind_all(store::sha256_hex(token), token.substr(0, 10), std::string(to_string(scope)), label)
      .run();
  return token;
}

std::vector<TokenInfo> list_tokens(const std::string& db_path) {
  store::Store st = open_store(db_path);
  auto s = st.db().prepare(
      "SELECT id, prefix, scope, label, created_at, revoked_at FROM service_tokens ORDER BY id");
  std::vector<TokenInfo> out;
  while (s.step()) {
    TokenInfo t;
    t.id = s.column_int(0);
    t.prefix = s.column_text(1);
    t.scope = scope_from_string(s.column_text(2)).value_or(Scope::Read);
    t.label = s.column_text(3);
    t.created_at = s.column_text(4);
    t.revoked_at = s.column_text(5);
    out.push_back(std::move(t));
  }
  return out;
}

bool revoke_token(const std::string& db_path, long long id) {
  store::Store st = open_store(db_path);
  return st.db()
             .prepare("UPDATE service_tokens SET revoked_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') "
                      "WHERE id = ?1 AND revoked_at IS NULL")
             .bind_all(static_cast<std::int64_t>(id))
             .run() > 0;
}

}  // namespace syspilot::service

namespace syspilot::service {
store::Store& thread_store(const std::string& path) {
  thread_local std::map<std::string, std::unique_ptr<store::Store>> stores;
  auto& s = stores[path];
  if (!s) s = std::make_unique<store::Store>(open_store(path));
  return *s;
}
}  // namespace syspilot::service
