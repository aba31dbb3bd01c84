// The search space: machine facts, LPCL constraint evaluation, domain discretisation, and how
// a configuration becomes a child's environment.
#include "tuner/space.h"

#include "lpcl/lpcl.h"
#include "lpcl/source_dir.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

namespace syspilot::tuner {

Objective::~Objective() = default;
Strategy::~Strategy() = default;

std::string to_string(const Config& c) {
  if (c.empty()) return "default";
  std::string s;
  for (const auto& [k, v] : c) {
    if (!s.empty()) s += ' ';
    s += k + "=" + v;
  }
  return s;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

MachineFacts MachineFacts::detect() {
  MachineFacts m;
  cpu_set_t set;
  CPU_ZERO(&set);
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) n = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  m.ncpus = m.ncores = std::max(1, n);
  if (const char* o = std::getenv("SYSPILOT_NCPUS"); o && *o) {
    char* end = nullptr;
    long v = std::strtol(o, &end, 10);
    if (end != o && !*end && v >= 1 && v <= 4096) m.ncpus = m.ncores = static_cast<int>(v);
  }
  int nodes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    auto name = e.path().filename().string();
    if (name.rfind("node", 0) == 0 && name.size() > 4 && std::isdigit(static_cast<unsigned char>(name[4]))) ++nodes;
  }
  m.nnuma = std::max(1, nodes);
  for (const auto& e : std::filesystem::directory_iterator("/dev", ec)) {
    auto name = e.path().filename().string();
    if (name.rfind("nvidia", 0) == 0 && name.size() > 6 && std::isdigit(static_cast<unsigned char>(name[6]))) ++m.ngpus;
  }
  m.mem_total = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  return m;
}

std::optional<double> MachineFacts::get(const std::string& name) const {
  if (name == "ncpus") return ncpus;
  if (name == "ncores") return ncores;
  if (name == "nnuma") return nnuma;
  if (name == "ngpus") return ngpus;
  if (name == "mem_total") return mem_total;
  return std::nullopt;
}

std::map<std::string, double> MachineFacts::names() const {
  std::map<std::string, double> out;
  for (const char* f : {"ncpus", "ncores", "nnuma", "ngpus", "mem_total"}) out[f] = *get(f);
  return out;
}

// ---- LPCL expressions over numbers ---------------------------------------------------------

namespace {

// A number as LPCL writes literals: 8, 0x10, 0.5, 64KiB, 200ms (lpcl's own unit table).
std::optional<double> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() && !*end) return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
  Diagnostics quiet;
  auto e = lpcl::parse_expression(text, "value", quiet);
  if (!e) return std::nullopt;
  if (e->kind == lpcl::Expr::Kind::Unary && e->op == "-" && e->args.size() == 1)
    if (auto x = lpcl::literal_value(e->args[0])) return -*x;
  return lpcl::literal_value(*e);
}

// Numeric reading of a control value: numbers, true/false and the usual boolean words.
std::optional<double> numeric_value(const std::string& v) {
  if (auto n = parse_number(v)) return n;
  std::string l;
  for (char c : v) l += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "true" || l == "yes" || l == "on") return 1.0;
  if (l == "false" || l == "no" || l == "off") return 0.0;
  return std::nullopt;
}

std::string format_number(double v) {
  if (std::fabs(v - std::llround(v)) < 1e-9 && std::fabs(v) < 9e15) return std::to_string(std::llround(v));
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

std::optional<double> evaluate_expr(const std::string& text, const std::map<std::string, double>& names,
                                    std::string* error) {
  // Constraints are evaluated many times during a search: parsed once per text.
  thread_local std::map<std::string, std::optional<lpcl::Expr>> parsed;
  thread_local std::map<std::string, std::string> parse_errors;
  auto it = parsed.find(text);
  if (it == parsed.end()) {
    if (parsed.size() > 4096) parsed.clear(), parse_errors.clear();
    Diagnostics d;
    auto e = lpcl::parse_expression(text, "expression", d);
    if (!e) parse_errors[text] = d.items().empty() ? "not an expression" : d.items().front().message;
    it = parsed.emplace(text, std::move(e)).first;
  }
  if (!it->second) {
    if (error) *error = parse_errors[text];
    return std::nullopt;
  }
  std::string missing;
  auto v = lpcl::evaluate(*it->second, [&](const std::string& n) -> std::optional<double> {
    auto f = names.find(n);
    if (f != names.end() && std::isfinite(f->second)) return f->second;
    if (missing.empty()) missing = n;
    return std::nullopt;
  });
  if (!v && error) {
    *error = !missing.empty() ? "no value for '" + missing + "'"
                              : "does not evaluate (division by zero, a string or an unknown function)";
  }
  return v;
}

// ---- Space ----------------------------------------------------------------------------------

const Param* Space::find(const std::string& name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

std::string Space::value(const Config& c, const std::string& name) const {
  auto it = c.find(name);
  if (it != c.end()) return it->second;
  const Param* p = find(name);
  return p ? p->default_value : std::string();
}

bool Space::admits(const Config& c, const MachineFacts& m) const {
  if (constraints.empty()) return true;
  std::map<std::string, double> names = m.names();
  for (const auto& p : params)
    if (auto v = numeric_value(value(c, p.name))) names[p.name] = *v;
  for (const auto& [k, v] : c)
    if (!find(k))
      if (auto n = numeric_value(v)) names[k] = *n;
  for (const auto& text : constraints) {
    auto v = evaluate_expr(text, names);
    if (v && *v == 0) return false;
  }
  return true;
}

std::uint64_t Space::size() const {
  std::uint64_t n = 1;
  for (const auto& p : params) {
    std::uint64_t k = std::max<std::uint64_t>(1, p.values.size());
    if (n > std::numeric_limits<std::uint64_t>::max() / k) return std::numeric_limits<std::uint64_t>::max();
    n *= k;
  }
  return n;
}

// ---- From contracts -------------------------------------------------------------------------

namespace {

std::string expr_text(const lpcl::Expr& e);

std::string expr_text(const lpcl::Expr& e) {
  using K = lpcl::Expr::Kind;
  switch (e.kind) {
    case K::Int: case K::Float: case K::Size: case K::Duration: case K::Bool: case K::Name: return e.text;
    case K::String: return e.text;
    case K::Unary: return e.op + "(" + (e.args.empty() ? "" : expr_text(e.args[0])) + ")";
    case K::Binary:
      return "(" + (e.args.size() > 0 ? expr_text(e.args[0]) : "") + " " + e.op + " " +
             (e.args.size() > 1 ? expr_text(e.args[1]) : "") + ")";
    case K::Call: {
      std::string s = e.text + "(";
      for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + expr_text(e.args[i]);
      return s + ")";
    }
  }
  return e.text;
}

// A literal expression's value as the control would be set (strings and words as written).
std::optional<std::string> literal_text(const lpcl::Expr& e, const MachineFacts& m) {
  using K = lpcl::Expr::Kind;
  if (e.kind == K::String) return e.text;
  if (e.kind == K::Bool) return e.text;
  if (e.kind == K::Name && !m.get(e.text)) return e.text;  // enumerator word
  auto v = evaluate_expr(expr_text(e), m.names());
  if (!v) return std::nullopt;
  return format_number(*v);
}

void push_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

}  // namespace

std::vector<double> thread_ladder(double lo, double top, const MachineFacts& m) {
  std::vector<double> pts{lo};
  for (double v = 1; v <= top; v *= 2)
    if (v > lo) pts.push_back(v);
  for (double v : {double(m.ncpus), 2.0 * m.ncpus})
    if (v >= lo && v <= top) pts.push_back(v);
  std::sort(pts.begin(), pts.end());
  pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
  return pts;
}

bool discretise(const lpcl::Control& c, const MachineFacts& m, Param& out, std::string* why) {
  using TK = lpcl::Type::Kind;
  using DK = lpcl::Domain::Kind;
  out.name = c.name;
  out.values.clear();
  out.kind = c.how.kind == lpcl::ControlKind::Kind::Api      ? Param::Kind::Api
             : c.how.kind == lpcl::ControlKind::Kind::Option ? Param::Kind::Option
                                                             : Param::Kind::Env;
  out.carrier = c.how.carrier;
  out.item_sep = c.how.item_sep.empty() ? "," : c.how.item_sep;
  out.kv_sep = c.how.kv_sep.empty() ? ":" : c.how.kv_sep;
  out.default_value.clear();
  out.default_expr.clear();
  if (c.default_value) {
    // A default like `OPENBLAS_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus` resolves to the machine fact.
    if (auto d = literal_text(*c.default_value, m)) out.default_value = *d;
    out.default_expr = expr_text(*c.default_value);
  }
  out.thread_count = std::find(c.sets.begin(), c.sets.end(), "cpu.threads") != c.sets.end();
  if (c.domain.kind == DK::Set) {
    for (const auto& e : c.domain.values)
      if (auto v = literal_text(e, m)) push_unique(out.values, *v);
  } else if (c.type.kind == TK::Enum) {
    for (const auto& e : c.type.enumerators) push_unique(out.values, e);
  } else if (c.type.kind == TK::Bool) {
    out.values = {"true", "false"};
  } else if (c.domain.kind == DK::Range && c.domain.lo && c.domain.hi) {
    auto names = m.names();
    auto lo = evaluate_expr(expr_text(*c.domain.lo), names);
    auto hi = evaluate_expr(expr_text(*c.domain.hi), names);
    if (!lo || !hi || *hi < *lo) {
      if (why) *why = "its range does not evaluate on this machine";
      return false;
    }
    std::vector<double> pts;
    if (c.type.kind == TK::Float) {
      pts = {*lo, (*lo + *hi) / 2, *hi};
    } else if (out.thread_count) {
      // Thread counts from the machine: 1, 2, 4, ..., ncpus, and 2 x ncpus (oversubscription
      // is plausible to help only where threads wait), within the contract's range.
      double top = std::min(*hi, 2.0 * m.ncpus);
      pts = thread_ladder(*lo, top, m);
      if (auto d = parse_number(out.default_value); d && *d >= *lo && *d <= top) pts.push_back(*d);
      std::sort(pts.begin(), pts.end());
      pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
    } else if (*hi - *lo <= 8) {
      for (double v = *lo; v <= *hi + 1e-9; v += 1) pts.push_back(v);
    } else {
      // Powers of two between the ends (geometric steps are what matters for sizes and counts).
      pts.push_back(*lo);
      for (double v = 1; v < *hi; v *= 2)
        if (v > *lo) pts.push_back(v);
      pts.push_back(*hi);
      if (auto d = parse_number(out.default_value)) pts.push_back(*d);
      for (const char* f : {"ncpus", "ncores"})
        if (*m.get(f) >= *lo && *m.get(f) <= *hi) pts.push_back(*m.get(f));
      std::sort(pts.begin(), pts.end());
      pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
      // Keep at most 12 points: the ends and evenly spaced ones between.
      if (pts.size() > 12) {
        std::vector<double> k;
        for (size_t i = 0; i < 12; ++i) k.push_back(pts[i * (pts.size() - 1) / 11]);
        pts = k;
      }
    }
    for (double v : pts) push_unique(out.values, format_number(v));
  } else {
    if (why) *why = "it has no domain to search (give values with --add " + c.name + "=V1,V2)";
    return false;
  }
  if (out.values.empty()) {
    if (why) *why = "its domain is empty on this machine";
    return false;
  }
  out.numeric = std::all_of(out.values.begin(), out.values.end(),
                            [](const std::string& v) { return parse_number(v).has_value(); });
  if (out.numeric) {
    std::sort(out.values.begin(), out.values.end(),
              [](const std::string& a, const std::string& b) { return *parse_number(a) < *parse_number(b); });
  }
  return true;
}

void apply_edits(Space& space, const SpaceEdits& edits, Diagnostics& diags) {
  for (const auto& name : edits.drop) {
    auto it = std::find_if(space.params.begin(), space.params.end(), [&](const Param& p) { return p.name == name; });
    if (it == space.params.end()) {
      diags.warning({"--drop", 0, 0}, "control '" + name + "' is not in the search space; nothing dropped",
                    "unknown-control", "list the space with --space all to see the controls");
      continue;
    }
    space.params.erase(it);
  }
  // --add replaces a control's values (or adds an env control); --pin leaves it one value.
  auto set_values = [&](const std::string& name, const std::vector<std::string>& values) {
    auto it = std::find_if(space.params.begin(), space.params.end(), [&](const Param& p) { return p.name == name; });
    if (it == space.params.end()) {
      Param p;
      p.name = name;
      p.library = "user";
      space.params.push_back(std::move(p));
      it = space.params.end() - 1;
    }
    it->values = values;
    it->numeric = std::all_of(values.begin(), values.end(), [](const std::string& v) { return parse_number(v).has_value(); });
  };
  for (const auto& [name, values] : edits.add) set_values(name, values);
  for (const auto& [name, value] : edits.pin) set_values(name, {value});
}

Space build_space(const std::vector<lpcl::Contract>& contracts, const std::vector<Guide>& guides, SpaceScope scope,
                  const SpaceEdits& edits, const MachineFacts& m, Diagnostics& diags) {
  Space space;
  std::set<std::string> wanted;
  for (const auto& g : guides) {
    for (const auto& c : g.controls) wanted.insert(c);
    for (const auto& r : g.remedies)
      for (const auto& [k, v] : r) wanted.insert(k);
    if (!g.constraint.empty()) push_unique(space.constraints, g.constraint);
  }
  // A contract's introspection knobs (signal introspect env OPENBLAS_VERBOSE = 1; a draft makes
  // every debug, verbose, trace or statistics switch one) report on the library and are never
  // searched: their effect is output, not speed. --add or --pin still puts one in.
  std::set<std::string> introspection;
  for (const auto& contract : contracts)
    for (const auto& sig : contract.signals)
      if (sig.kind == lpcl::Signal::Kind::Introspect) introspection.insert(sig.metric);
  std::vector<std::string> left_out, queries;
  for (const auto& contract : contracts) {
    // API controls acting on a resource an env control of the same contract already sets are
    // left out of --space all: the env control reaches the same knob without the shim.
    std::set<std::string> env_sets;
    for (const auto& c : contract.controls)
      if (c.how.kind != lpcl::ControlKind::Kind::Api && c.read_at != lpcl::ReadAt::Call)
        env_sets.insert(c.sets.begin(), c.sets.end());
    for (const auto& c : contract.controls) {
      bool named = wanted.count(c.name) > 0;
      if (scope == SpaceScope::Hypotheses && !named) continue;
      if (introspection.count(c.name)) {
        push_unique(left_out, c.name);
        continue;
      }
      if (lpcl::is_query(c)) {
        // A stored contract may still list one (drafts before the checker warned of it).
        push_unique(queries, c.name);
        continue;
      }
      if (scope == SpaceScope::All && !named && c.how.kind == lpcl::ControlKind::Kind::Api) {
        bool covered = !c.sets.empty() && std::all_of(c.sets.begin(), c.sets.end(),
                                                      [&](const std::string& r) { return env_sets.count(r) > 0; });
        if (covered) continue;
      }
      if (space.find(c.name)) continue;  // the first contract naming a control (OMP_NUM_THREADS) defines it
      Param p;
      std::string why;
      if (!discretise(c, m, p, &why)) {
        if (named || scope == SpaceScope::Hypotheses)
          diags.note(c.loc, "control '" + c.name + "' of " + contract.name + " is not searched: " + why, "unsearchable-control");
        continue;
      }
      p.library = contract.name;
      space.params.push_back(std::move(p));
    }
  }
  if (!left_out.empty()) {
    std::string names;
    for (const auto& n : left_out) names += (names.empty() ? "" : ", ") + n;
    diags.note({}, "not searched: " + names + " (introspection: debug, verbose or trace output, no effect on speed)",
               "introspection-control", "--pin NAME=VALUE sets one in every trial anyway");
  }
  if (!queries.empty()) {
    std::string names;
    for (const auto& n : queries) names += (names.empty() ? "" : ", ") + n;
    diags.note({}, "not searched: " + names + " (queries: a call reads the setting and changes nothing)", "query-control");
  }
  // Fallback chains across every composed contract: `GOTO_NUM_THREADS fallback_for
  // OPENBLAS_NUM_THREADS` makes OPENBLAS_NUM_THREADS fall back on GOTO_NUM_THREADS.
  std::map<std::string, std::vector<std::string>> read_instead;
  for (const auto& contract : contracts)
    for (const auto& c : contract.controls)
      if (!c.fallback_for.empty()) push_unique(read_instead[c.fallback_for], c.name);
  for (auto& p : space.params) {
    std::vector<std::string> todo = {p.name};
    for (size_t i = 0; i < todo.size() && i < 64; ++i)
      for (const auto& next : read_instead[todo[i]])
        if (next != p.name && std::find(todo.begin(), todo.end(), next) == todo.end()) {
          todo.push_back(next);
          p.falls_back_on.push_back(next);
        }
  }
  // A control a contract declares but that cannot be searched already has its note above; the
  // warning is for names no composed contract declares at all and the user does not add or pin.
  std::set<std::string> declared;
  for (const auto& contract : contracts)
    for (const auto& c : contract.controls) declared.insert(c.name);
  for (const auto& [name, values] : edits.add) declared.insert(name);
  for (const auto& [name, value] : edits.pin) declared.insert(name);
  for (const auto& name : wanted)
    if (!space.find(name) && !declared.count(name))
      diags.warning({}, "a hypothesis names control '" + name + "' that no composed contract declares",
                    "unknown-control", "add it with --add " + name + "=V1,V2");
  apply_edits(space, edits, diags);
  return space;
}

// ---- Applying a configuration -----------------------------------------------------------------

std::map<std::string, std::string> environment_for(const Space& space, const Config& c, const std::string& shim,
                                                   const std::map<std::string, std::string>& inherited) {
  std::map<std::string, std::string> env;
  std::string calls;
  for (const auto& [name, value] : c) {
    const Param* p = space.find(name);
    Param::Kind kind = p ? p->kind : Param::Kind::Env;
    if (kind == Param::Kind::Env) {
      env[name] = value;
    } else if (kind == Param::Kind::Option) {
      auto it = env.find(p->carrier);
      std::string cur;
      if (it != env.end()) {
        cur = it->second;
      } else if (auto ih = inherited.find(p->carrier); ih != inherited.end()) {
        cur = ih->second;
      }
      env[p->carrier] = (cur.empty() ? "" : cur + p->item_sep) + name + p->kv_sep + value;
    } else {
      calls += name + "=" + value + ";";
    }
  }
  if (!calls.empty()) {
    env["SYSPILOT_SHIM_CALLS"] = calls;
    std::string pre = shim;
    if (auto ih = inherited.find("LD_PRELOAD"); ih != inherited.end() && !ih->second.empty()) pre += ":" + ih->second;
    env["LD_PRELOAD"] = pre;
  }
  return env;
}

std::string shell_quote(const std::string& v) {
  bool plain = !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string("_-./:,=+@%").find(c) != std::string::npos;
  });
  if (plain) return v;
  std::string q = "'";
  for (char c : v) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<std::string> export_lines(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back("export " + k + "=" + shell_quote(v));
  return out;
}

std::string shim_path() {
  if (const char* s = std::getenv("SYSPILOT_SHIM"); s && *s) return s;
  std::error_code ec;
  // Installed (PREFIX/lib/syspilot beside PREFIX/bin/syspilot), next to the running executable's
  // build tree, then the usual build folders of the source tree.
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> candidates;
  if (!ec) {
    candidates.push_back(self.parent_path().parent_path() / "lib/syspilot/libsyspilot_shim.so");
    for (auto d = self.parent_path(); !d.empty() && d != d.root_path(); d = d.parent_path()) {
      candidates.push_back(d / "tuner/shim/libsyspilot_shim.so");
      if (candidates.size() > 5) break;
    }
  }
  candidates.push_back(std::filesystem::path(SYSPILOT_SOURCE_DIR) / "build/tuner/shim/libsyspilot_shim.so");
  for (const auto& c : candidates)
    if (std::filesystem::exists(c, ec)) return c.string();
  return {};
}

}  // namespace syspilot::tuner
