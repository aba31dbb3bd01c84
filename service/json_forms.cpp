// Diagnostics as JSON: {severity, file, line, col, message, hint, code, text}.
#include "service/json_forms.h"

namespace syspilot::service {

nlohmann::json to_json(const Diagnostic& d) {
  nlohmann::json j = {{"severity", to_string(d.severity)}, {"message", d.message}, {"text", d.str()}};
  if (!d.loc.file.empty()) j["file"] = d.loc.file;
  if (d.loc.line) j["line"] = d.loc.line;
  if (d.loc.col) j["col"] = d.loc.col;
  if (!d.hint.empty()) j["hint"] = d.hint;
  if (!d.code.empty()) j["code"] = d.code;
  return j;
}

nlohmann::json to_json(const Diagnostics& d) {
  nlohmann::json a = nlohmann::json::array();
  for (auto& x : d.items()) a.push_back(to_json(x));
  return a;
}

Diagnostics diagnostics_from_json(const nlohmann::json& j) {
  Diagnostics out;
  if (!j.is_array()) return out;
  for (auto& x : j) {
    if (!x.is_object()) continue;
    Diagnostic d;
    std::string sev = x.value("severity", "error");
    d.severity = sev == "note" ? Severity::Note : sev == "warning" ? Severity::Warning : Severity::Error;
    d.loc.file = x.value("file", "");
    d.loc.line = x.value("line", 0);
    d.loc.col = x.value("col", 0);
    d.message = x.value("message", "");
    d.hint = x.value("hint", "");
    d.code = x.value("code", "");
    out.add(std::move(d));
  }
  return out;
}

}  // namespace syspilot::service
