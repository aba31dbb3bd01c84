// `syspilot tune`'s checks of --pin/--add/--drop against the composed contracts, made before any
// run, so that a typo costs a message rather than a profile and a search.
#include "cli/tune_validate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>

#include "cli/command.h"
#include "lpcl/lpcl.h"

namespace syspilot::cli {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// A value as LPCL writes literals (8, 0x10, 0.5, 64KiB, 200ms); nullopt for anything else.
std::optional<double> number(const std::string& v) {
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (end != v.c_str() && !*end) return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
  Diagnostics quiet;
  auto e = lpcl::parse_expression(v, "value", quiet);
  if (!e) return std::nullopt;
  if (e->kind == lpcl::Expr::Kind::Unary && e->op == "-" && e->args.size() == 1)
    if (auto x = lpcl::literal_value(e->args[0])) return -*x;
  return lpcl::literal_value(*e);
}

std::optional<double> evaluate(const lpcl::Expr& e, const tuner::MachineFacts& m) {
  return lpcl::evaluate(e, [&](const std::string& n) { return m.get(n); });
}

std::string number_text(double v) {
  if (std::fabs(v - std::llround(v)) < 1e-9 && std::fabs(v) < 9e15) return std::to_string(std::llround(v));
  return std::to_string(v);
}

const char* type_name(lpcl::Type::Kind k) {
  using K = lpcl::Type::Kind;
  switch (k) {
    case K::Int: return "int";
    case K::Float: return "float";
    case K::Bool: return "bool";
    case K::String: return "string";
    case K::Size: return "size";
    case K::Duration: return "duration";
    case K::Enum: return "enum";
  }
  return "value";
}

bool bool_word(const std::string& v) {
  static const std::set<std::string> words = {"true", "false", "1", "0", "yes", "no", "on", "off"};
  return words.count(lower(v)) > 0;
}

// A set member or enumerator as the control would be set.
std::string member_text(const lpcl::Expr& e, const tuner::MachineFacts& m) {
  using K = lpcl::Expr::Kind;
  if (e.kind == K::String || e.kind == K::Bool || (e.kind == K::Name && !m.get(e.text))) return e.text;
  if (auto v = evaluate(e, m)) return number_text(*v);
  return lpcl::format(e);
}

}  // namespace

std::string nearest_name(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = SIZE_MAX;
  const std::string l = lower(name);
  for (const auto& k : known) {
    size_t d = edit_distance(l, lower(k));
    if (d < best_d) best_d = d, best = k;
  }
  // A typo: a few edits, fewer than a third of the name (OMP_NUM_THRAEDS, omp_num_threads).
  size_t limit = std::max<size_t>(2, name.size() / 3);
  return best_d <= limit ? best : std::string();
}

std::optional<std::string> outside_domain(const lpcl::Control& c, const std::string& value,
                                          const tuner::MachineFacts& m, bool in_domain) {
  using TK = lpcl::Type::Kind;
  using DK = lpcl::Domain::Kind;
  const std::string head = c.name + " takes ";
  const std::string tail = ", not '" + value + "'";
  // The type first: a value of the wrong type is wrong whatever the domain.
  std::optional<double> num;
  switch (c.type.kind) {
    case TK::Int:
      num = number(value);
      if (!num || std::fabs(*num - std::llround(*num)) > 1e-9) return head + "an integer" + tail;
      break;
    case TK::Float:
    case TK::Size:
    case TK::Duration:
      num = number(value);
      if (!num) return head + "a " + type_name(c.type.kind) + tail;
      break;
    case TK::Bool:
      if (!bool_word(value)) return head + "a bool (true or false)" + tail;
      break;
    case TK::Enum: {
      bool known = std::any_of(c.type.enumerators.begin(), c.type.enumerators.end(),
                               [&](const std::string& e) { return lower(e) == lower(value); });
      if (!known && !c.type.enumerators.empty()) {
        std::string list;
        for (const auto& e : c.type.enumerators) list += (list.empty() ? "" : ", ") + e;
        return head + "one of enum{" + list + "}" + tail;
      }
      break;
    }
    case TK::String:
      break;
  }
  if (!in_domain) return std::nullopt;
  if (c.domain.kind == DK::Range && c.domain.lo && c.domain.hi && num) {
    auto lo = evaluate(*c.domain.lo, m), hi = evaluate(*c.domain.hi, m);
    if (lo && hi && (*num < *lo - 1e-9 || *num > *hi + 1e-9)) {
      std::string written = "[" + lpcl::format(*c.domain.lo) + ", " + lpcl::format(*c.domain.hi) + "]";
      std::string here = number_text(*lo) + ".." + number_text(*hi);
      const std::string type = type_name(c.type.kind);
      return head + (type[0] == 'i' ? "an " : "a ") + type + " in " + written +
             (written == "[" + number_text(*lo) + ", " + number_text(*hi) + "]" ? "" : " (" + here + " on this machine)") +
             tail;
    }
  } else if (c.domain.kind == DK::Set && !c.domain.values.empty()) {
    std::string list;
    bool found = false;
    for (const auto& e : c.domain.values) {
      std::string t = member_text(e, m);
      list += (list.empty() ? "" : ", ") + t;
      auto a = number(t);
      found |= lower(t) == lower(value) || (a && num && std::fabs(*a - *num) < 1e-9);
    }
    if (!found) return head + "one of {" + list + "}" + tail;
  }
  return std::nullopt;
}

void validate_edits(const tuner::SpaceEdits& edits, const tuner::Composition& composition,
                    const tuner::MachineFacts& m) {
  // The first contract declaring a control defines it, as in build_space().
  std::vector<std::string> known;
  std::vector<const lpcl::Control*> controls;
  for (const auto& use : composition.contracts)
    for (const auto& c : use.contract.controls)
      if (std::find(known.begin(), known.end(), c.name) == known.end()) {
        known.push_back(c.name);
        controls.push_back(&c);
      }
  for (const auto& p : composition.process_controls)
    if (std::find(known.begin(), known.end(), p.name) == known.end()) known.push_back(p.name);
  auto control = [&](const std::string& name) -> const lpcl::Control* {
    for (size_t i = 0; i < controls.size(); ++i)
      if (controls[i]->name == name) return controls[i];
    return nullptr;
  };
  std::vector<std::string> names = known;  // what a typo may be of: the added names too
  for (const auto& [name, values] : edits.add) names.push_back(name);

  auto unknown = [&](const std::string& option, const std::string& name) {
    std::string msg = option + " " + name + ": no composed contract declares a control '" + name + "'";
    std::string near = nearest_name(name, names);
    if (!near.empty()) msg += "; did you mean " + near + "?";
    msg += " (" + std::to_string(known.size()) + " controls known";
    std::string libs;
    for (const auto& use : composition.contracts) libs += (libs.empty() ? "" : ", ") + use.contract.name;
    if (!libs.empty()) msg += " from " + libs;
    msg += "; a variable of your own needs --add " + name + "=V1,V2)";
    throw UsageError(msg);
  };
  for (const auto& [name, values] : edits.add)
    if (const auto* c = control(name))
      for (const auto& v : values)
        if (auto why = outside_domain(*c, v, m, false)) throw UsageError("--add " + name + "=...: " + *why);
  for (const auto& [name, value] : edits.pin) {
    if (edits.add.count(name)) continue;  // pinned among the values the user gave
    const auto* c = control(name);
    if (!c) {
      if (std::find(known.begin(), known.end(), name) == known.end()) unknown("--pin", name);
      continue;  // a process count the command exposes: any value
    }
    if (auto why = outside_domain(*c, value, m)) throw UsageError("--pin " + name + "=" + value + ": " + *why);
  }
  for (const auto& name : edits.drop)
    if (std::find(names.begin(), names.end(), name) == names.end()) unknown("--drop", name);
}

}  // namespace syspilot::cli
