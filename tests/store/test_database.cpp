// The SQLite layer: migrations (fresh, re-open, later components, newer schema refused),
// transactions and savepoints, statements, and the errors for files that are not stores.
#include <sqlite3.h>
#include <sys/stat.h>

#include <fstream>
#include <filesystem>
#include <functional>
#include <thread>

#include "tests/store/fixture.h"

using namespace syspilot::store;
using syspilot::store::testing::TempDir;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const StoreError& e) {
    return e.what();
  }
  return "(no error)";
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(CompareVersions, NumericRunsAndDebianSuffixes) {
  EXPECT_LT(compare_versions("0.3.9", "0.3.21"), 0);
  EXPECT_LT(compare_versions("0.3.21", "0.3.21.1"), 0);
  EXPECT_GT(compare_versions("0.3.29+ds-3", "0.3.21+ds-4"), 0);
  EXPECT_LT(compare_versions("1.5.4+dfsg2-5", "1.5.7"), 0);
  EXPECT_EQ(compare_versions("1.05", "1.5"), 0);
  EXPECT_LT(compare_versions("1.0~rc1", "1.0"), 0);
  EXPECT_GT(compare_versions("2021.8.0", "5.3.1"), 0);
  EXPECT_LT(compare_versions("1.0", "1.0a"), 0);
}

TEST(DefaultDbPath, EnvironmentOrder) {
  std::string saved_db = getenv("SYSPILOT_DB") ? getenv("SYSPILOT_DB") : "";
  std::string saved_xdg = getenv("XDG_DATA_HOME") ? getenv("XDG_DATA_HOME") : "";
  std::string saved_home = getenv("HOME") ? getenv("HOME") : "";
  setenv("SYSPILOT_DB", "/x/y.db", 1);
  setenv("XDG_DATA_HOME", "/data", 1);
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(default_db_path(), "/x/y.db");
  unsetenv("SYSPILOT_DB");
  EXPECT_EQ(default_db_path(), "/data/syspilot/syspilot.db");
  setenv("XDG_DATA_HOME", "relative/ignored", 1);
  EXPECT_EQ(default_db_path(), "/home/u/.local/share/syspilot/syspilot.db");
  unsetenv("XDG_DATA_HOME");
  EXPECT_EQ(default_db_path(), "/home/u/.local/share/syspilot/syspilot.db");
  auto restore = [](const char* k, const std::string& v) {
    if (v.empty()) unsetenv(k); else setenv(k, v.c_str(), 1);
  };
  restore("SYSPILOT_DB", saved_db);
  restore("XDG_DATA_HOME", saved_xdg);
  restore("HOME", saved_home);
}

TEST(Migrations, FreshFileGetsCoreSchemaInWalMode) {
  TempDir dir;
  std::string path = dir.file("nested/deeper/s.db");  // parent folders are created
  Store s(path);
  EXPECT_EQ(s.db().schema_version("core"), known_schema_version("core"));
  EXPECT_GE(known_schema_version("core"), 1);
  EXPECT_EQ(s.db().query_text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(s.db().query_int("PRAGMA foreign_keys"), 1);
  for (const char* table : {"libraries", "versions", "contracts", "facts", "contract_facts",
                            "validation_rounds", "llm_calls", "schema_migrations"})
    EXPECT_TRUE(s.db().query_int("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", table))
        << table;
}

TEST(Migrations, ReopenKeepsDataAndAppliesNothingTwice) {
  TempDir dir;
  std::string path = dir.file("s.db");
  {
    Store s(path);
    s.put_contract(syspilot::store::testing::make_record(1));
  }
  Store s(path);
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM schema_migrations WHERE component='core'"),
            known_schema_version("core"));
  ASSERT_EQ(s.libraries().size(), 1u);
}

TEST(Migrations, OtherComponentsApplyInOrderIncludingLateRegistrations) {
  TempDir dir;
  std::string path = dir.file("s.db");
  // Registered out of order: versions are applied by number.
  register_migration("test_extra", 2, "ALTER TABLE extra_items ADD COLUMN weight REAL DEFAULT 1.5");
  register_migration("test_extra", 1, "CREATE TABLE extra_items (id INTEGER PRIMARY KEY, name TEXT)");
  Store s(path);
  EXPECT_EQ(s.db().schema_version("test_extra"), 2);
  s.db().exec("INSERT INTO extra_items (name) VALUES ('a')");
  EXPECT_EQ(s.db().query_text("SELECT weight FROM extra_items"), "1.5");

  // A migration registered after the file is open applies on migrate(), and on re-open.
  register_migration("test_late", 1, "CREATE TABLE late_items (id INTEGER PRIMARY KEY)");
  EXPECT_EQ(s.db().schema_version("test_late"), 0);
  s.db().migrate();
  EXPECT_EQ(s.db().schema_version("test_late"), 1);
  // Identical re-registration is harmless; a different SQL for a used version is refused.
  EXPECT_NO_THROW(register_migration("test_late", 1, "CREATE TABLE late_items (id INTEGER PRIMARY KEY)"));
  EXPECT_THROW(register_migration("test_late", 1, "CREATE TABLE other (x)"), StoreError);
  EXPECT_THROW(register_migration("", 1, "SELECT 1"), StoreError);
  EXPECT_THROW(register_migration("x", 0, "SELECT 1"), StoreError);
}

TEST(Migrations, FailingMigrationLeavesNoTraceAndNamesTheFile) {
  TempDir dir;
  std::string path = dir.file("s.db");
  { Store s(path); }
  // Registrations cannot be undone, so the broken one lives in a child process.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    register_migration("test_broken", 1, "CREATE TABLE broken_a (x); CREATE TABLE nonsense syntax here");
    std::string err = error_of([&] { Store s(path); });
    _exit(err.find(path) != std::string::npos && err.find("syntax error") != std::string::npos ? 0 : 1);
  }
  EXPECT_EQ(syspilot::store::testing::wait_child(pid), 0) << "the error did not name the file";
  Store s(path);
  EXPECT_FALSE(s.db().query_int("SELECT 1 FROM sqlite_master WHERE name='broken_a'"))
      << "half of a failed migration was kept";
  EXPECT_EQ(s.db().schema_version("test_broken"), 0);
}

TEST(Migrations, NewerSchemaIsRefusedWithAClearError) {
  TempDir dir;
  std::string path = dir.file("s.db");
  {
    Store s(path);
    s.put_contract(syspilot::store::testing::make_record(0));
    s.db().exec("INSERT INTO schema_migrations (component, version) VALUES ('core', 999)");
  }
  std::string err = error_of([&] { Store s(path); });
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("newer"), std::string::npos) << err;
  EXPECT_NE(err.find("999"), std::string::npos) << err;

  // A newer bookkeeping format (user_version) is refused too.
  std::string path2 = dir.file("s2.db");
  {
    Store s(path2);
    s.db().exec("PRAGMA user_version = 7");
  }
  err = error_of([&] { Store s(path2); });
  EXPECT_NE(err.find("newer syspilot"), std::string::npos) << err;
  EXPECT_NE(err.find(path2), std::string::npos) << err;
}

TEST(Transactions, RollbackOnScopeExitAndNestedSavepoints) {
  TempDir dir;
  Store s(dir.file("s.db"));
  Database& db = s.db();
  db.exec("CREATE TABLE t (x INTEGER)");
  {
    Transaction tx(db);
    db.exec("INSERT INTO t VALUES (1)");
  }  // no commit: rolled back
  EXPECT_EQ(db.query_int("SELECT count(*) FROM t"), 0);
  {
    Transaction outer(db);
    db.exec("INSERT INTO t VALUES (1)");
    {
      Transaction inner(db);
      db.exec("INSERT INTO t VALUES (2)");
    }  // inner rolled back only
    {
      Transaction inner(db);
      db.exec("INSERT INTO t VALUES (3)");
      inner.commit();
    }
    outer.commit();
  }
  EXPECT_EQ(db.query_int("SELECT sum(x) FROM t"), 4);
  EXPECT_FALSE(db.in_transaction());
  // put_contract inside a caller's transaction joins it: rolling back the caller drops it.
  {
    Transaction tx(db);
    s.put_contract(syspilot::store::testing::make_record(3));
  }
  EXPECT_TRUE(s.libraries().empty());
}

TEST(Statements, BindRerunAndErrors) {
  TempDir dir;
  Store s(dir.file("s.db"));
  Database& db = s.db();
  db.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v REAL, n INTEGER)");
  Stmt ins = db.prepare("INSERT INTO t VALUES (?, ?, ?)");
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(ins.bind_all(std::string("k") + std::to_string(i), i * 0.5, std::optional<int>{}).run(), 1);
  EXPECT_EQ(db.query_int("SELECT count(*) FROM t WHERE n IS NULL"), 5);
  EXPECT_EQ(db.query_text("SELECT k FROM t WHERE v = ?", 1.0), "k2");
  EXPECT_EQ(db.query_int("SELECT n FROM t WHERE k = ?", "k0"), std::nullopt);
  // Text with an embedded NUL survives.
  std::string nul("a\0b", 3);
  db.prepare("INSERT INTO t (k) VALUES (?)").bind_all(nul).run();
  EXPECT_EQ(db.query_text("SELECT k FROM t WHERE length(CAST(k AS BLOB)) = 3"), nul);
  std::string err = error_of([&] { db.prepare("INSERT INTO t VALUES (?, 1, 1)").bind_all("k1").run(); });
  EXPECT_NE(err.find("UNIQUE"), std::string::npos) << err;
  err = error_of([&] { db.prepare("SELEKT 1"); });
  EXPECT_NE(err.find("syntax error"), std::string::npos) << err;
}

TEST(BadFiles, NotADatabase) {
  TempDir dir;
  std::string path = dir.file("notes.db");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "these are somebody's notes, not a database\n";
  write_file(path, text);
  std::string err = error_of([&] { Store s(path); });
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("not a database"), std::string::npos) << err;
  EXPECT_NE(err.find("--db"), std::string::npos) << err;
  // Never overwritten.
  std::ifstream in(path, std::ios::binary);
  std::string after((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(after, text);
}

TEST(BadFiles, CorruptDatabase) {
  TempDir dir;
  std::string path = dir.file("s.db");
  {
    Store s(path);
    for (int i = 0; i < 20; ++i) s.put_contract(syspilot::store::testing::make_record(i));
    s.db().exec("PRAGMA wal_checkpoint(TRUNCATE)");
  }
  // Scribble over the schema page after the 100-byte header.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    std::string junk(3000, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  std::string err = error_of([&] {
    Store s(path);
    s.libraries();
  });
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("corrupt"), std::string::npos) << err;
}

TEST(BadFiles, ForeignSqliteDatabaseIsLeftAlone) {
  TempDir dir;
  std::string path = dir.file("other.db");
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "CREATE TABLE accounts (id INTEGER, balance INTEGER); INSERT INTO accounts VALUES (1, 100)",
               nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  std::string err = error_of([&] { Store s(path); });
  EXPECT_NE(err.find("not a syspilot store"), std::string::npos) << err;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(raw, "SELECT count(*) FROM sqlite_master", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1);  // nothing added
  sqlite3_finalize(st);
  sqlite3_close(raw);
}

// A store being created by one process while another opens it: the second must never take the
// half-made file for a foreign database (the check once read sqlite_master twice, and the first
// process could commit schema_migrations between the two reads).
TEST(BadFiles, StoreOpenedWhileAnotherCreatesItIsNotTakenForAForeignDatabase) {
  TempDir dir;
  for (int i = 0; i < 100; ++i) {
    std::string path = dir.file("race" + std::to_string(i) + ".db");
    std::string err, creator_err;
    std::thread creator([&] {
      try {
        Store s(path);
      } catch (const StoreError& e) {
        creator_err = e.what();
      }
    });
    while (!std::filesystem::exists(path)) std::this_thread::yield();
    for (int k = 0; k < 20 && err.empty(); ++k) {
      try {
        Database db(path);
      } catch (const StoreError& e) {
        err = e.what();
      }
    }
    creator.join();
    ASSERT_EQ(err, "") << "attempt " << i;
    ASSERT_EQ(creator_err, "") << "attempt " << i;
  }
}

TEST(BadFiles, FolderMissingFileAndEmptyPath) {
  TempDir dir;
  std::string err = error_of([&] { Store s(dir.path()); });
  EXPECT_NE(err.find("is a folder"), std::string::npos) << err;
  err = error_of([&] { Store s(dir.file("absent.db"), OpenOptions{.read_only = false, .create = false}); });
  EXPECT_NE(err.find("no database here"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("absent.db")));
  err = error_of([&] { Store s(""); });
  EXPECT_NE(err.find("empty"), std::string::npos) << err;
  // A parent that is a file, not a folder.
  write_file(dir.file("plain"), "x");
  err = error_of([&] { Store s(dir.file("plain/s.db")); });
  EXPECT_NE(err.find(dir.file("plain/s.db")), std::string::npos) << err;
}
