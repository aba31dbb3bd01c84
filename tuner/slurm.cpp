// The Slurm executor: trial specs and results as JSON files, sbatch and scontrol as the cluster,
// and the objective that submits a job per run, waits for its result and scales it to the
// reference node.
#include "tuner/slurm.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tuner/analyze.h"
#include "tuner/run.h"

namespace syspilot::tuner {

namespace fs = std::filesystem;
using nlohmann::json;

// ---- specs and results ----------------------------------------------------------------------

std::string trial_spec_to_json(const TrialSpec& s) {
  const ObjectiveSpec& o = s.objective;
  return json{{"space", json::parse(space_to_json(s.space))},
              {"objective",
               {{"argv", o.argv},
                {"timeout_s", o.timeout_s},
                {"metric_regex", o.metric_regex},
                {"maximize", o.maximize},
                {"score_cmd", o.score_cmd},
                {"env", o.env},
                {"shim", o.shim}}},
              {"config", s.config},
              {"limit_s", s.limit_s},
              {"reference_output", s.reference_output}}
      .dump();
}

TrialSpec trial_spec_from_json(const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::runtime_error("trial spec is not a JSON object");
  TrialSpec s;
  try {
    s.space = space_from_json(j.at("space").dump());
    const json& o = j.at("objective");
    s.objective.argv = o.at("argv").get<std::vector<std::string>>();
    s.objective.timeout_s = o.value("timeout_s", 60.0);
    s.objective.metric_regex = o.value("metric_regex", "");
    s.objective.maximize = o.value("maximize", false);
    s.objective.score_cmd = o.value("score_cmd", "");
    s.objective.env = o.value("env", std::map<std::string, std::string>{});
    s.objective.shim = o.value("shim", "");
    s.config = j.at("config").get<Config>();
    s.limit_s = j.value("limit_s", 0.0);
    s.reference_output = j.value("reference_output", "");
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("trial spec is malformed: ") + e.what());
  }
  if (s.objective.argv.empty()) throw std::runtime_error("trial spec names no program");
  return s;
}

std::string analysis_spec_to_json(const AnalysisSpec& s) {
  return json{{"analysis",
               {{"argv", s.argv},
                {"source", s.source},
                {"manifest", s.manifest},
                {"timeout_s", s.timeout_s},
                {"max_runs", s.max_runs}}}}
      .dump(1);
}

std::optional<AnalysisSpec> analysis_spec_from_json(const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::runtime_error("spec is not a JSON object");
  if (!j.contains("analysis")) return std::nullopt;
  AnalysisSpec s;
  try {
    const json& a = j.at("analysis");
    s.argv = a.at("argv").get<std::vector<std::string>>();
    s.source = a.value("source", "");
    s.manifest = a.value("manifest", "");
    s.timeout_s = a.value("timeout_s", 60.0);
    s.max_runs = a.value("max_runs", 0);
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("analysis spec is malformed: ") + e.what());
  }
  if (s.argv.empty()) throw std::runtime_error("analysis spec names no program");
  if (!(s.timeout_s > 0) || s.max_runs < 0) throw std::runtime_error("analysis spec: timeout_s must be > 0, max_runs >= 0");
  return s;
}

std::string trial_result_to_json(const TrialResult& r) {
  const Measurement& m = r.m;
  return json{{"ok", m.ok},         {"failure", m.failure}, {"value", m.value},     {"spread", m.spread},
              {"repeats", m.repeats}, {"samples", m.samples}, {"walls", m.walls},   {"capped", m.capped},
              {"lower_bound", m.lower_bound}, {"node", m.node}, {"reference_output", r.reference_output}}
      .dump();
}

TrialResult trial_result_from_json(const std::string& text) {
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::runtime_error("trial result is not a JSON object");
  TrialResult r;
  try {
    r.m.ok = j.at("ok").get<bool>();
    r.m.failure = j.value("failure", "");
    r.m.value = j.at("value").get<double>();
    r.m.spread = j.value("spread", 0.0);
    r.m.repeats = j.value("repeats", 1);
    r.m.samples = j.value("samples", std::vector<double>{});
    r.m.walls = j.value("walls", std::vector<double>{});
    r.m.capped = j.value("capped", false);
    r.m.lower_bound = j.value("lower_bound", 0.0);
    r.m.node = j.at("node").get<std::string>();
    r.reference_output = j.value("reference_output", "");
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("trial result is malformed: ") + e.what());
  }
  return r;
}

std::string node_name() {
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

std::string tail(const std::string& s, size_t n) { return s.size() > n ? s.substr(s.size() - n) : s; }

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// A Slurm client command, its output; never throws for the command's own failure.
RunResult slurm_command(std::vector<std::string> argv) {
  RunSpec rs;
  rs.argv = std::move(argv);
  rs.timeout_s = 60;
  rs.sample_interval_s = 0;
  rs.perf = false;
  rs.placeholders = false;
  return run(rs);
}

}  // namespace

TrialResult run_trial(const TrialSpec& spec) {
  LiveObjective live(spec.space, spec.objective);
  live.set_reference_output(spec.reference_output);
  TrialResult r;
  r.m = live.evaluate_within(spec.config, spec.limit_s);
  r.m.failure = note_dropped_output(r.m.failure);
  r.m.node = node_name();
  if (spec.config.empty()) r.reference_output = live.reference_output();
  return r;
}

// ---- the cluster ------------------------------------------------------------------------------

Cluster::~Cluster() = default;

bool job_alive(const JobStatus& s) {
  static const std::set<std::string> alive = {"PENDING",   "CONFIGURING",  "RUNNING",     "COMPLETING",
                                              "SUSPENDED", "REQUEUED",     "REQUEUE_HOLD", "REQUEUE_FED",
                                              "RESIZING",  "SIGNALING",    "STAGE_OUT",   "STOPPED"};
  return alive.count(s.state) > 0;
}

SlurmCluster::SlurmCluster(SlurmOptions o) : o_(std::move(o)) {
  for (const char* tool : {"sbatch", "scontrol"})
    if (find_on_path(tool).empty())
      throw std::runtime_error(std::string("--executor slurm needs Slurm's client commands, and ") + tool +
                               " is not on PATH: install slurm-client (and set SLURM_CONF if the cluster's "
                               "configuration is not in /etc/slurm), or use --executor local");
}

std::vector<std::string> SlurmCluster::sbatch_argv(const JobRequest& r) const {
  std::vector<std::string> a = {"sbatch", "--parsable", "--exclusive", "-N1", "--no-requeue",
                                "--job-name=syspilot-trial"};
  // Slurm's limit is in whole minutes: the run's own limit, rounded up with a margin for the
  // job's start and the result's write, so that the run's timeout (a failed trial) or cap (a
  // capped one) always comes before Slurm's (a lost job).
  if (r.limit_s > 0) a.push_back("--time=" + std::to_string(static_cast<long>(std::ceil((r.limit_s + o_.margin_s) / 60))));
  if (!o_.partition.empty()) a.push_back("--partition=" + o_.partition);
  if (!r.nodelist.empty()) a.push_back("--nodelist=" + r.nodelist);
  if (!r.exclude.empty()) a.push_back("--exclude=" + r.exclude);
  a.insert(a.end(), o_.args.begin(), o_.args.end());
  a.push_back("--output=" + (fs::path(o_.dir) / "job-%j.out").string());
  // The job script runs its arguments: sbatch passes them on as words, so no path is quoted.
  a.insert(a.end(), {job_script(), o_.syspilot, "trial-run", "--spec", r.spec_path, "--out", r.result_path});
  return a;
}

std::string SlurmCluster::job_script() const { return (fs::path(o_.dir) / "syspilot-job.sh").string(); }

std::string SlurmCluster::submit(const JobRequest& r) {
  if (!fs::exists(job_script())) {
    std::ofstream out(job_script(), std::ios::trunc);
    out << "#!/bin/sh\n# A run of `syspilot tune --executor slurm`: syspilot trial-run --spec SPEC --out RESULT\nexec \"$@\"\n";
    if (!out.flush()) throw std::runtime_error("cannot write " + job_script() + "; check --slurm-dir");
  }
  RunResult res = slurm_command(sbatch_argv(r));
  std::string id = trimmed(res.stdout_text);
  id = id.substr(0, id.find(';'));  // --parsable: "ID" or "ID;CLUSTER"
  if (!res.ok() || id.empty() || id.find_first_not_of("0123456789_") != std::string::npos) {
    std::string why = trimmed(tail(res.stderr_text, 400));
    std::replace(why.begin(), why.end(), '\n', ' ');  // one line: sbatch says it twice over
    throw std::runtime_error("sbatch failed (" + (res.failure.empty() ? std::string("no job id") : res.failure) +
                             "): " + why +
                             "; check --partition and --slurm-arg, and that the cluster answers (sinfo)");
  }
  return id;
}

JobStatus SlurmCluster::status(const std::string& job) {
  JobStatus s;
  RunResult res = slurm_command({"scontrol", "-o", "show", "job", job});
  if (!res.ok()) return s;  // purged, or the controller did not answer: the caller decides
  std::istringstream words(res.stdout_text);
  for (std::string w; words >> w;) {
    auto eq = w.find('=');
    if (eq == std::string::npos) continue;
    std::string key = w.substr(0, eq), value = w.substr(eq + 1);
    if (key == "JobState") s.state = value;
    else if (key == "NodeList" && value != "(null)") s.node = value;
    else if (key == "Reason") s.reason = value;
  }
  return s;
}

// ---- per-node references ----------------------------------------------------------------------

void NodeReferences::record(const std::string& node, double default_value) {
  if (node.empty() || defaults_.count(node)) return;
  defaults_[node] = default_value;
  if (reference_.empty()) reference_ = node;
}

double NodeReferences::scale(const std::string& node, double value) const {
  auto n = defaults_.find(node);
  if (node == reference_ || n == defaults_.end() || n->second == 0) return value;
  return value * (defaults_.at(reference_) / n->second);
}

// ---- the objective ----------------------------------------------------------------------------

SlurmObjective::SlurmObjective(Cluster& cluster, Space space, ObjectiveSpec spec, std::string dir)
    : cluster_(cluster), space_(std::move(space)), spec_(std::move(spec)), dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (!fs::is_directory(dir_))
    throw std::runtime_error("cannot create the Slurm results folder " + dir_ + " (" + ec.message() +
                             "); give a writable folder the nodes share with --slurm-dir");
}

void SlurmObjective::plan(const RunPlan& next) { plan_ = next; }

Measurement SlurmObjective::evaluate(const Config& c) { return evaluate_within(c, 0); }

Measurement SlurmObjective::evaluate_within(const Config& c, double limit_s) {
  return evaluate_batch({{c, limit_s, plan_}}).front();
}

std::vector<Measurement> SlurmObjective::evaluate_batch(const std::vector<BatchRun>& runs) {
  std::vector<ClusterJob> jobs;
  for (const auto& r : runs) {
    plan_ = r.plan;
    // The budget's last run has no room for a new node's reference run: it goes to the
    // reference node, whose default is known.
    const std::string pin = plan_.runs_left == 1 && !r.config.empty() ? refs_.reference_node() : std::string();
    jobs.push_back(submit(r.config, r.limit_s, "trial", pin, ""));
  }
  std::vector<Measurement> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    plan_ = runs[i].plan;
    out.push_back(referenced(runs[i].config, await(jobs[i], runs[i].limit_s, false)));
  }
  return out;
}

ClusterJob SlurmObjective::submit(const Config& c, double limit_s, const std::string& kind,
                                  const std::string& nodelist, const std::string& exclude) {
  const std::string stem = (fs::path(dir_) / ((plan_.trial >= 0 ? "trial-" + std::to_string(plan_.trial) : "run") +
                                              "-" + std::to_string(::getpid()) + "-" + std::to_string(++sequence_)))
                               .string();
  ClusterJob j;
  j.trial = plan_.trial;
  j.runs_before = plan_.runs_before;
  j.strategy = plan_.strategy;
  j.kind = kind;
  j.config = c;
  j.spec_path = stem + ".spec.json";
  j.result_path = stem + ".result.json";
  TrialSpec ts{space_, spec_, c, limit_s, reference_output_};
  {
    std::ofstream out(j.spec_path, std::ios::binary | std::ios::trunc);
    out << trial_spec_to_json(ts);
    if (!out.flush()) throw std::runtime_error("cannot write " + j.spec_path + "; check --slurm-dir");
  }
  JobRequest r;
  r.spec_path = j.spec_path;
  r.result_path = j.result_path;
  const bool capping = limit_s > 0 && (spec_.timeout_s <= 0 || limit_s < spec_.timeout_s);
  r.limit_s = capping ? limit_s : spec_.timeout_s;
  if (r.limit_s > 0 && !spec_.score_cmd.empty()) r.limit_s += spec_.timeout_s;  // the score command's own timeout
  r.nodelist = nodelist;
  r.exclude = exclude;
  j.id = cluster_.submit(r);
  if (on_submit) on_submit(j);
  return j;
}

bool await_result(Cluster& c, const std::string& job, const std::string& result_path, double poll_s, double unknown_s,
                  double grace_s, JobStatus& st) {
  using clock = std::chrono::steady_clock;
  // The result file is looked for often (it is what ends the wait); the scheduler is asked less
  // often, to notice a job that ended without one.
  auto next_poll = clock::now();
  auto last_known = clock::now();
  for (;;) {
    if (fs::exists(result_path)) return true;
    if (clock::now() >= next_poll) {
      st = c.status(job);
      next_poll = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(poll_s));
      // A job the controller does not answer for may be one it is too busy to report: it is
      // taken as gone only after unknown_s of silence.
      if (!st.state.empty()) last_known = clock::now();
      if (!st.state.empty() ? !job_alive(st)
                            : clock::now() - last_known >= std::chrono::duration<double>(unknown_s))
        break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto until = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(grace_s));
  while (clock::now() < until) {
    if (fs::exists(result_path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// A failed result the job wrote while the cluster killed it (the node went down under it, the
// job was preempted) is the cluster's doing, not the configuration's: the run was stopped by the
// signal Slurm sends, and is lost like a job that wrote nothing. Asked only of failed results,
// once the job has left the queue (at most unknown_s + grace_s).
std::optional<JobStatus> SlurmObjective::killed_with_node(const ClusterJob& job) {
  using clock = std::chrono::steady_clock;
  const auto until = clock::now() + std::chrono::duration_cast<clock::duration>(
                                        std::chrono::duration<double>(unknown_s + grace_s));
  JobStatus st = cluster_.status(job.id);
  while (job_alive(st) && clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
    st = cluster_.status(job.id);
  }
  if (st.state == "NODE_FAIL" || st.state == "PREEMPTED" || st.state == "BOOT_FAIL") return st;
  return std::nullopt;
}

Measurement SlurmObjective::await(ClusterJob job, double limit_s, bool retried) {
  JobStatus st;
  if (await_result(cluster_, job.id, job.result_path, poll_s, unknown_s, grace_s, st)) {
    // A result that is not JSON of a trial throws here: the run wrote garbage.
    TrialResult r = trial_result_from_json(read_text(job.result_path));
    // A failed result written as the cluster killed the job (Slurm's SIGTERM, then NODE_FAIL,
    // PREEMPTED or BOOT_FAIL) is the node's failure, handled below like a lost job; the job's
    // state is asked only of failed results, once it has left the queue.
    std::optional<JobStatus> killed;
    if (!r.m.ok && !r.m.capped) killed = killed_with_node(job);
    if (!killed) {
      if (job.config.empty() && reference_output_.empty()) reference_output_ = r.reference_output;
      job.node = r.m.node;
      if (on_end) on_end(job);
      return r.m;
    }
    st = *killed;
  }
  job.node = st.node;
  if (on_end) on_end(job);
  const std::string how = (st.state.empty() ? std::string("left the queue") : "ended " + st.state) +
                          (st.reason.empty() || st.reason == "None" ? "" : " (" + st.reason + ")");
  if (st.state == "OUT_OF_MEMORY") {
    // The configuration's doing, as an out-of-memory kill is locally.
    Measurement m;
    m.repeats = 1;
    m.node = st.node;
    m.failure = "out of memory (Slurm job " + job.id + " ended OUT_OF_MEMORY)";
    return m;
  }
  std::string output;
  try {
    output = trimmed(tail(read_text((fs::path(dir_) / ("job-" + job.id + ".out")).string()), 300));
  } catch (const std::exception&) {
  }
  if (retried)
    throw std::runtime_error("Slurm job " + job.id + (job.node.empty() ? "" : " on " + job.node) + " " + how +
                             " without a result, as did the job it retried" +
                             (output.empty() ? std::string() : "; its output: " + output) +
                             "; check that syspilot, the program and " + dir_ +
                             " are on a filesystem the nodes share (resume the session once fixed)");
  // Neither the configuration nor the run wrote this: the cluster lost the job. Once more, on
  // another node where there is one; a reference run stays on its node.
  const bool pinned = job.kind == "reference";
  if (note)
    note("Slurm job " + job.id + (job.node.empty() ? "" : " on " + job.node) + " " + how +
         " without a result (the cluster's failure, not the configuration's); resubmitting it once" +
         (pinned || job.node.empty() ? std::string() : ", away from " + job.node));
  const RunPlan saved = plan_;
  plan_ = {job.trial, job.runs_before, -1, job.strategy};
  ClusterJob again;
  bool placed = false;
  if (!pinned && !job.node.empty()) {
    try {
      again = submit(job.config, limit_s, job.kind, "", job.node);
      placed = true;
    } catch (const std::runtime_error& e) {
      // No other node will take it (a one-node partition): it waits for its node to return.
      if (note) note(std::string("no other node takes it (") + e.what() + "); it waits for " + job.node + " to return");
    }
  }
  if (!placed) again = submit(job.config, limit_s, job.kind, pinned ? job.node : "", "");
  plan_ = saved;
  return await(again, limit_s, true);
}

Measurement SlurmObjective::referenced(const Config& c, Measurement m) {
  if (m.node.empty()) return m;
  if (c.empty() && m.ok) refs_.record(m.node, m.value);
  if (!m.ok) return m;  // failed or capped: no value a ratio would change
  if (!refs_.knows(m.node) && !refs_.reference_node().empty()) {
    if (note) note("node " + m.node + " has no measured default yet: one run of the default there (charged)");
    ClusterJob j = submit({}, 0, "reference", m.node, "");
    Measurement d = await(j, 0, false);
    m.repeats += std::max(1, d.repeats);
    if (d.ok) refs_.record(d.node, d.value);
  }
  const double scaled = refs_.scale(m.node, m.value);
  if (scaled != m.value && m.value != 0) {
    const double f = scaled / m.value;
    for (double& s : m.samples) s *= f;
    m.value = scaled;
  }
  return m;
}

Measurement SlurmObjective::adopt(const ClusterJob& job) {
  double limit_s = 0;
  try {
    limit_s = trial_spec_from_json(read_text(job.spec_path)).limit_s;
  } catch (const std::exception&) {
  }
  Measurement m;
  if (fs::exists(job.result_path) || job_alive(cluster_.status(job.id))) {
    m = await(job, limit_s, false);
  } else {
    if (note) note("Slurm job " + job.id + " ended without a result while no one waited: resubmitting it");
    if (on_end) on_end(job);  // replaced: a later resume does not resubmit it again
    const RunPlan saved = plan_;
    plan_ = {job.trial, job.runs_before, -1, job.strategy};
    ClusterJob again = submit(job.config, limit_s, job.kind, job.kind == "reference" ? job.node : "", "");
    plan_ = saved;
    m = await(again, limit_s, false);
  }
  if (job.kind == "reference") {
    if (m.ok) refs_.record(m.node, m.value);
    return m;
  }
  return referenced(job.config, m);
}

void SlurmObjective::learn(const ClusterJob& job) {
  if (!job.config.empty() || !fs::exists(job.result_path)) return;
  try {
    TrialResult r = trial_result_from_json(read_text(job.result_path));
    if (reference_output_.empty()) reference_output_ = r.reference_output;
    if (r.m.ok) refs_.record(r.m.node, r.m.value);
  } catch (const std::exception&) {
    // A result that cannot be read teaches nothing; adopt() reports it if its trial needs it.
  }
}

std::string run_analysis(const AnalysisSpec& s) {
  AnalyzeOptions ao;
  ao.compose.binary = s.argv.front();
  ao.compose.source_dir = s.source;
  ao.compose.manifest = s.manifest;
  ao.compose.args = s.argv;
  ao.profile.run.argv = s.argv;
  ao.profile.run.timeout_s = s.timeout_s;
  ao.profile.max_runs = s.max_runs;
  nlohmann::json j = to_json(analyze(ao));
  j["node"] = node_name();
  return j.dump();
}

nlohmann::json analyse_on_node(Cluster& c, const std::string& dir, const AnalysisSpec& s, double limit_s) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string stem = (fs::path(dir) / ("analysis-" + std::to_string(::getpid()))).string();
  JobRequest r;
  r.spec_path = stem + ".spec.json";
  r.result_path = stem + ".result.json";
  r.limit_s = limit_s;
  fs::remove(r.result_path, ec);
  {
    std::ofstream out(r.spec_path, std::ios::trunc);
    out << analysis_spec_to_json(s);
    if (!out.flush()) throw std::runtime_error("cannot write " + r.spec_path + "; check --slurm-dir");
  }
  const std::string job = c.submit(r);
  JobStatus st;
  if (!await_result(c, job, r.result_path, 0.25, 10, 3, st)) {
    std::string output;
    try {
      output = trimmed(tail(read_text((fs::path(dir) / ("job-" + job + ".out")).string()), 300));
    } catch (const std::exception&) {
    }
    throw std::runtime_error("the analysis job " + job + (st.node.empty() ? "" : " on " + st.node) + " " +
                             (st.state.empty() ? std::string("left the queue") : "ended " + st.state) +
                             " without a result" + (output.empty() ? std::string() : ": " + output));
  }
  auto j = json::parse(read_text(r.result_path), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("hypotheses"))
    throw std::runtime_error("the analysis job " + job + " wrote no analysis to " + r.result_path);
  return j;
}

}  // namespace syspilot::tuner
