// `syspilot regen --executor slurm`: one Slurm job per release. The job (`syspilot trial-run`
// with a regen spec) fetches, extracts and drafts on its node with no store, and writes the
// record to a result file; the submitter, which alone opens the SQLite store, stores the
// releases in ascending version order and builds the changelog as a local regen does.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "service/json_forms.h"
#include "service/regen.h"
#include "tuner/slurm.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace syspilot::service {

namespace {

json source_json(const SourceSpec& s) {
  const char* kind = s.kind == SourceSpec::Kind::Dir           ? "dir"
                     : s.kind == SourceSpec::Kind::Git          ? "git"
                     : s.kind == SourceSpec::Kind::DebianSource ? "debian-source"
                                                                : "tarball";
  return {{"kind", kind},        {"path", s.path},       {"url", s.url},
          {"ref", s.ref},        {"package", s.package}, {"version", s.version},
          {"suites", s.suites},  {"fallback_versions", s.fallback_versions}};
}

json record_json(const store::ContractRecord& r) {
  json facts = json::array(), rounds = json::array();
  for (const auto& f : r.facts) facts.push_back({{"json", f.json}, {"source", f.source}});
  for (const auto& v : r.rounds)
    rounds.push_back({{"round", v.round}, {"drafter", v.drafter}, {"diagnostics", v.diagnostics}, {"repairs", v.repairs}});
  return {{"library", r.library},
          {"version", r.version},
          {"lpcl", r.lpcl},
          {"json", r.json},
          {"status", store::to_string(r.status)},
          {"diagnostics", r.diagnostics},
          {"prompt_id", r.prompt_id},
          {"prompt_version", r.prompt_version},
          {"drafter", store::to_string(r.drafter)},
          {"model", r.model},
          {"facts", facts},
          {"rounds", rounds}};
}

store::ContractRecord record_from(const json& j) {
  store::ContractRecord r;
  r.library = j.at("library").get<std::string>();
  r.version = j.at("version").get<std::string>();
  r.lpcl = j.at("lpcl").get<std::string>();
  r.json = j.value("json", std::string());
  const std::string status = j.value("status", std::string("converged"));
  r.status = status == "converged" ? store::ContractStatus::Converged : store::ContractStatus::OpenDiagnostics;
  r.diagnostics = j.value("diagnostics", std::string("[]"));
  r.prompt_id = j.value("prompt_id", std::string());
  r.prompt_version = j.value("prompt_version", 0);
  const std::string drafter = j.value("drafter", std::string("offline"));
  r.drafter = drafter == "llm" ? store::Drafter::Llm : drafter == "manual" ? store::Drafter::Manual : store::Drafter::Offline;
  r.model = j.value("model", std::string());
  for (const auto& f : j.value("facts", json::array()))
    r.facts.push_back({"", f.at("json").get<std::string>(), f.value("source", std::string())});
  for (const auto& v : j.value("rounds", json::array()))
    r.rounds.push_back({v.value("round", 0), v.value("drafter", std::string()), v.value("diagnostics", std::string("[]")),
                        v.value("repairs", std::string("[]"))});
  return r;
}

// The job's result: the outcome as to_json(ReleaseOutcome) writes it, the node and, for a
// prepared release, what the submitter stores.
json prepared_json(const PreparedRelease& p) {
  json j = to_json(p.outcome);
  j["node"] = tuner::node_name();
  if (p.outcome.status == "prepared") {
    j["facts_key"] = p.facts_key;
    j["facts_json"] = p.facts_json;
    j["record"] = record_json(p.record);
  }
  return j;
}

PreparedRelease prepared_from(const json& j, std::string& node) {
  PreparedRelease p;
  ReleaseOutcome& o = p.outcome;
  o.status = j.at("status").get<std::string>();
  if (o.status != "prepared" && o.status != "failed" && o.status != "cancelled")
    throw std::runtime_error("unknown status '" + o.status + "'");
  o.source = j.value("source", std::string());
  o.input_digest = j.value("input_digest", std::string());
  o.converged = j.value("converged", false);
  o.drafter = j.value("drafter", std::string());
  const json llm = j.value("llm", json::object());
  o.llm_calls = llm.value("calls", 0);
  o.llm_cached = llm.value("cached", 0);
  o.prompt_tokens = llm.value("prompt_tokens", 0);
  o.completion_tokens = llm.value("completion_tokens", 0);
  o.seconds = j.value("seconds", 0.0);
  if (j.contains("diagnostics")) o.diags = diagnostics_from_json(j["diagnostics"]);
  node = j.value("node", std::string());
  if (o.status == "prepared") {
    p.facts_key = j.value("facts_key", std::string());
    p.facts_json = j.value("facts_json", std::string());
    p.record = record_from(j.at("record"));
  }
  return p;
}

// A name for files: letters, digits, '.', '-' and '_' kept, anything else '_'.
std::string file_part(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 80)) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
  return out.empty() ? "_" : out;
}

struct Pending {
  ReleaseRequest req;
  std::string spec, result, job, node;
  bool submitted = false;
  std::string why;  // why it could not be submitted
};

ReleaseOutcome failed(const ReleaseRequest& req, const std::string& message, const std::string& code) {
  ReleaseOutcome o;
  o.library = req.library;
  o.version = req.version;
  o.status = "failed";
  o.diags.error(SourceLoc{"slurm", 0, 0}, message, code,
                "check that syspilot, the config and the Slurm folder are on a filesystem the nodes share");
  return o;
}

}  // namespace

std::optional<std::string> run_regen_job(const std::string& spec_text) {
  json spec = json::parse(spec_text, nullptr, false);
  if (!spec.is_object()) throw std::runtime_error("the spec is not a JSON object");
  if (!spec.contains("regen")) return std::nullopt;
  const json& r = spec["regen"];
  if (!r.is_object()) throw std::runtime_error("\"regen\" must be an object");
  const std::string config = r.value("config", std::string());
  ReleaseRequest req;
  req.library = r.value("library", std::string());
  req.version = r.value("version", std::string());
  Diagnostics diags;
  if (config.empty() || req.library.empty() || req.version.empty() || !r.contains("source"))
    throw std::runtime_error("a regen spec needs config, library, version and source");
  if (!parse_source(r["source"], req.source, diags)) throw std::runtime_error("bad source: " + diags.str());
  RegenConfig cfg;
  PreparedRelease p;
  if (!load_regen_config(config, cfg, diags)) {
    p.outcome.status = "failed";
    p.outcome.diags = diags;
    return prepared_json(p).dump();
  }
  auto lib = std::find_if(cfg.libraries.begin(), cfg.libraries.end(), [&](auto& l) { return l.name == req.library; });
  if (lib == cfg.libraries.end()) {
    p.outcome.status = "failed";
    p.outcome.diags.error(SourceLoc{config, 0, 0}, "library '" + req.library + "' is not tracked in this config",
                          "not-tracked");
    return prepared_json(p).dump();
  }
  req.llm = cfg.llm;
  req.overlays = lib->overlays;
  SourcePolicy policy = policy_of(cfg);
  // Its own work folder: jobs side by side never share a fetch cache or apt's state.
  if (const std::string w = r.value("work_dir", std::string()); !w.empty()) policy.work_dir = w;
  p = prepare_release(policy, req);
  return prepared_json(p).dump();
}

RegenReport regenerate_on_cluster(store::Store& st, const RegenConfig& cfg, const ClusterRegen& how,
                                  const std::string& library) {
  RegenReport report;
  if (!how.cluster) throw std::invalid_argument("regenerate_on_cluster: no cluster");
  auto say = [&](const std::string& line) {
    if (how.note) how.note(line);
  };
  SourcePolicy policy = policy_of(cfg);
  std::error_code ec;
  fs::create_directories(how.dir, ec);
  const std::string config = fs::absolute(how.config_path.empty() ? cfg.file : how.config_path, ec).string();
  std::vector<Pending> pending;
  for (auto& req : new_releases(st, cfg, library, report)) {
    Pending p;
    p.req = std::move(req);
    pending.push_back(std::move(p));
  }

  // The time a release may take: its fetch, then extraction and drafting.
  const double limit_s = policy.fetch_timeout_s + 1800;
  auto submit = [&](Pending& p, const std::string& exclude) {
    tuner::JobRequest jr;
    jr.spec_path = p.spec;
    jr.result_path = p.result;
    jr.limit_s = limit_s;
    jr.exclude = exclude;
    fs::remove(p.result, ec);
    p.job = how.cluster->submit(jr);
    p.submitted = true;
  };
  // Every release is submitted first: the jobs run side by side as the cluster allows.
  int seq = 0;
  for (Pending& p : pending) {
    const std::string base = (fs::path(how.dir) / ("regen-" + std::to_string(++seq) + "-" + file_part(p.req.library) + "-" +
                                                    file_part(p.req.version)))
                                 .string();
    p.spec = base + ".spec.json";
    p.result = base + ".result.json";
    json spec = {{"regen",
                  {{"config", config},
                   {"library", p.req.library},
                   {"version", p.req.version},
                   {"source", source_json(p.req.source)},
                   {"work_dir", base + ".work"}}}};
    try {
      {
        std::ofstream out(p.spec, std::ios::binary | std::ios::trunc);
        out << spec.dump(2);
        if (!out.flush()) throw std::runtime_error("cannot write " + p.spec + "; check --slurm-dir");
      }
      submit(p, "");
      say("submitted " + p.req.library + " " + p.req.version + " as Slurm job " + p.job);
    } catch (const std::exception& e) {
      p.why = e.what();
    }
  }
  // Stored in order, so that each diffs against the version before it.
  for (Pending& p : pending) {
    if (!p.submitted) {
      report.outcomes.push_back(failed(p.req, "could not submit the job: " + p.why, "slurm-submit"));
      continue;
    }
    tuner::JobStatus last;
    bool have = tuner::await_result(*how.cluster, p.job, p.result, how.poll_s, how.unknown_s, how.grace_s, last);
    if (!have) {
      // Nothing the release did: the cluster lost the job. Once more, away from its node.
      const std::string state = last.state.empty() ? "left the queue" : "ended " + last.state;
      const std::string first = p.job;
      say("Slurm job " + first + " (" + p.req.library + " " + p.req.version + ") " + state +
          " without a result; resubmitting it once" + (last.node.empty() ? "" : ", away from " + last.node));
      try {
        try {
          submit(p, last.node);
        } catch (const std::runtime_error&) {
          submit(p, "");  // no other node takes it: it waits for its node to return
        }
        have = tuner::await_result(*how.cluster, p.job, p.result, how.poll_s, how.unknown_s, how.grace_s, last);
      } catch (const std::exception& e) {
        report.outcomes.push_back(failed(p.req, "could not resubmit job " + first + ": " + e.what(), "slurm-submit"));
        continue;
      }
      if (!have) {
        report.outcomes.push_back(failed(p.req,
                                         "Slurm job " + p.job + " " + (last.state.empty() ? "left the queue" : "ended " + last.state) +
                                             " without a result, as did job " + first + " before it",
                                         "slurm-no-result"));
        continue;
      }
    }
    try {
      std::string node;
      PreparedRelease prepared = prepared_from(json::parse(tuner::read_text(p.result)), node);
      ReleaseOutcome o = store_prepared(st, p.req, std::move(prepared));
      say(p.req.library + " " + p.req.version + ": " + o.status + (node.empty() ? "" : " (job " + p.job + " on " + node + ")"));
      report.outcomes.push_back(std::move(o));
    } catch (const std::exception& e) {
      report.outcomes.push_back(failed(p.req, "job " + p.job + " wrote an unreadable result: " + e.what(), "slurm-bad-result"));
    }
  }
  return report;
}

}  // namespace syspilot::service
