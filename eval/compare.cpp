// Tuners side by side: every tuner, every seed, the same budget accounting (tuner::tune) over
// the same objective (a replayed table or live runs), recorded as best-so-far per run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "eval/eval.h"
#include "tuner/analyze.h"
#include "tuner/measure.h"

namespace syspilot::eval {

const std::vector<std::string>& tuner_names() {
  static const std::vector<std::string> names = {"syspilot", "random", "optuna-tpe", "optuna-cmaes", "expert"};
  return names;
}

namespace {

// One session: the strategy's trials folded into best-so-far per run, scored against the
// table's medians (the truth), not the noisy value the tuner saw.
// The general-purpose tuners search the peers' space (`screen`: the table's controls and the
// screened inert ones, answered by projection); syspilot the table's, the expert its subspace.
bool peer(const std::string& tuner_name) { return tuner_name != "syspilot" && tuner_name != "expert"; }

Session run_session(const Scenario& s, const Table* table, const std::string& tuner_name, std::uint64_t seed,
                    int max_runs, bool live, const Guidance* guidance, const Screen* screen) {
  Session out;
  out.tuner = tuner_name;
  out.seed = seed;
  out.best_by_run.assign(max_runs, 0.0);
  std::vector<std::string> projected;
  tuner::Space space = tuner_name == "expert" ? expert_space(s)
                       : peer(tuner_name)     ? peer_space(s, live ? nullptr : screen, &projected)
                                              : search_space(s);
  tuner::StrategyContext ctx;
  ctx.seed = seed;
  ctx.machine = tuner::MachineFacts::detect();
  ctx.machine.ncpus = ctx.machine.ncores = s.ncpus > 0 ? s.ncpus : ctx.machine.ncpus;  // what the space was built for
  if (tuner_name == "syspilot" && guidance) {
    ctx.guides = guidance->guides;
    for (const auto& id : guidance->hypotheses)
      for (auto& lib : tuner::libraries_of_id(id)) ctx.hypothesised.insert(std::move(lib));
    out.profiling_runs = guidance->profiling_runs;
  }
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<tuner::Strategy> strategy;
  try {
    strategy = tuner::make_strategy(tuner_name == "expert" ? "grid" : tuner_name, space, ctx);
  } catch (const std::exception& e) {
    out.error = e.what();
    return out;
  }
  // Distinct noise streams per tuner and seed, reproducible.
  std::uint64_t stream = seed * 1000003u + std::hash<std::string>{}(tuner_name) % 1000003u;
  std::unique_ptr<tuner::Objective> objective;
  ReplayObjective* replay = nullptr;
  if (live) {
    objective = std::make_unique<LiveObjective>(s);
  } else {
    auto r = std::make_unique<ReplayObjective>(s, *table, stream, projected);
    replay = r.get();
    objective = std::move(r);
  }
  tuner::TuneOptions opts;
  // The analysis ran the user's default to profile it: those runs are the reference trial
  // (tune() would otherwise measure the default again). A probe run is a run of the
  // application under the probe's configuration: where that configuration lies in the
  // measured space, it is a trial the search starts from (answered like any trial). The
  // remaining probe runs are charged as a prefix of the session.
  int reference_runs = tuner_name == "syspilot" && guidance ? std::min(guidance->default_runs, out.profiling_runs) : 0;
  std::vector<std::pair<Config, int>> probe_trials;
  if (tuner_name == "syspilot" && guidance)
    for (const auto& p : guidance->probes) {
      auto c = tuner::probe_configuration(space, {p.env.begin(), p.env.end()});
      if (p.runs > 0 && c && (live || (table && table->find(normalise(s, *c))))) probe_trials.push_back({*c, p.runs});
    }
  int probe_trial_runs = 0;
  for (const auto& [c, n] : probe_trials) probe_trial_runs += n;
  probe_trial_runs = std::min(probe_trial_runs, out.profiling_runs - reference_runs);
  int prefix = out.profiling_runs - reference_runs - probe_trial_runs;
  out.probe_runs = prefix;
  auto replayed = [&](const Config& c, int runs, const char* who, int before) {
    tuner::Trial t;
    t.config = c;
    t.strategy = who;
    t.runs_before = before;
    for (int i = 0; i < runs; ++i) {
      tuner::Measurement one = objective->evaluate(c);
      t.m.repeats += 1;
      if (one.ok) {
        t.m.samples.push_back(one.value);
        t.m.walls.push_back(one.value);  // replayed values are wall times: the cap's basis
      } else {
        t.m.failure = one.failure;
      }
    }
    t.m.ok = !t.m.samples.empty();
    if (t.m.ok) {
      t.m.failure.clear();
      t.m.value = tuner::median(t.m.samples);
      t.m.spread = tuner::relative_spread(t.m.samples);
    }
    return t;
  };
  if (reference_runs > 0 && max_runs > prefix) {
    opts.resumed.push_back(replayed({}, reference_runs, "reference", 0));
    int before = reference_runs;
    for (const auto& [c, n] : probe_trials) {
      if (prefix + before + n > max_runs) break;
      opts.resumed.push_back(replayed(c, n, "probe", before));
      before += n;
    }
  }
  opts.budget = std::max(0, max_runs - prefix);
  tuner::TuneResult res;
  if (std::getenv("SYSPILOT_EVAL_TRACE"))
    opts.progress = [&](const std::string& line) {
      static std::mutex out;  // sessions run in parallel: one line at a time
      std::lock_guard<std::mutex> lock(out);
      std::cerr << s.name << " " << tuner_name << " seed " << seed << ": " << line << "\n";
    };
  if (opts.budget > 0) res = tuner::tune(*strategy, *objective, opts);
  double overhead = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double exhaustive = table ? table->best() : 0;
  double default_s = 0;
  if (table)
    if (const Entry* d = table->find(normalise(s, {}))) default_s = d->median();
  out.tuning_seconds = live ? overhead : overhead + (replay ? replay->simulated_seconds() : 0);
  out.tuning_seconds += prefix * default_s;
  out.runs = prefix + res.runs;
  out.stop_reason = res.stop_reason;
  out.trials = static_cast<int>(res.trials.size());
  double truth = 0;
  int filled = 0;
  // The incumbent after each record, as tune() judges it: the newest record of a configuration
  // stands for it (a re-measured leader may lose its place).
  std::vector<tuner::Trial> so_far;
  for (const auto& t : res.trials) {
    if (t.config.empty()) out.reference_runs += t.m.repeats;
    else if (t.strategy == "re-measure") out.repeat_runs += t.m.repeats;
    else out.repeat_runs += std::max(0, t.m.repeats - 1);
    if (t.m.capped) ++out.capped_trials;
    else if (!t.m.ok) ++out.failed_trials;
    int end = prefix + t.runs_before + t.m.repeats;
    for (; filled < std::min(end - 1, max_runs); ++filled) out.best_by_run[filled] = truth;
    so_far.push_back(t);
    const tuner::Trial* inc = nullptr;
    for (size_t i = 0; i < so_far.size(); ++i)
      if (so_far[i].m.ok && (!inc || so_far[i].m.value < inc->m.value) && !tuner::superseded(so_far, i)) inc = &so_far[i];
    if (inc) {
      out.best = normalise(s, project(inc->config, projected));
      const Entry* e = table ? table->find(out.best) : nullptr;
      double truth_s = e && !e->samples.empty() ? e->median() : inc->m.value;
      truth = exhaustive > 0 ? truth_s / exhaustive : 0;
    }
  }
  for (; filled < max_runs; ++filled) out.best_by_run[filled] = truth;
  return out;
}

}  // namespace

Comparison compare(const std::vector<Scenario>& scenarios, const std::map<std::string, Table>& tables,
                   const CompareOptions& o, const GuidanceSource& guidance, Diagnostics& diags) {
  DrawsSource one;
  if (guidance) one = [&](const Scenario& s) { return std::vector<Guidance>{guidance(s)}; };
  return compare_draws(scenarios, tables, o, one, diags);
}

Comparison compare_draws(const std::vector<Scenario>& scenarios, const std::map<std::string, Table>& tables,
                         const CompareOptions& o, const DrawsSource& guidance, Diagnostics& diags) {
  Comparison c;
  c.budgets = o.budgets;
  std::sort(c.budgets.begin(), c.budgets.end());
  c.seeds = o.seeds;
  c.live = o.live;
  int max_runs = c.budgets.empty() ? 0 : c.budgets.back();
  std::vector<std::string> tuners = o.tuners.empty() ? tuner_names() : o.tuners;
  std::string current = contracts_digest(corpus_dir());
  std::map<std::string, std::set<std::string>> digests;  // per group
  bool any_contract = false;
  for (const auto& built : scenarios) {
    auto it = tables.find(built.name);
    if (it == tables.end()) {
      diags.error({built.name, 0, 0}, "no measured table for this scenario", "eval-no-table",
                  "run scripts/eval-measure.sh first");
      continue;
    }
    const Table& t = it->second;
    // A table measured on another CPU count holds another space: replayed only as measured,
    // with the scenario built for the table's machine.
    Scenario s = built;
    auto n = t.machine.find("ncpus");  // tables before it was recorded: the online CPUs
    if (n == t.machine.end()) n = t.machine.find("nproc");
    if (n != t.machine.end() && s.ncpus > 0 && n->second != std::to_string(s.ncpus)) {
      int cpus = std::atoi(n->second.c_str());
      if (!o.as_measured || cpus < 1) {
        diags.error({s.name, 0, 0},
                    "the table was measured on " + n->second + " CPUs; the scenario builds its space for " +
                        std::to_string(s.ncpus) + " here",
                    "eval-machine-differs", "measure it on this machine, or replay it as measured (--as-measured)");
        continue;
      }
      tuner::MachineFacts m = tuner::MachineFacts::detect();
      m.ncpus = m.ncores = cpus;
      try {
        build_for(s, m);
      } catch (const std::exception& e) {
        diags.error({s.name, 0, 0}, std::string("cannot build the scenario as measured: ") + e.what(), "eval-scenario-json",
                    "see docs/eval.md for the scenario.json fields");
        continue;
      }
    }
    if (!t.args.empty() && t.args != s.args) {
      diags.error({s.name, 0, 0}, "the table was measured with other arguments than the scenario now gives",
                  "eval-args-changed", "measure the scenario again (scripts/eval-measure.sh --scenario " + s.name + ")");
      continue;
    }
    digests[s.group].insert(t.contracts_digest);
    any_contract = any_contract || !t.contracts.empty();
    if (c.machine.empty()) c.machine = t.machine;
    ScenarioResult r;
    r.scenario = s.name;
    r.exhaustive_best = t.best();
    if (const Entry* b = t.best_entry()) {
      r.best_config = b->config;
      for (const auto& [k, v] : s.user_default)
        if (!b->config.count(k)) r.best_unsets.push_back(k);
    }
    if (const Entry* d = t.find(normalise(s, {}))) r.default_value = d->median();
    r.configurations = t.entries.size();
    r.noise = t.noise();
    r.negative_control = s.negative_control;
    r.group = s.group;
    std::vector<Guidance> draws;
    bool want_guides = std::find(tuners.begin(), tuners.end(), "syspilot") != tuners.end();
    if (want_guides && guidance) draws = guidance(s);
    if (want_guides && !draws.empty()) {
      r.draws = static_cast<int>(draws.size());
      for (const auto& d : draws) {
        for (const auto& h : d.hypotheses) ++r.confirmations[h].first;
        for (const auto& h : d.confirmed) ++r.confirmations[h].second;
      }
    }
    if (draws.empty()) draws.emplace_back();
    r.guides_note = draws.front().note;
    const Screen* screen = nullptr;
    if (o.screens)
      if (auto sc = o.screens->find(s.name); sc != o.screens->end()) screen = &sc->second;
    {
      std::vector<std::string> projected;
      tuner::Space peers = peer_space(s, screen, &projected);
      r.peer_controls = peers.params.size();
      r.peer_configurations = peers.size();
      std::ostringstream note;
      if (!screen) {
        note << "not screened: the general-purpose tuners search the table's " << s.space.size() << " controls";
      } else {
        std::vector<std::string> partly, out;
        for (const auto& sc : screen->controls) {
          if (std::find_if(s.space.begin(), s.space.end(), [&](const ControlSpec& x) { return x.name == sc.name; }) !=
              s.space.end())
            continue;
          size_t inert_values = std::count_if(sc.values.begin(), sc.values.end(), [](const ScreenedValue& v) { return v.inert; });
          if (inert_values == 0) out.push_back(sc.name);
          else if (inert_values < sc.values.size())
            partly.push_back(sc.name + " (" + std::to_string(inert_values) + " of " + std::to_string(sc.values.size()) + ")");
        }
        auto join = [](const std::vector<std::string>& v) {
          std::string t;
          for (const auto& x : v) t += (t.empty() ? "" : ", ") + x;
          return t;
        };
        note << "the general-purpose tuners search " << peers.params.size() << " controls: the table's "
             << s.space.size() << " and " << projected.size() << " screened inert, answered by projection";
        if (!partly.empty()) note << "; inert at some values only: " << join(partly);
        if (!out.empty()) note << "; not inert at any value, left out (the table would have to vary them): " << join(out);
        if (screen->default_drifted())
          note << "; the default ran " << fixed(tuner::median(screen->default_samples), 3) << " s in the screen against "
               << fixed(screen->table_default, 3) << " s in the table: the machine changed since the table";
      }
      r.peer_note = note.str();
    }
    // Replayed sessions are independent and deterministic per (tuner, seed): they run on every
    // core (the Optuna bridges are processes of their own), in the order they are reported.
    // Live sessions run one at a time: two at once would contend with each other.
    std::vector<std::pair<std::string, int>> jobs;
    for (const auto& name : tuners)
      for (int seed = 1; seed <= o.seeds; ++seed) jobs.emplace_back(name, seed);
    r.sessions.resize(jobs.size());
    std::atomic<size_t> next_job{0};
    auto work = [&] {
      for (size_t k; (k = next_job++) < jobs.size();)
      {
        size_t draw = static_cast<size_t>(jobs[k].second - 1) % draws.size();
        r.sessions[k] = run_session(s, &t, jobs[k].first, static_cast<std::uint64_t>(jobs[k].second), max_runs, o.live,
                                    &draws[draw], screen);
        r.sessions[k].draw = static_cast<int>(draw);
      }
    };
    if (o.progress) o.progress(s.name + ": " + std::to_string(jobs.size()) + " sessions");
    unsigned workers = o.live ? 1 : std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work);
    work();
    for (auto& th : pool) th.join();
    c.scenarios.push_back(std::move(r));
  }
  if (!digests.empty() && !any_contract)
    c.digest_notes.push_back("the digest covers no contract file: corpus/ held no .lpcl when the tables were measured, "
                             "so the analysis drafted contracts on the fly");
  // Within a group the tables share one corpus; the groups may differ (held-out tables are
  // measured after the freeze).
  std::set<std::string> shared;
  for (const auto& [group, ds] : digests) {
    if (ds.size() != 1) {
      c.digest_notes.push_back("the " + group + " tables disagree on the contracts digest: they were measured against "
                               "different corpora");
      shared.insert("");
      continue;
    }
    const std::string& d = *ds.begin();
    c.group_digests[group] = d;
    shared.insert(d);
    if (d != current)
      c.digest_notes.push_back("the " + group + " tables were measured with contracts digest " + d.substr(0, 12) +
                               ", the corpus now has " + current.substr(0, 12) +
                               ": the corpus changed since; the measured spaces are unchanged");
  }
  if (shared.size() == 1 && !shared.begin()->empty()) c.contracts_digest = *shared.begin();
  return c;
}

namespace {
std::vector<const Session*> sessions_of(const ScenarioResult& r, const std::string& tuner) {
  std::vector<const Session*> out;
  for (const auto& s : r.sessions)
    if (s.tuner == tuner && s.error.empty()) out.push_back(&s);
  return out;
}
constexpr double kNone = 1e9;  // a session with no successful trial yet
}  // namespace

double median_best(const ScenarioResult& r, const std::string& tuner, int budget) {
  std::vector<double> v;
  for (const Session* s : sessions_of(r, tuner)) {
    if (budget < 1 || s->best_by_run.empty()) continue;
    double b = s->best_by_run[std::min<size_t>(budget, s->best_by_run.size()) - 1];
    v.push_back(b > 0 ? b : kNone);
  }
  return v.empty() ? 0 : tuner::median(v);
}

double median_runs_to_within(const ScenarioResult& r, const std::string& tuner, double within) {
  std::vector<double> v;
  for (const Session* s : sessions_of(r, tuner)) {
    double runs = kNone;
    for (size_t i = 0; i < s->best_by_run.size(); ++i)
      if (s->best_by_run[i] > 0 && s->best_by_run[i] <= within) {
        runs = static_cast<double>(i + 1);
        break;
      }
    v.push_back(runs);
  }
  if (v.empty()) return -1;
  double m = tuner::median(v);
  return m >= kNone / 4 ? -1 : m;  // the median session never got there
}

}  // namespace syspilot::eval
