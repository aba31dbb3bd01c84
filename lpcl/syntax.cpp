// Shared pieces of the LPCL surface syntax: precedence table, keyword spellings, small text checks.
#include "lpcl/syntax.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include "lpcl/ast.h"

namespace syspilot::lpcl {

int precedence(std::string_view op) {
  if (op == "??") return 1;
  if (op == "||") return 2;
  if (op == "&&") return 3;
  if (op == "==" || op == "!=") return 4;
  if (op == "<" || op == "<=" || op == ">" || op == ">=") return 5;
  if (op == "+" || op == "-") return 6;
  if (op == "*" || op == "/" || op == "%") return 7;
  return 0;
}

const char* to_string(Origin o) {
  switch (o) {
    case Origin::Extracted: return "extracted";
    case Origin::Llm: return "llm";
    case Origin::Manual: return "manual";
    case Origin::Unspecified: return "";
  }
  return "";
}

const char* to_string(ReadAt r) {
  switch (r) {
    case ReadAt::Init: return "init";
    case ReadAt::Call: return "call";
    case ReadAt::Region: return "region";
    case ReadAt::Unspecified: return "";
  }
  return "";
}

const char* to_string(Type::Kind k) {
  switch (k) {
    case Type::Kind::Int: return "int";
    case Type::Kind::Float: return "float";
    case Type::Kind::Bool: return "bool";
    case Type::Kind::String: return "string";
    case Type::Kind::Size: return "size";
    case Type::Kind::Duration: return "duration";
    case Type::Kind::Enum: return "enum";
  }
  return "int";
}

const char* to_string(ControlKind::Kind k) {
  switch (k) {
    case ControlKind::Kind::Env: return "env";
    case ControlKind::Kind::Api: return "api";
    case ControlKind::Kind::Option: return "option";
  }
  return "env";
}

const char* to_string(Expr::Kind k) {
  switch (k) {
    case Expr::Kind::Int: return "int";
    case Expr::Kind::Float: return "float";
    case Expr::Kind::Size: return "size";
    case Expr::Kind::Duration: return "duration";
    case Expr::Kind::String: return "string";
    case Expr::Kind::Bool: return "bool";
    case Expr::Kind::Name: return "name";
    case Expr::Kind::Unary: return "unary";
    case Expr::Kind::Binary: return "binary";
    case Expr::Kind::Call: return "call";
  }
  return "int";
}

bool is_statement_keyword(std::string_view w) {
  for (const char* k : {"origin", "doc", "binds", "control", "demand", "assume", "behavior", "provides", "signal"})
    if (w == k) return true;
  return false;
}

size_t edit_distance(std::string_view a, std::string_view b, size_t cap) {
  if (a.size() > b.size() + cap || b.size() > a.size() + cap) return cap + 1;
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    size_t best = cur[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      best = std::min(best, cur[j]);
    }
    if (best > cap) return cap + 1;
    std::swap(prev, cur);
  }
  return std::min(prev[b.size()], cap + 1);
}

static bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

static bool positive_line(std::string_view s) {
  return all_digits(s) && s.size() <= 9 && std::stol(std::string(s)) >= 1;
}

bool is_symbol_ref(std::string_view ref) {
  // "libgomp.so.1#GOMP_parallel": a shared object has no lines; its dynamic symbols are what
  // it shows. The symbol is a C identifier, possibly versioned (sym@@GOMP_4.0) or mangled.
  size_t hash = ref.rfind('#');
  if (hash == std::string_view::npos || hash == 0 || hash + 1 == ref.size()) return false;
  std::string_view sym = ref.substr(hash + 1);
  if (!(std::isalpha(static_cast<unsigned char>(sym[0])) || sym[0] == '_')) return false;
  for (char ch : sym)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '@')) return false;
  return true;
}

bool is_valid_ref(std::string_view ref) {
  if (is_symbol_ref(ref)) return true;
  // The path may itself hold ':' (rare); the line part is after the last ':' that is
  // followed by digits only, or "L:C" / "L-M" at the end.
  size_t colon = ref.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view tail = ref.substr(colon + 1);
  std::string_view head = ref.substr(0, colon);
  if (size_t dash = tail.find('-'); dash != std::string_view::npos) {
    std::string_view a = tail.substr(0, dash), b = tail.substr(dash + 1);
    if (!positive_line(a) || !positive_line(b) || std::stol(std::string(b)) < std::stol(std::string(a))) return false;
    return true;
  }
  if (!positive_line(tail)) return false;
  // "path:line:col": accept when head itself ends in ":LINE".
  size_t colon2 = head.rfind(':');
  if (colon2 != std::string_view::npos && positive_line(head.substr(colon2 + 1))) return colon2 > 0;
  return !head.empty();
}

std::string normalize_params(const std::string& raw) {
  std::string out;
  bool space = false;
  for (char ch : raw) {
    if (ch == ' ' || ch == '\t' || ch == '\r') {
      space = !out.empty();
      continue;
    }
    if (space && ch != ',' && ch != ')') out += ' ';
    space = false;
    out += ch;
  }
  return out;
}

std::string format_double(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace syspilot::lpcl
