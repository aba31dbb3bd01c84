// Facts about a library, as the extractors report them: what its artifacts say, each with
// provenance. The schema is documented in docs/facts.md; synthesis grounds contracts in it.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "lpcl/diagnostics.h"

namespace syspilot::extract {

// Where the code or text that states a fact is built into: library | tool | test | example |
// bench | build. From the build files where they list the library's sources, from paths
// otherwise (tests/, tools/, examples/, bench*/, cmake/ ...). Readers of facts that carry
// no scope (older documents) take them as library facts.

// An environment variable read in code: getenv, secure_getenv, os.environ, or a wrapper.
struct EnvRead {
  std::string name;           // OPENBLAS_NUM_THREADS
  std::string file;           // path relative to the scanned root
  int line = 0;
  std::string function;       // enclosing function, empty at file scope
  std::string type;           // int | float | bool | string | unknown (from atoi/strtol/strcmp use...)
  std::string default_value;  // fallback visible in code, empty if none
  std::string via;            // getenv | secure_getenv | os.environ | <wrapper name> | <macro name>
  std::string language;       // c | cpp | python
  std::string scope = "library";
};

// A public API declaration that controls resources.
struct ApiControl {
  std::string name;           // openblas_set_num_threads
  std::string signature;      // void openblas_set_num_threads(int num_threads)
  std::string category;       // threads | affinity | allocator | device | workers | spin | limit | setting
  std::string file;
  int line = 0;
  std::string doc;            // doc comment text, trimmed
  std::string scope = "library";
};

// Threading and resource behaviour seen in code.
struct ThreadingFact {
  std::string kind;      // thread_create | omp_parallel | fork | affinity | spin_wait | gpu_call | pool_init
  std::string detail;    // callee or pragma text: pthread_create, sched_yield loop, cudaMalloc, ...
  std::string file;
  int line = 0;
  std::string function;  // enclosing function
  bool init_time = false;  // reached from library initialisation (constructor, *_init, pool start)
  std::string scope = "library";
};

// A knob named in documentation, with the sentence that names it.
struct DocMention {
  std::string name;
  std::string sentence;
  std::string file;
  int line = 0;
  std::string format;  // markdown | rst | man | texinfo | html | text
  std::string scope = "library";
};

// What a shared object without source shows.
struct BinaryFacts {
  std::string path;
  std::string soname;
  std::vector<std::string> needed;        // DT_NEEDED
  std::vector<std::string> imports;       // resource-relevant undefined dynamic symbols
  std::vector<std::string> exports;       // resource-relevant defined dynamic symbols (e.g. *_set_num_threads)
  std::vector<std::string> knob_strings;  // candidate knob names in read-only strings
};

struct Facts {
  std::string library;  // --lib NAME, or guessed from the root folder
  std::vector<std::string> roots;
  std::vector<EnvRead> env_vars;
  std::vector<ApiControl> api_controls;
  std::vector<ThreadingFact> threading;
  std::vector<DocMention> doc_mentions;
  std::vector<BinaryFacts> binaries;
  Diagnostics diagnostics;  // skipped files, parse trouble: never fatal
  size_t files_scanned = 0;
  size_t bytes_scanned = 0;
};

nlohmann::json to_json(const Facts& f);
Facts facts_from_json(const nlohmann::json& j);  // throws std::runtime_error on a malformed document

}  // namespace syspilot::extract
