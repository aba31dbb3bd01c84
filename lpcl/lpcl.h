// Public interface of the LPCL library: parse, check, format, JSON, semantic diff.
#pragma once
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "lpcl/ast.h"
#include "lpcl/diagnostics.h"

namespace syspilot::lpcl {

// Parses LPCL text. Recovers from errors: reports every error it can in one pass
// (into `diags`) and returns what it could build. `file` names the input in diagnostics.
Document parse(std::string_view text, const std::string& file, Diagnostics& diags);

// Semantic checks (unknown resources, undeclared controls, fallback cycles, defaults
// outside domains, type mismatches, duplicates, impossible ranges, unknown machine facts).
// Returns true when no error was added.
// What a contract's version may be: one segment of every reference to it (LIB VERSION@REV on
// the command line, /v1/contracts/LIB/VERSION in the service), so no '@', '/', '%', space or
// control character; at most 128 characters.
inline constexpr const char* kVersionPattern = "^[A-Za-z0-9][A-Za-z0-9._+~:-]{0,127}$";

bool check(const Document& doc, Diagnostics& diags);
bool check(const Contract& c, Diagnostics& diags);

// Canonical text. Idempotent: format(parse(format(x))) == format(x). Keeps comments.
std::string format(const Document& doc);
std::string format(const Contract& c);

// Lossless JSON (see docs/lpcl.md): from_json(to_json(d)) formats identically to d.
nlohmann::json to_json(const Document& doc);
nlohmann::json to_json(const Contract& c);
// Accepts a document object or a single contract object. Errors go to diags.
Document from_json(const nlohmann::json& j, const std::string& file, Diagnostics& diags);

// Expression text in canonical form ("OPENBLAS_NUM_THREADS ?? ncpus").
std::string format(const Expr& e);

// The resource vocabulary, machine facts and predicates the checker accepts
// (loaded from lpcl/vocabulary.json, embedded at build time).
const std::vector<std::string>& resources();
const std::vector<std::string>& machine_facts();
const std::vector<std::string>& predicates();
const std::vector<std::string>& behaviors();  // known behaviors (others are warned about)
const std::vector<std::string>& metrics();    // known signal metrics (others are warned about)

// A query: a function whose name asks for a value (omp_get_num_threads, openblas_getaffinity,
// cudaDeviceGetLimit, omp_is_initial_device) instead of taking one. A call to it changes no
// setting, so a query is never a control that sets a resource: the checker warns when one claims
// to, the offline drafter never drafts one, and the tuner never searches one.
bool is_query_name(std::string_view function_name);
// A declared function that reads a setting rather than taking one, so that it is no control
// (the extractor's API controls leave it out; no control is drafted from it): by its name
// (is_query_name: omp_get_num_threads, openblas_getaffinity), by its signature (no parameter and
// a returned value: fftw_planner_nthreads(), task_arena::max_concurrency() const) or by the
// first word of its documentation ("Returns the maximal parallelism level ..."), unless its
// name says it acts (set, init, enable, pause, bind, ...: fftw_init_threads() returns a status,
// not a setting); and a call whose name says it reports (display, print, capture, dump, show:
// omp_display_affinity).
bool is_query_function(const std::string& name, const std::string& signature, const std::string& doc);
// A call that makes, unmakes or copies a value of the library's own type and touches nothing
// else, so that it is no control, whatever words its name shares with one: every parameter is
// of a type whose words are the name's (kmp_create_affinity_mask(kmp_affinity_mask_t *),
// omp_init_lock(omp_lock_t *), hwloc_topology_init(hwloc_topology_t *)) and the name has a verb
// of making or unmaking (create, destroy, init, free, copy, ...). A pool of threads, workers or
// an arena is no such value: ZSTD_freeThreadPool(ZSTD_threadPool *) stops threads.
bool is_object_lifecycle(const std::string& name, const std::string& signature);
// The lower-cased words of an identifier, split at non-alphanumerics and at lower-to-upper case
// changes: "omp_get_numThreads" gives omp, get, num, threads.
std::vector<std::string> identifier_words(std::string_view name);
// An `api` control named like a query.
bool is_query(const Control& c);

// The value of a literal: Int/Float as written (hex too), Size in bytes, Duration in
// seconds, Bool as 0/1; nullopt for strings, names and compound expressions.
std::optional<double> literal_value(const Expr& e);

// Evaluates an expression numerically. `lookup` gives the value of a name (a control's
// setting, a machine fact) or nullopt when it is unset; `a ?? b` takes b when a is unset.
// Comparisons and logic give 0/1. Returns nullopt when a needed name is unset, on division
// by zero, or for strings and unknown functions.
using NameLookup = std::function<std::optional<double>(const std::string& name)>;
std::optional<double> evaluate(const Expr& e, const NameLookup& lookup);

// One expression on its own ("OMP_NUM_THREADS * OPENBLAS_NUM_THREADS <= ncores"), parsed as in a
// contract: the one grammar for constraints, defaults and domains wherever they are evaluated.
// nullopt with diagnostics when the text is not exactly one expression.
std::optional<Expr> parse_expression(std::string_view text, const std::string& file, Diagnostics& diags);

// Semantic difference between two contracts (reordering/reformatting is no change).
struct Change {
  enum class Kind { Added, Removed, Changed };
  Kind kind = Kind::Changed;
  std::string entity;  // control | demand | assumption | behavior | signal | provides | binding | contract
  std::string name;    // control name, resource, predicate(args), ...
  std::string field;   // for Changed: type | domain | default | kind | fallback_for | read_at | sets | value | ...
  std::string before;  // canonical text, empty for Added
  std::string after;   // canonical text, empty for Removed
};
struct ContractDiff {
  std::vector<Change> changes;
  bool empty() const { return changes.empty(); }
};
ContractDiff diff(const Contract& before, const Contract& after);
// Whole files: contracts matched by name (a lone contract on each side is compared even when
// renamed); unmatched contracts are Added/Removed with entity "contract".
ContractDiff diff(const Document& before, const Document& after);
std::string to_text(const ContractDiff& d);  // one line per change: "+ control X: ...", "~ control X default: a -> b"
nlohmann::json to_json(const ContractDiff& d);

// Convenience: read a file (with size limits and encoding checks) and parse it.
Document parse_file(const std::string& path, Diagnostics& diags);

// Reads `in` to its end into `out`, but never more than `limit` bytes: false (and `out` cut)
// when there is more. Standard input, a FIFO or a device has no size to check beforehand.
bool read_bounded(std::istream& in, size_t limit, std::string& out);

}  // namespace syspilot::lpcl
