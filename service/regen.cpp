// Regeneration: config parsing, release listing per feed, building one release with its
// caches, and the run-once loop with its summary and Markdown changelog.
#include "service/regen.h"

#include <chrono>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "extract/extract.h"
#include "lpcl/lexer.h"
#include "service/json_forms.h"
#include "store/store.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace syspilot::service {

// ---------------------------------------------------------------------------------------
// Configuration

namespace {

struct ConfigReader {
  const std::string& file;
  Diagnostics& diags;

  void error(const std::string& where, const std::string& msg, const std::string& hint = {}) {
    diags.error(SourceLoc{file, 0, 0}, where + ": " + msg, "bad-config", hint);
  }
  std::string resolve(const std::string& p) const {
    if (p.empty() || fs::path(p).is_absolute()) return p;
    return (fs::path(file).parent_path() / p).lexically_normal().string();
  }
  bool str(const json& j, const char* key, const std::string& where, std::string& out, bool required = false) {
    auto it = j.find(key);
    if (it == j.end()) {
      if (required) error(where, std::string("missing \"") + key + "\"");
      return !required;
    }
    if (!it->is_string()) {
      error(where + "." + key, "must be a string");
      return false;
    }
    out = it->get<std::string>();
    return true;
  }
  bool strings(const json& j, const char* key, const std::string& where, std::vector<std::string>& out) {
    auto it = j.find(key);
    if (it == j.end()) return true;
    if (!it->is_array()) {
      error(where + "." + key, "must be an array of strings");
      return false;
    }
    for (auto& s : *it) {
      if (!s.is_string()) {
        error(where + "." + key, "must be an array of strings");
        return false;
      }
      out.push_back(s.get<std::string>());
    }
    return true;
  }
};

bool valid_regex(const std::string& re) {
  try {
    std::regex r(re);
    return true;
  } catch (const std::regex_error&) {
    return false;
  }
}

}  // namespace

bool parse_regen_config(const json& j, const std::string& file, RegenConfig& out, Diagnostics& diags) {
  size_t before = diags.error_count();
  ConfigReader r{file, diags};
  out.file = file;
  if (!j.is_object()) {
    r.error("top level", "must be an object with \"libraries\"", "see docs/service.md for the format");
    return false;
  }
  static const std::set<std::string> known = {"store", "work_dir", "source_roots", "llm", "changelog", "libraries"};
  for (auto& [k, v] : j.items())
    if (!known.count(k)) r.error(k, "unknown key", "known keys: store, work_dir, source_roots, llm, changelog, libraries");
  r.str(j, "store", "store", out.db_path);
  out.db_path = r.resolve(out.db_path);
  r.str(j, "work_dir", "work_dir", out.work_dir);
  out.work_dir = out.work_dir.empty() ? r.resolve(".syspilot-work") : r.resolve(out.work_dir);
  r.strings(j, "source_roots", "source_roots", out.source_roots);
  for (auto& s : out.source_roots) s = r.resolve(s);
  r.str(j, "changelog", "changelog", out.changelog);
  out.changelog = r.resolve(out.changelog);
  if (auto it = j.find("llm"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) {
      r.error("llm", "must be an object {\"url\", \"model\", \"api_key_env\"}");
    } else {
      if (it->contains("api_key"))
        r.error("llm.api_key", "API keys do not belong in a config file",
                "put the key in an environment variable and name it in \"api_key_env\"");
      synth::LlmConfig llm;
      std::string key_env = "SYSPILOT_LLM_API_KEY";
      r.str(*it, "url", "llm", llm.url, true);
      r.str(*it, "model", "llm", llm.model);
      r.str(*it, "ca_file", "llm", llm.ca_file);
      llm.ca_file = r.resolve(llm.ca_file);
      r.str(*it, "api_key_env", "llm", key_env);
      if (const char* k = std::getenv(key_env.c_str())) llm.api_key = k;
      if (it->contains("timeout_s") && (*it)["timeout_s"].is_number()) llm.timeout_s = (*it)["timeout_s"];
      if (it->contains("max_tokens") && (*it)["max_tokens"].is_number_integer()) llm.max_tokens = (*it)["max_tokens"];
      out.llm = llm;
    }
  }
  auto libs = j.find("libraries");
  if (libs == j.end() || !libs->is_array()) {
    r.error("libraries", "missing or not an array", "add \"libraries\": [{\"name\": ..., \"feeds\": [...]}]");
    return false;
  }
  static const std::regex name_re("^[A-Za-z0-9][A-Za-z0-9._+-]*$");
  for (size_t i = 0; i < libs->size(); ++i) {
    const json& lj = (*libs)[i];
    std::string where = "libraries[" + std::to_string(i) + "]";
    if (!lj.is_object()) {
      r.error(where, "must be an object");
      continue;
    }
    TrackedLibrary lib;
    if (!r.str(lj, "name", where, lib.name, true)) continue;
    if (!std::regex_match(lib.name, name_re)) {
      r.error(where + ".name", "invalid library name '" + lib.name + "'", "letters, digits and . _ + -");
      continue;
    }
    where = "library " + lib.name;
    r.strings(lj, "overlays", where, lib.overlays);
    for (auto& ov : lib.overlays) {
      ov = r.resolve(ov);
      std::error_code ec;
      if (!std::filesystem::is_regular_file(ov, ec))
        r.error(where + ".overlays", "no such overlay file: " + ov,
                "give reviewed LPCL files, relative to the config file (e.g. corpus/overlays/" + lib.name + ".lpcl)");
    }
    auto feeds = lj.find("feeds");
    if (feeds == lj.end() || !feeds->is_array() || feeds->empty()) {
      r.error(where, "needs a non-empty \"feeds\" array");
      continue;
    }
    for (size_t k = 0; k < feeds->size(); ++k) {
      const json& fj = (*feeds)[k];
      std::string fw = where + " feeds[" + std::to_string(k) + "]";
      if (!fj.is_object()) {
        r.error(fw, "must be an object with a \"kind\"");
        continue;
      }
      Feed f;
      std::string kind;
      r.str(fj, "kind", fw, kind, true);
      r.strings(fj, "versions", fw, f.only_versions);
      if (kind == "git") {
        f.kind = Feed::Kind::Git;
        r.str(fj, "url", fw, f.url, true);
        if (!f.url.empty() && f.url[0] == '.') f.url = r.resolve(f.url);
        f.tag_pattern = "^v?([0-9]+(?:\\.[0-9]+)*)$";
        r.str(fj, "tag_pattern", fw, f.tag_pattern);
      } else if (kind == "debian-source") {
        f.kind = Feed::Kind::DebianSource;
        r.str(fj, "package", fw, f.package, true);
        r.strings(fj, "suites", fw, f.suites);
      } else if (kind == "dir") {
        f.kind = Feed::Kind::Dir;
        r.str(fj, "path", fw, f.path, true);
        f.path = r.resolve(f.path);
        f.pattern = "([0-9]+(?:\\.[0-9]+)+)";
        r.str(fj, "pattern", fw, f.pattern);
      } else if (kind == "tarball") {
        f.kind = Feed::Kind::Tarball;
      } else {
        r.error(fw + ".kind", "unknown feed kind '" + kind + "'", "use git, debian-source, dir or tarball");
        continue;
      }
      for (const std::string* re : {&f.tag_pattern, &f.pattern})
        if (!re->empty() && !valid_regex(*re)) r.error(fw, "invalid regular expression: " + *re);
      if (auto rel = fj.find("releases"); rel != fj.end()) {
        if (!rel->is_array()) {
          r.error(fw + ".releases", "must be an array of {\"version\", \"url\"|\"path\"}");
          continue;
        }
        for (auto& x : *rel) {
          std::string v, url, path;
          if (!x.is_object() || !r.str(x, "version", fw + ".releases", v, true)) continue;
          r.str(x, "url", fw + ".releases", url);
          r.str(x, "path", fw + ".releases", path);
          SourceSpec s;
          s.kind = f.kind == Feed::Kind::Dir ? SourceSpec::Kind::Dir : SourceSpec::Kind::Tarball;
          s.url = url;
          s.path = r.resolve(path);
          if (url.empty() == path.empty()) r.error(fw + ".releases " + v, "give exactly one of \"url\" and \"path\"");
          f.releases.emplace_back(v, s);
        }
      } else if (f.kind == Feed::Kind::Tarball) {
        r.error(fw, "a tarball feed needs \"releases\": [{\"version\", \"url\"|\"path\"}]");
      }
      lib.feeds.push_back(std::move(f));
    }
    out.libraries.push_back(std::move(lib));
  }
  return diags.error_count() == before;
}

bool load_regen_config(const std::string& path, RegenConfig& out, Diagnostics& diags) {
  std::ifstream in(path);
  if (!in) {
    diags.error(SourceLoc{path, 0, 0}, "cannot read the regeneration config", "not-found",
                "give an existing JSON file (see docs/service.md)");
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    diags.error(SourceLoc{path, 0, 0}, std::string("not valid JSON: ") + e.what(), "bad-config",
                "fix the syntax at the byte offset given");
    return false;
  }
  return parse_regen_config(j, fs::absolute(path).string(), out, diags);
}

SourcePolicy policy_of(const RegenConfig& cfg) {
  SourcePolicy p;
  p.roots = cfg.source_roots;
  p.work_dir = cfg.work_dir;
  // The config is the operator's own: the hosts it names may be reached even when internal
  // (redirects from them to other internal hosts are still refused).
  p.outbound.allow = cfg.allow_outbound;
  if (cfg.llm) allow_host_of(p.outbound, cfg.llm->url);
  for (const auto& lib : cfg.libraries)
    for (const auto& f : lib.feeds) {
      if (f.kind == Feed::Kind::Git) allow_host_of(p.outbound, f.url);
      for (const auto& [v, s] : f.releases) allow_host_of(p.outbound, s.url);
    }
  return p;
}

// ---------------------------------------------------------------------------------------
// Releases

std::string upstream_version(const std::string& v) {
  static const std::regex epoch("^[0-9]+:");
  std::string s = std::regex_replace(v, epoch, "");
  if (auto dash = s.rfind('-'); dash != std::string::npos) s = s.substr(0, dash);
  static const std::regex repack("[+~](ds|dfsg|repack)[0-9.]*$");
  return std::regex_replace(s, repack, "");
}

namespace {
bool wanted(const Feed& f, const std::string& version, const std::string& label) {
  if (f.only_versions.empty()) return true;
  for (auto& v : f.only_versions)
    if (v == version || v == label) return true;
  return false;
}
}  // namespace

bool list_releases(const TrackedLibrary& lib, const SourcePolicy& policy, std::vector<Release>& out,
                   Diagnostics& diags) {
  std::map<std::string, Release> by_version;
  auto add = [&](Release r) {
    auto it = by_version.find(r.version);
    if (it == by_version.end()) by_version.emplace(r.version, std::move(r));
  };
  bool ok = true;
  for (const Feed& f : lib.feeds) {
    switch (f.kind) {
      case Feed::Kind::Git: {
        std::vector<std::string> tags;
        if (!list_git_tags(f.url, policy, tags, diags)) {
          ok = false;
          break;
        }
        std::regex re(f.tag_pattern);
        for (auto& t : tags) {
          // A remote's tags are untrusted: std::regex recurses per character, so an
          // overlong one never reaches it (no ref a source may name is longer).
          if (t.size() > 255) continue;
          std::smatch m;
          if (!std::regex_search(t, m, re)) continue;
          std::string v = m.size() > 1 && m[1].matched ? m[1].str() : t;
          if (!wanted(f, v, t)) continue;
          Release r{v, {}, t};
          r.source.kind = SourceSpec::Kind::Git;
          r.source.url = f.url;
          r.source.ref = t;
          add(std::move(r));
        }
        break;
      }
      case Feed::Kind::DebianSource: {
        std::vector<std::string> versions;
        if (!list_debian_versions(f.package, f.suites, policy, versions, diags)) {
          ok = false;
          break;
        }
        // The highest Debian revision of each upstream version, with the others (newest
        // first) as fallbacks for when the mirror no longer serves it. Versions are ascending.
        std::map<std::string, std::vector<std::string>> revisions;
        for (auto& v : versions) {
          if (!wanted(f, upstream_version(v), v)) continue;
          auto& list = revisions[upstream_version(v)];
          list.insert(list.begin(), v);
        }
        for (auto& [up, debs] : revisions) {
          Release r{up, {}, f.package + "=" + debs.front()};
          r.source.kind = SourceSpec::Kind::DebianSource;
          r.source.package = f.package;
          r.source.version = debs.front();
          r.source.fallback_versions.assign(debs.begin() + 1, debs.end());
          r.source.suites = f.suites;
          add(std::move(r));
        }
        break;
      }
      case Feed::Kind::Dir: {
        if (!f.path.empty()) {
          std::string real = confine_path(f.path, policy.roots, "path", diags);
          if (real.empty()) {
            ok = false;
            break;
          }
          std::regex re(f.pattern);
          std::error_code ec;
          for (auto& e : fs::directory_iterator(real, ec)) {
            if (!e.is_directory()) continue;
            std::string name = e.path().filename().string();
            std::smatch m;
            if (!std::regex_search(name, m, re)) continue;
            std::string v = m.size() > 1 && m[1].matched ? m[1].str() : name;
            if (!wanted(f, v, name)) continue;
            Release r{v, {}, name};
            r.source.kind = SourceSpec::Kind::Dir;
            r.source.path = e.path().string();
            add(std::move(r));
          }
        }
        [[fallthrough]];
      }
      case Feed::Kind::Tarball:
        for (auto& [v, s] : f.releases)
          if (wanted(f, v, v)) add(Release{v, s, s.url.empty() ? s.path : s.url});
        break;
    }
  }
  out.clear();
  for (auto& [v, r] : by_version) out.push_back(std::move(r));
  std::sort(out.begin(), out.end(),
            [](const Release& a, const Release& b) { return store::compare_versions(a.version, b.version) < 0; });
  return ok;
}

// ---------------------------------------------------------------------------------------
// One release

namespace {

// The highest stored version below `version`, for the diff.
std::string previous_version(const store::Store& st, const std::string& lib, const std::string& version) {
  std::string best;
  for (auto& v : st.versions(lib))
    if (store::compare_versions(v.version, version) < 0 &&
        (best.empty() || store::compare_versions(v.version, best) > 0))
      best = v.version;
  return best;
}

bool parse_one(const std::string& text, const std::string& name, lpcl::Contract& out, Diagnostics& diags) {
  Diagnostics local;
  lpcl::Document doc = lpcl::parse(text, name, local);
  if (doc.contracts.empty()) {
    diags.warning(SourceLoc{name, 0, 0}, "stored contract does not parse; no diff recorded", "diff-skipped");
    return false;
  }
  out = std::move(doc.contracts.front());
  return true;
}

void diff_with_previous(const store::Store& st, ReleaseOutcome& o, const std::string& lpcl_text) {
  o.previous_version = previous_version(st, o.library, o.version);
  if (o.previous_version.empty()) return;
  auto prev = st.get_contract(o.library, o.previous_version);
  lpcl::Contract before, after;
  if (!prev || !parse_one(prev->lpcl, o.library + "@" + o.previous_version, before, o.diags)) return;
  if (!parse_one(lpcl_text, o.library + "@" + o.version, after, o.diags)) return;
  o.diff = lpcl::diff(before, after);
}

}  // namespace

namespace {

// The LLM endpoint is outbound like a source: a literal address is refused before anything
// runs; a name is resolved and checked right before each connection (connect_to), and the
// client connects to the address that passed. False (with diagnostics) when it is refused.
bool guarded_llm(const SourcePolicy& policy, const ReleaseRequest& req, std::optional<synth::LlmConfig>& llm,
                 const std::shared_ptr<Diagnostics>& denied, Diagnostics& diags) {
  llm = req.llm;
  if (!llm) return true;
  if (!validate_outbound_url(llm->url, policy.outbound, diags, "llm.url")) return false;
  if (!policy.outbound.allow_all)
    llm->connect_to = [outbound = policy.outbound, denied](const std::string& host, int port) {
      std::string address;
      Diagnostics d;
      if (!check_outbound_host(host, port, outbound, address, d, "llm.url")) {
        denied->append(d);
        throw synth::LlmError(d.items().front().message);
      }
      return address;
    };
  return true;
}

// The facts' cache key (the source and the extractor's revision) and the input digest (that
// and the overlays: a changed overlay rebuilds the contract, reusing the facts; a new
// extractor extracts again). False when an overlay cannot be read.
bool input_digests(const FetchedSource& src, const ReleaseRequest& req, std::string& facts_key, std::string& input,
                   Diagnostics& diags) {
  facts_key = store::sha256_hex(src.digest + "\nextractor " + std::to_string(extract::kExtractorRevision));
  input = facts_key;
  if (req.overlays.empty()) return true;
  std::string all = facts_key;
  for (const auto& ov : req.overlays) {
    std::ifstream in(ov, std::ios::binary);
    std::stringstream bytes;
    if (!in || !(bytes << in.rdbuf())) {
      diags.error(SourceLoc{ov, 0, 0}, "cannot read the overlay", "overlay-unreadable",
                  "fix the library's \"overlays\" in the regeneration config");
      return false;
    }
    all += "\n" + store::sha256_hex(bytes.str());
  }
  input = store::sha256_hex(all);
  return true;
}

// The start of every build: the LLM endpoint guarded, the source fetched, its digests. Returns ""
// or the status the build ends with (failed, cancelled).
std::string fetch_release(const SourcePolicy& policy, const ReleaseRequest& req, const std::function<bool()>& cancelled,
                          const std::function<void(const std::string&, double, const std::string&)>& say,
                          std::optional<synth::LlmConfig>& llm, const std::shared_ptr<Diagnostics>& denied,
                          FetchedSource& src, std::string& facts_key, ReleaseOutcome& o) {
  // the contract is written `contract NAME "VERSION"`: a name LPCL cannot read back would be
  // stored as a contract that does not parse, and could never be composed
  if (!lpcl::is_identifier(req.library)) {
    o.diags.error(SourceLoc{"request", 0, 0},
                  "the library name '" + req.library.substr(0, 200) + "' is no LPCL identifier", "bad-library-name",
                  "name the contract with letters, digits and _, not starting with a digit (c_blosc for c-blosc)");
    return "failed";
  }
  if (!guarded_llm(policy, req, llm, denied, o.diags)) return "failed";
  say("fetch", 0.05, "fetching " + std::string(to_string(req.source.kind)) + " source");
  if (!fetch_source(req.source, policy, src, o.diags, cancelled, [&](const std::string& l) { say("fetch", 0.1, l); }))
    return cancelled && cancelled() ? "cancelled" : "failed";
  o.source = src.describe;
  if (!input_digests(src, req, facts_key, o.input_digest, o.diags)) return "failed";
  return "";
}

extract::Facts extract_release(const FetchedSource& src, const ReleaseRequest& req) {
  extract::ExtractOptions eo;
  eo.paths = {src.dir};
  eo.library = req.library;
  eo.threads = 2;
  // in a child process: a source tree is hostile, and a parser that crashes on one of its
  // files must fail this build, not end the service and every job beside it
  eo.isolate = true;
  return extract::extract(eo);
}

// Whether the isolated extraction ended without facts (its child crashed, ran out of memory or
// time): the build fails with that error, and nothing of it is cached.
bool extraction_failed(const extract::Facts& facts, Diagnostics& diags) {
  for (const auto& d : facts.diagnostics.items())
    if (d.code == "extract-failed") {
      diags.append(facts.diagnostics);
      return true;
    }
  return false;
}

std::string extracted_line(const extract::Facts& facts) {
  return "extracted " + std::to_string(facts.env_vars.size()) + " env reads, " +
         std::to_string(facts.api_controls.size()) + " API controls from " + std::to_string(facts.files_scanned) +
         " files";
}

// What the release is drafted as: the same options for the drafting and for its store record.
synth::SynthOptions synth_options(const ReleaseRequest& req, const std::optional<synth::LlmConfig>& llm) {
  synth::SynthOptions so;
  so.library = req.library;
  so.version = req.version;
  so.llm = llm;
  so.overlays = req.overlays;
  return so;
}

// Drafting, validation and repair. `st` may be null (a job away from the store): nothing is
// cached or stored then. Fills the outcome's drafter, convergence and LLM counts, and turns the
// open problems of a contract into findings. Returns "" or the failed status.
std::string draft_release(const extract::Facts& facts, const ReleaseRequest& req,
                          const std::optional<synth::LlmConfig>& llm, const std::shared_ptr<Diagnostics>& denied,
                          store::Store* st, const std::function<bool()>& cancelled,
                          const std::function<void(const std::string&, double, const std::string&)>& say,
                          synth::SynthResult& sr, ReleaseOutcome& o) {
  synth::SynthOptions so = synth_options(req, llm);
  so.cancelled = cancelled;
  so.progress = [&](const std::string& l) { say("synthesize", 0.6, l); };
  say("synthesize", 0.5, req.llm ? "drafting with " + req.llm->model : "drafting offline");
  try {
    sr = synth::synthesize(facts, so, st);
  } catch (const synth::Cancelled&) {
    return "cancelled";
  } catch (const synth::EmptyFacts& e) {
    o.diags.error(SourceLoc{"extract", 0, 0}, e.what(), "no-facts",
                  "check the feed: this release's folder holds no source the extractors read");
    return "failed";
  } catch (const synth::LlmError& e) {
    if (!denied->empty()) o.diags.append(*denied);  // "outbound-denied", with its hint
    else o.diags.error(SourceLoc{"llm", 0, 0}, e.what(), "llm-error", "check the endpoint, model and API key");
    return "failed";
  }
  o.converged = sr.converged;
  o.drafter = sr.drafter;
  o.prompt_tokens = sr.prompt_tokens;
  o.completion_tokens = sr.completion_tokens;
  for (auto& r : sr.rounds) {
    if (r.drafter.rfind("llm", 0) != 0) continue;
    (r.cached ? o.llm_cached : o.llm_calls)++;
  }
  // Open problems of a stored contract are findings, not a failed build.
  for (auto d : sr.open.items()) {
    if (d.severity == Severity::Error) d.severity = Severity::Warning;
    o.diags.add(std::move(d));
  }
  return "";
}

// The stored contract's outcome: the input recorded as built, the diff with the version before.
std::string record_stored(store::Store& st, const ReleaseRequest& req, const std::string& source, ReleaseOutcome& o) {
  auto rec = st.get_contract(req.library, req.version);
  if (!rec) {
    o.diags.error(SourceLoc{"store", 0, 0}, "the synthesized contract was not found in the store", "store-failed");
    return "failed";
  }
  o.contract_digest = rec->digest;
  o.revision = rec->revision;
  st.db()
      .prepare("INSERT OR REPLACE INTO service_inputs(library, version, input_digest, contract_digest, source) "
               "VALUES (?1, ?2, ?3, ?4, ?5)")
      .bind_all(req.library, req.version, o.input_digest, rec->digest, source)
      .run();
  diff_with_previous(st, o, rec->lpcl);
  return "stored";
}

void cache_facts(store::Store& st, const std::string& facts_key, const std::string& facts_json) {
  std::string facts_digest = st.put_facts(facts_json);
  st.db()
      .prepare("INSERT OR REPLACE INTO service_facts_cache(input_digest, facts_digest) VALUES (?1, ?2)")
      .bind_all(facts_key, facts_digest)
      .run();
}

std::string facts_text(const extract::Facts& facts) {
  return extract::to_json(facts).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// One build of a release at a time in this process: two jobs for the same library and version
// (a client's retry, two regenerations of one library) would otherwise both find the input
// not yet built and store the same contract twice, as two revisions. The second waits, then
// finds it unchanged. Only the releases being built are held, and a waiting job can be cancelled.
class ReleaseBuild {
 public:
  ReleaseBuild(const std::string& library, const std::string& version) : key_(library + '\0' + version) {}
  ~ReleaseBuild() {
    if (!held_) return;
    {
      std::lock_guard<std::mutex> g(mu());
      building().erase(key_);
    }
    cv().notify_all();
  }
  // False when `cancelled` says so before the release is free.
  bool acquire(const std::function<bool()>& cancelled) {
    std::unique_lock<std::mutex> g(mu());
    while (building().count(key_)) {
      if (cancelled && cancelled()) return false;
      cv().wait_for(g, std::chrono::milliseconds(200));
    }
    building().insert(key_);
    return held_ = true;
  }

 private:
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static std::condition_variable& cv() {
    static std::condition_variable c;
    return c;
  }
  static std::set<std::string>& building() {
    static std::set<std::string> b;
    return b;
  }
  std::string key_;
  bool held_ = false;
};

}  // namespace

ReleaseOutcome build_release(store::Store& st, const SourcePolicy& policy, const ReleaseRequest& req,
                             const std::function<bool()>& cancelled, const StageProgress& progress) {
  auto t0 = std::chrono::steady_clock::now();
  ReleaseOutcome o;
  o.library = req.library;
  o.version = req.version;
  auto say = [&](const std::string& stage, double f, const std::string& line) {
    if (progress) progress(stage, f, line);
  };
  auto is_cancelled = [&] { return cancelled && cancelled(); };
  auto finish = [&](const std::string& status) {
    o.status = status;
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return o;
  };

  std::optional<synth::LlmConfig> llm;
  auto llm_denied = std::make_shared<Diagnostics>();
  FetchedSource src;
  std::string facts_key;
  if (std::string end = fetch_release(policy, req, cancelled, say, llm, llm_denied, src, facts_key, o); !end.empty())
    return finish(end);

  ReleaseBuild building(req.library, req.version);
  if (!building.acquire(cancelled)) return finish("cancelled");
  store::Database& db = st.db();
  if (!req.force) {
    auto built = db.query_text(
        "SELECT contract_digest FROM service_inputs WHERE library = ?1 AND version = ?2 AND input_digest = ?3",
        req.library, req.version, o.input_digest);
    if (built) {
      auto rec = st.get_contract(req.library, req.version);
      if (rec && rec->digest == *built) {
        say("done", 1, "unchanged input " + o.input_digest.substr(0, 24) + ": nothing to redo");
        o.input_cached = true;
        o.contract_digest = rec->digest;
        o.revision = rec->revision;
        o.converged = rec->status == store::ContractStatus::Converged;
        o.drafter = store::to_string(rec->drafter);
        diff_with_previous(st, o, rec->lpcl);
        return finish("unchanged");
      }
    }
  }

  extract::Facts facts;
  bool have_facts = false;
  if (auto fd = db.query_text("SELECT facts_digest FROM service_facts_cache WHERE input_digest = ?1", facts_key)) {
    if (auto fj = st.get_facts(*fd)) {
      try {
        facts = extract::facts_from_json(json::parse(*fj));
        have_facts = true;
        o.facts_cached = true;
        say("extract", 0.4, "facts reused from the cache (" + fd->substr(0, 12) + ")");
      } catch (const std::exception& e) {
        o.diags.warning(SourceLoc{"cache", 0, 0}, std::string("cached facts unreadable, extracting again: ") + e.what(),
                        "cache-miss");
      }
    }
  }
  if (!have_facts) {
    if (is_cancelled()) return finish("cancelled");
    say("extract", 0.2, "extracting facts from " + src.dir);
    facts = extract_release(src, req);
    if (extraction_failed(facts, o.diags)) return finish("failed");
    cache_facts(st, facts_key, facts_text(facts));
    say("extract", 0.4, extracted_line(facts));
  }
  facts.library = req.library;
  if (is_cancelled()) return finish("cancelled");

  synth::SynthResult sr;
  std::string failed = draft_release(facts, req, llm, llm_denied, &st, cancelled, say, sr, o);
  if (!failed.empty()) return finish(failed);
  if (sr.contract_id.empty()) {
    store::ContractRecord rec = store::ContractRecord::of(sr.contract);
    rec.status = sr.converged ? store::ContractStatus::Converged : store::ContractStatus::OpenDiagnostics;
    rec.source = src.describe;
    st.put_contract(rec);
  }
  std::string status = record_stored(st, req, src.describe, o);
  if (status == "stored") say("done", 1, "stored " + req.library + " " + req.version + " revision " + std::to_string(o.revision));
  return finish(status);
}

// ---------------------------------------------------------------------------------------
// One release away from the store (a Slurm job)

PreparedRelease prepare_release(const SourcePolicy& policy, const ReleaseRequest& req,
                                const std::function<bool()>& cancelled, const StageProgress& progress) {
  auto t0 = std::chrono::steady_clock::now();
  PreparedRelease p;
  ReleaseOutcome& o = p.outcome;
  o.library = req.library;
  o.version = req.version;
  auto say = [&](const std::string& stage, double f, const std::string& line) {
    if (progress) progress(stage, f, line);
  };
  auto finish = [&](const std::string& status) {
    o.status = status;
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return p;
  };
  std::optional<synth::LlmConfig> llm;
  auto llm_denied = std::make_shared<Diagnostics>();
  FetchedSource src;
  if (std::string end = fetch_release(policy, req, cancelled, say, llm, llm_denied, src, p.facts_key, o); !end.empty())
    return finish(end);
  say("extract", 0.2, "extracting facts from " + src.dir);
  extract::Facts facts = extract_release(src, req);
  if (extraction_failed(facts, o.diags)) return finish("failed");
  p.facts_json = facts_text(facts);
  say("extract", 0.4, extracted_line(facts));
  facts.library = req.library;
  synth::SynthResult sr;
  std::string failed = draft_release(facts, req, llm, llm_denied, nullptr, cancelled, say, sr, o);
  if (!failed.empty()) return finish(failed);
  p.record = synth::record_of(sr, facts, synth_options(req, llm));
  return finish("prepared");
}

ReleaseOutcome store_prepared(store::Store& st, const ReleaseRequest& req, PreparedRelease p) {
  ReleaseOutcome o = std::move(p.outcome);
  o.library = req.library;
  o.version = req.version;
  if (o.status != "prepared") return o;
  if (!p.facts_json.empty() && !p.facts_key.empty()) cache_facts(st, p.facts_key, p.facts_json);
  store::ContractRecord rec = std::move(p.record);
  if (rec.library != req.library || rec.version != req.version) {
    o.diags.error(SourceLoc{"job", 0, 0},
                  "the job's contract is " + rec.library + " " + rec.version + ", not " + req.library + " " + req.version,
                  "job-mismatch");
    o.status = "failed";
    return o;
  }
  st.put_contract(rec);
  o.status = record_stored(st, req, o.source, o);
  return o;
}

json to_json(const ReleaseOutcome& o) {
  json j = {{"library", o.library},
            {"version", o.version},
            {"status", o.status},
            {"source", o.source},
            {"input_digest", o.input_digest},
            {"input_cached", o.input_cached},
            {"facts_cached", o.facts_cached},
            {"contract_digest", o.contract_digest},
            {"revision", o.revision},
            {"converged", o.converged},
            {"drafter", o.drafter},
            {"llm", {{"calls", o.llm_calls}, {"cached", o.llm_cached}, {"prompt_tokens", o.prompt_tokens},
                     {"completion_tokens", o.completion_tokens}}},
            {"seconds", o.seconds},
            {"diagnostics", to_json(o.diags)}};
  if (!o.previous_version.empty()) {
    j["previous_version"] = o.previous_version;
    j["diff"] = lpcl::to_json(o.diff);
    j["diff_text"] = lpcl::to_text(o.diff);
  }
  return j;
}

// ---------------------------------------------------------------------------------------
// Run once

bool RegenReport::failed() const {
  if (diags.has_errors()) return true;
  for (auto& o : outcomes)
    if (o.status == "failed" || o.status == "cancelled") return true;
  return false;
}

std::string RegenReport::summary() const {
  std::map<std::string, int> by_status;
  for (auto& o : outcomes) by_status[o.status]++;
  std::ostringstream s;
  s << "regen: " << outcomes.size() << " new release(s)";
  for (auto& [k, n] : by_status) s << ", " << n << " " << k;
  if (!up_to_date.empty()) s << "; up to date: " << up_to_date.size() << " librar" << (up_to_date.size() == 1 ? "y" : "ies");
  s << "\n";
  for (auto& o : outcomes) {
    s << "  " << o.library << " " << o.version << ": " << o.status;
    if (!o.previous_version.empty()) s << ", " << o.diff.changes.size() << " change(s) from " << o.previous_version;
    if (o.facts_cached) s << ", facts cached";
    s << " (" << static_cast<int>(o.seconds * 10) / 10.0 << " s)\n";
    for (auto& d : o.diags.items())  // errors, and which Debian revision was used instead
      if (d.severity == Severity::Error || d.code == "revision-fallback") s << "    " << d.str() << "\n";
  }
  for (auto& d : diags.items()) s << "  " << d.str() << "\n";
  return s.str();
}

std::string RegenReport::changelog_markdown() const {
  std::ostringstream s;
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  s << "# Contract changelog\n\n`syspilot regen`, " << date << ".\n";
  std::string lib;
  for (auto& o : outcomes) {
    if (o.library != lib) {
      lib = o.library;
      s << "\n## " << lib << "\n";
    }
    s << "\n### " << o.version;
    if (!o.previous_version.empty()) s << " (changes since " << o.previous_version << ")";
    s << "\n\n";
    s << "- source: " << (o.source.empty() ? "-" : o.source) << "\n";
    if (o.status == "failed" || o.status == "cancelled") {
      s << "- **" << o.status << "**\n";
      for (auto& d : o.diags.items())
        if (d.severity == Severity::Error) s << "  - " << d.str() << "\n";
      continue;
    }
    s << "- contract: " << o.contract_digest.substr(0, 12) << " (revision " << o.revision << "), drafter "
      << o.drafter << (o.converged ? ", converged" : ", open diagnostics") << "; " << o.llm_calls
      << " LLM call(s), " << o.llm_cached << " cached\n";
    if (o.previous_version.empty()) {
      s << "- first version in the store\n";
    } else if (o.diff.empty()) {
      s << "- no semantic change\n";
    } else {
      s << "\n```diff\n" << lpcl::to_text(o.diff);
      if (s.str().back() != '\n') s << "\n";
      s << "```\n";
    }
  }
  if (!up_to_date.empty()) {
    s << "\nUp to date:";
    for (auto& l : up_to_date) s << " " << l;
    s << "\n";
  }
  return s.str();
}

json to_json(const RegenReport& r) {
  json j = {{"releases", json::array()}, {"up_to_date", r.up_to_date}, {"diagnostics", to_json(r.diags)},
            {"failed", r.failed()}};
  for (auto& o : r.outcomes) j["releases"].push_back(to_json(o));
  return j;
}

std::vector<ReleaseRequest> new_releases(const store::Store& st, const RegenConfig& cfg, const std::string& library,
                                         RegenReport& report, const StageProgress& progress) {
  std::vector<ReleaseRequest> out;
  SourcePolicy policy = policy_of(cfg);
  bool found = library.empty();
  for (const TrackedLibrary& lib : cfg.libraries) {
    if (!library.empty() && lib.name != library) continue;
    found = true;
    if (progress) progress("list", 0, "listing releases of " + lib.name);
    std::vector<Release> releases;
    list_releases(lib, policy, releases, report.diags);
    std::set<std::string> stored;
    for (auto& v : st.versions(lib.name)) stored.insert(v.version);
    size_t fresh = 0;
    for (auto& r : releases)
      if (!stored.count(r.version)) {
        ++fresh;
        out.push_back({lib.name, r.version, r.source, cfg.llm, false, lib.overlays});
      }
    if (fresh == 0) report.up_to_date.push_back(lib.name);
  }
  if (!found)
    report.diags.error(SourceLoc{cfg.file, 0, 0}, "library '" + library + "' is not tracked in this config",
                       "not-tracked", "add it to \"libraries\" or omit the library");
  return out;
}

RegenReport regenerate(store::Store& st, const RegenConfig& cfg, const std::string& library,
                       const std::function<bool()>& cancelled, const StageProgress& progress) {
  RegenReport report;
  SourcePolicy policy = policy_of(cfg);
  for (auto& req : new_releases(st, cfg, library, report, progress)) {
    if (cancelled && cancelled()) {
      ReleaseOutcome o;
      o.library = req.library;
      o.version = req.version;
      o.status = "cancelled";
      report.outcomes.push_back(std::move(o));
      continue;
    }
    report.outcomes.push_back(build_release(st, policy, req, cancelled, progress));
  }
  return report;
}

}  // namespace syspilot::service
