// Faults and concurrency: a writer killed with SIGKILL at random points inside put_contract,
// readers in other processes during writes and during a held write lock, read-only files.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <cstdio>
#include <random>
#include <set>
#include <thread>

#include "tests/store/fixture.h"

using namespace syspilot::store;
using syspilot::store::testing::is_whole;
using syspilot::store::testing::make_record;
using syspilot::store::testing::TempDir;
using syspilot::store::testing::wait_child;

namespace {

// Reads one '\n'-terminated line from a pipe; empty at end of file.
std::string read_line(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1) {
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

void write_line(int fd, const std::string& s) {
  std::string l = s + "\n";
  [[maybe_unused]] auto n = write(fd, l.data(), l.size());
}

// Every stored contract is whole; no version row without a contract; SQLite agrees.
void expect_only_whole_contracts(const std::string& path, int* count) {
  Store s(path);
  EXPECT_EQ(s.db().integrity_check(), "ok");
  EXPECT_FALSE(s.db().query_int("PRAGMA foreign_key_check")) << "dangling references";
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM versions v WHERE NOT EXISTS"
                             " (SELECT 1 FROM contracts c WHERE c.version_id = v.id)"),
            0);
  int n = 0;
  for (const LibraryInfo& lib : s.libraries())
    for (const VersionInfo& v : s.versions(lib.name)) {
      auto c = s.get_contract(lib.name, v.version);
      ASSERT_TRUE(c);
      EXPECT_TRUE(is_whole(s, *c));
      ++n;
    }
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM contracts"), n);
  *count = n;
}

}  // namespace

TEST(Faults, SigkillDuringPutContractLeavesOnlyWholeContracts) {
  TempDir dir;
  std::string path = dir.file("s.db");
  { Store s(path); }
  std::mt19937 rng(12345);
  const std::string padding(32 * 1024, '#');  // makes each transaction span many pages
  int total = 0;
  for (int iteration = 0; iteration < 6; ++iteration) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const int base = iteration * 1000;
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      Store s(path);
      for (int i = base; i < base + 1000; ++i) {
        write_line(fds[1], "begin " + std::to_string(i));
        s.put_contract(make_record(i, 5, "  # " + padding + "\n"));
        write_line(fds[1], "done " + std::to_string(i));
      }
      _exit(0);
    }
    close(fds[1]);
    // Let a few contracts commit, then kill at a random point of a later put_contract.
    int target_begins = 3 + static_cast<int>(rng() % 20), begins = 0, last_done = -1;
    while (begins < target_begins) {
      std::string line = read_line(fds[0]);
      ASSERT_FALSE(line.empty()) << "the writer died early";
      if (line.rfind("begin", 0) == 0) ++begins;
      if (line.rfind("done", 0) == 0) last_done = std::stoi(line.substr(5));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
    kill(pid, SIGKILL);
    EXPECT_EQ(wait_child(pid), 128 + SIGKILL);
    // Lines written before the kill still tell which contracts committed.
    for (std::string line; !(line = read_line(fds[0])).empty();)
      if (line.rfind("done", 0) == 0) last_done = std::stoi(line.substr(5));
    close(fds[0]);

    int n = 0;
    expect_only_whole_contracts(path, &n);
    Store s(path);
    for (int i = base; i <= last_done; ++i) {
      ContractRecord want = make_record(i);
      EXPECT_TRUE(s.get_contract(want.library, want.version)) << "committed contract " << i << " lost";
    }
    EXPECT_GE(n, total + (last_done - base + 1));
    EXPECT_LE(n, total + (last_done - base + 2));  // at most the one in flight
    total = n;
  }
  EXPECT_GT(total, 6 * 3);
}

TEST(Concurrency, ReadersInOtherProcessesSeeWholeContractsDuringWrites) {
  TempDir dir;
  std::string path = dir.file("s.db");
  Store writer(path);
  writer.put_contract(make_record(0));
  const std::string stop = dir.file("stop");
  const int kReaders = 3;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::vector<pid_t> readers;
  for (int r = 0; r < kReaders; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      int bad = 0, reads = 0;
      std::set<int> counts;
      try {
        Store s(path);
        int previous = 0;
        while (!std::filesystem::exists(stop)) {
          int n = 0;
          for (const LibraryInfo& lib : s.libraries())
            for (const VersionInfo& v : s.versions(lib.name)) {
              auto c = s.get_contract(lib.name, v.version);
              if (!c || !is_whole(s, *c)) ++bad;
              ++n;
            }
          if (n < previous) ++bad;  // contracts never disappear
          previous = n;
          counts.insert(n);
          ++reads;
        }
      } catch (const std::exception& e) {
        fprintf(stderr, "reader: %s\n", e.what());
        ++bad;
      }
      write_line(fds[1], std::to_string(bad) + " " + std::to_string(reads) + " " +
                             std::to_string(counts.size()));
      _exit(0);
    }
    readers.push_back(pid);
  }
  close(fds[1]);
  for (int i = 1; i < 400; ++i) writer.put_contract(make_record(i));
  { std::ofstream(stop) << "stop"; }
  for (int r = 0; r < kReaders; ++r) {
    std::string line = read_line(fds[0]);
    int bad = -1, reads = 0, distinct = 0;
    ASSERT_EQ(sscanf(line.c_str(), "%d %d %d", &bad, &reads, &distinct), 3) << line;
    EXPECT_EQ(bad, 0);
    EXPECT_GT(reads, 1);
    EXPECT_GT(distinct, 1) << "the reader never saw the store change while it was written";
  }
  close(fds[0]);
  for (pid_t pid : readers) EXPECT_EQ(wait_child(pid), 0);
}

TEST(Concurrency, ReadersAreNotBlockedByAHeldWriteTransaction) {
  TempDir dir;
  std::string path = dir.file("s.db");
  Store writer(path);
  writer.put_contract(make_record(0));
  Transaction tx(writer.db());
  writer.put_contract(make_record(1));  // uncommitted
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    try {
      Store reader(path, OpenOptions{.read_only = false, .create = false, .busy_timeout_ms = 100});
      bool sees_committed = reader.get_contract("lib0", "1.0").has_value();
      bool sees_uncommitted = reader.get_contract("lib1", "1.0").has_value();
      // A second writer waits for the lock, then gives up with a clear error.
      bool writer_refused = false;
      try {
        reader.put_contract(make_record(2));
      } catch (const StoreError& e) {
        writer_refused = std::string(e.what()).find("locked") != std::string::npos;
      }
      _exit(sees_committed && !sees_uncommitted && writer_refused ? 0 : 1);
    } catch (const std::exception& e) {
      fprintf(stderr, "child: %s\n", e.what());
      _exit(2);
    }
  }
  EXPECT_EQ(wait_child(pid), 0);
  tx.commit();
  EXPECT_TRUE(writer.get_contract("lib1", "1.0"));
  EXPECT_FALSE(writer.get_contract("lib2", "1.0"));
}

TEST(ReadOnly, ReadOnlyOpenReadsAndRefusesWritesClearly) {
  TempDir dir;
  std::string path = dir.file("s.db");
  { Store(path).put_contract(make_record(0)); }
  Store s(path, OpenOptions{.read_only = true});
  EXPECT_TRUE(s.db().read_only());
  ASSERT_EQ(s.libraries().size(), 1u);
  try {
    s.put_contract(make_record(1));
    ADD_FAILURE() << "wrote through a read-only connection";
  } catch (const StoreError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("readonly"), std::string::npos) << m;
    EXPECT_NE(m.find("not writable"), std::string::npos) << m;
  }
  Store again(path);
  EXPECT_EQ(again.libraries().size(), 1u);
  EXPECT_TRUE(is_whole(again, *again.get_contract("lib0", "1.0")));
}

TEST(ReadOnly, AnUnwritableFileInAnUnwritableFolderIsReadableNotWritable) {
  // As root every file is writable, so the check runs as the unprivileged user "nobody".
  if (getuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user";
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  std::string path = dir.file("s.db");
  { Store(path).put_contract(make_record(0)); }  // closing checkpoints and removes -wal/-shm
  ASSERT_EQ(chmod(path.c_str(), 0444), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    try {
      Store s(path);
      if (!s.db().read_only() || s.libraries().size() != 1 || !s.get_contract("lib0", "1.0")) _exit(4);
      try {
        s.put_contract(make_record(1));
        _exit(5);
      } catch (const StoreError& e) {
        std::string m = e.what();
        _exit(m.find(path) != std::string::npos && m.find("not writable") != std::string::npos ? 0 : 6);
      }
    } catch (const std::exception& e) {
      fprintf(stderr, "child: %s\n", e.what());
      _exit(7);
    }
  }
  EXPECT_EQ(wait_child(pid), 0);
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  Store s(path);
  EXPECT_EQ(s.db().integrity_check(), "ok");
  EXPECT_EQ(s.libraries().size(), 1u);
}
