// Shared pieces of the store tests: a temporary folder per test and deterministic records
// whose content can be verified after the fact (digest, rounds, facts all derive from i).
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "store/store.h"

namespace syspilot::store::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "syspilot-store-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Record number i of library "lib<i % libs>": its LPCL text names i, so that a reader can
// recompute what every part of it must be.
inline int rounds_of(int i) { return 1 + i % 4; }
inline std::string facts_of(int i) {
  // Only 7 distinct facts documents, so that dedup is exercised under load too.
  return "{\"library\": \"lib" + std::to_string(i % 7) + "\", \"env_vars\": [{\"name\": \"X_" +
         std::to_string(i % 7) + "\", \"line\": " + std::to_string(i % 7) + "}]}";
}
inline ContractRecord make_record(int i, int libs = 5, const std::string& padding = {}) {
  ContractRecord r;
  r.library = "lib" + std::to_string(i % libs);
  r.version = "1." + std::to_string(i / libs);
  r.lpcl = "contract " + r.library + " \"" + r.version + "\" {\n  # record " + std::to_string(i) +
           " rounds " + std::to_string(rounds_of(i)) + "\n" + padding + "}\n";
  r.json = "{\"name\": \"" + r.library + "\", \"version\": \"" + r.version + "\", \"i\": " +
           std::to_string(i) + "}";
  r.status = i % 3 == 0 ? ContractStatus::OpenDiagnostics : ContractStatus::Converged;
  r.diagnostics = r.status == ContractStatus::Converged ? "[]" : "[{\"message\": \"open\"}]";
  r.drafter = i % 2 ? Drafter::Llm : Drafter::Offline;
  r.model = i % 2 ? "test-model" : "";
  r.prompt_id = i % 2 ? "draft" : "";
  r.prompt_version = i % 2 ? 3 : 0;
  r.source = "dir:/src/lib" + std::to_string(i % libs);
  r.facts.push_back({"", facts_of(i), "dir:/src/" + r.library});
  for (int k = 1; k <= rounds_of(i); ++k)
    r.rounds.push_back({k, k == 1 ? "offline" : "repair", "[{\"round\": " + std::to_string(k) + "}]",
                        "[]"});
  return r;
}

// Checks that a record read back is whole: every part agrees with the number in its text.
inline ::testing::AssertionResult is_whole(const Store& s, const ContractRecord& r) {
  auto pos = r.lpcl.find("# record ");
  if (pos == std::string::npos) return ::testing::AssertionFailure() << "no record marker";
  int i = std::atoi(r.lpcl.c_str() + pos + 9);
  ContractRecord want = make_record(i);
  if (r.digest != sha256_hex(r.lpcl)) return ::testing::AssertionFailure() << "digest mismatch " << i;
  if (r.library != want.library || r.version != want.version)
    return ::testing::AssertionFailure() << "name mismatch " << i;
  if (static_cast<int>(r.rounds.size()) != rounds_of(i))
    return ::testing::AssertionFailure() << "record " << i << " has " << r.rounds.size()
                                         << " rounds, want " << rounds_of(i);
  if (r.facts.empty()) return ::testing::AssertionFailure() << "record " << i << " facts";
  auto facts = s.get_facts(r.facts[0].digest);
  if (!facts || sha256_hex(*facts) != r.facts[0].digest)
    return ::testing::AssertionFailure() << "record " << i << " facts missing or wrong";
  return ::testing::AssertionSuccess();
}

// Waits for a child; returns its exit status, or 128+signal.
inline int wait_child(pid_t pid) {
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}

}  // namespace syspilot::store::testing
