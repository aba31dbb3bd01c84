// POST /v1/compose: the hypotheses for a composition given by library names and nesting.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace syspilot::service {

struct ComposeAnswer {
  int status = 200;
  std::string error_code;  // set when status != 200
  std::string message, hint;
};

// body: {"libraries": [...], "nesting": [{"outer", "inner"} | [outer, inner]], "co_run": [...]}.
// Contracts come from the store at db_path (newest version), then the corpus.
ComposeAnswer compose_hypotheses(const nlohmann::json& body, const std::string& db_path, nlohmann::json& out);

}  // namespace syspilot::service
