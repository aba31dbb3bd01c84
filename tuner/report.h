// Tuning reports: Markdown with one headline speedup (the fresh re-measurement's, with its
// interval), the conditions of the session, the trials and the space, and an SVG plot beside it
// of every trial, the default and the best so far against runs spent, one colour per strategy.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/measure.h"
#include "tuner/search.h"

namespace syspilot::tuner {

struct ReportRun {
  std::string label;  // "syspilot", "random seed 3", ...
  TuneResult result;
  std::optional<Verification> verification;  // the fresh re-measurement of this run's best
};

// Where and when the session ran: what a reader needs to judge its figures.
struct RunConditions {
  std::string cpu_model;   // /proc/cpuinfo's model name ("" when unknown)
  int online_cpus = 0;
  double mem_total = 0;    // bytes
  std::optional<std::vector<double>> load_at_start;  // 1, 5 and 15 minute load averages
  std::string started;     // UTC, ISO-8601: 2026-12-03T09:41:07Z
  std::string version;     // syspilot's (the CMake project version)
  // The controls' variables the caller's environment already set (every trial inherits them).
  std::map<std::string, std::string> inherited;
};

// This machine, the load average and the time when this process started (before the analysis
// and the trials loaded the machine), and the variables of `environment` that the space's
// controls name: env controls, option carriers, the controls they fall back on and those their
// defaults read. The version is left to the caller (the command knows it).
RunConditions observe_conditions(const Space& space, const std::map<std::string, std::string>& environment);

struct ReportInput {
  std::string title = "Tuning report";
  std::vector<std::string> argv;
  Space space;
  std::vector<Guide> guides;
  std::vector<ReportRun> runs;  // the first is the headline's
  bool maximize = false;        // values were negated metrics
  std::string objective = "wall time (s)";
  RunConditions conditions;
  // What the command concluded from the headline run, when it got that far: the configuration
  // it exported (after minimisation), or "keep your defaults"; `minimise` says how the
  // minimisation went ("" when it did not run).
  struct Answer {
    bool keep_defaults = false;
    Config config;
    std::string minimise;
  };
  std::optional<Answer> answer;
  // Runs spread over a cluster's nodes: each node's default value (the first measured there)
  // and the node whose values the others' were scaled to. Empty for a local session.
  std::map<std::string, double> node_defaults;
  std::string reference_node;
};

// False for a query: an API control that reads a value instead of setting one
// (openblas_get_num_threads, omp_get_max_threads). Such names are no controls to search or
// show; the contract marks them by a parameter list without arguments (`api()`), which the
// space does not keep, so the name's `get` or `query` word decides.
bool is_setter(const std::string& control, const Space& space);

// The plot: x = runs spent; every trial a point at its median (failed ones a cross on the axis,
// capped ones a triangle at their lower bound), the default a dashed line and the best so far
// a step line, one colour per run; metrics are shown as measured (not negated).
std::string render_svg(const ReportInput& in);

// A Markdown table cell: pipes escaped and newlines folded, so that a value cannot split its row.
std::string md_cell(const std::string& s);

// The Markdown page; it links the plot by `svg_name`.
std::string render_markdown(const ReportInput& in, const std::string& svg_name);

// Writes PATH (Markdown) and the plot beside it (PATH without ".md" plus ".svg"). Returns the
// plot's path; throws std::runtime_error when a file cannot be written.
std::string write_report(const std::string& path, const ReportInput& in);

}  // namespace syspilot::tuner
