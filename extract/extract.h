// Public API of the extractors: one parallel walk over a library's source tree, headers,
// docs and shared objects, producing Facts (extract/facts.h) with provenance.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
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

struct ExtractOptions {
  std::vector<std::string> paths;         // directories or single files (sources, docs, .so)
  std::string library;                    // empty: guessed from the first path's folder name
  std::vector<std::string> include_dirs;  // extra -I for libclang on public headers
  unsigned threads = 0;                   // 0: hardware concurrency
  bool progress = false;                  // progress lines on stderr for large trees
  size_t max_file_bytes = 256u << 20;     // larger files are skipped with a diagnostic
  bool api_controls = true;               // libclang pass over public headers (the slowest part)
  ExtractStats* stats = nullptr;          // filled when not null
};

// Never throws for bad input: unreadable or odd files become diagnostics inside the Facts.
Facts extract(const ExtractOptions& options);

// Single-artifact entry points, used by extract() and useful on their own.
BinaryFacts scan_binary(const std::string& path, Diagnostics& diags);  // ELF shared object

// Names that look like knobs (FOO_BAR, upper case with an underscore) in a prose sentence.
std::vector<std::string> knob_names_in(const std::string& sentence);

}  // namespace syspilot::extract
