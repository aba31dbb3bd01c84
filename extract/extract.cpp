// extract(): one parallel walk over the input paths feeding the code, doc and binary
// scanners, then the cross-file env-reader analysis and the libclang pass over headers.
#include "extract/extract.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "extract/code_scan.h"
#include "extract/scanners.h"
#include "extract/scope.h"
#include "extract/walk.h"
#include "lpcl/lpcl.h"

namespace syspilot::extract {
namespace {

// Source files larger than this are generated (tables, amalgamations): not parsed.
constexpr uint64_t kMaxCodeBytes = 8u << 20;
constexpr uint64_t kMaxDocBytes = 16u << 20;
// Build files read for scopes: at most this many, each clipped to this size.
constexpr size_t kMaxBuildFiles = 4096;
constexpr uint64_t kMaxBuildFileBytes = 1u << 20;

const char* const kScopes[] = {"library", "tool", "test", "example", "bench", "build"};

struct FileResult {
  code::FileCode code;
  bool has_code = false;
  std::vector<DocMention> docs;
  std::vector<BinaryFacts> binaries;
  Diagnostics diags;
  uint64_t bytes = 0;
  bool scanned = false;
};

bool valid_utf8(std::string_view s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) { ++i; continue; }
    int len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > n) return false;
    for (int k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    i += len;
  }
  return true;
}

void scan_one(const walk::Entry& e, const ExtractOptions& opt, FileResult& r) {
  using walk::Kind;
  if (e.kind == Kind::Skip) return;
  if (e.size > opt.max_file_bytes) {
    r.diags.warning({e.rel, 0, 0}, "skipped: " + std::to_string(e.size >> 20) + " MB is over the " +
                                       std::to_string(opt.max_file_bytes >> 20) + " MB limit",
                    "skip-too-large", "raise --max-file-mb if this file matters");
    return;
  }
  uint64_t limit = e.kind == Kind::Elf ? 0 : walk::is_code(e.kind) ? kMaxCodeBytes : kMaxDocBytes;
  if (e.kind != Kind::Elf && e.size > limit) {
    r.diags.warning({e.rel, 0, 0}, "skipped: " + std::to_string(e.size >> 20) +
                                       " MB is too large for hand-written source or docs (generated?)",
                    "skip-generated");
    return;
  }
  std::string head, err;
  if (!walk::read_entry(e, e.kind == Kind::Elf ? 4096 : limit, head, err)) {
    r.diags.warning({e.rel, 0, 0}, "cannot read: " + err, "skip-unreadable", "check its permissions");
    return;
  }
  std::string why;
  Kind kind = walk::refine_kind(e.kind, e.rel, head.data(), std::min<size_t>(head.size(), 8192), why);
  if (kind == Kind::Skip) {
    if (!why.empty()) r.diags.note({e.rel, 0, 0}, "skipped: " + why, "skip-not-source");
    return;
  }
  if (kind == Kind::Elf) {
    if (e.rel.find(".so") == std::string::npos) {
      // objects, executables and ELF data under source names are not what we describe
      r.diags.note({e.rel, 0, 0}, "skipped: an ELF file that is not a shared object", "skip-not-source");
      return;
    }
    r.scanned = true;
    r.bytes = e.size;
    r.binaries.push_back(scan_binary(e.path, r.diags));
    return;
  }
  r.scanned = true;
  r.bytes = e.size;
  if (!valid_utf8(head))
    r.diags.note({e.rel, 0, 0}, "invalid UTF-8; scanned as bytes", "invalid-utf8");
  if (walk::is_code(kind)) {
    code::Lang lang = kind == Kind::C ? code::Lang::C : kind == Kind::Cpp ? code::Lang::Cpp : code::Lang::Python;
    r.code = code::scan_code(e.rel, head, lang, r.diags);
    r.has_code = true;
  } else if (kind == Kind::ManGz) {
    std::string text;
    if (!docs::gunzip(head, text, err)) {
      r.diags.warning({e.rel, 0, 0}, "cannot decompress: " + err, "skip-bad-gzip");
      return;
    }
    r.docs = docs::scan_doc(e.rel, text, "man");
  } else {
    r.docs = docs::scan_doc(e.rel, head, walk::doc_format(kind));
  }
}

std::string guess_library(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  if (fs::is_regular_file(p)) {
    name = p.stem().string();
    if (name.rfind("lib", 0) == 0) name = name.substr(3);
    auto dot = name.find('.');
    if (dot != std::string::npos) name = name.substr(0, dot);
  }
  auto dash = name.find('-');
  if (dash != std::string::npos && dash + 1 < name.size() && std::isdigit(static_cast<unsigned char>(name[dash + 1])))
    name = name.substr(0, dash);
  return name;
}

// What the tree's build files say about its files (read once: the header pass asks which
// headers are installed, the scopes which sources make the library).
scope::BuildMap read_build_files(const std::vector<walk::Entry>& entries) {
  scope::BuildMap build;
  std::unordered_map<std::string, const walk::Entry*> by_rel;
  for (auto& e : entries) by_rel.emplace(e.rel, &e);
  build.read_include = [&](const std::string& rel, std::string& text) {
    auto it = by_rel.find(rel);
    std::string err;
    return it != by_rel.end() && walk::read_entry(*it->second, kMaxBuildFileBytes, text, err);
  };
  size_t read = 0;
  for (auto& e : entries) {
    if (!scope::is_build_file(e.rel) || read >= kMaxBuildFiles) continue;
    // A Makefile.in beside its Makefile.am is automake's output: the .am says the same in
    // the author's words, where the .in adds generated lists (am_libx_la_OBJECTS) that would
    // read as libraries of their own.
    if (std::filesystem::path(e.rel).filename() == "Makefile.in" &&
        by_rel.count((std::filesystem::path(e.rel).parent_path() / "Makefile.am").generic_string()))
      continue;
    std::string text, err;
    if (!walk::read_entry(e, kMaxBuildFileBytes, text, err)) continue;  // the scan reported it if it mattered
    ++read;
    build.add(e.rel, text);
  }
  build.read_include = nullptr;  // it refers to this function's locals
  return build;
}

// Scope of every fact, by the file it cites; then only the selected scopes are kept.
void assign_scopes(Facts& facts, const scope::BuildMap& build, const std::vector<code::FileCode>& code_files,
                   const std::vector<std::string>& keep) {
  std::unordered_set<std::string> programs;  // files that define main()
  for (auto& f : code_files)
    if (f.lang != code::Lang::Python)
      for (auto& d : f.defs)
        if (!d.macro && d.name == "main") programs.insert(f.file);
  std::unordered_map<std::string, std::string> cache;
  auto scope_of = [&](const std::string& file) -> const std::string& {
    auto it = cache.find(file);
    if (it == cache.end()) it = cache.emplace(file, build.scope_of(file, programs.count(file) > 0)).first;
    return it->second;
  };
  auto apply = [&](auto& facts_of_kind) {
    for (auto& x : facts_of_kind) x.scope = scope_of(x.file);
  };
  apply(facts.env_vars);
  apply(facts.api_controls);
  apply(facts.threading);
  apply(facts.doc_mentions);
  keep_scopes(facts, keep);
}


// Runs `work` in a child process and brings its facts back as JSON: the child's address space
// is capped at `max_mb` above what the caller maps, its wall time at `timeout_s`, and no core
// is dumped. A child that crashes, runs out of memory or time, or answers garbage costs its
// facts, never the caller: nullopt, and `why` says what happened.
std::optional<Facts> run_bounded(const std::function<Facts()>& work, size_t max_mb, unsigned timeout_s, std::string& why) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    why = std::string("could not start: ") + std::strerror(errno);
    return std::nullopt;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    why = std::string("could not start: ") + std::strerror(errno);
    return std::nullopt;
  }
  if (pid == 0) {
    ::close(fds[0]);
    struct rlimit core {0, 0};
    ::setrlimit(RLIMIT_CORE, &core);
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    rlim_t cap = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) +
                 (static_cast<rlim_t>(max_mb) << 20);
    struct rlimit as {cap, cap};
    ::setrlimit(RLIMIT_AS, &as);
    int rc = 0;
    try {
      Facts part = work();
      std::string text = to_json(part).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      for (size_t off = 0; off < text.size();) {
        ssize_t w = ::write(fds[1], text.data() + off, text.size() - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += static_cast<size_t>(w);
      }
    } catch (...) {
      rc = 3;
    }
    ::_exit(rc);
  }
  ::close(fds[1]);
  constexpr size_t kMaxReply = 256u << 20;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string reply;
  bool timed_out = false, too_long = false;
  char buf[65536];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd p {fds[0], POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    ssize_t r = ::read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    reply.append(buf, static_cast<size_t>(r));
    if (reply.size() > kMaxReply) {
      too_long = true;
      break;
    }
  }
  ::close(fds[0]);
  if (timed_out || too_long) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    why = "stopped after " + std::to_string(timeout_s) + " s";
    return std::nullopt;
  }
  if (too_long) {
    why = "stopped: its result is over 256 MB";
    return std::nullopt;
  }
  if (WIFSIGNALED(status)) {
    why = "ended by signal " + std::to_string(WTERMSIG(status)) + " (over " + std::to_string(max_mb) +
          " MB of memory, or a file its parsers cannot take?)";
    return std::nullopt;
  }
  try {
    return facts_from_json(nlohmann::json::parse(reply));
  } catch (const std::exception&) {
    why = "ended without a result (exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ", over " +
          std::to_string(max_mb) + " MB of memory?)";
    return std::nullopt;
  }
}

// The libclang pass, in a child process. Clang opens whatever a header names, inside the
// tree or not: `#include "/dev/zero"` was read without end (2 GB in a minute, in the
// service's own process), a FIFO blocked the open for ever. The child's address space is
// capped at `api_max_mb` above the caller's, its wall time at `api_timeout_s`, and its
// controls and diagnostics come back as facts JSON; a child that fails costs the API
// controls, with a warning, never the caller.
std::vector<ApiControl> scan_headers_bounded(const std::vector<std::pair<std::string, std::string>>& headers,
                                             const std::vector<std::string>& knobs,
                                             const std::vector<std::pair<std::string, std::string>>& tree_headers,
                                             const ExtractOptions& opt, Diagnostics& diags) {
  if (headers.empty()) return {};
  std::string why;
  auto part = run_bounded(
      [&] {
        Facts f;
        f.api_controls = api::scan_headers(headers, opt.include_dirs, knobs, f.diagnostics, tree_headers);
        return f;
      },
      opt.api_max_mb, opt.api_timeout_s, why);
  if (!part) {
    diags.warning({headers.front().second, 0, 0}, "libclang header pass " + why + "; API controls not listed",
                  "clang-budget", "a public header may include an endless or blocking file (a device, a FIFO); "
                  "pass --no-api for this tree");
    return {};
  }
  diags.append(part->diagnostics);
  return std::move(part->api_controls);
}

}  // namespace

void keep_scopes(Facts& facts, const std::vector<std::string>& keep) {
  auto selected = [&](const std::string& s) { return std::find(keep.begin(), keep.end(), s) != keep.end(); };
  auto apply = [&](auto& facts_of_kind) {
    facts_of_kind.erase(std::remove_if(facts_of_kind.begin(), facts_of_kind.end(),
                                       [&](const auto& x) { return !selected(x.scope); }),
                        facts_of_kind.end());
  };
  apply(facts.env_vars);
  apply(facts.api_controls);
  apply(facts.threading);
  apply(facts.doc_mentions);
}

std::vector<std::string> scopes(const std::string& spec) {
  std::vector<std::string> out;
  if (spec == "all") return {std::begin(kScopes), std::end(kScopes)};
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos) comma = spec.size();
    std::string word = spec.substr(start, comma - start);
    if (std::find(std::begin(kScopes), std::end(kScopes), word) == std::end(kScopes))
      throw std::invalid_argument("unknown scope '" + word +
                                  "': use all, or a comma list of library, tool, test, example, bench, build");
    out.push_back(word);
    start = comma + 1;
  }
  return out;
}

Facts extract(const ExtractOptions& opt) {
  const std::vector<std::string> keep = scopes(opt.scope);
  if (opt.isolate) {
    // the whole extraction in a child: a parser that crashes on some file ends the child only
    ExtractOptions inner = opt;
    inner.isolate = false;
    inner.stats = nullptr;
    std::string why;
    if (auto facts = run_bounded([&] { return extract(inner); }, opt.isolate_max_mb, opt.isolate_timeout_s, why))
      return std::move(*facts);
    Facts failed;
    failed.roots = opt.paths;
    failed.library = opt.library;
    failed.diagnostics.error({opt.paths.empty() ? std::string() : opt.paths.front(), 0, 0},
                             "extraction " + why + "; no facts", "extract-failed",
                             "run `syspilot extract` on the tree to see which file it stops on");
    return failed;
  }
  Facts facts;
  facts.roots = opt.paths;
  facts.library = !opt.library.empty() ? opt.library : opt.paths.empty() ? "" : guess_library(opt.paths[0]);
  if (opt.paths.empty()) {
    facts.diagnostics.error({}, "no path to extract from", "walk-missing", "pass a source folder or file");
    return facts;
  }
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  auto entries = walk::list_files(opt.paths, facts.diagnostics);
  std::vector<FileResult> results(entries.size());
  unsigned threads = opt.threads ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, std::max<size_t>(1, entries.size()));
  std::atomic<size_t> next{0}, done{0};
  std::atomic<uint64_t> bytes{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < entries.size();) {
      try {
        scan_one(entries[i], opt, results[i]);
      } catch (const std::exception& ex) {
        results[i].diags.error({entries[i].rel, 0, 0}, std::string("scanner failed: ") + ex.what(), "scan-failed");
      }
      bytes += results[i].bytes;
      ++done;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  if (opt.progress) {
    // the calling thread reports progress while the workers scan
    std::thread reporter([&] {
      auto start = std::chrono::steady_clock::now();
      while (done.load() < entries.size()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "\rextract: %zu/%zu files, %.1f MB, %.1f s", done.load(), entries.size(),
                     bytes.load() / 1e6, s);
      }
      std::fprintf(stderr, "\n");
    });
    worker();
    for (auto& t : pool) t.join();
    reporter.join();
  } else {
    worker();
    for (auto& t : pool) t.join();
  }

  auto t1 = clock::now();
  std::vector<code::FileCode> code_files;
  for (size_t i = 0; i < results.size(); ++i) {
    auto& r = results[i];
    facts.diagnostics.append(r.diags);
    if (r.scanned) {
      ++facts.files_scanned;
      facts.bytes_scanned += r.bytes;
    }
    if (r.has_code) {
      facts.threading.insert(facts.threading.end(), r.code.threading.begin(), r.code.threading.end());
      code_files.push_back(std::move(r.code));
    }
    facts.doc_mentions.insert(facts.doc_mentions.end(), r.docs.begin(), r.docs.end());
    facts.binaries.insert(facts.binaries.end(), r.binaries.begin(), r.binaries.end());
  }
  facts.env_vars = code::resolve_env(code_files, facts.diagnostics);
  auto t2 = clock::now();
  const scope::BuildMap build = read_build_files(entries);
  if (opt.api_controls) {
    // public: where the build installs it, or where its path says so (include/, api/, ...);
    // the tree's other headers serve to resolve the includes of public ones
    std::vector<std::pair<std::string, std::string>> public_headers, tree_headers;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (!results[i].has_code) continue;
      const std::string& rel = entries[i].rel;
      const bool installed = build.installs_header(rel);
      // where the build installs headers from this folder, one it leaves out is private (a
      // configure template is installed as what it generates, which the build may not say)
      const bool templ = rel.ends_with(".in") || rel.ends_with(".var") || rel.ends_with(".cmake");
      if (api::is_public_header(rel, installed) && (installed || templ || !build.installs_beside(rel)))
        public_headers.emplace_back(entries[i].path, rel);
      else if (api::is_header(rel))
        tree_headers.emplace_back(entries[i].path, rel);
    }
    std::vector<std::string> knobs;
    for (auto& e : facts.env_vars) knobs.push_back(e.name);
    facts.api_controls = scan_headers_bounded(public_headers, knobs, tree_headers, opt, facts.diagnostics);
    // A query reads a setting and takes none (omp_get_num_threads, openblas_getaffinity,
    // hwloc_get_cpubind), a report prints one (omp_display_affinity), and the making or
    // unmaking of a value (kmp_create_affinity_mask) sets nothing: no control, whatever words
    // its name shares with one.
    std::erase_if(facts.api_controls, [](const ApiControl& a) {
      return lpcl::is_query_function(a.name, a.signature, a.doc) || lpcl::is_object_lifecycle(a.name, a.signature);
    });
  }
  assign_scopes(facts, build, code_files, keep);
  if (opt.stats) {
    auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    opt.stats->walk_scan_s = secs(t0, t1);
    opt.stats->resolve_s = secs(t1, t2);
    opt.stats->api_s = secs(t2, clock::now());
    opt.stats->threads = threads;
    opt.stats->files_listed = entries.size();
  }
  return facts;
}

}  // namespace syspilot::extract
