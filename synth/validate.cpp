// Validators 1 and 3-6 with their deterministic repairs: LPCL out of an answer; grounding
// (nothing the facts do not show, no per-call flag), completeness (every resource knob and a
// binding covered), consistency (types and defaults as the code has them), and agreement with
// the documentation sentence each control cites (its type and range); and the last check of
// the final contract (controls and a binding).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

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

// The names among `names` that `e` mentions.
void mentioned(const lpcl::Expr& e, const std::set<std::string>& names, std::set<std::string>& out) {
  if (e.kind == lpcl::Expr::Kind::Name && names.count(e.text)) out.insert(e.text);
  for (auto& a : e.args) mentioned(a, names, out);
}

bool mentions_any(const lpcl::Expr& e, const std::set<std::string>& names) {
  std::set<std::string> in;
  mentioned(e, names, in);
  return !in.empty();
}

// Removes the controls named `names` and whatever speaks of them, in one pass over the
// contract: removing them one at a time went over every control for each, and a model's answer
// of 80,000 invented controls kept a job thread busy for seven minutes.
void remove_controls(lpcl::Contract& c, const std::set<std::string>& names) {
  if (names.empty()) return;
  std::erase_if(c.controls, [&](auto& x) { return names.count(x.name) > 0; });
  for (auto& x : c.controls)
    if (names.count(x.fallback_for)) x.fallback_for.clear();
  std::erase_if(c.demands, [&](auto& d) {
    std::set<std::string> in;
    mentioned(d.value, names, in);
    for (auto& n : in)
      if (!strip_from_chain(d.value, n)) return true;
    return d.when && mentions_any(*d.when, names);
  });
  for (auto& b : c.behaviors)
    std::erase_if(b.params, [&](auto& p) { return mentions_any(p.second, names); });
  std::erase_if(c.signals, [&](auto& s) {
    return (s.kind == lpcl::Signal::Kind::Introspect && names.count(s.metric)) || (s.value && mentions_any(*s.value, names));
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

// ---- What a documentation sentence says about a control's value ----------------------------

// "true or false", "enabled/disabled", "enable or disable", "on or off": a switch.
bool says_switch(const std::string& sentence, std::string* said) {
  static const std::regex re(
      R"(\b(true\s*(?:or|/)\s*false|false\s*(?:or|/)\s*true|enabled?\s*(?:or|/)\s*disabled?|disabled?\s*(?:or|/)\s*enabled?|on\s*(?:or|/)\s*off)\b)",
      std::regex::icase);
  std::smatch m;
  if (!std::regex_search(sentence, m, re)) return false;
  if (said) *said = "\"" + m[1].str() + "\"";
  return true;
}

long long number(const std::string& t) { return std::strtoll(t.c_str(), nullptr, 0); }

bool compatible_with_doc(lpcl::Type::Kind doc, lpcl::Type::Kind drafted) {
  using K = lpcl::Type::Kind;
  switch (doc) {
    case K::Bool: return drafted == K::Bool;
    case K::String: return drafted == K::String || drafted == K::Enum;
    case K::Int: return drafted == K::Int || drafted == K::Size || drafted == K::Duration;
    case K::Float: return drafted == K::Float || drafted == K::Duration;
    default: return true;
  }
}

// A literal integer bound of a range domain; nullopt for a name or an expression (ncpus).
std::optional<long long> literal_bound(const std::optional<lpcl::Expr>& e) {
  if (!e || e->kind != lpcl::Expr::Kind::Int) return std::nullopt;
  return number(e->text);
}

// Does the domain admit values beyond {0, 1} (or have none at all)?
bool wide_domain(const lpcl::Domain& d) {
  if (d.kind == lpcl::Domain::Kind::None) return true;
  if (d.kind == lpcl::Domain::Kind::Range) {
    auto lo = literal_bound(d.lo), hi = literal_bound(d.hi);
    return !lo || !hi || *lo < 0 || *hi > 1;
  }
  for (auto& v : d.values)
    if (v.kind != lpcl::Expr::Kind::Int || (v.text != "0" && v.text != "1")) return true;
  return false;
}

// The sentences a control's value is documented by: its own doc text, and the documentation
// mentions of its name (or its carrier key's documented name) at the places it cites.
struct CitedSentences {
  std::vector<std::string> sentences;
  std::vector<std::string> names;  // the names the documentation gives it: tcache, opt.tcache
};
CitedSentences cited_sentences(const lpcl::Control& ctl, const extract::Facts& facts) {
  CitedSentences out;
  out.names.push_back(ctl.name);
  if (!ctl.doc.empty()) out.sentences.push_back(ctl.doc);
  std::set<std::string> refs(ctl.prov.refs.begin(), ctl.prov.refs.end());
  for (auto& d : facts.doc_mentions) {
    bool mine = d.name == ctl.name;
    if (!mine)
      if (auto o = option_key(d.name)) mine = o->key == ctl.name;
    if (!mine || !refs.count(fact_ref(d.file, d.line))) continue;
    if (std::find(out.names.begin(), out.names.end(), d.name) == out.names.end()) out.names.push_back(d.name);
    if (std::find(out.sentences.begin(), out.sentences.end(), d.sentence) == out.sentences.end())
      out.sentences.push_back(d.sentence);
  }
  return out;
}

}  // namespace

Diagnostics check_usable(const lpcl::Contract& c) {
  Diagnostics d;
  if (c.controls.empty())
    d.error(c.loc, "contract " + c.name + " \"" + c.version + "\" has no control: nothing among the facts is a setting of " +
                       c.name,
            "no-controls",
            "give the library's sources, public headers, documentation or shared object as PATH, or add the controls in an "
            "--overlay");
  if (c.bindings.empty())
    d.error(c.loc, "contract " + c.name + " \"" + c.version +
                       "\" binds nothing: no shared object (soname) and no header of its API controls among the facts, so "
                       "no application would ever be matched to it",
            "no-binding", "add the library's shared object (.so) to PATH, or `binds soname \"libX.so.N\";` in an --overlay");
  return d;
}

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
  std::set<std::string> per_call, queries;
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
      continue;
    }
    if (ctl.how.kind != lpcl::ControlKind::Kind::Option)
      if (std::string why = per_call_flag(ctl.name, facts); !why.empty()) {
        d.error(ctl.loc, "control " + ctl.name + " is a flag passed with each call, not a setting the library reads: " + why,
                "per-call-flag", repair ? "" : "remove it: a configuration cannot set it");
        invented.push_back(ctl.name);
        per_call.insert(ctl.name);
        continue;
      }
    const extract::ApiControl* declared = nullptr;
    if (ctl.how.kind == lpcl::ControlKind::Kind::Api)
      for (auto& a : facts.api_controls)
        if (lpcl_name(a.name) == ctl.name || a.name == ctl.name) declared = &a;
    if (lpcl::is_query(ctl) || (declared && lpcl::is_query_function(declared->name, declared->signature, declared->doc))) {
      d.error(ctl.loc,
              "control " + ctl.name + " is a query: " +
                  (lpcl::is_query(ctl) ? std::string("its name asks for a value")
                                       : "its declaration (" + declared->signature + ") or its documentation says it returns a value") +
                  ", so calling it changes no setting",
              "query-control", repair ? "" : "remove it: a configuration cannot set it");
      invented.push_back(ctl.name);
      queries.insert(ctl.name);
    }
  }
  if (repair) {
    remove_controls(c, std::set<std::string>(invented.begin(), invented.end()));
    for (auto& n : invented)
      note((per_call.count(n) ? "dropped per-call flag " : queries.count(n) ? "dropped query " : "dropped invented control ") + n);
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
  if (c.bindings.empty() && !offline.bindings.empty()) {
    d.error(c.loc, "the draft binds nothing; the facts give " + offline.bindings.front().kind + " \"" +
                       offline.bindings.front().pattern + "\"",
            "missing-binding", repair ? "" : "add: binds " + offline.bindings.front().kind + " \"" +
                                                 offline.bindings.front().pattern + "\";");
    if (repair) {
      c.bindings = offline.bindings;
      note("added the bindings the facts give (" + offline.bindings.front().pattern + ")");
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

  // 6. The documentation sentence a control cites: the type it declares ("opt.tcache (bool)")
  // or implies ("enabled/disabled"), and the range it states ("1 to 64"). Types the code's read
  // gives are settled by 5; API controls are typed by their parameter.
  for (auto& ctl : c.controls) {
    if (ctl.how.kind == lpcl::ControlKind::Kind::Api) continue;
    const bool code_typed = std::any_of(facts.env_vars.begin(), facts.env_vars.end(), [&](auto& e) {
      return e.name == ctl.name && !e.type.empty() && e.type != "unknown";
    });
    if (code_typed) continue;
    const CitedSentences cited = cited_sentences(ctl, facts);
    std::optional<lpcl::Type::Kind> doc_type;
    std::string said;
    for (auto& sentence : cited.sentences)
      if ((doc_type = declared_type(sentence, cited.names, &said))) break;
    if (!doc_type && (ctl.type.kind == lpcl::Type::Kind::Int || ctl.type.kind == lpcl::Type::Kind::Size) &&
        wide_domain(ctl.domain))
      for (auto& sentence : cited.sentences)
        if (says_switch(sentence, &said)) {
          doc_type = lpcl::Type::Kind::Bool;
          break;
        }
    if (doc_type && !compatible_with_doc(*doc_type, ctl.type.kind)) {
      d.error(ctl.loc, "control " + ctl.name + " has type " + type_name(ctl.type.kind) + " but its documentation says " +
                           said + " (" + type_name(*doc_type) + ")",
              "doc-type-mismatch", repair ? "" : std::string("declare it ") + type_name(*doc_type));
      if (repair) {
        std::string old_default = ctl.default_value ? ctl.default_value->text : "";
        ctl.type = lpcl::Type{};
        ctl.type.kind = *doc_type;
        ctl.domain = lpcl::Domain{};
        ctl.default_value.reset();
        if (!old_default.empty()) {
          lpcl::Expr e = literal_expr(old_default, ctl.type);
          if (e.kind != lpcl::Expr::Kind::String || ctl.type.kind == lpcl::Type::Kind::String) ctl.default_value = e;
        }
        note("set the type of " + ctl.name + " to " + type_name(*doc_type) + " as its documentation says (" + said + ")");
      }
      continue;
    }
    if (ctl.domain.kind != lpcl::Domain::Kind::Range ||
        (ctl.type.kind != lpcl::Type::Kind::Int && ctl.type.kind != lpcl::Type::Kind::Size))
      continue;
    for (auto& sentence : cited.sentences) {
      auto range = stated_range(sentence, &said);
      if (!range) continue;
      auto lo = literal_bound(ctl.domain.lo), hi = literal_bound(ctl.domain.hi);
      // The domain may be narrower than the documentation's range, never wider or elsewhere.
      const bool contradicts = (lo && (*lo < range->first || *lo > range->second)) ||
                               (hi && (*hi > range->second || *hi < range->first));
      if (!contradicts) break;
      const std::string doc_range = "[" + std::to_string(range->first) + ", " + std::to_string(range->second) + "]";
      d.error(ctl.loc, "control " + ctl.name + " has domain [" + (ctl.domain.lo ? lpcl::format(*ctl.domain.lo) : "?") +
                           ", " + (ctl.domain.hi ? lpcl::format(*ctl.domain.hi) : "?") +
                           "] but its documentation says " + said,
              "doc-range-mismatch", repair ? "" : "use the documented range: in " + doc_range);
      if (repair) {
        ctl.domain.lo = int_expr(range->first);
        ctl.domain.hi = int_expr(range->second);
        if (auto v = literal_bound(ctl.default_value); v && (*v < range->first || *v > range->second))
          ctl.default_value.reset();
        note("set the domain of " + ctl.name + " to " + doc_range + " as its documentation says (" + said + ")");
      }
      break;
    }
  }
  return d;
}

}  // namespace syspilot::synth
