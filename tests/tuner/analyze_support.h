// What the analysis and tuning tests share: a scratch folder for the files and programs a test
// writes, a relation between two parties, a hypothesis by id.
#pragma once
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tuner/analyze.h"

namespace syspilot::tuner::testing_support {

// A private folder under the temporary folder (named for the test and the process), removed
// with everything in it when the test ends.
struct Scratch {
  std::filesystem::path dir;
  explicit Scratch(const std::string& name = "tuner") {
    static int n = 0;
    dir = std::filesystem::temp_directory_path() /
          ("syspilot-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  std::string operator/(const std::string& f) const { return (dir / f).string(); }
  std::string write(const std::string& name, const std::string& text, bool executable = false) const {
    std::ofstream(dir / name) << text;
    if (executable) ::chmod((dir / name).c_str(), 0755);
    return (dir / name).string();
  }
  // cc ARGS -o dir/out; empty string when the compiler fails.
  std::string compile(const std::string& out, const std::string& args) const {
    std::string path = (dir / out).string();
    std::string cmd = "cc -O2 -w " + args + " -o '" + path + "' 2>&1";
    return std::system(cmd.c_str()) == 0 ? path : "";
  }
};

inline bool has_relation(const Composition& c, Relation::Kind k, const std::string& a, const std::string& b) {
  for (auto& r : c.relations)
    if (r.kind == k && ((r.outer == a && r.inner == b) || (k == Relation::Kind::CoRun && r.outer == b && r.inner == a)))
      return true;
  return false;
}

inline const Hypothesis* find_h(const std::vector<Hypothesis>& hs, const std::string& id) {
  for (auto& h : hs)
    if (h.id == id) return &h;
  return nullptr;
}

}  // namespace syspilot::tuner::testing_support
