// `syspilot tune -- APP ARGS...`: analyse the application, search the controls its confirmed
// hypotheses name, print the best configuration as shell assignments, keep the session in the
// store so that it can be resumed. Options are checked against the composition before anything
// runs; --dry-run stops there; Ctrl-C marks the session interrupted.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <pthread.h>
#include <regex>
#include <set>
#include <thread>
#include <unistd.h>
#include <sstream>

#include "cli/checks.h"
#include "cli/command.h"
#include "cli/tune_validate.h"
#include "store/store.h"
#include "tuner/analyze.h"
#include "tuner/consistency.h"
#include "tuner/measure.h"
#include "tuner/minimise.h"
#include "tuner/report.h"
#include "tuner/run.h"
#include "tuner/session.h"
#include "tuner/slurm.h"
#include "tuner/space.h"

namespace syspilot::cli {
namespace {

using namespace syspilot::tuner;

// The trials that ran the program. A strategy that proposes a configuration already measured
// gets the stored answer, kept in the result at no cost (measure.cpp), and no trial of the
// session's record: counting those made `--compare` print 55 trials beside 8 runs.
size_t measured_trials(const TuneResult& res) {
  return static_cast<size_t>(
      std::count_if(res.trials.begin(), res.trials.end(), [](const Trial& t) { return t.m.repeats > 0; }));
}

struct TuneArgs {
  int budget = 12;
  bool budget_given = false;  // --budget on the command line (a resumed session keeps its own otherwise)
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
  double min_gain = 0.03;  // smallest speedup worth exporting, above 1 (0.03: 1.03x)
  int max_repeats = 3;
  std::vector<std::string> compare;
  bool dry_run = false;
  bool json = false;           // the result as one JSON document on stdout
  bool no_minimise = false;
  int minimise_runs = 16;      // most runs the minimisation of the result may spend
  std::string executor = "local";  // local | slurm (docs/cluster.md)
  int parallel = 1;            // runs in flight at once (slurm)
  std::string partition;
  std::vector<std::string> slurm_args;
  std::string slurm_dir;       // "": <db>.slurm/session-<id>
  std::vector<std::string> argv;
};

// Ctrl-C (SIGINT) or SIGTERM while tune runs: a thread waits for the signal, which every other
// thread of this process has blocked. It stops the main thread at its next run boundary (the
// run it was in comes back killed and is not stored as a trial), kills the running runs'
// process groups, marks the session "interrupted" in the store, says how to resume it and exits
// 128 + the signal (130 for SIGINT).
class Interruption {
 public:
  explicit Interruption(std::string db) : db_(std::move(db)) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
    watcher_ = std::thread([this, set] { watch(set); });
  }
  ~Interruption() {
    checkpoint();
    stopping_ = true;
    pthread_kill(watcher_.native_handle(), SIGTERM);
    watcher_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  Interruption(const Interruption&) = delete;
  Interruption& operator=(const Interruption&) = delete;

  // The session a stop marks interrupted; `finished`: its search is over and stored (the closing
  // re-measurement is not part of it), so a stop leaves it as it is.
  void session(std::int64_t id, bool finished = false) {
    finished_ = finished;
    id_ = id;
  }
  bool interrupted() const { return interrupted_; }
  // The main thread between runs: once interrupted it waits here for the watcher to end the
  // process, so that it neither starts another run nor stores the killed one.
  void checkpoint() {
    if (!interrupted_) return;
    held_ = true;
    for (;;) ::pause();
  }

 private:
  void watch(sigset_t set) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0 || stopping_) return;
    interrupted_ = true;
    // Runs the main thread starts before it reaches a checkpoint are killed as they come (the
    // analysis' probes, one after another); it gets there within a few killed runs.
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    do {
      kill_runs();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (!held_ && std::chrono::steady_clock::now() < until);
    kill_runs();
    std::string line;
    if (std::int64_t id = id_; id > 0 && finished_) {
      release(id);
      line = "tune: interrupted after session " + std::to_string(id) + " was finished and stored; see it with: " +
             "syspilot sessions show " + std::to_string(id) + " --db " + shell_quote(db_) + "\n";
    } else if (id > 0) {
      try {
        SessionStore(db_).finish(id, "interrupted");
      } catch (const std::exception& e) {
        std::fprintf(stderr, "tune: could not mark session %lld interrupted: %s\n", static_cast<long long>(id),
                     e.what());
      }
      release(id);
      line = "tune: interrupted; resume with: syspilot tune --resume " + std::to_string(id) + " --db " +
             shell_quote(db_) + "\n";
    } else {
      line = "tune: interrupted before a session was stored; nothing to resume\n";
    }
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    std::_Exit(128 + sig);
  }

  // The sessions this process owns are free to resume once it is gone (a process killed
  // without this leaves them to whoever finds it dead).
  void release(std::int64_t id) {
    try {
      SessionStore(db_).release_owned();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tune: could not release session %lld: %s\n", static_cast<long long>(id), e.what());
    }
  }

  // The runs are this process' children, each leading its own process group (tuner/run.cpp);
  // a child in this process' group (the Optuna bridge) ends with it.
  static void kill_runs() {
    const pid_t self = ::getpid();
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string name = e.path().filename().string();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in(e.path() / "stat");
      std::string stat;
      std::getline(in, stat);
      auto close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream fields(stat.substr(close + 1));
      std::string state;
      long ppid = 0, pgrp = 0;
      fields >> state >> ppid >> pgrp;
      const long pid = std::stol(name);
      if (ppid == self && pgrp == pid) ::kill(static_cast<pid_t>(-pid), SIGKILL);
    }
  }

  std::string db_;
  sigset_t old_{};
  std::thread watcher_;
  std::atomic<std::int64_t> id_{0};
  std::atomic<bool> interrupted_{false}, held_{false}, stopping_{false}, finished_{false};
};

// The live objective behind an interruption checkpoint on each side of every run.
class InterruptibleObjective final : public Objective {
 public:
  InterruptibleObjective(Objective& inner, Interruption& stop) : inner_(inner), stop_(stop) {}
  void plan(const RunPlan& next) override { inner_.plan(next); }
  std::vector<Measurement> evaluate_batch(const std::vector<BatchRun>& runs) override {
    stop_.checkpoint();
    auto ms = inner_.evaluate_batch(runs);
    stop_.checkpoint();
    return ms;
  }
  Measurement evaluate(const Config& c) override {
    stop_.checkpoint();
    Measurement m = inner_.evaluate(c);
    stop_.checkpoint();
    return m;
  }
  Measurement evaluate_within(const Config& c, double limit_s) override {
    stop_.checkpoint();
    Measurement m = inner_.evaluate_within(c, limit_s);
    stop_.checkpoint();
    return m;
  }

 private:
  Objective& inner_;
  Interruption& stop_;
};

// The live objective, whose failure "no metric" says when the output it read was cut.
class DroppedOutputObjective final : public Objective {
 public:
  explicit DroppedOutputObjective(Objective& inner) : inner_(inner) {}
  void plan(const RunPlan& next) override { inner_.plan(next); }
  Measurement evaluate(const Config& c) override { return noted(inner_.evaluate(c)); }
  Measurement evaluate_within(const Config& c, double limit_s) override {
    return noted(inner_.evaluate_within(c, limit_s));
  }

 private:
  static Measurement noted(Measurement m) {
    m.failure = note_dropped_output(m.failure);
    return m;
  }
  Objective& inner_;
};

// What the whole command may still run and how long a run takes: the plan's estimate and each
// progress line's ETA.
struct RunClock {
  int planned = 0;               // upper bound of the command's runs
  int done = 0;                  // runs so far, the analysis' included
  std::vector<double> seconds;   // wall time of the runs timed so far
  bool announced = false;

  // "about 14 s more (43 runs at most x median 0.32 s)"; "" before any run was timed.
  std::string estimate() const {
    if (seconds.empty()) return "";
    const double med = median(seconds);
    const int left = std::max(0, planned - done);
    std::ostringstream os;
    os << "about " << std::lround(left * med) << " s more (" << left << " runs at most x median " << std::setprecision(2)
       << med << " s)";
    return os.str();
  }
  std::string eta() const {
    if (seconds.empty()) return "";
    return "eta ~" + std::to_string(std::lround(std::max(0, planned - done) * median(seconds))) + " s";
  }
  // Once, after the first run that was timed.
  void announce() {
    if (announced || seconds.empty()) return;
    announced = true;
    std::cerr << "tune: estimated time: " << estimate() << "\n";
  }
};

// Times every run of the objective it wraps.
class ClockedObjective final : public Objective {
 public:
  ClockedObjective(Objective& inner, RunClock& clock) : inner_(inner), clock_(clock) {}
  void plan(const RunPlan& next) override { inner_.plan(next); }
  std::vector<Measurement> evaluate_batch(const std::vector<BatchRun>& runs) override {
    // A batch's runs ran side by side: each is taken to have cost its share of the wait.
    auto t0 = std::chrono::steady_clock::now();
    auto ms = inner_.evaluate_batch(runs);
    const double each = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                        static_cast<double>(std::max<size_t>(1, ms.size()));
    for (const auto& m : ms) {
      clock_.seconds.push_back(each);
      clock_.done += std::max(1, m.repeats);
    }
    clock_.announce();
    return ms;
  }
  Measurement evaluate(const Config& c) override { return timed([&] { return inner_.evaluate(c); }); }
  Measurement evaluate_within(const Config& c, double limit_s) override {
    return timed([&] { return inner_.evaluate_within(c, limit_s); });
  }

 private:
  template <typename F>
  Measurement timed(F run) {
    auto t0 = std::chrono::steady_clock::now();
    Measurement m = run();
    clock_.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    clock_.done += std::max(1, m.repeats);
    clock_.announce();
    return m;
  }
  Objective& inner_;
  RunClock& clock_;
};

SpaceEdits parse_edits(const TuneArgs& a) {
  SpaceEdits e;
  auto name_of = [](const std::string& option, const std::string& n) {
    if (!control_name(n))
      throw UsageError(option + " '" + n + "': a control's name is an identifier (letters, digits, _; dots between " +
                       "the parts of an API control's member), e.g. OMP_NUM_THREADS");
    return n;
  };
  for (const auto& p : a.pin) {
    auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("--pin '" + p + "': expected NAME=VALUE, e.g. --pin OMP_NUM_THREADS=2");
    e.pin[name_of("--pin", p.substr(0, eq))] = p.substr(eq + 1);
  }
  for (const auto& p : a.add) {
    auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == p.size())
      throw UsageError("--add '" + p + "': expected NAME=V1,V2,..., e.g. --add MALLOC_ARENA_MAX=1,2,4");
    std::vector<std::string> vals;
    std::stringstream ss(p.substr(eq + 1));
    for (std::string v; std::getline(ss, v, ',');)
      if (!v.empty() && std::find(vals.begin(), vals.end(), v) == vals.end()) vals.push_back(v);
    if (vals.empty()) throw UsageError("--add '" + p + "': no values; expected NAME=V1,V2,...");
    e.add[name_of("--add", p.substr(0, eq))] = vals;
  }
  for (const auto& d : a.drop) e.drop.push_back(name_of("--drop", d));
  return e;
}

// Resolves APP the way execvp would, so that composition reads the right binary.
std::string resolve_binary(const std::string& app) {
  std::string found = tuner::find_on_path(app);
  return found.empty() ? app : found;
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
  // Metrics hundreds of orders of magnitude apart overflow the ratio: no figure means anything.
  if (!std::isfinite(speedup)) return "n/a (the metrics are too far apart for a ratio)";
  if (!std::isfinite(spread)) return fixed(speedup) + "x (spread unknown)";
  return fixed(speedup) + "x +-" + pct(spread);
}

// Verification runs `--verify N` adds after the budget: N interleaved pairs and a warm-up of each.
// The strategy `name` over `space`; an unknown name is a usage error.
std::unique_ptr<Strategy> strategy_or_usage(const std::string& name, const Space& space, const std::vector<Guide>& gs,
                                            const MachineFacts& machine, std::uint64_t seed,
                                            const std::set<std::string>& hypothesised = {}) {
  StrategyContext ctx;
  ctx.guides = gs;
  ctx.hypothesised = hypothesised;
  ctx.machine = machine;
  ctx.seed = seed;
  try {
    return make_strategy(name, space, ctx);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

int verification_runs(int pairs) { return pairs > 0 ? 2 * pairs + 2 : 0; }

int minimise_cap(const TuneArgs& a) { return a.no_minimise || !a.compare.empty() ? 0 : a.minimise_runs; }

// Where a session ran, as the session list shows it: the host and what the space was sized for.
nlohmann::json machine_json(const MachineFacts& m) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  return {{"host", std::string(host)}, {"ncpus", m.ncpus}, {"ncores", m.ncores}, {"nnuma", m.nnuma},
          {"ngpus", m.ngpus}, {"mem_total", m.mem_total}};
}

// A name shared by the sessions of one `--compare` run: the time and this process.
std::string compare_group() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now).count()) + "-" +
         std::to_string(getpid());
}

// The runs one strategy may take at most, and what they are for: "at most 33 (the budget's 12,
// ...; 12 to re-measure ...; at most 16 to minimise the result)". The analysis always takes its
// first default run and one run per probe, even past the budget.
int planned_runs(const TuneArgs& a, int analysis_runs) {
  return std::max(a.budget, analysis_runs) + verification_runs(a.verify) + minimise_cap(a);
}

std::string plan_text(const TuneArgs& a, const std::string& strategy, int analysis_runs, bool known) {
  std::ostringstream out;
  out << "at most " << planned_runs(a, analysis_runs) << " (the budget's " << a.budget;
  if (strategy == "syspilot") {
    out << ", the analysis' ";
    if (known) out << analysis_runs << " or more ";
    out << "profiling runs (a default run, one per probe) included";
  }
  out << "; " << verification_runs(a.verify) << " to re-measure the default against the best";
  if (a.verify > 0) out << ": " << a.verify << " interleaved pairs and a warm-up of each";
  if (minimise_cap(a) > 0) out << "; at most " << minimise_cap(a) << " to minimise the result";
  out << ")";
  return out.str();
}

// Where the shim an export names comes from, for the note beside LD_PRELOAD.
std::string shim_origin(const std::string& shim) {
  if (shim.empty()) return "missing";
  if (const char* s = std::getenv("SYSPILOT_SHIM"); s && *s) return "SYSPILOT_SHIM";
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::equivalent(self.parent_path().parent_path() / "lib/syspilot/libsyspilot_shim.so", shim, ec))
    return "installed";
  return "build tree";
}

// --dry-run: what a session would search and try, from the composition and its hypotheses
// alone (profiling runs the application, so every hypothesis stays undecided), without a run.
int dry_run(const TuneArgs& a, const Composition& comp, const SpaceEdits& edits, const MachineFacts& machine,
            const std::vector<std::string>& strategies) {
  Diagnostics diags;
  std::vector<Hypothesis> hs = hypothesize(comp, diags);
  std::vector<Guide> gs = guides(hs, true);
  Space space = build_space(contracts_of(comp), gs, a.space == "all" ? SpaceScope::All : SpaceScope::Hypotheses,
                            edits, machine, diags);
  space.one_value = one_value_groups(contracts_of(comp), space);
  for (const auto& d : diags.items())
    if (d.severity != Severity::Note) std::cerr << d.str() << "\n";
  std::set<std::map<std::string, std::string>> probes;
  for (const auto& h : hs)
    if (!h.probe.empty()) probes.insert(h.probe);

  std::ostream& out = std::cout;
  out << "# dry run of syspilot tune: nothing was run\n";
  out << "composition: " << comp.libraries.size() << " libraries, " << comp.contracts.size() << " contracts";
  for (size_t i = 0; i < comp.contracts.size(); ++i)
    out << (i ? ", " : " (") << comp.contracts[i].contract.name << (i + 1 == comp.contracts.size() ? ")" : "");
  out << "\n";
  if (hs.empty())
    out << "hypotheses: none\n";
  else
    out << "hypotheses: " << hs.size() << ", undecided (the profile that confirms or refutes them runs the "
        << "application: skipped; their controls are searched as undecided)\n";
  for (const auto& h : hs) {
    out << "  " << h.id;
    for (size_t i = 0; i < h.controls.size(); ++i) out << (i ? ", " : "  controls ") << h.controls[i];
    out << "\n";
  }
  if (space.params.empty())
    throw NothingToDo("nothing to tune: no hypothesis of " + a.argv[0] +
                      " names a control; try --space all, or name controls with --add NAME=V1,V2");
  out << "space: " << space.params.size() << " controls, " << space.size() << " configurations\n";
  for (const auto& p : space.params) {
    out << "  " << p.name << " (" << (p.library.empty() ? "?" : p.library) << "):";
    for (const auto& v : p.values) out << " " << v;
    if (!p.default_value.empty()) out << "  [default " << p.default_value << "]";
    out << "\n";
  }
  out << "constraints:" << (space.constraints.empty() ? " none" : "") << "\n";
  for (const auto& c : space.constraints) out << "  " << c << "\n";
  for (const auto& g : space.one_value) {
    out << "one value:";
    for (size_t i = 0; i < g.size(); ++i) out << (i ? " = " : " ") << g[i];
    out << " (they set one resource of one library)\n";
  }

  for (const auto& name : strategies) {
    std::unique_ptr<Strategy> strategy = strategy_or_usage(name, space, gs, machine, a.seed);
    // tune()'s loop without measuring: the default first as the reference, then the
    // strategy's proposals, each answered with the same value (no configuration is known to
    // be better), one run each, until the budget.
    std::vector<Trial> history;
    Trial ref;
    ref.config = {};
    ref.strategy = "reference";
    ref.m.ok = true;
    ref.m.value = 1;
    ref.m.repeats = std::min(2, a.max_repeats);
    ref.m.samples.assign(ref.m.repeats, 1.0);
    history.push_back(ref);
    int runs = ref.m.repeats, duplicates = 0;
    std::vector<Config> planned = {Config{}};
    while (runs < a.budget && duplicates <= 50) {
      std::optional<Config> next = strategy->next(history);
      if (!next) break;
      Trial t;
      t.index = static_cast<int>(history.size());
      t.config = *next;
      t.strategy = name;
      t.m.ok = true;
      t.m.value = 1;
      bool seen = std::any_of(history.begin(), history.end(), [&](const Trial& h) { return h.config == *next; });
      if (seen) {
        ++duplicates;
        history.push_back(t);  // a measured configuration costs no run
        continue;
      }
      duplicates = 0;
      t.m.repeats = 1;
      t.m.samples = {1.0};
      history.push_back(t);
      planned.push_back(*next);
      ++runs;
    }
    out << "planned candidates (strategy " << name << ", in order, before any measurement steers it):\n";
    for (size_t i = 0; i < planned.size(); ++i)
      out << "  " << i + 1 << "  " << (planned[i].empty() ? "default (the reference)" : to_string(planned[i])) << "\n";
    // The analysis always takes its first default run and one run per probe, even past the budget.
    const int analysis_runs = name == "syspilot" ? 1 + static_cast<int>(probes.size()) : 0;
    out << "planned runs: " << plan_text(a, name, analysis_runs, true) << "\n";
  }
  return kOk;
}

// The Slurm options of tune's jobs, writing to `dir` (--slurm-dir when given).
SlurmOptions slurm_options(const TuneArgs& a, const std::string& dir) {
  SlurmOptions so;
  so.partition = a.partition;
  so.args = a.slurm_args;
  so.dir = a.slurm_dir.empty() ? dir : a.slurm_dir;
  std::error_code ec;
  so.dir = std::filesystem::absolute(so.dir, ec).string();
  so.syspilot = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  return so;
}

// The analysis' runs as one job on a node (the submitter is no node): its hypotheses, with the
// node's verdicts, replace the undecided ones composed here, and its runs are returned (charged
// to the budget). A job that gives no analysis leaves them undecided, with the reason said.
int analyse_on_a_node(const TuneArgs& a, const std::string& db, const std::string& binary, int max_runs,
                      Analysis& an) {
  SlurmOptions so = slurm_options(a, db + ".slurm/analysis");
  AnalysisSpec spec;
  spec.argv = a.argv;
  spec.argv.front() = binary;
  std::error_code ec;
  spec.source = a.source.empty() ? "" : std::filesystem::absolute(a.source, ec).string();
  spec.manifest = a.manifest.empty() ? "" : std::filesystem::absolute(a.manifest, ec).string();
  spec.timeout_s = a.timeout;
  spec.max_runs = max_runs;
  std::cerr << "tune: --executor slurm: the analysis runs " << a.argv[0] << " as one job on a node (" << so.dir << ")\n";
  try {
    SlurmCluster cluster(so);
    // Each run within the timeout, plus the composition's own time.
    const int runs = max_runs > 0 ? max_runs + 2 : 12;
    nlohmann::json j = analyse_on_node(cluster, so.dir, spec, a.timeout * runs + 60);
    std::vector<Hypothesis> hs = hypotheses_from_json(j);
    const int spent = profile_runs_from_json(j);
    std::cerr << "tune: the analysis job ran " << a.argv[0] << " " << spent << " times on "
              << j.value("node", std::string("its node")) << "\n";
    an.hypotheses = std::move(hs);
    return spent;
  } catch (const std::runtime_error& e) {
    std::cerr << "tune: " << e.what() << "; the hypotheses stay undecided\n";
    return 0;
  }
}

// The Slurm executor of session `id`: jobs recorded in the store as they are submitted, specs
// and results in the session's folder (beside the store unless --slurm-dir says where).
std::unique_ptr<SlurmObjective> slurm_objective(const TuneArgs& a, const std::string& db, std::int64_t id,
                                                const Space& space, const ObjectiveSpec& os, SessionStore& sessions,
                                                std::unique_ptr<SlurmCluster>& cluster) {
  SlurmOptions so = slurm_options(a, db + ".slurm/session-" + std::to_string(id));
  std::unique_ptr<SlurmObjective> slurm;
  try {
    cluster = std::make_unique<SlurmCluster>(so);
    slurm = std::make_unique<SlurmObjective>(*cluster, space, os, so.dir);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  slurm->on_submit = [&sessions, id](const ClusterJob& j) { sessions.add_job(id, j); };
  slurm->on_end = [&sessions, id](const ClusterJob& j) { sessions.end_job(id, j.id, j.node); };
  slurm->note = [](const std::string& line) { std::cerr << "tune: " << line << "\n"; };
  std::cerr << "tune: each run is a Slurm job (" << so.syspilot << " trial-run); specs and results in " << so.dir
            << "\n";
  return slurm;
}

// A resumed Slurm session: the node references its finished jobs measured, then the trial its
// submitter was waiting on when it died, from that trial's jobs: a result written is read, a
// job still queued or running is waited for, one gone without a result is resubmitted. No
// finished run is repeated. Returns the stored trials with it.
std::vector<Trial> recover_jobs(SlurmObjective& slurm, SessionStore& sessions, std::int64_t id,
                                std::vector<Trial> trials) {
  const std::vector<ClusterJob> jobs = sessions.jobs(id);
  for (const auto& j : jobs) slurm.learn(j);
  std::map<int, std::vector<ClusterJob>> open;  // by trial; a trial is stored once whole
  for (const auto& j : jobs) {
    std::error_code ec;
    const bool replaced = j.state == "ended" && !std::filesystem::exists(j.result_path, ec);  // resubmitted already
    if (j.trial >= static_cast<int>(trials.size()) && !replaced) open[j.trial].push_back(j);
  }
  for (auto& [slot, js] : open) {
    // A node's reference run first: the trial's runs on that node are scaled by it.
    std::stable_partition(js.begin(), js.end(), [](const ClusterJob& j) { return j.kind == "reference"; });
    Trial t;
    t.index = static_cast<int>(trials.size());
    for (const auto& j : js) {
      std::cerr << "tune: recovering Slurm job " << j.id << " of trial " << slot + 1 << "\n";
      slurm.plan({slot, j.runs_before, -1, j.strategy});
      Measurement m = slurm.adopt(j);
      if (j.kind == "reference") {  // charged to the trial, not a sample of it
        t.m.repeats += std::max(1, m.repeats);
        continue;
      }
      if (t.strategy.empty()) {
        t.config = j.config;
        t.strategy = j.strategy;
        t.runs_before = j.runs_before;
      }
      add_run(t.m, m);
    }
    slurm.plan({});
    if (t.strategy.empty()) continue;  // only a reference run was in flight: no trial to store
    sessions.add_trial(id, t);
    trials.push_back(t);
  }
  return trials;
}

int run_tune(TuneArgs a, Interruption* stop) {
  // Checks that need nothing but the command line, before anything is opened or run.
  if (!a.metric.empty()) {
    try {
      std::regex check(a.metric, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw UsageError("--metric '" + a.metric + "' is not a valid regular expression (" + e.what() + ")");
    }
  }
  std::vector<std::string> strategies = a.compare.empty() ? std::vector<std::string>{a.strategy} : a.compare;
  for (const auto& s : strategies)
    if (std::find(strategy_names().begin(), strategy_names().end(), s) == strategy_names().end())
      throw UsageError("--compare: unknown strategy '" + s + "'; use syspilot, random, grid, optuna-tpe, optuna-cmaes");
  SpaceEdits edits = parse_edits(a);
  std::error_code fs_ec;
  if (!a.source.empty() && !std::filesystem::is_directory(a.source, fs_ec))
    throw UsageError("--source '" + a.source + "' is not a folder");
  if (!a.manifest.empty() && !std::filesystem::is_regular_file(a.manifest, fs_ec))
    throw UsageError("--manifest '" + a.manifest + "' cannot be read");
  std::string db = a.db.empty() ? store::default_db_path() : a.db;
  std::unique_ptr<SessionStore> sessions;
  // A dry run stores nothing, so it opens no store here: one that does not exist is not created
  // (nor its folder), and composition reads the contracts of one that does.
  if (!a.dry_run) {
    try {
      store::Store migrate_core(db);  // the analysis reads contracts from the same file
      sessions = std::make_unique<SessionStore>(db);
    } catch (const std::exception& e) {
      throw UsageError(std::string(e.what()));
    }
  }
  // The sessions this process creates or resumes are its own until it ends (SessionOwner).
  struct Release {
    SessionStore* sessions;
    ~Release() {
      try {
        if (sessions) sessions->release_owned();
      } catch (const std::exception& e) {
        std::cerr << "tune: could not release its sessions: " << e.what() << "\n";
      }
    }
  } release{sessions.get()};
  MachineFacts machine = MachineFacts::detect();
  Space space;
  std::vector<Guide> gs;
  std::set<std::string> hypothesised;  // the libraries the analysis' hypotheses involved, every verdict
  std::vector<Trial> resumed;
  std::vector<Trial> from_analysis;  // the analysis' runs, as syspilot's first trials
  int analysis_spent = 0;            // the analysis' other runs: charged, not trials
  std::int64_t id = 0;
  SessionInfo base;  // what a new session records
  RunClock clock;
  // The cost before the first run: the upper bound of the runs, and what each part is for.
  auto announce_plan = [&] {
    clock.planned = static_cast<int>(strategies.size()) * planned_runs(a, 0);
    for (const auto& name : strategies)
      std::cerr << "tune: plan" << (strategies.size() > 1 ? " of " + name : std::string()) << ": "
                << plan_text(a, name, 0, false) << " runs\n";
    if (strategies.size() > 1) std::cerr << "tune: plan: at most " << clock.planned << " runs in all\n";
  };

  if (a.resume > 0) {
    auto s = sessions->get(a.resume);
    if (!s)
      throw UsageError("no tuning session " + std::to_string(a.resume) + " in " + db +
                       "; list them with: syspilot sessions list --db " + shell_quote(db));
    id = s->id;
    // One process at a time searches a session: two would both add trials to it.
    if (auto owner = sessions->claim(id))
      throw UsageError("session " + std::to_string(id) + " is being tuned by process " + std::to_string(owner->pid) +
                       (owner->host == this_process().host ? "" : " on host " + owner->host) + " (since " +
                       owner->since + "); resume it once that process has ended (Ctrl-C or kill " +
                       std::to_string(owner->pid) + " stops it)");
    if (stop) stop->session(id);
    if (!a.argv.empty() && a.argv != s->argv)
      throw UsageError("session " + std::to_string(id) + " tunes a different command; drop the command after -- to resume it");
    a.argv = s->argv;
    a.strategy = s->strategy;
    strategies = {a.strategy};  // the session's own, not --strategy's default
    a.seed = s->seed;
    // The session's own budget, unless --budget raises it (then stored, so that a later
    // resume and `sessions list` count against the raised one).
    a.budget = a.budget_given ? std::max(a.budget, s->budget) : s->budget;
    if (a.budget != s->budget) sessions->set_budget(id, a.budget);
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
      // A session resumes on the executor it started on, with its cluster settings unless
      // given again.
      if (a.executor == "local") a.executor = o.value("executor", a.executor);
      if (a.partition.empty()) a.partition = o.value("partition", "");
      if (a.slurm_args.empty()) a.slurm_args = o.value("slurm_args", std::vector<std::string>{});
      if (a.slurm_dir.empty()) a.slurm_dir = o.value("slurm_dir", "");
      if (a.parallel == 1) a.parallel = o.value("parallel", 1);
    }
    space = space_from_json(s->space_json);
    gs = guides_from_json(s->guides_json);
    resumed = sessions->trials(id);
    base = *s;
    announce_plan();
    clock.done = analysis_spent;
    for (const auto& t : resumed) clock.done += t.m.repeats;
    std::cerr << "tune: resuming session " << id << ": " << resumed.size() << " trials done, not repeated\n";
  } else {
    if (a.argv.empty()) throw UsageError("no application given; usage: syspilot tune [options] -- APP ARGS...");
    std::string binary = resolve_binary(a.argv[0]);
    if (std::string why = application_problem(a.argv[0], binary); !why.empty()) throw UsageError(why);
    // Composition reads the binary and the contracts, and runs nothing: the controls it knows
    // check --pin/--add/--drop before the analysis' first run.
    ComposeOptions co;
    co.binary = binary;
    co.source_dir = a.source;
    co.manifest = a.manifest;
    co.store_path = db;
    co.args = a.argv;
    Diagnostics cdiags;
    Composition comp = compose(co, cdiags);
    for (const auto& d : cdiags.items())
      if (d.severity == Severity::Error && (d.code == "bad-manifest" || d.code == "bad-source-dir"))
        throw UsageError(d.str());
    validate_edits(edits, comp, machine);
    if (a.dry_run) return dry_run(a, comp, edits, machine, strategies);
    announce_plan();
    std::cerr << "tune: analysing " << a.argv[0] << " (composition, hypotheses, profile)\n";
    AnalyzeOptions ao;
    ao.compose = co;
    // On a cluster the submitting machine is no node: what the program does here says little
    // about a node, so the analysis runs nothing here; its runs are one job on a node.
    if (a.executor != "slurm") ao.profile.run.argv = a.argv;
    ao.profile.run.timeout_s = a.timeout;
    // The analysis' runs are charged to syspilot's budget: its extra pairs (a probe too close
    // to a threshold to call) take at most half of it, leaving the rest to the search.
    ao.profile.max_runs = analysis_run_cap(a.budget);
    ao.profile.progress = [](const std::string& line) { std::cerr << "tune: analysis " << printable(line) << "\n"; };
    const auto analysis_start = std::chrono::steady_clock::now();
    Analysis an = analyze(ao);
    int node_runs = 0;
    if (a.executor == "slurm") node_runs = analyse_on_a_node(a, db, binary, ao.profile.max_runs, an);
    if (stop) stop->checkpoint();  // interrupted during the analysis: its killed runs are no trials
    // Kept beside the sessions, which name it: the service shows what decided the space.
    std::int64_t analysis_id = 0;
    try {
      analysis_id = sessions->add_analysis(
          a.argv, "tune", to_json(an).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    } catch (const std::exception& e) {
      std::cerr << "tune: warning: the analysis was not kept in " << db << ": " << e.what() << "\n";
    }
    if (const int runs = an.profiled ? an.profile.runs() : node_runs; runs > 0) {
      // The analysis' runs are timed as a whole: each is taken to have cost its share.
      const double each =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - analysis_start).count() / runs;
      clock.done += runs;
      clock.seconds.insert(clock.seconds.end(), runs, each);
      clock.announce();
    }
    for (const auto& d : an.diagnostics.items())
      if (d.severity != Severity::Note && d.code != "application-failed") std::cerr << d.str() << "\n";
    // The application failed under its defaults (crashed, hung): no reference to tune against.
    for (const auto& d : an.diagnostics.items())
      if (d.code == "application-failed")
        throw AppFailed(d.message + "; tune needs a default run that works" + (d.hint.empty() ? "" : ": " + d.hint));
    gs = guides(an.hypotheses);
    for (const auto& h : an.hypotheses) hypothesised.insert(h.libraries.begin(), h.libraries.end());
    // Only a confirmed hypothesis guides the search. With none confirmed, the undecided ones'
    // controls still make the space (--space hypotheses would otherwise hold nothing of the
    // contracts), but they are searched without a guide, as docs/tuner.md and the eval's replay
    // have it: the controls no hypothesis involves (the application's pool, --add's) are
    // screened first, then the space is sampled. An undecided guide's remedies and joint values
    // would otherwise spend the budget before the user's own controls were tried. Nor does an
    // undecided constraint bound the space: where the defaults break it (outer * inner <= ncores
    // with both at ncpus), no move of one control would be admissible.
    std::vector<Guide> space_guides = gs;
    if (gs.empty() && a.space == "hypotheses") {
      auto unknown = guides(an.hypotheses, true);
      for (auto& g : unknown) g.constraint.clear();
      if (!unknown.empty()) {
        std::cerr << "tune: no hypothesis was confirmed by the profile; the space holds the controls of the "
                  << unknown.size() << " undecided ones, searched without a guide\n";
        space_guides = unknown;
      }
    }
    for (const auto& h : an.hypotheses)
      std::cerr << "tune: hypothesis " << h.id << ": " << tuner::to_string(h.verdict)
                << (h.reason.empty() ? "" : " (" + h.reason + ")") << "\n";
    Diagnostics diags;
    space = build_space(contracts_of(an.composition), space_guides,
                        a.space == "all" ? SpaceScope::All : SpaceScope::Hypotheses, edits, machine, diags);
    space.one_value = one_value_groups(contracts_of(an.composition), space);
    for (const auto& d : diags.items())
      if (d.severity != Severity::Note) std::cerr << d.str() << "\n";
    if (space.params.empty())
      throw NothingToDo("nothing to tune: no confirmed hypothesis names a control of " + a.argv[0] +
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
    // The node's runs are spent too; measured on a node, they are no trials here.
    analysis_spent += node_runs;
    base.argv = a.argv;
    base.budget = a.budget;
    base.seed = a.seed;
    base.space_json = space_to_json(space);
    base.guides_json = guides_to_json(gs);
    base.options_json = nlohmann::json{{"timeout", a.timeout},     {"cap_factor", a.cap_factor},
                                        {"cap_slack", a.cap_slack}, {"metric", a.metric},
                                        {"maximize", a.maximize},  {"score_cmd", a.score_cmd},
                                        {"max_repeats", a.max_repeats}, {"space", a.space},
                                        {"analysis_spent", analysis_spent}, {"executor", a.executor},
                                        {"machine", machine_json(machine)}}
                            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (analysis_id > 0) {
      auto o = nlohmann::json::parse(base.options_json);
      o["analysis"] = analysis_id;
      base.options_json = o.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    if (a.executor == "slurm") {
      auto o = nlohmann::json::parse(base.options_json);
      o["partition"] = a.partition;
      o["slurm_args"] = a.slurm_args;
      o["slurm_dir"] = a.slurm_dir;
      o["parallel"] = a.parallel;
      base.options_json = o.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }
  if (strategies.size() > 1 && a.resume == 0) {
    // The sessions of one comparison share a group, so that each shows the others beside it.
    auto o = nlohmann::json::parse(base.options_json);
    o["compare"] = {{"group", compare_group()}, {"strategies", strategies}};
    base.options_json = o.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
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
  std::unique_ptr<LiveObjective> live;
  try {
    live = std::make_unique<LiveObjective>(space, os);
  } catch (const std::regex_error& e) {
    throw UsageError("--metric '" + a.metric + "' is not a valid regular expression (" + e.what() + ")");
  }
  std::unique_ptr<SlurmCluster> cluster;
  std::unique_ptr<SlurmObjective> slurm;
  if (a.executor == "slurm") {
    if (id == 0) {  // the results folder is the session's
      SessionInfo si = base;
      si.strategy = strategies.front();
      id = sessions->create_owned(si);
    }
    slurm = slurm_objective(a, db, id, space, os, *sessions, cluster);
    resumed = recover_jobs(*slurm, *sessions, id, std::move(resumed));
  }
  DroppedOutputObjective local(*live);
  ClockedObjective clocked(slurm ? static_cast<Objective&>(*slurm) : local, clock);
  std::unique_ptr<Objective> guarded;
  if (stop) guarded = std::make_unique<InterruptibleObjective>(clocked, *stop);
  Objective* objective = guarded ? guarded.get() : &clocked;

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
      id = sessions->create_owned(si);
    }
    if (stop) stop->session(id);
    std::cerr << "tune: session " << id << " in " << db << ", strategy " << name << "\n";
    std::unique_ptr<Strategy> strategy = strategy_or_usage(name, space, gs, machine, a.seed, hypothesised);
    TuneOptions to;
    to.budget = a.budget;
    to.parallel = a.parallel;
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
                  << (a.executor == "slurm" ? " runs (the analysis job's, on a node) are charged too\n"
                                            : " runs (probes outside the space, or not read by the objective) are charged too\n");
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
    // A failure reason quotes the application's output: printed as text, never as escapes.
    to.progress = [&clock](const std::string& line) {
      std::cerr << "tune: " << printable(line) << "  " << clock.eta() << "\n";
    };
    TuneResult res = tune(*strategy, *objective, to);
    sessions->finish(id, res.best >= 0 ? "finished" : "failed");
    if (stop) stop->session(id, true);
    std::optional<Verification> ver;
    if (res.best >= 0 && a.verify > 0 && !res.trials[res.best].config.empty() && res.reference >= 0) {
      std::cerr << "tune: re-measuring default and best, " << a.verify
                << " interleaved pairs (not counted in the budget)\n";
      ver = verify(*objective, {}, res.trials[res.best].config, a.verify);
    }
    done.push_back({name, id, std::move(res), ver});
  }

  // The report, written once the command has concluded (the exported configuration is the
  // minimised one); false when its path cannot be written.
  auto write_the_report = [&](std::optional<ReportInput::Answer> answer) {
    if (a.report.empty()) return true;
    ReportInput ri;
    ri.title = "syspilot tune: " + std::filesystem::path(a.argv[0]).filename().string();
    ri.argv = a.argv;
    ri.space = space;
    ri.guides = gs;
    for (const auto& d : done) ri.runs.push_back({d.strategy, d.res, d.ver});
    ri.conditions = observe_conditions(space, inherited_environment());
    ri.conditions.version = SYSPILOT_VERSION;
    ri.maximize = a.maximize;
    ri.objective = a.score_cmd.empty() ? (a.metric.empty() ? "wall time (s)" : "metric /" + a.metric + "/") : "score";
    ri.answer = std::move(answer);
    if (slurm) {
      ri.node_defaults = slurm->references().defaults();
      ri.reference_node = slurm->references().reference_node();
    }
    try {
      write_report(a.report, ri);
    } catch (const std::exception& e) {
      std::cerr << "tune: " << e.what() << "\n";
      return false;
    }
    std::cerr << "tune: report written to " << a.report << "\n";
    return true;
  };

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
                << measured_trials(d.res) << std::setw(44) << cfg << (cfg.size() >= 44 ? "  " : "")
                << speedup_text(sp, spr) << "\n";
    }
    if (!write_the_report(std::nullopt)) return kUsage;
    return std::all_of(done.begin(), done.end(), [](const Done& d) { return d.res.best >= 0; }) ? kOk : kAppFailed;
  }

  const Done& d = done.front();
  const TuneResult& res = d.res;
  std::ostream& info = a.export_only || a.json ? std::cerr : std::cout;
  // The conclusion is kept with the session (`sessions show --json` prints it as "result"), and
  // --json prints that very document.
  nlohmann::json result = {{"strategy", d.strategy},
                           {"budget", a.budget},
                           {"trials", measured_trials(res)},
                           {"capped", res.capped},
                           {"noise", res.noise},
                           {"stopped", res.stop_reason},
                           {"runs", {{"search", res.runs},
                                     {"verification", d.ver ? verification_runs(a.verify) : 0},
                                     {"minimise", 0}}}};
  if (slurm) {
    // Which node ran what is in the trials; the ratios between nodes are kept here.
    result["nodes"] = {{"reference", slurm->references().reference_node()},
                       {"defaults", slurm->references().defaults()}};
    for (const auto& [node, value] : slurm->references().defaults())
      std::cerr << "tune: node " << node << ": default " << fixed(a.maximize ? -value : value, 4)
                << (node == slurm->references().reference_node() ? " (the reference node)" : "") << "\n";
  }
  auto conclude = [&](int code) {
    std::optional<ReportInput::Answer> answer;
    if (result["verdict"] != "failed") {
      answer.emplace();
      answer->keep_defaults = result["verdict"] == "keep defaults";
      answer->config = result["config"].get<Config>();
      if (result["minimise"].is_object())
        answer->minimise = std::to_string(result["minimise"]["runs"].get<int>()) + " runs, dropped " +
                           std::to_string(result["minimise"]["dropped"].size()) + " of " +
                           std::to_string(result["minimise"]["controls"].get<int>()) + " controls of " +
                           to_string(result["full_best"].get<Config>());
    }
    if (!write_the_report(answer)) code = kUsage;  // the report's path
    result["exit"] = code;
    result["runs"]["total"] =
        result["runs"]["search"].get<int>() + result["runs"]["verification"].get<int>() + result["runs"]["minimise"].get<int>();
    sessions->set_result(d.id, result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (a.json) std::cout << session_to_json(*sessions->get(d.id), sessions->trials(d.id)).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return code;
  };
  if (res.best < 0) {
    result["verdict"] = "failed";
    if (res.trials.empty()) {
      result["failure"] = "no trial ran";
      std::cerr << "tune: no trial ran: " << res.runs << " of the budget's " << a.budget
                << " runs were spent before the search (raise --budget)\n";
    } else {
      result["failure"] = res.trials.back().m.failure;
      std::cerr << "tune: every trial failed; the last failure: " << res.trials.back().m.failure << "\n";
    }
    return conclude(kAppFailed);
  }
  const Trial& best = res.trials[res.best];
  auto [speedup, spread] = speedup_of(d);
  std::string basis = d.ver && d.ver->ok
                          ? "fresh re-measurement, median of " + std::to_string(a.verify) + " interleaved pairs"
                          : "trial medians";
  const std::string tally = std::to_string(measured_trials(res)) + " trials (" + std::to_string(res.capped) +
                            " capped), " + std::to_string(res.runs) + "/" + std::to_string(a.budget) +
                            " runs, noise +-" + pct(res.noise) + ", stopped: " + res.stop_reason;
  // Keep the defaults unless the best beat them beyond the noise: the lower end of its
  // speedup's interval (the re-measurement's spread, else the trials') above 1, and the gain
  // larger than the run-to-run noise of the trials and than --min-gain (on a very steady
  // program a 1% difference is beyond a 0.5% noise, and still no reason to change anything).
  // A speedup without a ratio (a metric of 0) is not judged.
  const bool keep_defaults =
      best.config.empty() ||
      (speedup > 0 && (speedup * (1 - spread) <= 1 || speedup - 1 <= res.noise || speedup - 1 < a.min_gain));
  result["speedup"] = speedup > 0 ? nlohmann::json(speedup) : nlohmann::json(nullptr);
  result["speedup_spread"] = speedup > 0 ? nlohmann::json(spread) : nlohmann::json(nullptr);
  result["speedup_basis"] = basis;
  result["full_best"] = best.config;
  result["minimise"] = nullptr;
  const std::string session_line = "# session " + std::to_string(d.id) + " (continue with: syspilot tune --resume " +
                                   std::to_string(d.id) + " --budget N)\n";
  if (keep_defaults) {
    result["verdict"] = "keep defaults";
    result["config"] = Config{};
    info << "# keep your defaults: no configuration beat the default beyond noise (speedup "
         << speedup_text(speedup, spread) << ")\n";
    if (!best.config.empty())
      info << "# best tried, not exported: " << to_string(best.config) << " (" << basis << ")\n";
    info << "# " << tally << "\n" << session_line;
    return conclude(kOk);
  }
  // Minimised: the controls whose removal keeps the speed within the noise are dropped.
  Config answer = best.config;
  std::string minimise_line;
  if (minimise_cap(a) > 0 && best.config.size() >= 2) {
    std::cerr << "tune: minimising " << to_string(best.config) << ": at most " << minimise_cap(a)
              << " runs (not counted in the budget)\n";
    MinimiseOptions mo;
    mo.max_runs = minimise_cap(a);
    mo.noise = res.noise;
    mo.machine = machine;
    for (const auto& g : gs) mo.named.insert(mo.named.end(), g.controls.begin(), g.controls.end());
    mo.progress = [&clock](const std::string& line) {
      std::cerr << "tune: " << printable(line) << "  " << clock.eta() << "\n";
    };
    Minimised mz = minimise(*objective, space, best.config, mo);
    answer = mz.config;
    result["runs"]["minimise"] = mz.runs;
    result["minimise"] = {{"runs", mz.runs},  {"checks", mz.checks}, {"controls", mz.controls},
                          {"dropped", mz.dropped}, {"capped", mz.capped}, {"max_runs", mo.max_runs}};
    minimise_line = "# minimise: " + std::to_string(mz.runs) + " runs, dropped " + std::to_string(mz.dropped.size()) +
                    " of " + std::to_string(mz.controls) + " controls" + (mz.capped ? " (stopped at its cap)" : "") +
                    (mz.dropped.empty() ? "" : "; full best: " + to_string(best.config)) + "\n";
  }
  result["verdict"] = "configuration";
  result["config"] = answer;
  const std::string shim = shim_path();
  auto env = environment_for(space, answer, shim, inherited_environment());
  auto confirms = confirmed_by(answer, gs, space, machine);
  result["env"] = env;
  result["confirms"] = confirms;
  const bool preload = env.count("LD_PRELOAD") > 0;
  result["shim"] = preload && !shim.empty() ? nlohmann::json(shim) : nlohmann::json(nullptr);
  result["shim_origin"] = preload ? nlohmann::json(shim_origin(shim)) : nlohmann::json(nullptr);
  if (!a.json)
    for (const auto& [k, v] : env) std::cout << (a.export_only ? "export " : "") << k << "=" << shell_quote(v) << "\n";
  info << "# speedup " << speedup_text(speedup, spread) << " over the default (" << basis << "); " << tally << "\n";
  info << minimise_line;
  if (preload) {
    const std::string origin = shim_origin(shim);
    if (origin == "missing")
      info << "# warning: an API control needs the preload shim libsyspilot_shim.so, which was not found: install "
              "syspilot (cmake --install) or set SYSPILOT_SHIM to its path\n";
    else
      info << "# LD_PRELOAD: the shim applies the API controls; " << shim
           << (origin == "installed"       ? " is installed beside syspilot\n"
               : origin == "SYSPILOT_SHIM" ? " is SYSPILOT_SHIM's\n"
                                           : " is the build tree's (syspilot is not installed)\n");
  }
  if (!confirms.empty()) {
    info << "# confirms:";
    for (const auto& c : confirms) info << " " << c;
    info << "\n";
  }
  info << session_line;
  return conclude(kOk);
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
      ->check(finite_number())
      ->check(CLI::PositiveNumber);
  cmd->add_option("--cap-factor", a->cap_factor,
                  "Adaptive capping: stop a run after this many times the best trial's median wall time plus --cap-slack, "
                  "recorded as capped (default 3; 0: off)")
      ->check(finite_number())
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--cap-slack", a->cap_slack, "Seconds added to the adaptive cap (default 1)")
      ->check(finite_number())
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
  cmd->add_option("--min-gain", a->min_gain,
                  "Smallest gain worth exporting (default 0.03: a best under 1.03x the default's speed keeps the defaults)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--max-repeats", a->max_repeats, "Most runs of one configuration (adaptive; default 3)")
      ->check(CLI::Range(1, 50));
  cmd->add_option("--compare", a->compare,
                  "Run these strategies one after another on the same space and budget; print them side by side")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_flag("--dry-run", a->dry_run,
                "Compose and derive hypotheses without running the application; print the space, the constraints, the "
                "planned candidates and runs, and exit");
  cmd->add_flag("--json", a->json,
                "Print the result as one JSON document on stdout (the session as `syspilot sessions show --json` "
                "prints it, with tune's conclusion under \"result\")");
  cmd->add_flag("--no-minimise", a->no_minimise,
                "Print the best configuration as found, without dropping the controls that make no difference");
  cmd->add_option("--minimise-runs", a->minimise_runs,
                  "Most runs the minimisation of the result may spend (default 16; not in the budget)")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--executor", a->executor,
                  "Where runs happen: local (default), or slurm: each run a Slurm job with a node to itself "
                  "(docs/cluster.md)")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_option("--parallel", a->parallel,
                  "Runs in flight at once (--executor slurm; default 1): the strategy proposes batches of N")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--partition", a->partition, "Slurm partition of the jobs (--executor slurm)");
  cmd->add_option("--slurm-arg", a->slurm_args,
                  "One more sbatch argument for every job, e.g. --slurm-arg=--account=A (repeatable; --executor slurm)")
      ->allow_extra_args(false);
  cmd->add_option("--slurm-dir", a->slurm_dir,
                  "Folder of the jobs' specs, results and output, on a filesystem the nodes share "
                  "(default: beside the store, DB.slurm/session-ID)");
  cmd->add_option("command", a->argv, "The application and its arguments, after --");
  cmd->callback([a, cmd, &ctx] {
    a->budget_given = cmd->count("--budget") > 0;
    if (a->maximize && a->metric.empty() && a->score_cmd.empty())
      throw UsageError("--maximize needs --metric REGEX or --score-cmd CMD (wall time is always minimised)");
    if (!a->metric.empty() && !a->score_cmd.empty()) throw UsageError("give --metric or --score-cmd, not both");
    if (!a->compare.empty() && a->resume) throw UsageError("--compare starts new sessions; it cannot --resume one");
    if (!a->compare.empty() && a->export_only) throw UsageError("--compare prints a table; it cannot --export");
    if (a->json && a->export_only) throw UsageError("give --json or --export, not both");
    if (a->json && !a->compare.empty()) throw UsageError("--compare prints a table; it has no --json");
    if (a->json && a->dry_run) throw UsageError("--dry-run prints a plan; it has no --json");
    if (a->dry_run && a->resume) throw UsageError("--dry-run plans a new session; it cannot --resume one");
    if (a->executor == "slurm" && !a->compare.empty())
      throw UsageError("--compare runs locally; with --executor slurm tune one strategy per session (--strategy)");
    if (a->executor != "slurm" && (!a->partition.empty() || !a->slurm_args.empty() || !a->slurm_dir.empty()))
      throw UsageError("--partition, --slurm-arg and --slurm-dir are for --executor slurm");
    // Runs side by side on one machine would contend with each other and measure that.
    if (a->executor != "slurm" && a->parallel > 1)
      throw UsageError("--parallel is for --executor slurm, where each run has a node to itself");
    if (a->dry_run) {
      ctx.exit_code = run_tune(*a, nullptr);
      return;
    }
    std::string db = a->db.empty() ? store::default_db_path() : a->db;
    Interruption stop(db);
    try {
      ctx.exit_code = run_tune(*a, &stop);
    } catch (...) {
      stop.checkpoint();  // interrupted: what failed was a run killed on the way out
      throw;
    }
  });
});

}  // namespace
}  // namespace syspilot::cli
