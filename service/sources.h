// Where a library's sources come from (a directory, a git tag, a Debian source package, a
// tarball) and how they are validated and fetched into a local directory. Every input is
// checked before any command runs: paths stay inside the configured roots, git and apt
// arguments cannot be read as options, only allow-listed URL schemes are fetched, and only
// from hosts the outbound policy allows (service/outbound.h).
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "lpcl/diagnostics.h"
#include "service/outbound.h"

namespace syspilot::service {

struct SourceSpec {
  enum class Kind { Dir, Git, DebianSource, Tarball };
  Kind kind = Kind::Dir;
  std::string path;     // Dir: a directory; Tarball: a local file (or empty with url)
  std::string url;      // Git: repository URL or local path; Tarball: http(s) URL
  std::string ref;      // Git: tag (or branch) to check out
  std::string package;  // DebianSource: source package name
  std::string version;  // DebianSource: exact Debian version ("0.3.21+ds-4")
  std::vector<std::string> suites;  // DebianSource: suites of the private apt list (default bookworm, trixie, sid)
  // DebianSource: other Debian revisions of the same upstream version, tried in this order
  // when the mirror does not serve `version` (the archive drops superseded revisions while
  // the sources lists of another suite still name them).
  std::vector<std::string> fallback_versions;
};

const char* to_string(SourceSpec::Kind k);

// Where sources may come from and where fetched ones go.
struct SourcePolicy {
  std::vector<std::string> roots;  // Dir/Tarball paths and local git repositories must lie inside one
  std::string work_dir;            // fetched sources (a cache keyed by content) and apt state
  std::vector<std::string> url_schemes = {"https", "http", "git", "ssh", "file"};
  double fetch_timeout_s = 900;
  // Hosts that git, tarball downloads and the LLM client may reach (checked right before
  // each connection, redirects included). The default refuses internal addresses.
  OutboundPolicy outbound;
  // Caps on what a tarball, a git tree or a Debian source package may unpack to, checked on
  // a listing before anything is written and again on the unpacked tree: an archive bomb is
  // refused (archive-too-many-entries, archive-too-large, archive-ratio), never unpacked.
  uint64_t archive_max_entries = 200000;     // files, folders and links
  uint64_t archive_max_bytes = 4ull << 30;   // sum of the file sizes once unpacked
  double archive_max_ratio = 200;            // unpacked bytes per byte of the archive file...
  uint64_t archive_ratio_floor = 1ull << 20; // ...checked once the unpacked size is over this
};

// Parses {"kind": "dir"|"git"|"debian-source"|"tarball", ...}. Reports what is wrong with the
// field name in the location ("source.url").
bool parse_source(const nlohmann::json& j, SourceSpec& out, Diagnostics& diags);
nlohmann::json to_json(const SourceSpec& s);

// Checks without running anything: roots (realpath, so no `..` and no symlink leads out),
// option injection (no value may start with '-'), allowed characters, URL scheme.
bool validate_source(const SourceSpec& s, const SourcePolicy& policy, Diagnostics& diags);

// A realpath inside one of the roots, or empty with an error. A relative path is taken
// inside the roots (the first that holds it), not under the working directory.
std::string confine_path(const std::string& path, const std::vector<std::string>& roots,
                         const std::string& what, Diagnostics& diags);

struct FetchedSource {
  std::string dir;      // local directory holding the sources
  std::string digest;   // content address of the input: same digest, same sources
  std::string describe; // "git https://... tag v1.2 (tree 4b825dc...)"
  std::string resolved; // DebianSource: the Debian version fetched (`version` or a fallback)
};

using Cancel = std::function<bool()>;
using Progress = std::function<void(const std::string&)>;

// Validates, then fetches (or finds in the cache under policy.work_dir). Returns false with
// diagnostics on failure; never runs a command for an input that failed validation. Archives
// are listed first and refused when over a cap or holding a hard link that leaves the tree
// (archive-link-escape) or a device, FIFO or socket (archive-special-file); after unpacking,
// symbolic links whose real target lies outside the tree are removed (archive-link-dropped).
bool fetch_source(const SourceSpec& s, const SourcePolicy& policy, FetchedSource& out,
                  Diagnostics& diags, const Cancel& cancel = {}, const Progress& progress = {});

// GET over http or https into `to` (written to a temporary file, renamed when complete).
// Redirects (at most 5, http and https only) are followed by hand, each hop checked
// against `outbound` before connecting.
bool http_download(const std::string& url, const std::string& to, double timeout_s, const Cancel& cancel,
                   Diagnostics& diags, const OutboundPolicy& outbound = OutboundPolicy{});

// Release listings for the regeneration feeds.
// Tags of a git repository (`git ls-remote --tags`), peeled, sorted as versions.
bool list_git_tags(const std::string& url, const SourcePolicy& policy, std::vector<std::string>& tags,
                   Diagnostics& diags);
// Versions of a Debian source package across the suites of the private apt configuration.
bool list_debian_versions(const std::string& package, const std::vector<std::string>& suites,
                          const SourcePolicy& policy, std::vector<std::string>& versions,
                          Diagnostics& diags);

// Digest of a directory tree: SHA-256 over sorted relative paths, modes and contents
// (symlinks by their target text, never followed).
std::string digest_tree(const std::string& dir);

}  // namespace syspilot::service
