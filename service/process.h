// Runs external tools (git, apt-get, dpkg-source, tar) for source fetching: argv only, never a
// shell, with a time limit, cancellation and the whole process group killed on either.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace syspilot::service {

struct ProcessResult {
  int exit_code = -1;       // -1 when it could not start or was killed
  bool timed_out = false;
  bool cancelled = false;
  std::string out;          // stdout, truncated to max_output bytes
  std::string err;          // stderr, truncated to max_output bytes
  std::string start_error;  // why it could not start (empty when it did)
  bool ok() const { return exit_code == 0 && !timed_out && !cancelled && start_error.empty(); }
};

struct ProcessOptions {
  std::string cwd;                               // empty: inherit
  std::map<std::string, std::string> env_extra;  // added to (or replacing in) the environment
  double timeout_s = 600;
  size_t max_output = 1 << 20;
  std::function<bool()> cancelled;               // polled every 50 ms
};

// argv[0] is looked up in PATH. The child gets its own process group, stdin from /dev/null.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts = {});

}  // namespace syspilot::service
