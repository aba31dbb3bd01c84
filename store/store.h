// The SQLite contract store: a small RAII layer over SQLite (Database, Stmt, Transaction),
// versioned per-component schema migrations, and the Store of contracts, facts and LLM calls.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace syspilot::lpcl { struct Contract; }

namespace syspilot::store {

// Every store failure: the message names the database path, what went wrong and what to do
// ("/x/syspilot.db: file is not a database (...); move it away or pass --db FILE").
struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Lower-case hex SHA-256 (64 characters) of the bytes of `data`.
std::string sha256_hex(std::string_view data);

// $SYSPILOT_DB, else $XDG_DATA_HOME/syspilot/syspilot.db, else ~/.local/share/syspilot/syspilot.db.
std::string default_db_path();

// Orders version strings the way people read them: "0.3.9" < "0.3.21" < "0.3.21.1",
// "1.5.4+dfsg2-5" < "1.5.7"; digit runs compare numerically, the rest as text.
// Returns <0, 0 or >0.
int compare_versions(std::string_view a, std::string_view b);

// ---------------------------------------------------------------------------------------
// Schema migrations. Each stage owns a component name ("core" for this file's tables,
// "tuner", "service", ...) and registers its migrations from its own folder; versions of a
// component are applied in increasing order, each in its own transaction, and recorded in
// schema_migrations(component, version, applied_at). Opening a database applies every
// registered migration not yet applied; Database::migrate() applies those registered later.
// A database whose recorded version of a registered component is higher than the newest this
// binary knows is refused with a StoreError (a newer syspilot wrote it).
//
// Registering the same (component, version) twice with the same SQL is a no-op; with a
// different SQL it throws StoreError (a programming error caught in tests). Versions start
// at 1 and need not be contiguous. Register before opening, e.g. from the stage's own
// open function; a static MigrationRegistration works too, but only when its object file is
// linked in (put it in a .cpp whose other symbols are used).
void register_migration(std::string component, int version, std::string sql);

struct MigrationRegistration {
  MigrationRegistration(std::string component, int version, std::string sql) {
    register_migration(std::move(component), version, std::move(sql));
  }
};

// The newest registered version of `component`; 0 when none is registered.
int known_schema_version(const std::string& component);

// ---------------------------------------------------------------------------------------
class Database;

// A prepared statement. Parameters are 1-based (as in SQLite), columns 0-based.
// Not copyable; movable. A bind() after step() resets the statement first, so one Stmt
// can be re-run in a loop: bind..., step/run, bind..., step/run.
class Stmt {
 public:
  Stmt() = default;
  Stmt(Stmt&& o) noexcept;
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  Stmt& bind(int idx, std::int64_t v);
  Stmt& bind(int idx, int v) { return bind(idx, static_cast<std::int64_t>(v)); }
  Stmt& bind(int idx, double v);
  Stmt& bind(int idx, std::string_view text);
  Stmt& bind(int idx, const std::string& text) { return bind(idx, std::string_view(text)); }
  Stmt& bind(int idx, const char* text) { return bind(idx, std::string_view(text)); }
  Stmt& bind(int idx, std::nullopt_t);
  template <class T>
  Stmt& bind(int idx, const std::optional<T>& v) {
    return v ? bind(idx, *v) : bind(idx, std::nullopt);
  }
  Stmt& bind_blob(int idx, std::string_view bytes);
  Stmt& bind_null(int idx) { return bind(idx, std::nullopt); }

  // Binds every argument in order, starting at parameter 1.
  template <class... A>
  Stmt& bind_all(const A&... args) {
    int i = 0;
    (bind(++i, args), ...);
    return *this;
  }

  // Advances; true when a row is available, false when done. Throws StoreError on failure.
  bool step();
  // Steps to completion (for INSERT/UPDATE/DELETE); returns sqlite3_changes().
  int run();
  // Resets for re-execution and clears bindings.
  void reset();

  int column_count() const;
  bool is_null(int col) const;
  std::int64_t column_int(int col) const;
  double column_double(int col) const;
  std::string column_text(int col) const;  // "" for NULL
  std::optional<std::string> column_opt_text(int col) const;
  std::optional<std::int64_t> column_opt_int(int col) const;

  sqlite3_stmt* handle() const { return stmt_; }

 private:
  friend class Database;
  Stmt(sqlite3_stmt* s, const Database* db) : stmt_(s), db_(db) {}
  sqlite3_stmt* stmt_ = nullptr;
  const Database* db_ = nullptr;
  bool done_ = false;
};

struct OpenOptions {
  bool read_only = false;      // open without write access; migrations must be current
  bool create = true;          // create the file (and its parent folders) when missing
  int busy_timeout_ms = 10000; // how long a writer waits for another's lock
};

// One SQLite connection: WAL journal, foreign keys on, busy timeout, migrations applied.
// Use one Database per thread (a connection is not shared between threads); any number of
// processes and threads may read while one writes.
class Database {
 public:
  explicit Database(const std::string& path, OpenOptions opts = {});
  Database(Database&& o) noexcept;
  Database& operator=(Database&& o) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  // Runs one or more statements with no parameters and no result rows.
  void exec(std::string_view sql);
  Stmt prepare(std::string_view sql) const;

  // One-shot helpers: the first column of the first row, or nullopt when there is no row.
  template <class... A>
  std::optional<std::int64_t> query_int(std::string_view sql, const A&... args) const {
    Stmt s = prepare(sql);
    s.bind_all(args...);
    if (!s.step() || s.is_null(0)) return std::nullopt;
    return s.column_int(0);
  }
  template <class... A>
  std::optional<std::string> query_text(std::string_view sql, const A&... args) const {
    Stmt s = prepare(sql);
    s.bind_all(args...);
    if (!s.step() || s.is_null(0)) return std::nullopt;
    return s.column_text(0);
  }

  std::int64_t last_insert_rowid() const;
  bool in_transaction() const;
  bool read_only() const { return read_only_; }
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

  // Applies registered migrations not yet applied (for components registered after open).
  void migrate();
  // The recorded version of `component` in this file; 0 when none.
  int schema_version(const std::string& component) const;
  // "ok", or the problems PRAGMA integrity_check reports, one per line.
  std::string integrity_check() const;

  // A StoreError for the current SQLite error: "<path>: <what>: <sqlite message>. <hint>".
  [[noreturn]] void fail(std::string_view what) const;

 private:
  void open_connection(const std::string& target, int flags, int busy_timeout_ms);
  sqlite3* db_ = nullptr;
  std::string path_;
  bool read_only_ = false;
};

// BEGIN IMMEDIATE on construction (a SAVEPOINT when the connection is already inside a
// transaction, so calls compose), COMMIT on commit(), ROLLBACK in the destructor otherwise.
class Transaction {
 public:
  explicit Transaction(Database& db);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  void commit();

 private:
  Database& db_;
  std::string savepoint_;  // empty for a top-level transaction
  bool open_ = true;
};

// ---------------------------------------------------------------------------------------
// The contract store.

enum class ContractStatus { Converged, OpenDiagnostics };
const char* to_string(ContractStatus s);  // "converged" | "open-diagnostics"

enum class Drafter { Offline, Llm, Manual };
const char* to_string(Drafter d);  // "offline" | "llm" | "manual"

// Whether a person has read a contract against the library's documentation and vouched for
// it. Drafts (offline or LLM) are stored unreviewed; `syspilot contracts review` marks a
// revision reviewed; contracts imported from files (corpus/) are stored reviewed. Composition
// and analysis prefer reviewed contracts over unreviewed drafts.
enum class Review { Unreviewed, Reviewed };
const char* to_string(Review r);  // "unreviewed" | "reviewed"

// One validation/repair round of a synthesis.
struct ValidationRound {
  int round = 0;              // 1-based
  std::string drafter;        // "offline" | "llm" | "repair" (deterministic repairs) | ...
  std::string diagnostics;    // JSON array of diagnostics reported in this round
  std::string repairs;        // JSON array of repairs applied in this round
};

// The facts a contract was drafted from. `json` is stored content-addressed when non-empty
// (and its digest computed); otherwise `digest` must name facts already stored.
struct FactsSource {
  std::string digest;
  std::string json;
  std::string source;  // "dir:/path", "git:URL@TAG", "debian:openblas=0.3.21+ds-4", ...
};

// Everything one synthesis produced. put_contract stores it in one transaction.
struct ContractRecord {
  std::string library;
  std::string version;
  std::string lpcl;          // canonical LPCL text
  std::string json;          // lpcl::to_json of the same contract, serialised
  std::string digest;        // SHA-256 of `lpcl`; computed by put_contract when empty
  ContractStatus status = ContractStatus::Converged;
  std::string diagnostics;   // JSON array of open diagnostics ("[]" when converged)
  std::string prompt_id;     // template id, empty for offline/manual
  int prompt_version = 0;
  Drafter drafter = Drafter::Offline;
  std::string model;         // LLM model name, empty otherwise
  std::string source;        // where the contract came from: "synth dir:/src", "import:/x.lpcl"
  std::vector<FactsSource> facts;
  std::vector<ValidationRound> rounds;
  Review review = Review::Unreviewed;
  std::string reviewed_at;   // ISO 8601 UTC; put_contract stamps "now" for a reviewed record without one

  // Filled when read back.
  std::int64_t id = 0;
  int revision = 0;          // 1 for the first store of (library, version), then 2, 3, ...
  std::string created_at;    // ISO 8601 UTC

  // Fills library, version, lpcl (lpcl::format) and json (lpcl::to_json) from a contract.
  static ContractRecord of(const lpcl::Contract& c);
};

// What put_contract did.
struct PutResult {
  std::int64_t id = 0;
  int revision = 0;
  bool changed = true;  // false when the digest equals the previous revision's
};

// One stored version of a library (its newest revision).
struct VersionInfo {
  std::string version;
  int revision = 0;
  std::string digest;
  ContractStatus status = ContractStatus::Converged;
  Drafter drafter = Drafter::Offline;
  std::string model;
  std::string created_at;
  Review review = Review::Unreviewed;  // of this (the newest) revision
  int reviewed_revision = 0;           // the newest reviewed revision of this version; 0: none
};

struct LibraryInfo {
  std::string name;
  int versions = 0;
  std::string latest_version;  // highest by compare_versions
};

// One call to an LLM endpoint (or a cache hit, with cached = true and no tokens).
struct LlmCall {
  std::string library;        // what the call was drafting, for usage accounting
  std::string version;
  std::string model;
  std::string prompt_digest;  // sha256_hex of the exact request body sent
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  double latency_ms = 0;
  std::string status;         // "ok" | "http-429" | "http-500" | "timeout" | "error: ..." ...
  std::string answer;         // the completion text ("" on failure)
  bool cached = false;
  // Filled when read back.
  std::int64_t id = 0;
  std::string created_at;
};

struct Usage {
  std::int64_t calls = 0;         // calls that reached the endpoint
  std::int64_t cache_hits = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  double latency_ms = 0;          // summed
};

class Store {
 public:
  // Opens (creating the file and its parent folders) and migrates. Throws StoreError.
  explicit Store(const std::string& path, OpenOptions opts = {});
  static Store open(const std::string& path, OpenOptions opts = {}) { return Store(path, opts); }

  // Stores everything of one synthesis atomically: library and version rows, the contract
  // as a new revision, its facts (deduplicated), provenance and validation rounds.
  PutResult put_contract(const ContractRecord& rec);

  // The newest revision of (lib, version), or a given revision; nullopt when absent.
  std::optional<ContractRecord> get_contract(const std::string& lib, const std::string& version,
                                             int revision = 0) const;
  // The newest revision of the highest version (compare_versions) of `lib`.
  std::optional<ContractRecord> latest_contract(const std::string& lib) const;
  // The newest reviewed revision of the highest version of `lib` that has one; nullopt when
  // no revision of `lib` is reviewed.
  std::optional<ContractRecord> reviewed_contract(const std::string& lib) const;
  // The contracts composition may use, in the order it prefers them: every library's reviewed
  // contract (reviewed_contract) first, then, for each library whose latest_contract is an
  // unreviewed draft, that draft. Within each part, by library name. Facts and rounds are not
  // read (ContractRecord::facts and ::rounds stay empty).
  std::vector<ContractRecord> lookup_contracts() const;
  // Marks a revision (0: the newest) of (lib, version) reviewed or unreviewed and returns the
  // revision marked; nullopt when there is no such contract.
  std::optional<int> set_review(const std::string& lib, const std::string& version, int revision, Review r);
  std::vector<LibraryInfo> libraries() const;  // sorted by name
  std::vector<VersionInfo> versions(const std::string& lib) const;  // ascending by version
  std::vector<VersionInfo> revisions(const std::string& lib, const std::string& version) const;
  // Provenance and rounds of a stored contract (by ContractRecord::id).
  std::vector<FactsSource> contract_facts(std::int64_t contract_id) const;  // json left empty
  std::vector<ValidationRound> rounds(std::int64_t contract_id) const;
  // Removes every revision of (lib, version), with rounds and provenance; the library row
  // goes when it has no version left. Facts stay (content-addressed, possibly shared).
  // Returns false when nothing was stored.
  bool remove_contract(const std::string& lib, const std::string& version);

  // Content-addressed facts: the digest is sha256_hex of the canonical JSON (keys sorted,
  // no whitespace), so equal facts written differently share one row.
  // Throws StoreError when `json_text` is not valid JSON.
  std::string put_facts(std::string_view json_text);
  std::optional<std::string> get_facts(const std::string& digest) const;  // canonical JSON

  // The answer of the most recent successful, non-cached call with this model and prompt.
  std::optional<std::string> cached_answer(const std::string& model,
                                           const std::string& prompt_digest) const;
  std::int64_t record_llm_call(const LlmCall& call);
  // Changes a recorded call's status (an answer that held no contract that parses is
  // "unparsed"): only "ok" answers are served by cached_answer().
  void set_llm_call_status(std::int64_t id, const std::string& status);
  std::vector<LlmCall> llm_calls(const std::string& lib, const std::string& version) const;
  Usage usage(const std::string& lib, const std::string& version) const;

  // The connection, for other stages' own tables in the same file.
  Database& db() { return db_; }
  const Database& db() const { return db_; }
  const std::string& path() const { return db_.path(); }

 private:
  Database db_;
};

}  // namespace syspilot::store
