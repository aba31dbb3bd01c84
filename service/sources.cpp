// Source inputs: parsing, validation before anything runs, and fetching into a content-keyed
// cache (git trees by tree id, Debian packages by their .dsc digest, tarballs by file digest).
#include "service/sources.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "service/process.h"
#include "store/store.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace syspilot::service {

const char* to_string(SourceSpec::Kind k) {
  switch (k) {
    case SourceSpec::Kind::Dir: return "dir";
    case SourceSpec::Kind::Git: return "git";
    case SourceSpec::Kind::DebianSource: return "debian-source";
    case SourceSpec::Kind::Tarball: return "tarball";
  }
  return "?";
}

namespace {

SourceLoc field(const std::string& name) { return SourceLoc{"source." + name, 0, 0}; }

bool get_string(const json& j, const char* key, std::string& out, Diagnostics& diags) {
  auto it = j.find(key);
  if (it == j.end()) return true;
  if (!it->is_string()) {
    diags.error(field(key), std::string("'") + key + "' must be a string", "bad-source",
                "send it as a JSON string");
    return false;
  }
  out = it->get<std::string>();
  return true;
}

bool has_control_chars(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

// Values handed to git, apt or tar as arguments must not look like options.
bool check_argument(const std::string& value, const std::string& name, Diagnostics& diags) {
  if (value.empty()) {
    diags.error(field(name), "'" + name + "' is empty", "bad-source", "give a value");
    return false;
  }
  if (value[0] == '-') {
    diags.error(field(name), "'" + name + "' starts with '-' and could be read as an option: " + value,
                "option-injection", "remove the leading '-'");
    return false;
  }
  if (has_control_chars(value)) {
    diags.error(field(name), "'" + name + "' contains control characters", "bad-source");
    return false;
  }
  return true;
}

std::string url_scheme(const std::string& url) {
  static const std::regex scheme_re("^([A-Za-z][A-Za-z0-9+.-]*)://");
  std::smatch m;
  if (std::regex_search(url, m, scheme_re)) {
    std::string s = m[1];
    std::transform(s.begin(), s.end(), s.begin(), ::tolower);
    return s;
  }
  return {};
}

bool scheme_allowed(const std::string& scheme, const SourcePolicy& policy) {
  return std::find(policy.url_schemes.begin(), policy.url_schemes.end(), scheme) != policy.url_schemes.end();
}

void sha_update_file(EVP_MD_CTX* ctx, const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    if (in.gcount() > 0) EVP_DigestUpdate(ctx, buf, static_cast<size_t>(in.gcount()));
  }
}

std::string hex(const unsigned char* d, unsigned n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) {
    s += digits[d[i] >> 4];
    s += digits[d[i] & 15];
  }
  return s;
}

std::string finish(EVP_MD_CTX* ctx) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(ctx, md, &n);
  EVP_MD_CTX_free(ctx);
  return hex(md, n);
}

std::string sha256_file(const fs::path& p) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  sha_update_file(ctx, p);
  return finish(ctx);
}

// One lock per cache directory: two jobs fetching the same repository or package wait for
// each other instead of racing on the same files.
std::mutex& lock_for(const std::string& key) {
  static std::mutex table_mu;
  static std::map<std::string, std::unique_ptr<std::mutex>> table;
  std::lock_guard<std::mutex> g(table_mu);
  auto& m = table[key];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

bool run_tool(const std::vector<std::string>& argv, const SourcePolicy& policy, const Cancel& cancel,
              Diagnostics& diags, const std::string& what, ProcessResult* result = nullptr,
              const std::string& cwd = {}, std::map<std::string, std::string> env = {}) {
  ProcessOptions po;
  po.timeout_s = policy.fetch_timeout_s;
  po.cancelled = cancel;
  po.cwd = cwd;
  env.emplace("GIT_TERMINAL_PROMPT", "0");
  env.emplace("LC_ALL", "C");
  po.env_extra = std::move(env);
  ProcessResult r = run_process(argv, po);
  if (result) *result = r;
  if (r.ok()) return true;
  std::string why;
  if (!r.start_error.empty()) why = r.start_error;
  else if (r.cancelled) why = "cancelled";
  else if (r.timed_out) why = "timed out after " + std::to_string(static_cast<int>(policy.fetch_timeout_s)) + " s";
  else {
    std::string err = r.err;
    while (!err.empty() && std::isspace(static_cast<unsigned char>(err.back()))) err.pop_back();
    auto nl = err.rfind('\n');
    why = "exit " + std::to_string(r.exit_code) + ": " + (nl == std::string::npos ? err : err.substr(nl + 1));
  }
  diags.error(SourceLoc{argv[0], 0, 0}, what + " failed (" + why + ")", r.cancelled ? "cancelled" : "fetch-failed",
              r.cancelled ? "" : "check that the source exists and is reachable from this machine");
  return false;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// A tarball or a package often unpacks into one top-level folder: use it as the root.
std::string single_child_or_self(const fs::path& dir) {
  std::vector<fs::path> entries;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(".", 0) == 0) continue;
    entries.push_back(e.path());
  }
  if (entries.size() == 1 && fs::is_directory(fs::symlink_status(entries[0]))) return entries[0].string();
  return dir.string();
}

const std::vector<std::string> kDefaultSuites = {"bookworm", "trixie", "sid"};

std::vector<std::string> apt_options(const fs::path& state) {
  return {"-o", "Dir::Etc::SourceList=" + (state / "sources.list").string(),
          "-o", "Dir::Etc::SourceParts=/dev/null",
          "-o", "Dir::State::Lists=" + (state / "lists").string(),
          "-o", "Dir::Cache=" + (state / "cache").string(),
          "-o", "APT::Sandbox::User=root"};
}

// The private apt configuration: deb-src lines for the given suites, its own lists and cache,
// refreshed at most once an hour. The system's apt configuration is never touched.
bool prepare_apt(const std::vector<std::string>& suites_in, const SourcePolicy& policy, Diagnostics& diags,
                 const Cancel& cancel, fs::path& state) {
  const auto& suites = suites_in.empty() ? kDefaultSuites : suites_in;
  static const std::regex suite_re("^[a-z][a-z0-9-]*$");
  std::string key;
  for (auto& s : suites) {
    if (!std::regex_match(s, suite_re)) {
      diags.error(SourceLoc{"suites", 0, 0}, "invalid Debian suite name: " + s, "bad-source",
                  "use names like bookworm, trixie, sid");
      return false;
    }
    key += s + "-";
  }
  state = fs::path(policy.work_dir) / "apt" / key.substr(0, key.size() - 1);
  std::error_code ec;
  fs::create_directories(state / "lists" / "partial", ec);
  fs::create_directories(state / "cache" / "archives" / "partial", ec);
  std::lock_guard<std::mutex> g(lock_for(state.string()));
  {
    std::ofstream list(state / "sources.list", std::ios::trunc);
    for (auto& s : suites) list << "deb-src http://deb.debian.org/debian " << s << " main\n";
  }
  fs::path stamp = state / "lists" / ".stamp";
  bool fresh = fs::exists(stamp) &&
               fs::file_time_type::clock::now() - fs::last_write_time(stamp, ec) < std::chrono::hours(1);
  if (fresh) return true;
  std::vector<std::string> argv = {"apt-get"};
  auto o = apt_options(state);
  argv.insert(argv.end(), o.begin(), o.end());
  argv.insert(argv.end(), {"update", "-qq"});
  if (!run_tool(argv, policy, cancel, diags, "apt-get update (private source list)")) return false;
  std::ofstream(stamp) << "";
  return true;
}

}  // namespace

std::string digest_tree(const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    const auto& p = it->path();
    if (p.filename() == ".git" && it->is_directory()) {
      it.disable_recursion_pending();
      continue;
    }
    auto st = it->symlink_status();
    if (fs::is_regular_file(st) || fs::is_symlink(st)) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (auto& p : files) {
    std::string rel = fs::relative(p, dir, ec).string();
    auto st = fs::symlink_status(p);
    std::string head = rel + '\0' + (fs::is_symlink(st) ? "l" : "f") + '\0';
    EVP_DigestUpdate(ctx, head.data(), head.size());
    if (fs::is_symlink(st)) {
      std::string target = fs::read_symlink(p, ec).string();
      EVP_DigestUpdate(ctx, target.data(), target.size());
    } else {
      sha_update_file(ctx, p);
    }
    EVP_DigestUpdate(ctx, "\0", 1);
  }
  return finish(ctx);
}

bool parse_source(const json& j, SourceSpec& out, Diagnostics& diags) {
  if (!j.is_object()) {
    diags.error(SourceLoc{"source", 0, 0}, "'source' must be an object with a 'kind'", "bad-source",
                "send {\"kind\": \"dir\", \"path\": \"...\"} or a git, debian-source or tarball source");
    return false;
  }
  std::string kind;
  if (!get_string(j, "kind", kind, diags)) return false;
  if (kind == "dir") out.kind = SourceSpec::Kind::Dir;
  else if (kind == "git") out.kind = SourceSpec::Kind::Git;
  else if (kind == "debian-source" || kind == "debian") out.kind = SourceSpec::Kind::DebianSource;
  else if (kind == "tarball") out.kind = SourceSpec::Kind::Tarball;
  else {
    diags.error(field("kind"), "unknown source kind '" + kind + "'", "bad-source",
                "use one of: dir, git, debian-source, tarball");
    return false;
  }
  bool ok = get_string(j, "path", out.path, diags) && get_string(j, "url", out.url, diags);
  ok = ok && get_string(j, "ref", out.ref, diags) && get_string(j, "package", out.package, diags);
  ok = ok && get_string(j, "version", out.version, diags);
  if (ok && out.kind == SourceSpec::Kind::Git && out.ref.empty()) ok = get_string(j, "tag", out.ref, diags);
  if (ok && j.contains("suites")) {
    if (!j["suites"].is_array()) {
      diags.error(field("suites"), "'suites' must be an array of suite names", "bad-source");
      return false;
    }
    for (auto& s : j["suites"]) {
      if (!s.is_string()) {
        diags.error(field("suites"), "'suites' must be an array of suite names", "bad-source");
        return false;
      }
      out.suites.push_back(s.get<std::string>());
    }
  }
  if (ok && j.contains("fallback_versions")) {
    const json& f = j["fallback_versions"];
    if (!f.is_array() || f.size() > 32 || !std::all_of(f.begin(), f.end(), [](auto& v) { return v.is_string(); })) {
      diags.error(field("fallback_versions"), "'fallback_versions' must be an array of Debian versions (at most 32)",
                  "bad-source", "for example [\"5.3.0-1\"]");
      return false;
    }
    for (auto& v : f) out.fallback_versions.push_back(v.get<std::string>());
  }
  return ok;
}

json to_json(const SourceSpec& s) {
  json j = {{"kind", to_string(s.kind)}};
  if (!s.path.empty()) j["path"] = s.path;
  if (!s.url.empty()) j["url"] = s.url;
  if (!s.ref.empty()) j["ref"] = s.ref;
  if (!s.package.empty()) j["package"] = s.package;
  if (!s.version.empty()) j["version"] = s.version;
  if (!s.suites.empty()) j["suites"] = s.suites;
  if (!s.fallback_versions.empty()) j["fallback_versions"] = s.fallback_versions;
  return j;
}

std::string confine_path(const std::string& path, const std::vector<std::string>& roots,
                         const std::string& what, Diagnostics& diags) {
  if (path.empty() || has_control_chars(path)) {
    diags.error(field(what), "'" + what + "' is empty or contains control characters", "bad-source");
    return {};
  }
  if (roots.empty()) {
    diags.error(field(what), "local sources are disabled: no source root is configured", "no-source-root",
                "start the service with --source-root DIR");
    return {};
  }
  // Reject `..` outright, even when it would resolve inside a root: it is never needed.
  for (auto& part : fs::path(path))
    if (part == "..") {
      diags.error(field(what), "'" + what + "' must not contain '..': " + path, "path-traversal",
                  "give a path inside a configured source root");
      return {};
    }
  std::error_code ec;
  fs::path real = fs::canonical(path, ec);  // resolves every symlink
  if (ec) {
    diags.error(field(what), "cannot resolve " + path + ": " + ec.message(), "not-found",
                "give an existing path inside a configured source root");
    return {};
  }
  for (auto& root : roots) {
    fs::path r = fs::canonical(root, ec);
    if (ec) continue;
    auto rel = real.lexically_relative(r);
    if (!rel.empty() && *rel.begin() != ".." && !rel.is_absolute()) return real.string();
  }
  diags.error(field(what), path + " resolves outside every configured source root", "path-traversal",
              "give a path inside a configured source root (symlinks out are not followed)");
  return {};
}

bool validate_source(const SourceSpec& s, const SourcePolicy& policy, Diagnostics& diags) {
  size_t before = diags.error_count();
  switch (s.kind) {
    case SourceSpec::Kind::Dir: {
      std::string real = confine_path(s.path, policy.roots, "path", diags);
      if (!real.empty() && !fs::is_directory(real))
        diags.error(field("path"), s.path + " is not a directory", "bad-source", "give a directory");
      break;
    }
    case SourceSpec::Kind::Git: {
      if (!check_argument(s.url, "url", diags)) break;
      if (s.url.find("::") != std::string::npos) {
        diags.error(field("url"), "git remote helpers ('transport::address') are not allowed: " + s.url,
                    "url-scheme", "use an https, git, ssh or file URL");
        break;
      }
      std::string scheme = url_scheme(s.url);
      if (scheme.empty()) {
        if (s.url[0] == '/') {
          confine_path(s.url, policy.roots, "url", diags);
        } else {
          diags.error(field("url"), "not a URL or absolute path: " + s.url, "url-scheme",
                      "use https://host/repo.git or an absolute path inside a source root");
        }
      } else if (!scheme_allowed(scheme, policy)) {
        diags.error(field("url"), "URL scheme '" + scheme + "' is not allowed", "url-scheme",
                    "use one of the allowed schemes");
      } else if (scheme == "file") {
        confine_path(s.url.substr(7), policy.roots, "url", diags);
      }
      if (s.ref.empty()) {
        diags.error(field("ref"), "a git source needs 'ref' (a tag)", "bad-source", "add \"ref\": \"v1.2.3\"");
        break;
      }
      static const std::regex ref_re("^[A-Za-z0-9_][A-Za-z0-9._/+-]*$");
      if (!check_argument(s.ref, "ref", diags)) break;
      if (!std::regex_match(s.ref, ref_re) || s.ref.find("..") != std::string::npos ||
          s.ref.back() == '/' || s.ref.back() == '.')
        diags.error(field("ref"), "invalid git ref: " + s.ref, "bad-source",
                    "use a tag name of letters, digits and . _ / + -");
      break;
    }
    case SourceSpec::Kind::DebianSource: {
      static const std::regex pkg_re("^[a-z0-9][a-z0-9+.-]+$");
      static const std::regex ver_re("^([0-9]+:)?[0-9][A-Za-z0-9.+~-]*$");
      if (check_argument(s.package, "package", diags) && !std::regex_match(s.package, pkg_re))
        diags.error(field("package"), "invalid Debian source package name: " + s.package, "bad-source",
                    "lowercase letters, digits and + . - (e.g. openblas)");
      if (check_argument(s.version, "version", diags) && !std::regex_match(s.version, ver_re))
        diags.error(field("version"), "invalid Debian version: " + s.version, "bad-source",
                    "an exact version such as 0.3.21+ds-4");
      for (auto& v : s.fallback_versions)
        if (check_argument(v, "fallback_versions", diags) && !std::regex_match(v, ver_re))
          diags.error(field("fallback_versions"), "invalid Debian version: " + v, "bad-source",
                      "exact versions such as 0.3.21+ds-3");
      break;
    }
    case SourceSpec::Kind::Tarball: {
      if (!s.path.empty()) {
        std::string real = confine_path(s.path, policy.roots, "path", diags);
        if (!real.empty() && !fs::is_regular_file(real))
          diags.error(field("path"), s.path + " is not a file", "bad-source", "give a tarball file");
      } else if (check_argument(s.url, "url", diags)) {
        std::string scheme = url_scheme(s.url);
        if (scheme != "https" && scheme != "http")
          diags.error(field("url"), "tarballs are fetched over http or https only: " + s.url, "url-scheme",
                      "use an https:// URL or a local path inside a source root");
        else if (!scheme_allowed(scheme, policy))
          diags.error(field("url"), "URL scheme '" + scheme + "' is not allowed", "url-scheme");
      }
      break;
    }
  }
  return diags.error_count() == before;
}

namespace {

bool fetch_git(const SourceSpec& s, const SourcePolicy& policy, FetchedSource& out, Diagnostics& diags,
               const Cancel& cancel, const Progress& progress) {
  fs::path cache = fs::path(policy.work_dir) / "git" / store::sha256_hex(s.url).substr(0, 24);
  std::error_code ec;
  fs::create_directories(cache.parent_path(), ec);
  std::lock_guard<std::mutex> g(lock_for(cache.string()));
  const std::vector<std::string> git = {"git", "-c", "protocol.ext.allow=never", "-c", "protocol.file.allow=always"};
  auto with = [&](std::vector<std::string> rest) {
    std::vector<std::string> a = git;
    a.insert(a.end(), rest.begin(), rest.end());
    return a;
  };
  if (!fs::exists(cache / "HEAD")) {
    if (progress) progress("cloning " + s.url);
    fs::remove_all(cache, ec);
    if (!run_tool(with({"clone", "--quiet", "--bare", "--", s.url, cache.string()}), policy, cancel, diags,
                  "git clone " + s.url))
      return false;
  } else {
    if (progress) progress("fetching " + s.url);
    if (!run_tool(with({"-C", cache.string(), "fetch", "--quiet", "--force", "--tags", "--", s.url}), policy,
                  cancel, diags, "git fetch " + s.url))
      return false;
  }
  ProcessResult r;
  if (!run_tool(with({"-C", cache.string(), "rev-parse", "--verify", "--quiet", "--end-of-options",
                      s.ref + "^{tree}"}),
                policy, cancel, diags, "git rev-parse " + s.ref, &r)) {
    diags.items().back().message = "no tag or branch '" + s.ref + "' in " + s.url;
    diags.items().back().code = "not-found";
    diags.items().back().hint = "list the repository's tags with git ls-remote --tags";
    return false;
  }
  std::string tree = trim(r.out);
  fs::path dest = fs::path(policy.work_dir) / "trees" / tree;
  out.digest = "git-tree:" + tree;
  out.describe = "git " + s.url + " " + s.ref + " (tree " + tree.substr(0, 12) + ")";
  if (fs::exists(dest / ".fetched")) {
    out.dir = dest.string();
    return true;
  }
  fs::path tmp = dest.string() + ".tmp";
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  fs::path tar = tmp.string() + ".tar";
  if (!run_tool(with({"-C", cache.string(), "archive", "--format=tar", "-o", tar.string(), tree}), policy, cancel,
                diags, "git archive"))
    return false;
  bool ok = run_tool({"tar", "-xf", tar.string(), "-C", tmp.string(), "--no-same-owner", "--no-same-permissions"},
                     policy, cancel, diags, "tar");
  fs::remove(tar, ec);
  if (!ok) return false;
  std::ofstream(tmp / ".fetched") << out.describe << "\n";
  fs::remove_all(dest, ec);
  fs::rename(tmp, dest, ec);
  out.dir = dest.string();
  return true;
}

// One Debian revision: from the cache, else `apt-get source --download-only` and dpkg-source.
bool fetch_debian_revision(const SourceSpec& s, const std::string& version, const fs::path& state,
                           const SourcePolicy& policy, FetchedSource& out, Diagnostics& diags, const Cancel& cancel,
                           const Progress& progress) {
  fs::path dest = fs::path(policy.work_dir) / "debian" / (s.package + "_" + version);
  std::error_code ec;
  fs::create_directories(dest.parent_path(), ec);
  std::lock_guard<std::mutex> g(lock_for(dest.string()));
  out.resolved = version;
  out.describe = "debian-source " + s.package + "=" + version;
  if (fs::exists(dest / ".fetched")) {
    std::ifstream in(dest / ".fetched");
    std::getline(in, out.digest);
    out.dir = single_child_or_self(dest / "src");
    return true;
  }
  fs::path tmp = dest.string() + ".tmp";
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (progress) progress("downloading " + s.package + "=" + version);
  std::vector<std::string> argv = {"apt-get"};
  auto o = apt_options(state);
  argv.insert(argv.end(), o.begin(), o.end());
  argv.insert(argv.end(), {"source", "--download-only", "-qq", s.package + "=" + version});
  if (!run_tool(argv, policy, cancel, diags, "apt-get source " + s.package + "=" + version, nullptr, tmp.string())) {
    fs::remove_all(tmp, ec);
    return false;
  }
  fs::path dsc;
  for (auto& e : fs::directory_iterator(tmp, ec))
    if (e.path().extension() == ".dsc") dsc = e.path();
  if (dsc.empty()) {
    diags.error(SourceLoc{"apt-get", 0, 0}, "no .dsc downloaded for " + s.package + "=" + version, "fetch-failed");
    fs::remove_all(tmp, ec);
    return false;
  }
  if (progress) progress("unpacking " + dsc.filename().string());
  if (!run_tool({"dpkg-source", "--no-check", "-x", dsc.string(), (tmp / "src").string()}, policy, cancel, diags,
                "dpkg-source -x")) {
    fs::remove_all(tmp, ec);
    return false;
  }
  out.digest = "deb-dsc:" + sha256_file(dsc);
  for (auto& e : fs::directory_iterator(tmp, ec))
    if (fs::is_regular_file(e.path())) fs::remove(e.path(), ec);  // drop the downloaded archives
  std::ofstream(tmp / ".fetched") << out.digest << "\n";
  fs::remove_all(dest, ec);
  fs::rename(tmp, dest, ec);
  out.dir = single_child_or_self(dest / "src");
  return true;
}

// `version` first, then each fallback revision in order: the archive drops superseded
// revisions (jemalloc 5.3.0-3 answers 404 while 5.3.0-1 is served), so a release fails only
// when no revision of it can be downloaded.
bool fetch_debian(const SourceSpec& s, const SourcePolicy& policy, FetchedSource& out, Diagnostics& diags,
                  const Cancel& cancel, const Progress& progress) {
  fs::path state;
  if (progress) progress("preparing the private apt configuration");
  if (!prepare_apt(s.suites, policy, diags, cancel, state)) return false;
  std::vector<std::string> candidates = {s.version};
  for (auto& v : s.fallback_versions)
    if (std::find(candidates.begin(), candidates.end(), v) == candidates.end()) candidates.push_back(v);
  std::vector<std::string> failures;  // "5.3.0-3 (exit 100: E: Failed to fetch some archives.)"
  for (auto& v : candidates) {
    Diagnostics attempt;
    if (fetch_debian_revision(s, v, state, policy, out, attempt, cancel, progress)) {
      if (!failures.empty()) {
        std::string skipped;
        for (auto& f : failures) skipped += (skipped.empty() ? "" : "; ") + f;
        out.describe += " (fallback: not served: " + skipped + ")";
        diags.warning(SourceLoc{"apt-get", 0, 0},
                      "fetched " + s.package + "=" + v + " instead of " + s.version + ": " + skipped, "revision-fallback");
      }
      return true;
    }
    if (cancel && cancel()) {
      diags.append(attempt);
      return false;
    }
    std::string why = attempt.items().empty() ? "failed" : attempt.items().back().message;
    failures.push_back(v + " (" + why + ")");
    if (progress) progress(s.package + "=" + v + " not fetched: " + why);
  }
  std::string all;
  for (auto& f : failures) all += "\n  " + f;
  diags.error(SourceLoc{"apt-get", 0, 0},
              "no Debian revision of " + s.package + " " + s.version +
                  (candidates.size() > 1 ? " or its other revisions" : "") + " could be downloaded:" + all,
              "fetch-failed",
              "check the versions with: apt-cache showsrc " + s.package +
                  " (the archive serves only current versions of each suite)");
  return false;
}

bool fetch_tarball(const SourceSpec& s, const SourcePolicy& policy, FetchedSource& out, Diagnostics& diags,
                   const Cancel& cancel, const Progress& progress) {
  fs::path file;
  std::error_code ec;
  fs::path dl_dir = fs::path(policy.work_dir) / "tarballs";
  fs::create_directories(dl_dir, ec);
  if (!s.path.empty()) {
    file = confine_path(s.path, policy.roots, "path", diags);
    if (file.empty()) return false;
  } else {
    file = dl_dir / ("download-" + store::sha256_hex(s.url).substr(0, 24));
    std::lock_guard<std::mutex> g(lock_for(file.string()));
    if (!fs::exists(file)) {
      if (progress) progress("downloading " + s.url);
      if (!http_download(s.url, file.string(), policy.fetch_timeout_s, cancel, diags)) return false;
    }
  }
  std::string digest = sha256_file(file);
  fs::path dest = dl_dir / digest;
  std::lock_guard<std::mutex> g(lock_for(dest.string()));
  out.digest = "tarball:" + digest;
  out.describe = "tarball " + (s.path.empty() ? s.url : s.path);
  if (!fs::exists(dest / ".fetched")) {
    fs::path tmp = dest.string() + ".tmp";
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp / "src", ec);
    if (progress) progress("unpacking " + file.filename().string());
    // GNU tar strips leading '/' and refuses members with '..'; owners and modes are not kept.
    if (!run_tool({"tar", "-xf", file.string(), "-C", (tmp / "src").string(), "--no-same-owner",
                   "--no-same-permissions"},
                  policy, cancel, diags, "tar -xf")) {
      fs::remove_all(tmp, ec);
      return false;
    }
    std::ofstream(tmp / ".fetched") << out.digest << "\n";
    fs::remove_all(dest, ec);
    fs::rename(tmp, dest, ec);
  }
  out.dir = single_child_or_self(dest / "src");
  return true;
}

}  // namespace

bool fetch_source(const SourceSpec& s, const SourcePolicy& policy, FetchedSource& out, Diagnostics& diags,
                  const Cancel& cancel, const Progress& progress) {
  if (!validate_source(s, policy, diags)) return false;
  switch (s.kind) {
    case SourceSpec::Kind::Dir: {
      out.dir = confine_path(s.path, policy.roots, "path", diags);
      if (progress) progress("hashing " + out.dir);
      out.digest = "tree:" + digest_tree(out.dir);
      out.describe = "dir " + out.dir;
      return true;
    }
    case SourceSpec::Kind::Git: return fetch_git(s, policy, out, diags, cancel, progress);
    case SourceSpec::Kind::DebianSource: return fetch_debian(s, policy, out, diags, cancel, progress);
    case SourceSpec::Kind::Tarball: return fetch_tarball(s, policy, out, diags, cancel, progress);
  }
  return false;
}

bool list_git_tags(const std::string& url, const SourcePolicy& policy, std::vector<std::string>& tags,
                   Diagnostics& diags) {
  SourceSpec probe;
  probe.kind = SourceSpec::Kind::Git;
  probe.url = url;
  probe.ref = "HEAD";
  if (!validate_source(probe, policy, diags)) return false;
  ProcessResult r;
  if (!run_tool({"git", "-c", "protocol.ext.allow=never", "-c", "protocol.file.allow=always", "ls-remote", "--tags",
                 "--", url},
                policy, {}, diags, "git ls-remote " + url, &r))
    return false;
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t nl = r.out.find('\n', pos);
    std::string line = r.out.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? r.out.size() : nl + 1;
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::string ref = line.substr(tab + 1);
    if (ref.rfind("refs/tags/", 0) != 0) continue;
    ref = ref.substr(10);
    if (ref.size() > 3 && ref.compare(ref.size() - 3, 3, "^{}") == 0) ref.resize(ref.size() - 3);
    seen.insert(ref);
  }
  tags.assign(seen.begin(), seen.end());
  std::sort(tags.begin(), tags.end(), [](auto& a, auto& b) { return store::compare_versions(a, b) < 0; });
  return true;
}

bool list_debian_versions(const std::string& package, const std::vector<std::string>& suites,
                          const SourcePolicy& policy, std::vector<std::string>& versions, Diagnostics& diags) {
  SourceSpec probe;
  probe.kind = SourceSpec::Kind::DebianSource;
  probe.package = package;
  probe.version = "0";
  if (!validate_source(probe, policy, diags)) return false;
  fs::path state;
  if (!prepare_apt(suites, policy, diags, {}, state)) return false;
  std::vector<std::string> argv = {"apt-cache"};
  auto o = apt_options(state);
  argv.insert(argv.end(), o.begin(), o.end());
  argv.insert(argv.end(), {"showsrc", "--", package});
  ProcessResult r;
  if (!run_tool(argv, policy, {}, diags, "apt-cache showsrc " + package, &r)) return false;
  std::set<std::string> seen;
  std::string current;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t nl = r.out.find('\n', pos);
    std::string line = r.out.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? r.out.size() : nl + 1;
    if (line.rfind("Package: ", 0) == 0) current = trim(line.substr(9));
    else if (line.rfind("Version: ", 0) == 0 && current == package) seen.insert(trim(line.substr(9)));
  }
  versions.assign(seen.begin(), seen.end());
  std::sort(versions.begin(), versions.end(), [](auto& a, auto& b) { return store::compare_versions(a, b) < 0; });
  if (versions.empty()) {
    diags.error(SourceLoc{"apt-cache", 0, 0}, "no source package '" + package + "' in the suites", "not-found",
                "check the source package name (e.g. libzstd, not zstd)");
    return false;
  }
  return true;
}

}  // namespace syspilot::service
