// The hypothesis rules engine: reads tuner/rules/*.json and matches each rule's roles against
// the composition's contracts and relations, filling in controls, constraint, probes and the
// contract lines each hypothesis came from.
#include "tuner/hypothesis.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "lpcl/lpcl.h"
#include "tuner/compose.h"

namespace fs = std::filesystem;

namespace syspilot::tuner {

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::Confirmed: return "confirmed";
    case Verdict::Refuted: return "refuted";
    default: return "unknown";
  }
}

namespace rules {
namespace {

std::vector<std::string> strings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key))
    for (auto& x : j.at(key)) out.push_back(x.get<std::string>());
  return out;
}

std::vector<std::map<std::string, std::string>> assignments(const nlohmann::json& j, const char* key) {
  std::vector<std::map<std::string, std::string>> out;
  if (!j.contains(key)) return out;
  for (auto& a : j.at(key)) {
    std::map<std::string, std::string> m;
    for (auto& [k, v] : a.items()) m[k] = v.is_string() ? v.get<std::string>() : v.dump();
    out.push_back(m);
  }
  return out;
}

// Names an expression reads, left to right (`A ?? B ?? ncpus` -> A, B, ncpus).
void names_in(const lpcl::Expr& e, std::vector<std::string>& out) {
  if (e.kind == lpcl::Expr::Kind::Name) out.push_back(e.text);
  for (auto& a : e.args) names_in(a, out);
}

bool is_number(const std::string& s, double* v = nullptr) {
  if (s.empty()) return false;
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  if (v) *v = d;
  return true;
}

}  // namespace

std::vector<Rule> load(const std::string& dir, Diagnostics& diags) {
  std::vector<Rule> out;
  std::string root = compose_detail::rules_dir_or_default(dir);
  std::error_code ec;
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(root, ec))
    if (e.path().extension() == ".json" && e.path().filename() != "regions.json" &&
        e.path().filename() != "launchers.json")
      files.push_back(e.path());
  if (ec || files.empty()) {
    diags.error({root, 0, 0}, "no hypothesis rules found", "no-rules",
                "restore tuner/rules/*.json or point SYSPILOT_RULES_DIR at a folder of rules");
    return out;
  }
  std::sort(files.begin(), files.end());
  for (auto& f : files) {
    try {
      std::ifstream in(f);
      auto j = nlohmann::json::parse(in);
      Rule r;
      r.file = f.string();
      r.kind = j.at("kind").get<std::string>();
      r.title = j.value("title", r.kind);
      r.relation = j.at("relation").get<std::string>();
      if (r.relation != "nested" && r.relation != "co_run" && r.relation != "pair" && r.relation != "single")
        throw std::runtime_error("relation must be nested, co_run, pair or single, not " + r.relation);
      r.symmetric = j.value("symmetric", false);
      for (auto& role : j.at("roles")) r.roles.push_back({role.at("name"), strings(role, "all"), strings(role, "any")});
      size_t want = r.relation == "single" ? 1 : 2;
      if (r.roles.size() != want)
        throw std::runtime_error("relation " + r.relation + " needs " + std::to_string(want) + " roles");
      r.symptom = j.value("symptom", "");
      r.constraint = j.value("constraint", "");
      r.controls = strings(j, "controls");
      r.remedies = assignments(j, "remedies");
      r.probes = assignments(j, "probes");
      for (auto& c : j.value("checks", nlohmann::json::array())) {
        CheckSpec cs;
        cs.signal = c.at("signal").get<std::string>();
        cs.op = c.at("op").get<std::string>();
        cs.value = c.at("value").is_string() ? c.at("value").get<std::string>() : c.at("value").dump();
        cs.why = c.value("why", "");
        if (c.contains("or")) {
          auto& alt = c.at("or");
          cs.or_signal = alt.at("signal").get<std::string>();
          cs.or_op = alt.at("op").get<std::string>();
          cs.or_value = alt.at("value").is_string() ? alt.at("value").get<std::string>() : alt.at("value").dump();
          if (cs.or_op != ">" && cs.or_op != ">=" && cs.or_op != "<" && cs.or_op != "<=")
            throw std::runtime_error("check op must be one of > >= < <=, not " + cs.or_op);
        }
        if (cs.op != ">" && cs.op != ">=" && cs.op != "<" && cs.op != "<=")
          throw std::runtime_error("check op must be one of > >= < <=, not " + cs.op);
        r.checks.push_back(cs);
      }
      out.push_back(std::move(r));
    } catch (const std::exception& e) {
      diags.error({f.string(), 0, 0}, std::string("malformed hypothesis rule: ") + e.what(), "bad-rule",
                  "see docs/analysis.md for the rule schema");
    }
  }
  return out;
}

bool admits(const lpcl::Control& c, const std::string& value) {
  using TK = lpcl::Type::Kind;
  if (c.type.kind == TK::Enum)
    return std::find(c.type.enumerators.begin(), c.type.enumerators.end(), value) != c.type.enumerators.end();
  if (c.domain.kind == lpcl::Domain::Kind::Set) {
    for (auto& v : c.domain.values)
      if (v.text == value) return true;
    return false;
  }
  double v = 0;
  if (c.type.kind == TK::Int || c.type.kind == TK::Float) {
    if (!is_number(value, &v)) return false;
    if (c.domain.kind == lpcl::Domain::Kind::Range) {
      double lo = 0, hi = 0;
      if (c.domain.lo && is_number(c.domain.lo->text, &lo) && v < lo) return false;
      if (c.domain.hi && is_number(c.domain.hi->text, &hi) && v > hi) return false;
    }
    return true;
  }
  if (c.type.kind == TK::Bool) return value == "true" || value == "false" || value == "0" || value == "1";
  return true;
}

std::vector<std::string> controls_for(const lpcl::Contract& c, const std::string& resource) {
  std::vector<std::string> out;
  auto add = [&](const std::string& n) {
    const lpcl::Control* ctl = c.find_control(n);
    // A query (omp_get_num_threads) reads the resource; calling it sets nothing.
    if (ctl && !lpcl::is_query(*ctl) && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (auto& d : c.demands)
    if (d.resource == resource) {
      std::vector<std::string> names;
      names_in(d.value, names);
      for (auto& n : names) add(n);
    }
  using K = lpcl::ControlKind::Kind;
  for (K kind : {K::Env, K::Option, K::Api})
    for (auto& ctl : c.controls)
      if (ctl.how.kind == kind && std::find(ctl.sets.begin(), ctl.sets.end(), resource) != ctl.sets.end()) add(ctl.name);
  return out;
}

std::string control_for(const lpcl::Contract& c, const std::string& resource, const std::string& accepting,
                        bool env_only) {
  for (auto& n : controls_for(c, resource)) {
    const lpcl::Control* ctl = c.find_control(n);
    if (!ctl) continue;
    if (env_only && ctl->how.kind != lpcl::ControlKind::Kind::Env) continue;
    if (!accepting.empty() && !admits(*ctl, accepting)) continue;
    return n;
  }
  return "";
}

}  // namespace rules

namespace {
using rules::Rule;

const char* kAppThreads = "app-threads";

bool number_text(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  *v = d;
  return true;
}

struct Party {
  std::string name;
  const ContractUse* use = nullptr;  // null for app-threads
  int processes = 0;                 // most processes that ran it at once (first run; 0: unknown)
  int process_threads = 0;           // most threads alive at once in those processes
};

// What a hypothesis' processes look like: the process count the command exposes (a control),
// the count measured, for `{processes}`, `$processes` and `ncpus/processes` in a rule.
struct ProcessFacts {
  std::string control;  // the command's process-count control ("" when it exposes none)
  int count = 1;        // most processes of the tuple's parties at once (at least 1)
  int fewest = 1;       // fewest processes one of the tuple's parties ran in (at least 1)
  size_t parties = 1;   // how many parties the tuple has

  // Whether the command's process count is a control of the hypothesis (`$processes`): the
  // command exposes one, a party ran in several processes at once, and fewer processes change
  // what the hypothesis is about: one party's processes x threads, or the share of the machine
  // between parties that run in different numbers of processes (convert under `xargs -P` beside
  // one numpy process). Where every party runs in the same workers, fewer processes scale them
  // all alike and leave the split between them as it was.
  bool count_is_control() const { return !control.empty() && count >= 2 && (parties == 1 || fewest < count); }
};

std::string loc_line(const ContractUse* u, const SourceLoc& loc, const std::string& what) {
  std::string file = u && !u->path.empty() ? u->path : (loc.file.empty() ? "<contract>" : loc.file);
  return file + ":" + std::to_string(loc.line) + ": " + what;
}

// Whether a party has a feature; on success appends the contract line that shows it.
bool has_feature(const Party& p, const std::string& feature, std::vector<std::string>& sources) {
  auto colon = feature.find(':');
  std::string what = feature.substr(0, colon), arg = colon == std::string::npos ? "" : feature.substr(colon + 1);
  if (what == "self") return p.name == arg;
  if (what == "processes") {
    // Several processes of the application run the party at once (a script's workers).
    double n = 0;
    if (!number_text(arg, &n) || p.processes < n) return false;
    sources.push_back("first run: " + p.name + " mapped in " + std::to_string(p.processes) +
                      " processes at once (" + std::to_string(p.process_threads) + " threads)");
    return true;
  }
  if (!p.use) return false;
  const lpcl::Contract& c = p.use->contract;
  if (what == "provides") {
    for (auto& pr : c.provides)
      if (pr.what == arg && pr.name != "none") {
        sources.push_back(loc_line(p.use, pr.loc, "provides " + pr.what + " " + pr.name));
        return true;
      }
    return false;
  }
  if (what == "demand") {
    for (auto& d : c.demands)
      if (d.resource == arg) {
        sources.push_back(loc_line(p.use, d.loc, "demand " + d.resource + " = " + lpcl::format(d.value)));
        return true;
      }
    return false;
  }
  if (what == "controls") {
    auto names = rules::controls_for(c, arg);
    if (names.empty()) return false;
    if (auto* ctl = c.find_control(names.front()))
      sources.push_back(loc_line(p.use, ctl->loc, "control " + ctl->name + " (acts on " + arg + ")"));
    return true;
  }
  if (what == "assume") {
    std::string pred = arg, parg;
    if (auto lp = arg.find('('); lp != std::string::npos) {
      pred = arg.substr(0, lp);
      parg = arg.substr(lp + 1, arg.size() - lp - 2);
    }
    for (auto& a : c.assumptions) {
      if (a.predicate != pred) continue;
      if (!parg.empty() && std::find(a.args.begin(), a.args.end(), parg) == a.args.end()) continue;
      std::string args;
      for (auto& x : a.args) args += (args.empty() ? "" : ", ") + x;
      sources.push_back(loc_line(p.use, a.loc, "assume " + a.predicate + "(" + args + ")"));
      return true;
    }
    return false;
  }
  if (what == "behavior") {
    for (auto& b : c.behaviors)
      if (b.name == arg) {
        sources.push_back(loc_line(p.use, b.loc, "behavior " + b.name));
        return true;
      }
    return false;
  }
  return false;
}

bool plays(const Party& p, const rules::Role& role, std::vector<std::string>& sources) {
  std::vector<std::string> got;
  for (auto& f : role.all)
    if (!has_feature(p, f, got)) return false;
  if (!role.any.empty()) {
    bool any = false;
    for (auto& f : role.any) any |= has_feature(p, f, got);  // collect every line that matched
    if (!any) return false;
  }
  sources.insert(sources.end(), got.begin(), got.end());
  return true;
}

// "{role}", "{role:resource}", "{ncpus}" in a rule's text; "{processes}" is the command's
// process-count control, else the count measured; "{nprocesses}" the count. `ok` turns false
// when a control is missing.
std::string expand(const std::string& text, const std::map<std::string, const Party*>& roles, bool& ok,
                   const char* missing, const ProcessFacts& procs) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '{') {
      out += text[i++];
      continue;
    }
    auto close = text.find('}', i);
    if (close == std::string::npos) {
      out += text.substr(i);
      break;
    }
    std::string key = text.substr(i + 1, close - i - 1);
    i = close + 1;
    if (key == "ncpus" || key == "ncores") {
      out += std::to_string(online_cpus());
      continue;
    }
    if (key == "processes" || key == "nprocesses") {
      out += key == "processes" && !procs.control.empty() ? procs.control : std::to_string(procs.count);
      continue;
    }
    auto colon = key.find(':');
    auto it = roles.find(key.substr(0, colon));
    if (it == roles.end()) {
      out += "{" + key + "}";
      ok = false;
      continue;
    }
    if (colon == std::string::npos) {
      out += it->second->name;
      continue;
    }
    std::string ctl = it->second->use ? rules::control_for(it->second->use->contract, key.substr(colon + 1)) : "";
    if (ctl.empty()) {
      ok = false;
      out += missing;
    } else {
      out += ctl;
    }
  }
  return out;
}

// Whether the application's environment sets `name` (the composition's env, else inherited).
bool exported(const Composition& comp, const std::string& name) {
  if (auto it = comp.env.find(name); it != comp.env.end()) return !it->second.empty();
  const char* v = std::getenv(name.c_str());
  return v && *v;
}

// A rule's value: a literal, "ncpus", "ncpus/2" (at least 1), from the machine facts the
// space is built for (SYSPILOT_NCPUS included), so that remedies and domains agree.
// "ncpus/processes" is the machine shared by the processes measured running at once.
std::string rule_value(const std::string& v, const ProcessFacts& procs) {
  int n = MachineFacts::detect().ncpus;
  if (v == "ncpus" || v == "ncores") return std::to_string(n);
  if (v == "ncpus/2" || v == "ncores/2") return std::to_string(std::max(1, n / 2));
  if (v == "ncpus/processes" || v == "ncores/processes") return std::to_string(std::max(1, n / std::max(1, procs.count)));
  return v;
}

// The lowest value a numeric control admits: its range's constant lower bound, its set's
// smallest number, or 1 for a count with no domain; "" when it is not numeric.
std::string lowest_value(const lpcl::Control& c) {
  using TK = lpcl::Type::Kind;
  if (c.type.kind != TK::Int && c.type.kind != TK::Float) return "";
  double v = 0;
  if (c.domain.kind == lpcl::Domain::Kind::Range && c.domain.lo && number_text(c.domain.lo->text, &v))
    return c.domain.lo->text;
  if (c.domain.kind == lpcl::Domain::Kind::Set) {
    std::string low;
    double best = 0;
    for (auto& x : c.domain.values)
      if (number_text(x.text, &v) && (low.empty() || v < best)) low = x.text, best = v;
    return low;
  }
  return "1";
}

// Resolves "role:resource" -> value assignments to control names; false when one does not
// resolve. A key without a role is a control named as such (LD_PRELOAD). The value "$unset"
// undoes what the user exported: every env control of the role acting on the resource that
// the environment sets becomes "" (unset); nothing exported, nothing to undo. The value "$min"
// is the lowest value the role's control for the resource admits (for a thread count, the
// fewest threads: 1 for OMP_NUM_THREADS, 0 for zstd's nbWorkers, where the caller compresses).
bool resolve_assignment(const std::map<std::string, std::string>& spec,
                        const std::map<std::string, const Party*>& roles, bool env_only, const Composition& comp,
                        const ProcessFacts& procs, Config& out) {
  for (auto& [key, raw] : spec) {
    std::string value = rule_value(raw, procs);
    if (key == "$processes") {  // the command's process count, where it is the hypothesis' control
      if (!procs.count_is_control()) return false;
      out[procs.control] = value;
      continue;
    }
    auto colon = key.find(':');
    if (colon == std::string::npos) {
      out[key] = value;
      continue;
    }
    auto it = roles.find(key.substr(0, colon));
    if (it == roles.end() || !it->second->use) return false;
    const lpcl::Contract& c = it->second->use->contract;
    if (value == "$unset") {
      bool any = false;
      for (auto& n : rules::controls_for(c, key.substr(colon + 1))) {
        const lpcl::Control* ctl = c.find_control(n);
        if (!ctl || ctl->how.kind != lpcl::ControlKind::Kind::Env) continue;
        if (comp.command_values.count(n)) {
          // The command gives it a value of its own where the run gives none: unset, it comes
          // back. The library's stated default undoes it; without one it cannot be undone.
          const auto& d = ctl->default_value;
          using EK = lpcl::Expr::Kind;
          const auto& en = ctl->type.enumerators;
          const bool literal = d && (d->kind == EK::Int || d->kind == EK::Float || d->kind == EK::Bool ||
                                     d->kind == EK::String ||
                                     (d->kind == EK::Name && std::find(en.begin(), en.end(), d->text) != en.end()));
          if (!literal) continue;
          out[n] = d->text;
          any = true;
          continue;
        }
        if (!exported(comp, n)) continue;
        out[n] = "";
        any = true;
      }
      if (!any) return false;
      continue;
    }
    if (value == "$min") {
      std::string chosen;
      for (auto& n : rules::controls_for(c, key.substr(colon + 1))) {
        const lpcl::Control* ctl = c.find_control(n);
        if (!ctl || (env_only && ctl->how.kind != lpcl::ControlKind::Kind::Env)) continue;
        std::string low = lowest_value(*ctl);
        if (low.empty()) continue;
        out[n] = low;
        chosen = n;
        break;
      }
      if (chosen.empty()) return false;
      continue;
    }
    std::string ctl = rules::control_for(c, key.substr(colon + 1), value, env_only);
    if (ctl.empty()) return false;
    out[ctl] = value;
  }
  return !out.empty();
}

// Whether a constraint holds with a probe's values: the command's process count at the count
// measured where the probe leaves it, the machine's facts; a name without a value (a control
// left at a default the constraint cannot know) does not decide, and neither does an empty or
// unparsable constraint: both count as holding.
bool removes_cause(const std::string& constraint, const Config& probe, const ProcessFacts& procs,
                   std::map<std::string, double> names) {
  if (constraint.empty()) return true;
  if (!procs.control.empty()) names[procs.control] = procs.count;
  for (auto& [k, v] : probe) {
    double n = 0;
    if (number_text(v, &n)) names[k] = n;
  }
  auto v = evaluate_expr(constraint, names);
  return !v || *v != 0;
}

}  // namespace

std::vector<Hypothesis> hypothesize(const Composition& comp, Diagnostics& diags, const std::string& rules_dir) {
  std::vector<Hypothesis> out;
  std::vector<Rule> rs = rules::load(rules_dir, diags);
  std::vector<Party> parties;
  for (auto& c : comp.contracts) {
    Party p{c.contract.name, &c};
    if (auto it = comp.processes.find(p.name); it != comp.processes.end()) p.processes = it->second;
    if (auto it = comp.process_threads.find(p.name); it != comp.process_threads.end()) p.process_threads = it->second;
    parties.push_back(p);
  }
  if (comp.app_threads) parties.push_back({kAppThreads, nullptr});
  auto party = [&](const std::string& n) -> const Party* {
    for (auto& p : parties)
      if (p.name == n) return &p;
    return nullptr;
  };
  int ncpus = online_cpus();
  // The machine's names (ncpus, ncores, ...) for deciding which probe removes a cause.
  const std::map<std::string, double> machine_names = MachineFacts::detect().names();
  std::set<std::string> ids;
  for (auto& rule : rs) {
    // Candidate tuples with the reason they are considered.
    std::vector<std::pair<std::vector<const Party*>, std::string>> tuples;
    auto all_pairs = [&](const std::string& basis) {
      for (auto& a : parties)
        for (auto& b : parties)
          if (&a != &b) tuples.push_back({{&a, &b}, basis});
    };
    if (rule.relation == "single") {
      for (auto& p : parties) tuples.push_back({{&p}, "composed"});
    } else if (rule.relation == "pair" && !comp.source_scanned) {
      all_pairs("both are composed");
    } else if (rule.relation == "pair") {
      // Known relations: any nesting or co-running between the two counts.
      for (auto& r : comp.relations) {
        const Party* a = party(r.outer);
        const Party* b = party(r.inner);
        if (!a || !b) continue;
        std::string basis = r.outer + " and " + r.inner + " meet (" + r.how + " at " + r.where + ")";
        tuples.push_back({{a, b}, basis});
        tuples.push_back({{b, a}, basis});
      }
    } else if (!comp.source_scanned) {
      // One library calls the other only inside one process: a pair the run saw only in
      // different processes co-runs and never nests.
      for (auto& a : parties)
        for (auto& b : parties) {
          if (&a == &b) continue;
          bool apart = comp.apart.count({std::min(a.name, b.name), std::max(a.name, b.name)}) > 0;
          if (apart && rule.relation == "nested") continue;
          tuples.push_back({{&a, &b}, apart ? a.name + " and " + b.name + " ran in different processes"
                                            : "possible: both are composed and no source or manifest says how they meet"});
        }
    } else {
      for (auto& r : comp.relations) {
        bool want = (rule.relation == "nested") == (r.kind == Relation::Kind::Nested);
        if (!want) continue;
        const Party* a = party(r.outer);
        const Party* b = party(r.inner);
        if (!a || !b) continue;
        std::string basis = r.kind == Relation::Kind::Nested
                                ? r.inner + " is called inside a " + r.how + " region of " + r.outer + " at " + r.where
                                : r.outer + " and " + r.inner + " run at the same time (" + r.how + " at " + r.where + ")";
        tuples.push_back({{a, b}, basis});
        if (r.kind == Relation::Kind::CoRun) tuples.push_back({{b, a}, basis});
      }
    }
    std::set<std::set<std::string>> seen_sets;
    for (auto& [tuple, basis] : tuples) {
      std::vector<std::string> sources;
      bool match = true;
      std::map<std::string, const Party*> roles;
      for (size_t i = 0; i < tuple.size() && match; ++i) {
        match = plays(*tuple[i], rule.roles[i], sources);
        roles[rule.roles[i].name] = tuple[i];
      }
      if (!match) continue;
      std::set<std::string> names;
      for (auto* p : tuple) names.insert(p->name);
      if (rule.symmetric && !seen_sets.insert(names).second) continue;
      Hypothesis h;
      h.kind = rule.kind;
      h.title = rule.title;
      h.id = rule.kind + ":";
      for (size_t i = 0; i < tuple.size(); ++i) h.id += (i ? ">" : "") + tuple[i]->name;
      if (!ids.insert(h.id).second) continue;
      for (auto* p : tuple) h.libraries.push_back(p->name);
      ProcessFacts procs;
      if (!comp.process_controls.empty()) procs.control = comp.process_controls.front().name;
      procs.parties = tuple.size();
      procs.fewest = std::max(1, tuple.front()->processes);
      for (auto* p : tuple) {
        procs.count = std::max(procs.count, p->processes);
        procs.fewest = std::min(procs.fewest, std::max(1, p->processes));
      }
      bool ok = true;
      h.symptom = expand(rule.symptom, roles, ok, "the library", procs);  // "(sized by the library)"
      ok = true;
      h.constraint = expand(rule.constraint, roles, ok, "", procs);
      if (!ok) h.constraint.clear();
      for (auto& spec : rule.controls) {
        if (spec == "$processes") {  // the command's process count, where it is the hypothesis' control
          if (procs.count_is_control() &&
              std::find(h.controls.begin(), h.controls.end(), procs.control) == h.controls.end())
            h.controls.push_back(procs.control);
          continue;
        }
        auto colon = spec.find(':');
        if (colon == std::string::npos) {  // a control named as such
          if (std::find(h.controls.begin(), h.controls.end(), spec) == h.controls.end()) h.controls.push_back(spec);
          continue;
        }
        auto it = roles.find(spec.substr(0, colon));
        if (it == roles.end() || !it->second->use || colon == std::string::npos) continue;
        for (auto& n : rules::controls_for(it->second->use->contract, spec.substr(colon + 1)))
          if (std::find(h.controls.begin(), h.controls.end(), n) == h.controls.end()) h.controls.push_back(n);
      }
      for (auto& spec : rule.remedies) {
        Config c;
        if (resolve_assignment(spec, roles, false, comp, procs, c) &&
            std::find(h.remedies.begin(), h.remedies.end(), c) == h.remedies.end())
          h.remedies.push_back(c);
      }
      // The probe: the first alternative that resolves and removes the cause, that is under
      // which the hypothesis' constraint holds; else the first that resolves. One process per
      // CPU's share still oversubscribes when more processes than CPUs run: fewer processes,
      // where the command exposes their count, is then the probe that tells.
      Config first_probe;
      for (auto& spec : rule.probes) {
        Config c;
        if (!resolve_assignment(spec, roles, true, comp, procs, c)) continue;
        if (first_probe.empty()) first_probe = c;
        if (removes_cause(h.constraint, c, procs, machine_names)) {
          h.probe = c;
          break;
        }
      }
      if (h.probe.empty()) h.probe = first_probe;
      for (auto& cs : rule.checks) {
        Check c;
        c.signal = cs.signal;
        c.op = cs.op;
        c.why = cs.why;
        double v = 0;
        if (!cs.or_signal.empty()) {
          double ov = 0;
          if (cs.or_value == "ncpus" || cs.or_value == "ncores") ov = ncpus;
          else if (!number_text(cs.or_value, &ov)) ov = NAN;
          if (!std::isnan(ov)) {
            c.or_signal = cs.or_signal;
            c.or_op = cs.or_op;
            c.or_threshold = ov;
          }
        }
        if (cs.value == "ncpus" || cs.value == "ncores") c.threshold = ncpus;
        else if (number_text(cs.value, &v)) c.threshold = v;
        else {
          diags.warning({rule.file, 0, 0}, "check value `" + cs.value + "` is neither a number nor ncpus; check skipped",
                        "bad-rule");
          continue;
        }
        h.checks.push_back(c);
      }
      h.sources = sources;
      h.sources.push_back(rule.file.substr(rule.file.find("tuner/rules/") == std::string::npos
                                               ? 0
                                               : rule.file.find("tuner/rules/")) +
                          ": rule " + rule.kind);
      h.basis = basis;
      out.push_back(std::move(h));
    }
  }
  return out;
}

}  // namespace syspilot::tuner
