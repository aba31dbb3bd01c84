// The JSON form of Facts (schema in docs/facts.md): to_json for output, facts_from_json for
// stages that read facts back (synthesis, the store). Unknown fields are ignored.
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "extract/facts.h"

namespace syspilot::extract {
using nlohmann::json;

namespace {

template <class T>
T field(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw std::runtime_error(std::string("facts: field '") + key + "' has the wrong type (" +
                             it->type_name() + ")");
  }
}

std::string str(const json& j, const char* key) { return field<std::string>(j, key, ""); }
// Facts written before scopes existed are library facts.
std::string scope_of(const json& j) {
  std::string s = field<std::string>(j, "scope", "library");
  return s.empty() ? "library" : s;
}
int num(const json& j, const char* key) { return field<int>(j, key, 0); }

const json& array_at(const json& j, const char* key) {
  static const json empty = json::array();
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return empty;
  if (!it->is_array())
    throw std::runtime_error(std::string("facts: '") + key + "' must be an array, not " + it->type_name());
  return *it;
}

const json& object_item(const json& item, const char* key) {
  if (!item.is_object())
    throw std::runtime_error(std::string("facts: items of '") + key + "' must be objects, not " +
                             item.type_name());
  return item;
}

json diag_json(const Diagnostic& d) {
  return {{"severity", to_string(d.severity)}, {"file", d.loc.file}, {"line", d.loc.line},
          {"message", d.message}, {"hint", d.hint}, {"code", d.code}};
}

}  // namespace

json to_json(const Facts& f) {
  json j;
  j["library"] = f.library;
  j["roots"] = f.roots;
  j["files_scanned"] = f.files_scanned;
  j["bytes_scanned"] = f.bytes_scanned;
  j["env_vars"] = json::array();
  for (auto& e : f.env_vars)
    j["env_vars"].push_back({{"name", e.name}, {"file", e.file}, {"line", e.line},
                             {"function", e.function}, {"type", e.type},
                             {"default", e.default_value}, {"via", e.via},
                             {"language", e.language}, {"scope", e.scope}});
  j["api_controls"] = json::array();
  for (auto& a : f.api_controls)
    j["api_controls"].push_back({{"name", a.name}, {"signature", a.signature},
                                 {"category", a.category}, {"file", a.file}, {"line", a.line},
                                 {"doc", a.doc}, {"scope", a.scope}});
  j["threading"] = json::array();
  for (auto& t : f.threading)
    j["threading"].push_back({{"kind", t.kind}, {"detail", t.detail}, {"file", t.file},
                              {"line", t.line}, {"function", t.function},
                              {"init_time", t.init_time}, {"scope", t.scope}});
  j["doc_mentions"] = json::array();
  for (auto& d : f.doc_mentions)
    j["doc_mentions"].push_back({{"name", d.name}, {"sentence", d.sentence}, {"file", d.file},
                                 {"line", d.line}, {"format", d.format}, {"scope", d.scope}});
  j["binaries"] = json::array();
  for (auto& b : f.binaries)
    j["binaries"].push_back({{"path", b.path}, {"soname", b.soname}, {"needed", b.needed},
                             {"imports", b.imports}, {"exports", b.exports},
                             {"knob_strings", b.knob_strings}});
  // `binary` (singular) is the first shared object, for consumers that expect one.
  j["binary"] = j["binaries"].empty() ? json::object() : j["binaries"][0];
  j["diagnostics"] = json::array();
  for (auto& d : f.diagnostics.items()) j["diagnostics"].push_back(diag_json(d));
  return j;
}

Facts facts_from_json(const json& j) {
  if (!j.is_object()) throw std::runtime_error(std::string("facts: expected a JSON object, got ") + j.type_name());
  Facts f;
  f.library = str(j, "library");
  f.roots = field<std::vector<std::string>>(j, "roots", {});
  f.files_scanned = field<size_t>(j, "files_scanned", 0);
  f.bytes_scanned = field<size_t>(j, "bytes_scanned", 0);
  for (auto& raw : array_at(j, "env_vars")) {
    auto& e = object_item(raw, "env_vars");
    EnvRead r;
    r.name = str(e, "name");
    if (r.name.empty()) throw std::runtime_error("facts: an env_vars item has no 'name'");
    r.file = str(e, "file"); r.line = num(e, "line"); r.function = str(e, "function");
    r.type = str(e, "type"); r.default_value = str(e, "default"); r.via = str(e, "via");
    r.language = str(e, "language");
    r.scope = scope_of(e);
    f.env_vars.push_back(std::move(r));
  }
  for (auto& raw : array_at(j, "api_controls")) {
    auto& e = object_item(raw, "api_controls");
    ApiControl a;
    a.name = str(e, "name");
    if (a.name.empty()) throw std::runtime_error("facts: an api_controls item has no 'name'");
    a.signature = str(e, "signature"); a.category = str(e, "category"); a.file = str(e, "file");
    a.line = num(e, "line"); a.doc = str(e, "doc");
    a.scope = scope_of(e);
    f.api_controls.push_back(std::move(a));
  }
  for (auto& raw : array_at(j, "threading")) {
    auto& e = object_item(raw, "threading");
    ThreadingFact t;
    t.kind = str(e, "kind"); t.detail = str(e, "detail"); t.file = str(e, "file");
    t.line = num(e, "line"); t.function = str(e, "function");
    t.init_time = field<bool>(e, "init_time", false);
    t.scope = scope_of(e);
    f.threading.push_back(std::move(t));
  }
  for (auto& raw : array_at(j, "doc_mentions")) {
    auto& e = object_item(raw, "doc_mentions");
    DocMention d;
    d.name = str(e, "name"); d.sentence = str(e, "sentence"); d.file = str(e, "file");
    d.line = num(e, "line"); d.format = str(e, "format");
    d.scope = scope_of(e);
    f.doc_mentions.push_back(std::move(d));
  }
  auto read_binary = [](const json& e) {
    BinaryFacts b;
    b.path = str(e, "path"); b.soname = str(e, "soname");
    b.needed = field<std::vector<std::string>>(e, "needed", {});
    b.imports = field<std::vector<std::string>>(e, "imports", {});
    b.exports = field<std::vector<std::string>>(e, "exports", {});
    b.knob_strings = field<std::vector<std::string>>(e, "knob_strings", {});
    return b;
  };
  for (auto& raw : array_at(j, "binaries")) f.binaries.push_back(read_binary(object_item(raw, "binaries")));
  if (f.binaries.empty()) {
    auto it = j.find("binary");
    if (it != j.end() && it->is_object() && !it->empty()) f.binaries.push_back(read_binary(*it));
  }
  for (auto& raw : array_at(j, "diagnostics")) {
    auto& e = object_item(raw, "diagnostics");
    Diagnostic d;
    std::string sev = str(e, "severity");
    d.severity = sev == "note" ? Severity::Note : sev == "warning" ? Severity::Warning : Severity::Error;
    d.loc.file = str(e, "file"); d.loc.line = num(e, "line");
    d.message = str(e, "message"); d.hint = str(e, "hint"); d.code = str(e, "code");
    f.diagnostics.add(std::move(d));
  }
  return f;
}

}  // namespace syspilot::extract
