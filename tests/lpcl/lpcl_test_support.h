// Shared helpers for the LPCL tests: parse-and-check in one call, temporary files, running
// the syspilot binary.
#pragma once
#include <string>
#include <vector>

#include "lpcl/lpcl.h"

namespace syspilot::lpcl::testing {

struct Result {
  Document doc;
  Diagnostics diags;
  bool parsed = false;  // no parse errors
};

// Parses `text` as "t.lpcl"; runs the checker when parsing succeeded.
Result run(const std::string& text, bool checker = true);

// The first diagnostic, as printed ("t.lpcl:2:3: error: ... [code]" with its hint line).
std::string first(const std::string& text);

// Codes of all diagnostics, in order.
std::vector<std::string> codes(const Diagnostics& d);

// A fresh directory under the test temp dir, removed by the caller's test fixture or left for inspection.
std::string temp_dir();
void write_file(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);

struct Process {
  int status = -1;
  std::string out, err;
};
// Runs the syspilot binary with `args` and optional stdin text.
Process syspilot(const std::vector<std::string>& args, const std::string& input = "");

// The repository's .lpcl files (docs/examples, corpus, ...), skipping build*/ and .deps/.
std::vector<std::string> repository_lpcl_files();

}  // namespace syspilot::lpcl::testing
