// The LPCL checker: semantic rules over a parsed contract, each with a stable diagnostic
// code (listed in docs/lpcl.md). Linear in the size of the contract, so a 50 MB file checks
// as fast as it parses.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <regex>
#include <string>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "lpcl/format_internal.h"
#include "lpcl/lpcl.h"
#include "lpcl/syntax.h"
#include "lpcl/vocabulary.h"

namespace syspilot::lpcl {

namespace {

// Value categories for type checking of defaults and domains.
enum class VT { Unknown, Int, Float, Bool, String, Size, Duration, EnumWord };

const char* vt_name(VT t) {
  switch (t) {
    case VT::Int: return "int";
    case VT::Float: return "float";
    case VT::Bool: return "bool";
    case VT::String: return "string";
    case VT::Size: return "size";
    case VT::Duration: return "duration";
    case VT::EnumWord: return "enum value";
    case VT::Unknown: return "unknown";
  }
  return "unknown";
}

VT vt_of(Type::Kind k) {
  switch (k) {
    case Type::Kind::Int: return VT::Int;
    case Type::Kind::Float: return VT::Float;
    case Type::Kind::Bool: return VT::Bool;
    case Type::Kind::String: return VT::String;
    case Type::Kind::Size: return VT::Size;
    case Type::Kind::Duration: return VT::Duration;
    case Type::Kind::Enum: return VT::EnumWord;
  }
  return VT::Unknown;
}

bool compatible(VT value, Type::Kind t) {
  if (value == VT::Unknown) return true;
  switch (t) {
    case Type::Kind::Int: return value == VT::Int;
    case Type::Kind::Float: return value == VT::Int || value == VT::Float;
    case Type::Kind::Bool: return value == VT::Bool;
    case Type::Kind::String: return value == VT::String;
    case Type::Kind::Size: return value == VT::Size || value == VT::Int;
    case Type::Kind::Duration: return value == VT::Duration;
    case Type::Kind::Enum: return value == VT::EnumWord;
  }
  return true;
}

bool numeric(Type::Kind t) {
  return t == Type::Kind::Int || t == Type::Kind::Float || t == Type::Kind::Size || t == Type::Kind::Duration;
}

bool has_upper(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::isupper(c); });
}

class Checker {
 public:
  Checker(const Contract& c, Diagnostics& d) : c_(c), diags_(d), vocab_(vocabulary()) {}

  bool run() {
    size_t before = diags_.error_count();
    if (c_.name.empty()) error(c_.loc, "contract has an empty name", "empty-name", "write: contract NAME \"VERSION\" { ... }");
    if (c_.version.empty())
      error(c_.loc, "contract '" + c_.name + "' has an empty version", "empty-version",
            "give the library version the contract describes, e.g. \"0.3.21\"");
    static const std::regex version_re(kVersionPattern);
    if (!c_.version.empty() && !std::regex_match(c_.version, version_re)) {
      std::string shown;  // control characters are not echoed to a terminal
      for (unsigned char v : c_.version) shown += std::iscntrl(v) ? '?' : static_cast<char>(v);
      error(c_.loc, "contract '" + c_.name + "' has version " + quote(shown) +
                        ": a version is a letter or digit, then letters, digits and . _ + ~ : - (at most 128), so "
                        "that `contracts show LIB VERSION@REV` and /v1/contracts/LIB/VERSION name it",
            "bad-version", "write the version as the library names it, e.g. \"0.3.21\" or \"1:16.0.6-15\"");
    }
    for (auto& p : c_.origins) provenance(p, c_.loc);
    controls_.reserve(c_.controls.size());
    for (auto& k : c_.controls) {
      auto [it, fresh] = controls_.emplace(k.name, &k);
      if (!fresh)
        error(k.loc, "control '" + k.name + "' is declared twice", "duplicate-control",
              "the first declaration is at line " + std::to_string(it->second->loc.line) + "; keep one");
      control_names_.push_back(k.name);
      for (auto& v : k.type.enumerators) enumerators_.insert(v);
    }
    for (auto& b : c_.bindings) binding(b);
    for (auto& k : c_.controls) control(k);
    fallback_cycles();
    std::unordered_map<std::string, const Demand*> demands;
    for (auto& d : c_.demands) demand(d, demands);
    for (auto& a : c_.assumptions) assumption(a);
    for (auto& b : c_.behaviors) behavior(b);
    for (auto& p : c_.provides) provides(p);
    for (auto& s : c_.signals) signal(s);
    return diags_.error_count() == before;
  }

 private:
  void error(const SourceLoc& l, std::string msg, const char* code, std::string hint = {}) {
    diags_.error(l, std::move(msg), code, std::move(hint));
  }
  void warning(const SourceLoc& l, std::string msg, const char* code, std::string hint = {}) {
    diags_.warning(l, std::move(msg), code, std::move(hint));
  }
  static const SourceLoc& at(const Expr& e, const SourceLoc& fallback) { return e.loc.line > 0 ? e.loc : fallback; }

  std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates, const std::string& otherwise) {
    std::string best = closest(word, candidates);
    return best.empty() ? otherwise : "did you mean '" + best + "'?";
  }
  std::string list(const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
  }

  void provenance(const Provenance& p, const SourceLoc& l) {
    if (p.confidence && !(*p.confidence >= 0.0 && *p.confidence <= 1.0))
      error(l, "confidence " + format_double(*p.confidence) + " is outside [0, 1]", "confidence-range",
            "confidence is a probability: 0 (a guess) to 1 (certain)");
    for (auto& r : p.refs)
      if (!is_valid_ref(r))
        error(l, "reference \"" + r.substr(0, 80) + "\" is not \"file:line\"", "bad-ref",
              "write the source position as \"path/to/file.c:52\" (line numbers start at 1)");
  }

  void resource(const std::string& r, const SourceLoc& l, const std::string& where) {
    if (vocab_.resource_set.count(r)) return;
    error(l, "unknown resource '" + r + "'" + where, "unknown-resource",
          did_you_mean(r, vocab_.resources, "resources: " + list(vocab_.resources)));
  }

  // Checks the names and calls of an expression. `enum_values`: names allowed as enumerators.
  void names(const Expr& e, const SourceLoc& l, const std::vector<std::string>* enum_values = nullptr) {
    switch (e.kind) {
      case Expr::Kind::Name: {
        if (enum_values && std::find(enum_values->begin(), enum_values->end(), e.text) != enum_values->end()) return;
        if (controls_.count(e.text) || vocab_.fact_set.count(e.text) || vocab_.resource_set.count(e.text)) return;
        // Comparisons such as `OMP_WAIT_POLICY != passive` name another control's enumerator.
        if (!enum_values && enumerators_.count(e.text)) return;
        if (enum_values) {
          error(at(e, l), "'" + e.text + "' is not a value of enum{" + list(*enum_values) + "}", "type-mismatch",
                did_you_mean(e.text, *enum_values, "use one of: " + list(*enum_values)));
          return;
        }
        std::string near_control = closest(e.text, control_names_);
        if (e.text.find('.') != std::string::npos) {
          std::string near = closest(e.text, vocab_.resources);
          if (!near.empty() && near_control.empty()) {
            error(at(e, l), "unknown resource '" + e.text + "'", "unknown-resource", "did you mean '" + near + "'?");
            return;
          }
        } else if (near_control.empty() && !has_upper(e.text)) {
          std::string near = closest(e.text, vocab_.machine_facts);
          if (!near.empty()) {
            error(at(e, l), "unknown machine fact '" + e.text + "'", "unknown-fact", "did you mean '" + near + "'?");
            return;
          }
        }
        error(at(e, l), "'" + e.text + "' is not a declared control, a machine fact or a resource", "undeclared-control",
              near_control.empty() ? "declare it with `control " + e.text + " : env int;` or use a machine fact: " + list(vocab_.machine_facts)
                                   : "did you mean control '" + near_control + "'?");
        return;
      }
      case Expr::Kind::Call: {
        auto it = vocab_.functions.find(e.text);
        if (it == vocab_.functions.end()) {
          std::vector<std::string> fns;
          for (auto& [n, f] : vocab_.functions) fns.push_back(n);
          std::sort(fns.begin(), fns.end());
          error(at(e, l), "unknown function '" + e.text + "'", "unknown-function", did_you_mean(e.text, fns, "functions: " + list(fns)));
        } else if (static_cast<int>(e.args.size()) < it->second.min_args || static_cast<int>(e.args.size()) > it->second.max_args) {
          std::string want = it->second.min_args == it->second.max_args
                                 ? std::to_string(it->second.min_args)
                                 : std::to_string(it->second.min_args) + " to " + std::to_string(it->second.max_args);
          error(at(e, l), "'" + e.text + "' takes " + want + " argument(s), not " + std::to_string(e.args.size()), "function-arity");
        }
        for (auto& a : e.args) names(a, l, nullptr);
        return;
      }
      default:
        for (auto& a : e.args) names(a, l, nullptr);
    }
  }

  VT infer(const Expr& e, const std::vector<std::string>* enum_values) {
    switch (e.kind) {
      case Expr::Kind::Int: return VT::Int;
      case Expr::Kind::Float: return VT::Float;
      case Expr::Kind::Size: return VT::Size;
      case Expr::Kind::Duration: return VT::Duration;
      case Expr::Kind::String: return VT::String;
      case Expr::Kind::Bool:
        // enum{false, true, ...}: the words lex as bools but are enumerators here.
        if (enum_values && std::find(enum_values->begin(), enum_values->end(), e.text) != enum_values->end()) return VT::EnumWord;
        return VT::Bool;
      case Expr::Kind::Name: {
        if (enum_values && std::find(enum_values->begin(), enum_values->end(), e.text) != enum_values->end()) return VT::EnumWord;
        if (auto it = controls_.find(e.text); it != controls_.end()) {
          // Another enum control's value fits only if the enumerators agree; stay lenient.
          return it->second->type.kind == Type::Kind::Enum ? VT::Unknown : vt_of(it->second->type.kind);
        }
        if (auto it = vocab_.fact_types.find(e.text); it != vocab_.fact_types.end()) return it->second == "size" ? VT::Size : VT::Int;
        if (vocab_.resource_set.count(e.text)) return VT::Int;
        return VT::Unknown;
      }
      case Expr::Kind::Unary:
        if (e.op == "!") return VT::Bool;
        return e.args.empty() ? VT::Unknown : infer(e.args[0], enum_values);
      case Expr::Kind::Binary: {
        if (e.args.size() != 2) return VT::Unknown;
        const std::string& o = e.op;
        if (o == "==" || o == "!=" || o == "<" || o == "<=" || o == ">" || o == ">=" || o == "&&" || o == "||") return VT::Bool;
        VT a = infer(e.args[0], enum_values), b = infer(e.args[1], enum_values);
        if (o == "??") return a != VT::Unknown ? a : b;
        if (a == VT::Unknown || b == VT::Unknown) return VT::Unknown;
        if (a == VT::Float || b == VT::Float) {
          if (a == VT::Size || b == VT::Size) return VT::Size;
          if (a == VT::Duration || b == VT::Duration) return VT::Duration;
          return VT::Float;
        }
        if (a == VT::Size || b == VT::Size) return VT::Size;
        if (a == VT::Duration || b == VT::Duration) return VT::Duration;
        return a;
      }
      case Expr::Kind::Call:
        if ((e.text == "min" || e.text == "max" || e.text == "clamp" || e.text == "abs") && !e.args.empty())
          return infer(e.args[0], enum_values);
        return VT::Unknown;
    }
    return VT::Unknown;
  }

  void typed_value(const Control& k, const Expr& e, const char* what) {
    const std::vector<std::string>* ev = k.type.kind == Type::Kind::Enum ? &k.type.enumerators : nullptr;
    names(e, k.loc, ev);
    VT v = infer(e, ev);
    if (!compatible(v, k.type.kind)) {
      std::string hint;
      if (k.type.kind == Type::Kind::Duration && v == VT::Int) hint = "add a unit: 200ms, 5us, 1s";
      else if (k.type.kind == Type::Kind::Int && v == VT::Float) hint = "declare the control as float, or use an integer";
      else if (k.type.kind == Type::Kind::Enum) hint = "use one of: " + list(k.type.enumerators);
      error(at(e, k.loc), std::string(what) + " '" + format(e) + "' of control '" + k.name + "' is " + vt_name(v) +
                               ", but the control is " + type_text(k.type),
            "type-mismatch", hint);
    }
  }

  static std::optional<double> constant(const Expr& e) { return evaluate(e, nullptr); }

  void control(const Control& k) {
    provenance(k.prov, k.loc);
    // how it is set
    if (k.how.kind == ControlKind::Kind::Api) api_params(k);
    if (is_query(k) && !k.sets.empty())
      warning(k.loc, "control '" + k.name + "' is a query: its name asks for a value, so a call sets no " + list(k.sets),
              "query-control", "drop the control (the tuner never searches a query), or its sets clause");
    if (k.how.kind == ControlKind::Kind::Option && k.how.carrier.empty())
      error(k.loc, "option control '" + k.name + "' has no carrier variable", "option-without-carrier",
            "name the variable that carries it: option(\"MALLOC_CONF\", \",\", \":\")");
    // type
    if (k.type.kind == Type::Kind::Enum) {
      if (k.type.enumerators.empty()) error(k.loc, "enum type of control '" + k.name + "' has no values", "empty-enum", "write: enum{a, b}");
      std::unordered_set<std::string> seen;
      for (auto& v : k.type.enumerators)
        if (!seen.insert(v).second)
          error(k.loc, "enum value '" + v + "' appears twice in control '" + k.name + "'", "duplicate-enumerator");
    }
    // domain
    if (k.domain.kind == Domain::Kind::Range) {
      if (!numeric(k.type.kind))
        error(k.loc, "control '" + k.name + "' is " + type_text(k.type) + "; a range [lo, hi] needs a numeric type", "type-mismatch",
              "use a set {a, b} or declare the control int, float, size or duration");
      else {
        if (k.domain.lo) typed_value(k, *k.domain.lo, "lower bound");
        if (k.domain.hi) typed_value(k, *k.domain.hi, "upper bound");
      }
      if (k.domain.lo && k.domain.hi) {
        auto lo = constant(*k.domain.lo), hi = constant(*k.domain.hi);
        if (lo && hi && *lo > *hi)
          error(k.loc, "range [" + format(*k.domain.lo) + ", " + format(*k.domain.hi) + "] of control '" + k.name + "' is empty (lower bound > upper bound)",
                "impossible-range", "swap the bounds");
      }
    } else if (k.domain.kind == Domain::Kind::Set) {
      if (k.domain.values.empty()) error(k.loc, "value set of control '" + k.name + "' is empty", "empty-domain", "list the values: in {1, 2, 4}");
      for (auto& v : k.domain.values) typed_value(k, v, "domain value");
    }
    // default
    if (k.default_value) {
      typed_value(k, *k.default_value, "default");
      outside_domain(k);
    }
    // fallback
    if (!k.fallback_for.empty() && !controls_.count(k.fallback_for))
      error(k.loc, "control '" + k.name + "' is fallback_for '" + k.fallback_for + "', which is not a declared control",
            "undeclared-control", fallback_hint(k));
    for (auto& r : k.sets) resource(r, k.loc, " in 'sets' of control '" + k.name + "'");
  }

  std::string fallback_hint(const Control& k) {
    std::vector<std::string> others;
    for (auto& n : control_names_)
      if (n != k.name) others.push_back(n);
    return did_you_mean(k.fallback_for, others, "declare '" + k.fallback_for + "' as a control");
  }

  void outside_domain(const Control& k) {
    const Expr& d = *k.default_value;
    if (k.domain.kind == Domain::Kind::Range && k.domain.lo && k.domain.hi) {
      auto v = constant(d), lo = constant(*k.domain.lo), hi = constant(*k.domain.hi);
      if (v && ((lo && *v < *lo) || (hi && *v > *hi)))
        error(at(d, k.loc), "default " + format(d) + " of control '" + k.name + "' is outside its domain " + domain_text(k.domain),
              "default-outside-domain", "change the default or widen the domain");
    } else if (k.domain.kind == Domain::Kind::Set && !k.domain.values.empty()) {
      auto v = constant(d);
      bool literal = v || d.kind == Expr::Kind::String || (k.type.kind == Type::Kind::Enum && d.kind == Expr::Kind::Name);
      if (!literal) return;
      bool found = false;
      for (auto& x : k.domain.values) {
        auto xv = constant(x);
        if ((v && xv && *v == *xv) || (!v && x.kind == d.kind && x.text == d.text)) found = true;
        if (!xv && x.kind != Expr::Kind::String && x.kind != Expr::Kind::Name) found = true;  // not comparable
      }
      if (!found)
        error(at(d, k.loc), "default " + format(d) + " of control '" + k.name + "' is not in its domain " + domain_text(k.domain),
              "default-outside-domain", "change the default or add it to the set");
    }
  }

  void api_params(const Control& k) {
    const std::string& p = k.how.params;
    auto bad = [&](const std::string& why) {
      error(k.loc, "parameters '" + p + "' of api control '" + k.name + "' are malformed: " + why, "bad-api-params",
            "write the C parameter list: api(int n), api(void), api(const char* name, size_t len)");
    };
    if (p.empty() || p == "void") return;
    int depth = 0;
    std::vector<std::string> items(1);
    for (char ch : p) {
      if (ch == '(' || ch == '<' || ch == '[') ++depth;
      if (ch == ')' || ch == '>' || ch == ']') --depth;
      if (depth < 0) return bad("unbalanced brackets");
      if (ch == ',' && depth == 0) {
        items.emplace_back();
        continue;
      }
      items.back() += ch;
    }
    if (depth != 0) return bad("unbalanced brackets");
    for (size_t i = 0; i < items.size(); ++i) {
      std::string s = items[i];
      while (!s.empty() && s.front() == ' ') s.erase(s.begin());
      while (!s.empty() && s.back() == ' ') s.pop_back();
      if (s.empty()) return bad("empty parameter " + std::to_string(i + 1));
      if (s == "...") {
        if (i + 1 != items.size()) return bad("'...' must be last");
        continue;
      }
      bool word = false;
      for (char ch : s) {
        if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') word = true;
        else if (!std::strchr(" *&[]:<>.(),", ch)) return bad(std::string("unexpected character '") + ch + "'");
      }
      if (!word) return bad("parameter " + std::to_string(i + 1) + " has no type");
      if (!std::isalpha(static_cast<unsigned char>(s[0])) && s[0] != '_' && s[0] != ':')
        return bad("parameter " + std::to_string(i + 1) + " does not start with a type");
    }
  }

  void fallback_cycles() {
    // Each control has at most one fallback edge: follow chains, colouring visited nodes.
    const size_t n = c_.controls.size();
    std::vector<char> state(n, 0);  // 0 new, 1 on the current path, 2 done
    auto index = [&](const Control* k) { return static_cast<size_t>(k - c_.controls.data()); };
    std::vector<const Control*> path;
    for (auto& k : c_.controls) {
      if (state[index(&k)] != 0) continue;
      path.clear();
      const Control* cur = &k;
      while (cur && state[index(cur)] == 0) {
        state[index(cur)] = 1;
        path.push_back(cur);
        auto it = cur->fallback_for.empty() ? controls_.end() : controls_.find(cur->fallback_for);
        cur = it == controls_.end() ? nullptr : it->second;
      }
      if (cur && state[index(cur)] == 1) {
        std::string cycle;
        size_t start = 0;
        while (path[start] != cur) ++start;
        for (size_t i = start; i < path.size(); ++i) cycle += path[i]->name + " -> ";
        cycle += cur->name;
        error(cur->loc, "fallback cycle: " + cycle, "fallback-cycle", "a control falls back to another; the chain must end");
      }
      for (auto* p : path) state[index(p)] = 2;
    }
  }

  void demand(const Demand& d, std::unordered_map<std::string, const Demand*>& seen) {
    provenance(d.prov, d.loc);
    resource(d.resource, d.loc, "");
    names(d.value, d.loc);
    if (d.when) names(*d.when, d.loc);
    std::string key = d.resource + "\n" + (d.when ? format(*d.when) : "");
    auto [it, fresh] = seen.emplace(key, &d);
    if (!fresh)
      error(d.loc, "duplicate demand on '" + d.resource + "'" + (d.when ? " when " + format(*d.when) : ""), "duplicate-demand",
            "the first is at line " + std::to_string(it->second->loc.line) + "; combine them, or make them conditional with 'when'");
  }

  void assumption(const Assumption& a) {
    provenance(a.prov, a.loc);
    auto it = vocab_.predicates.find(a.predicate);
    if (it == vocab_.predicates.end()) {
      error(a.loc, "unknown predicate '" + a.predicate + "'", "unknown-predicate",
            did_you_mean(a.predicate, vocab_.predicate_names, "predicates: " + list(vocab_.predicate_names)));
      return;
    }
    const auto& params = it->second.params;
    if (a.args.size() != params.size()) {
      error(a.loc, "'" + a.predicate + "' takes " + std::to_string(params.size()) + " argument(s), not " + std::to_string(a.args.size()),
            "predicate-args", params.size() == 1 && params[0] == "resource" ? "write: assume " + a.predicate + "(cpu.cores);" : "");
      return;
    }
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i] == "resource") resource(a.args[i], a.loc, " in '" + a.predicate + "(...)'");
  }

  void behavior(const Behavior& b) {
    provenance(b.prov, b.loc);
    if (!vocab_.behavior_set.count(b.name))
      warning(b.loc, "unknown behavior '" + b.name + "'", "unknown-behavior",
              did_you_mean(b.name, vocab_.behaviors, "known behaviors: " + list(vocab_.behaviors)));
    for (auto& [key, v] : b.params) names(v, b.loc);
  }

  void provides(const Provides& p) {
    provenance(p.prov, p.loc);
    if (p.what != "region")
      error(p.loc, "unknown 'provides " + p.what + "'", "unknown-provides", "write: provides region NAME; or provides region none;");
  }

  void signal(const Signal& s) {
    provenance(s.prov, s.loc);
    if (s.kind == Signal::Kind::Introspect) {
      if (!s.value) error(s.loc, "introspection signal '" + s.metric + "' has no value", "missing-signal-value");
      return;
    }
    if (!vocab_.metric_set.count(s.metric))
      warning(s.loc, "unknown metric '" + s.metric + "'", "unknown-metric",
              did_you_mean(s.metric, vocab_.metrics, "the profiler collects: " + list(vocab_.metrics)));
    bool word = s.relation == "rises_with" || s.relation == "falls_with";
    if (!s.value) {
      error(s.loc, "signal '" + s.metric + " " + s.relation + "' needs " + (word ? "a condition word" : "a value"), "missing-signal-value",
            word ? "write: signal " + s.metric + " " + s.relation + " oversubscription;" : "write: signal " + s.metric + " " + s.relation + " cpu.threads + 1;");
      return;
    }
    if (word) {
      if (s.value->kind != Expr::Kind::Name)
        error(s.loc, "'" + s.relation + "' takes a condition word, not '" + format(*s.value) + "'", "bad-signal-value",
              "write a word such as oversubscription or contention");
      return;
    }
    names(*s.value, s.loc);
  }

  void binding(const Binding& b) {
    if (std::find(vocab_.binding_kinds.begin(), vocab_.binding_kinds.end(), b.kind) == vocab_.binding_kinds.end())
      error(b.loc, "unknown binding kind '" + b.kind + "'", "unknown-binding-kind",
            did_you_mean(b.kind, vocab_.binding_kinds, "binding kinds: " + list(vocab_.binding_kinds)));
    if (b.pattern.empty()) error(b.loc, "binding '" + b.kind + "' has an empty pattern", "empty-binding", "write: binds soname \"libfoo.so.1\";");
  }

  const Contract& c_;
  Diagnostics& diags_;
  const Vocabulary& vocab_;
  std::unordered_map<std::string, const Control*> controls_;
  std::vector<std::string> control_names_;
  std::unordered_set<std::string> enumerators_;  // of every enum control
};

}  // namespace

std::vector<std::string> identifier_words(std::string_view name) {
  std::vector<std::string> words(1);
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char ch = static_cast<unsigned char>(name[i]);
    if (!std::isalnum(ch)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (std::isupper(ch) && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1])) && !words.back().empty())
      words.emplace_back();
    words.back() += static_cast<char>(std::tolower(ch));
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

bool is_query_name(std::string_view name) {
  // Words split at '_', '.', ':' and lower-to-upper case changes, compared lower-cased.
  std::vector<std::string> words = identifier_words(name);
  for (const auto& w : words) {
    if (w == "get" || w == "query" || w == "inquire" || w == "is" || w == "has") return true;
    // openblas_getaffinity, pthread_getconcurrency: a getter written as one word.
    if (w.size() > 3 && w.rfind("get", 0) == 0 && std::isalpha(static_cast<unsigned char>(w[3]))) return true;
  }
  return false;
}

// A name that says the call acts: it changes a setting or a state, whatever it returns.
static bool acting_name(const std::string& name) {
  static const std::set<std::string> verbs = {
      "set",     "init",   "initialize", "initialise", "enable",   "disable", "start",    "stop",
      "pause",   "resume", "reset",      "bind",       "unbind",   "pin",     "unpin",    "allow",
      "configure", "attach", "detach",   "create",     "destroy",  "free",    "release",  "terminate",
      "shutdown", "finalize", "finalise", "acquire",   "lock",     "unlock",  "spawn",    "launch"};
  for (const auto& w : identifier_words(name))
    if (verbs.count(w)) return true;
  return false;
}

// The parameter list of a declaration's signature and what precedes the name: "int f(void)"
// gives {"int", ""}; false when the signature has no parameter list.
static bool split_signature(const std::string& sig, const std::string& name, std::string& ret, std::string& params) {
  auto open = sig.find('(');
  auto close = sig.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  params = sig.substr(open + 1, close - open - 1);
  std::string head = sig.substr(0, open);
  // The function's own name ends the head: "unsigned int server::default_concurrency".
  std::string local = name.substr(name.rfind(':') == std::string::npos ? 0 : name.rfind(':') + 1);
  auto at = head.rfind(local);
  if (!local.empty() && at != std::string::npos) head = head.substr(0, at);
  auto trim = [](std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    size_t b = 0;
    while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    return s.substr(b);
  };
  params = trim(params);
  ret = trim(head);
  // A qualified name's class part ("server::") is not the return type.
  while (ret.size() >= 2 && ret.compare(ret.size() - 2, 2, "::") == 0) {
    ret = trim(ret.substr(0, ret.size() - 2));
    auto sp = ret.find_last_of(" \t*&");
    ret = sp == std::string::npos ? "" : trim(ret.substr(0, sp + 1));
  }
  return true;
}

// A name that says the call reports a state: prints it or copies it out (omp_display_affinity,
// omp_capture_affinity, omp_display_env), whatever it takes.
static bool reporting_name(const std::string& name) {
  static const std::set<std::string> verbs = {"display", "print", "capture", "dump", "show", "describe"};
  for (const auto& w : identifier_words(name))
    if (verbs.count(w)) return true;
  return false;
}

bool is_query_function(const std::string& name, const std::string& signature, const std::string& doc) {
  if (is_query_name(name)) return true;
  if (acting_name(name)) return false;
  if (reporting_name(name)) return true;
  std::string ret, params;
  if (split_signature(signature, name, ret, params)) {
    bool no_params = params.empty() || params == "void";
    // "HWLOC_DECLSPEC void": the last word of what precedes the name is the return type.
    auto last = ret.find_last_of(" \t");
    std::string type = last == std::string::npos ? ret : ret.substr(last + 1);
    // A constructor (nothing before its name) or a function returning nothing acts by being called.
    if (no_params && !type.empty() && type != "void") return true;
  }
  // "Returns the number of threads ...", "Reports active parallelism level ...".
  static const std::set<std::string> asking = {"returns", "return", "gets",     "queries",   "query",  "reports",
                                               "tells",   "checks", "whether",  "retrieves", "obtains"};
  auto words = identifier_words(doc.substr(0, doc.find_first_of(" \t\n.,:;(")));
  return !words.empty() && asking.count(words.front()) > 0;
}

bool is_object_lifecycle(const std::string& name, const std::string& signature) {
  static const std::set<std::string> verbs = {"create", "destroy", "new",  "delete",   "free",     "init",
                                              "initialize", "initialise", "alloc", "allocate", "clone", "copy", "dup"};
  static const std::set<std::string> builtin = {"void", "char",   "short",  "int",     "long",    "float",   "double",
                                                "bool", "size_t", "ssize_t", "int32_t", "int64_t", "uint32_t",
                                                "uint64_t", "intptr_t", "uintptr_t", "_Bool"};
  static const std::set<std::string> qualifiers = {"const", "volatile", "struct", "enum", "union", "unsigned", "signed",
                                                   "restrict", "__restrict"};
  std::vector<std::string> words = identifier_words(name);
  if (std::none_of(words.begin(), words.end(), [](const std::string& w) { return verbs.count(w) > 0; })) return false;
  std::string ret, params;
  if (!split_signature(signature, name, ret, params) || params.empty() || params == "void") return false;
  std::set<std::string> in_name(words.begin(), words.end());
  // Each parameter: its identifiers less qualifiers and, where two are left, its name.
  int depth = 0;
  std::vector<std::string> parts(1);
  for (char ch : params) {
    if (ch == '(' || ch == '<' || ch == '[') ++depth;
    if (ch == ')' || ch == '>' || ch == ']') --depth;
    if (ch == ',' && depth == 0) parts.emplace_back();
    else parts.back() += ch;
  }
  for (const auto& part : parts) {
    std::vector<std::string> ids;
    std::string cur;
    for (char ch : part + " ") {
      if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == ':') cur += ch;
      else if (!cur.empty()) {
        if (!qualifiers.count(cur)) ids.push_back(cur);
        cur.clear();
      }
    }
    if (ids.size() == 2) ids.pop_back();
    if (ids.size() != 1 || builtin.count(ids[0])) return false;
    // kmp_affinity_mask_t: every word but the typedef's "t" is a word of the call's name. A
    // pool of threads is a resource, not a value: making or unmaking one (ZSTD_freeThreadPool)
    // starts or stops threads.
    for (const auto& w : identifier_words(ids[0])) {
      if (w == "thread" || w == "threads" || w == "pool" || w == "worker" || w == "workers" || w == "arena" ||
          w == "team")
        return false;
      if (w != "t" && !in_name.count(w)) return false;
    }
  }
  return true;
}

bool is_query(const Control& c) { return c.how.kind == ControlKind::Kind::Api && is_query_name(c.name); }

bool check(const Contract& c, Diagnostics& diags) { return Checker(c, diags).run(); }

bool check(const Document& doc, Diagnostics& diags) {
  bool ok = true;
  std::unordered_map<std::string, const Contract*> seen;
  for (auto& c : doc.contracts) {
    ok = check(c, diags) && ok;
    auto [it, fresh] = seen.emplace(c.name + "\n" + c.version, &c);
    if (!fresh && !c.name.empty()) {
      diags.error(c.loc, "contract '" + c.name + "' \"" + c.version + "\" appears twice in this file", "duplicate-contract",
                  "the first is at line " + std::to_string(it->second->loc.line));
      ok = false;
    }
  }
  return ok;
}

}  // namespace syspilot::lpcl
