// Public API of the extractors: one parallel walk over a library's source tree, headers,
// docs and shared objects, producing Facts (extract/facts.h) with provenance.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "extract/facts.h"

namespace syspilot::extract {

// Where the time went, for `syspilot extract --stats`.
struct ExtractStats {
  double walk_scan_s = 0;  // listing plus the parallel per-file scanning
  double resolve_s = 0;    // cross-file wrapper analysis
  double api_s = 0;        // libclang over public headers
  unsigned threads = 0;
  size_t files_listed = 0;
};

// Bumped whenever the same tree may yield different facts (new patterns, scopes): what caches
// facts or skips unchanged inputs keys on it with the source.
constexpr int kExtractorRevision = 10;

struct ExtractOptions {
  std::vector<std::string> paths;         // directories or single files (sources, docs, .so)
  std::string library;                    // empty: guessed from the first path's folder name
  std::vector<std::string> include_dirs;  // extra -I for libclang on public headers
  unsigned threads = 0;                   // 0: hardware concurrency
  bool progress = false;                  // progress lines on stderr for large trees
  size_t max_file_bytes = 256u << 20;     // larger files are skipped with a diagnostic
  bool api_controls = true;               // libclang pass over public headers (the slowest part)
  // The libclang pass runs in a child process bounded in memory (MiB above what the caller
  // already maps) and in wall time: clang reads whatever a header includes.
  size_t api_max_mb = 2048;
  unsigned api_timeout_s = 120;
  // Facts kept, by scope (facts.h): "library" (what a contract may claim), "all", or a comma
  // list such as "library,tool". Every file is still analysed: wrappers defined in tests or
  // tables in tools are followed either way. An unknown scope throws std::invalid_argument.
  std::string scope = "library";
  ExtractStats* stats = nullptr;          // filled when not null (not with `isolate`)
  // The whole extraction in a child process, bounded like the libclang pass: a parser that
  // crashes on a hostile file, or a tree that exhausts memory or time, ends the child and
  // leaves an `extract-failed` error in empty facts; the caller (the service) goes on.
  bool isolate = false;
  size_t isolate_max_mb = 4096;
  unsigned isolate_timeout_s = 1800;
};

// Never throws for bad input: unreadable or odd files become diagnostics inside the Facts.
// Throws std::invalid_argument for an unknown options.scope (see scopes()).
Facts extract(const ExtractOptions& options);

// The scopes a --scope value selects: "all", or a comma list of library, tool, test,
// example, bench, build. Throws std::invalid_argument naming the bad word and the good ones.
std::vector<std::string> scopes(const std::string& spec);

// Drops the facts whose scope is not in `keep` (a facts file written with --scope all, read
// back by synth, which may only ground a contract in library facts).
void keep_scopes(Facts& facts, const std::vector<std::string>& keep);

// Single-artifact entry points, used by extract() and useful on their own.
BinaryFacts scan_binary(const std::string& path, Diagnostics& diags);  // ELF shared object

// The kind of parallel region a dynamic symbol begins ("omp_parallel" for GOMP_parallel or
// __kmpc_fork_call, "tbb_arena" for TBB's arena execute), "" for any other symbol. A library
// that imports one runs its work in that runtime's regions; one that exports one is the runtime.
std::string parallel_region_entry(std::string_view symbol);

// Names that look like knobs (FOO_BAR, upper case with an underscore) in a prose sentence.
std::vector<std::string> knob_names_in(const std::string& sentence);

}  // namespace syspilot::extract
