// Public API of analysis: which libraries an application composes, which of them will fight
// (hypotheses derived by rules kept as data in tuner/rules/), and the profile that confirms or
// refutes each. `syspilot analyze`, `syspilot tune` and POST /v1/compose call these.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lpcl/ast.h"
#include "lpcl/diagnostics.h"
#include "tuner/run.h"
#include "tuner/search.h"

namespace syspilot::tuner {

// ---------------------------------------------------------------------------------------
// Composition

// A shared object the application loads.
struct Library {
  std::string soname;      // as named in DT_NEEDED (or by the manifest / seen mapped at run time)
  std::string path;        // where the loader finds it ("" when not found)
  std::string real_path;   // after following symlinks (Debian alternatives included)
  std::string variant;     // the build it resolves to: "openblas-pthread", "openblas-openmp", ...
  std::string found_by;    // rpath | runpath | LD_LIBRARY_PATH | ld.so.cache | default | dlopen | child process | manifest
  std::string needed_by;   // soname of the object that named it; "" for the application itself
  bool direct = false;     // named by the application (or the manifest), not only by a library
  std::string contract;    // name of the contract describing it; "" when none
  int processes = 0;       // most processes of the first run that had it mapped at once (0: not seen)
};

// A process count the command exposes: `xargs -P {NPROC:-2}` in the arguments, or
// `make -j "${JOBS:-4}"` in the script it runs. Found by the launchers' options listed in
// tuner/rules/launchers.json; setting NAME in the run's environment changes it.
struct ProcessControl {
  std::string name;      // NPROC
  std::string fallback;  // the value used while NAME is unset ("" when the text gives none)
  std::string option;    // -P; "" for a placeholder passed to a program (a candidate count)
  std::string tool;      // xargs
  std::string where;     // "argv" or "script.sh:12"
};

// Where a library's API is called in the application's source.
struct CallSite {
  std::string library;    // contract name (or soname when no contract)
  std::string symbol;     // cblas_dgemm
  std::string file;       // relative to the source root
  int line = 0;
  std::string function;   // enclosing function
  std::vector<std::string> regions;  // parallel contexts it runs in: "omp_parallel@main.c:12", ...
};

// `inner` is called inside a parallel region opened by `outer` (nested), or both run at the
// same time (co-run). `outer`/`inner` are contract names or "app-threads" (the application's
// own std::thread / pthread_create threads).
struct Relation {
  enum class Kind { Nested, CoRun };
  Kind kind = Kind::Nested;
  std::string outer, inner;
  std::string how;    // omp_parallel | tbb_parallel | thread | manifest | unknown
  std::string where;  // "file:line" of the call site, or "manifest", or "" when assumed
};

// A contract in use, with where it came from.
struct ContractUse {
  lpcl::Contract contract;
  std::string source;  // store | corpus | synthesized | file
  std::string path;    // the .lpcl file, store id, or the shared object it was synthesized from
  std::vector<std::string> libraries;  // sonames it binds in this composition
};

struct Composition {
  std::string application;                // path of the binary ("" for a name-only composition)
  std::vector<Library> libraries;         // direct first, then transitive, in load order
  std::vector<ContractUse> contracts;
  std::vector<Relation> relations;        // nesting and co-running, from source or manifest
  std::vector<CallSite> call_sites;
  bool source_scanned = false;            // true when relations come from the source (absence means something)
  bool app_threads = false;               // the application creates its own threads
  std::vector<std::string> app_imports;   // resource-relevant undefined symbols of the binary
  std::map<std::string, std::string> env; // environment the application runs with (ComposeOptions::env)
  std::string interpreter;                // the application is a script (#!): the interpreter composed for it
  std::vector<ProcessControl> process_controls;  // process counts the command exposes
  // Values the command itself gives names through its placeholders' defaults
  // (`export OMP_PROC_BIND={OMP_PROC_BIND:-true}`): the user's setting where the run sets none.
  std::map<std::string, std::string> command_values;
  // From the first run (compose_processes): per contract, the most processes that had one of
  // its libraries mapped at once, and the most threads alive at once in those processes.
  std::map<std::string, int> processes, process_threads;
  // Pairs of contracts (first < second) whose libraries the first run saw in different processes
  // only, never both in one: neither can call the other, so they can co-run but never nest.
  std::set<std::pair<std::string, std::string>> apart;

  const ContractUse* find_contract(const std::string& name) const;
};

struct ComposeOptions {
  std::string binary;                     // application executable; may be empty with a manifest
  std::string source_dir;                 // --source: scanned with tree-sitter when non-empty
  std::string manifest;                   // --manifest FILE (docs/analysis.md)
  std::vector<std::string> contract_dirs; // *.lpcl searched; empty: $SYSPILOT_CORPUS_DIR or the source tree's corpus/
  std::string store_path;                 // SQLite store searched first; "" = none
  bool synthesize = true;                 // draft a missing contract from the installed library
  std::map<std::string, std::string> env; // environment the application will run with (LD_LIBRARY_PATH)
  std::vector<std::string> args;          // the whole command (binary first), scanned for process
                                          // controls; analyze() fills it from the run's argv
};

// Problems (unreadable binary, bad manifest, a contract that does not parse) go to diags;
// what could be composed is still returned.
Composition compose(const ComposeOptions& opts, Diagnostics& diags);

// Adds the shared objects a run had mapped (RunResult::libraries) that the ELF walk did not
// find (dlopen'ed plugins), with their contracts; each new contract is taken to co-run with
// the ones already composed. True when a contract joined (hypotheses should be derived again).
bool compose_runtime_libraries(Composition& c, const std::vector<std::string>& mapped, const ComposeOptions& opts,
                               Diagnostics& diags);

// The same from a run: libraries only its child processes mapped are found_by "child process"
// (relation how "processes"), and compose_processes() records the process counts. The programs
// child processes ran (RunResult::executables) are searched for libraries linked into them, as
// compose() searches the application.
bool compose_runtime_libraries(Composition& c, const RunResult& run, const ComposeOptions& opts, Diagnostics& diags);

// Records how many processes of a run had each composed library mapped at once, and their
// threads (Library::processes, Composition::processes and process_threads per contract).
void compose_processes(Composition& c, const RunResult& run);

// Name-only composition for the service (POST /v1/compose): libraries by contract name or
// soname, nesting pairs (outer, inner) and co-running pairs; contracts as in compose().
struct NamedComposition {
  std::vector<std::string> libraries;
  std::vector<std::pair<std::string, std::string>> nested;   // (outer, inner)
  std::vector<std::pair<std::string, std::string>> co_run;
  std::vector<std::string> contract_dirs;
  std::string store_path;
};
Composition compose_named(const NamedComposition& req, Diagnostics& diags);

// Name-only composition from contracts the caller already holds (the service's store).
Composition compose_contracts(const std::vector<lpcl::Contract>& contracts,
                              const std::vector<std::pair<std::string, std::string>>& nested,
                              const std::vector<std::pair<std::string, std::string>>& co_run);

// ---------------------------------------------------------------------------------------
// Hypotheses

enum class Verdict { Unknown, Confirmed, Refuted };
const char* to_string(Verdict v);  // "unknown" | "confirmed" | "refuted"

// One threshold of a rule, e.g. {"ivcs_ratio", ">=", 3}: the signal's value compared.
struct Check {
  std::string signal;
  std::string op;     // > >= < <=
  double threshold = 0;
  std::string why;    // what it shows, from the rule
  // An alternative that also passes the check ("or" in the rule): another signal that shows
  // the same effect where the first does not (a spinning team makes few involuntary switches
  // but still slows the run). Empty when none.
  std::string or_signal, or_op;
  double or_threshold = 0;
};

// The numbers that decided a check.
struct Evidence {
  std::string signal;
  double value = 0;
  std::string op;
  double threshold = 0;
  bool passed = false;
  std::string note;   // "default 17718 ivcs in 1.89 s vs probe 186 in 0.75 s"
};

struct Hypothesis {
  std::string id;                        // "nested_oversubscription:libgomp>openblas"
  std::string kind;                      // the rule's kind
  std::string title;
  std::vector<std::string> libraries;    // contract names (or app-threads)
  std::string symptom;                   // predicted symptom
  std::vector<Check> checks;             // all must hold to confirm
  std::vector<std::string> controls;     // controls that act on it
  std::string constraint;                // LPCL expression text ("" when the rule gives none)
  std::vector<Config> remedies;          // partial configurations the rule suggests
  std::map<std::string, std::string> probe;  // env for the probing run ("" value = unset); empty: none
  std::vector<std::string> sources;      // contract lines it came from: "corpus/openblas.lpcl:12: assume no_nesting(parallel_region)"
  std::string basis;                     // why it applies: "cblas_dgemm called inside omp parallel at main.c:14" / "possible: no source given"
  // Filled by profile():
  Verdict verdict = Verdict::Unknown;
  std::vector<Evidence> evidence;
  std::string reason;                    // one line: what decided the verdict
};

// The libraries a hypothesis id names, in order: "kind:a>b" gives {a, b} (Hypothesis::libraries,
// for an id kept without them, as the evaluation's stored draws keep it).
inline std::vector<std::string> libraries_of_id(const std::string& id) {
  std::vector<std::string> out;
  std::string libs = id.substr(id.find(':') + 1);
  for (size_t at = 0; at <= libs.size();) {
    size_t end = std::min(libs.find('>', at), libs.size());
    if (end > at) out.push_back(libs.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// Applies every rule in `rules_dir` (empty: $SYSPILOT_RULES_DIR or the built-in tuner/rules/).
std::vector<Hypothesis> hypothesize(const Composition& c, Diagnostics& diags, const std::string& rules_dir = {});

// ---------------------------------------------------------------------------------------
// Profiling

// The runs the analysis may take out of a tuning budget (ProfileOptions::max_runs): half of
// it, so that the search keeps the other half. `syspilot tune` and the evaluation's analysis
// draws both use it.
inline int analysis_run_cap(int budget) { return budget / 2; }

struct ProfileOptions {
  RunSpec run;               // argv, env, timeout; sampling settings
  bool probes = true;        // one probing run per distinct probe environment
  int repeats = 1;           // default/probe pairs, interleaved D P D P; medians decide
  // More pairs, up to this many in all, for a probe whose ratio lies within `near` of a
  // rule's threshold (one pair cannot tell 1.19x from 1.21x); 0: `repeats` only.
  int max_repeats = 3;
  double near = 0.12;        // |ratio / threshold - 1| below this is too close to call
  // Most runs of the application in all (0: no limit). Bounds the extra pairs only: the first
  // default run and one run per probe are always taken. `syspilot tune` sets half its budget
  // here, since the analysis' runs are charged to it.
  int max_runs = 0;
  RunResult first_default;   // when started: reused as the first default run (analyze()'s discovery run)
  // Told before each run of the application and after it ("run 2 of 5: probe
  // OMP_NUM_THREADS=1 for h1", then "run 2: 1.84 s"); unset: silent.
  std::function<void(const std::string&)> progress;
};

struct ProbeRun {
  std::map<std::string, std::string> env;
  std::vector<std::string> hypotheses;   // ids it serves
  std::vector<RunResult> runs;
  std::vector<size_t> pairs;             // runs[i] pairs with Profile::default_runs[pairs[i]]
};

struct Profile {
  std::vector<RunResult> default_runs;
  std::vector<ProbeRun> probes;
  std::map<std::string, double> signals;      // derived from the median default run (see docs/analysis.md)
  std::vector<std::string> notes;             // perf notes, dlopen'ed libraries, introspection output
  int ncpus = 1;

  // Runs of the application in all: default runs and every probe's.
  int runs() const {
    int n = static_cast<int>(default_runs.size());
    for (const auto& p : probes) n += static_cast<int>(p.runs.size());
    return n;
  }
};

// Runs the application (default, then probes), decides each hypothesis' verdict in place.
Profile profile(const Composition& c, std::vector<Hypothesis>& hs, const ProfileOptions& opts, Diagnostics& diags);

// A probe's environment as a configuration of `space`: nullopt when it sets a variable the
// space does not hold, or to a value outside the control's values, or leaves out a control the
// space fixes to one value (a pin).
std::optional<Config> probe_configuration(const Space& space, const std::map<std::string, std::string>& env);

// The profile's runs as trials of `space` (the objective being wall time): the default runs are
// the reference trial ({}), each probe whose environment is a configuration of the space a
// trial of it. Runs are counted in order, defaults first. Empty when the defaults failed.
std::vector<Trial> profile_trials(const Profile& p, const Space& space);

// The spec every profiling run starts from: `run` plus the introspection switches the
// composition's contracts name.
RunSpec profile_spec(const Composition& c, const RunSpec& run);

// Derived signals of one run (threads_max, ivcs_per_s, runq_wait_frac, cpu_util, ...).
std::map<std::string, double> signals_of(const RunResult& r, int ncpus);

// ---------------------------------------------------------------------------------------
// The whole analysis

struct AnalyzeOptions {
  ComposeOptions compose;
  ProfileOptions profile;    // profile.run.argv empty: no profiling (verdicts stay unknown)
  std::string rules_dir;
};

struct Analysis {
  Composition composition;
  std::vector<Hypothesis> hypotheses;
  Profile profile;
  bool profiled = false;
  Diagnostics diagnostics;
};

Analysis analyze(const AnalyzeOptions& opts);

// Confirmed hypotheses as the search sees them (strongest first); `all` adds unknown ones.
std::vector<Guide> guides(const std::vector<Hypothesis>& hs, bool all = false);

// The contracts of a composition, for building the search space.
std::vector<lpcl::Contract> contracts_of(const Composition& c);

nlohmann::json to_json(const Composition& c);
nlohmann::json to_json(const Hypothesis& h);
nlohmann::json to_json(const Analysis& a);   // schema in docs/analysis.md
// The hypotheses of an analysis' JSON, with their verdicts and evidence (what guides() and the
// session need; not the checks or the sources). Throws std::runtime_error when malformed.
std::vector<Hypothesis> hypotheses_from_json(const nlohmann::json& analysis);
// The runs of the application an analysis' JSON records (default runs and probes' runs).
int profile_runs_from_json(const nlohmann::json& analysis);
std::string to_text(const Analysis& a);      // the human-readable report

}  // namespace syspilot::tuner
