// `syspilot eval`: measure the scenarios' tables, replay tuners side by side over them (or run
// live trials), write the Markdown/SVG report and print the summary table.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "cli/checks.h"
#include "cli/command.h"
#include "eval/eval.h"

namespace syspilot::cli {
namespace {

struct EvalArgs {
  bool measure = false, replay = false, live = false, reanalyse = false, docs = false, check = false;
  bool as_measured = false, screen = false, plan = false;
  int draw_analyses = 0;
  std::string root;
  std::vector<std::string> scenarios;
  std::vector<int> budgets = {5, 10, 20, 50};
  int seeds = 20;
  int repeats = 3;
  double max_load = 0.3;
  std::vector<std::string> tuners;
  std::string report;
  std::string data, scenario_dir;
};

std::vector<eval::Scenario> selected(const EvalArgs& a) {
  Diagnostics diags;
  auto all = eval::load_scenarios(a.scenario_dir.empty() ? eval::scenarios_dir() : a.scenario_dir, diags);
  if (diags.has_errors()) throw UsageError(diags.str());
  if (a.scenarios.empty()) return all;
  std::vector<eval::Scenario> out;
  for (const auto& name : a.scenarios) {
    auto it = std::find_if(all.begin(), all.end(), [&](const eval::Scenario& s) { return s.name == name; });
    if (it == all.end()) {
      std::string known;
      for (const auto& s : all) known += " " + s.name;
      throw UsageError("unknown scenario '" + name + "'; known:" + known);
    }
    out.push_back(*it);
  }
  return out;
}

int run_measure(const EvalArgs& a) {
  std::string dir = a.data.empty() ? eval::data_dir() : a.data;
  std::filesystem::create_directories(dir);
  int failed = 0;
  for (const auto& s : selected(a)) {
    // A table holds the space of the machine it was measured on; SYSPILOT_NCPUS builds another.
    if (const char* o = std::getenv("SYSPILOT_NCPUS"); o && *o)
      throw UsageError("SYSPILOT_NCPUS=" + std::string(o) + " builds the scenarios for another machine: measure without it");
    eval::MeasureOptions o;
    o.repeats = a.repeats;
    o.max_load = a.max_load;
    o.progress = [](const std::string& line) { std::cerr << line << "\n"; };
    Diagnostics diags;
    eval::Table t = eval::measure(s, dir + "/" + s.name + ".json", o, diags);
    diags.print(std::cerr);
    if (diags.has_errors()) ++failed;
    else
      std::cout << s.name << ": " << t.entries.size() << " configurations, best " << t.best() << " s, noise +-"
                << t.noise() * 100 << "%\n";
  }
  return failed ? kFindings : kOk;
}

// The peers' space beyond each table: every env control the scenario's contracts offer,
// screened by live runs beside the user's default (resumable), into <data>/<name>.screen.json.
int run_screen(const EvalArgs& a) {
  std::string dir = a.data.empty() ? eval::data_dir() : a.data;
  if (const char* o = std::getenv("SYSPILOT_NCPUS"); o && *o)
    throw UsageError("SYSPILOT_NCPUS=" + std::string(o) + " builds the scenarios for another machine: screen without it");
  int failed = 0;
  for (const auto& s : selected(a)) {
    Diagnostics diags;
    eval::Table t;
    if (!eval::load_table(dir + "/" + s.name + ".json", t, diags)) {
      diags.print(std::cerr);
      ++failed;
      continue;
    }
    eval::MeasureOptions o;
    o.max_load = a.max_load;
    o.progress = [](const std::string& line) { std::cerr << line << "\n"; };
    size_t planned = 0;
    auto candidates = eval::screen_candidates(s, diags);
    for (const auto& c : candidates) planned += c.values.size();
    if (a.plan) {
      std::cout << s.name << ": " << candidates.size() << " controls beyond the table, " << planned << " values\n";
      for (const auto& c : candidates) {
        std::cout << "  " << c.name << " (" << c.library << "):";
        for (const auto& v : c.values) std::cout << " " << v.value;
        std::cout << "\n";
      }
      continue;
    }
    std::cerr << s.name << ": " << planned << " values of controls beyond the table to screen\n";
    eval::Screen sc = eval::screen(s, t, dir + "/" + s.name + ".screen.json", o, diags);
    diags.print(std::cerr);
    if (diags.has_errors()) {
      ++failed;
      continue;
    }
    size_t kept = 0, values = 0, inert = 0;
    for (const auto& c : sc.controls) {
      size_t n = std::count_if(c.values.begin(), c.values.end(), [](const eval::ScreenedValue& v) { return v.inert; });
      kept += n > 0;
      values += c.values.size();
      inert += n;
    }
    std::cout << s.name << ": " << sc.controls.size() << " controls screened, " << kept << " inert at some value; "
              << inert << " of " << values << " values inert (tolerance " << sc.tolerance * 100 << "%)\n";
    if (sc.default_drifted())
      std::cerr << s.name << ": the default ran " << tuner::median(sc.default_samples) << " s in the screen against "
                << sc.table_default << " s in the table: the machine or the program changed since it was measured\n";
  }
  return failed ? kFindings : kOk;
}

// Analysis draws 1..N of each scenario, measured like a table's samples (resumable).
int run_draws(const EvalArgs& a) {
  int failed = 0;
  for (const auto& s : selected(a)) {
    Diagnostics d;
    auto draws = eval::draw_analyses(s, a.draw_analyses, a.reanalyse, d);
    d.print(std::cerr);
    if (static_cast<int>(draws.size()) < a.draw_analyses) ++failed;
    std::map<std::string, int> confirmed;
    for (const auto& g : draws)
      for (const auto& h : g.confirmed) ++confirmed[h];
    std::cout << s.name << ": " << draws.size() << " draws;";
    if (confirmed.empty()) std::cout << " nothing confirmed";
    for (const auto& [h, n] : confirmed) std::cout << " " << h << " " << n << "/" << draws.size();
    std::cout << "\n";
  }
  return failed ? kFindings : kOk;
}

int run_compare(const EvalArgs& a) {
  std::string dir = a.data.empty() ? eval::data_dir() : a.data;
  auto scenarios = selected(a);
  std::map<std::string, eval::Table> tables;
  Diagnostics diags;
  for (const auto& s : scenarios) {
    eval::Table t;
    if (eval::load_table(dir + "/" + s.name + ".json", t, diags)) tables[s.name] = std::move(t);
  }
  if (diags.has_errors()) throw UsageError(diags.str());
  for (const auto& t : a.tuners)
    if (std::find(eval::tuner_names().begin(), eval::tuner_names().end(), t) == eval::tuner_names().end())
      throw UsageError("unknown tuner '" + t + "'; use syspilot, random, optuna-tpe, optuna-cmaes or expert");
  for (int b : a.budgets)
    if (b < 1 || b > 1000) throw UsageError("--budgets: each budget must be 1..1000 runs, got " + std::to_string(b));
  eval::CompareOptions o;
  o.budgets = a.budgets;
  o.seeds = a.seeds;
  o.tuners = a.tuners;
  o.live = a.live;
  o.as_measured = a.as_measured;
  o.progress = [](const std::string& line) { std::cerr << line << "\n"; };
  // The peers' space beyond each table, where a screen was taken.
  std::map<std::string, eval::Screen> screens;
  for (const auto& s : scenarios) {
    std::string path = dir + "/" + s.name + ".screen.json";
    if (!std::filesystem::exists(path)) continue;
    eval::Screen sc;
    if (eval::load_screen(path, sc, diags)) screens[s.name] = std::move(sc);
  }
  if (diags.has_errors()) throw UsageError(diags.str());
  o.screens = &screens;
  bool refresh = a.reanalyse;
  // Every stored analysis draw (seed k replays with draw k mod n); --reanalyse draws one afresh.
  auto guidance = [&](const eval::Scenario& s) {
    Diagnostics d;
    std::vector<eval::Guidance> draws;
    if (!refresh) draws = eval::analysis_draws(s, d);
    if (draws.empty()) draws.push_back(eval::analyse(s, refresh, d));
    d.print(std::cerr);
    return draws;
  };
  eval::Comparison c = eval::compare_draws(scenarios, tables, o, guidance, diags);
  diags.print(std::cerr);
  c.freeze = eval::load_freeze();
  if (!a.report.empty()) {
    eval::write_report(c, a.report);
    std::cerr << "report written to " << a.report << "\n";
  }
  std::cout << eval::summary_table(c);
  return diags.has_errors() ? kFindings : kOk;
}

// The documents' generated blocks from the data: rewritten, or with --check compared (exit 1
// and the drifted blocks named when one differs).
int run_docs(const EvalArgs& a) {
  if (!a.scenarios.empty()) throw UsageError("--docs writes the figures of every scenario: drop --scenario");
  const std::string root = a.root.empty() ? std::string(checkout_dir()) : a.root;
  const std::string report_path = root + "/eval/report.md";
  std::ifstream in(report_path);
  if (!in) throw UsageError(report_path + ": cannot read (write it with syspilot eval --replay --report eval/report.md)");
  std::stringstream report;
  report << in.rdbuf();
  std::vector<eval::DocBlock> blocks;
  try {
    blocks = eval::document_blocks(selected(a), a.data.empty() ? eval::data_dir() : a.data, report.str());
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  auto drift = eval::update_documents(root, blocks, a.check);
  bool missing = false;
  for (const auto& d : drift) {
    std::cerr << d.file << ": " << d.block << ": " << d.why << "\n";
    missing |= d.why.rfind("markers missing", 0) == 0 || d.why.rfind("the document", 0) == 0;
  }
  if (a.check) {
    if (drift.empty()) std::cout << blocks.size() << " generated blocks agree with the data\n";
    return drift.empty() ? kOk : kFindings;
  }
  std::cout << blocks.size() - drift.size() << " blocks unchanged, " << drift.size() << " rewritten or missing\n";
  return missing ? kFindings : kOk;
}

CommandRegistration reg(70, [](CLI::App& app, Context& ctx) {
  auto args = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval", "Contention scenarios: measure their tables, compare tuners side by side");
  cmd->add_flag("--measure", args->measure, "Measure (or resume measuring) the scenarios' tables into eval/data");
  cmd->add_flag("--replay", args->replay, "Compare tuners by replaying the measured tables (the default)");
  cmd->add_flag("--live", args->live, "Compare tuners with real trials (a spot check; slow)");
  cmd->add_flag("--screen", args->screen,
                "Screen the env controls the scenarios' contracts offer beyond their tables (live runs beside the "
                "default; resumable) into eval/data/NAME.screen.json: the general-purpose tuners' space");
  cmd->add_option("--scenario", args->scenarios, "Only these scenarios (repeatable)");
  cmd->add_option("--budgets", args->budgets, "Budgets in runs")->delimiter(',');
  cmd->add_option("--seeds", args->seeds, "Seeds per tuner")->check(CLI::Range(1, 1000));
  cmd->add_option("--tuner", args->tuners, "Only these tuners (syspilot, random, optuna-tpe, optuna-cmaes, expert)");
  cmd->add_option("--repeats", args->repeats, "With --measure: samples per configuration")->check(CLI::Range(1, 50));
  cmd->add_option("--max-load", args->max_load, "With --measure and --screen: outside load (cores) above which a run is retried")
      ->check(finite_number())
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--plan", args->plan, "With --screen: print the controls and values it would screen; run nothing");
  cmd->add_option("--report", args->report, "Write the Markdown report (SVG plots beside it)");
  cmd->add_flag("--as-measured", args->as_measured,
                "Replay a table measured on another CPU count with the scenario built for that count");
  cmd->add_option("--draw-analyses", args->draw_analyses,
                  "Store N analysis draws per scenario (live; resumable, --reanalyse draws them all again)")
      ->check(CLI::Range(1, 50));
  cmd->add_flag("--reanalyse", args->reanalyse, "Run the analysis stage again instead of using eval/data/*.analysis.json");
  cmd->add_option("--data", args->data, "Folder of measured tables (default eval/data)");
  cmd->add_option("--scenarios-dir", args->scenario_dir, "Folder of scenarios (default eval/scenarios)");
  cmd->add_flag("--docs", args->docs,
                "Write the figures of README.md, docs/eval.md and docs/analysis.md from the scenarios, "
                "the analyses and eval/report.md");
  cmd->add_flag("--check", args->check, "With --docs: write nothing; exit 1 when a document differs from the data");
  cmd->add_option("--root", args->root, "With --docs: the checkout whose documents are written (default this one)");
  cmd->callback([args, &ctx] {
    bool draws = args->draw_analyses > 0;
    if (args->measure + args->replay + args->live + args->docs + args->screen + draws > 1)
      throw UsageError("choose one of --measure, --replay, --live, --docs, --screen and --draw-analyses");
    if ((args->check || !args->root.empty()) && !args->docs) throw UsageError("--check and --root go with --docs");
    if (args->plan && !args->screen) throw UsageError("--plan goes with --screen");
    if (args->as_measured && (args->measure || args->live || args->docs))
      throw UsageError("--as-measured goes with --replay");
    ctx.exit_code = args->measure  ? run_measure(*args)
                    : args->screen ? run_screen(*args)
                    : args->docs  ? run_docs(*args)
                    : draws       ? run_draws(*args)
                                  : run_compare(*args);
  });
});

}  // namespace
}  // namespace syspilot::cli
