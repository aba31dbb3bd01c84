// The Slurm executor: each run of a trial is one batch job with a node to itself, running
// `syspilot trial-run` there (the live objective, unchanged), which writes its measurement to a
// file on the shared filesystem for the submitter to ingest. The submitter alone keeps the store.
#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tuner/measure.h"
#include "tuner/session.h"

namespace syspilot::tuner {

// What one job runs: the objective, the configuration and the run's limit. The submitter writes
// it as JSON beside the results; `syspilot trial-run --spec` reads it on the node.
struct TrialSpec {
  Space space;
  ObjectiveSpec objective;
  Config config;
  double limit_s = 0;            // the adaptive cap (Objective::evaluate_within); <= 0: the timeout alone
  std::string reference_output;  // the default configuration's stderr (LiveObjective::reference_output)
};
std::string trial_spec_to_json(const TrialSpec& s);
TrialSpec trial_spec_from_json(const std::string& text);  // throws std::runtime_error

// What a job wrote: one run's measurement, the node that ran it and, for the default
// configuration, its stderr (the next specs carry it).
struct TrialResult {
  Measurement m;
  std::string reference_output;
};
std::string trial_result_to_json(const TrialResult& r);
TrialResult trial_result_from_json(const std::string& text);  // throws std::runtime_error

// The node as Slurm names it (SLURMD_NODENAME; --nodelist and --exclude take that name), else
// the host's name: what a job reports as where it ran.
std::string node_name();
// A spec's or a result's text. Throws std::runtime_error when it cannot be read.
std::string read_text(const std::string& path);

// The node's side: one run of the spec by the live objective, as a local session runs it.
TrialResult run_trial(const TrialSpec& spec);

// The analysis job of `syspilot tune --executor slurm`: the analysis of the application
// (composition, hypotheses, profile) run on a node, as tune runs it locally. The submitter is
// no node: how the program behaves there says nothing of a node. Its result is the analysis'
// JSON (to_json(Analysis), docs/analysis.md).
struct AnalysisSpec {
  std::vector<std::string> argv;  // argv[0] a path the node sees
  std::string source, manifest;   // tune's --source and --manifest ("" none); jobs never open the
                                  // store (SQLite over a network filesystem is not safe)
  double timeout_s = 60;          // per run of the application
  int max_runs = 0;               // ProfileOptions::max_runs (0: no limit)
};
std::string analysis_spec_to_json(const AnalysisSpec& s);
// nullopt for a trial spec (no "analysis" object); throws std::runtime_error when malformed.
std::optional<AnalysisSpec> analysis_spec_from_json(const std::string& text);
// The node's side: the analysis' JSON text.
std::string run_analysis(const AnalysisSpec& s);

// A job as the executor asks for it: one node to itself, the run's time limit, where to write.
struct JobRequest {
  std::string spec_path, result_path;
  double limit_s = 0;        // the run's own limit (cap or timeout); the job's is longer
  std::string nodelist;      // run on this node ("" any)
  std::string exclude;       // not on this node ("" none)
};

// A job as the scheduler reports it.
struct JobStatus {
  std::string state;   // Slurm's JobState (PENDING, RUNNING, COMPLETED, NODE_FAIL, ...); "" unknown to it
  std::string node;    // the node it ran on, once allocated
  std::string reason;  // Slurm's Reason, for messages
};
// The job is still queued or running (a job whose state is unknown is not).
bool job_alive(const JobStatus& s);

// The scheduler as the executor uses it: SlurmCluster runs sbatch and scontrol; tests use a fake.
class Cluster {
 public:
  virtual ~Cluster();
  // The job's id. Throws std::runtime_error when the job cannot be submitted.
  virtual std::string submit(const JobRequest& r) = 0;
  virtual JobStatus status(const std::string& job) = 0;
};

// Waits for a job's result file: looked for often, the scheduler asked every `poll_s` to notice
// a job that ended without one (a job it does not know is taken as gone after `unknown_s`, then
// the result may lag by `grace_s`). True when the result is there; otherwise `last` holds the
// job's last known state.
bool await_result(Cluster& c, const std::string& job, const std::string& result_path, double poll_s, double unknown_s,
                  double grace_s, JobStatus& last);

// The analysis as a job: writes the spec to `dir`, submits it with a limit of
// `limit_s`, waits, and returns the analysis' JSON. Throws std::runtime_error saying why there is
// none (the job could not be submitted, ended without a result, or wrote no analysis).
nlohmann::json analyse_on_node(Cluster& c, const std::string& dir, const AnalysisSpec& s, double limit_s);

struct SlurmOptions {
  std::string partition;               // --partition ("" the cluster's default)
  std::vector<std::string> args;       // more sbatch arguments, as given (--account=A, --qos=Q)
  std::string dir;                     // specs, results and job output: on a filesystem the nodes share
  std::string syspilot;                // the syspilot executable the nodes run (shared too)
  double margin_s = 60;                // the job's time limit beyond its run's
};

class SlurmCluster final : public Cluster {
 public:
  // Throws std::runtime_error, saying what to install, when sbatch or scontrol is not on PATH.
  explicit SlurmCluster(SlurmOptions o);
  std::string submit(const JobRequest& r) override;
  JobStatus status(const std::string& job) override;
  // The sbatch command line of a request (for messages and tests).
  std::vector<std::string> sbatch_argv(const JobRequest& r) const;

 private:
  std::string job_script() const;  // in SlurmOptions::dir, written at the first submission

  SlurmOptions o_;
};

// Per-node references: the default configuration's first value measured on each node; the first
// node measured is the reference node. A value measured on another node is scaled by
// reference default / that node's default, as if the reference node had run it.
class NodeReferences {
 public:
  // Records a node's default unless one is known already; the first recorded node becomes the
  // reference node.
  void record(const std::string& node, double default_value);
  bool knows(const std::string& node) const { return defaults_.count(node) > 0; }
  const std::string& reference_node() const { return reference_; }
  const std::map<std::string, double>& defaults() const { return defaults_; }
  // value x reference default / node's default; unchanged for the reference node, an unknown
  // node or a default of 0.
  double scale(const std::string& node, double value) const;

 private:
  std::map<std::string, double> defaults_;
  std::string reference_;
};

// Runs each evaluate() as a job (a batch as jobs submitted together) and waits for its result
// file, watching the job so that one that ended without a result is noticed. A job the cluster lost (node failure, preemption,
// cancellation, Slurm's time limit, no result) is resubmitted once, away from its node; a run
// that failed for its configuration (exit code, signal, timeout, cap) comes back failed or
// capped as locally. Values are scaled to the reference node (NodeReferences): a successful run
// on a node whose default is unknown is followed by one run of the default pinned to that node,
// charged as a run of the trial (its repeats).
class SlurmObjective final : public Objective {
 public:
  // `dir` holds the specs and results (SlurmOptions::dir).
  SlurmObjective(Cluster& cluster, Space space, ObjectiveSpec spec, std::string dir);
  Measurement evaluate(const Config& c) override;
  Measurement evaluate_within(const Config& c, double limit_s) override;
  void plan(const RunPlan& next) override;
  // Submits every run, then waits for each: the jobs run side by side as the cluster allows.
  std::vector<Measurement> evaluate_batch(const std::vector<BatchRun>& runs) override;

  // An earlier process' job (a resumed session): its result when written; else it is waited
  // for while queued or running, and resubmitted when gone. Scaled as evaluate()'s.
  Measurement adopt(const ClusterJob& job);
  // Learns the node defaults from an earlier process' finished jobs (the default's results).
  void learn(const ClusterJob& job);

  const NodeReferences& references() const { return refs_; }

  std::function<void(const ClusterJob&)> on_submit;  // before waiting on it: record it
  std::function<void(const ClusterJob&)> on_end;     // its result read, or it ended without one
  std::function<void(const std::string&)> note;      // a line for the user (a retry)
  double poll_s = 0.25;   // how often the scheduler is asked about a job
  double grace_s = 3;     // how long a result may lag its job's end (a shared filesystem's caching)
  double unknown_s = 10;  // how long the scheduler may not know a job before it counts as gone

 private:
  ClusterJob submit(const Config& c, double limit_s, const std::string& kind, const std::string& nodelist,
                    const std::string& exclude);
  // Waits for the job's result; a job lost for the cluster's reasons is resubmitted once.
  Measurement await(ClusterJob job, double limit_s, bool retried);
  // The job's final state when the cluster ended it (NODE_FAIL, PREEMPTED, BOOT_FAIL), asked
  // until it leaves the queue; nullopt when it ended otherwise.
  std::optional<JobStatus> killed_with_node(const ClusterJob& job);
  Measurement referenced(const Config& c, Measurement m);

  Cluster& cluster_;
  Space space_;
  ObjectiveSpec spec_;
  std::string dir_;
  RunPlan plan_;
  NodeReferences refs_;
  std::string reference_output_;
  int sequence_ = 0;
};

}  // namespace syspilot::tuner
