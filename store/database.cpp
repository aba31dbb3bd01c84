// The SQLite layer of the store: connections (WAL, foreign keys, busy timeout), prepared
// statements, transactions, the migration registry, and small shared functions.
#include <fcntl.h>
#include <openssl/evp.h>
#include <pwd.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "store/store.h"

namespace syspilot::store {

// The layout of schema_migrations itself, kept in PRAGMA user_version. A file with a higher
// value was written by a newer syspilot whose bookkeeping this binary cannot read.
constexpr int kFormat = 1;

std::string sha256_hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr) != 1)
    throw StoreError("SHA-256 failed in OpenSSL (EVP_Digest)");
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

std::string default_db_path() {
  if (const char* p = std::getenv("SYSPILOT_DB"); p && *p) return p;
  // The XDG spec says relative values are invalid and must be ignored.
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x == '/')
    return std::string(x) + "/syspilot/syspilot.db";
  std::string home;
  if (const char* h = std::getenv("HOME"); h && *h) {
    home = h;
  } else if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) {
    home = pw->pw_dir;
  } else {
    home = ".";
  }
  return home + "/.local/share/syspilot/syspilot.db";
}

int compare_versions(std::string_view a, std::string_view b) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    bool da = is_digit(a[i]), db = is_digit(b[j]);
    if (da && db) {
      size_t ei = i, ej = j;
      while (ei < a.size() && is_digit(a[ei])) ++ei;
      while (ej < b.size() && is_digit(b[ej])) ++ej;
      std::string_view na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size() ? -1 : 1;
      if (int c = na.compare(nb)) return c < 0 ? -1 : 1;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) {
      // '~' sorts before anything, even the end (Debian: 1.0~rc1 < 1.0); digits before text.
      if (a[i] == '~' || b[j] == '~') return a[i] == '~' ? -1 : 1;
      if (da != db) return da ? -1 : 1;
      return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]) ? -1 : 1;
    }
    ++i;
    ++j;
  }
  if (i < a.size()) return a[i] == '~' ? -1 : 1;
  if (j < b.size()) return b[j] == '~' ? 1 : -1;
  return 0;
}

// ---------------------------------------------------------------------------------------
// Migration registry.
namespace {
struct Registry {
  std::mutex mu;
  std::map<std::string, std::map<int, std::string>> migrations;  // component -> version -> sql
};
Registry& registry() {
  static Registry r;
  return r;
}
std::map<std::string, std::map<int, std::string>> registered_migrations() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  return r.migrations;
}
}  // namespace

void register_migration(std::string component, int version, std::string sql) {
  if (component.empty() || version < 1)
    throw StoreError("register_migration: component must be non-empty and version >= 1 (got '" +
                     component + "', " + std::to_string(version) + ")");
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto& versions = r.migrations[component];
  auto [it, inserted] = versions.emplace(version, sql);
  if (!inserted && it->second != sql)
    throw StoreError("register_migration: " + component + " version " + std::to_string(version) +
                     " registered twice with different SQL; give the new migration a new version");
}

int known_schema_version(const std::string& component) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  auto it = r.migrations.find(component);
  return it == r.migrations.end() || it->second.empty() ? 0 : it->second.rbegin()->first;
}

// ---------------------------------------------------------------------------------------
// Stmt.
Stmt::Stmt(Stmt&& o) noexcept : stmt_(o.stmt_), db_(o.db_), done_(o.done_) { o.stmt_ = nullptr; }
Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(stmt_);
    stmt_ = o.stmt_;
    db_ = o.db_;
    done_ = o.done_;
    o.stmt_ = nullptr;
  }
  return *this;
}
Stmt::~Stmt() { sqlite3_finalize(stmt_); }

namespace {
void check_bind(int rc, const Database* db, int idx) {
  if (rc != SQLITE_OK) db->fail("binding parameter " + std::to_string(idx));
}
}  // namespace

// A bind after stepping starts a new execution: reset first (bindings are kept until
// overwritten, so every parameter must be bound again, as callers do).
#define SYSPILOT_RESET_IF_STEPPED()                                   \
  do {                                                                \
    if (done_ || sqlite3_stmt_busy(stmt_)) {                          \
      sqlite3_reset(stmt_);                                           \
      done_ = false;                                                  \
    }                                                                 \
  } while (0)

Stmt& Stmt::bind(int idx, std::int64_t v) {
  SYSPILOT_RESET_IF_STEPPED();
  check_bind(sqlite3_bind_int64(stmt_, idx, v), db_, idx);
  return *this;
}
Stmt& Stmt::bind(int idx, double v) {
  SYSPILOT_RESET_IF_STEPPED();
  check_bind(sqlite3_bind_double(stmt_, idx, v), db_, idx);
  return *this;
}
Stmt& Stmt::bind(int idx, std::string_view text) {
  SYSPILOT_RESET_IF_STEPPED();
  check_bind(sqlite3_bind_text64(stmt_, idx, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
             db_, idx);
  return *this;
}
Stmt& Stmt::bind(int idx, std::nullopt_t) {
  SYSPILOT_RESET_IF_STEPPED();
  check_bind(sqlite3_bind_null(stmt_, idx), db_, idx);
  return *this;
}
Stmt& Stmt::bind_blob(int idx, std::string_view bytes) {
  SYSPILOT_RESET_IF_STEPPED();
  check_bind(sqlite3_bind_blob64(stmt_, idx, bytes.data(), bytes.size(), SQLITE_TRANSIENT), db_, idx);
  return *this;
}
#undef SYSPILOT_RESET_IF_STEPPED

bool Stmt::step() {
  if (done_) {
    sqlite3_reset(stmt_);
    done_ = false;
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) {
    done_ = true;
    return false;
  }
  std::string sql = sqlite3_sql(stmt_) ? sqlite3_sql(stmt_) : "";
  if (sql.size() > 80) sql = sql.substr(0, 77) + "...";
  sqlite3_reset(stmt_);
  db_->fail("running '" + sql + "'");
}

int Stmt::run() {
  while (step()) {
  }
  return sqlite3_changes(sqlite3_db_handle(stmt_));
}

void Stmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  done_ = false;
}

int Stmt::column_count() const { return sqlite3_column_count(stmt_); }
bool Stmt::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
std::int64_t Stmt::column_int(int col) const { return sqlite3_column_int64(stmt_, col); }
double Stmt::column_double(int col) const { return sqlite3_column_double(stmt_, col); }
std::string Stmt::column_text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (!p) return {};
  return std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}
std::optional<std::string> Stmt::column_opt_text(int col) const {
  if (is_null(col)) return std::nullopt;
  return column_text(col);
}
std::optional<std::int64_t> Stmt::column_opt_int(int col) const {
  if (is_null(col)) return std::nullopt;
  return column_int(col);
}

// ---------------------------------------------------------------------------------------
// Database.
namespace {
std::string hint_for(int code) {
  switch (code & 0xff) {
    case SQLITE_NOTADB:
      return "The file is not a SQLite database: move it away, or pass --db FILE (or set "
             "SYSPILOT_DB) to use another file.";
    case SQLITE_CORRUPT:
      return "The database is corrupt: restore it from a backup, or move it away and "
             "rebuild it (`sqlite3 FILE .recover` can save what is left).";
    case SQLITE_READONLY:
      return "The file or its folder is not writable by this user: fix the permissions, or "
             "pass --db FILE to use a writable copy.";
    case SQLITE_CANTOPEN:
      return "Check that the folder exists and that this user may read (and, to write, "
             "create files in) it.";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "Another process held the database lock past the busy timeout; retry when it "
             "is done.";
    case SQLITE_FULL:
      return "The disk is full: free space and retry; nothing partial was stored.";
    case SQLITE_IOERR:
      return "An I/O error occurred: check the disk and the file system.";
    default:
      return {};
  }
}

// "file:" URI of `path` opened as immutable (no locking, no -shm), percent-encoding what a
// URI would otherwise read as syntax.
std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20) {
      static const char* hex = "0123456789ABCDEF";
      uri += '%';
      uri += hex[c >> 4];
      uri += hex[c & 15];
    } else {
      uri += static_cast<char>(c);
    }
  }
  return uri + "?immutable=1";
}
}  // namespace

void Database::open_connection(const std::string& target, int flags, int busy_timeout_ms) {
  // A new store holds token hashes and API results: readable by its owner only. SQLite gives
  // its -wal and -shm files the mode of the database file, so creating that one is enough.
  if ((flags & SQLITE_OPEN_CREATE) && !target.empty() && target != ":memory:" && target.rfind("file:", 0) != 0) {
    int fd = ::open(target.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
  }
  int rc = sqlite3_open_v2(target.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = path_ + ": cannot open the database: " +
                      (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
    std::string hint = hint_for(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(msg + (hint.empty() ? "" : ". " + hint));
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busy_timeout_ms);
}

void Database::fail(std::string_view what) const {
  int code = db_ ? sqlite3_extended_errcode(db_) : SQLITE_CANTOPEN;
  std::string msg = path_ + ": " + std::string(what) + ": " +
                    (db_ ? sqlite3_errmsg(db_) : "cannot open database");
  std::string hint = hint_for(code);
  if (!hint.empty()) msg += ". " + hint;
  throw StoreError(msg);
}

Database::Database(const std::string& path, OpenOptions opts) : path_(path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw StoreError("database path is empty: pass --db FILE or set SYSPILOT_DB");
  std::error_code ec;
  bool exists = fs::exists(path, ec);
  if (exists && fs::is_directory(path, ec))
    throw StoreError(path + ": is a folder, not a database file; pass --db FOLDER/syspilot.db");
  if (!exists && (!opts.create || opts.read_only))
    throw StoreError(path + ": no database here; store a contract first (syspilot synth or "
                            "syspilot contracts import) or pass --db FILE");
  if (!exists) {
    fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::exists(parent, ec)) {
      fs::create_directories(parent, ec);
      if (ec)
        throw StoreError(path + ": cannot create the folder " + parent.string() + ": " +
                         ec.message() + "; pass --db FILE in a writable folder");
    }
  }
  // A file this user cannot write is opened for reading, so that lookups still work and
  // writes fail with a clear message instead of the open failing.
  read_only_ = opts.read_only || (exists && ::access(path.c_str(), W_OK) != 0);
  int flags = (read_only_ ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
              SQLITE_OPEN_NOMUTEX;
  open_connection(path, flags, opts.busy_timeout_ms);
  try {
    // Reading the header catches "not a database" and header corruption before anything else.
    int user_version = 0;
    try {
      user_version = static_cast<int>(query_int("PRAGMA user_version").value_or(0));
    } catch (const StoreError&) {
      // A reader of a WAL file must create FILE-shm; in a folder it cannot write, SQLite
      // refuses even to read. With no FILE-wal the main file holds every committed
      // transaction, so it can be read as immutable instead.
      int code = sqlite3_extended_errcode(db_);
      if (!read_only_ || (code & 0xff) != SQLITE_READONLY || fs::exists(path + "-wal", ec)) throw;
      sqlite3_close_v2(db_);
      db_ = nullptr;
      open_connection(immutable_uri(path), flags | SQLITE_OPEN_URI, opts.busy_timeout_ms);
      user_version = static_cast<int>(query_int("PRAGMA user_version").value_or(0));
    }
    if (user_version > kFormat)
      throw StoreError(path + ": written by a newer syspilot (store format " +
                       std::to_string(user_version) + ", this binary knows " +
                       std::to_string(kFormat) + "); upgrade syspilot or pass --db FILE");
    // One statement, so one snapshot: another process creating this store may commit
    // schema_migrations between two separate reads, and the file would look foreign.
    auto foreign = query_int(
        "SELECT count(*) > 0 AND sum(name = 'schema_migrations' AND type = 'table') = 0 "
        "FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'");
    if (foreign.value_or(0) != 0)
      throw StoreError(path + ": a SQLite database, but not a syspilot store (it has tables "
                              "and no schema_migrations); pass --db FILE to use another file");
    exec("PRAGMA foreign_keys = ON");
    if (!read_only_) {
      // Switching to WAL needs the exclusive lock, and SQLite answers SQLITE_BUSY at once,
      // without the busy handler, while another process is creating the same file: retry
      // until the busy timeout.
      std::optional<std::string> mode;
      auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(opts.busy_timeout_ms);
      for (;;) {
        try {
          mode = query_text("PRAGMA journal_mode = WAL");
          break;
        } catch (const StoreError&) {
          if ((sqlite3_extended_errcode(db_) & 0xff) != SQLITE_BUSY ||
              std::chrono::steady_clock::now() >= deadline)
            throw;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
      if (!mode || *mode != "wal")
        throw StoreError(path + ": cannot switch the database to WAL mode (journal mode is '" +
                         mode.value_or("?") + "'); use a local file system");
      // WAL with synchronous=NORMAL stays consistent when the process is killed; only an OS
      // crash can lose the last transactions.
      exec("PRAGMA synchronous = NORMAL");
    }
    migrate();
  } catch (...) {
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw;
  }
}

Database::Database(Database&& o) noexcept
    : db_(o.db_), path_(std::move(o.path_)), read_only_(o.read_only_) {
  o.db_ = nullptr;
}
Database& Database::operator=(Database&& o) noexcept {
  if (this != &o) {
    sqlite3_close_v2(db_);
    db_ = o.db_;
    path_ = std::move(o.path_);
    read_only_ = o.read_only_;
    o.db_ = nullptr;
  }
  return *this;
}
Database::~Database() { sqlite3_close_v2(db_); }

void Database::exec(std::string_view sql) {
  std::string s(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    sqlite3_free(err);
    if (s.size() > 80) s = s.substr(0, 77) + "...";
    fail("running '" + s + "'");
  }
}

Stmt Database::prepare(std::string_view sql) const {
  sqlite3_stmt* s = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) {
    std::string t(sql);
    if (t.size() > 80) t = t.substr(0, 77) + "...";
    fail("preparing '" + t + "'");
  }
  return Stmt(s, this);
}

std::int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
bool Database::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

int Database::schema_version(const std::string& component) const {
  if (!query_int("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'"))
    return 0;
  return static_cast<int>(
      query_int("SELECT MAX(version) FROM schema_migrations WHERE component = ?", component)
          .value_or(0));
}

void Database::migrate() {
  auto all = registered_migrations();
  auto check_not_newer = [&](const std::string& component, int applied, int known) {
    if (applied > known)
      throw StoreError(path_ + ": its '" + component + "' schema is version " +
                       std::to_string(applied) + ", newer than this syspilot knows (" +
                       std::to_string(known) +
                       "); upgrade syspilot, or pass --db FILE to use another file");
  };
  if (read_only_) {
    for (auto& [component, versions] : all) {
      int applied = schema_version(component);
      int known = versions.rbegin()->first;
      check_not_newer(component, applied, known);
      if (applied < known)
        throw StoreError(path_ + ": its '" + component + "' schema (version " +
                         std::to_string(applied) + ") needs upgrading to version " +
                         std::to_string(known) +
                         ", but the file is opened read-only; open it once with write access");
    }
    return;
  }
  if (!query_int("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'")) {
    Transaction tx(*this);
    exec("CREATE TABLE IF NOT EXISTS schema_migrations ("
         " component TEXT NOT NULL,"
         " version INTEGER NOT NULL,"
         " applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),"
         " PRIMARY KEY (component, version))");
    exec("PRAGMA user_version = " + std::to_string(kFormat));
    tx.commit();
  }
  for (auto& [component, versions] : all) {
    int known = versions.rbegin()->first;
    int applied = schema_version(component);
    check_not_newer(component, applied, known);
    for (auto& [version, sql] : versions) {
      if (version <= applied) continue;
      // Another process may have applied it since we looked: re-check under the write lock.
      Transaction tx(*this);
      applied = schema_version(component);
      check_not_newer(component, applied, known);
      if (version <= applied) continue;
      exec(sql);
      prepare("INSERT INTO schema_migrations (component, version) VALUES (?, ?)")
          .bind_all(component, version)
          .run();
      tx.commit();
      applied = version;
    }
  }
}

std::string Database::integrity_check() const {
  Stmt s = prepare("PRAGMA integrity_check");
  std::string out;
  while (s.step()) {
    if (!out.empty()) out += '\n';
    out += s.column_text(0);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Transaction.
Transaction::Transaction(Database& db) : db_(db) {
  if (db_.in_transaction()) {
    static std::atomic<unsigned> counter{0};
    savepoint_ = "syspilot_sp" + std::to_string(++counter);
    db_.exec("SAVEPOINT " + savepoint_);
  } else {
    db_.exec("BEGIN IMMEDIATE");
  }
}

void Transaction::commit() {
  if (!open_) return;
  db_.exec(savepoint_.empty() ? "COMMIT" : "RELEASE " + savepoint_);
  open_ = false;
}

Transaction::~Transaction() {
  if (!open_) return;
  // SQLite may already have rolled back on its own (a full disk, an I/O error): ignore the
  // error of a second rollback.
  std::string sql = savepoint_.empty() ? "ROLLBACK"
                                       : "ROLLBACK TO " + savepoint_ + "; RELEASE " + savepoint_;
  sqlite3_exec(db_.handle(), sql.c_str(), nullptr, nullptr, nullptr);
}

}  // namespace syspilot::store
