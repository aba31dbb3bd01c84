// Source inputs: parsing, validation before anything runs, and fetching into a content-keyed
// cache (git trees by tree id, Debian packages by their .dsc digest, tarballs by file digest);
// archives are capped on a listing before unpacking and their links checked after.
#include "service/sources.h"

#include <openssl/evp.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

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

// Validation is plain character loops, not std::regex: libstdc++ matches recursively, one
// stack frame per character, and a 100 KB value from a request overflowed the stack.
bool all_of_set(const std::string& s, size_t from, const char* extra) {
  for (size_t i = from; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (!std::isalnum(c) && !std::strchr(extra, c)) return false;
  }
  return true;
}

// A tag or branch: [A-Za-z0-9_][A-Za-z0-9._/+-]*, no "..", not ending in '/' or '.'.
bool valid_ref(const std::string& r) {
  if (r.empty() || !(std::isalnum(static_cast<unsigned char>(r[0])) || r[0] == '_')) return false;
  return all_of_set(r, 1, "._/+-") && r.find("..") == std::string::npos && r.back() != '/' && r.back() != '.';
}

// A Debian source package name: [a-z0-9][a-z0-9+.-]+.
bool valid_package(const std::string& p) {
  if (p.size() < 2) return false;
  for (unsigned char c : p)
    if (!(std::islower(c) || std::isdigit(c) || c == '+' || c == '.' || c == '-')) return false;
  return std::isalnum(static_cast<unsigned char>(p[0]));
}

// A Debian version: ([0-9]+:)?[0-9][A-Za-z0-9.+~-]*.
bool valid_debian_version(const std::string& v) {
  size_t start = 0;
  if (auto colon = v.find(':'); colon != std::string::npos) {
    if (colon == 0 || !std::all_of(v.begin(), v.begin() + static_cast<long>(colon), ::isdigit)) return false;
    start = colon + 1;
  }
  return start < v.size() && std::isdigit(static_cast<unsigned char>(v[start])) && all_of_set(v, start + 1, ".+~-");
}

// A Debian suite: [a-z][a-z0-9-]*.
bool valid_suite(const std::string& s) {
  if (s.empty() || !std::islower(static_cast<unsigned char>(s[0]))) return false;
  for (unsigned char c : s)
    if (!(std::islower(c) || std::isdigit(c) || c == '-')) return false;
  return true;
}

// A suite as a deb-src line and the private apt state's folder name take it: checked when a
// source is submitted (validate_source) and again where apt is prepared (feeds name suites too).
bool check_suite(const std::string& suite, const SourceLoc& where, Diagnostics& diags) {
  if (suite.size() <= 64 && valid_suite(suite)) return true;
  diags.error(where, "invalid Debian suite name: " + suite.substr(0, 64), "bad-source",
              "use names like bookworm, trixie, sid");
  return false;
}

// Every value a request can carry has a length limit, checked before anything else.
bool check_length(const std::string& value, const std::string& name, size_t max, Diagnostics& diags) {
  if (value.size() <= max) return true;
  diags.error(field(name), "'" + name + "' is " + std::to_string(value.size()) + " characters long; the limit is " +
                               std::to_string(max),
              "too-long", "send a shorter value");
  return false;
}

bool within_limits(const SourceSpec& s, Diagnostics& diags) {
  bool ok = check_length(s.url, "url", kMaxUrlLength, diags) && check_length(s.path, "path", 4096, diags) &&
            check_length(s.ref, "ref", 255, diags) && check_length(s.package, "package", 128, diags) &&
            check_length(s.version, "version", 128, diags);
  if (ok && s.suites.size() > 16) {
    diags.error(field("suites"), "at most 16 suites", "too-long", "name fewer suites");
    ok = false;
  }
  for (size_t i = 0; ok && i < s.suites.size(); ++i) ok = check_length(s.suites[i], "suites", 64, diags);
  if (ok && s.fallback_versions.size() > 32) {
    diags.error(field("fallback_versions"), "at most 32 fallback versions", "too-long", "name fewer versions");
    ok = false;
  }
  for (size_t i = 0; ok && i < s.fallback_versions.size(); ++i)
    ok = check_length(s.fallback_versions[i], "fallback_versions", 128, diags);
  return ok;
}

std::string url_scheme(const std::string& url) {
  size_t i = 0;
  while (i < url.size() && (std::isalnum(static_cast<unsigned char>(url[i])) || url[i] == '+' || url[i] == '.' ||
                            url[i] == '-'))
    ++i;
  if (i == 0 || !std::isalpha(static_cast<unsigned char>(url[0])) || url.compare(i, 3, "://") != 0) return {};
  std::string s = url.substr(0, i);
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  return s;
}

// A network URL for git or a download: no credentials (ssh may name a user), and a host
// written as an address must be allowed. Names are resolved and checked when fetching.
void check_network_url(const std::string& url, const std::string& scheme, const SourcePolicy& policy,
                       Diagnostics& diags) {
  validate_outbound_url(url, policy.outbound, diags, "source.url", scheme == "ssh");
}

// Git's options for a remote URL. Redirects are off, not "initial": the first request is
// exactly the one a hostile server would redirect to an internal address. For http(s), curl
// connects to the address the policy checked (http.curloptResolve), not to a second DNS answer.
std::vector<std::string> git_command(const Url* remote = nullptr, const std::string& address = {}) {
  std::vector<std::string> git = {"git", "-c", "protocol.ext.allow=never", "-c", "protocol.file.allow=always",
                                  "-c", "http.followRedirects=false"};
  if (remote && !address.empty() && (remote->scheme == "http" || remote->scheme == "https")) {
    std::string a = address.find(':') != std::string::npos ? "[" + address + "]" : address;
    git.insert(git.end(), {"-c", "http.curloptResolve=" + remote->host + ":" + std::to_string(remote->port) + ":" + a});
  }
  return git;
}

// A local repository is read where git reads it, not only where its path leads: a `.git`
// file's `gitdir:` line, a `.git` or `objects` symlink, the object stores it borrows from
// (objects/info/alternates) and a worktree's `commondir` take git anywhere on the machine,
// and a clone of a repository inside a root checked out files from outside every root. So the
// git dir and its objects must resolve inside a root too, and a repository that borrows
// objects or points its git dir elsewhere is refused.
bool confine_local_repository(const std::string& url, const SourcePolicy& policy, Diagnostics& diags) {
  std::string real = confine_path(url_scheme(url) == "file" ? url.substr(7) : url, policy.roots, "url", diags);
  if (real.empty()) return false;
  auto refuse = [&](const std::string& why) {
    diags.error(field("url"), "the repository at " + url.substr(0, 200) + " " + why, "path-traversal",
                "give a repository whose git dir and objects lie inside a source root, with no alternates");
    return false;
  };
  std::error_code ec;
  fs::path gitdir = fs::path(real) / ".git";
  fs::file_status st = fs::symlink_status(gitdir, ec);
  if (!ec && fs::exists(st)) {
    if (fs::is_regular_file(st)) return refuse("names its git dir elsewhere (a .git file)");
  } else {
    gitdir = real;  // a bare repository
  }
  Diagnostics inner;
  for (const fs::path& p : {gitdir, gitdir / "objects"})
    if (fs::exists(p, ec) && confine_path(p.string(), policy.roots, "url", inner).empty())
      return refuse("keeps its git dir or objects outside every source root");
  for (const char* f : {"commondir", "objects/info/alternates", "objects/info/http-alternates"})
    if (fs::exists(gitdir / f, ec)) return refuse("borrows from another repository (" + std::string(f) + ")");
  return true;
}

// Right before git connects: file URLs and paths are governed by the roots; any other URL's
// host must resolve to allowed addresses only.
bool check_git_remote(const std::string& url, const SourcePolicy& policy, std::vector<std::string>& git,
                      Diagnostics& diags) {
  std::string scheme = url_scheme(url);
  if (scheme.empty() || scheme == "file") {
    if (!confine_local_repository(url, policy, diags)) return false;
    git = git_command();
    return true;
  }
  Url u;
  std::string address;
  if (!check_outbound(url, policy.outbound, u, address, diags, "source.url")) return false;
  git = git_command(&u, address);
  return true;
}

// What a job stores and echoes: validation refuses credentials, and should one slip
// through, the stored form carries none (an ssh user name is not a secret).
std::string stored_url(const std::string& url) {
  Url u;
  std::string why;
  if (!parse_url(url, u, why) || u.userinfo.empty()) return url;
  if (u.scheme == "ssh" && u.userinfo.find(':') == std::string::npos) return url;
  auto at = url.find('@', url.find("://") + 3);
  return url.substr(0, url.find("://") + 3) + url.substr(at + 1);
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
              const std::string& cwd = {}, std::map<std::string, std::string> env = {},
              size_t max_output = 1 << 20) {
  ProcessOptions po;
  po.timeout_s = policy.fetch_timeout_s;
  po.max_output = max_output;
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
    // the last line says why, but tar ends with a summary line after the member that failed,
    // and may note after it that it removed a leading '/' from other members
    auto last_line = [&err] {
      while (!err.empty() && std::isspace(static_cast<unsigned char>(err.back()))) err.pop_back();
      auto nl = err.rfind('\n');
      return nl == std::string::npos ? 0 : nl + 1;
    };
    size_t from = last_line();
    while (from > 0 && (err.find("Exiting with failure status due to previous errors", from) != std::string::npos ||
                        err.compare(from, 22, "tar: Removing leading ") == 0)) {
      err.resize(from);
      from = last_line();
    }
    std::string line = err.substr(from);
    // a member's name can be thousands of bytes: its start and the reason after it are kept
    if (line.size() > 400) line = line.substr(0, 200) + "..." + line.substr(line.size() - 200);
    why = "exit " + std::to_string(r.exit_code) + ": " + line;
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

// ---- Archives: listed and capped before unpacking, scanned for links after ----

// `p` and `root` are real paths: a prefix test on whole components.
bool inside_tree(const fs::path& p, const fs::path& root) {
  const std::string& a = p.native();
  const std::string& r = root.native();
  if (r == "/") return !a.empty() && a[0] == '/';
  return a == r || (a.size() > r.size() && a.compare(0, r.size(), r) == 0 && a[r.size()] == '/');
}

// Whether a link target, read from the folder `from` inside the archive ("" for its top),
// leaves the tree: absolute, or more `..` than folders above it. Lexical only: the unpacked
// tree is checked again on real paths (links through links).
bool leaves_tree(const std::string& from, const std::string& target) {
  if (!target.empty() && target[0] == '/') return true;
  long depth = 0;
  for (const std::string* part : {&from, &target}) {
    size_t i = 0;
    while (i <= part->size()) {
      size_t slash = part->find('/', i);
      if (slash == std::string::npos) slash = part->size();
      std::string c = part->substr(i, slash - i);
      if (c == "..") {
        if (--depth < 0) return true;
      } else if (!c.empty() && c != ".") {
        ++depth;
      }
      i = slash + 1;
    }
  }
  return false;
}

// One name as GNU tar's --quoting-style=c prints it, starting at s[i] == '"'; i ends past it.
bool read_c_quoted(const std::string& s, size_t& i, std::string& out) {
  if (i >= s.size() || s[i] != '"') return false;
  out.clear();
  for (++i; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      ++i;
      return true;
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= s.size()) return false;
    c = s[i];
    if (c >= '0' && c <= '7') {
      int v = 0;
      for (int n = 0; n < 3 && i < s.size() && s[i] >= '0' && s[i] <= '7'; ++n, ++i) v = v * 8 + (s[i] - '0');
      --i;
      out += static_cast<char>(v);
      continue;
    }
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'v': out += '\v'; break;
      default: out += c;  // \\ \" \?
    }
  }
  return false;
}

struct ArchiveListing {
  uint64_t entries = 0;
  uint64_t bytes = 0;                     // what the members unpack to (sparse files at full size)
  std::vector<std::string> escaping_hardlinks;  // "member -> target"
  std::vector<std::string> special;       // devices, FIFOs, sockets
};

// Lines of `tar --list --verbose --numeric-owner --full-time --quoting-style=c
// --absolute-names`: mode, uid/gid, size, date, time, "name", then ` -> "target"` for a
// symbolic link or ` link to "target"` for a hard link. False on a line of another shape.
bool parse_tar_listing(const std::string& text, ArchiveListing& out, std::string& bad) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    size_t q = line.find('"');
    std::istringstream head(line.substr(0, q == std::string::npos ? 0 : q));
    std::string mode, owner, size;
    head >> mode >> owner >> size;
    std::string name, target;
    size_t i = q;
    if (q == std::string::npos || mode.empty() || !read_c_quoted(line, i, name)) {
      bad = line.substr(0, 200);
      return false;
    }
    if (line.compare(i, 4, " -> ") == 0) i += 4;
    else if (line.compare(i, 9, " link to ") == 0) i += 9;
    if (i < line.size() && line[i] == '"' && !read_c_quoted(line, i, target)) {
      bad = line.substr(0, 200);
      return false;
    }
    ++out.entries;
    switch (mode[0]) {
      case 'd': case 'l': break;  // symbolic links leading out are removed after unpacking
      case 'h':
        // GNU tar would strip a leading '/' or '../', but no honest archive names one
        if (leaves_tree("", target)) out.escaping_hardlinks.push_back(name + " -> " + target);
        break;
      case 'c': case 'b': case 'p': case 's': out.special.push_back(name); break;
      default: {
        char* end = nullptr;
        errno = 0;
        unsigned long long n = std::strtoull(size.c_str(), &end, 10);
        if (size.empty() || *end != '\0' || errno != 0) {
          bad = line.substr(0, 200);
          return false;
        }
        out.bytes = n > UINT64_MAX - out.bytes ? UINT64_MAX : out.bytes + n;
      }
    }
  }
  return true;
}

std::string mib(uint64_t bytes) {
  if (bytes < (1u << 20)) return std::to_string((bytes + 1023) / 1024) + " KiB";
  return std::to_string(bytes >> 20) + " MiB";
}

const char* kCapHint = "the service refuses likely archive bombs; use a smaller source, or raise the cap "
                       "(SourcePolicy archive_max_*) for a trusted one";

// The caps on entries and unpacked size; `packed` (the archive file's size, 0 when not
// compressed data) adds the ratio cap.
bool within_caps(uint64_t entries, uint64_t bytes, uint64_t packed, const std::string& label,
                 const SourcePolicy& policy, Diagnostics& diags) {
  SourceLoc loc{label, 0, 0};
  if (entries > policy.archive_max_entries) {
    diags.error(loc, "archive has " + std::to_string(entries) + " entries, over the limit of " +
                         std::to_string(policy.archive_max_entries), "archive-too-many-entries", kCapHint);
    return false;
  }
  if (bytes > policy.archive_max_bytes) {
    diags.error(loc, "archive unpacks to " + mib(bytes) + ", over the limit of " + mib(policy.archive_max_bytes),
                "archive-too-large", kCapHint);
    return false;
  }
  if (packed > 0 && bytes > policy.archive_ratio_floor &&
      static_cast<double>(bytes) > policy.archive_max_ratio * static_cast<double>(packed)) {
    diags.error(loc, "archive unpacks to " + mib(bytes) + " from " + mib(packed) + " (" +
                         std::to_string(bytes / packed) + ":1, over the limit of " +
                         std::to_string(static_cast<long long>(policy.archive_max_ratio)) + ":1)",
                "archive-ratio", kCapHint);
    return false;
  }
  return true;
}

// Room for the listing of an archive at the entry cap (a line is ~100 bytes plus the name);
// a longer listing is itself a refusal.
size_t listing_cap(const SourcePolicy& policy) {
  uint64_t cap = policy.archive_max_entries * 512;
  return static_cast<size_t>(std::clamp<uint64_t>(cap, 1u << 20, 256u << 20));
}

// Lists `file` with GNU tar (bounded in time by run_tool, in memory by listing_cap) and
// refuses it before anything is written: over a cap, a hard link leaving the tree, or a
// device, FIFO or socket member.
bool check_archive(const fs::path& file, const std::string& label, const SourcePolicy& policy,
                   const Cancel& cancel, Diagnostics& diags) {
  ProcessResult r;
  size_t cap = listing_cap(policy);
  if (!run_tool({"tar", "--list", "--verbose", "--numeric-owner", "--full-time", "--quoting-style=c",
                 "--absolute-names", "--file=" + file.string()},
                policy, cancel, diags, "tar --list " + label, &r, {}, {}, cap)) {
    if (!r.cancelled) {
      diags.items().back().code = "archive-unreadable";
      diags.items().back().hint = "give a tar archive, plain or compressed with gzip, bzip2, xz or zstd";
    }
    return false;
  }
  SourceLoc loc{label, 0, 0};
  if (r.out.size() >= cap) {
    diags.error(loc, "archive listing is over " + mib(cap) + ": too many entries or names too long",
                "archive-too-many-entries", kCapHint);
    return false;
  }
  ArchiveListing l;
  std::string bad;
  if (!parse_tar_listing(r.out, l, bad)) {
    diags.error(loc, "unexpected line in the archive listing: " + bad, "archive-unreadable",
                "give a tar archive, plain or compressed with gzip, bzip2, xz or zstd");
    return false;
  }
  std::error_code ec;
  uint64_t packed = fs::file_size(file, ec);
  if (!within_caps(l.entries, l.bytes, ec ? 0 : packed, label, policy, diags)) return false;
  if (!l.escaping_hardlinks.empty()) {
    diags.error(loc, "archive has a hard link leading outside its tree: " + l.escaping_hardlinks.front() +
                         (l.escaping_hardlinks.size() > 1
                              ? " (and " + std::to_string(l.escaping_hardlinks.size() - 1) + " more)"
                              : ""),
                "archive-link-escape", "hard links must name a member of the same archive");
    return false;
  }
  if (!l.special.empty()) {
    diags.error(loc, "archive has a device, FIFO or socket member: " + l.special.front(), "archive-special-file",
                "source archives hold files, folders and links only");
    return false;
  }
  return true;
}

// Members are unpacked with their modes less the umask: a folder of mode 000 could not be
// walked, and one of 0555 not emptied, by the service that wrote it, so a refused or replaced
// tree stayed in the cache for good. Every folder is made owner-rwx and every file owner-rw,
// each folder before it is entered.
void own_tree(const fs::path& dir) {
  auto fix = [](const fs::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return;
    mode_t want = S_ISDIR(st.st_mode) ? S_IRWXU : S_ISREG(st.st_mode) ? (S_IRUSR | S_IWUSR) : 0;
    if ((st.st_mode & want) != want) ::chmod(p.c_str(), (st.st_mode & 07777) | want);
  };
  fix(dir);
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec), end;  // never follows folder links
  for (; !ec && it != end; it.increment(ec)) fix(it->path());
}

// An unpacked tree removed whatever modes its members came with.
void remove_tree(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) return;
  own_tree(dir);
  fs::remove_all(dir, ec);
}

// Defence in depth after any unpacking (tar, git archive, dpkg-source), on real paths:
// symbolic links whose target resolves outside `dir` (or loops) are removed, as are
// files whose inode has links outside the tree and anything but files, folders and links;
// the caps are checked again on what was written.
bool sanitize_tree(const fs::path& dir, const std::string& label, const SourcePolicy& policy,
                   Diagnostics& diags) {
  SourceLoc loc{label, 0, 0};
  own_tree(dir);
  std::error_code ec;
  fs::path root = fs::canonical(dir, ec);
  if (ec) {
    diags.error(loc, "unpacked tree cannot be read: " + ec.message(), "archive-unreadable");
    return false;
  }
  uint64_t entries = 0, bytes = 0;
  std::vector<std::pair<fs::path, std::string>> bad_links;  // path, link text
  std::vector<fs::path> special;
  struct Inode {
    nlink_t links = 0;
    std::vector<fs::path> paths;
  };
  std::map<std::pair<dev_t, ino_t>, Inode> shared;
  fs::recursive_directory_iterator it(root, ec), end;  // never follows folder links
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;
    ++entries;
    if (S_ISLNK(st.st_mode)) {
      // resolved from its text, so a dangling link to /etc/x counts as leading out too
      std::error_code lec;
      fs::path text = fs::read_symlink(p, lec);
      fs::path target = lec ? fs::path() : fs::weakly_canonical(text.is_absolute() ? text : p.parent_path() / text, lec);
      if (lec || !inside_tree(target, root)) bad_links.push_back({p, text.string()});
    } else if (S_ISREG(st.st_mode)) {
      bytes += static_cast<uint64_t>(st.st_size);
      if (st.st_nlink > 1) {
        auto& in = shared[{st.st_dev, st.st_ino}];
        in.links = st.st_nlink;
        in.paths.push_back(p);
      }
    } else if (!S_ISDIR(st.st_mode)) {
      special.push_back(p);
    }
  }
  if (ec) {
    diags.error(loc, "unpacked tree cannot be read: " + ec.message(), "archive-unreadable");
    return false;
  }
  if (!within_caps(entries, bytes, 0, label, policy, diags)) return false;
  std::vector<fs::path> outside_hardlinks;
  for (auto& [key, in] : shared)
    if (in.paths.size() < in.links) outside_hardlinks.insert(outside_hardlinks.end(), in.paths.begin(), in.paths.end());
  auto rel = [&](const fs::path& p) { return p.lexically_relative(root).string(); };
  if (!outside_hardlinks.empty()) {
    diags.error(loc, "unpacked file shares its data with a file outside the tree (hard link): " +
                         rel(outside_hardlinks.front()),
                "archive-link-escape", "hard links must name a member of the same archive");
    return false;
  }
  if (!bad_links.empty()) {
    std::string examples;
    for (size_t i = 0; i < bad_links.size() && i < 3; ++i)
      examples += (i ? ", " : "") + rel(bad_links[i].first) + " -> " + bad_links[i].second;
    for (auto& [p, text] : bad_links) fs::remove(p, ec);
    diags.warning(loc, "removed " + std::to_string(bad_links.size()) +
                           " symbolic link(s) leading outside the tree: " + examples +
                           (bad_links.size() > 3 ? ", ..." : ""),
                  "archive-link-dropped", "links are kept only when they stay inside the unpacked tree");
  }
  if (!special.empty()) {
    for (auto& p : special) fs::remove(p, ec);
    diags.warning(loc, "removed " + std::to_string(special.size()) + " device, FIFO or socket file(s): " +
                           rel(special.front()), "archive-special-file");
  }
  return true;
}

// GNU tar with owners and modes not kept, then the tree checked on real paths.
bool unpack_tar(const fs::path& file, const fs::path& into, const std::string& label, const SourcePolicy& policy,
                const Cancel& cancel, Diagnostics& diags) {
  // GNU tar strips leading '/', refuses members with '..', and creates links that lead out
  // of the tree only after every file is written, so nothing is written through one.
  return run_tool({"tar", "-xf", file.string(), "-C", into.string(), "--no-same-owner", "--no-same-permissions"},
                  policy, cancel, diags, "tar -xf " + label) &&
         sanitize_tree(into, label, policy, diags);
}

// A git tree's size and entry count from `git ls-tree -r -t -l -z`, before `git archive`
// writes it out.
bool check_git_tree(const std::vector<std::string>& git, const fs::path& repo, const std::string& tree,
                    const std::string& label, const SourcePolicy& policy, const Cancel& cancel, Diagnostics& diags) {
  std::vector<std::string> argv = git;
  argv.insert(argv.end(), {"-C", repo.string(), "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", tree});
  ProcessResult r;
  size_t cap = listing_cap(policy);
  if (!run_tool(argv, policy, cancel, diags, "git ls-tree", &r, {}, {}, cap)) return false;
  if (r.out.size() >= cap) {
    diags.error(SourceLoc{label, 0, 0}, "git tree listing is over " + mib(cap) + ": too many entries",
                "archive-too-many-entries", kCapHint);
    return false;
  }
  uint64_t entries = 0, bytes = 0;
  size_t pos = 0;
  while (pos < r.out.size()) {
    size_t z = r.out.find('\0', pos);
    if (z == std::string::npos) z = r.out.size();
    std::string rec = r.out.substr(pos, z - pos);  // "<mode> <type> <id> <size>\t<path>"
    pos = z + 1;
    if (rec.empty()) continue;
    ++entries;
    std::istringstream head(rec.substr(0, rec.find('\t')));
    std::string mode, type, id, size;
    head >> mode >> type >> id >> size;
    if (type == "blob") {
      unsigned long long n = std::strtoull(size.c_str(), nullptr, 10);
      bytes = n > UINT64_MAX - bytes ? UINT64_MAX : bytes + n;
    }
  }
  return within_caps(entries, bytes, 0, label, policy, diags);
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
  std::string key;
  for (auto& s : suites) {
    if (!check_suite(s, SourceLoc{"suites", 0, 0}, diags)) return false;
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
    // the non-throwing forms: an entry that cannot be looked at (a name too long for the
    // system, 10,000 folders deep) is left out of the digest, not an exception out of the job
    std::error_code sec;
    if (p.filename() == ".git" && it->is_directory(sec)) {
      it.disable_recursion_pending();
      continue;
    }
    auto st = it->symlink_status(sec);
    if (!sec && (fs::is_regular_file(st) || fs::is_symlink(st))) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (auto& p : files) {
    std::string rel = fs::relative(p, dir, ec).string();
    auto st = fs::symlink_status(p, ec);
    if (ec) continue;
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
  if (!s.url.empty()) j["url"] = stored_url(s.url);
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
  fs::path real;
  if (fs::path(path).is_relative()) {
    // A relative path names a place inside the source roots (the first root that holds it),
    // never one under the service's working directory, which a client cannot know.
    for (auto& root : roots) {
      fs::path candidate = fs::canonical(fs::path(root) / path, ec);
      if (!ec) {
        real = candidate;
        break;
      }
    }
    if (real.empty()) {
      diags.error(field(what), "no source root holds " + path, "not-found",
                  "a relative path is taken inside the configured source roots; give one that exists there");
      return {};
    }
  } else {
    real = fs::canonical(path, ec);  // resolves every symlink
    if (ec) {
      diags.error(field(what), "cannot resolve " + path + ": " + ec.message(), "not-found",
                  "give an existing path inside a configured source root");
      return {};
    }
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
  if (!within_limits(s, diags)) return false;
  switch (s.kind) {
    case SourceSpec::Kind::Dir: {
      std::string real = confine_path(s.path, policy.roots, "path", diags);
      if (!real.empty() && !fs::is_directory(real))
        diags.error(field("path"), s.path + " is not a directory", "bad-source", "give a directory");
      break;
    }
    case SourceSpec::Kind::Git: {
      if (!check_argument(s.url, "url", diags)) break;
      if (s.url.find("::") != std::string::npos && url_scheme(s.url).empty()) {
        diags.error(field("url"), "git remote helpers ('transport::address') are not allowed: " + redact_url(s.url),
                    "url-scheme", "use an https, git, ssh or file URL");
        break;
      }
      std::string scheme = url_scheme(s.url);
      if (scheme.empty()) {
        if (s.url[0] == '/') {
          confine_path(s.url, policy.roots, "url", diags);
        } else {
          diags.error(field("url"), "not a URL or absolute path: " + redact_url(s.url), "url-scheme",
                      "use https://host/repo.git or an absolute path inside a source root");
        }
      } else if (!scheme_allowed(scheme, policy)) {
        diags.error(field("url"), "URL scheme '" + scheme.substr(0, 32) + "' is not allowed", "url-scheme",
                    "use one of the allowed schemes");
      } else if (scheme == "file") {
        confine_path(s.url.substr(7), policy.roots, "url", diags);
      } else {
        check_network_url(s.url, scheme, policy, diags);
      }
      if (s.ref.empty()) {
        diags.error(field("ref"), "a git source needs 'ref' (a tag)", "bad-source", "add \"ref\": \"v1.2.3\"");
        break;
      }
      if (!check_argument(s.ref, "ref", diags)) break;
      if (!valid_ref(s.ref))
        diags.error(field("ref"), "invalid git ref: " + s.ref, "bad-source",
                    "use a tag name of letters, digits and . _ / + -");
      break;
    }
    case SourceSpec::Kind::DebianSource: {
      if (check_argument(s.package, "package", diags) && !valid_package(s.package))
        diags.error(field("package"), "invalid Debian source package name: " + s.package, "bad-source",
                    "lowercase letters, digits and + . - (e.g. openblas)");
      if (check_argument(s.version, "version", diags) && !valid_debian_version(s.version))
        diags.error(field("version"), "invalid Debian version: " + s.version, "bad-source",
                    "an exact version such as 0.3.21+ds-4");
      for (auto& v : s.fallback_versions)
        if (check_argument(v, "fallback_versions", diags) && !valid_debian_version(v))
          diags.error(field("fallback_versions"), "invalid Debian version: " + v, "bad-source",
                      "exact versions such as 0.3.21+ds-3");
      for (auto& suite : s.suites) check_suite(suite, field("suites"), diags);
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
          diags.error(field("url"), "tarballs are fetched over http or https only: " + redact_url(s.url), "url-scheme",
                      "use an https:// URL or a local path inside a source root");
        else if (!scheme_allowed(scheme, policy))
          diags.error(field("url"), "URL scheme '" + scheme + "' is not allowed", "url-scheme");
        else
          check_network_url(s.url, scheme, policy, diags);
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
  // Checked here, under the lock and right before git connects, not only at submission.
  std::vector<std::string> git;
  if (!check_git_remote(s.url, policy, git, diags)) return false;
  auto with = [&](std::vector<std::string> rest) {
    std::vector<std::string> a = git;
    a.insert(a.end(), rest.begin(), rest.end());
    return a;
  };
  if (!fs::exists(cache / "HEAD")) {
    if (progress) progress("cloning " + redact_url(s.url));
    fs::remove_all(cache, ec);
    if (!run_tool(with({"clone", "--quiet", "--bare", "--", s.url, cache.string()}), policy, cancel, diags,
                  "git clone " + redact_url(s.url)))
      return false;
  } else {
    if (progress) progress("fetching " + redact_url(s.url));
    if (!run_tool(with({"-C", cache.string(), "fetch", "--quiet", "--force", "--tags", "--", s.url}), policy,
                  cancel, diags, "git fetch " + redact_url(s.url)))
      return false;
  }
  ProcessResult r;
  if (!run_tool(with({"-C", cache.string(), "rev-parse", "--verify", "--quiet", "--end-of-options",
                      s.ref + "^{tree}"}),
                policy, cancel, diags, "git rev-parse " + s.ref, &r)) {
    diags.items().back().message = "no tag or branch '" + s.ref + "' in " + redact_url(s.url);
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
  std::string label = "git tree " + tree.substr(0, 12);
  if (!check_git_tree(git, cache, tree, label, policy, cancel, diags)) return false;
  fs::path tmp = dest.string() + ".tmp";
  remove_tree(tmp);
  fs::create_directories(tmp, ec);
  fs::path tar = tmp.string() + ".tar";
  if (!run_tool(with({"-C", cache.string(), "archive", "--format=tar", "-o", tar.string(), tree}), policy, cancel,
                diags, "git archive")) {
    fs::remove(tar, ec);
    remove_tree(tmp);
    return false;
  }
  // a repository may hold links to /etc: the same checks as for any archive
  bool ok = unpack_tar(tar, tmp, label, policy, cancel, diags);
  fs::remove(tar, ec);
  if (!ok) {
    remove_tree(tmp);
    return false;
  }
  std::ofstream(tmp / ".fetched") << out.describe << "\n";
  remove_tree(dest);
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
  remove_tree(tmp);
  fs::create_directories(tmp, ec);
  if (progress) progress("downloading " + s.package + "=" + version);
  std::vector<std::string> argv = {"apt-get"};
  auto o = apt_options(state);
  argv.insert(argv.end(), o.begin(), o.end());
  argv.insert(argv.end(), {"source", "--download-only", "-qq", s.package + "=" + version});
  if (!run_tool(argv, policy, cancel, diags, "apt-get source " + s.package + "=" + version, nullptr, tmp.string())) {
    remove_tree(tmp);
    return false;
  }
  fs::path dsc;
  for (auto& e : fs::directory_iterator(tmp, ec))
    if (e.path().extension() == ".dsc") dsc = e.path();
  if (dsc.empty()) {
    diags.error(SourceLoc{"apt-get", 0, 0}, "no .dsc downloaded for " + s.package + "=" + version, "fetch-failed");
    remove_tree(tmp);
    return false;
  }
  if (progress) progress("unpacking " + dsc.filename().string());
  // dpkg-source runs tar itself: its tarballs are listed and capped first, its tree checked after.
  // Only the tarballs: a package also carries the upstream signatures of its tarballs
  // (libzstd's orig.tar.xz.asc), which dpkg-source verifies or ignores, never unpacks.
  auto is_tarball = [](const std::string& name) {
    static const std::regex tarball(R"(\.(tar(\.(gz|bz2|xz|lzma|zst))?|tgz)$)");
    return std::regex_search(name, tarball);
  };
  for (auto& e : fs::directory_iterator(tmp, ec)) {
    std::string name = e.path().filename().string();
    if (is_tarball(name) && fs::is_regular_file(fs::symlink_status(e.path())) &&
        !check_archive(e.path(), name, policy, cancel, diags)) {
      remove_tree(tmp);
      return false;
    }
  }
  if (!run_tool({"dpkg-source", "--no-check", "-x", dsc.string(), (tmp / "src").string()}, policy, cancel, diags,
                "dpkg-source -x") ||
      !sanitize_tree(tmp / "src", s.package + "_" + version, policy, diags)) {
    remove_tree(tmp);
    return false;
  }
  out.digest = "deb-dsc:" + sha256_file(dsc);
  for (auto& e : fs::directory_iterator(tmp, ec))
    if (fs::is_regular_file(e.path())) fs::remove(e.path(), ec);  // drop the downloaded archives
  std::ofstream(tmp / ".fetched") << out.digest << "\n";
  remove_tree(dest);
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
      if (progress) progress("downloading " + redact_url(s.url));
      if (!http_download(s.url, file.string(), policy.fetch_timeout_s, cancel, diags, policy.outbound)) return false;
    }
  }
  std::string digest = sha256_file(file);
  fs::path dest = dl_dir / digest;
  std::lock_guard<std::mutex> g(lock_for(dest.string()));
  out.digest = "tarball:" + digest;
  out.describe = "tarball " + (s.path.empty() ? s.url : s.path);
  if (!fs::exists(dest / ".fetched")) {
    std::string label = s.path.empty() ? redact_url(s.url) : s.path;
    if (progress) progress("listing " + file.filename().string());
    if (!check_archive(file, label, policy, cancel, diags)) return false;
    fs::path tmp = dest.string() + ".tmp";
    remove_tree(tmp);
    fs::create_directories(tmp / "src", ec);
    if (progress) progress("unpacking " + file.filename().string());
    if (!unpack_tar(file, tmp / "src", label, policy, cancel, diags)) {
      remove_tree(tmp);
      return false;
    }
    std::ofstream(tmp / ".fetched") << out.digest << "\n";
    remove_tree(dest);
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
  std::vector<std::string> argv;
  if (!check_git_remote(url, policy, argv, diags)) return false;
  argv.insert(argv.end(), {"ls-remote", "--tags", "--", url});
  ProcessResult r;
  if (!run_tool(argv, policy, {}, diags, "git ls-remote " + redact_url(url), &r)) return false;
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
    // A remote's tag names are untrusted input to the feeds' tag patterns (std::regex):
    // longer than any ref a source may name, they are not releases.
    if (ref.size() > 255) continue;
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
    else if (line.rfind("Version: ", 0) == 0 && current == package && line.size() <= 9 + 128)
      seen.insert(trim(line.substr(9)));
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
