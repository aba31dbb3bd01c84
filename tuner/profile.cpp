// Profiling: the default run and one probing run per distinct probe environment, interleaved
// (D P1 P2 D P1 P2 ...), signals derived per run, and each hypothesis' verdict decided from its
// rule's checks on medians and on default/probe ratios measured back to back.
#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "tuner/analyze.h"
#include "tuner/contract_lookup.h"
#include "tuner/measure.h"

namespace syspilot::tuner {
namespace {

double median_value(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string num(double v) {
  std::ostringstream os;
  if (std::fabs(v) >= 1000 || v == std::floor(v)) os.precision(0), os << std::fixed << v;
  else if (std::fabs(v) >= 10) os.precision(1), os << std::fixed << v;
  else os.precision(3), os << v;
  return os.str();
}

std::string env_text(const std::map<std::string, std::string>& env) {
  std::string s;
  for (auto& [k, v] : env) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s;
}

// Ratios of a default run over a probe run; floors keep near-zero rates from exploding.
std::map<std::string, double> ratios(const std::map<std::string, double>& d, const std::map<std::string, double>& p) {
  auto get = [](const std::map<std::string, double>& m, const char* k) {
    auto it = m.find(k);
    return it == m.end() ? NAN : it->second;
  };
  std::map<std::string, double> r;
  r["probe.wall_ratio"] = get(d, "wall_s") / std::max(1e-6, get(p, "wall_s"));
  r["probe.cpu_ratio"] = get(d, "cpu_s") / std::max(1e-6, get(p, "cpu_s"));
  r["probe.ivcs_ratio"] = (get(d, "ivcs_per_s") + 20) / (get(p, "ivcs_per_s") + 20);
  r["probe.runq_ratio"] = (get(d, "runq_wait_frac") + 0.01) / (get(p, "runq_wait_frac") + 0.01);
  r["probe.util_gain"] = get(p, "cpu_util") / std::max(1e-6, get(d, "cpu_util"));
  r["probe.threads_ratio"] = get(d, "threads_max") / std::max(1.0, get(p, "threads_max"));
  return r;
}

bool compare(double v, const std::string& op, double t) {
  if (op == ">") return v > t;
  if (op == ">=") return v >= t;
  if (op == "<") return v < t;
  return v <= t;
}

std::string failure_text(const RunResult& r) { return r.failure.empty() ? "ok" : r.failure; }

// A hypothesis' own processes in one run: `lib_procs_max`, the most processes that had one of
// its libraries mapped at once, and `lib_threads_max`, the most threads alive at once in them.
std::map<std::string, double> own_signals(const Composition& comp, const Hypothesis& h, const RunResult& r) {
  std::map<std::string, double> s;
  if (r.samples == 0) return s;
  std::vector<const Library*> libs;
  for (auto& l : comp.libraries)
    if (!l.contract.empty() && std::find(h.libraries.begin(), h.libraries.end(), l.contract) != h.libraries.end())
      libs.push_back(&l);
  if (libs.empty()) return s;
  int procs = 0, threads = 0;
  for (auto& u : r.library_use) {
    std::string base = u.path.substr(u.path.rfind('/') + 1);
    bool mine = false;
    for (auto* l : libs) mine |= u.path == l->path || base == l->soname || u.path == l->real_path;
    if (!mine) {
      std::error_code ec;
      std::string real = std::filesystem::canonical(u.path, ec).string();
      for (auto* l : libs) mine |= !ec && real == l->real_path;
    }
    if (!mine) continue;
    procs = std::max(procs, u.max_concurrent);
    threads = std::max(threads, u.max_threads);
  }
  s["lib_procs_max"] = procs;
  s["lib_threads_max"] = threads;
  return s;
}

}  // namespace

std::map<std::string, double> signals_of(const RunResult& r, int ncpus) {
  std::map<std::string, double> s;
  double wall = std::max(r.wall_s, 1e-6);
  double cpu = r.user_s + r.sys_s;
  s["wall_s"] = r.wall_s;
  s["user_s"] = r.user_s;
  s["sys_s"] = r.sys_s;
  s["cpu_s"] = cpu;
  s["cpu_util"] = cpu / (wall * ncpus);
  s["sys_frac"] = cpu > 0 ? r.sys_s / cpu : 0;
  s["ivcs"] = r.involuntary_switches;
  s["vcs"] = r.voluntary_switches;
  s["ivcs_per_s"] = r.involuntary_switches / wall;
  s["vcs_per_s"] = r.voluntary_switches / wall;
  s["max_rss_kb"] = r.max_rss_kb;
  s["minflt_per_s"] = r.minor_faults / wall;
  if (r.samples > 0) {
    s["threads_max"] = r.max_threads;
    s["threads_mean"] = r.mean_threads;
    s["runq_wait_s"] = r.runq_wait_s;
    s["runq_wait_frac"] = r.runq_wait_s / (wall * ncpus);
    s["pinned_sharing"] = r.pinned_sharing;
    s["main_pinned"] = r.main_pinned ? 1 : 0;
    s["procs_max"] = r.max_processes;
  }
  for (auto& [k, v] : r.perf) {
    s["perf." + k] = v;
    if (k == "cache_misses") s["cache_misses_per_s"] = v / wall;
  }
  return s;
}

std::optional<Config> probe_configuration(const Space& space, const std::map<std::string, std::string>& env) {
  Config c;
  for (const auto& [k, v] : env) {
    const Param* p = space.find(k);
    if (!p || std::find(p->values.begin(), p->values.end(), v) == p->values.end()) return std::nullopt;
    c[k] = v;
  }
  // A control fixed to one value (--pin) is in every trial; the probe ran without it.
  for (const auto& p : space.params)
    if (p.values.size() == 1 && !c.count(p.name)) return std::nullopt;
  if (c.empty()) return std::nullopt;
  return c;
}

std::vector<Trial> profile_trials(const Profile& p, const Space& space) {
  std::vector<Trial> out;
  auto trial = [&](Config c, const std::vector<RunResult>& runs, const char* who) {
    Trial t;
    t.index = static_cast<int>(out.size());
    t.config = std::move(c);
    t.strategy = who;
    t.runs_before = out.empty() ? 0 : out.back().runs_before + out.back().m.repeats;
    for (const auto& r : runs) {
      t.m.repeats += 1;
      if (r.ok()) t.m.samples.push_back(r.wall_s);
      else t.m.failure = failure_text(r);
    }
    t.m.ok = !t.m.samples.empty();
    if (t.m.ok) {
      t.m.failure.clear();
      t.m.value = median(t.m.samples);
      t.m.spread = relative_spread(t.m.samples);
    }
    out.push_back(std::move(t));
  };
  if (p.default_runs.empty() || !std::all_of(p.default_runs.begin(), p.default_runs.end(), [](auto& r) { return r.ok(); }))
    return out;
  trial({}, p.default_runs, "reference");
  for (const auto& pr : p.probes)
    if (auto c = probe_configuration(space, pr.env); c && !pr.runs.empty()) trial(*c, pr.runs, "probe");
  return out;
}

RunSpec profile_spec(const Composition& comp, const RunSpec& run) {
  RunSpec base = run;
  // The libraries' own introspection knobs named by their reviewed contracts go into every run
  // alike, so default and probe runs stay comparable. A draft's are left alone: a debug or
  // trace switch nobody has looked at may slow the program or flood its output.
  std::map<std::string, std::string> introspect;
  for (auto& u : comp.contracts) {
    if (!reviewed_contract(u)) continue;
    for (auto& sig : u.contract.signals)
      if (sig.kind == lpcl::Signal::Kind::Introspect && sig.value && !base.env_set.count(sig.metric)) {
        std::string v = sig.value->text;
        if (sig.value->kind == lpcl::Expr::Kind::Bool || sig.value->kind == lpcl::Expr::Kind::Int ||
            sig.value->kind == lpcl::Expr::Kind::String || sig.value->kind == lpcl::Expr::Kind::Name)
          introspect[sig.metric] = v;
      }
  }
  for (auto& [k, v] : introspect) base.env_set[k] = v;
  return base;
}

Profile profile(const Composition& comp, std::vector<Hypothesis>& hs, const ProfileOptions& opts, Diagnostics& diags) {
  Profile prof;
  prof.ncpus = online_cpus();
  RunSpec base = profile_spec(comp, opts.run);
  std::map<std::string, std::string> introspect;
  for (auto& [k, v] : base.env_set)
    if (!opts.run.env_set.count(k)) introspect[k] = v;

  // Distinct probe environments and the hypotheses each serves.
  if (opts.probes)
    for (auto& h : hs) {
      if (h.probe.empty()) continue;
      auto it = std::find_if(prof.probes.begin(), prof.probes.end(), [&](auto& p) { return p.env == h.probe; });
      if (it == prof.probes.end()) {
        prof.probes.push_back({h.probe, {h.id}, {}, {}});
      } else {
        it->hypotheses.push_back(h.id);
      }
    }

  auto probe_spec = [&](const ProbeRun& p) {
    RunSpec s = base;
    for (auto& [k, v] : p.env) {
      if (!v.empty()) {
        s.env_set[k] = v;
        continue;
      }
      s.env_set.erase(k);  // "" unsets: the probe undoes a user's export
      s.env_unset.push_back(k);
    }
    return s;
  };

  int repeats = std::max(1, opts.repeats);
  // Progress: the planned count is the pairs asked for; close ratios may add pairs later.
  int done = opts.first_default.started ? 1 : 0;
  int planned = repeats * (1 + static_cast<int>(prof.probes.size()));
  auto logged_run = [&](const RunSpec& spec, const std::string& what) {
    ++done;
    planned = std::max(planned, done);
    if (opts.progress) opts.progress("run " + std::to_string(done) + " of " + std::to_string(planned) + ": " + what);
    RunResult r = run(spec);
    if (opts.progress)
      opts.progress("run " + std::to_string(done) + ": " + (r.ok() ? num(r.wall_s) + " s" : failure_text(r)));
    return r;
  };
  auto probe_what = [&](const ProbeRun& p) {
    std::string ids;
    for (auto& h : p.hypotheses) ids += (ids.empty() ? "" : ", ") + h;
    return "probe " + env_text(p.env) + " for " + ids;
  };
  bool default_failed = false;
  bool default_slow = false;  // killed at the timeout while computing: probes may still finish
  for (int i = 0; i < repeats; ++i) {
    RunResult d = i == 0 && opts.first_default.started ? opts.first_default : logged_run(base, "the default");
    prof.default_runs.push_back(d);
    if (!d.ok()) {
      // A crash, or a hang that waits, is the finding; probing a failing program proves
      // nothing. A run killed at the timeout while keeping the CPUs busy is the slow end of
      // contention itself: a probe that finishes decides it (with the default's time as a
      // lower bound).
      // Busy: a quarter of a CPU or more on average (a hang that waits uses next to none;
      // on a loaded machine a computing run may get little more).
      double busy = (d.user_s + d.sys_s) / std::max(1e-6, d.wall_s);
      if (d.timed_out && d.started && busy >= 0.25 && i == 0) {
        default_slow = true;
      } else {
        default_failed = true;
        break;
      }
    }
    for (auto& p : prof.probes) {
      p.runs.push_back(logged_run(probe_spec(p), probe_what(p)));
      p.pairs.push_back(prof.default_runs.size() - 1);
    }
    if (default_slow) break;
  }

  // A probe ratio too close to a threshold to call gets more pairs (a default run and the
  // close probes, interleaved), up to max_repeats pairs; the medians then decide.
  auto close_probes = [&] {
    std::vector<ProbeRun*> close;
    for (auto& p : prof.probes) {
      // A probe that failed decides nothing: more pairs would not change that.
      if (std::any_of(p.runs.begin(), p.runs.end(), [](const RunResult& r) { return !r.ok(); })) continue;
      std::map<std::string, std::vector<double>> per_pair;
      for (size_t i = 0; i < p.runs.size(); ++i) {
        auto d = signals_of(prof.default_runs[p.pairs[i]], prof.ncpus);
        for (auto& [k, v] : ratios(d, signals_of(p.runs[i], prof.ncpus))) per_pair[k].push_back(v);
      }
      bool is_close = false;
      for (auto& h : hs) {
        if (std::find(p.hypotheses.begin(), p.hypotheses.end(), h.id) == p.hypotheses.end()) continue;
        for (auto& c : h.checks)
          for (auto [sig, t] : {std::pair{c.signal, c.threshold}, std::pair{c.or_signal, c.or_threshold}}) {
            auto it = per_pair.find(sig);
            if (it == per_pair.end() || t == 0) continue;
            double v = median_value(it->second);
            is_close |= std::isfinite(v) && std::fabs(v / t - 1) < opts.near;
          }
      }
      if (is_close) close.push_back(&p);
    }
    return close;
  };
  if (!default_failed && !default_slow)
    while (static_cast<int>(prof.default_runs.size()) < opts.max_repeats) {
      auto close = close_probes();
      if (close.empty()) break;
      int taken = prof.runs();
      if (opts.max_runs > 0 && taken + 1 + static_cast<int>(close.size()) > opts.max_runs) {
        prof.notes.push_back("a probe ratio lay within " + num(opts.near * 100) + "% of a threshold; no pair taken: " +
                             std::to_string(taken) + " runs so far, " + std::to_string(opts.max_runs) + " at most");
        break;
      }
      planned = done + 1 + static_cast<int>(close.size());
      RunResult d = logged_run(base, "the default, another pair: a probe ratio is close to its threshold");
      if (!d.ok()) {  // the pairs so far decide
        prof.notes.push_back("an extra default run failed (" + failure_text(d) + "); the earlier pairs decide");
        break;
      }
      prof.default_runs.push_back(d);
      for (auto* p : close) {
        p->runs.push_back(logged_run(probe_spec(*p), probe_what(*p)));
        p->pairs.push_back(prof.default_runs.size() - 1);
      }
      prof.notes.push_back("a probe ratio lay within " + num(opts.near * 100) + "% of a threshold: pair " +
                           std::to_string(prof.default_runs.size()) + " taken");
    }
  if (default_slow) {
    bool any_probe_ok = false;
    for (auto& p : prof.probes)
      for (auto& r : p.runs) any_probe_ok |= r.ok();
    // Rates (faults, switches per second) of a killed run still hold; ratios need a probe
    // that finished.
    if (!prof.probes.empty() && !any_probe_ok) default_failed = true;
    else
      prof.notes.push_back("the default run was killed at the " + num(base.timeout_s) +
                           " s timeout while busy; its rates stand, ratios against it are lower bounds");
  }

  const RunResult& first = prof.default_runs.front();
  for (auto& n : first.perf_notes) prof.notes.push_back("perf: " + n);
  std::set<std::string> composed;
  for (auto& l : comp.libraries)
    if (!l.real_path.empty()) composed.insert(l.real_path);
  for (auto& lib : first.libraries) {
    std::string base_name = lib.substr(lib.rfind('/') + 1);
    bool known = composed.count(lib) > 0;
    for (auto& l : comp.libraries) known |= base_name == l.soname || lib == l.path;
    if (!known && !comp.libraries.empty()) prof.notes.push_back("loaded at run time (dlopen or a dependency): " + lib);
  }
  if (!introspect.empty() && first.started) {
    std::string names;
    for (auto& [k, v] : introspect) names += (names.empty() ? "" : ", ") + k + "=" + v;
    prof.notes.push_back("introspection set: " + names);
    std::istringstream is(first.stderr_text);
    int kept = 0;
    for (std::string line; std::getline(is, line) && kept < 24; ++kept) prof.notes.push_back("  | " + line);
  }

  if (default_failed) {
    const RunResult& bad = prof.default_runs.back();
    prof.signals = signals_of(bad, prof.ncpus);
    std::string why = bad.timed_out ? "the application did not finish within " + num(base.timeout_s) + " s (killed)"
                      : !bad.started ? "the application could not be started: " + bad.failure
                                     : "the application failed under defaults: " + bad.failure;
    diags.error({comp.application, 0, 0}, why, "application-failed",
                bad.timed_out ? "raise --timeout, or give arguments that make a shorter run" : "fix the run first");
    for (auto& h : hs) {
      h.verdict = Verdict::Unknown;
      h.reason = why + "; no verdict from a failing run";
    }
    return prof;
  }

  // Medians over the default runs; per-pair ratios for each probe, then their median.
  std::vector<std::map<std::string, double>> dsig;
  for (auto& r : prof.default_runs) dsig.push_back(signals_of(r, prof.ncpus));
  std::set<std::string> keys;
  for (auto& m : dsig)
    for (auto& [k, v] : m) keys.insert(k);
  for (auto& k : keys) {
    std::vector<double> v;
    for (auto& m : dsig)
      if (m.count(k)) v.push_back(m.at(k));
    prof.signals[k] = median_value(v);
  }

  for (auto& h : hs) {
    h.evidence.clear();
    // Signals of the hypothesis' own libraries (their processes), medians over default runs.
    std::map<std::string, double> own;
    {
      std::map<std::string, std::vector<double>> per_run;
      for (auto& r : prof.default_runs)
        for (auto& [k, v] : own_signals(comp, h, r)) per_run[k].push_back(v);
      for (auto& [k, v] : per_run) own[k] = median_value(v);
    }
    auto source_of = [&](const std::string& sig, std::map<std::string, double>& probe_sig) -> std::map<std::string, double>& {
      if (sig.rfind("probe.", 0) == 0 || sig == "controls_set") return probe_sig;
      return own.count(sig) ? own : prof.signals;
    };
    const ProbeRun* probe = nullptr;
    for (auto& p : prof.probes)
      if (p.env == h.probe && !h.probe.empty()) probe = &p;
    std::map<std::string, double> probe_sig;
    std::string probe_problem;
    if (!probe) {
      probe_problem = h.probe.empty() ? "no env control to probe it with" : "probing is off";
    } else {
      std::map<std::string, std::vector<double>> per_pair;
      for (size_t i = 0; i < probe->runs.size(); ++i) {
        if (!probe->runs[i].ok()) {
          probe_problem = "the probe run (" + env_text(probe->env) + ") failed: " + failure_text(probe->runs[i]);
          continue;
        }
        for (auto& [k, v] : ratios(dsig[probe->pairs[i]], signals_of(probe->runs[i], prof.ncpus))) per_pair[k].push_back(v);
      }
      for (auto& [k, v] : per_pair) probe_sig[k] = median_value(v);
      if (!probe_sig.empty()) probe_problem.clear();
    }
    int known = 0, passed = 0;
    std::string failed_text, unknown_text;
    for (auto& c : h.checks) {
      Evidence e;
      e.signal = c.signal;
      e.op = c.op;
      e.threshold = c.threshold;
      bool is_probe = c.signal.rfind("probe.", 0) == 0;
      if (c.signal == "controls_set") {
        // How many of the hypothesis' controls the run's environment sets, or the command itself
        // through a placeholder's default (pinning only collides when someone asked for it).
        int n = 0;
        for (auto& ctl : h.controls)
          n += base.env_set.count(ctl) || (base.inherit_env && std::getenv(ctl.c_str())) || comp.command_values.count(ctl);
        probe_sig["controls_set"] = n;
        is_probe = true;
      }
      auto& src = source_of(c.signal, probe_sig);
      auto it = src.find(c.signal);
      if (it == src.end() || std::isnan(it->second)) {
        e.note = is_probe ? "not measured: " + (probe_problem.empty() ? "no probe" : probe_problem)
                          : "not measured on this machine";
        if (unknown_text.empty()) unknown_text = c.signal + " " + e.note;
        h.evidence.push_back(e);
        continue;
      }
      e.value = it->second;
      e.passed = compare(e.value, c.op, c.threshold);
      if (!e.passed && !c.or_signal.empty()) {
        auto& osrc = source_of(c.or_signal, probe_sig);
        auto oit = osrc.find(c.or_signal);
        if (oit != osrc.end() && !std::isnan(oit->second) && compare(oit->second, c.or_op, c.or_threshold)) {
          // The alternative decided: report it as the evidence.
          e.signal = c.or_signal;
          e.op = c.or_op;
          e.threshold = c.or_threshold;
          e.value = oit->second;
          e.passed = true;
        }
      }
      ++known;
      passed += e.passed;
      if (is_probe && c.signal != "controls_set") {
        e.note = "default vs probe " + env_text(probe->env) + ", median of " + std::to_string(probe->runs.size()) +
                 " interleaved pair(s)";
      }
      if (!e.passed && failed_text.empty())
        failed_text = c.signal + " = " + num(e.value) + ", needs " + c.op + " " + num(c.threshold) +
                      (c.why.empty() ? "" : " (" + c.why + ")");
      h.evidence.push_back(e);
    }
    std::string summary;
    for (auto& e : h.evidence)
      if (e.value != 0 || e.passed) summary += (summary.empty() ? "" : "; ") + e.signal + " " + num(e.value) + " " + e.op + " " + num(e.threshold);
    if (known < static_cast<int>(h.checks.size()) && passed == known) {
      h.verdict = Verdict::Unknown;
      h.reason = h.checks.empty() ? "the rule names no signal to check" : unknown_text;
    } else if (passed == known && known > 0) {
      h.verdict = Verdict::Confirmed;
      h.reason = summary;
    } else if (known > 0) {
      h.verdict = Verdict::Refuted;
      h.reason = failed_text;
    } else {
      h.verdict = Verdict::Unknown;
      h.reason = "no signal could be measured";
    }
  }
  return prof;
}

}  // namespace syspilot::tuner
