// Checks of option values shared by the commands, beside CLI11's own.
#pragma once
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace syspilot::cli {

// A number a person can mean: CLI11's range checks let NaN through (every comparison with it
// is false), and a NaN timeout is no limit at all. Chain it before the range check.
inline CLI::Validator finite_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (end == s.c_str()) return {};  // not a number: CLI11's conversion says so
        if (!std::isfinite(v)) return "not a finite number: " + s;
        return {};
      },
      "FINITE");
}

// A control's name as --pin, --add and --drop take it: an identifier, or dotted identifiers
// for an API control's member (global_control.active_value). Anything else could not be an
// environment variable or a symbol, and would reach `--export`'s shell lines as code.
inline bool control_name(const std::string& n) {
  bool start = true;
  if (n.empty()) return false;
  for (char c : n) {
    const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (c == '.') {
      if (start) return false;
      start = true;
      continue;
    }
    if (start ? !alpha : !(alpha || digit)) return false;
    start = false;
  }
  return !start;
}

// Why `path` (APP as given, resolved through PATH) cannot be run as the application, or "" when
// it can. Checked before anything opens it: opening a FIFO to read its ELF header would block
// for ever, and a folder or a file without the execute bit fails only at the first run.
inline std::string application_problem(const std::string& given, const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    return "application '" + given + "': " + ec.message();
  if (!std::filesystem::exists(st)) return "application '" + given + "' not found; give its path after --";
  if (std::filesystem::is_directory(st)) return "application '" + given + "' is a folder, not a program";
  if (!std::filesystem::is_regular_file(st))
    return "application '" + given + "' is not a regular file (a FIFO, socket or device); give the program's path";
  if (::access(path.c_str(), X_OK) != 0)
    return "application '" + given + "' is not executable (" + std::strerror(errno) +
           "); make it so, or give its interpreter: -- sh SCRIPT";
  return {};
}

}  // namespace syspilot::cli
