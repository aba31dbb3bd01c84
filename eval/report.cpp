// The evaluation report: the summary table, the targets of issue 7 with met/missed and why,
// one section per scenario, and SVG convergence plots (best-so-far vs runs over seeds).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "eval/eval.h"

namespace syspilot::eval {

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

namespace {

const std::vector<std::string> kGeneral = {"random", "optuna-tpe", "optuna-cmaes"};

std::string config_text(const Config& c) {
  return c.empty() ? "(nothing set)" : tuner::to_string(c);
}

// "1.03" for a relative best, "-" when the tuner did not run or found nothing.
std::string rel(double v) { return v <= 0 || v > 1e6 ? "-" : fixed(v); }
std::string runs_text(double v, int max_runs) { return v < 0 ? ">" + std::to_string(max_runs) : fixed(v, 0); }

bool ran(const ScenarioResult& r, const std::string& tuner) {
  return std::any_of(r.sessions.begin(), r.sessions.end(),
                     [&](const Session& s) { return s.tuner == tuner && s.error.empty(); });
}

// The general-purpose tuner with the best median at `budget` (lowest relative best).
std::string best_general(const ScenarioResult& r, int budget) {
  std::string best;
  for (const auto& t : kGeneral) {
    if (!ran(r, t)) continue;
    if (best.empty() || median_best(r, t, budget) < median_best(r, best, budget)) best = t;
  }
  return best;
}

std::string fewest_runs_general(const ScenarioResult& r, int max_runs) {
  std::string best;
  double runs = 0;
  for (const auto& t : kGeneral) {
    if (!ran(r, t)) continue;
    double x = median_runs_to_within(r, t);
    if (x < 0) x = max_runs + 1;
    if (best.empty() || x < runs) best = t, runs = x;
  }
  return best;
}

int budget_or(const Comparison& c, int want) {
  for (int b : c.budgets)
    if (b >= want) return b;
  return c.budgets.empty() ? 0 : c.budgets.back();
}

struct Targets {
  bool runs = false, at10 = false, expert = false;
  // Whether any tuner at all could meet the target on this table: one whose first run were the
  // exhaustive best (1 run to within 5%, 1.00 at every budget).
  bool runs_attainable = true, at10_attainable = true;
  std::string runs_why, at10_why, expert_why;
};

Targets targets_of(const Comparison& c, const ScenarioResult& r) {
  Targets t;
  int max_runs = c.budgets.empty() ? 0 : c.budgets.back();
  int b10 = budget_or(c, 10), b20 = budget_or(c, 20);
  double sp = median_runs_to_within(r, "syspilot");
  std::string g = fewest_runs_general(r, max_runs);
  double gp = g.empty() ? -1 : median_runs_to_within(r, g);
  double default_rel = r.exhaustive_best > 0 ? r.default_value / r.exhaustive_best : 0;
  int analysis_runs = 0;  // syspilot's runs before its first candidate (reference and probes)
  for (const auto& s : r.sessions)
    if (s.tuner == "syspilot") {
      analysis_runs = s.profiling_runs;
      break;
    }
  if (sp < 0) {
    t.runs_why = "syspilot's median session does not come within 5% in " + std::to_string(max_runs) + " runs";
    if (gp < 0) t.runs_why += ", nor does any general-purpose tuner's";
  } else if (gp < 0) {
    t.runs = true;
    t.runs_why = "no general-purpose tuner comes within 5% in " + std::to_string(max_runs) + " runs";
  } else {
    t.runs = sp * 3 <= gp;
    t.runs_attainable = gp >= 3;
    t.runs_why = "syspilot " + fixed(sp, 0) + " runs vs " + g + " " + fixed(gp, 0);
    if (!t.runs && default_rel <= 1.05)
      t.runs_why += "; the default is already within 5% of the best: every tuner gets there with its reference run";
    else if (!t.runs && analysis_runs > 1 && gp < 3.0 * analysis_runs)
      t.runs_why += "; a third of " + fixed(gp, 0) + " runs is fewer than syspilot's " + std::to_string(analysis_runs) +
                    " analysis runs";
    else if (!t.runs && gp < 3.0 * (std::max(1, analysis_runs) + 1))
      t.runs_why += "; a third of " + fixed(gp, 0) + " runs is fewer than " +
                    (analysis_runs > 1 ? "syspilot's " + std::to_string(analysis_runs) + " analysis runs"
                                       : std::string("the reference run")) +
                    " plus one candidate";
  }
  std::string g10 = best_general(r, b10);
  double s10 = median_best(r, "syspilot", b10), x10 = g10.empty() ? 0 : median_best(r, g10, b10);
  if (s10 > 0 && x10 > 0) {
    double gain = x10 / s10;
    t.at10 = gain >= 1.2;
    t.at10_attainable = x10 >= 1.2;
    t.at10_why = "at " + std::to_string(b10) + " runs: " + g10 + " " + rel(x10) + " / syspilot " + rel(s10) + " = " +
                 fixed(gain) + "x";
    if (!t.at10 && x10 < 1.2) t.at10_why += "; " + g10 + " is itself within 20% of the best, a 1.2x gain is impossible";
  } else {
    t.at10_why = "not measured";
  }
  double s20 = median_best(r, "syspilot", b20), e20 = median_best(r, "expert", b20);
  if (s20 > 0 && e20 > 0) {
    t.expert = s20 <= e20 * 1.05;
    t.expert_why = "at " + std::to_string(b20) + " runs: syspilot " + rel(s20) + " vs expert " + rel(e20);
  } else {
    t.expert_why = "not measured";
  }
  return t;
}

std::string mark(bool ok) { return ok ? "met" : "**missed**"; }

std::vector<std::string> tuners_in(const Comparison& c) {
  std::vector<std::string> out;
  for (const auto& t : tuner_names())
    for (const auto& r : c.scenarios)
      if (ran(r, t)) {
        out.push_back(t);
        break;
      }
  return out;
}

}  // namespace

std::string summary_table(const Comparison& c) {
  std::ostringstream md;
  int b10 = budget_or(c, 10);
  int max_runs = c.budgets.empty() ? 0 : c.budgets.back();
  auto tuners = tuners_in(c);
  md << "| scenario | configs | default / best | noise |";
  for (const auto& t : tuners) md << " " << t << " @" << b10 << " |";
  for (const auto& t : tuners) md << " " << t << " runs to 5% |";
  md << "\n|---|---:|---:|---:|";
  for (size_t i = 0; i < 2 * tuners.size(); ++i) md << "---:|";
  md << "\n";
  for (const auto& r : c.scenarios) {
    md << "| " << r.scenario << (r.negative_control ? " (negative control)" : "") << " | " << r.configurations << " | "
       << (r.exhaustive_best > 0 ? fixed(r.default_value / r.exhaustive_best) + "x" : "-") << " | +-"
       << fixed(r.noise * 100, 0) << "% |";
    for (const auto& t : tuners) md << " " << rel(median_best(r, t, b10)) << " |";
    for (const auto& t : tuners) md << " " << runs_text(median_runs_to_within(r, t), max_runs) << " |";
    md << "\n";
  }
  md << "\nBest found relative to the exhaustive best (1.00 = the best measured configuration), median over "
     << c.seeds << " seeds" << (c.live ? ", live runs" : ", replayed from the measured tables") << ".\n";
  return md.str();
}

std::string convergence_svg(const ScenarioResult& r, const std::vector<std::string>& tuners, int max_runs) {
  static const std::map<std::string, std::string> colours = {{"syspilot", "#d62728"},  {"random", "#7f7f7f"},
                                                             {"optuna-tpe", "#1f77b4"}, {"optuna-cmaes", "#2ca02c"},
                                                             {"expert", "#9467bd"}};
  const double W = 640, H = 360, L = 60, R = 130, T = 30, B = 45;
  // y from 1.0 (the exhaustive best) to the worst median shown, capped so cliffs stay readable.
  double ymax = 1.1;
  for (const auto& t : tuners)
    for (int run = 1; run <= max_runs; ++run) ymax = std::max(ymax, std::min(3.0, median_best(r, t, run) * 1.05));
  auto x = [&](double run) { return L + (run - 1) / std::max(1, max_runs - 1) * (W - L - R); };
  auto y = [&](double v) { return T + (1 - (std::min(v, ymax) - 1) / (ymax - 1)) * (H - T - B); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << L << "\" y=\"18\" font-size=\"13\">" << r.scenario << ": best so far / exhaustive best</text>\n";
  for (int i = 0; i <= 4; ++i) {
    double v = 1 + (ymax - 1) * i / 4;
    s << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << y(v) << "\" y2=\"" << y(v)
      << "\" stroke=\"#ddd\"/><text x=\"" << L - 6 << "\" y=\"" << y(v) + 4 << "\" text-anchor=\"end\">" << fixed(v)
      << "</text>\n";
  }
  for (int run : {1, 5, 10, 20, 30, 40, 50, 75, 100})
    if (run <= max_runs)
      s << "<text x=\"" << x(run) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">" << run << "</text>\n";
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8 << "\" text-anchor=\"middle\">runs (budget)</text>\n";
  s << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << y(1.05) << "\" y2=\"" << y(1.05)
    << "\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n";
  int row = 0;
  for (const auto& t : tuners) {
    std::vector<std::vector<double>> per_run(max_runs);
    for (const auto& sess : r.sessions)
      if (sess.tuner == t && sess.error.empty())
        for (int i = 0; i < max_runs && i < static_cast<int>(sess.best_by_run.size()); ++i)
          if (sess.best_by_run[i] > 0) per_run[i].push_back(sess.best_by_run[i]);
    std::string colour = colours.count(t) ? colours.at(t) : "#000";
    std::ostringstream band_top, band_bottom, line;
    bool any = false;
    for (int i = 0; i < max_runs; ++i) {
      auto& v = per_run[i];
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      double q1 = v[v.size() / 4], q3 = v[(3 * v.size()) / 4 < v.size() ? (3 * v.size()) / 4 : v.size() - 1];
      band_top << x(i + 1) << "," << y(q3) << " ";
      band_bottom.str(std::to_string(x(i + 1)) + "," + std::to_string(y(q1)) + " " + band_bottom.str());
      line << x(i + 1) << "," << y(tuner::median(v)) << " ";
      any = true;
    }
    if (!any) continue;
    s << "<polygon points=\"" << band_top.str() << band_bottom.str() << "\" fill=\"" << colour
      << "\" fill-opacity=\"0.12\" stroke=\"none\"/>\n";
    s << "<polyline points=\"" << line.str() << "\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\"/>\n";
    s << "<rect x=\"" << W - R + 10 << "\" y=\"" << T + row * 18 << "\" width=\"12\" height=\"3\" fill=\"" << colour
      << "\"/><text x=\"" << W - R + 26 << "\" y=\"" << T + row * 18 + 5 << "\">" << t << "</text>\n";
    ++row;
  }
  s << "<text x=\"" << W - R + 10 << "\" y=\"" << T + row * 18 + 12
    << "\" fill=\"#666\">median; band: quartiles</text>\n</svg>\n";
  return s.str();
}

namespace {

// A group's summary table and its targets (the heading level given), into `md`.
void target_section(std::ostringstream& md, const Comparison& c, const std::string& level) {
  md << level << "Summary\n\n" << summary_table(c) << "\n";
  md << level << "Targets\n\n| scenario | within 5% in <= 1/3 of the runs | 1.2x better at 10 runs | matches expert within 5% |\n"
     << "|---|---|---|---|\n";
  int met_runs = 0, met_10 = 0, met_expert = 0;
  std::vector<std::string> runs_out_of_reach, at10_out_of_reach;
  for (const auto& r : c.scenarios) {
    Targets t = targets_of(c, r);
    met_runs += t.runs, met_10 += t.at10, met_expert += t.expert;
    if (!t.runs_attainable) runs_out_of_reach.push_back(r.scenario);
    if (!t.at10_attainable) at10_out_of_reach.push_back(r.scenario);
    md << "| " << r.scenario << " | " << mark(t.runs) << ": " << t.runs_why << " | " << mark(t.at10) << ": "
       << t.at10_why << " | " << mark(t.expert) << ": " << t.expert_why << " |\n";
  }
  size_t n = c.scenarios.size();
  md << "\nMet: runs target on " << met_runs << "/" << n << " (issue: every scenario); 1.2x at 10 runs on " << met_10
     << "/" << n << " (issue: at least half); expert match on " << met_expert << "/" << n << ".\n\n";
  if (!runs_out_of_reach.empty() || !at10_out_of_reach.empty()) {
    auto names = [](const std::vector<std::string>& v) {
      std::string out;
      for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
      return out;
    };
    size_t runs_max = n - runs_out_of_reach.size(), at10_max = n - at10_out_of_reach.size();
    md << "Within reach of any tuner at all on these tables (one whose first run were the exhaustive best): "
       << "the runs target on " << runs_max << "/" << n << ", the 1.2x target on " << at10_max << "/" << n << ".";
    if (!runs_out_of_reach.empty())
      md << " The runs target is out of reach where the best general-purpose tuner comes within 5% in fewer than "
         << "3 runs (" << names(runs_out_of_reach) << ")" << (runs_max < n ? ", so \"every scenario\" cannot be met"
                                                                          : "")
         << ".";
    if (!at10_out_of_reach.empty())
      md << " The 1.2x target is out of reach where the best general-purpose tuner is itself within 1.2x of the "
         << "best at 10 runs (" << names(at10_out_of_reach) << ")"
         << (2 * at10_max < n ? ", so \"at least half\" cannot be met" : "") << ".";
    md << "\n\n";
  }
}

}  // namespace

namespace {
// syspilot's median best at `budget` over the seeds that replayed draw `draw`.
double median_best_of_draw(const ScenarioResult& r, int budget, int draw) {
  ScenarioResult one;
  for (const auto& s : r.sessions)
    if (s.tuner == "syspilot" && s.draw == draw) one.sessions.push_back(s);
  return median_best(one, "syspilot", budget);
}

// Per scenario: how many analysis draws syspilot replayed with, how often each hypothesis was
// confirmed in them, and syspilot's median best per draw (its spread is the analysis' share of
// the result's variance).
void analysis_draws_section(std::ostringstream& md, const Comparison& c) {
  bool any = false;
  for (const auto& r : c.scenarios) any = any || r.draws > 0;
  if (!any || c.budgets.empty()) return;
  int budget = c.budgets.size() > 1 ? c.budgets[1] : c.budgets[0];
  md << "## Analysis draws\n\nThe analysis is measured too: its verdicts rest on timed runs. Each scenario's stored "
        "draws (`syspilot eval --draw-analyses N`) are replayed in turn, seed k with draw k mod n.\n\n"
     << "| scenario | draws | confirmed (draws) | not confirmed | syspilot @" << budget << " per draw |\n|---|---:|---|---|---|\n";
  for (const auto& r : c.scenarios) {
    if (r.draws == 0) continue;
    std::string yes, no;
    for (const auto& [id, n] : r.confirmations) {
      if (n.second > 0) yes += (yes.empty() ? "" : ", ") + id + " " + std::to_string(n.second) + "/" + std::to_string(r.draws);
      if (n.second < n.first) no += (no.empty() ? "" : ", ") + id + " " + std::to_string(n.first - n.second) + "/" + std::to_string(r.draws);
    }
    std::string per;
    for (int d = 0; d < r.draws; ++d) per += (d ? " / " : "") + rel(median_best_of_draw(r, budget, d));
    md << "| " << r.scenario << " | " << r.draws << " | " << (yes.empty() ? "-" : yes) << " | " << (no.empty() ? "-" : no)
       << " | " << per << " |\n";
  }
  md << "\n";
}
}  // namespace

std::string write_report(const Comparison& c, const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  std::string stem = p.stem().string();
  fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  fs::create_directories(dir);
  int max_runs = c.budgets.empty() ? 0 : c.budgets.back();
  auto tuners = tuners_in(c);
  std::ostringstream md;
  md << "# SysPilot evaluation: tuners side by side on contention scenarios\n\n";
  md << "Machine:";
  for (const auto& [k, v] : c.machine) md << " " << k << "=`" << v << "`;";
  if (!c.contracts_digest.empty() || c.group_digests.empty()) {
    md << "\n\nContracts: the same corpus for every scenario, digest `"
       << (c.contracts_digest.empty() ? "(tables disagree)" : c.contracts_digest) << "`.\n";
  } else {
    md << "\n\nContracts: one corpus per group of tables;";
    for (const auto& [group, d] : c.group_digests) md << " " << group << " digest `" << d << "`;";
    md << "\n";
  }
  for (const auto& n : c.digest_notes) md << "Note: " << n << ".\n";
  md << "\nMode: " << (c.live ? "live trials" : "replay of the measured tables (eval/data)") << "; budgets";
  for (int b : c.budgets) md << " " << b;
  md << " runs; " << c.seeds << " seeds per tuner. Every run of the application counts against the budget "
     << "(the reference run of the default, repeats, failed runs, and syspilot's profiling runs).\n\n";
  // One section per group: the dev scenarios the rules and the strategy were developed on,
  // then the held-out ones written after the freeze; each with its own summary and targets.
  auto subset = [&](const std::string& group) {
    Comparison g = c;
    g.scenarios.clear();
    for (const auto& r : c.scenarios)
      if (r.group == group) g.scenarios.push_back(r);
    return g;
  };
  const Comparison dev = subset("dev"), held = subset("held-out");
  const bool grouped = !held.scenarios.empty();
  if (grouped) {
    md << "## Dev scenarios\n\nThe hypothesis rules, the strategy and the corpus were developed on these "
       << dev.scenarios.size() << " scenarios.";
    for (const auto& e : c.freeze.earlier)
      if (!e.commit.empty())
        md << " Earlier freeze `" << e.commit.substr(0, 12) << "`" << (e.date.empty() ? "" : " (" + e.date + ")")
           << (e.note.empty() ? "." : ": " + e.note);
    md << "\n\n";
    target_section(md, dev, "### ");
    md << "## Held-out scenarios\n\n";
    const Freeze& f = c.freeze;
    if (f.commit.empty()) {
      md << "No freeze is recorded (eval/freeze.json): these figures do not show generalisation.\n\n";
    } else {
      md << "Written after the freeze at commit `" << f.commit.substr(0, 12) << "`" << (f.date.empty() ? "" : " (" + f.date + ")")
         << ": the rules, the strategy and the corpus (";
      for (size_t i = 0; i < f.paths.size(); ++i) md << (i ? ", " : "") << "`" << f.paths[i] << "`";
      md << ") as of that commit; no rule or strategy was changed for them. Now: "
         << (f.changed_note.empty() ? "unknown" : f.changed_note) << ".";
      if (f.changed && *f.changed)
        md << " **A frozen path changed: these are not held-out figures until a new freeze and fresh held-out "
              "scenarios.**";
      md << "\n\n";
    }
    target_section(md, held, "### ");
  } else {
    target_section(md, c, "## ");
  }
  md << "![summary](" << stem << "-summary.svg)\n\n";
  analysis_draws_section(md, c);
  // Summary plot: the median over scenarios of each tuner's median relative best per run.
  ScenarioResult all;
  all.scenario = "all scenarios (median of per-scenario medians)";
  for (const auto& t : tuners) {
    Session s;
    s.tuner = t;
    for (int run = 1; run <= max_runs; ++run) {
      std::vector<double> v;
      for (const auto& r : c.scenarios)
        if (double m = median_best(r, t, run); m > 0 && m < 1e6) v.push_back(m);
      s.best_by_run.push_back(v.empty() ? 0 : tuner::median(v));
    }
    all.sessions.push_back(s);
  }
  std::ofstream(dir / (stem + "-summary.svg")) << convergence_svg(all, tuners, max_runs);
  for (const auto& r : c.scenarios) {
    md << "## " << r.scenario << (r.group == "held-out" ? " (held-out)" : "") << "\n\n";
    md << "Exhaustive best " << fixed(r.exhaustive_best, 3) << " s with `" << config_text(r.best_config) << "`";
    if (!r.best_unsets.empty()) {
      md << " and unset";
      for (const auto& u : r.best_unsets) md << " `" << u << "`";
    }
    md << "; the user's default " << fixed(r.default_value, 3) << " s ("
       << (r.exhaustive_best > 0 ? fixed(r.default_value / r.exhaustive_best) : "-") << "x); " << r.configurations
       << " configurations measured, noise +-" << fixed(r.noise * 100, 0) << "%.\n";
    if (r.negative_control) md << "This is a negative control: little or nothing should be gained.\n";
    if (!r.guides_note.empty()) md << "\nAnalysis for syspilot: " << r.guides_note << "\n";
    if (!r.peer_note.empty())
      md << "\nSpace of the general-purpose tuners (" << r.peer_configurations << " configurations): " << r.peer_note
         << ".\n";
    md << "\n| tuner |";
    for (int b : c.budgets) md << " best @" << b << " |";
    md << " runs to 5% | failed trials / session | runs @" << max_runs
       << ": reference + repeats + profiling | tuning time (s) | stopped |\n|---|";
    for (size_t i = 0; i < c.budgets.size() + 5; ++i) md << "---:|";
    md << "\n";
    for (const auto& t : tuners) {
      std::vector<double> failed, secs, refs, reps, prof;
      std::map<std::string, int> stops;
      std::string error;
      for (const auto& s : r.sessions)
        if (s.tuner == t) {
          if (!s.error.empty()) error = s.error;
          failed.push_back(s.failed_trials);
          refs.push_back(s.reference_runs);
          reps.push_back(s.repeat_runs);
          prof.push_back(s.probe_runs);
          secs.push_back(s.tuning_seconds);
          ++stops[s.stop_reason];
        }
      if (!error.empty()) {
        md << "| " << t << " | could not run: " << error << " |\n";
        continue;
      }
      md << "| " << t << " |";
      for (int b : c.budgets) md << " " << rel(median_best(r, t, b)) << " |";
      std::string stop;
      for (const auto& [k, v] : stops) stop += (stop.empty() ? "" : ", ") + k + " " + std::to_string(v);
      md << " " << runs_text(median_runs_to_within(r, t), max_runs) << " | " << fixed(tuner::median(failed), 1) << " | "
         << fixed(tuner::median(refs), 0) << " + " << fixed(tuner::median(reps), 0) << " + " << fixed(tuner::median(prof), 0)
         << " | " << fixed(tuner::median(secs), 1) << " | " << stop << " |\n";
    }
    std::string svg = stem + "-" + r.scenario + ".svg";
    std::ofstream(dir / svg) << convergence_svg(r, tuners, max_runs);
    md << "\n![" << r.scenario << "](" << svg << ")\n\n";
  }
  std::ofstream out(path);
  out << md.str();
  if (!out) throw std::runtime_error("cannot write the report to " + path);
  return md.str();
}

}  // namespace syspilot::eval
