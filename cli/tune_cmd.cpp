// `syspilot tune -- APP ARGS...`: analyse the application, search the controls its confirmed
// hypotheses name, print the best configuration as shell assignments, keep the session in the
// store so that it can be resumed.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <regex>
#include <unistd.h>
#include <sstream>

#include "cli/command.h"
#include "store/store.h"
#include "tuner/analyze.h"
#include "tuner/measure.h"
#include "tuner/report.h"
#include "tuner/session.h"
#include "tuner/space.h"

namespace syspilot::cli {
namespace {

using namespace syspilot::tuner;

struct TuneArgs {
  int budget = 12;
  std::string space = "hypotheses";
  std::vector<std::string> pin, add, drop;
  std::string strategy = "syspilot";
  std::uint64_t seed = 1;
  double timeout = 60;
  double cap_factor = 3, cap_slack = 1;
  std::string metric;
  bool maximize = false;
  std::string score_cmd;
  bool export_only = false;
  std::string report;
  std::int64_t resume = 0;
  std::string db, source, manifest;
  int verify = 5;
  int max_repeats = 3;
  std::vector<std::string> compare;
  std::vector<std::string> argv;
};

SpaceEdits parse_edits(const TuneArgs& a) {
  SpaceEdits e;
  for (const auto& p : a.pin) {
    auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--pin '" + p + "': expected NAME=VALUE, e.g. --pin OMP_NUM_THREADS=2");
    e.pin[p.substr(0, eq)] = p.substr(eq + 1);
  }
  for (const auto& p : a.add) {
    auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == p.size())
      throw UsageError("--add '" + p + "': expected NAME=V1,V2,..., e.g. --add MALLOC_ARENA_MAX=1,2,4");
    std::vector<std::string> vals;
    std::stringstream ss(p.substr(eq + 1));
    for (std::string v; std::getline(ss, v, ',');)
      if (!v.empty()) vals.push_back(v);
    e.add[p.substr(0, eq)] = vals;
  }
  e.drop = a.drop;
  return e;
}

// Resolves APP the way execvp would, so that composition reads the right binary.
std::string resolve_binary(const std::string& app) {
  if (app.find('/') != std::string::npos) return app;
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');) {
    auto p = std::filesystem::path(dir.empty() ? "." : dir) / app;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return app;
}

// Which guides the best configuration acts on: it changes one of their controls and meets
// their constraint.
std::vector<std::string> confirmed_by(const Config& best, const std::vector<Guide>& guides, const Space& space,
                                      const MachineFacts& m) {
  std::vector<std::string> out;
  for (const auto& g : guides) {
    bool touches = std::any_of(g.controls.begin(), g.controls.end(), [&](const auto& c) { return best.count(c) > 0; });
    Space s;
    s.params = space.params;
    if (!g.constraint.empty()) s.constraints = {g.constraint};
    if (touches && s.admits(best, m)) out.push_back(g.id);
  }
  return out;
}

std::string pct(double v) {
  std::ostringstream os;
  os << std::lround(v * 100) << "%";
  return os.str();
}

std::string fixed(double v, int prec = 2) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

// "2.07x +-16%"; a ratio is undefined when the default's metric or score is 0 (or the best's).
std::string speedup_text(double speedup, double spread) {
  if (speedup <= 0) return "n/a (a metric or score of 0 has no ratio)";
  return fixed(speedup) + "x +-" + pct(spread);
}

int run_tune(TuneArgs a) {
  std::string db = a.db.empty() ? store::default_db_path() : a.db;
  std::unique_ptr<SessionStore> sessions;
  try {
    store::Store migrate_core(db);  // the analysis reads contracts from the same file
    sessions = std::make_unique<SessionStore>(db);
  } catch (const std::exception& e) {
    throw UsageError(std::string(e.what()));
  }
  MachineFacts machine = MachineFacts::detect();
  Space space;
  std::vector<Guide> gs;
  std::vector<Trial> resumed;
  std::vector<Trial> from_analysis;  // the analysis' runs, as syspilot's first trials
  int analysis_spent = 0;            // the analysis' other runs: charged, not trials
  std::int64_t id = 0;
  SessionInfo base;  // what a new session records

  if (a.resume > 0) {
    auto s = sessions->get(a.resume);
    if (!s) throw UsageError("no tuning session " + std::to_string(a.resume) + " in " + db + "; list them with sqlite3 " + db + " 'SELECT id, argv FROM tune_sessions'");
    id = s->id;
    if (!a.argv.empty() && a.argv != s->argv)
      throw UsageError("session " + std::to_string(id) + " tunes a different command; drop the command after -- to resume it");
    a.argv = s->argv;
    a.strategy = s->strategy;
    a.seed = s->seed;
    a.budget = std::max(a.budget, s->budget);
    auto o = nlohmann::json::parse(s->options_json, nullptr, false);
    if (o.is_object()) {
      a.timeout = o.value("timeout", a.timeout);
      a.cap_factor = o.value("cap_factor", a.cap_factor);
      a.cap_slack = o.value("cap_slack", a.cap_slack);
      a.metric = o.value("metric", a.metric);
      a.maximize = o.value("maximize", a.maximize);
      a.score_cmd = o.value("score_cmd", a.score_cmd);
      a.max_repeats = o.value("max_repeats", a.max_repeats);
      analysis_spent = o.value("analysis_spent", 0);
    }
    space = space_from_json(s->space_json);
    gs = guides_from_json(s->guides_json);
    resumed = sessions->trials(id);
    base = *s;
    std::cerr << "tune: resuming session " << id << ": " << resumed.size() << " trials done, not repeated\n";
  } else {
    if (a.argv.empty()) throw UsageError("no application given; usage: syspilot tune [options] -- APP ARGS...");
    std::string binary = resolve_binary(a.argv[0]);
    if (!std::filesystem::exists(binary))
      throw UsageError("application '" + a.argv[0] + "' not found; give its path after --");
    std::cerr << "tune: analysing " << a.argv[0] << " (composition, hypotheses, profile)\n";
    AnalyzeOptions ao;
    ao.compose.binary = binary;
    ao.compose.source_dir = a.source;
    ao.compose.manifest = a.manifest;
    ao.compose.store_path = db;
    ao.profile.run.argv = a.argv;
    ao.profile.run.timeout_s = a.timeout;
    // The analysis' runs are charged to syspilot's budget: its extra pairs (a probe too close
    // to a threshold to call) take at most half of it, leaving the rest to the search.
    ao.profile.max_runs = a.budget / 2;
    Analysis an = analyze(ao);
    for (const auto& d : an.diagnostics.items())
      if (d.severity != Severity::Note) std::cerr << d.str() << "\n";
    gs = guides(an.hypotheses);
    if (gs.empty() && a.space == "hypotheses") {
      auto unknown = guides(an.hypotheses, true);
      if (!unknown.empty()) {
        std::cerr << "tune: no hypothesis was confirmed by the profile; searching the controls of the "
                  << unknown.size() << " undecided ones\n";
        gs = unknown;
      }
    }
    for (const auto& h : an.hypotheses)
      std::cerr << "tune: hypothesis " << h.id << ": " << tuner::to_string(h.verdict)
                << (h.reason.empty() ? "" : " (" + h.reason + ")") << "\n";
    Diagnostics diags;
    space = build_space(contracts_of(an.composition), gs, a.space == "all" ? SpaceScope::All : SpaceScope::Hypotheses,
                        parse_edits(a), machine, diags);
    for (const auto& d : diags.items())
      if (d.severity != Severity::Note) std::cerr << d.str() << "\n";
    if (space.params.empty())
      throw UsageError("nothing to tune: no confirmed hypothesis names a control of " + a.argv[0] +
                       "; try --space all, or name controls with --add NAME=V1,V2");
    // The analysis ran the application already: with wall time as the objective, its default
    // runs are syspilot's reference and each probe inside the space a trial, charged to the
    // budget like every other run (a metric or score was not read from them).
    if (a.metric.empty() && a.score_cmd.empty() && an.profiled) from_analysis = profile_trials(an.profile, space);
    // The rest (probes outside the space; every run where the objective is a metric or score,
    // which the profile does not read) was spent all the same.
    if (an.profiled) {
      analysis_spent = an.profile.runs();
      for (const auto& t : from_analysis) analysis_spent -= t.m.repeats;
    }
    base.argv = a.argv;
    base.budget = a.budget;
    base.seed = a.seed;
    base.space_json = space_to_json(space);
    base.guides_json = guides_to_json(gs);
    base.options_json = nlohmann::json{{"timeout", a.timeout},     {"cap_factor", a.cap_factor},
                                        {"cap_slack", a.cap_slack}, {"metric", a.metric},
                                        {"maximize", a.maximize},  {"score_cmd", a.score_cmd},
                                        {"max_repeats", a.max_repeats}, {"space", a.space},
                                        {"analysis_spent", analysis_spent}}
                            .dump();
  }
  std::vector<std::string> strategies = a.compare.empty() ? std::vector<std::string>{a.strategy} : a.compare;
  for (const auto& s : strategies)
    if (std::find(strategy_names().begin(), strategy_names().end(), s) == strategy_names().end())
      throw UsageError("--compare: unknown strategy '" + s + "'; use syspilot, random, grid, optuna-tpe, optuna-cmaes");
  std::cerr << "tune: " << space.params.size() << " controls, " << space.size() << " configurations, budget "
            << a.budget << " runs per strategy\n";
  if (a.cap_factor > 0)
    std::cerr << "tune: a run is stopped (capped) after " << a.cap_factor << "x the best trial's median wall time + "
              << a.cap_slack << " s, every run after " << a.timeout << " s (--cap-factor 0: no cap)\n";

  ObjectiveSpec os;
  os.argv = a.argv;
  os.timeout_s = a.timeout;
  os.metric_regex = a.metric;
  os.maximize = a.maximize;
  os.score_cmd = a.score_cmd;
  std::unique_ptr<LiveObjective> objective;
  try {
    objective = std::make_unique<LiveObjective>(space, os);
  } catch (const std::regex_error& e) {
    throw UsageError("--metric '" + a.metric + "' is not a valid regular expression (" + e.what() + ")");
  }

  struct Done {
    std::string strategy;
    std::int64_t id;
    TuneResult res;
    std::optional<Verification> ver;
  };
  std::vector<Done> done;
  for (const auto& name : strategies) {
    if (id == 0 || !done.empty()) {
      SessionInfo si = base;
      si.strategy = name;
      id = sessions->create(si);
    }
    std::cerr << "tune: session " << id << " in " << db << ", strategy " << name << "\n";
    StrategyContext ctx;
    ctx.guides = gs;
    ctx.machine = machine;
    ctx.seed = a.seed;
    std::unique_ptr<Strategy> strategy;
    try {
      strategy = make_strategy(name, space, ctx);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    TuneOptions to;
    to.budget = a.budget;
    to.max_repeats = a.max_repeats;
    to.resumed = done.empty() ? resumed : std::vector<Trial>{};
    if (name == "syspilot") to.spent = analysis_spent;
    std::int64_t sid = id;
    if (name == "syspilot" && a.resume == 0) {
      int runs = 0;
      for (const auto& t : from_analysis) {
        sessions->add_trial(sid, t);
        runs += t.m.repeats;
      }
      if (!from_analysis.empty()) {
        to.resumed = from_analysis;
        std::cerr << "tune: the analysis' " << runs << " runs count as " << from_analysis.size()
                  << " trials (the reference and the probes inside the space)\n";
      }
      for (const auto& t : from_analysis)
        std::cerr << "tune: trial " << t.index + 1 << "  runs " << t.runs_before + t.m.repeats << "/" << a.budget
                  << "  " << (t.config.empty() ? "default" : to_string(t.config)) << "  "
                  << (t.m.ok ? fixed(t.m.value, 3) + " s (x" + std::to_string(t.m.repeats) + ", " + t.strategy + " runs)"
                             : "FAILED: " + t.m.failure)
                  << "\n";
      if (analysis_spent > 0)
        std::cerr << "tune: the analysis' other " << analysis_spent
                  << " runs (probes outside the space, or not read by the objective) are charged too\n";
      runs += analysis_spent;
      if (runs > 0 && runs >= a.budget)
        std::cerr << "tune: the analysis took " << runs << " of the budget's " << a.budget
                  << " runs: none are left for the search (raise --budget)\n";
    }
    to.cap_factor = a.cap_factor;
    to.cap_slack_s = a.cap_slack;
    for (auto& t : to.resumed) {
      // Trials measured before this call carry no wall times of their own (the store keeps
      // none); with wall time as the objective their samples are those. The store keeps a
      // capped trial as failed, its lower bound as its value.
      if (a.metric.empty() && a.score_cmd.empty() && t.m.walls.empty()) t.m.walls = t.m.samples;
      if (!t.m.ok && t.m.failure.rfind("capped at ", 0) == 0) {
        t.m.capped = true;
        t.m.lower_bound = t.m.value;
      }
    }
    to.on_trial = [&, sid](const Trial& t) { sessions->add_trial(sid, t); };
    to.progress = [](const std::string& line) { std::cerr << "tune: " << line << "\n"; };
    TuneResult res = tune(*strategy, *objective, to);
    sessions->finish(id, res.best >= 0 ? "finished" : "failed");
    std::optional<Verification> ver;
    if (res.best >= 0 && a.verify > 0 && !res.trials[res.best].config.empty() && res.reference >= 0) {
      std::cerr << "tune: re-measuring default and best, " << a.verify
                << " interleaved pairs (not counted in the budget)\n";
      ver = verify(*objective, {}, res.trials[res.best].config, a.verify);
    }
    done.push_back({name, id, std::move(res), ver});
  }

  if (!a.report.empty()) {
    ReportInput ri;
    ri.title = "syspilot tune: " + std::filesystem::path(a.argv[0]).filename().string();
    ri.argv = a.argv;
    ri.space = space;
    ri.guides = gs;
    for (const auto& d : done) ri.runs.push_back({d.strategy, d.res});
    ri.verification = done.front().ver;
    ri.maximize = a.maximize;
    ri.objective = a.score_cmd.empty() ? (a.metric.empty() ? "wall time (s)" : "metric /" + a.metric + "/") : "score";
    try {
      write_report(a.report, ri);
    } catch (const std::exception& e) {
      std::cerr << "tune: " << e.what() << "\n";
      return kFindings;
    }
    std::cerr << "tune: report written to " << a.report << "\n";
  }

  // The speedup reported is the fresh re-measurement's when there is one.
  auto speedup_of = [&](const Done& d) {
    if (d.ver && d.ver->ok) return std::make_pair(d.ver->speedup, d.ver->spread);
    return std::make_pair(d.res.speedup, d.res.speedup_spread);
  };
  if (!a.compare.empty()) {
    std::cout << "strategy      runs  trials  best configuration                          speedup\n";
    for (const auto& d : done) {
      auto [sp, spr] = speedup_of(d);
      std::string cfg = d.res.best >= 0 ? to_string(d.res.trials[d.res.best].config) : "(every trial failed)";
      std::cout << std::left << std::setw(14) << d.strategy << std::setw(6) << d.res.runs << std::setw(8)
                << d.res.trials.size() << std::setw(44) << cfg << (cfg.size() >= 44 ? "  " : "")
                << speedup_text(sp, spr) << "\n";
    }
    return std::all_of(done.begin(), done.end(), [](const Done& d) { return d.res.best >= 0; }) ? kOk : kFindings;
  }

  const Done& d = done.front();
  const TuneResult& res = d.res;
  if (res.best < 0) {
    if (res.trials.empty())
      std::cerr << "tune: no trial ran: " << res.runs << " of the budget's " << a.budget
                << " runs were spent before the search (raise --budget)\n";
    else
      std::cerr << "tune: every trial failed; the last failure: " << res.trials.back().m.failure << "\n";
    return kFindings;
  }
  const Trial& best = res.trials[res.best];
  auto [speedup, spread] = speedup_of(d);
  std::string basis = d.ver && d.ver->ok
                          ? "fresh re-measurement, median of " + std::to_string(a.verify) + " interleaved pairs"
                          : "trial medians";
  auto env = environment_for(space, best.config, shim_path(), inherited_environment());
  auto confirms = confirmed_by(best.config, gs, space, machine);
  std::ostream& info = a.export_only ? std::cerr : std::cout;
  for (const auto& [k, v] : env) std::cout << (a.export_only ? "export " : "") << k << "=" << shell_quote(v) << "\n";
  if (env.empty()) info << "# the default configuration is the best found\n";
  info << "# speedup " << speedup_text(speedup, spread) << " over the default (" << basis << "); "
       << res.trials.size() << " trials (" << res.capped << " capped), " << res.runs << "/" << a.budget
       << " runs, noise +-" << pct(res.noise) << ", stopped: " << res.stop_reason << "\n";
  if (!confirms.empty()) {
    info << "# confirms:";
    for (const auto& c : confirms) info << " " << c;
    info << "\n";
  }
  info << "# session " << d.id << " (continue with: syspilot tune --resume " << d.id << " --budget N)\n";
  return kOk;
}

CommandRegistration reg(60, [](CLI::App& app, Context& ctx) {
  auto a = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand("tune", "Find the best configuration of an application's libraries: syspilot tune [options] -- APP ARGS...");
  cmd->add_option("--budget", a->budget, "Runs of the application to spend (every repeat counts; default 12)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--space", a->space, "hypotheses: controls of confirmed hypotheses (default); all: every control of every contract")
      ->check(CLI::IsMember({"hypotheses", "all"}));
  // One value per occurrence: otherwise these options swallow the `--` before the command
  // and its flags (`-- sh -c ...`) are parsed as ours.
  cmd->add_option("--pin", a->pin, "Fix a control: NAME=VALUE (repeatable)")->allow_extra_args(false);
  cmd->add_option("--add", a->add, "Search a control with these values: NAME=V1,V2,... (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--drop", a->drop, "Leave a control out of the search (repeatable)")->allow_extra_args(false);
  cmd->add_option("--strategy", a->strategy, "syspilot (default), random, grid, optuna-tpe, optuna-cmaes")
      ->check(CLI::IsMember(strategy_names()));
  cmd->add_option("--seed", a->seed, "Seed of the random and Optuna strategies");
  cmd->add_option("--timeout", a->timeout,
                  "Seconds any run may take before it is killed and recorded as failed (absolute; the first run's only limit)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--cap-factor", a->cap_factor,
                  "Adaptive capping: stop a run after this many times the best trial's median wall time plus --cap-slack, "
                  "recorded as capped (default 3; 0: off)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--cap-slack", a->cap_slack, "Seconds added to the adaptive cap (default 1)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--metric", a->metric, "Objective read from the output: REGEX, its first group (default: wall time)");
  cmd->add_flag("--maximize", a->maximize, "The metric or score is better when larger");
  cmd->add_option("--score-cmd", a->score_cmd,
                  "Command (sh -c) that prints the score of a run; it gets SYSPILOT_OUTPUT (stdout file) and SYSPILOT_WALL_S");
  cmd->add_flag("--export", a->export_only, "Print only `export NAME=VALUE` lines on stdout");
  cmd->add_option("--report", a->report, "Write a Markdown report (an SVG plot beside it)");
  cmd->add_option("--resume", a->resume, "Continue an interrupted session by id, without repeating finished trials")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--db", a->db, "SQLite store (default $SYSPILOT_DB or ~/.local/share/syspilot/syspilot.db)");
  cmd->add_option("--source", a->source, "The application's source folder (finds calls nested in parallel regions)");
  cmd->add_option("--manifest", a->manifest, "Manifest stating libraries and nesting (docs/analysis.md)");
  cmd->add_option("--verify", a->verify, "Interleaved default/best pairs re-measured at the end (0: none; not in the budget)")
      ->check(CLI::Range(0, 100));
  cmd->add_option("--max-repeats", a->max_repeats, "Most runs of one configuration (adaptive; default 3)")
      ->check(CLI::Range(1, 50));
  cmd->add_option("--compare", a->compare,
                  "Run these strategies one after another on the same space and budget; print them side by side")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("command", a->argv, "The application and its arguments, after --");
  cmd->callback([a, &ctx] {
    if (a->maximize && a->metric.empty() && a->score_cmd.empty())
      throw UsageError("--maximize needs --metric REGEX or --score-cmd CMD (wall time is always minimised)");
    if (!a->metric.empty() && !a->score_cmd.empty()) throw UsageError("give --metric or --score-cmd, not both");
    if (!a->compare.empty() && a->resume) throw UsageError("--compare starts new sessions; it cannot --resume one");
    if (!a->compare.empty() && a->export_only) throw UsageError("--compare prints a table; it cannot --export");
    ctx.exit_code = run_tune(*a);
  });
});

}  // namespace
}  // namespace syspilot::cli
