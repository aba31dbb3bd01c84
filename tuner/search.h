// Public interfaces of the search: the space of configurations, one run's measurement, the
// objective that produces it, the strategies that choose the next configuration, and tune().
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace syspilot::tuner {

// A configuration: control name -> value text. A control absent from a Config is left as the
// application would get it (not set), so the empty Config is the default configuration.
using Config = std::map<std::string, std::string>;

// "A=1 B=2" (sorted by name); "default" for the empty configuration.
std::string to_string(const Config& c);

// The machine facts LPCL expressions may name: ncpus, ncores, nnuma, ngpus, mem_total.
struct MachineFacts {
  int ncpus = 1;          // CPUs this process may run on (affinity mask)
  int ncores = 1;         // same as ncpus on these VMs (no SMT siblings reported)
  int nnuma = 1;
  int ngpus = 0;
  double mem_total = 0;   // bytes
  // This machine. SYSPILOT_NCPUS=N stands in for the CPU (and core) count: the space, its
  // thread-count domains and the candidates are then built as for an N-CPU machine, while
  // measurements still run on this one.
  static MachineFacts detect();
  // Value of a fact by its LPCL name; nullopt for an unknown name.
  std::optional<double> get(const std::string& name) const;
  // Every fact by its LPCL name: the names an expression over the machine may use.
  std::map<std::string, double> names() const;
};

// One searchable control.
struct Param {
  std::string name;                  // the contract's control name (OMP_NUM_THREADS, openblas_set_num_threads, ...)
  std::vector<std::string> values;   // discretised domain, in domain order (neighbours are adjacent)
  std::string default_value;         // what the library uses when the control is not set ("" when unknown)
  // The contract's default expression as written (`OPENBLAS_NUM_THREADS ?? OMP_NUM_THREADS ??
  // ncpus`): a control it names is one this control falls back on.
  std::string default_expr;
  bool thread_count = false;         // sets cpu.threads: its domain is the machine's ladder
  // Controls read in this one's place while it is unset, nearest first (contracts'
  // `fallback_for`, transitively): OPENBLAS_NUM_THREADS falls back on GOTO_NUM_THREADS, then
  // OMP_NUM_THREADS. Setting one of them changes this control's effective value.
  std::vector<std::string> falls_back_on;
  enum class Kind { Env, Api, Option } kind = Kind::Env;
  std::string library;               // contract name it belongs to
  // Kind::Api: called through the preload shim with one int argument (see tuner/shim/).
  // Kind::Option: a key inside a carrier variable: carrier=MALLOC_CONF, item_sep=",", kv_sep=":".
  std::string carrier, item_sep, kv_sep;
  bool numeric = false;              // every value parses as a number (orders and neighbours make sense)
};

// The search space: controls plus constraints (LPCL expression text over control names and
// machine facts, e.g. "OMP_NUM_THREADS * OPENBLAS_NUM_THREADS <= ncores").
struct Space {
  std::vector<Param> params;
  std::vector<std::string> constraints;
  // Controls that set one resource of one library, an API setter among them
  // (openblas_set_num_threads with OPENBLAS_NUM_THREADS): a configuration gives those of a
  // group it sets one value (tuner/consistency.h).
  std::vector<std::vector<std::string>> one_value;

  const Param* find(const std::string& name) const;
  // Value of a control under c: its value in c, else its default ("" when unknown).
  std::string value(const Config& c, const std::string& name) const;
  // True when every constraint holds (a constraint naming a control without a known value holds).
  bool admits(const Config& c, const MachineFacts& m) const;
  // Number of configurations in the cross product (saturates at UINT64_MAX).
  std::uint64_t size() const;
};

// Evaluates an LPCL expression over control values and machine facts. Returns nullopt when a
// name has no value or the text does not parse; `error` (optional) says which.
std::optional<double> evaluate_expr(const std::string& text, const std::map<std::string, double>& names,
                                    std::string* error = nullptr);

// One run of a configuration (from Objective::evaluate) or, aggregated by tune(), a trial.
// A run stopped by tune()'s adaptive cap is `capped`: ok is false (to the strategies it is a
// failed trial, never the incumbent), failure says "capped at 1.9 s (3x the incumbent's 0.3 s
// + 1 s)", and value = lower_bound, the seconds it had run when stopped.
struct Measurement {
  bool ok = false;
  std::string failure;   // why it failed: "exit 3", "signal 11 (SIGSEGV)", "timeout after 20 s", "no metric"
  double value = 0;      // objective, lower is better (maximised metrics are negated); capped: lower_bound
  double spread = 0;     // relative: half the range of the repeats over their median (0 for one run)
  int repeats = 0;       // runs spent (every run counts against the budget, failed ones too)
  std::vector<double> samples;  // one value per successful run
  std::vector<double> walls;    // wall time (s) of each successful run, where the objective knows it:
                                // the cap's basis whatever the objective (a metric, a score)
  bool capped = false;   // a run was stopped at the cap: its time is at least lower_bound
  double lower_bound = 0;  // seconds (wall time) a capped run had run when stopped
  // The machine that ran it, where runs are spread over several (a cluster's node; "" for this
  // machine). A trial run on several lists them comma-separated.
  std::string node;
};

// Produces one run's measurement of a configuration. Live objectives run the application as a
// fresh process (tuner/measure.h); a replay objective answers from a measured table.
class Objective {
 public:
  virtual ~Objective();
  // Runs `c` once. The result has repeats == 1.
  virtual Measurement evaluate(const Config& c) = 0;
  // Runs `c` once, stopped after limit_s seconds of wall time (<= 0: no limit but the
  // objective's own timeout); a run so stopped comes back capped, lower_bound = limit_s. This
  // default runs it whole: tune() then caps a run whose reported wall time exceeds the limit.
  virtual Measurement evaluate_within(const Config& c, double limit_s);
  // What the next run is for, told by tune() before each run: an objective that keeps a ledger
  // of its runs (the Slurm executor records each job with its trial) or that may spend a run of
  // its own (a node's reference) reads it. tune() ends with RunPlan{}: later runs (the
  // re-measurement, the minimisation) belong to no trial. This default ignores it.
  struct RunPlan {
    int trial = -1;         // index of the trial the run is for; -1: none
    int runs_before = 0;    // the trial's runs_before
    int runs_left = -1;     // budget left before this run, the run included; -1: no budget
    std::string strategy;   // who proposed the configuration
  };
  virtual void plan(const RunPlan& next);
  // Several runs at once (tune()'s batches under TuneOptions::parallel): one measurement per
  // run, in order. An objective that can run them side by side (the Slurm executor) overrides
  // it; this default runs them one after another, each after its plan().
  struct BatchRun {
    Config config;
    double limit_s = 0;   // as evaluate_within()'s
    RunPlan plan;
  };
  virtual std::vector<Measurement> evaluate_batch(const std::vector<BatchRun>& runs);
};

struct Trial {
  int index = 0;          // 0-based, in order of measurement
  Config config;
  Measurement m;          // aggregated over its repeats
  std::string strategy;   // name of the strategy that proposed it
  int runs_before = 0;    // budget spent before this trial started
};

// A hypothesis as the search sees it: which controls act on it, the constraint it implies,
// and the remedy assignments its rule suggests (tuner/analyze.h converts verdicts to this).
struct Guide {
  std::string id;                      // hypothesis id
  std::string kind;                    // nested_oversubscription | corun_oversubscription | spin_interference |
                                       // affinity_collision | allocator_contention | gpu_exclusivity | bandwidth_saturation
  std::vector<std::string> controls;   // control names in the space
  std::string constraint;              // LPCL expression text; may be empty
  std::vector<Config> remedies;        // partial configurations the rule suggests, e.g. {OMP_WAIT_POLICY: passive}
  double weight = 1;                   // confidence of the verdict, ranks guides
};

struct StrategyContext {
  std::vector<Guide> guides;  // confirmed hypotheses, strongest first
  MachineFacts machine;
  std::uint64_t seed = 1;
  double noise = 0.05;        // relative noise expected before any repeat is seen
  // The libraries the analysis' hypotheses involved, whatever their verdicts (contract names,
  // app-threads); empty when there was no analysis or it derived no hypothesis.
  std::set<std::string> hypothesised;
};

class Strategy {
 public:
  virtual ~Strategy();
  virtual std::string name() const = 0;
  // The next configuration to measure, given every trial so far (failed ones included);
  // nullopt when the strategy has nothing left worth measuring.
  virtual std::optional<Config> next(const std::vector<Trial>& history) = 0;
};

// name: syspilot | random | grid | optuna-tpe | optuna-cmaes. Throws std::invalid_argument for
// an unknown name and std::runtime_error when the strategy cannot start (Optuna missing).
std::unique_ptr<Strategy> make_strategy(const std::string& name, const Space& space, const StrategyContext& ctx);
const std::vector<std::string>& strategy_names();

// Budget accounting, identical for every strategy: the budget counts runs of the application
// (every repeat of every trial, failed runs included). The default configuration is measured
// first as the reference and counts too. Repeats are adaptive: a trial gets one more run while
// its best-case value is within the noise of the incumbent, up to max_repeats.
struct TuneOptions {
  int budget = 12;
  int max_repeats = 3;
  double noise = 0.05;            // prior relative noise until repeats measure it
  std::vector<Trial> resumed;     // trials already finished (a resumed session): not rerun
  int spent = 0;                  // runs charged that are no trial (an analysis' runs no trial stands for)
  // Adaptive capping (SMAC, irace): once a trial has succeeded, every run is stopped after
  // cap_factor x the incumbent's median wall time + cap_slack_s (the objective's own timeout
  // still bounds it). The stopped run is charged; its trial is capped. cap_factor <= 0: none.
  double cap_factor = 3;
  double cap_slack_s = 1;
  // Intensification: a leader measured once (an analysis' probe run, a trial whose repeats the
  // budget cut short) is run again once this many later trials have failed to beat it; and a
  // strategy that has nothing left to propose leaves the rest of the budget to re-measuring
  // the leaders within the noise of the incumbent, up to max_repeats runs each.
  int remeasure_after = 3;
  // Configurations measured at once (Objective::evaluate_batch). Above 1 the strategy is asked
  // for a batch by the constant liar (Ginsbourger et al.): each configuration in flight joins
  // the history it is asked with as a provisional trial valued at the incumbent's value, so that
  // any strategy proposes distinct ones unchanged. A batch leaves room in the budget for a
  // second run of each of its runs (an objective's own reference run), so none is exceeded.
  int parallel = 1;
  std::function<void(const Trial&)> on_trial;                  // after each finished trial (persist it)
  std::function<void(const std::string& line)> progress;       // one line per trial
};

struct TuneResult {
  std::vector<Trial> trials;
  int best = -1;              // index into trials; -1 when no trial succeeded
  int reference = -1;         // index of the default configuration's trial
  int runs = 0;               // runs spent
  int capped = 0;             // trials stopped at the cap (measured in this call or resumed)
  double noise = 0;           // relative noise estimated from the repeats
  double speedup = 0;         // reference value / best value (for maximised metrics: best / reference)
  double speedup_spread = 0;  // relative, from both trials' spreads
  std::string stop_reason;    // "budget" | "strategy finished" | "converged"
};

TuneResult tune(Strategy& strategy, Objective& objective, const TuneOptions& options);

// Median of a sample (0 for an empty one).
double median(std::vector<double> v);

// A configuration measured again (tune() re-measures a leader measured once) gets a newer
// record holding every run of it: the newest record of a configuration stands for it, and
// an older one is superseded. Every judgement of the best reads only the standing records.
bool superseded(const std::vector<Trial>& trials, size_t i);
std::vector<Trial> standing(const std::vector<Trial>& trials);

}  // namespace syspilot::tuner
