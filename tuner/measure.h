// The trial measurement driver: the live objective (a fresh process per run under a timeout,
// wall time or a metric from the output or a scoring command), and the interleaved fresh
// re-measurement that checks a reported speedup.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tuner/search.h"

namespace syspilot::tuner {

struct ObjectiveSpec {
  std::vector<std::string> argv;          // the application and its arguments
  double timeout_s = 60;                  // per run; the whole process group is killed after it
  std::string metric_regex;               // "": wall time; else the first match's first group (or the match) in stdout+stderr
  bool maximize = false;                  // the metric is better when larger (its value is negated)
  std::string score_cmd;                  // "": none; else `sh -c CMD` prints the score (see docs/tuner.md)
  std::map<std::string, std::string> env;  // extra environment for every run
  std::string shim;                       // preload shim for API controls ("" = shim_path())
};

// Runs the application once per evaluate() with the configuration applied (tuner/run.h).
// Every successful run reports its wall time in Measurement::walls, the cap's basis.
class LiveObjective : public Objective {
 public:
  LiveObjective(Space space, ObjectiveSpec spec);
  Measurement evaluate(const Config& c) override;
  // The run is killed at min(limit_s, timeout_s); killed at limit_s (below the timeout), it is
  // capped rather than failed.
  Measurement evaluate_within(const Config& c, double limit_s) override;
  // The last run's stderr tail, for failure reports.
  const std::string& last_output() const { return last_output_; }
  // The default configuration's stderr, against which a later run's is read for a setting the
  // library refused (rejected_setting()). A run in another process (a Slurm job) carries it over.
  const std::string& reference_output() const { return reference_stderr_; }
  void set_reference_output(std::string text) { reference_stderr_ = std::move(text); }

 private:
  Space space_;
  ObjectiveSpec spec_;
  std::string last_output_;
  std::string reference_stderr_;  // the default configuration's, for rejected_setting()
};

// The adaptive cap of the next run (SMAC's and irace's capping): factor x the incumbent's
// median wall time + slack_s. The incumbent is the best successful trial of `trials`, by the
// objective's value; the cap is in wall seconds whatever the objective is. limit_s is 0 (no
// cap: the objective's timeout alone) when factor <= 0 or no successful trial has wall times.
struct RunCap {
  double limit_s = 0;
  int incumbent = -1;       // index into the trials; -1: none
  double incumbent_s = 0;   // its median wall time
  double factor = 0, slack_s = 0;
};
RunCap run_cap(const std::vector<Trial>& trials, double factor, double slack_s);
// "capped at 1.9 s (3x the incumbent's 0.3 s + 1 s)".
std::string capped_text(const RunCap& cap);

// Folds one more run into a trial's measurement (tune()'s aggregation: the median of the
// successful runs, capped if one run was, every run charged; the nodes that ran it listed).
void add_run(Measurement& agg, const Measurement& one);

// Reads the objective from an application's output: the first line (each cut at 4 KiB) where
// `regex` matches a number (its first group, or the whole match without one); nullopt when
// no line does.
std::optional<double> read_metric(const std::string& output, const std::string& regex);

// This process's environment as a map: what a trial's child inherits before its controls apply.
std::map<std::string, std::string> inherited_environment();

// Interleaved fresh measurement of the reference against a candidate: R C R C ..., `pairs`
// each, after one unmeasured warm-up of each. speedup = median over pairs of R / C (for negated
// metrics, C / R); spread is the relative half-range of the per-pair ratios.
struct Verification {
  bool ok = false;
  std::string failure;
  double speedup = 0;
  double spread = 0;
  std::vector<double> reference, candidate;
};
Verification verify(Objective& objective, const Config& reference, const Config& candidate, int pairs = 5,
                    bool warm_up = true);

// Relative half-range of a sample around its median (0 for fewer than two values).
double relative_spread(const std::vector<double>& v);

}  // namespace syspilot::tuner
