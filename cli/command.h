// How a stage adds its subcommands to the `syspilot` executable: one file per stage in cli/,
// each with a static CommandRegistration. Exit codes: 0 ok, 1 findings or failure of the
// checked thing, 2 usage or input error.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>

namespace CLI { class App; }

namespace syspilot::cli {

enum Exit : int { kOk = 0, kFindings = 1, kUsage = 2 };

struct Context {
  int exit_code = kOk;  // set by the subcommand's callback
};

using Register = std::function<void(CLI::App& app, Context& ctx)>;

// Registers subcommands at static-initialisation time; `order` sorts them in --help.
struct CommandRegistration {
  CommandRegistration(int order, Register fn);
};

// Thrown by a command for an input problem (bad file, bad flag value): printed, exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes `text` to `path` through a temporary file in the same folder and a rename, so an
// interrupted write never leaves half a file or truncates the one it replaces. Throws
// UsageError saying which path could not be written.
void write_file_atomically(const std::string& path, const std::string& text);

// `v` as one POSIX shell word: unchanged when it holds only safe characters, else in single
// quotes (an embedded quote as '\''). For the lines a command prints to be pasted or sourced.
std::string shell_quote(const std::string& v);

}  // namespace syspilot::cli
