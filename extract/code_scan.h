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
  // Field: one field of every row of a table, e.g. table[i].name or s.name in a loop over the
  // table; text is the table, arg the field (empty: the row itself, names[i] over a table of
  // strings). Each row is a read, cited at the row.
  // Member: a field of something that is not a table (block->vars[i].name): text is the field.
  enum Kind : uint8_t { Lit, Param, Ident, Stringize, Apply, Field, Member, Unknown };
  Piece(Kind k = Unknown, std::string t = {}, int p = -1, bool concat = false)
      : kind(k), text(std::move(t)), param(p), in_concat(concat) {}
  Kind kind = Unknown;
  std::string text;  // Lit: the characters; Ident: the identifier; Unknown/Stringize: raw text
  int param = -1;    // Param / Stringize: index into the enclosing definition's parameters
  bool in_concat = false;  // Ident adjacent to string literals: a string macro (may be empty)
  std::string arg;         // Apply: the raw argument text; Field: the field name
  // Apply of a name-building macro, e.g. LIB_ENV(env) with #define LIB_ENV(s) "LIB_" s:
  // each argument's name expression and raw text, expanded through the macro's body.
  std::vector<std::vector<Piece>> args;
  std::vector<std::string> arg_texts;
};
using NameExpr = std::vector<Piece>;

// The name a braced list of strings walked by a range-for gets as a table of its function:
// FUNCTION::{}@OFFSET (its byte offset: two lists on one line are two tables).
inline constexpr const char* kInlineList = "{}@";
inline bool is_inline_list(std::string_view table) { return table.find("::{}@") != std::string_view::npos; }

// Apply pieces that change the case of their one argument: Python's name.upper(), name.lower().
inline constexpr const char* kUpper = "str.upper";
inline constexpr const char* kLower = "str.lower";
// Whether `e` is one such case change, name.upper() or name.lower().
inline bool is_case_change(const NameExpr& e) {
  return e.size() == 1 && e[0].kind == Piece::Apply && (e[0].text == kUpper || e[0].text == kLower);
}

struct Arg {
  NameExpr expr;
  std::string text;  // source text, trimmed
};

struct Call {
  std::string callee;        // getenv, readenv_atoi, os.environ.get, os.environ[] ...
  bool member = false;       // called through a struct field: p->get(x), s.get(x), (*p->get)(x)
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
  NameExpr name_body;       // macros whose body only builds a name ("LIB_" s, #x): that name
  bool uses_environ = false;  // names the process environment itself: environ, __environ, _environ
  std::vector<std::string> assigned_fields;  // x.f = ..., p->f = ...: the fields it writes
  // Visible to the calls of its own file only: a macro, a static or inline function, or one in an
  // anonymous namespace, defined in a source file (.c, .cpp, ...), not in a header.
  bool file_local = false;
  // A C or C++ function outside any class, by an unqualified name: a call through a member
  // (obj.read(x), p->read(x)) never calls it.
  bool free_function = false;
  // What a function returns where every return is a name (a string, a string constant, a row
  // of a table of strings) or none (NULL, nullptr, 0): env_name_for(kind), with each row or
  // literal one name a caller's getenv(env_name_for(k)) may read. Empty otherwise.
  std::vector<NameExpr> returns;
  // C++ methods: the class they belong to, from the class body around them or from C::m.
  std::string owner;
  // A constructor's parameters it keeps in members (`: name_(name)`, `name_ = name;`), which
  // its class's methods may read later: {member, parameter index}.
  std::vector<std::pair<std::string, int>> stores;
  // A method whose every return is one member (`return name_;`): that member, and the case
  // change the method applies to it in place first (a toupper loop, std::transform with
  // ::tolower): kUpper, kLower or empty.
  std::string returns_member;
  std::string member_case;
};

// A string constant (#define ENV "X", const char* X = "X"), an object-like macro's raw text
// (#define LIB_VAR_NAME INTEL_LIBITTNOTIFY64), or a table's strings (rows of an array).
struct Constant {
  std::string name;
  NameExpr value;
  std::string raw;  // raw replacement text of an object-like macro
};

// A function stored in a pointer or a struct field, which indirect calls then reach:
// fp = f; p->get = &f; {.get = f}; T (*fp)(const char*) = f; and {1, f} when the struct's
// field order is known (field empty, position and record set).
struct Binding {
  std::string target;    // the pointer variable or the field name
  bool field = false;
  std::string record;    // positional initializer: the struct type; target is then empty
  int position = -1;
  std::string function;  // what is stored: a function, or another pointer
};

// A struct's fields in order, to name the items of positional initializers. Typedef names
// are recorded as their own Record with `alias` set to the struct they name.
struct Record {
  std::string name;
  std::vector<std::string> fields;
  std::string alias;
};

// A file-scope array of records: each row's items, by designator or by position.
struct Table {
  struct Item {
    std::string field;  // .field = value; empty when positional
    NameExpr value;
  };
  struct Row {
    int line = 0;
    std::vector<Item> items;
  };
  std::string name;
  std::string type;  // element type (struct tag or typedef name), may be empty
  std::vector<Row> rows;
};

struct FileCode {
  std::string file;  // relative to the scanned root
  Lang lang = Lang::C;
  std::vector<Definition> defs;
  std::vector<Call> calls;
  std::vector<Constant> constants;
  std::vector<Binding> bindings;
  std::vector<Record> records;
  std::vector<Table> tables;
  std::vector<ThreadingFact> threading;
};

// Parses `text` and records what the env and threading analyses need. Thread-safe.
FileCode scan_code(const std::string& rel, std::string_view text, Lang lang, Diagnostics& diags);

// C and C++ text with the groups of `#if 0` (or `(0)`, `false`) blanked, newlines kept so that
// lines stay where they were: no configuration compiles them. Their `#else` branch is kept.
std::string blank_never_compiled(std::string_view text);

// C and C++ text where a conditional that opens inside parentheses (an #ifdef between a call's
// arguments) keeps its first branch only, its directives and other branches blanked: the
// grammars parse directives between statements, not inside expressions.
std::string first_branch_inside_expressions(std::string_view text);

// Wrapper analysis to a fixed point over all files, then resolution of every reader call
// to concrete variable names. Unresolvable names become notes in `diags`.
std::vector<EnvRead> resolve_env(const std::vector<FileCode>& files, Diagnostics& diags);

// Queries as data: the text of extract/queries/<name>.scm, embedded at build time.
std::string_view query_text(std::string_view name);

}  // namespace syspilot::extract::code
