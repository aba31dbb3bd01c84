// Tuning reports: Markdown with the trials, the best configuration and its speedup, and an SVG
// plot of the best-so-far value against runs spent, one line per strategy run.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "tuner/measure.h"
#include "tuner/search.h"

namespace syspilot::tuner {

struct ReportRun {
  std::string label;  // "syspilot", "random seed 3", ...
  TuneResult result;
};

struct ReportInput {
  std::string title = "Tuning report";
  std::vector<std::string> argv;
  Space space;
  std::vector<Guide> guides;
  std::vector<ReportRun> runs;
  std::optional<Verification> verification;  // the fresh re-measurement of the first run's best
  bool maximize = false;                     // values were negated metrics
  std::string objective = "wall time (s)";
};

// The plot: x = runs spent, y = best value so far (lower is better; metrics shown as measured).
std::string render_svg(const std::vector<ReportRun>& runs, const std::string& title, bool maximize = false,
                       const std::string& y_label = "best so far");

// The Markdown page; it links the plot by `svg_name`.
std::string render_markdown(const ReportInput& in, const std::string& svg_name);

// Writes PATH (Markdown) and the plot beside it (PATH without ".md" plus ".svg"). Returns the
// plot's path; throws std::runtime_error when a file cannot be written.
std::string write_report(const std::string& path, const ReportInput& in);

}  // namespace syspilot::tuner
