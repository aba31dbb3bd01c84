// Shared by the CLI tests: a temporary folder, and the real `syspilot` run as a process with
// its exit status, stdout and stderr.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/store/fixture.h"

namespace syspilot::cli::testing {

using store::testing::TempDir;  // a private folder per test (tests/store/fixture.h)

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

struct CliRun {
  int exit = -1;
  std::string out, err;
};

// Runs `env -u SYSPILOT_DB ENV XDG_DATA_HOME=DIR/xdg syspilot ARGS` (ARGS already shell-quoted
// where needed): the default store is the test's own, never the user's.
inline CliRun run_cli(const TempDir& dir, const std::string& args, const std::string& env = "") {
  CliRun r;
  const std::string out = dir.file("cli.out"), err = dir.file("cli.err");
  const std::string cmd = "env -u SYSPILOT_DB " + env + " XDG_DATA_HOME=" + dir.file("xdg") + " " + SYSPILOT_BINARY +
                          " " + args + " >" + out + " 2>" + err;
  int st = std::system(cmd.c_str());
  r.exit = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace syspilot::cli::testing
