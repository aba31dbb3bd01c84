// Internal pieces of composition: ELF dynamic sections, the loader's search for DT_NEEDED,
// the application's source scan, contract lookup. The public API is tuner/analyze.h.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lpcl/diagnostics.h"
#include "tuner/analyze.h"

namespace syspilot::tuner::compose_detail {

// What the dynamic section and symbol table of one ELF object say.
struct ElfInfo {
  bool ok = false;
  std::string error;                  // why it could not be read
  std::string soname;
  std::vector<std::string> needed;    // DT_NEEDED in order
  std::vector<std::string> rpath;     // DT_RPATH entries, $ORIGIN not yet expanded
  std::vector<std::string> runpath;   // DT_RUNPATH entries
  std::set<std::string> imports;      // undefined dynamic symbols (functions and objects)
  std::set<std::string> exports;      // defined dynamic symbols (only when asked for)
  // Only when asked for (the application): what a library linked into the executable itself
  // leaves behind. Defined global symbols of .symtab and .dynsym (none when stripped), and the
  // NUL-terminated strings of its read-only data shaped like environment names (A-Z, 0-9, _,
  // 3-64 characters, starting with a letter): a stripped static zstd still holds "ZSTD_NBTHREADS".
  std::set<std::string> defined;
  std::set<std::string> env_strings;
};
ElfInfo read_elf(const std::string& path, bool want_exports, bool want_embedded = false);

// The loader's view: LD_LIBRARY_PATH, ld.so.cache (from `ldconfig -p` or /etc/ld.so.cache),
// default directories. One Loader per composition caches what it reads.
class Loader {
 public:
  explicit Loader(const std::map<std::string, std::string>& env);
  // Resolves every DT_NEEDED of the application transitively, in breadth-first load order.
  std::vector<Library> resolve(const std::string& binary, const ElfInfo& app, Diagnostics& diags);
  // Where `soname` would be found for an object in `origin_dir` with the given paths.
  std::string find(const std::string& soname, const std::vector<std::string>& rpath,
                   const std::vector<std::string>& runpath, const std::string& origin_dir, std::string& found_by);
  const std::map<std::string, std::string>& cache() const { return cache_; }

 private:
  std::vector<std::string> ld_library_path_;
  std::map<std::string, std::string> cache_;  // soname -> path, x86-64 entries
};

// "openblas-pthread" for /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0, else the
// real file's name without the directory ("libgomp.so.1.0.0").
std::string variant_of(const std::string& real_path);

// Libraries nobody tunes (the C runtime, the loader, the C++ and Fortran runtimes): no contract
// is looked for or synthesized for them.
bool is_base_library(const std::string& soname);

// Shell-style glob with * and ? (binds patterns).
bool glob_match(const std::string& pattern, const std::string& text);

// The parallel constructs and thread starts the source scan knows (tuner/rules/regions.json).
struct RegionRule {
  std::string kind;      // pragma | call | method | thread_decl
  std::string match;     // "omp parallel" | "tbb::parallel_for" | ".run" | "std::thread"
  std::string region;    // omp_parallel | tbb_parallel | thread
  std::string runtime;   // binds glob of the runtime that opens it: "libgomp*|libomp*" or "app-threads"
  int start_arg = -1;    // call: which argument is the start routine (pthread_create: 2); -1 any lambda
};
std::vector<RegionRule> load_region_rules(const std::string& rules_dir, Diagnostics& diags);

// A parallel region or thread start found in the source. Its tag ("omp_parallel@main.c:12")
// is what CallSite::regions lists.
struct Region {
  std::string tag;
  std::string kind;     // omp_parallel | tbb_parallel | thread
  std::string runtime;  // glob of the runtime's soname, or "app-threads"
  std::string file;
  int line = 0;
  std::string function;                // where it is opened
  std::vector<std::string> enclosing;  // regions this region itself runs in
};

// Source scan result: call sites of known symbols with the regions they run in.
struct SourceScan {
  std::vector<CallSite> calls;   // library calls (library = owner of the symbol)
  std::vector<Region> regions;
  size_t files = 0;
};
// `symbol_owner` maps a symbol to the library that defines it; `owner_globs` maps symbol
// globs (contract `binds symbol`) to libraries for symbols the binaries did not resolve.
SourceScan scan_source(const std::string& root, const std::vector<RegionRule>& rules,
                       const std::map<std::string, std::string>& symbol_owner,
                       const std::vector<std::pair<std::string, std::string>>& owner_globs, Diagnostics& diags);

std::string rules_dir_or_default(const std::string& dir);

// The interpreter the kernel runs for a script: `#!/bin/sh -e` gives /bin/sh, `#!/usr/bin/env
// bash` bash as found on PATH (the run's, else ours). "" when `path` does not start with #!;
// `why` then, or when the interpreter is not found, says why.
std::string interpreter_of(const std::string& path, const std::map<std::string, std::string>& env, std::string& why);

// A tool that starts processes and the options that say how many run at once
// (tuner/rules/launchers.json): {"tools": "xargs", "options": ["-P", "--max-procs"]}. tools
// "*": any command.
struct Launcher {
  std::string tools;                 // glob alternatives against a command's base name
  std::vector<std::string> options;
};
std::vector<Launcher> load_launchers(const std::string& rules_dir, Diagnostics& diags);

// Process counts a command exposes: a launcher's option whose value is a placeholder
// ({NAME}, {NAME:-D}) or a variable ($NAME, ${NAME}, ${NAME:-D}), in the arguments (an argument
// holding spaces, `sh -c '...'`, is read as script text) or in `scripts` (path -> text). A
// literal value (`xargs -P 2`) is not a control: `fixed` gets "script.sh:3: xargs -P 2".
std::vector<ProcessControl> find_process_controls(const std::vector<std::string>& args,
                                                  const std::vector<std::pair<std::string, std::string>>& scripts,
                                                  const std::vector<Launcher>& launchers,
                                                  std::vector<std::string>* fixed = nullptr);

}  // namespace syspilot::tuner::compose_detail
