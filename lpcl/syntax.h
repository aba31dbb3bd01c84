// Shared pieces of the LPCL surface syntax used by the parser, formatter and checker:
// operator precedence, keyword spellings, limits. Internal to the lpcl library.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "lpcl/ast.h"

namespace syspilot::lpcl {

inline constexpr int kMaxExprDepth = 256;            // deeper expressions are rejected
inline constexpr size_t kMaxFileBytes = 64u << 20;   // parse_file refuses larger files
inline constexpr size_t kMaxErrors = 100;            // the parser stops after this many

// Binary operator precedence, higher binds tighter; 0 when `op` is not binary.
int precedence(std::string_view op);
inline bool right_assoc(std::string_view op) { return op == "??"; }
inline constexpr int kUnaryPrecedence = 8;

const char* to_string(Origin o);        // "extracted", "llm", "manual", ""
const char* to_string(ReadAt r);        // "init", "call", "region", ""
const char* to_string(Type::Kind k);    // "int", ...
const char* to_string(ControlKind::Kind k);  // "env", "api", "option"
const char* to_string(Expr::Kind k);    // "int", "float", ..., "call"

// The statement keywords, for recovery and "did you mean" hints.
bool is_statement_keyword(std::string_view word);

// Edit distance, capped: returns cap+1 when the distance exceeds cap.
size_t edit_distance(std::string_view a, std::string_view b, size_t cap = 3);

// A reference: PATH ':' LINE [('-' LINE) | (':' COL)], LINE >= 1, or a shared object's
// dynamic symbol, SHARED_OBJECT '#' SYMBOL (libgomp.so.1#GOMP_parallel).
bool is_valid_ref(std::string_view ref);
bool is_symbol_ref(std::string_view ref);

// api(...) parameter text with whitespace runs collapsed ("int  n" -> "int n", "a , b" -> "a, b").
std::string normalize_params(const std::string& raw);

// Shortest text that reads back as the same double ("0.9", "1", "1e-07").
std::string format_double(double v);

}  // namespace syspilot::lpcl
