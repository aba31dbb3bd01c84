// Shared by the commands: writing an output file through a temporary file and a rename, and
// quoting a value for the shell (tuner::shell_quote, shared with the service).
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "cli/command.h"
#include "tuner/space.h"

namespace syspilot::cli {

void write_file_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw UsageError("cannot write '" + path + "': check that its folder exists and is writable");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UsageError("cannot replace '" + path + "'");
  }
}

std::string shell_quote(const std::string& v) { return tuner::shell_quote(v); }

}  // namespace syspilot::cli
