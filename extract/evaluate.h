// Scoring extraction against hand-built expected lists (tests/extract/expected/*.txt):
// precision and recall of env-var names and API-control names, as tests and the eval report use.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "extract/facts.h"

namespace syspilot::extract {

// File format: `#` comments, `[env]` and `[api]` sections, one `NAME file:line` per line.
struct ExpectedList {
  std::set<std::string> env;
  std::set<std::string> api;
  bool has_api = false;  // an [api] section was present
};
ExpectedList load_expected(const std::string& path);  // throws std::runtime_error naming the line

struct Score {
  size_t expected = 0, found = 0, matched = 0;
  std::vector<std::string> missed, extra;
  // Undefined ratios (nothing expected, or nothing found) count as 1 when both sets agree.
  double precision() const { return found ? double(matched) / found : (expected ? 0.0 : 1.0); }
  double recall() const { return expected ? double(matched) / expected : (found ? 1.0 : 1.0); }
  std::string str() const;  // "P 100.0% R 96.3% (26/27 expected, 26 found)"
};
Score score(const std::set<std::string>& expected, const std::set<std::string>& found);

std::set<std::string> env_names(const Facts& f);
// API control names without a class qualifier (task_arena::initialize -> initialize is kept
// qualified; both forms match an expected name).
std::set<std::string> api_names(const Facts& f);

}  // namespace syspilot::extract
