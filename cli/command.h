// How a stage adds its subcommands to the `syspilot` executable: one file per stage in cli/,
// each with a static CommandRegistration. Exit codes, the same for every command: 0 ok, 1 the
// checked thing failed (findings of a checker, an application that crashed or hung), 2 usage or
// input error, 3 nothing to do (tune: no control to search), 130 interrupted (SIGINT).
#pragma once
#include <functional>
#include <stdexcept>
#include <string>

namespace CLI { class App; }
namespace syspilot { class Diagnostics; }

namespace syspilot::cli {

enum Exit : int { kOk = 0, kFindings = 1, kAppFailed = 1, kUsage = 2, kNothingToDo = 3, kInterrupted = 130 };

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

// Thrown when the application under analysis or tuning failed (crashed, hung, every trial
// failed): printed, exit 1.
struct AppFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Thrown when there is nothing to do (tune: no control to search): printed, exit 3.
struct NothingToDo : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes `text` to `path` through a temporary file in the same folder and a rename, so an
// interrupted write never leaves half a file or truncates the one it replaces. A link is
// followed (the file it names is replaced) and an existing file keeps its permissions. Throws
// UsageError saying which path could not be written.
void write_file_atomically(const std::string& path, const std::string& text);

// Prints a file's diagnostics to stderr, at most the first 200 (errors only with
// `errors_only`), then how many more there were: 200000 duplicate lines printed 33 MB.
void print_diagnostics(const std::string& file, const Diagnostics& d, bool errors_only = false);

// `v` as one POSIX shell word: unchanged when it holds only safe characters, else in single
// quotes (an embedded quote as '\''). For the lines a command prints to be pasted or sourced.
std::string shell_quote(const std::string& v);

}  // namespace syspilot::cli
