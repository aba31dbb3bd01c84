// Public interface of the evaluation suite: contention scenarios, their measured tables
// (exhaustive, interleaved, load-guarded), replay of trials from a table, tuners side by side
// at equal budgets, and the Markdown/SVG report.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lpcl/diagnostics.h"
#include "tuner/search.h"

namespace syspilot::eval {

using tuner::Config;

// One control of a scenario's measured space. A value "" means "not set" (the library's own
// default); every other value is applied the way `kind` says.
struct ControlSpec {
  std::string name;
  std::string library;              // contract name it belongs to
  std::string kind = "env";         // env | api (through the eval preload shim) | preload (LD_PRELOAD a library)
  std::vector<std::string> values;  // "" first when the unset state is part of the space
  // As scenario.json writes them, before build_for(): values may hold "{=EXPR}", and `ladder`
  // (an expression, "" for none) adds the machine's thread counts up to its value.
  std::vector<std::string> written;
  std::string ladder;
};

// A scenario as eval/scenarios/<name>/scenario.json describes it.
struct Scenario {
  std::string name;
  std::string dir;                    // eval/scenarios/<name>
  std::string program;                // file name under programs_dir(), or an absolute path (/usr/bin/python3)
  std::vector<std::string> args;      // "{scenario_dir}" in an argument is replaced by `dir`
  std::vector<std::string> libraries; // contract names the application composes
  Config user_default;                // what the user runs it with (the reference configuration)
  std::vector<ControlSpec> space;
  std::vector<std::string> expert;    // the hand-chosen subspace of the expert baseline
  double timeout_s = 15;
  bool negative_control = false;
  // "dev": the rules and the strategy were developed on it; "held-out": written after the
  // freeze named in eval/freeze.json, and never used to change a rule or the strategy.
  std::string group = "dev";
  std::string readme;                 // the README line: what a user wrote and why it contends
  // The machine the values, arguments and default were built for (build_for), and the
  // arguments and default as written.
  int ncpus = 0;
  std::vector<std::string> written_args;
  Config written_default;
};

// eval/scenarios in the source tree (SYSPILOT_EVAL_SCENARIOS overrides).
std::string scenarios_dir();
// Where the build put the scenario programs and the API shim (SYSPILOT_EVAL_PROGRAMS overrides).
std::string programs_dir();
// eval/data in the source tree (SYSPILOT_EVAL_DATA overrides).
std::string data_dir();

// The command line of one run: the program (programs_dir()'s, unless absolute) and its
// arguments with "{scenario_dir}" replaced.
std::vector<std::string> command_line(const Scenario& s);

// The freeze before the held-out scenarios (eval/freeze.json): the commit whose rules,
// strategy and corpus the held-out scenarios were written against, and the paths that hold
// them. `changed` says whether any of those paths differs now (git diff against the commit);
// unknown when git or the history is not at hand.
struct Freeze {
  std::string commit;
  std::string date;
  std::vector<std::string> paths;
  std::optional<bool> changed;
  std::string changed_note;  // the paths that changed, or why it is unknown
  // Freezes before this one, newest first: what became of the scenarios held out under each.
  struct Earlier {
    std::string commit, date, note;
  };
  std::vector<Earlier> earlier;
};
// Reads `path` (empty: eval/freeze.json) and checks the paths against the checkout. A missing
// file gives an empty commit.
Freeze load_freeze(const std::string& path = {});

// Reads every scenario.json under `dir`, sorted by name, built for this machine (MachineFacts::
// detect(), so SYSPILOT_NCPUS stands in for the CPU count) or for `m`. Problems go to diags
// (file:line unknown).
std::vector<Scenario> load_scenarios(const std::string& dir, Diagnostics& diags);
std::vector<Scenario> load_scenarios(const std::string& dir, Diagnostics& diags, const tuner::MachineFacts& m);

// Builds a scenario's space, arguments and default for machine `m` from what scenario.json
// wrote: "{=EXPR}" inside a value, an argument or a default becomes EXPR evaluated over the
// machine facts (ncpus, ncores, nnuma, ngpus, mem_total) by LPCL's evaluator, a whole number;
// a control's "ladder": "EXPR" appends the thread counts 1, 2, 4, ..., ncpus, 2 x ncpus up to
// EXPR (tuner::thread_ladder, the ladder contracts' thread counts get) to its listed values.
// Repeated values are dropped. Throws std::invalid_argument naming what does not evaluate.
void build_for(Scenario& s, const tuner::MachineFacts& m);

// Every configuration of the scenario's space (cross product; "" values are left out of the
// Config), in a fixed order. The user's default is one of them.
std::vector<Config> enumerate(const Scenario& s);
// Canonical form of a configuration for lookups: controls whose value is "" are dropped; the
// user's default values fill controls the configuration does not name.
Config normalise(const Scenario& s, const Config& c);
// The full assignment behind a normalised configuration (a table entry): every control of the
// space named, "" where the entry leaves it unset. Running a normalised entry as it stands
// would put the user's default back into the controls it unsets.
Config assignment(const Scenario& s, const Config& normalised);

// The search space the tuners get (explicit values only; "not set" is the default config).
tuner::Space search_space(const Scenario& s);
// The expert baseline's subspace: only the controls in Scenario::expert.
tuner::Space expert_space(const Scenario& s);

// What the child's environment becomes under `c`: variables to set and to unset.
struct Environment {
  std::map<std::string, std::string> set;
  std::vector<std::string> unset;
};
Environment environment(const Scenario& s, const Config& c);

// One configuration's measurements.
struct Entry {
  Config config;                     // normalised
  std::vector<double> samples;       // wall seconds of the successful runs
  std::vector<double> outside_load;  // cores of outside load during each kept run
  int failures = 0;
  std::string failure;               // last failure reason ("" when none)
  int discarded = 0;                 // runs thrown away by the load guard
  double median() const;             // 0 when no sample
  bool failed() const { return samples.empty() && failures > 0; }
};

// A measured table: the whole space of one scenario on one machine.
struct Table {
  std::string scenario;
  std::map<std::string, std::string> machine;  // nproc, model name, kernel, OPENBLAS_* inherited, ...
  std::string contracts_digest;                // sha256 of the corpus contracts used
  std::vector<std::string> contracts;          // the contract files the digest covers
  std::string measured_at;                     // UTC, last update
  std::vector<std::string> args;               // the program's arguments when measured
  int repeats = 0;                             // target samples per configuration
  double max_load = 0.3;                       // load guard threshold (cores)
  std::vector<Entry> entries;

  const Entry* find(const Config& normalised) const;
  Entry* find(const Config& normalised);
  // Lowest median over the successful entries (0 when none) and its entry.
  double best() const;
  const Entry* best_entry() const;
  // Relative noise: median over entries of relative_spread(samples).
  double noise() const;
  bool complete() const;  // every entry has `repeats` samples or has failed
};

bool load_table(const std::string& path, Table& t, Diagnostics& diags);
// Writes atomically (temporary file + rename) so that an interrupted measurement loses nothing.
void save_table(const std::string& path, const Table& t);

// Writes `text` to `path` through a temporary file and a rename: a reader sees the old file or
// the new one, never a part.
void write_atomically(const std::string& path, const std::string& text);
// The current time, UTC, as the tables record it (2026-12-06T08:16:00Z).
std::string utc_now();

// `v` with `digits` digits after the point, as the report writes figures.
std::string fixed(double v, int digits = 2);

// The machine description stored with every table.
std::map<std::string, std::string> describe_machine();
// sha256 over the contract files (sorted by name; name and content); files listed in `files`.
std::string contracts_digest(const std::string& corpus_dir, std::vector<std::string>* files = nullptr);
std::string corpus_dir();

struct MeasureOptions {
  int repeats = 3;
  double max_load = 0.3;    // discard a run taken while outside load exceeded this (cores)
  int load_retries = 2;     // then keep the run and record the load it saw
  std::uint64_t seed = 1;   // order of the interleaved rounds
  std::function<void(const std::string&)> progress;
};

// One run of the scenario under `c` (fresh process, timeout), with the outside load seen.
struct Run {
  bool ok = false;
  std::string failure;
  double wall_s = 0;
  double outside_load = 0;  // cores busy with other work meanwhile
};
Run run_once(const Scenario& s, const Config& c);
// The same under an environment given whole (a control beyond the space: screening).
Run run_environment(const Scenario& s, const Environment& env);
// run_environment() under the outside-load guard of MeasureOptions: a run taken while outside
// load exceeded max_load is retried (load_retries times, with back-off), then kept with the load
// it saw; each retried run is counted in `discarded` when given.
Run run_guarded(const Scenario& s, const Environment& env, const MeasureOptions& o, int* discarded = nullptr);

// Measures (or resumes measuring) the scenario's whole space into `path`: interleaved rounds,
// each configuration once per round in a shuffled order, the table saved after every round.
Table measure(const Scenario& s, const std::string& path, const MeasureOptions& o, Diagnostics& diags);

// Answers a trial from a measured table: one of that configuration's measured samples, drawn
// by a seeded generator, so replayed noise is the measured noise. Configurations outside the
// table fail with a clear reason. Under tune()'s cap, a sample longer than the cap (or a
// timeout longer than it) is capped and charged the cap, as a live run stopped there.
class ReplayObjective : public tuner::Objective {
 public:
  // `projected`: controls answered by projection (screened inert): dropped before the lookup.
  ReplayObjective(const Scenario& s, const Table& t, std::uint64_t seed, std::vector<std::string> projected = {});
  tuner::Measurement evaluate(const Config& c) override;
  tuner::Measurement evaluate_within(const Config& c, double limit_s) override;
  double simulated_seconds() const { return simulated_s_; }

 private:
  const Scenario& scenario_;
  const Table& table_;
  std::mt19937_64 rng_;
  std::vector<std::string> projected_;
  double simulated_s_ = 0;
};

// Runs real trials of a scenario (live mode).
class LiveObjective : public tuner::Objective {
 public:
  explicit LiveObjective(const Scenario& s) : scenario_(s) {}
  tuner::Measurement evaluate(const Config& c) override;

 private:
  const Scenario& scenario_;
};

// ---- the peers' space: screened controls ----------------------------------------------------

// The general-purpose tuners search what a user without contracts would give them: every
// env control of the contracts the scenario composes, at the domains the space builder gives
// them on the scenario's machine. A control the table does not vary is screened: each of its
// values runs once beside runs of the user's default, and a value whose run lies within the
// default's runs around it in time widened by the table's noise is inert. Replay answers an inert value by
// projection (the table's configuration without it); a value that is not inert cannot be
// answered, so the peers' domain leaves it out and the report says so.
struct ScreenedValue {
  std::string value;
  std::vector<double> samples;       // wall seconds
  std::vector<double> outside_load;  // cores of outside load during each run
  std::string failure;               // "" when it ran
  bool inert = false;
  // Index in Screen::default_samples of the default's run just before this value's run (-1:
  // not recorded): the band is that run and the next, the default's neighbours in time.
  int after_default = -1;
};
struct ScreenedControl {
  std::string name, library;
  std::vector<ScreenedValue> values;
};
struct Screen {
  std::string scenario;
  std::map<std::string, std::string> machine;
  std::string measured_at;
  std::vector<std::string> args;        // the program's arguments when screened
  std::vector<double> default_samples;  // the interleaved runs of the user's default
  std::vector<double> default_load;     // their outside load
  double tolerance = 0;                 // relative widening of the default's range
  double table_default = 0;             // the table's median of the default (seconds), for comparison
  // True when the screen's default runs lie outside the table's median widened by the
  // tolerance: the machine or the program changed since the table was measured.
  bool default_drifted() const;
  std::vector<ScreenedControl> controls;
  const ScreenedControl* find(const std::string& name) const;
};

// The controls beyond the table that the scenario's contracts offer (env controls, values
// discretised for the scenario's machine), in contract order, none of them screened yet.
// Contracts are the corpus' of the scenario's libraries and of its table's controls'.
std::vector<ScreenedControl> screen_candidates(const Scenario& s, Diagnostics& diags);
// <data>/<name>.screen.json; false (and why in diags) when missing or malformed.
bool load_screen(const std::string& path, Screen& out, Diagnostics& diags);
void save_screen(const std::string& path, const Screen& sc);
// Screens the candidates not screened yet in `path` (resumable, saved after each control),
// under the same outside-load guard as a table's runs. `t` is the scenario's table (its noise
// sets the tolerance; its default's median is recorded beside the screen's).
Screen screen(const Scenario& s, const Table& t, const std::string& path, const MeasureOptions& o, Diagnostics& diags);
// The verdict on one screened value: within [min(default) x (1 - tol), max(default) x (1 + tol)].
bool inert(const std::vector<double>& samples, const std::vector<double>& default_samples, double tolerance);
// The default's runs a value is judged against: the one before it and the one after it (a
// machine that drifts during a screen moves the band with it), or all of them when its place
// is not recorded.
std::vector<double> neighbours(const Screen& sc, const ScreenedValue& v);

// The peers' space: the table's controls at the table's values, then each screened control
// with its inert values. `projected` receives the screened controls kept (replay drops them).
tuner::Space peer_space(const Scenario& s, const Screen* sc, std::vector<std::string>* projected = nullptr);
// `c` without the projected controls.
Config project(const Config& c, const std::vector<std::string>& projected);

// ---- tuners side by side -------------------------------------------------------------------

// The tuners compared: syspilot, random, optuna-tpe, optuna-cmaes, expert.
const std::vector<std::string>& tuner_names();

struct CompareOptions {
  std::vector<int> budgets = {5, 10, 20, 50};
  int seeds = 20;
  std::vector<std::string> tuners;  // empty: all
  bool live = false;                // real trials instead of replay (spot check)
  // Replay a table measured on another CPU count with the scenario built for that count
  // (its space as measured); otherwise such a table is refused.
  bool as_measured = false;
  // Per scenario, its screen (the peers' space beyond the table); a scenario without one gives
  // the peers the table's space.
  const std::map<std::string, Screen>* screens = nullptr;
  std::function<void(const std::string&)> progress;
};

// One tuning session (a tuner, a seed) on one scenario.
struct Session {
  std::string tuner;
  std::uint64_t seed = 0;
  std::vector<double> best_by_run;  // index r: true (table) median of the incumbent after r+1 runs, / exhaustive best; 0 = none yet
  int runs = 0;                     // runs spent (profiling included)
  int profiling_runs = 0;           // runs spent before the search (analysis)
  int failed_trials = 0;             // capped ones not included
  int capped_trials = 0;             // stopped at tune()'s adaptive cap
  int trials = 0;
  int reference_runs = 0;           // runs of the user's default (the reference), profiling's included
  int repeat_runs = 0;              // second and later runs of a configuration
  int probe_runs = 0;               // profiling runs of other configurations (the analysis' probes)
  double tuning_seconds = 0;        // application time (measured or replayed) + tuner overhead
  std::string stop_reason;
  int draw = 0;                     // the analysis draw syspilot's session replayed with (0-based)
  std::string error;                // the tuner could not run ("" when it did)
  Config best;
};

struct ScenarioResult {
  std::string scenario;
  double exhaustive_best = 0;       // seconds
  double default_value = 0;         // seconds, the user's default
  Config best_config;               // normalised: what it sets
  std::vector<std::string> best_unsets;  // what the user exported that it unsets
  std::size_t configurations = 0;
  double noise = 0;
  bool negative_control = false;
  std::string group = "dev";
  std::string guides_note;          // what the analysis gave the syspilot tuner (the first draw)
  int draws = 0;                    // analysis draws the syspilot sessions replayed with
  // Per hypothesis id: in how many draws it was derived, and confirmed.
  std::map<std::string, std::pair<int, int>> confirmations;
  // What the general-purpose tuners searched: controls and configurations of the peers'
  // space, and how it was built (screened controls kept and left out, or not screened).
  std::size_t peer_controls = 0;
  std::uint64_t peer_configurations = 0;
  std::string peer_note;
  std::vector<Session> sessions;
};

struct Comparison {
  std::vector<int> budgets;
  int seeds = 0;
  bool live = false;
  std::string contracts_digest;     // shared by every table ("" when they disagree)
  // Per group (dev, held-out): the digest its tables share; a group whose tables disagree is
  // left out. Held-out tables are measured after the freeze, so the groups may differ.
  std::map<std::string, std::string> group_digests;
  std::vector<std::string> digest_notes;
  std::map<std::string, std::string> machine;
  std::vector<ScenarioResult> scenarios;
  Freeze freeze;                    // named in the held-out section
};

// Contract-derived guidance for the syspilot tuner on one scenario (from the analysis stage
// when it is available), and the runs that analysis spent.
// The analysis is drawn as `syspilot tune --budget 10` runs it: its extra pairs stop at
// tuner::analysis_run_cap(10) runs. A stored draw records the cap it ran under.
constexpr int kDrawBudget = 10;

struct Guidance {
  std::vector<tuner::Guide> guides;
  int profiling_runs = 0;  // every run the analysis made (default and probes)
  int default_runs = 0;    // of which runs of the user's default: they serve as the tuner's reference
  // The probing runs: each ran the application under a configuration (its env, "" = unset).
  // A probe that only touches measured controls is a trial the search starts with; the others
  // are runs spent before the search.
  struct Probe {
    Config env;
    int runs = 0;
  };
  std::vector<Probe> probes;
  std::string note;
  // The hypotheses the analysis derived and those it confirmed (ids); an analysis stored before
  // they were recorded gives its guides' ids for both.
  std::vector<std::string> hypotheses, confirmed;
  int max_runs = 0;  // the cap the analysis ran under (0: none, a draw stored before caps)
};
using GuidanceSource = std::function<Guidance(const Scenario&)>;
// Every stored analysis draw of a scenario, first draw first (empty: none).
using DrawsSource = std::function<std::vector<Guidance>(const Scenario&)>;

// The analysis stage on a scenario (composition from its binary and source, hypotheses from
// the corpus, a profile of the user's default): the confirmed hypotheses as guides, limited to
// the measured space, and the runs the profile spent. Kept in eval/data/<name>.analysis.json so
// that replays are reproducible; `refresh` analyses again (live runs).
Guidance analyse(const Scenario& s, bool refresh, Diagnostics& diags);

// Analysis draws: the analysis is a measurement (its verdicts rest on timed runs), so it is
// drawn several times like a table's samples. Draw 1 is <data>/<name>.analysis.json, draw K > 1
// <data>/<name>.analysis-K.json. analysis_draws() reads the stored draws 1, 2, ... up to the
// first missing one; draw_analyses() runs the analysis live for each of draws 1..n not stored
// yet (resumable; `refresh` draws them all again) and returns them all.
std::vector<Guidance> analysis_draws(const Scenario& s, Diagnostics& diags);
std::vector<Guidance> draw_analyses(const Scenario& s, int n, bool refresh, Diagnostics& diags);

Comparison compare(const std::vector<Scenario>& scenarios, const std::map<std::string, Table>& tables,
                   const CompareOptions& o, const GuidanceSource& guidance, Diagnostics& diags);
// The same with several analysis draws per scenario: seed k replays with draw (k - 1) mod n.
Comparison compare_draws(const std::vector<Scenario>& scenarios, const std::map<std::string, Table>& tables,
                         const CompareOptions& o, const DrawsSource& draws, Diagnostics& diags);

// ---- metrics and report ----------------------------------------------------------------------

// Median over seeds of the best found (relative to the exhaustive best, >= 1) within `budget` runs.
double median_best(const ScenarioResult& r, const std::string& tuner, int budget);
// Median over seeds of the runs needed to come within 5% of the exhaustive best (-1: not reached by median).
double median_runs_to_within(const ScenarioResult& r, const std::string& tuner, double within = 1.05);

// The summary table (Markdown) printed by `syspilot eval`.
std::string summary_table(const Comparison& c);
// The whole report; SVG plots are written beside it (`<report stem>-<scenario>.svg`).
std::string write_report(const Comparison& c, const std::string& path);
// Best-so-far vs runs, median and spread (quartiles) over seeds, one line per tuner.
std::string convergence_svg(const ScenarioResult& r, const std::vector<std::string>& tuners, int max_runs);

// ---- documents -------------------------------------------------------------------------------

// A block of a committed document that `syspilot eval --docs` writes from the data, between
// "<!-- generated by syspilot eval --docs: NAME -->" and "<!-- end of generated NAME -->".
struct DocBlock {
  std::string file;  // relative to the checkout: README.md, docs/eval.md, docs/analysis.md
  std::string name;
  std::string text;  // the lines between the markers
};

// Every generated block: the scenarios' spaces (from scenario.json), their analyses (from
// <data>/<name>.analysis.json) and the replayed summary per group (from the report that
// `syspilot eval --replay --report eval/report.md` wrote from the tables). Throws
// std::runtime_error when a file it needs is missing or malformed.
std::vector<DocBlock> document_blocks(const std::vector<Scenario>& scenarios, const std::string& data_dir,
                                      const std::string& report_markdown);

// A block whose committed text differs from the generated one, or whose markers are missing.
struct DocDrift {
  std::string file, block, why;
};

// Compares each block with the document under `root`; unless `check_only`, rewrites the
// drifted ones in place (only between their markers: the rest of the document is kept).
// Blocks whose markers are missing are reported and never inserted.
std::vector<DocDrift> update_documents(const std::string& root, const std::vector<DocBlock>& blocks, bool check_only);

}  // namespace syspilot::eval
