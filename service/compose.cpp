// Name-only composition for the API: validates the request, composes the named libraries'
// contracts (store first, then the corpus) and applies the hypothesis rules.
#include "service/compose.h"

#include <nlohmann/json.hpp>
#include <regex>

#include "service/json_forms.h"
#include "tuner/analyze.h"

using nlohmann::json;

namespace syspilot::service {

namespace {
bool pairs(const json& body, const char* key, std::vector<std::pair<std::string, std::string>>& out,
           ComposeAnswer& a) {
  if (!body.contains(key)) return true;
  const json& v = body[key];
  if (!v.is_array() || v.size() > 256) {
    a = {400, "bad-request", std::string("'") + key + "' must be an array of {\"outer\", \"inner\"} pairs", ""};
    return false;
  }
  for (auto& p : v) {
    if (p.is_object() && p.contains("outer") && p.contains("inner") && p["outer"].is_string() &&
        p["inner"].is_string()) {
      out.emplace_back(p["outer"], p["inner"]);
    } else if (p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_string()) {
      out.emplace_back(p[0], p[1]);
    } else {
      a = {400, "bad-request", std::string("each item of '") + key + "' must be {\"outer\", \"inner\"} or [outer, inner]",
           "for example {\"outer\": \"libgomp\", \"inner\": \"openblas\"}"};
      return false;
    }
  }
  return true;
}

// Where the server keeps its files is none of a client's business: in an answer, the store's
// path becomes "store" and a contract file of the corpus its path from "corpus/" on
// (/srv/syspilot/corpus/openblas.lpcl -> corpus/openblas.lpcl).
void redact_paths(json& j, const std::string& db_path, int depth = 0) {
  if (depth > 64) return;
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    bool changed = false;
    for (size_t at = 0; db_path.size() >= 3 && (at = s.find(db_path, at)) != std::string::npos; at += 5) {
      s.replace(at, db_path.size(), "store");
      changed = true;
    }
    if (!s.empty() && s[0] == '/')
      if (size_t c = s.rfind("/corpus/"); c != std::string::npos) {
        s = s.substr(c + 1);
        changed = true;
      }
    if (changed) j = s;
    return;
  }
  if (j.is_object() || j.is_array())
    for (auto& v : j) redact_paths(v, db_path, depth + 1);
}
}  // namespace

ComposeAnswer compose_hypotheses(const json& body, const std::string& db_path, json& out) {
  ComposeAnswer a;
  static const std::regex name_re("^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$");
  if (!body.contains("libraries") || !body["libraries"].is_array() || body["libraries"].empty() ||
      body["libraries"].size() > 64) {
    return {400, "bad-request", "'libraries' must be a non-empty array of library names (at most 64)",
            "for example {\"libraries\": [\"openblas\", \"libgomp\"]}"};
  }
  tuner::NamedComposition req;
  for (auto& l : body["libraries"]) {
    if (!l.is_string() || l.get<std::string>().size() > 128 || !std::regex_match(l.get<std::string>(), name_re))
      return {400, "bad-library",
              "invalid library name in 'libraries': " +
                  (l.is_string() ? l.get<std::string>().substr(0, 100) : std::string("a ") + l.type_name()),
              "letters, digits and . _ + -"};
    req.libraries.push_back(l);
  }
  if (!pairs(body, "nesting", req.nested, a) || !pairs(body, "co_run", req.co_run, a)) return a;
  for (auto* list : {&req.nested, &req.co_run})
    for (auto& [outer, inner] : *list)
      for (const std::string* n : {&outer, &inner})
        if (*n != "app-threads" && std::find(req.libraries.begin(), req.libraries.end(), *n) == req.libraries.end())
          return {400, "bad-request", "'" + *n + "' is used in a relation but not listed in 'libraries'",
                  "list every library of the composition in 'libraries'"};
  req.store_path = db_path;
  Diagnostics diags;
  tuner::Composition comp = tuner::compose_named(req, diags);
  // One unknown name fails the request: hypotheses of the rest would silently miss every
  // interaction with the library the caller named.
  std::string unknown;
  for (auto& d : diags.items())
    if (d.code == "unknown-library") unknown += (unknown.empty() ? "" : "; ") + d.message;
  if (!unknown.empty() || comp.contracts.empty())
    return {404, "unknown-library", unknown.empty() ? "no contract found for any of the named libraries" : unknown,
            "store contracts first (POST /v1/synthesize) or use names from GET /v1/libraries or the corpus "
            "(contract name or soname)"};
  std::vector<tuner::Hypothesis> hs = tuner::hypothesize(comp, diags);
  json hyps = json::array();
  for (auto& h : hs) hyps.push_back(tuner::to_json(h));
  out = {{"composition", tuner::to_json(comp)}, {"hypotheses", hyps}, {"diagnostics", to_json(diags)}};
  redact_paths(out, db_path);
  return a;
}

}  // namespace syspilot::service
