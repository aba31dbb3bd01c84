// Internal: per-file scanning of C, C++ and Python with tree-sitter into call records,
// definitions and constants, and the cross-file wrapper analysis that turns them into
// environment reads. Not part of the public API (see extract/extract.h).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "extract/facts.h"

namespace syspilot::extract::code {

enum class Lang { C, Cpp, Python };
const char* lang_name(Lang l);

// A name expression: how an argument's text is built, piece by piece.
struct Piece {
  // Apply: a function-like macro applied to raw text, e.g. ITT_TO_STR(LIB_VAR_NAME); it is a
  // name when the macro stringizes its argument (decided across files).
  enum Kind : uint8_t { Lit, Param, Ident, Stringize, Apply, Unknown };
  Kind kind = Unknown;
  std::string text;  // Lit: the characters; Ident: the identifier; Unknown/Stringize: raw text
  int param = -1;    // Param / Stringize: index into the enclosing definition's parameters
  bool in_concat = false;  // Ident adjacent to string literals: a string macro (may be empty)
  std::string arg;         // Apply: the raw argument text
};
using NameExpr = std::vector<Piece>;

struct Arg {
  NameExpr expr;
  std::string text;  // source text, trimmed
};

struct Call {
  std::string callee;        // getenv, readenv_atoi, os.environ.get, os.environ[] ...
  int line = 0;
  int def = -1;              // enclosing Definition in the same file, -1 at file scope
  std::vector<Arg> args;
  std::string type_hint;     // from the context: atoi(...) => int
  std::string default_hint;  // from the context: getenv(X) ? ... : 4
};

// A function or function-like macro: a candidate env-reader wrapper.
struct Definition {
  std::string name;
  bool macro = false;
  int line = 0;
  std::vector<std::string> params;
  std::string return_type;  // int | float | bool | string | unknown
  bool init_time = false;   // constructor attribute or an init-like name
  std::string body;         // macros: the replacement text, clipped
};

// A string constant (#define ENV "X", const char* X = "X"), an object-like macro's raw text
// (#define LIB_VAR_NAME INTEL_LIBITTNOTIFY64), or a table's strings (rows of an array).
struct Constant {
  std::string name;
  NameExpr value;
  std::string raw;  // raw replacement text of an object-like macro
};

struct FileCode {
  std::string file;  // relative to the scanned root
  Lang lang = Lang::C;
  std::vector<Definition> defs;
  std::vector<Call> calls;
  std::vector<Constant> constants;
  std::vector<ThreadingFact> threading;
};

// Parses `text` and records what the env and threading analyses need. Thread-safe.
FileCode scan_code(const std::string& rel, std::string_view text, Lang lang, Diagnostics& diags);

// Wrapper analysis to a fixed point over all files, then resolution of every reader call
// to concrete variable names. Unresolvable names become notes in `diags`.
std::vector<EnvRead> resolve_env(const std::vector<FileCode>& files, Diagnostics& diags);

// Queries as data: the text of extract/queries/<name>.scm, embedded at build time.
std::string_view query_text(std::string_view name);

}  // namespace syspilot::extract::code
