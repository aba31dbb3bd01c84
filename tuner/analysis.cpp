// The whole analysis (compose -> hypothesize -> profile), its JSON form (docs/analysis.md),
// the human-readable report, and the conversion of verdicts into guides for the search.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "lpcl/lpcl.h"
#include "tuner/analyze.h"

namespace syspilot::tuner {

Analysis analyze(const AnalyzeOptions& opts) {
  Analysis a;
  ComposeOptions co = opts.compose;
  if (co.args.empty()) co.args = opts.profile.run.argv;  // process counts it exposes
  a.composition = compose(co, a.diagnostics);
  if (opts.profile.run.argv.empty()) {
    a.hypotheses = hypothesize(a.composition, a.diagnostics, opts.rules_dir);
    return a;
  }
  // The first default run comes before the hypotheses: what it had mapped that the ELF walk
  // did not find (dlopen'ed plugins) joins the composition, so their contracts take part.
  // It is reused as the profile's first default run, so discovery costs no extra run.
  ProfileOptions po = opts.profile;
  RunSpec first_spec = profile_spec(a.composition, po.run);
  if (po.progress) {
    std::string libs;
    for (auto& u : a.composition.contracts) libs += (libs.empty() ? "" : ", ") + u.contract.name;
    po.progress("composed " + std::to_string(a.composition.contracts.size()) + " contract(s)" +
                (libs.empty() ? "" : ": " + libs) + "; run 1: the default (also finds the libraries it loads at run time)");
  }
  RunResult first = run(first_spec);
  if (po.progress) {
    std::ostringstream took;
    took.precision(3);
    if (first.ok())
      took << first.wall_s << " s";
    else
      took << (first.failure.empty() ? "failed" : first.failure);
    po.progress("run 1: " + took.str());
  }
  // It also says how many processes ran each library at once (a script's workers).
  if (first.started) compose_runtime_libraries(a.composition, first, co, a.diagnostics);
  a.hypotheses = hypothesize(a.composition, a.diagnostics, opts.rules_dir);
  RunSpec final_spec = profile_spec(a.composition, po.run);
  if (final_spec.env_set == first_spec.env_set) po.first_default = first;
  a.profile = profile(a.composition, a.hypotheses, po, a.diagnostics);
  a.profiled = true;
  return a;
}

std::vector<Guide> guides(const std::vector<Hypothesis>& hs, bool all) {
  std::vector<std::pair<int, Guide>> ranked;
  for (auto& h : hs) {
    if (h.verdict == Verdict::Refuted) continue;
    if (h.verdict != Verdict::Confirmed && !all) continue;
    Guide g;
    g.id = h.id;
    g.kind = h.kind;
    g.controls = h.controls;
    g.constraint = h.constraint;
    g.remedies = h.remedies;
    // Strength: how far past its thresholds the evidence went (ratio checks dominate).
    double strength = 0;
    for (auto& e : h.evidence)
      if (e.passed && e.threshold > 0) strength += std::log(std::max(1.0, e.value / e.threshold) + 1.0);
    g.weight = h.verdict == Verdict::Confirmed ? 1.0 + strength : 0.5;
    ranked.push_back({h.verdict == Verdict::Confirmed ? 0 : 1, g});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.weight > b.second.weight;
  });
  std::vector<Guide> out;
  for (auto& [rank, g] : ranked) out.push_back(g);
  return out;
}

namespace {

nlohmann::json run_json(const RunResult& r) {
  nlohmann::json j = {{"ok", r.ok()},         {"failure", r.failure},
                      {"exit_code", r.exit_code}, {"term_signal", r.term_signal},
                      {"timed_out", r.timed_out}, {"wall_s", r.wall_s},
                      {"user_s", r.user_s},       {"sys_s", r.sys_s},
                      {"voluntary_switches", r.voluntary_switches},
                      {"involuntary_switches", r.involuntary_switches},
                      {"max_rss_kb", r.max_rss_kb}, {"minor_faults", r.minor_faults},
                      {"max_threads", r.max_threads}, {"mean_threads", r.mean_threads},
                      {"runq_wait_s", r.runq_wait_s}, {"samples", r.samples},
                      {"max_processes", r.max_processes},
                      {"perf", r.perf},           {"perf_notes", r.perf_notes}};
  nlohmann::json threads = nlohmann::json::array();
  for (auto& t : r.threads)
    threads.push_back({{"pid", t.pid}, {"tid", t.tid}, {"comm", t.comm}, {"cpu_s", t.cpu_s}, {"runq_wait_s", t.runq_wait_s}});
  j["threads"] = threads;
  return j;
}

std::string config_text(const std::map<std::string, std::string>& c) {
  std::string s;
  for (auto& [k, v] : c) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s.empty() ? "(none)" : s;
}

std::string num(double v) {
  std::ostringstream os;
  if (std::isnan(v)) return "n/a";
  if (std::fabs(v) >= 100 || v == std::floor(v)) os.precision(0), os << std::fixed << v;
  else os.precision(3), os << v;
  return os.str();
}

const char* relation_kind(Relation::Kind k) { return k == Relation::Kind::Nested ? "nested" : "co_run"; }

}  // namespace

nlohmann::json to_json(const Composition& c) {
  nlohmann::json libs = nlohmann::json::array();
  for (auto& l : c.libraries)
    libs.push_back({{"soname", l.soname}, {"path", l.path}, {"real_path", l.real_path}, {"variant", l.variant},
                    {"found_by", l.found_by}, {"needed_by", l.needed_by}, {"direct", l.direct},
                    {"contract", l.contract}, {"processes", l.processes}});
  nlohmann::json contracts = nlohmann::json::array();
  for (auto& u : c.contracts)
    contracts.push_back({{"name", u.contract.name}, {"version", u.contract.version}, {"source", u.source},
                         {"path", u.path}, {"libraries", u.libraries}});
  nlohmann::json rel = nlohmann::json::array();
  for (auto& r : c.relations)
    rel.push_back({{"kind", relation_kind(r.kind)}, {"outer", r.outer}, {"inner", r.inner}, {"how", r.how}, {"where", r.where}});
  nlohmann::json calls = nlohmann::json::array();
  for (auto& cs : c.call_sites)
    calls.push_back({{"library", cs.library}, {"symbol", cs.symbol}, {"file", cs.file}, {"line", cs.line},
                     {"function", cs.function}, {"regions", cs.regions}});
  nlohmann::json pcs = nlohmann::json::array();
  for (auto& p : c.process_controls)
    pcs.push_back({{"name", p.name}, {"fallback", p.fallback}, {"option", p.option}, {"tool", p.tool}, {"where", p.where}});
  nlohmann::json procs = nlohmann::json::object();
  for (auto& [k, v] : c.processes)
    procs[k] = {{"max_concurrent", v}, {"max_threads", c.process_threads.count(k) ? c.process_threads.at(k) : 0}};
  nlohmann::json apart = nlohmann::json::array();
  for (auto& [a, b] : c.apart) apart.push_back({a, b});
  nlohmann::json j = {{"application", c.application}, {"libraries", libs},      {"contracts", contracts},
                      {"relations", rel},             {"call_sites", calls},    {"source_scanned", c.source_scanned},
                      {"app_threads", c.app_threads}, {"app_imports", c.app_imports}, {"interpreter", c.interpreter},
                      {"process_controls", pcs},      {"processes", procs},     {"apart", apart}};
  if (!c.command_values.empty()) j["command_values"] = c.command_values;
  return j;
}

nlohmann::json to_json(const Hypothesis& h) {
  nlohmann::json checks = nlohmann::json::array();
  for (auto& c : h.checks) {
    nlohmann::json x = {{"signal", c.signal}, {"op", c.op}, {"threshold", c.threshold}, {"why", c.why}};
    if (!c.or_signal.empty()) x["or"] = {{"signal", c.or_signal}, {"op", c.or_op}, {"threshold", c.or_threshold}};
    checks.push_back(x);
  }
  nlohmann::json ev = nlohmann::json::array();
  for (auto& e : h.evidence) {
    nlohmann::json x = {{"signal", e.signal}, {"op", e.op}, {"threshold", e.threshold}, {"passed", e.passed}, {"note", e.note}};
    x["value"] = std::isnan(e.value) ? nlohmann::json() : nlohmann::json(e.value);
    ev.push_back(x);
  }
  nlohmann::json remedies = nlohmann::json::array();
  for (auto& r : h.remedies) remedies.push_back(r);
  return {{"id", h.id},           {"kind", h.kind},         {"title", h.title},         {"libraries", h.libraries},
          {"verdict", to_string(h.verdict)}, {"reason", h.reason}, {"evidence", ev},    {"controls", h.controls},
          {"constraint", h.constraint}, {"remedies", remedies}, {"probe", h.probe},     {"symptom", h.symptom},
          {"checks", checks},     {"sources", h.sources},   {"basis", h.basis}};
}

nlohmann::json to_json(const Analysis& a) {
  nlohmann::json j = to_json(a.composition);
  nlohmann::json hs = nlohmann::json::array();
  for (auto& h : a.hypotheses) hs.push_back(to_json(h));
  j["hypotheses"] = hs;
  j["profiled"] = a.profiled;
  nlohmann::json signals = nlohmann::json::object();
  for (auto& [k, v] : a.profile.signals) signals[k] = std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
  j["signals"] = signals;
  nlohmann::json runs = nlohmann::json::array();
  for (auto& r : a.profile.default_runs) runs.push_back(run_json(r));
  nlohmann::json probes = nlohmann::json::array();
  for (auto& p : a.profile.probes) {
    nlohmann::json pr = nlohmann::json::array();
    for (auto& r : p.runs) pr.push_back(run_json(r));
    probes.push_back({{"env", p.env}, {"hypotheses", p.hypotheses}, {"runs", pr}});
  }
  j["profile"] = {{"ncpus", a.profile.ncpus}, {"default_runs", runs}, {"probes", probes}, {"notes", a.profile.notes}};
  nlohmann::json diags = nlohmann::json::array();
  for (auto& d : a.diagnostics.items())
    diags.push_back({{"severity", to_string(d.severity)}, {"file", d.loc.file}, {"line", d.loc.line},
                     {"message", d.message}, {"hint", d.hint}, {"code", d.code}});
  j["diagnostics"] = diags;
  return j;
}

std::vector<Hypothesis> hypotheses_from_json(const nlohmann::json& j) {
  std::vector<Hypothesis> out;
  try {
    for (const auto& x : j.at("hypotheses")) {
      Hypothesis h;
      h.id = x.at("id").get<std::string>();
      h.kind = x.value("kind", "");
      h.title = x.value("title", "");
      h.libraries = x.value("libraries", std::vector<std::string>{});
      h.controls = x.value("controls", std::vector<std::string>{});
      h.constraint = x.value("constraint", "");
      for (const auto& r : x.value("remedies", nlohmann::json::array())) h.remedies.push_back(r.get<Config>());
      h.probe = x.value("probe", std::map<std::string, std::string>{});
      h.symptom = x.value("symptom", "");
      h.basis = x.value("basis", "");
      h.reason = x.value("reason", "");
      const std::string v = x.value("verdict", "unknown");
      h.verdict = v == "confirmed" ? Verdict::Confirmed : v == "refuted" ? Verdict::Refuted : Verdict::Unknown;
      for (const auto& e : x.value("evidence", nlohmann::json::array())) {
        Evidence ev;
        ev.signal = e.value("signal", "");
        ev.value = e.contains("value") && e["value"].is_number() ? e["value"].get<double>() : std::nan("");
        ev.op = e.value("op", "");
        ev.threshold = e.value("threshold", 0.0);
        ev.passed = e.value("passed", false);
        ev.note = e.value("note", "");
        h.evidence.push_back(ev);
      }
      out.push_back(std::move(h));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("the analysis' hypotheses are malformed: ") + e.what());
  }
  return out;
}

int profile_runs_from_json(const nlohmann::json& j) {
  if (!j.contains("profile") || !j["profile"].is_object()) return 0;
  const auto& p = j["profile"];
  int n = p.contains("default_runs") && p["default_runs"].is_array() ? static_cast<int>(p["default_runs"].size()) : 0;
  if (p.contains("probes") && p["probes"].is_array())
    for (const auto& pr : p["probes"])
      if (pr.is_object() && pr.contains("runs") && pr["runs"].is_array()) n += static_cast<int>(pr["runs"].size());
  return n;
}

std::string to_text(const Analysis& a) {
  std::ostringstream os;
  const Composition& c = a.composition;
  os << "Application: " << (c.application.empty() ? "(none: composed by name)" : c.application) << "\n";
  if (!c.interpreter.empty()) os << "  a script, run by " << c.interpreter << "\n";
  for (auto& p : c.process_controls)
    os << "  process count: " << p.name << (p.fallback.empty() ? "" : " (default " + p.fallback + ")") << ", "
       << (p.option.empty() ? "an argument of " + p.tool + " (a candidate: the command does not say what it counts)"
                            : p.tool + " " + p.option)
       << " at " << p.where << "\n";
  os << "\n";
  os << "Libraries:\n";
  for (auto& l : c.libraries) {
    if (!l.direct && l.contract.empty() && l.found_by != "dlopen") continue;
    os << "  " << l.soname;
    if (!l.real_path.empty()) os << " -> " << l.real_path;
    if (!l.variant.empty() && l.variant != l.soname) os << " [" << l.variant << "]";
    os << " (" << (l.found_by.empty() ? "not found" : l.found_by) << ")";
    if (!l.contract.empty()) os << " contract " << l.contract;
    if (l.processes > 1) {
      os << ", in " << l.processes << " processes at once";
      if (auto it = c.process_threads.find(l.contract); it != c.process_threads.end() && !l.contract.empty())
        os << " (" << it->second << " threads)";
    }
    os << "\n";
  }
  os << "\nContracts:\n";
  if (c.contracts.empty()) os << "  (none)\n";
  for (auto& u : c.contracts)
    os << "  " << u.contract.name << " " << u.contract.version << " from " << u.source
       << (u.path.empty() ? "" : " (" + u.path + ")") << "\n";
  os << "\nHow they meet" << (c.source_scanned ? "" : " (no source or manifest: every pair is possible)") << ":\n";
  if (c.relations.empty()) os << "  (no nesting or co-running found)\n";
  for (auto& r : c.relations)
    os << "  " << (r.kind == Relation::Kind::Nested ? r.inner + " inside " + r.outer + " (" + r.how + ")"
                                                    : r.outer + " beside " + r.inner + " (" + r.how + ")")
       << (r.where.empty() ? "" : " at " + r.where) << "\n";
  for (auto& [x, y] : c.apart) os << "  " << x << " and " << y << " ran in different processes: they never nest\n";
  os << "\nHypotheses:\n";
  if (a.hypotheses.empty()) os << "  (none: no rule matches this composition)\n";
  for (auto& h : a.hypotheses) {
    os << "  [" << to_string(h.verdict) << "] " << h.title << ": " << [&] {
      std::string s;
      for (auto& l : h.libraries) s += (s.empty() ? "" : " / ") + l;
      return s;
    }() << "\n";
    os << "      why considered: " << h.basis << "\n";
    os << "      predicts: " << h.symptom << "\n";
    if (!h.reason.empty()) os << "      decided by: " << h.reason << "\n";
    for (auto& e : h.evidence)
      os << "        " << (e.passed ? "+" : "-") << " " << e.signal << " = " << num(e.value) << " (needs " << e.op << " "
         << num(e.threshold) << ")" << (e.note.empty() ? "" : "  " + e.note) << "\n";
    if (!h.controls.empty()) {
      os << "      controls:";
      for (auto& x : h.controls) os << " " << x;
      os << "\n";
    }
    if (!h.constraint.empty()) os << "      constraint: " << h.constraint << "\n";
    for (auto& r : h.remedies) os << "      remedy: " << config_text(r) << "\n";
    if (!h.probe.empty()) os << "      probe: " << config_text(h.probe) << "\n";
    for (auto& s : h.sources) os << "      from " << s << "\n";
  }
  if (a.profiled) {
    os << "\nSignals (default run" << (a.profile.default_runs.size() > 1 ? "s, medians" : "") << ", " << a.profile.ncpus
       << " CPUs):\n";
    for (const char* k : {"wall_s", "user_s", "sys_s", "cpu_util", "threads_max", "threads_mean", "procs_max", "runq_wait_s",
                          "runq_wait_frac", "pinned_sharing", "main_pinned", "ivcs_per_s", "vcs_per_s", "max_rss_kb", "minflt_per_s"})
      if (auto it = a.profile.signals.find(k); it != a.profile.signals.end())
        os << "  " << k << " = " << num(it->second) << "\n";
    for (auto& [k, v] : a.profile.signals)
      if (k.rfind("perf.", 0) == 0) os << "  " << k << " = " << num(v) << "\n";
    for (auto& p : a.profile.probes) {
      os << "  probe " << config_text(p.env) << ":";
      for (auto& r : p.runs) os << " " << num(r.wall_s) << " s" << (r.ok() ? "" : " (" + r.failure + ")");
      os << "\n";
    }
    for (auto& n : a.profile.notes) os << "  " << n << "\n";
  }
  int confirmed = 0;
  for (auto& h : a.hypotheses) confirmed += h.verdict == Verdict::Confirmed;
  os << "\n" << confirmed << " of " << a.hypotheses.size() << " hypotheses confirmed.\n";
  return os.str();
}

}  // namespace syspilot::tuner
