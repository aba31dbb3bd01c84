// Shared by the extraction tests: a private source tree under TMPDIR, removed afterwards
// (a folder the test locked is unlocked first).
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace syspilot::extract::testing {

struct TempTree {
  std::filesystem::path root;
  explicit TempTree(const std::string& prefix = "extract") {
    const char* tmp = getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
    root = mkdtemp(tmpl.data());
  }
  ~TempTree() {
    std::error_code ec;
    for (const auto& e : std::filesystem::recursive_directory_iterator(
             root, std::filesystem::directory_options::skip_permission_denied, ec))
      if (e.is_directory(ec)) std::filesystem::permissions(e.path(), std::filesystem::perms::owner_all,
                                                           std::filesystem::perm_options::add, ec);
    std::filesystem::permissions(root, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(root, ec);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
  void write(const std::string& rel, const std::string& content) const {
    std::filesystem::create_directories((root / rel).parent_path());
    std::ofstream(root / rel, std::ios::binary) << content;
  }
};

}  // namespace syspilot::extract::testing
