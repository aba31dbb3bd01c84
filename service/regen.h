// Regeneration from upstream releases: the tracked-libraries configuration, release feeds
// (git tags, Debian source packages across suites, directories, tarballs), and building one
// release (fetch, extract, synthesize, validate, store, semantic diff against the previous
// version) with content-addressed caches so that an unchanged input costs no extraction and
// no LLM call.
#pragma once
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lpcl/diagnostics.h"
#include "lpcl/lpcl.h"
#include "service/sources.h"
#include "store/store.h"
#include "synth/synth.h"

namespace syspilot::tuner { class Cluster; }

namespace syspilot::service {

// One release feed of a tracked library (see docs/service.md for the file format).
struct Feed {
  enum class Kind { Git, DebianSource, Dir, Tarball };
  Kind kind = Kind::Git;
  std::string url;                     // Git
  std::string tag_pattern;             // Git: ECMAScript regex; group 1 (else the tag) is the version
  std::string package;                 // DebianSource
  std::vector<std::string> suites;     // DebianSource: default bookworm, trixie, sid
  std::string path;                    // Dir: a folder of release folders
  std::string pattern;                 // Dir: regex on folder names; group 1 is the version
  std::vector<std::pair<std::string, SourceSpec>> releases;  // Tarball/Dir: explicit version -> source
  std::vector<std::string> only_versions;  // keep only these versions (empty: all)
};

struct TrackedLibrary {
  std::string name;
  std::vector<Feed> feeds;
  // Reviewed corrections (LPCL files, statements marked origin manual) applied to every
  // release's contract after validation, as `syspilot synth --overlay` does.
  std::vector<std::string> overlays;
};

struct RegenConfig {
  std::string file;                    // where it was read from (relative paths resolve against it)
  std::string db_path;                 // "store"; the CLI's --db overrides
  std::string work_dir;                // fetched sources; default: <config dir>/.syspilot-work
  std::vector<std::string> source_roots;
  // Outbound hosts allowed beyond those the config names (the server's --allow-outbound).
  std::vector<std::string> allow_outbound;
  std::optional<synth::LlmConfig> llm; // "llm": {"url", "model", "api_key_env"}; absent: offline drafter
  std::string changelog;               // where `syspilot regen` writes the Markdown changelog (optional)
  std::vector<TrackedLibrary> libraries;
};

bool load_regen_config(const std::string& path, RegenConfig& out, Diagnostics& diags);
bool parse_regen_config(const nlohmann::json& j, const std::string& file, RegenConfig& out, Diagnostics& diags);

SourcePolicy policy_of(const RegenConfig& cfg);

struct Release {
  std::string version;  // the contract version ("0.3.21")
  SourceSpec source;
  std::string label;    // "openblas=0.3.21+ds-4", "v1.2.0"
};

// Every release the feeds offer, ascending by version; for a version offered twice, the first
// feed wins (and for Debian, the highest revision of the same upstream version, the other
// revisions newest first as its fallbacks).
bool list_releases(const TrackedLibrary& lib, const SourcePolicy& policy, std::vector<Release>& out,
                   Diagnostics& diags);

// "0.3.21+ds-4" -> "0.3.21", "1:2.5-1" -> "2.5", "1.5.4+dfsg2-5" -> "1.5.4".
std::string upstream_version(const std::string& debian_version);

struct ReleaseRequest {
  std::string library;
  std::string version;
  SourceSpec source;
  std::optional<synth::LlmConfig> llm;
  bool force = false;  // rebuild even when the same input built the stored contract
  std::vector<std::string> overlays;  // applied after validation; part of the input digest
};

struct ReleaseOutcome {
  std::string library, version;
  std::string status;          // stored | unchanged | failed | cancelled
  std::string source;          // what was fetched, in words
  std::string input_digest;    // content address of the input
  bool input_cached = false;   // same input already built this version: nothing redone
  bool facts_cached = false;   // facts reused: no extraction
  std::string contract_digest;
  int revision = 0;
  bool converged = false;
  std::string drafter;
  int llm_calls = 0, llm_cached = 0, prompt_tokens = 0, completion_tokens = 0;
  std::string previous_version;  // empty when this is the first version stored
  lpcl::ContractDiff diff;       // against previous_version
  Diagnostics diags;
  double seconds = 0;
};
nlohmann::json to_json(const ReleaseOutcome& o);

using StageProgress = std::function<void(const std::string& stage, double fraction, const std::string& line)>;

// Fetch, extract (or reuse facts), synthesize (the store caches LLM answers), store, diff.
ReleaseOutcome build_release(store::Store& store, const SourcePolicy& policy, const ReleaseRequest& req,
                             const std::function<bool()>& cancelled = {}, const StageProgress& progress = {});

// One release built where there is no store (a Slurm job of `syspilot regen --executor slurm`):
// fetched, extracted and drafted, with no cache. `outcome.status` is "prepared" (the record is
// to be stored), "failed" or "cancelled".
struct PreparedRelease {
  ReleaseOutcome outcome;
  std::string facts_key;         // the facts' cache key (source and extractor revision)
  std::string facts_json;        // the extracted facts, for the submitter's facts cache
  store::ContractRecord record;  // what synthesize() would have stored (synth::record_of)
};
PreparedRelease prepare_release(const SourcePolicy& policy, const ReleaseRequest& req,
                                const std::function<bool()>& cancelled = {}, const StageProgress& progress = {});
// The submitter's side: stores the prepared record and the facts, records the input as built and
// diffs with the version before, as build_release() does.
ReleaseOutcome store_prepared(store::Store& store, const ReleaseRequest& req, PreparedRelease p);

struct RegenReport {
  std::vector<ReleaseOutcome> outcomes;
  std::vector<std::string> up_to_date;  // libraries with no new release
  Diagnostics diags;                    // feed and config problems
  bool failed() const;
  std::string summary() const;          // a few lines for a terminal or a cron mail
  std::string changelog_markdown() const;
};
nlohmann::json to_json(const RegenReport& r);

// For each tracked library (or only `library`), the releases its feeds offer that the store
// does not hold, ascending by version; libraries with none go to report.up_to_date, feed
// problems and an untracked `library` to report.diags.
std::vector<ReleaseRequest> new_releases(const store::Store& store, const RegenConfig& cfg, const std::string& library,
                                         RegenReport& report, const StageProgress& progress = {});

// For each tracked library (or only `library`), every release not yet in the store, in
// ascending version order, each diffed against the version before it.
RegenReport regenerate(store::Store& store, const RegenConfig& cfg, const std::string& library = {},
                       const std::function<bool()>& cancelled = {}, const StageProgress& progress = {});

// Regeneration with one Slurm job per release (`syspilot regen --executor slurm`). Each job runs
// `syspilot trial-run` on a node with a regen spec (prepare_release there, no store), writes its
// result to `dir` (a filesystem the nodes share) and the submitter, which alone opens the store,
// stores the releases in ascending version order, each diffed against the one before. A job
// the cluster lost (no result: node failure, preemption, time limit) is resubmitted once, away
// from its node; a release whose job fails is reported and the others go on.
struct ClusterRegen {
  tuner::Cluster* cluster = nullptr;
  std::string dir;              // specs, results, the jobs' work folders
  std::string config_path;      // the regeneration config, read again by each job (shared)
  double poll_s = 0.5, unknown_s = 10, grace_s = 3;
  std::function<void(const std::string&)> note;  // a line per submission, retry and result
};
RegenReport regenerate_on_cluster(store::Store& store, const RegenConfig& cfg, const ClusterRegen& how,
                                  const std::string& library = {});

// The node's side: the result JSON of a regen spec (a trial-run spec with a "regen" object);
// nullopt when the spec is no regen spec. Throws std::runtime_error for a malformed one.
std::optional<std::string> run_regen_job(const std::string& spec_text);

}  // namespace syspilot::service
