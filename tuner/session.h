// Tuning sessions and their trials in the SQLite store (component "tuner"), so that a session
// interrupted in any way (kill -9 included) resumes without repeating finished trials.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tuner/search.h"

namespace syspilot::store { class Database; }

namespace syspilot::tuner {

struct SessionInfo {
  std::int64_t id = 0;
  std::vector<std::string> argv;   // the application and its arguments
  std::string strategy;
  int budget = 0;
  std::uint64_t seed = 1;
  std::string space_json;          // space_to_json() of the space searched
  std::string guides_json;         // guides_to_json() of the hypotheses that guided it
  std::string options_json;        // the remaining settings (objective, timeout, ...), as the CLI wrote them
  std::string status;              // running | finished | failed | interrupted
  std::string created_at, finished_at;
  // What tune concluded after the search (verdict, re-measured speedup, minimised and full
  // best configurations, runs of each phase): a JSON object, "{}" until it is written.
  std::string result_json;
};

// One run submitted to a cluster as a job (tuner/slurm.h), recorded before the submitter waits
// on it, so that a resumed session ingests, waits for or resubmits it rather than running its
// trial again.
struct ClusterJob {
  std::string id;                  // the scheduler's job id
  int trial = -1;                  // index of the trial the run is for; -1: none (re-measurement)
  int runs_before = 0;             // that trial's runs_before
  std::string strategy;            // who proposed the configuration
  std::string kind = "trial";      // trial | reference (a node's default, measured for its ratio)
  Config config;
  std::string spec_path, result_path;  // what the job runs and where it writes its result
  std::string state = "submitted";     // submitted | ended (its result read, or it ended without one)
  std::string node;                    // where it ran, once known
};

// The process that owns a session while it searches it (`tune`, `tune --resume`), recorded in the
// store (table tune_owners) so that one live process at a time adds trials to a session. A
// process is known by its pid with its start time, which a reused pid does not share, on its
// host since its boot.
struct SessionOwner {
  std::int64_t pid = 0;
  std::uint64_t start = 0;  // clock ticks after boot when it started (/proc/PID/stat field 22)
  std::string host;         // gethostname()
  std::string boot;         // /proc/sys/kernel/random/boot_id: another boot, another process
  std::string since;        // when it took the session, ISO 8601 UTC (read back only)
};

// This process as an owner.
SessionOwner this_process();

// Whether `o` may still be running: on this host and boot, its pid is alive (not a zombie) with
// the same start time. An owner on another host cannot be looked at from here and counts as
// alive.
bool owner_alive(const SessionOwner& o);

// One stored analysis: what `syspilot analyze` concluded, or the analysis `syspilot tune`
// started with (its sessions name it in their options as "analysis").
struct AnalysisRecord {
  std::int64_t id = 0;
  std::vector<std::string> argv;   // the application and its arguments
  std::string origin;              // "analyze" | "tune"
  std::string summary_json;        // analysis_summary() of the document
  std::string document_json;       // to_json(Analysis) (docs/analysis.md); empty when listed
  std::string created_at;
};

// Sessions and analyses in one SQLite file. Every write is its own transaction: a trial is
// either stored whole or not at all.
class SessionStore {
 public:
  explicit SessionStore(const std::string& db_path);
  // Over a connection the caller owns (the service's, one per thread), its "tuner" schema
  // already migrated: register_session_schema() before the connection was opened.
  explicit SessionStore(store::Database& db);
  ~SessionStore();
  SessionStore(const SessionStore&) = delete;
  SessionStore& operator=(const SessionStore&) = delete;

  std::int64_t create(const SessionInfo& s);
  // create() with the new session owned by this process, in one transaction.
  std::int64_t create_owned(const SessionInfo& s);
  // Takes session `id` for this process (a session that is already its own stays so): nullopt
  // when taken; when another owner is alive (owner_alive()), that owner, and nothing changes. An
  // owner that ended without releasing it (killed by SIGKILL, its pid gone or reused) loses it.
  std::optional<SessionOwner> claim(std::int64_t id);
  // The session's recorded owner, alive or not; nullopt when none.
  std::optional<SessionOwner> owner(std::int64_t id) const;
  // Releases every session this process owns.
  void release_owned();
  std::optional<SessionInfo> get(std::int64_t id) const;
  std::vector<SessionInfo> list() const;          // newest first
  std::vector<Trial> trials(std::int64_t id) const;  // in trial order
  void add_trial(std::int64_t id, const Trial& t);
  void finish(std::int64_t id, const std::string& status);
  void set_result(std::int64_t id, const std::string& result_json);
  void set_budget(std::int64_t id, int budget);  // a resumed session's budget raised by --budget
  // The cluster jobs of a session, in submission order.
  void add_job(std::int64_t id, const ClusterJob& j);
  void end_job(std::int64_t id, const std::string& job_id, const std::string& node);
  std::vector<ClusterJob> jobs(std::int64_t id) const;
  // The sessions started together by one `tune --compare` (options "compare.group"), the
  // session itself included, in id order; only `id` when it was not compared.
  std::vector<std::int64_t> compared(std::int64_t id) const;

  // Analyses: `document_json` is to_json(Analysis) serialised.
  std::int64_t add_analysis(const std::vector<std::string>& argv, const std::string& origin,
                            const std::string& document_json);
  std::optional<AnalysisRecord> analysis(std::int64_t id) const;
  std::vector<AnalysisRecord> analyses() const;  // newest first, without their documents
  // The sessions whose options name this analysis (the ones `tune` started from it).
  std::vector<std::int64_t> sessions_of(std::int64_t analysis_id) const;

  const std::string& path() const;

 private:
  std::unique_ptr<store::Database> owned_;
  store::Database* db_ = nullptr;
};

// What an analysis list shows of a document (to_json(Analysis)): application, contracts,
// relations, and the hypotheses counted by verdict.
nlohmann::json analysis_summary(const nlohmann::json& document);

// Registers the "tuner" schema migrations with the store (idempotent).
void register_session_schema();

// JSON text forms, so that a resumed session searches exactly the space it started with.
std::string space_to_json(const Space& s);
Space space_from_json(const std::string& text);   // throws std::runtime_error on malformed text
std::string guides_to_json(const std::vector<Guide>& g);
std::vector<Guide> guides_from_json(const std::string& text);
std::string config_to_json(const Config& c);
Config config_from_json(const std::string& text);

// What a stored session found, from its trials as tune() reads them: the best successful trial
// (lowest stored value; maximised metrics are stored negated), the default configuration's
// trial, and the speedup between them (trial medians; tune's closing re-measurement is not
// stored). Indices are into the trials; -1 when there is none.
struct SessionOutcome {
  int best = -1;
  int reference = -1;
  double speedup = 0;         // 0 when undefined (no best, no reference, or a value of 0)
  double speedup_spread = 0;  // relative, the sum of both trials' spreads
  int runs = 0;               // runs spent: every trial's repeats plus the analysis' other runs
  int capped = 0;             // trials stopped at the adaptive cap
  int failed = 0;             // trials that failed otherwise
};
SessionOutcome session_outcome(const SessionInfo& s, const std::vector<Trial>& trials);

// A stored trial stopped at the adaptive cap (the store keeps it failed, "capped at ...").
bool capped_trial(const Trial& t);

// The one JSON form of a session, read by `syspilot sessions show --json`, the service and a
// dashboard: id, program, args, strategy, status, times, budget, seed, objective, options,
// machine (null when not recorded), space, guides, trials (config, ok, capped, failure, value
// as measured, spread, repeats, samples, runs_before, node), best, reference, speedup, runs, and
// result (tune's conclusion, SessionInfo::result_json; null before it is written).
// docs/tuner.md ("Sessions") describes the fields.
nlohmann::json session_to_json(const SessionInfo& s, const std::vector<Trial>& trials);

}  // namespace syspilot::tuner
