// Shared by the commands: writing an output file through a temporary file and a rename, and
// quoting a value for the shell (tuner::shell_quote, shared with the service).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/command.h"
#include "lpcl/diagnostics.h"
#include "tuner/space.h"

namespace syspilot::cli {

void write_file_atomically(const std::string& path, const std::string& text) {
  // A link is followed: the file it names is replaced, in its own folder, and the link stays.
  // An existing file keeps its permissions (a 0600 contract stays private, a script executable).
  std::error_code ec;
  std::string target = path;
  if (std::filesystem::is_symlink(path, ec)) {
    auto resolved = std::filesystem::weakly_canonical(path, ec);
    if (ec) throw UsageError("cannot follow the link '" + path + "': " + ec.message());
    target = resolved.string();
  }
  struct stat st {};
  const bool existed = ::stat(target.c_str(), &st) == 0;
  if (existed && !S_ISREG(st.st_mode)) throw UsageError("cannot replace '" + path + "': not a regular file");
  std::string tmp = target + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw UsageError("cannot write '" + path + "': check that its folder exists and is writable");
    }
  }
  if (existed && ::chmod(tmp.c_str(), st.st_mode & 07777) != 0) {
    std::remove(tmp.c_str());
    throw UsageError("cannot keep the permissions of '" + path + "'");
  }
  if (std::rename(tmp.c_str(), target.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UsageError("cannot replace '" + path + "'");
  }
}

void print_diagnostics(const std::string& file, const Diagnostics& d, bool errors_only) {
  constexpr size_t kMaxShown = 200;
  size_t shown = 0, held = 0;
  for (auto& x : d.items()) {
    if (errors_only && x.severity != Severity::Error) continue;
    if (shown < kMaxShown) {
      std::cerr << x.str() << '\n';
      ++shown;
    } else {
      ++held;
    }
  }
  if (held) std::cerr << file << ": " << held << " more diagnostic(s) not shown (the first " << kMaxShown << " are)\n";
}

std::string shell_quote(const std::string& v) { return tuner::shell_quote(v); }

}  // namespace syspilot::cli
