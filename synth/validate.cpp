// Validators 1 and 3-5 with their deterministic repairs: LPCL out of an answer; grounding
// (nothing the facts do not show), completeness (every resource knob covered) and
// consistency (types and defaults as the code has them).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "lpcl/lpcl.h"
#include "synth/draft.h"
#include "synth/rules.h"

namespace syspilot::synth {
namespace {

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// From `start` (at "contract"), the text up to the brace that closes the contract's body,
// skipping strings and # comments. npos when unbalanced.
size_t contract_end(const std::string& s, size_t start) {
  int depth = 0;
  bool opened = false;
  for (size_t i = start; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      for (++i; i < s.size() && s[i] != '"'; ++i)
        if (s[i] == '\\') ++i;
    } else if (c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '{') {
      ++depth;
      opened = true;
    } else if (c == '}') {
      if (--depth == 0 && opened) return i + 1;
    }
  }
  return std::string::npos;
}

// The first "contract NAME" at the start of a line.
size_t contract_start(const std::string& s, size_t from = 0) {
  for (size_t p = s.find("contract", from); p != std::string::npos; p = s.find("contract", p + 1)) {
    size_t b = p;
    while (b > 0 && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
    if ((b == 0 || s[b - 1] == '\n') && p + 8 < s.size() && (s[p + 8] == ' ' || s[p + 8] == '\t')) return p;
  }
  return std::string::npos;
}

// Back up over comment lines directly before the contract so they stay with it.
std::string lpcl_from(const std::string& s, size_t start) {
  size_t end = contract_end(s, start);
  if (end == std::string::npos) return s.substr(start);  // unbalanced: the parser will say where
  // Several contracts in a row are kept together.
  for (size_t next = contract_start(s, end); next != std::string::npos; next = contract_start(s, end)) {
    std::string gap = trim(s.substr(end, next - end));
    if (!gap.empty()) break;
    size_t e2 = contract_end(s, next);
    if (e2 == std::string::npos) break;
    end = e2;
  }
  return s.substr(start, end - start) + "\n";
}

std::optional<std::string> from_json_answer(const std::string& text, Diagnostics& diags) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  for (const char* key : {"lpcl", "contract_lpcl", "text", "contract"})
    if (j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  if (j.contains("contracts") || (j.contains("name") && (j.contains("controls") || j.contains("version")))) {
    Diagnostics jd;
    auto doc = lpcl::from_json(j, "answer.json", jd);
    diags.append(jd);
    if (!jd.has_errors() && !doc.contracts.empty()) return lpcl::format(doc);
  }
  return std::nullopt;
}

}  // namespace

std::string extract_lpcl(const std::string& answer, Diagnostics& diags) {
  const std::string a = trim(answer);
  SourceLoc where{"answer", 1, 1};
  if (a.empty()) {
    diags.error(where, "the answer is empty", "no-lpcl", "answer with one LPCL contract inside ```lpcl fences");
    return "";
  }
  // JSON: the whole answer, or an object inside chatter.
  if (a.front() == '{')
    if (auto s = from_json_answer(a, diags)) return *s;
  // Markdown fences: prefer ```lpcl, else any fence holding a contract.
  for (const char* opener : {"```lpcl", "```LPCL", "```json", "```"}) {
    for (size_t p = a.find(opener); p != std::string::npos; p = a.find(opener, p + 3)) {
      size_t body = a.find('\n', p);
      if (body == std::string::npos) break;
      size_t close = a.find("\n```", body);
      std::string inner = a.substr(body + 1, close == std::string::npos ? std::string::npos : close - body);
      if (std::string(opener) == "```json") {
        if (auto s = from_json_answer(trim(inner), diags)) return *s;
        continue;
      }
      size_t cs = contract_start(inner);
      if (cs != std::string::npos) return lpcl_from(inner, cs);
    }
  }
  size_t cs = contract_start(a);
  if (cs != std::string::npos) return lpcl_from(a, cs);
  size_t brace = a.find('{');
  size_t last = a.rfind('}');
  if (brace != std::string::npos && last != std::string::npos && last > brace)
    if (auto s = from_json_answer(a.substr(brace, last - brace + 1), diags)) return *s;
  diags.error(where, "the answer holds no LPCL contract (no line starting with `contract NAME \"VERSION\" {`)",
              "no-lpcl", "answer with one LPCL contract inside ```lpcl fences, nothing else");
  return "";
}

namespace {

bool compatible(lpcl::Type::Kind draft, lpcl::Type::Kind code) {
  using K = lpcl::Type::Kind;
  if (draft == code) return true;
  if (code == K::String) return draft == K::Enum;
  if (code == K::Int) return draft == K::Size || draft == K::Duration || draft == K::Bool;
  if (code == K::Float) return draft == K::Duration;
  return false;
}

const char* type_name(lpcl::Type::Kind k) {
  switch (k) {
    case lpcl::Type::Kind::Int: return "int";
    case lpcl::Type::Kind::Float: return "float";
    case lpcl::Type::Kind::Bool: return "bool";
    case lpcl::Type::Kind::String: return "string";
    case lpcl::Type::Kind::Size: return "size";
    case lpcl::Type::Kind::Duration: return "duration";
    case lpcl::Type::Kind::Enum: return "enum";
  }
  return "?";
}

// Removes `name` from `a ?? b ?? c` chains; false when the expression still needs it.
bool strip_from_chain(lpcl::Expr& e, const std::string& name) {
  if (e.kind == lpcl::Expr::Kind::Binary && e.op == "??") {
    for (int i = 0; i < 2; ++i)
      if (e.args[i].kind == lpcl::Expr::Kind::Name && e.args[i].text == name) {
        lpcl::Expr keep = e.args[1 - i];
        e = keep;
        return strip_from_chain(e, name);
      }
    return strip_from_chain(e.args[0], name) && strip_from_chain(e.args[1], name);
  }
  return !expr_mentions(e, name);
}

void remove_control(lpcl::Contract& c, const std::string& name) {
  std::erase_if(c.controls, [&](auto& x) { return x.name == name; });
  for (auto& x : c.controls)
    if (x.fallback_for == name) x.fallback_for.clear();
  std::erase_if(c.demands, [&](auto& d) {
    return !strip_from_chain(d.value, name) || (d.when && expr_mentions(*d.when, name));
  });
  for (auto& b : c.behaviors)
    std::erase_if(b.params, [&](auto& p) { return expr_mentions(p.second, name); });
  std::erase_if(c.signals, [&](auto& s) {
    return (s.kind == lpcl::Signal::Kind::Introspect && s.metric == name) || (s.value && expr_mentions(*s.value, name));
  });
}

template <class F>
void each_provenance(lpcl::Contract& c, F f) {
  for (auto& x : c.controls) f(x.prov, x.loc, "control " + x.name);
  for (auto& x : c.demands) f(x.prov, x.loc, "demand " + x.resource);
  for (auto& x : c.assumptions) f(x.prov, x.loc, "assume " + x.predicate);
  for (auto& x : c.behaviors) f(x.prov, x.loc, "behavior " + x.name);
  for (auto& x : c.provides) f(x.prov, x.loc, "provides " + x.name);
  for (auto& x : c.signals) f(x.prov, x.loc, "signal " + x.metric);
}

}  // namespace

Diagnostics validate(lpcl::Contract& c, const extract::Facts& facts, bool repair, std::vector<std::string>* repairs) {
  Diagnostics d;
  FactIndex idx(facts);
  SynthOptions o;
  o.library = c.name;
  o.version = c.version;
  const lpcl::Contract offline = draft_offline(facts, o);
  auto note = [&](std::string what) {
    if (repairs) repairs->push_back(std::move(what));
  };
  const char* fix = repair ? "" : "remove it, or point at the fact that shows it";

  // 3. Grounding.
  std::vector<std::string> invented;
  for (auto& ctl : c.controls) {
    bool grounded = false;
    std::string what;
    switch (ctl.how.kind) {
      case lpcl::ControlKind::Kind::Env: grounded = idx.env.count(ctl.name) > 0; what = "environment variable"; break;
      case lpcl::ControlKind::Kind::Api: grounded = idx.api.count(ctl.name) > 0; what = "API function"; break;
      case lpcl::ControlKind::Kind::Option:
        grounded = idx.env.count(ctl.how.carrier) > 0 && idx.env.count(ctl.name) > 0;
        what = "option of " + ctl.how.carrier;
        break;
    }
    if (!grounded) {
      d.error(ctl.loc, "control " + ctl.name + ": no " + what + " of that name is read, declared or documented in the facts",
              "invented-control", fix);
      invented.push_back(ctl.name);
    }
  }
  if (repair)
    for (auto& n : invented) {
      remove_control(c, n);
      note("dropped invented control " + n);
    }
  each_provenance(c, [&](lpcl::Provenance& p, const SourceLoc& loc, const std::string& who) {
    std::vector<std::string> kept;
    for (auto& r : p.refs) {
      if (idx.refs.count(r)) {
        kept.push_back(r);
        continue;
      }
      d.error(loc, who + ": source location \"" + r + "\" is not among the facts", "invented-ref",
              repair ? "" : "cite a file:line the facts list");
      note("dropped invented reference \"" + r + "\" from " + who);
    }
    if (repair) p.refs = kept;
  });

  // 4. Completeness: every resource-relevant knob the offline rules find.
  for (auto& want : offline.controls) {
    auto role = classify_knob(want.name);
    if (!role && want.how.kind == lpcl::ControlKind::Kind::Api) {
      auto it = std::find_if(facts.api_controls.begin(), facts.api_controls.end(), [&](auto& a) { return a.name == want.name; });
      if (it != facts.api_controls.end()) role = classify_knob(want.name, it->category);
    }
    if (!role || !resource_relevant(role->role) || c.find_control(want.name)) continue;
    std::string where = want.prov.refs.empty() ? "" : " (" + want.prov.refs.front() + ")";
    d.error(c.loc, "missing control " + want.name + ": a " + role->role + " knob the facts show" + where,
            "missing-control", repair ? "" : "add it with its type, domain and default");
    if (repair) {
      c.controls.push_back(want);
      note("added missing control " + want.name + " from the facts");
    }
  }
  for (auto& want : offline.demands) {
    if (std::any_of(c.demands.begin(), c.demands.end(), [&](auto& x) { return x.resource == want.resource; })) continue;
    d.error(c.loc, "missing demand " + want.resource + " (the facts give " + lpcl::format(want.value) + ")",
            "missing-demand", repair ? "" : "add: demand " + want.resource + " = " + lpcl::format(want.value) + ";");
    if (repair) {
      c.demands.push_back(want);
      note("added missing demand " + want.resource);
    }
  }

  // 5. Consistency with the code: kind, type, default, resource.
  for (auto& ctl : c.controls) {
    const lpcl::Control* code = offline.find_control(ctl.name);
    if (!code) continue;
    const bool code_typed = std::any_of(facts.env_vars.begin(), facts.env_vars.end(), [&](auto& e) {
      return e.name == ctl.name && !e.type.empty() && e.type != "unknown";
    });
    if (ctl.how.kind != code->how.kind) {
      d.error(ctl.loc, "control " + ctl.name + " is set through " + (code->how.kind == lpcl::ControlKind::Kind::Api ? "an API call" : "the environment") +
                           " in the code, not as the draft says", "kind-mismatch");
      if (repair) {
        ctl.how = code->how;
        note("set the kind of " + ctl.name + " as the code has it");
      }
    }
    if (code_typed && !compatible(ctl.type.kind, code->type.kind)) {
      d.error(ctl.loc, "control " + ctl.name + " has type " + type_name(ctl.type.kind) + " but the code reads it as " +
                           type_name(code->type.kind), "type-mismatch", repair ? "" : std::string("declare it ") + type_name(code->type.kind));
      if (repair) {
        ctl.type = code->type;
        ctl.domain = code->domain;
        ctl.default_value = code->default_value;
        note("set the type of " + ctl.name + " to " + type_name(code->type.kind) + " as the code reads it");
      }
    }
    if (code->default_value && ctl.default_value &&
        lpcl::format(*code->default_value) != lpcl::format(*ctl.default_value)) {
      d.error(ctl.loc, "control " + ctl.name + " defaults to " + lpcl::format(*ctl.default_value) + " in the draft but to " +
                           lpcl::format(*code->default_value) + " in the code (" +
                           (code->prov.refs.empty() ? std::string("facts") : code->prov.refs.front()) + ")",
              "default-mismatch", repair ? "" : "use the code's default");
      if (repair) {
        ctl.default_value = code->default_value;
        note("set the default of " + ctl.name + " to " + lpcl::format(*code->default_value) + " as the code has it");
      }
    }
    for (auto& r : code->sets)
      if (std::find(ctl.sets.begin(), ctl.sets.end(), r) == ctl.sets.end()) {
        d.warning(ctl.loc, "control " + ctl.name + " acts on " + r + " but the draft does not say so", "missing-resource");
        if (repair) {
          ctl.sets.push_back(r);
          note("added `sets " + r + "` to " + ctl.name);
        }
      }
  }
  return d;
}

}  // namespace syspilot::synth
