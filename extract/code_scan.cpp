// Per-file tree-sitter scanning of C, C++ and Python: calls with their arguments as name
// expressions, function and macro definitions, string constants, and threading facts.
// The queries that find these nodes are data (extract/queries/*.scm).
#include "extract/code_scan.h"

#include <tree_sitter/api.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <unordered_map>

extern "C" {
const TSLanguage* tree_sitter_c(void);
const TSLanguage* tree_sitter_cpp(void);
const TSLanguage* tree_sitter_python(void);
}

namespace syspilot::extract::code {

const char* lang_name(Lang l) {
  switch (l) {
    case Lang::C: return "c";
    case Lang::Cpp: return "cpp";
    case Lang::Python: return "python";
  }
  return "c";
}

namespace {

// A translation unit's own file (.c, .cpp, ...), as opposed to a header other files include.
bool is_source_file(const std::string& rel) {
  auto dot = rel.rfind('.');
  if (dot == std::string::npos || rel.find('/', dot) != std::string::npos) return false;
  std::string ext = rel.substr(dot + 1);
  for (auto& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == "c" || ext == "cc" || ext == "cpp" || ext == "cxx" || ext == "c++" || ext == "cp" || ext == "m" ||
         ext == "mm" || ext == "cu";
}

// Capture roles, from the capture names used in the .scm files.
enum Role : uint8_t {
  kNone, kCall, kCallCallee, kCallArgs, kFunction, kFunctionDeclarator, kFunctionBody,
  kFunctionName, kFunctionParams, kMacro, kMacroName, kMacroParams, kConst, kConstName,
  kConstValue, kVar, kVarDeclarator, kVarName, kVarValue, kPragma, kPragmaDirective,
  kPragmaArg, kLoop, kLoopCond, kLoopBody, kQualified, kSubscript, kSubscriptValue,
  kSubscriptKey, kCompare, kTable, kTableName, kTableValue, kBind, kBindTarget, kBindValue,
  kRecord, kRecordBody, kTypedef, kTypedefType, kRange, kRangeVar, kRangeTable, kConstruct, kConstructType, kConstructArgs, kRoleCount
};
static_assert(kRoleCount <= 48, "collect() keeps captures in fixed arrays of 48");

Role role_of(std::string_view name) {
  static const std::unordered_map<std::string_view, Role> roles = {
      {"call", kCall}, {"call.callee", kCallCallee}, {"call.args", kCallArgs},
      {"function", kFunction}, {"function.declarator", kFunctionDeclarator},
      {"function.body", kFunctionBody}, {"function.name", kFunctionName},
      {"function.params", kFunctionParams}, {"macro", kMacro}, {"macro.name", kMacroName},
      {"macro.params", kMacroParams}, {"const", kConst}, {"const.name", kConstName},
      {"const.value", kConstValue}, {"var", kVar}, {"var.declarator", kVarDeclarator},
      {"var.name", kVarName}, {"var.value", kVarValue}, {"pragma", kPragma},
      {"pragma.directive", kPragmaDirective}, {"pragma.arg", kPragmaArg}, {"loop", kLoop},
      {"loop.cond", kLoopCond}, {"loop.body", kLoopBody}, {"qualified", kQualified},
      {"subscript", kSubscript}, {"subscript.value", kSubscriptValue},
      {"subscript.key", kSubscriptKey}, {"compare", kCompare}, {"table", kTable},
      {"table.declarator", kTableName}, {"table.value", kTableValue}, {"bind", kBind},
      {"bind.target", kBindTarget}, {"bind.value", kBindValue}, {"record", kRecord},
      {"record.body", kRecordBody}, {"typedef", kTypedef}, {"typedef.type", kTypedefType},
      {"range", kRange}, {"range.var", kRangeVar}, {"range.table", kRangeTable},
      {"construct", kConstruct}, {"construct.type", kConstructType}, {"construct.args", kConstructArgs}};
  auto it = roles.find(name);
  return it == roles.end() ? kNone : it->second;
}

struct CompiledQuery {
  const TSLanguage* language = nullptr;
  TSQuery* query = nullptr;
  std::vector<Role> roles;  // by capture id
  std::string error;
};

CompiledQuery compile(const TSLanguage* lang, const std::string& text) {
  CompiledQuery q;
  q.language = lang;
  uint32_t offset = 0;
  TSQueryError err = TSQueryErrorNone;
  q.query = ts_query_new(lang, text.data(), static_cast<uint32_t>(text.size()), &offset, &err);
  if (!q.query) {
    q.error = "query error " + std::to_string(static_cast<int>(err)) + " at byte " + std::to_string(offset);
    return q;
  }
  uint32_t n = ts_query_capture_count(q.query);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t len = 0;
    const char* name = ts_query_capture_name_for_id(q.query, i, &len);
    q.roles.push_back(role_of(std::string_view(name, len)));
  }
  return q;
}

const CompiledQuery& query_for(Lang lang) {
  static std::once_flag once;
  static std::array<CompiledQuery, 3> queries;
  std::call_once(once, [] {
    std::string c(query_text("c"));
    queries[0] = compile(tree_sitter_c(), c);
    queries[1] = compile(tree_sitter_cpp(), c + "\n" + std::string(query_text("cpp")));
    queries[2] = compile(tree_sitter_python(), std::string(query_text("python")));
  });
  return queries[static_cast<int>(lang)];
}

// One parser per thread and language; parsers are not thread-safe, queries are.
TSParser* parser_for(Lang lang) {
  struct Parsers {
    std::array<TSParser*, 3> p{};
    ~Parsers() { for (auto* x : p) if (x) ts_parser_delete(x); }
  };
  thread_local Parsers parsers;
  auto& slot = parsers.p[static_cast<int>(lang)];
  if (!slot) {
    slot = ts_parser_new();
    ts_parser_set_language(slot, query_for(lang).language);
    ts_parser_set_timeout_micros(slot, 30'000'000);  // pathological input must not hang a scan
  }
  return slot;
}

// Children of one syntax node beyond which the query does not walk it (see FileScanner::run).
constexpr uint32_t kMaxQueriedChildren = 100000;

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

std::string clip(std::string_view s, size_t n = 160) {
  std::string t = trim(s);
  if (t.size() > n) t = t.substr(0, n) + "...";
  return t;
}

// Conversions that reveal a variable's type when applied to an env value.
const char* type_of_conversion(std::string_view fn) {
  static const std::unordered_map<std::string_view, const char*> conv = {
      {"atoi", "int"}, {"atol", "int"}, {"atoll", "int"}, {"strtol", "int"}, {"strtoul", "int"},
      {"strtoll", "int"}, {"strtoull", "int"}, {"strtoimax", "int"}, {"strtoumax", "int"},
      {"stoi", "int"}, {"stol", "int"}, {"stoul", "int"}, {"stoll", "int"}, {"int", "int"},
      {"atof", "float"}, {"strtod", "float"}, {"strtof", "float"}, {"stod", "float"}, {"float", "float"},
      {"bool", "bool"}, {"strcmp", "string"}, {"strncmp", "string"}, {"strcasecmp", "string"},
      {"strncasecmp", "string"}, {"strstr", "string"}, {"strchr", "string"}, {"strdup", "string"},
      {"strlen", "string"}, {"str", "string"}, {"string", "string"}};
  auto it = conv.find(fn);
  return it == conv.end() ? nullptr : it->second;
}

std::string last_component(std::string_view s) {
  size_t p = s.rfind("::");
  if (p != std::string_view::npos) s = s.substr(p + 2);
  p = s.find_last_of(".>");
  if (p != std::string_view::npos) s = s.substr(p + 1);
  return trim(s);
}

std::string return_type_class(std::string_view type, bool pointer) {
  std::string t(type);
  if (pointer) return t.find("char") != std::string::npos ? "string" : "unknown";
  auto has = [&](const char* w) { return t.find(w) != std::string::npos; };
  if (has("bool") || has("_Bool")) return "bool";
  if (has("double") || has("float")) return "float";
  if (has("int") || has("long") || has("short") || has("size_t") || has("unsigned") || has("blasint") ||
      has("dim_t") || has("arch_t"))
    return "int";
  if (has("string")) return "string";
  return "unknown";
}

bool init_like(std::string_view name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* w : {"init", "start", "setup", "constructor", "create_pool", "server", "ctor"})
    if (n.find(w) != std::string::npos) return true;
  return false;
}

// --- a small C preprocessor-token reader for macro bodies, which tree-sitter leaves as text.
struct Token {
  enum Kind : uint8_t { Ident, String, Number, Punct } kind;
  std::string text;
  int line = 0;  // offset in lines from the start of the macro body
};

std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> out;
  int line = 0;
  size_t i = 0, n = s.size();
  while (i < n) {
    char c = s[i];
    if (c == '\n') { ++line; ++i; continue; }
    if (c == '\\' && i + 1 < n && (s[i + 1] == '\n' || s[i + 1] == '\r')) { ++i; continue; }
    if (std::isspace(static_cast<unsigned char>(c))) { ++i; continue; }
    if (c == '/' && i + 1 < n && s[i + 1] == '/') { while (i < n && s[i] != '\n') ++i; continue; }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      for (size_t k = i; k < std::min(e == std::string_view::npos ? n : e, n); ++k) line += s[k] == '\n';
      i = e == std::string_view::npos ? n : e + 2;
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < n && s[j] != c && s[j] != '\n') j += (s[j] == '\\') ? 2 : 1;
      std::string body(s.substr(i + 1, std::min(j, n) - i - 1));
      if (c == '"') out.push_back({Token::String, body, line});
      else out.push_back({Token::Number, body, line});
      i = std::min(j + 1, n);
      continue;
    }
    if (is_ident_char(c)) {
      size_t j = i;
      while (j < n && is_ident_char(s[j])) ++j;
      std::string word(s.substr(i, j - i));
      // string prefixes: L"x", u8"x"
      if (j < n && s[j] == '"' && (word == "L" || word == "u8" || word == "u" || word == "U")) { i = j; continue; }
      out.push_back({std::isdigit(static_cast<unsigned char>(c)) ? Token::Number : Token::Ident, word, line});
      i = j;
      continue;
    }
    if (c == '#' && i + 1 < n && s[i + 1] == '#') { out.push_back({Token::Punct, "##", line}); i += 2; continue; }
    if (c == ':' && i + 1 < n && s[i + 1] == ':') { out.push_back({Token::Punct, "::", line}); i += 2; continue; }
    out.push_back({Token::Punct, std::string(1, c), line});
    ++i;
  }
  return out;
}

int index_of(const std::vector<std::string>& params, std::string_view name) {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i] == name) return static_cast<int>(i);
  return -1;
}

bool is_keyword(std::string_view w) {
  static const char* kw[] = {"if", "while", "for", "switch", "return", "sizeof", "defined", "do",
                             "__attribute__", "__typeof__", "typeof", "alignof", "_Alignof", "case"};
  for (auto* k : kw) if (w == k) return true;
  return false;
}

// The text of tokens [a, b), strings quoted again.
std::string join_tokens(const std::vector<Token>& t, size_t a, size_t b) {
  std::string s;
  for (size_t i = a; i < b && i < t.size() && s.size() < 120; ++i) {
    if (!s.empty() && t[i].kind != Token::Punct && t[i - 1].kind != Token::Punct) s += ' ';
    s += t[i].kind == Token::String ? "\"" + t[i].text + "\"" : t[i].text;
  }
  return s;
}

// Name expression of tokens [a, b) of a macro body with parameters `params`.
NameExpr eval_tokens(const std::vector<Token>& t, size_t a, size_t b, const std::vector<std::string>& params,
                     int depth = 0) {
  NameExpr out;
  b = std::min(b, t.size());
  for (size_t i = a; i < b; ++i) {
    const Token& k = t[i];
    if (k.kind == Token::Punct && k.text == "#" && i + 1 < b && t[i + 1].kind == Token::Ident) {
      int p = index_of(params, t[i + 1].text);
      out.push_back({Piece::Stringize, t[i + 1].text, p});
      ++i;
      continue;
    }
    if (k.kind == Token::String) { out.push_back({Piece::Lit, k.text}); continue; }
    if (k.kind == Token::Punct && k.text == "(") {
      // a cast such as (LPCTSTR) or (char *) before an operand: skip it
      size_t j = i + 1;
      bool cast = j < b && t[j].kind == Token::Ident;
      while (j < b && (t[j].kind == Token::Ident || t[j].text == "*")) ++j;
      if (cast && j < b && t[j].text == ")" && j + 1 < b &&
          (t[j + 1].kind != Token::Punct || t[j + 1].text == "(") && index_of(params, t[i + 1].text) < 0) {
        i = j;
      }
      continue;
    }
    if (k.kind == Token::Punct && k.text == ")") continue;
    if (k.kind == Token::Ident) {
      // L##s, u8##s: a wide or Unicode literal of the string parameter s, the same name
      if ((k.text == "L" || k.text == "u" || k.text == "U" || k.text == "u8") && i + 2 < b && t[i + 1].text == "##" &&
          t[i + 2].kind == Token::Ident && index_of(params, t[i + 2].text) >= 0) {
        ++i;
        continue;
      }
      if (i + 1 < b && t[i + 1].text == "##") { out.push_back({Piece::Unknown, k.text}); continue; }
      int p = index_of(params, k.text);
      if (p >= 0) { out.push_back({Piece::Param, k.text, p}); continue; }
      if (i + 1 < b && t[i + 1].text == "(" && !is_keyword(k.text) && depth < 4) {
        // NAME(args): a macro that may build a name from its arguments, expanded across files
        Piece apply{Piece::Apply, k.text};
        auto push = [&](size_t from, size_t to) {
          apply.args.push_back(eval_tokens(t, from, to, params, depth + 1));
          apply.arg_texts.push_back(join_tokens(t, from, to));
        };
        int level = 0;
        size_t start = i + 2, j = i + 1;
        for (; j < b; ++j) {
          if (t[j].text == "(") ++level;
          else if (t[j].text == ")") { if (--level == 0) break; }
          else if (t[j].text == "," && level == 1 && apply.args.size() < 16) { push(start, j); start = j + 1; }
        }
        if (j > start || !apply.args.empty()) push(start, std::min(j, b));
        if (apply.arg_texts.size() == 1) apply.arg = apply.arg_texts[0];
        out.push_back(std::move(apply));
        i = j;
        continue;
      }
      bool concat = (i > a && t[i - 1].kind == Token::String) || (i + 1 < b && t[i + 1].kind == Token::String);
      Piece piece{Piece::Ident, k.text};
      piece.in_concat = concat;
      out.push_back(piece);
      continue;
    }
    out.push_back({Piece::Unknown, k.text});
  }
  return out;
}


struct Range {
  uint32_t start = 0, end = 0;
};

// Bounds on what one table or record contributes: hostile sources cannot grow them further.
constexpr uint32_t kMaxTableRows = 4096;
constexpr size_t kMaxRowItems = 64;

// Brackets open at once beyond which a file is not parsed. tree-sitter 0.20's error recovery
// corrupts its heap on tens of thousands of unclosed brackets (20,000 of `f(x,` abort the
// process, 65,535 of `(`), so a source file can kill whatever extracts it; no real source
// nests a hundredth of this bound.
constexpr size_t kMaxNesting = 4096;

// The deepest nesting of (, [ and { in a source, outside string and character literals and
// comments (// and /* */; # in Python).
size_t max_nesting(std::string_view s, bool python) {
  size_t depth = 0, deepest = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"' || c == '\'') {
      for (++i; i < s.size() && s[i] != c && s[i] != '\n'; ++i)
        if (s[i] == '\\') ++i;
    } else if (python && c == '#') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (!python && c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (!python && c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 1;
    } else if (c == '(' || c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

class FileScanner {
 public:
  FileScanner(const std::string& rel, std::string_view src, Lang lang, Diagnostics& d)
      : src_(src), lang_(lang), diags_(d) {
    out_.file = rel;
    out_.lang = lang;
  }

  FileCode run() {
    const CompiledQuery& q = query_for(lang_);
    if (!q.query) {
      diags_.error({out_.file, 0, 0}, std::string("internal: tree-sitter query for ") + lang_name(lang_) +
                                          " does not compile: " + q.error, "query-error",
                   "check extract/queries/*.scm against the grammar version");
      return std::move(out_);
    }
    if (size_t deep = max_nesting(src_, lang_ == Lang::Python); deep > kMaxNesting) {
      diags_.warning({out_.file, 0, 0},
                     "brackets nested " + std::to_string(deep) + " deep (more than " + std::to_string(kMaxNesting) +
                         "); file not scanned",
                     "too-deep", "no real source nests this deep: a generated or hostile file");
      return std::move(out_);
    }
    TSParser* parser = parser_for(lang_);
    TSTree* tree = ts_parser_parse_string(parser, nullptr, src_.data(), static_cast<uint32_t>(src_.size()));
    if (!tree) {
      ts_parser_reset(parser);
      diags_.warning({out_.file, 0, 0}, "parse gave up after the time limit; file not scanned", "parse-timeout");
      return std::move(out_);
    }
    TSQueryCursor* cur = ts_query_cursor_new();
    TSQueryMatch m;
    // The query walk slows with the square of a node's width (an initializer of millions of
    // elements took minutes): nodes with more than kMaxQueriedChildren children are left out
    // of the query (the ranges around them are queried), said so; no table of that size
    // names variables.
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // byte ranges to query
    {
      std::vector<std::pair<uint32_t, uint32_t>> wide;
      TSTreeCursor walk = ts_tree_cursor_new(ts_tree_root_node(tree));
      for (bool more = true; more;) {
        TSNode n = ts_tree_cursor_current_node(&walk);
        bool is_wide = ts_node_child_count(n) > kMaxQueriedChildren;
        if (is_wide) wide.emplace_back(ts_node_start_byte(n), ts_node_end_byte(n));
        if (!is_wide && ts_tree_cursor_goto_first_child(&walk)) continue;
        while (!ts_tree_cursor_goto_next_sibling(&walk))
          if (!ts_tree_cursor_goto_parent(&walk)) {
            more = false;
            break;
          }
      }
      ts_tree_cursor_delete(&walk);
      uint32_t from = 0;
      for (auto& [a, b] : wide) {
        if (a > from) ranges.emplace_back(from, a);
        from = std::max(from, b);
      }
      ranges.emplace_back(from, static_cast<uint32_t>(src_.size()) + 1);
      if (!wide.empty())
        diags_.warning({out_.file, 0, 0},
                       std::to_string(wide.size()) + " syntax node(s) with more than " +
                           std::to_string(kMaxQueriedChildren) + " children (a huge initializer?) not scanned",
                       "too-wide");
    }
    for (auto& [a, b] : ranges) {
      ts_query_cursor_set_byte_range(cur, a, b);
      ts_query_cursor_exec(cur, q.query, ts_tree_root_node(tree));
      while (ts_query_cursor_next_match(cur, &m)) collect(q, m);
    }
    ts_query_cursor_delete(cur);
    build_definitions();
    build_buffer_writes();
    build_inline_lists();
    build_locals_and_constants();
    build_records_and_bindings();
    build_returned_names();
    build_members();
    for (auto& c : calls_) add_call(c);
    for (auto& s : subscripts_) add_subscript(s);
    for (auto& c : compares_) add_compare(c);
    for (auto& p : pragmas_) add_pragma(p);
    for (auto& l : loops_) add_loop(l);
    for (auto& n : qualified_) add_qualified(n);
    mark_pool_init();
    ts_tree_delete(tree);
    return std::move(out_);
  }

 private:
  struct CallNode { TSNode node, callee, args; };
  struct FuncNode { TSNode node, declarator, body, name, params; bool macro; };
  struct PairNode { TSNode node, a, b; };

  std::string_view text(TSNode n) const {
    uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
    if (s > src_.size() || e > src_.size() || e < s) return {};
    return src_.substr(s, e - s);
  }
  static int line(TSNode n) { return static_cast<int>(ts_node_start_point(n).row) + 1; }
  static bool is(TSNode n, const char* type) { return !ts_node_is_null(n) && std::strcmp(ts_node_type(n), type) == 0; }

  void collect(const CompiledQuery& q, const TSQueryMatch& m) {
    TSNode cap[48];
    bool have[48] = {};
    for (uint16_t i = 0; i < m.capture_count; ++i) {
      Role r = q.roles[m.captures[i].index];
      if (r < 48) { cap[r] = m.captures[i].node; have[r] = true; }
    }
    TSNode null{};
    auto get = [&](Role r) { return have[r] ? cap[r] : null; };
    if (have[kCall]) calls_.push_back({cap[kCall], get(kCallCallee), get(kCallArgs)});
    else if (have[kConstruct]) calls_.push_back({cap[kConstruct], get(kConstructType), get(kConstructArgs)});
    else if (have[kFunction]) funcs_.push_back({cap[kFunction], get(kFunctionDeclarator), get(kFunctionBody),
                                                get(kFunctionName), get(kFunctionParams), false});
    else if (have[kMacro]) funcs_.push_back({cap[kMacro], null, null, get(kMacroName), get(kMacroParams), true});
    else if (have[kConst]) consts_.push_back({cap[kConst], get(kConstName), get(kConstValue)});
    else if (have[kVar]) vars_.push_back({cap[kVar], have[kVarDeclarator] ? cap[kVarDeclarator] : get(kVarName), get(kVarValue)});
    else if (have[kPragma]) pragmas_.push_back({cap[kPragma], get(kPragmaDirective), get(kPragmaArg)});
    else if (have[kLoop]) loops_.push_back({cap[kLoop], get(kLoopCond), get(kLoopBody)});
    else if (have[kSubscript]) subscripts_.push_back({cap[kSubscript], get(kSubscriptValue), get(kSubscriptKey)});
    else if (have[kCompare]) compares_.push_back(cap[kCompare]);
    else if (have[kQualified]) qualified_.push_back(cap[kQualified]);
    else if (have[kTable]) tables_.push_back({cap[kTable], get(kTableName), get(kTableValue)});
    else if (have[kBind]) binds_.push_back({cap[kBind], get(kBindTarget), get(kBindValue)});
    else if (have[kRecord]) records_.push_back({cap[kRecord], get(kRecordBody), null});
    else if (have[kTypedef]) records_.push_back({cap[kTypedef], get(kTypedefType), null});
    else if (have[kRange]) ranges_.push_back({cap[kRange], get(kRangeVar), get(kRangeTable)});
  }

  // --- definitions
  static TSNode function_declarator(TSNode d) {
    for (int guard = 0; guard < 16 && !ts_node_is_null(d); ++guard) {
      if (is(d, "function_declarator")) return d;
      TSNode inner = ts_node_child_by_field_name(d, "declarator", 10);
      if (ts_node_is_null(inner)) inner = ts_node_named_child(d, 0);
      d = inner;
    }
    return TSNode{};
  }

  std::string declared_name(TSNode d) const {
    for (int guard = 0; guard < 16 && !ts_node_is_null(d); ++guard) {
      const char* t = ts_node_type(d);
      if (!std::strcmp(t, "identifier") || !std::strcmp(t, "field_identifier") ||
          !std::strcmp(t, "qualified_identifier") || !std::strcmp(t, "destructor_name") ||
          !std::strcmp(t, "operator_name") || !std::strcmp(t, "type_identifier"))
        return last_component(text(d));
      TSNode inner = ts_node_child_by_field_name(d, "declarator", 10);
      if (ts_node_is_null(inner)) {
        // reference_declarator, attributed declarators: the name is the last named child
        uint32_t n = ts_node_named_child_count(d);
        inner = n ? ts_node_named_child(d, n - 1) : TSNode{};
      }
      d = inner;
    }
    return {};
  }

  // The class of a qualified name: ns::C::m -> C, C<T>::m -> C; empty without a scope.
  static std::string scope_of(std::string_view q) {
    std::string s;
    int angle = 0;
    for (char c : q) {  // template arguments dropped
      if (c == '<') ++angle;
      else if (c == '>') angle = std::max(0, angle - 1);
      else if (angle == 0 && !std::isspace(static_cast<unsigned char>(c))) s += c;
    }
    size_t last = s.rfind("::");
    if (last == std::string::npos || last == 0) return {};
    size_t prev = s.rfind("::", last - 1);
    return s.substr(prev == std::string::npos ? 0 : prev + 2, last - (prev == std::string::npos ? 0 : prev + 2));
  }

  void build_definitions() {
    std::sort(funcs_.begin(), funcs_.end(),
              [](const FuncNode& a, const FuncNode& b) { return ts_node_start_byte(a.node) < ts_node_start_byte(b.node); });
    for (auto& f : funcs_) {
      Definition d;
      d.macro = f.macro;
      d.line = line(f.node);
      if (f.macro) {
        d.name = std::string(text(f.name));
        uint32_t n = ts_node_named_child_count(f.params);
        for (uint32_t i = 0; i < n; ++i) {
          TSNode p = ts_node_named_child(f.params, i);
          d.params.push_back(is(p, "identifier") ? std::string(text(p)) : std::string("__VA_ARGS__"));
        }
      } else if (lang_ == Lang::Python) {
        d.name = std::string(text(f.name));
        uint32_t n = ts_node_named_child_count(f.params);
        for (uint32_t i = 0; i < n; ++i) {
          TSNode p = ts_node_named_child(f.params, i);
          TSNode name = is(p, "identifier") ? p : ts_node_child_by_field_name(p, "name", 4);
          if (ts_node_is_null(name)) name = ts_node_named_child(p, 0);
          std::string pn(ts_node_is_null(name) ? "" : text(name));
          if (i == 0 && (pn == "self" || pn == "cls")) continue;
          d.params.push_back(pn);
        }
        d.return_type = "unknown";
      } else {
        bool lambda = is(f.declarator, "abstract_function_declarator");
        TSNode fd = lambda ? f.declarator : function_declarator(f.declarator);
        if (ts_node_is_null(fd)) continue;
        d.name = lambda ? std::string(text(f.name)) : declared_name(ts_node_child_by_field_name(fd, "declarator", 10));
        TSNode plist = ts_node_child_by_field_name(fd, "parameters", 10);
        uint32_t n = ts_node_is_null(plist) ? 0 : ts_node_named_child_count(plist);
        for (uint32_t i = 0; i < n; ++i) {
          TSNode p = ts_node_named_child(plist, i);
          if (is(p, "comment") || is(p, "variadic_parameter")) continue;
          TSNode decl = ts_node_child_by_field_name(p, "declarator", 10);
          d.params.push_back(ts_node_is_null(decl) ? "" : declared_name(decl));
        }
        if (n == 1 && d.params.size() == 1 && d.params[0].empty() &&
            text(ts_node_named_child(plist, 0)) == "void")
          d.params.clear();
        TSNode type = ts_node_child_by_field_name(f.node, "type", 4);
        bool pointer = is(f.declarator, "pointer_declarator");
        d.return_type = return_type_class(ts_node_is_null(type) ? "" : text(type), pointer);
        uint32_t hs = ts_node_start_byte(f.node), he = ts_node_start_byte(f.body);
        std::string_view head = he > hs ? src_.substr(hs, he - hs) : std::string_view{};
        d.init_time = head.find("constructor") != std::string_view::npos;
        d.uses_environ = names_environ(text(f.body));
      }
      if (d.name.empty()) continue;
      if (lang_ != Lang::Python) {
        bool source_file = is_source_file(out_.file);
        if (f.macro) {
          d.file_local = source_file;
        } else if (is(f.declarator, "abstract_function_declarator")) {
          d.file_local = d.free_function = true;  // a named lambda: a local variable of its scope
        } else {
          bool in_class = false, anonymous = false;
          for (TSNode up = ts_node_parent(f.node); !ts_node_is_null(up); up = ts_node_parent(up)) {
            if (is(up, "field_declaration_list") && !in_class) {
              TSNode cls = ts_node_parent(up);
              TSNode cname = ts_node_child_by_field_name(cls, "name", 4);
              if ((is(cls, "class_specifier") || is(cls, "struct_specifier")) && !ts_node_is_null(cname))
                d.owner = class_name(cname);
            }
            if (is(up, "field_declaration_list")) in_class = true;
            if (is(up, "namespace_definition") && ts_node_is_null(ts_node_child_by_field_name(up, "name", 4)))
              anonymous = true;
          }
          bool internal = anonymous;
          for (uint32_t i = 0; i < ts_node_named_child_count(f.node); ++i) {
            TSNode k = ts_node_named_child(f.node, i);
            if (is(k, "storage_class_specifier") && (text(k) == "static" || text(k).find("inline") != std::string_view::npos))
              internal = true;
          }
          d.file_local = source_file && internal && !in_class;
          TSNode fd = function_declarator(f.declarator);
          TSNode named = ts_node_is_null(fd) ? TSNode{} : ts_node_child_by_field_name(fd, "declarator", 10);
          d.free_function = !in_class && !ts_node_is_null(named) && is(named, "identifier");
          // C::m(...) outside the class body: C (a namespace's name names no class's constructor)
          if (!in_class && is(named, "qualified_identifier")) d.owner = scope_of(text(named));
        }
      }
      d.init_time = d.init_time || init_like(d.name);
      def_nodes_.push_back(f);
      def_ranges_.push_back({ts_node_start_byte(f.node), ts_node_end_byte(f.node)});
      out_.defs.push_back(std::move(d));
    }
    locals_.resize(out_.defs.size());
    local_ends_.resize(out_.defs.size());
    row_vars_.resize(out_.defs.size());
    range_rows_.resize(out_.defs.size());
  }

  // Functions that return names (Definition::returns): every return statement of the body,
  // nested lambdas aside, is a name or none. At most kMaxReturns returns are looked at.
  static constexpr size_t kMaxReturns = 32;
  void build_returned_names() {
    if (lang_ == Lang::Python) return;
    for (size_t di = 0; di < out_.defs.size(); ++di) {
      Definition& d = out_.defs[di];
      const FuncNode& f = def_nodes_[di];
      if (d.macro || ts_node_is_null(f.body) || d.return_type != "string") continue;
      std::vector<TSNode> todo{f.body}, rets;
      size_t visited = 0;
      bool too_many = false;
      while (!todo.empty() && !too_many) {
        TSNode n = todo.back();
        todo.pop_back();
        if (++visited > 20000) { too_many = true; break; }
        if (is(n, "lambda_expression")) continue;
        if (is(n, "return_statement")) {
          if (rets.size() >= kMaxReturns) too_many = true;
          rets.push_back(n);
          continue;
        }
        for (uint32_t i = ts_node_named_child_count(n); i-- > 0;) todo.push_back(ts_node_named_child(n, i));
      }
      if (too_many || rets.empty()) continue;
      std::vector<NameExpr> names;
      bool all = true;
      for (TSNode r : rets) {
        TSNode v = ts_node_named_child_count(r) ? ts_node_named_child(r, 0) : TSNode{};
        while (is(v, "parenthesized_expression") && ts_node_named_child_count(v) == 1) v = ts_node_named_child(v, 0);
        std::string_view vt = ts_node_is_null(v) ? std::string_view{} : trim(text(v));
        if (vt.empty() || vt == "NULL" || vt == "nullptr" || vt == "0") continue;  // no name
        NameExpr e;
        eval(v, static_cast<int>(di), e);
        bool name = !e.empty() && std::all_of(e.begin(), e.end(), [](const Piece& p) {
          return p.kind == Piece::Lit || p.kind == Piece::Ident || (p.kind == Piece::Field && p.param < 0);
        });
        if (!name) { all = false; break; }
        names.push_back(std::move(e));
      }
      if (all && !names.empty()) d.returns = std::move(names);
    }
  }

  // Names a class keeps for later (Definition::stores, returns_member): what a constructor
  // stores from its parameters, and what a method returns of its members, case changed or not.
  void build_members() {
    if (lang_ != Lang::Cpp) return;
    for (size_t di = 0; di < out_.defs.size(); ++di) {
      Definition& d = out_.defs[di];
      const FuncNode& f = def_nodes_[di];
      if (d.macro || d.owner.empty() || ts_node_is_null(f.body)) continue;
      // the member an expression names: name_, this->name_, name_.c_str()
      auto member_named = [&](TSNode v) -> std::string {
        for (int guard = 0; guard < 4 && !ts_node_is_null(v); ++guard) {
          if (is(v, "parenthesized_expression")) { v = ts_node_named_child(v, 0); continue; }
          if (is(v, "call_expression")) {
            TSNode fn = ts_node_child_by_field_name(v, "function", 8);
            TSNode args = ts_node_child_by_field_name(v, "arguments", 9);
            TSNode m = is(fn, "field_expression") ? ts_node_child_by_field_name(fn, "field", 5) : TSNode{};
            auto method = ts_node_is_null(m) ? std::string_view{} : text(m);
            if ((method == "c_str" || method == "data") && !ts_node_is_null(args) && ts_node_named_child_count(args) == 0) {
              v = ts_node_child_by_field_name(fn, "argument", 8);
              continue;
            }
            return {};
          }
          break;
        }
        if (is(v, "field_expression") && text(ts_node_child_by_field_name(v, "argument", 8)) == "this")
          v = ts_node_child_by_field_name(v, "field", 5);
        if (!is(v, "identifier") && !is(v, "field_identifier")) return {};
        std::string n(text(v));
        return index_of(d.params, n) >= 0 ? std::string() : n;
      };
      if (d.name == d.owner) {
        // : name_(name) in the initialiser list
        for (uint32_t i = 0; i < ts_node_named_child_count(f.node); ++i) {
          TSNode list = ts_node_named_child(f.node, i);
          if (!is(list, "field_initializer_list")) continue;
          for (uint32_t k = 0; k < ts_node_named_child_count(list) && d.stores.size() < kMaxRowItems; ++k) {
            TSNode init = ts_node_named_child(list, k);
            TSNode member = ts_node_named_child(init, 0);
            TSNode args = ts_node_named_child(init, 1);
            if (!is(member, "field_identifier") || ts_node_is_null(args) || ts_node_named_child_count(args) != 1) continue;
            TSNode a = ts_node_named_child(args, 0);
            int p = is(a, "identifier") ? index_of(d.params, text(a)) : -1;
            if (p >= 0) d.stores.emplace_back(std::string(text(member)), p);
          }
        }
      }
      // name_ = name; in the constructor's body; every return of a method
      std::vector<TSNode> todo{f.body}, rets;
      size_t visited = 0;
      while (!todo.empty() && visited++ < 20000) {
        TSNode n = todo.back();
        todo.pop_back();
        if (is(n, "lambda_expression")) continue;
        if (is(n, "return_statement")) rets.push_back(n);
        if (is(n, "assignment_expression") && d.name == d.owner && d.stores.size() < kMaxRowItems &&
            text(ts_node_child_by_field_name(n, "operator", 8)) == "=") {
          std::string member = member_named(ts_node_child_by_field_name(n, "left", 4));
          TSNode r = ts_node_child_by_field_name(n, "right", 5);
          int p = is(r, "identifier") ? index_of(d.params, text(r)) : -1;
          if (!member.empty() && p >= 0) d.stores.emplace_back(member, p);
        }
        for (uint32_t i = ts_node_named_child_count(n); i-- > 0;) todo.push_back(ts_node_named_child(n, i));
      }
      if (d.name == d.owner || rets.empty() || rets.size() > kMaxReturns) continue;
      std::string member;
      for (TSNode r : rets) {
        std::string m = ts_node_named_child_count(r) ? member_named(ts_node_named_child(r, 0)) : std::string();
        if (m.empty() || (!member.empty() && m != member)) { member.clear(); break; }
        member = m;
      }
      if (member.empty()) continue;
      d.returns_member = member;
      bool upper = false, lower = false;
      for (auto& t : tokenize(text(f.body)))
        if (t.kind == Token::Ident) {
          upper = upper || t.text == "toupper" || t.text == "towupper";
          lower = lower || t.text == "tolower" || t.text == "towlower";
        }
      if (upper != lower) d.member_case = upper ? kUpper : kLower;
    }
  }

  // A body that names the process environment (environ, __environ, _environ) as code, not
  // inside a string or a comment.
  static bool names_environ(std::string_view body) {
    if (body.find("environ") == std::string_view::npos) return false;
    for (auto& t : tokenize(body))
      if (t.kind == Token::Ident && (t.text == "environ" || t.text == "__environ" || t.text == "_environ")) return true;
    return false;
  }

  // Innermost definition containing [s, e), or -1.
  int enclosing(uint32_t s, uint32_t e) const {
    auto it = std::upper_bound(def_ranges_.begin(), def_ranges_.end(), s,
                               [](uint32_t v, const Range& r) { return v < r.start; });
    while (it != def_ranges_.begin()) {
      --it;
      if (it->start <= s && e <= it->end && !out_.defs[it - def_ranges_.begin()].macro)
        return static_cast<int>(it - def_ranges_.begin());
    }
    return -1;
  }

  // --- name expressions from syntax nodes
  void eval(TSNode n, int def, NameExpr& out, int depth = 0, bool in_concat = false) const {
    if (ts_node_is_null(n) || depth > 8) { out.push_back({Piece::Unknown, ""}); return; }
    const char* t = ts_node_type(n);
    auto sv = text(n);
    if (!std::strcmp(t, "string_literal") || !std::strcmp(t, "raw_string_literal") ||
        (!std::strcmp(t, "string") && lang_ != Lang::Python)) {
      size_t a = sv.find('"'), b = sv.rfind('"');
      if (!std::strcmp(t, "raw_string_literal")) {
        a = sv.find('('); b = sv.rfind(')');
      }
      out.push_back({Piece::Lit, (a != std::string_view::npos && b > a) ? std::string(sv.substr(a + 1, b - a - 1)) : ""});
      return;
    }
    if (!std::strcmp(t, "string") && lang_ == Lang::Python) { eval_python_string(n, def, out, depth); return; }
    if (!std::strcmp(t, "concatenated_string")) {
      uint32_t k = ts_node_named_child_count(n);
      for (uint32_t i = 0; i < k; ++i) eval(ts_node_named_child(n, i), def, out, depth + 1, true);
      return;
    }
    if (!std::strcmp(t, "identifier")) {
      std::string name(sv);
      if (def >= 0) {
        int p = index_of(out_.defs[def].params, name);
        // Python: name = name.upper() at the top of a function: the parameter, case changed
        if (p >= 0 && lang_ == Lang::Python)
          if (auto l = locals_[def].find(name); l != locals_[def].end() && is_case_change(l->second)) {
            out.push_back(l->second[0]);
            return;
          }
        if (p >= 0) { out.push_back({Piece::Param, name, p}); return; }
        // for (auto& n : names) getenv(n): the variable stands for each row of a table of strings
        if (auto rv = range_rows_[def].find(name); rv != range_rows_[def].end() && !rv->second.empty()) {
          Piece row{Piece::Field, rv->second};
          out.push_back(std::move(row));
          return;
        }
        // a table of this function passed on by name: the name the table is known by
        if (auto lt = local_tables_.find(def); lt != local_tables_.end() && lt->second.count(name)) {
          out.push_back({Piece::Ident, local_table(def, name)});
          return;
        }
        if (lang_ != Lang::Python && buffer_value(name, def, ts_node_start_byte(n), out, depth)) return;
        auto it = locals_[def].find(name);
        if (it != locals_[def].end()) {
          // p = "NO_PROXY" between the declaration and this use: the assignment, not the
          // initializer (`const char *p = "no_proxy"; get(p); p = "NO_PROXY"; get(p);`)
          auto decl = local_ends_[def].find(name);
          if (!in_concat && decl != local_ends_[def].end() && decl->second < ts_node_start_byte(n)) {
            NameExpr assigned = assigned_before(name, def, ts_node_start_byte(n), decl->second);
            if (!assigned.empty()) { out.insert(out.end(), assigned.begin(), assigned.end()); return; }
          }
          out.insert(out.end(), it->second.begin(), it->second.end());
          return;
        }
      }
      if (def >= 0 && !in_concat) {
        NameExpr assigned = assigned_before(name, def, ts_node_start_byte(n));
        if (!assigned.empty()) { out.insert(out.end(), assigned.begin(), assigned.end()); return; }
      }
      Piece piece{Piece::Ident, name};
      piece.in_concat = in_concat;
      out.push_back(piece);
      return;
    }
    if (!std::strcmp(t, "call_expression") && lang_ != Lang::Python) {
      // STR(MACRO): a stringizing macro applied to a token
      TSNode f = ts_node_child_by_field_name(n, "function", 8);
      TSNode args = ts_node_child_by_field_name(n, "arguments", 9);
      uint32_t nargs = ts_node_is_null(args) ? 0 : ts_node_named_child_count(args);
      if (is(f, "field_expression") && nargs == 0) {
        // Name.data(), name.c_str(): the characters of a string object are the string
        TSNode m = ts_node_child_by_field_name(f, "field", 5);
        auto method = ts_node_is_null(m) ? std::string_view{} : text(m);
        if (method == "data" || method == "c_str" || method == "str") {
          eval(ts_node_child_by_field_name(f, "argument", 8), def, out, depth + 1, in_concat);
          return;
        }
      }
      // std::string("LIB_"), std::string_view(name): the characters themselves
      if (nargs == 1 && (is(f, "identifier") || is(f, "qualified_identifier"))) {
        std::string fn = last_component(text(f));
        if (fn == "string" || fn == "string_view" || fn == "wstring" || fn == "QString" || fn == "QLatin1String" ||
            fn == "QStringLiteral" || fn == "StringRef" || fn == "Twine") {
          eval(ts_node_named_child(args, 0), def, out, depth + 1, in_concat);
          return;
        }
      }
      if (is(f, "identifier") && nargs <= 8) {
        // STR(MACRO), or a name-building macro: LIB_ENV("X") with #define LIB_ENV(s) "LIB_" s
        Piece p{Piece::Apply, std::string(text(f))};
        for (uint32_t i = 0; i < nargs; ++i) {
          TSNode a = ts_node_named_child(args, i);
          NameExpr e;
          eval(a, def, e, depth + 1);
          p.args.push_back(std::move(e));
          p.arg_texts.push_back(clip(text(a), 120));
        }
        if (nargs == 1) p.arg = trim(text(ts_node_named_child(args, 0)));
        out.push_back(p);
        return;
      }
    }
    if (!std::strcmp(t, "field_expression") && lang_ != Lang::Python) {
      // table[i].name, s.name in for (auto& s : table), p->name with p = table: that field of
      // every row of the table (resolved across files, cited at each row)
      std::string table = table_of(ts_node_child_by_field_name(n, "argument", 8), def);
      TSNode field = ts_node_child_by_field_name(n, "field", 5);
      if (!table.empty() && !ts_node_is_null(field)) {
        Piece p{Piece::Field, table};
        p.arg = std::string(text(field));
        out.push_back(p);
        return;
      }
      // tmpl[i].name, (*tmpl).name with tmpl a parameter: that field of each row of whatever
      // table the callers pass
      if (int param = walked_param(ts_node_child_by_field_name(n, "argument", 8), def); param >= 0 && !ts_node_is_null(field)) {
        Piece p{Piece::Field, "", param};
        p.arg = std::string(text(field));
        out.push_back(p);
        return;
      }
      // block->vars[i].name: a field of a record that is not a table (the resolver decides
      // whether that field holds names from the process environment)
      if (!ts_node_is_null(field) && is(field, "field_identifier")) {
        Piece p{Piece::Member, std::string(text(field))};
        p.arg = clip(sv, 80);
        out.push_back(p);
        return;
      }
    }
    if ((!std::strcmp(t, "subscript_expression") || (!std::strcmp(t, "pointer_expression") && text(n).substr(0, 1) == "*")) &&
        lang_ != Lang::Python) {
      // names[i], *p with p = names: the row itself of a table of strings (`static const char
      // names[][8] = {"A_X", "A_Y"}`), every row (resolved across files, cited at each row)
      std::string table = table_of(n, def);
      if (!table.empty()) {
        out.push_back({Piece::Field, table});
        return;
      }
      // *tmpl, tmpl[i] with tmpl a parameter: each row of the table a caller passes
      // (`for (; *tmpl; tmpl++) expand(*tmpl)` in a helper called with a table)
      if (int param = walked_param(n, def); param >= 0) {
        out.push_back({Piece::Field, "", param});
        return;
      }
    }
    if (!std::strcmp(t, "parenthesized_expression")) { eval(ts_node_named_child(n, 0), def, out, depth + 1); return; }
    if (!std::strcmp(t, "cast_expression")) { eval(ts_node_child_by_field_name(n, "value", 5), def, out, depth + 1); return; }
    if (!std::strcmp(t, "call") && lang_ == Lang::Python) {
      // name.upper(), name.lower(): the name with its case changed, applied where it is known
      TSNode f = ts_node_child_by_field_name(n, "function", 8);
      TSNode args = ts_node_child_by_field_name(n, "arguments", 9);
      TSNode attr = is(f, "attribute") ? ts_node_child_by_field_name(f, "attribute", 9) : TSNode{};
      std::string_view method = ts_node_is_null(attr) ? std::string_view{} : text(attr);
      if ((method == "upper" || method == "lower") && (ts_node_is_null(args) || ts_node_named_child_count(args) == 0)) {
        Piece p{Piece::Apply, method == "upper" ? kUpper : kLower};
        NameExpr inner;
        eval(ts_node_child_by_field_name(f, "object", 6), def, inner, depth + 1);
        p.args.push_back(std::move(inner));
        p.arg_texts.push_back(clip(text(ts_node_child_by_field_name(f, "object", 6)), 120));
        out.push_back(std::move(p));
        return;
      }
    }
    if (!std::strcmp(t, "binary_operator") && lang_ == Lang::Python) {
      TSNode op = ts_node_child_by_field_name(n, "operator", 8);
      if (!ts_node_is_null(op) && text(op) == "+") {
        eval(ts_node_child_by_field_name(n, "left", 4), def, out, depth + 1);
        eval(ts_node_child_by_field_name(n, "right", 5), def, out, depth + 1);
        return;
      }
      // "LIB_%s" % key, "LIB_%s_%d" % (key, n): printf conversions
      TSNode left = ts_node_child_by_field_name(n, "left", 4);
      if (!ts_node_is_null(op) && text(op) == "%" && is(left, "string")) {
        NameExpr f;
        std::string fmt;
        eval(left, def, f, depth + 1);
        TSNode right = ts_node_child_by_field_name(n, "right", 5);
        std::vector<NameExpr> args;
        if (is(right, "tuple")) {
          for (uint32_t i = 0; i < ts_node_named_child_count(right) && args.size() < 16; ++i) {
            args.emplace_back();
            eval_arg(ts_node_named_child(right, i), def, args.back(), depth + 1);
          }
        } else {
          args.emplace_back();
          eval_arg(right, def, args.back(), depth + 1);
        }
        if (literal_text(f, fmt) && expand_printf(fmt, args, out)) return;
      }
    }
    if (!std::strcmp(t, "call") && lang_ == Lang::Python) {
      // "LIB_{}".format(key), "LIB_{0}_{1}".format(a, b): positional replacement fields
      TSNode f = ts_node_child_by_field_name(n, "function", 8);
      TSNode args = ts_node_child_by_field_name(n, "arguments", 9);
      TSNode object = is(f, "attribute") ? ts_node_child_by_field_name(f, "object", 6) : TSNode{};
      TSNode attr = is(f, "attribute") ? ts_node_child_by_field_name(f, "attribute", 9) : TSNode{};
      if (is(object, "string") && !ts_node_is_null(attr) && text(attr) == "format" && !ts_node_is_null(args)) {
        NameExpr f0;
        std::string fmt;
        eval(object, def, f0, depth + 1);
        std::vector<NameExpr> values;
        bool positional = true;
        for (uint32_t i = 0; i < ts_node_named_child_count(args) && values.size() < 16; ++i) {
          TSNode a = ts_node_named_child(args, i);
          if (is(a, "keyword_argument") || is(a, "list_splat") || is(a, "dictionary_splat")) { positional = false; break; }
          values.emplace_back();
          eval_arg(a, def, values.back(), depth + 1);
        }
        NameExpr e;
        if (positional && literal_text(f0, fmt) && expand_format_fields(fmt, values, e)) {
          out.insert(out.end(), e.begin(), e.end());
          return;
        }
      }
    }
    if (!std::strcmp(t, "binary_expression") && lang_ == Lang::Cpp) {
      // std::string("LIB_") + key: the two strings joined (in C, "X" + n is pointer arithmetic)
      TSNode op = ts_node_child_by_field_name(n, "operator", 8);
      if (!ts_node_is_null(op) && text(op) == "+") {
        eval(ts_node_child_by_field_name(n, "left", 4), def, out, depth + 1, in_concat);
        eval(ts_node_child_by_field_name(n, "right", 5), def, out, depth + 1, in_concat);
        return;
      }
    }
    out.push_back({Piece::Unknown, clip(sv, 80)});
  }

  // The table an expression walks: table[i], *p or p[i] with p = table, the range-for variable.
  std::string table_of(TSNode n, int def) const {
    for (int guard = 0; guard < 4 && !ts_node_is_null(n); ++guard) {
      if (is(n, "parenthesized_expression")) n = ts_node_named_child(n, 0);
      else if (is(n, "subscript_expression") || is(n, "pointer_expression")) n = ts_node_child_by_field_name(n, "argument", 8);
      else break;
    }
    if (!is(n, "identifier")) return {};
    std::string name(text(n));
    if (def >= 0) {
      auto it = row_vars_[def].find(name);
      if (it != row_vars_[def].end()) return it->second;
      if (index_of(out_.defs[def].params, name) >= 0) return {};
      return table_in(def, name);
    }
    return name;
  }

  std::string local_table(int def, const std::string& name) const { return out_.defs[def].name + "::" + name; }

  // The parameter a subscript or dereference walks (`*tmpl`, `tmpl[i]`, `(*tmpl)`), or -1.
  int walked_param(TSNode n, int def) const {
    if (def < 0) return -1;
    bool walked = false;
    for (int guard = 0; guard < 4 && !ts_node_is_null(n); ++guard) {
      if (is(n, "parenthesized_expression")) {
        n = ts_node_named_child(n, 0);
      } else if (is(n, "subscript_expression") || (is(n, "pointer_expression") && text(n).substr(0, 1) == "*")) {
        n = ts_node_child_by_field_name(n, "argument", 8);
        walked = true;
      } else {
        break;
      }
    }
    if (!walked || !is(n, "identifier")) return -1;
    return index_of(out_.defs[def].params, std::string(text(n)));
  }

  // --- names written into a buffer: sprintf(buf, "LIB_%s", key), strcpy(buf, "LIB_"),
  // strcat(buf, key), then getenv(buf).
  enum class Write : uint8_t { None, Format, Copy, Append };
  // How a call writes its first argument, and which argument holds the format or the source.
  static Write buffer_write(std::string_view callee, int& source) {
    static const std::pair<const char*, int> format[] = {
        {"sprintf", 1}, {"snprintf", 2}, {"_snprintf", 2}, {"sprintf_s", 2}, {"snprintf_s", 3}, {"swprintf", 2},
        {"g_snprintf", 2}, {"StringCchPrintfA", 2}, {"StringCchPrintfW", 2}, {"StringCchPrintf", 2}};
    static const std::pair<const char*, int> copy[] = {{"strcpy", 1}, {"strncpy", 1}, {"strlcpy", 1},
                                                       {"strcpy_s", 2}, {"g_strlcpy", 1}, {"wcscpy", 1}};
    static const std::pair<const char*, int> append[] = {{"strcat", 1}, {"strncat", 1}, {"strlcat", 1},
                                                         {"strcat_s", 2}, {"g_strlcat", 1}, {"wcscat", 1}};
    for (auto& [n, i] : format) if (callee == n) { source = i; return Write::Format; }
    for (auto& [n, i] : copy) if (callee == n) { source = i; return Write::Copy; }
    for (auto& [n, i] : append) if (callee == n) { source = i; return Write::Append; }
    return Write::None;
  }

  void build_buffer_writes() {
    if (lang_ == Lang::Python) return;
    for (size_t i = 0; i < calls_.size(); ++i) {
      const CallNode& c = calls_[i];
      int source = 0;
      if (ts_node_is_null(c.args) || buffer_write(last_component(text(c.callee)), source) == Write::None) continue;
      TSNode target = ts_node_named_child(c.args, 0);
      if (!is(target, "identifier") || static_cast<int>(ts_node_named_child_count(c.args)) <= source) continue;
      int def = enclosing(ts_node_start_byte(c.node), ts_node_end_byte(c.node));
      if (def < 0) continue;
      auto& writes = buffer_writes_[{def, std::string(text(target))}];
      if (writes.size() < 64) writes.push_back(i);
    }
  }

  // A call's argument as a name piece: a number literal is its digits (sprintf's %d).
  void eval_arg(TSNode a, int def, NameExpr& out, int depth) const {
    if (is(a, "number_literal") || is(a, "integer")) {
      std::string digits;
      for (char ch : text(a)) if (std::isdigit(static_cast<unsigned char>(ch))) digits += ch; else break;
      out.push_back({digits.empty() ? Piece::Unknown : Piece::Lit, digits.empty() ? std::string(text(a)) : digits});
      return;
    }
    eval(a, def, out, depth);
  }

  // A name built of literals, parameters, constants, stringized arguments and rows of walked
  // tables only.
  static bool built_name(const NameExpr& e) {
    bool any = false;
    for (auto& p : e) {
      // a row of a table the loop walks is one of the table's strings: as known as a literal
      if (p.kind == Piece::Lit || p.kind == Piece::Param || p.kind == Piece::Stringize ||
          (p.kind == Piece::Field && (!p.text.empty() || p.param >= 0)))
        any = true;
      else if (p.kind != Piece::Ident) return false;
    }
    return any;
  }

  // The literal text of a format expression, or false when it is not all literal.
  static bool literal_text(const NameExpr& e, std::string& out) {
    out.clear();
    for (auto& p : e) {
      if (p.kind != Piece::Lit) return false;
      out += p.text;
    }
    return !e.empty();
  }

  // printf conversions of `fmt` (%s, %d, %i, %u, with flags, width and length) filled with the
  // arguments' name expressions; false for a conversion this cannot fill (%*d, %n, %(key)s, %f)
  // or too few arguments.
  static bool expand_printf(std::string_view fmt, const std::vector<NameExpr>& args, NameExpr& out) {
    NameExpr e;
    std::string lit;
    size_t next = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
      if (fmt[i] != '%') { lit += fmt[i]; continue; }
      if (i + 1 < fmt.size() && fmt[i + 1] == '%') { lit += '%'; ++i; continue; }
      size_t j = i + 1;
      while (j < fmt.size() && fmt[j] && std::strchr("-+ #0123456789.hlLqjzt", fmt[j])) ++j;
      if (j >= fmt.size() || !fmt[j] || !std::strchr("sdiu", fmt[j]) || next >= args.size()) return false;
      if (!lit.empty()) e.push_back({Piece::Lit, lit});
      lit.clear();
      e.insert(e.end(), args[next].begin(), args[next].end());
      ++next;
      i = j;
    }
    if (!lit.empty() || e.empty()) e.push_back({Piece::Lit, lit});
    out.insert(out.end(), e.begin(), e.end());
    return true;
  }

  // str.format's positional fields ({}, {0}, {1}) filled with the arguments; false for a named
  // field, a conversion or format spec ({!r}, {:>4}), or too few arguments.
  static bool expand_format_fields(std::string_view fmt, const std::vector<NameExpr>& args, NameExpr& out) {
    std::string lit;
    size_t next = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
      char ch = fmt[i];
      if ((ch == '{' || ch == '}') && i + 1 < fmt.size() && fmt[i + 1] == ch) { lit += ch; ++i; continue; }
      if (ch == '}') return false;
      if (ch != '{') { lit += ch; continue; }
      size_t close = fmt.find('}', i);
      if (close == std::string_view::npos) return false;
      std::string_view field = fmt.substr(i + 1, close - i - 1);
      size_t index = next;
      if (!field.empty()) {
        index = 0;
        for (char d : field) {
          if (!std::isdigit(static_cast<unsigned char>(d))) return false;
          index = index * 10 + static_cast<size_t>(d - '0');
        }
      } else {
        ++next;
      }
      if (index >= args.size()) return false;
      if (!lit.empty()) out.push_back({Piece::Lit, lit});
      lit.clear();
      out.insert(out.end(), args[index].begin(), args[index].end());
      i = close;
    }
    if (!lit.empty()) out.push_back({Piece::Lit, lit});
    return true;
  }

  // What the buffer `name` holds at `before`: the last format or copy into it, then what is
  // appended after it (or its initializer, then the appends). False when nothing wrote it.
  bool buffer_value(const std::string& name, int def, uint32_t before, NameExpr& out, int depth) const {
    auto it = buffer_writes_.find({def, name});
    if (it == buffer_writes_.end() || depth > 6) return false;
    std::vector<size_t> chain;  // last write first
    for (auto w = it->second.rbegin(); w != it->second.rend(); ++w) {
      if (ts_node_start_byte(calls_[*w].node) >= before) continue;
      // `p = "all_proxy";` after the write: the variable points elsewhere since
      if (chain.empty() && assigned_between(name, ts_node_end_byte(calls_[*w].node), before)) return false;
      chain.push_back(*w);
      int source = 0;
      if (buffer_write(last_component(text(calls_[*w].callee)), source) != Write::Append) break;
    }
    if (chain.empty()) return false;
    NameExpr e;
    int source = 0;
    if (buffer_write(last_component(text(calls_[chain.back()].callee)), source) == Write::Append) {
      auto l = locals_[def].find(name);
      if (l == locals_[def].end()) return false;
      e = l->second;
    }
    for (auto w = chain.rbegin(); w != chain.rend(); ++w) {
      const CallNode& c = calls_[*w];
      Write kind = buffer_write(last_component(text(c.callee)), source);
      TSNode src = ts_node_named_child(c.args, static_cast<uint32_t>(source));
      if (kind == Write::Format) {
        NameExpr f;
        eval(src, def, f, depth + 1);
        std::string fmt;
        if (!literal_text(f, fmt)) return false;
        std::vector<NameExpr> args;
        for (uint32_t k = static_cast<uint32_t>(source) + 1; k < ts_node_named_child_count(c.args) && args.size() < 16; ++k) {
          args.emplace_back();
          eval_arg(ts_node_named_child(c.args, k), def, args.back(), depth + 1);
        }
        e.clear();
        if (!expand_printf(fmt, args, e)) return false;
      } else {
        if (kind == Write::Copy) e.clear();
        eval(src, def, e, depth + 1);
      }
    }
    out.insert(out.end(), e.begin(), e.end());
    return true;
  }

  // Whether `name = ...` (not ==) appears in the text between `from` and `to`.
  bool assigned_between(const std::string& name, uint32_t from, uint32_t to) const {
    if (to <= from || to > src_.size()) return false;
    std::string_view region = src_.substr(from, to - from);
    for (size_t hit = region.find(name); hit != std::string_view::npos; hit = region.find(name, hit + 1)) {
      size_t end = hit + name.size();
      if ((hit > 0 && is_ident_char(region[hit - 1])) || (end < region.size() && is_ident_char(region[end]))) continue;
      while (end < region.size() && std::isspace(static_cast<unsigned char>(region[end]))) ++end;
      if (end < region.size() && region[end] == '=' && (end + 1 >= region.size() || region[end + 1] != '=')) return true;
    }
    return false;
  }

  // `name = ... "X" ...;` earlier in the function, when the initializer is split by
  // preprocessor branches that tree-sitter cannot parse: the last string literal wins.
  NameExpr assigned_before(const std::string& name, int def, uint32_t before, uint32_t after = 0) const {
    uint32_t from = std::max(def_ranges_[def].start, after);
    if (before <= from || before > src_.size()) return {};
    std::string_view region = src_.substr(from, before - from);
    size_t pos = region.size();
    while (pos > 0) {
      size_t hit = region.rfind(name, pos - 1);
      if (hit == std::string_view::npos) break;
      pos = hit;
      size_t end = hit + name.size();
      if ((hit > 0 && is_ident_char(region[hit - 1])) || (end < region.size() && is_ident_char(region[end]))) continue;
      size_t k = end;
      while (k < region.size() && std::isspace(static_cast<unsigned char>(region[k]))) ++k;
      if (k >= region.size() || region[k] != '=' || (k + 1 < region.size() && region[k + 1] == '=')) continue;
      size_t semi = region.find(';', k);
      if (semi == std::string_view::npos) semi = region.size();
      auto toks = tokenize(region.substr(k + 1, semi - k - 1));
      for (auto it = toks.rbegin(); it != toks.rend(); ++it)
        if (it->kind == Token::String) return {{Piece::Lit, it->text}};
      return {};
    }
    return {};
  }

  void eval_python_string(TSNode n, int def, NameExpr& out, int depth) const {
    uint32_t k = ts_node_child_count(n);
    bool any = false;
    for (uint32_t i = 0; i < k; ++i) {
      TSNode c = ts_node_child(n, i);
      const char* t = ts_node_type(c);
      if (!std::strcmp(t, "string_content") || !std::strcmp(t, "escape_sequence")) {
        out.push_back({Piece::Lit, std::string(text(c))});
        any = true;
      } else if (!std::strcmp(t, "interpolation")) {
        TSNode e = ts_node_child_by_field_name(c, "expression", 10);
        if (ts_node_is_null(e)) e = ts_node_named_child(c, 0);
        eval(e, def, out, depth + 1);
        any = true;
      }
    }
    if (!any) out.push_back({Piece::Lit, ""});
  }

  void build_locals_and_constants() {
    for (auto& v : vars_) {
      NameExpr e;
      int def = enclosing(ts_node_start_byte(v.node), ts_node_end_byte(v.node));
      eval(v.b, def, e);
      std::string name = lang_ == Lang::Python ? std::string(text(v.a)) : declared_name(v.a);
      if (name.empty()) continue;
      // Python: of the calls assigned to a name, only name.upper() / name.lower() and str.format
      // build a name; C++: a string joined or converted (std::string("LIB_") + key) is one when
      // every piece of it is known
      if (lang_ == Lang::Python && is(v.b, "call") && !is_case_change(e) && !built_name(e)) continue;
      if (lang_ == Lang::Cpp && (is(v.b, "binary_expression") || is(v.b, "call_expression")) && !built_name(e)) continue;
      if (def >= 0 && locals_[def].emplace(name, std::move(e)).second) local_ends_[def][name] = ts_node_end_byte(v.node);
      else out_.constants.push_back({name, std::move(e), {}});
    }
    for (auto& c : consts_) {
      auto toks = tokenize(text(c.b));
      std::string name(text(c.a));
      bool stringy = !toks.empty() && std::all_of(toks.begin(), toks.end(), [](const Token& t) {
        return t.kind == Token::String || t.kind == Token::Ident || t.text == "(" || t.text == ")";
      });
      if (stringy) out_.constants.push_back({name, eval_tokens(toks, 0, toks.size(), {}), ""});
      if (toks.size() == 1 && toks[0].kind == Token::Ident) out_.constants.push_back({name, {}, toks[0].text});
      // object-like macros can hold reads too: #define DEBUG_ON readenv_atoi("GOTO_DEBUG")
      macro_calls(toks, -1, line(c.b));
    }
    for (auto& t : tables_) add_table(t);
    for (size_t i = 0; i < def_nodes_.size(); ++i) {
      auto& f = def_nodes_[i];
      if (!f.macro) continue;
      TSNode body = ts_node_child_by_field_name(f.node, "value", 5);
      if (ts_node_is_null(body)) continue;
      out_.defs[i].body = clip(text(body), 200);
      auto toks = tokenize(text(body));
      // a body made of strings, parameters and names only builds a name: "LIB_" s, #x
      bool name_only = !toks.empty() && toks.size() <= 32 && std::all_of(toks.begin(), toks.end(), [](const Token& t) {
        return t.kind == Token::String || t.kind == Token::Ident || t.text == "#";
      });
      if (name_only) {
        NameExpr e = eval_tokens(toks, 0, toks.size(), out_.defs[i].params);
        bool uses_param = std::any_of(e.begin(), e.end(), [](const Piece& p) {
          return p.kind == Piece::Param || p.kind == Piece::Stringize;
        });
        // a macro of no parameters whose body is a string (#define DEF_TRACE() "LIB_TRACE")
        // is that name wherever it is applied
        bool literal = out_.defs[i].params.empty() &&
                       std::any_of(toks.begin(), toks.end(), [](const Token& t) { return t.kind == Token::String; });
        if (uses_param || literal) out_.defs[i].name_body = std::move(e);
      }
      macro_calls(toks, static_cast<int>(i), line(body));
    }
  }

  // A file-scope array of rows: every row's items, by designator or position, for reads of a
  // field of each row (table[i].name); rows whose first item is a string are also constants.
  void add_table(const PairNode& t) {
    std::string name = declared_name(t.a);
    if (name.empty()) return;
    // A table inside a function (static const char names[][14] = {...}) is that function's:
    // named FUNCTION::NAME, so that another function's table of the same name is not its rows.
    const int def = enclosing(ts_node_start_byte(t.node), ts_node_end_byte(t.node));
    if (def >= 0) {
      local_tables_[def].insert(name);
      name = local_table(def, name);
    }
    Table table;
    table.name = name;
    table.type = type_name(ts_node_child_by_field_name(ts_node_parent(t.node), "type", 4));
    // A table of strings (or of name constants): each row is its one unnamed item. Rows that
    // preprocessor branches split (`"A" #if X ,"B" #endif`) come back inside error nodes; their
    // strings are rows too, every branch taken.
    auto string_row = [&](TSNode row) { add_string_row(row, table); };
    std::function<void(TSNode, int)> strings_in = [&](TSNode n, int depth) {
      uint32_t k = ts_node_named_child_count(n);
      for (uint32_t j = 0; j < k && table.rows.size() < kMaxTableRows; ++j) {
        TSNode c = ts_node_named_child(n, j);
        if (is(c, "string_literal")) string_row(c);
        else if (depth < 6) strings_in(c, depth + 1);
      }
    };
    // rows between #if and #endif sit inside the preprocessor node: every branch is taken.
    // The C++ grammar reads `#if X` before a row as an error and `X {"A", f}` as a compound
    // literal of type X: its value is the row, as in C's `(struct s){"A", f}`; after
    // `#if A || B` or `#if !A` the literal is the last operand of the condition.
    auto glued_row = [&](TSNode c) {
      for (int guard = 0; guard < 8 && !ts_node_is_null(c); ++guard) {
        if (is(c, "compound_literal_expression")) return ts_node_child_by_field_name(c, "value", 5);
        if (is(c, "binary_expression")) c = ts_node_child_by_field_name(c, "right", 5);
        else if (is(c, "unary_expression")) c = ts_node_child_by_field_name(c, "argument", 8);
        else break;
      }
      return TSNode{};
    };
    std::vector<TSNode> row_nodes;
    std::function<void(TSNode, int)> rows_in = [&](TSNode list, int depth) {
      uint32_t k = ts_node_named_child_count(list);
      TSNode cond = ts_node_child_by_field_name(list, "condition", 9);
      TSNode name = ts_node_child_by_field_name(list, "name", 4);
      for (uint32_t j = 0; j < k && row_nodes.size() < kMaxTableRows; ++j) {
        TSNode c = ts_node_named_child(list, j);
        if (ts_node_eq(c, cond) || ts_node_eq(c, name)) continue;
        std::string_view type = ts_node_type(c);
        bool branch = type == "preproc_if" || type == "preproc_ifdef" || type == "preproc_else" ||
                      type == "preproc_elif" || type == "preproc_elifdef";
        if (branch && depth < 6) rows_in(c, depth + 1);
        else if (type == "compound_literal_expression" || type == "binary_expression" || type == "unary_expression") {
          TSNode row = glued_row(c);
          row_nodes.push_back(ts_node_is_null(row) ? c : row);
        }
        else if (!type.starts_with("preproc_")) row_nodes.push_back(c);
      }
    };
    rows_in(t.b, 0);
    for (TSNode row : row_nodes) {
      if (is(row, "ERROR") || ((is(row, "concatenated_string") || is(row, "binary_expression")) && ts_node_has_error(row))) {
        strings_in(row, 0);
        continue;
      }
      if (is(row, "string_literal") || is(row, "concatenated_string") || is(row, "identifier")) {
        string_row(row);
        continue;
      }
      if (is(row, "call_expression")) {
        // a macro whose body is a braced row, else one that builds a string (DEF_ENV(CPU_JIT)
        // with #define DEF_ENV(x) "LIB_" #x): its name, expanded where the table is read
        if (!macro_row(row, table)) add_string_row(row, table);
        continue;
      }
      if (!is(row, "initializer_list") || ts_node_named_child_count(row) == 0) continue;
      TSNode first = ts_node_named_child(row, 0);
      if (is(first, "string_literal")) {
        NameExpr e;
        eval(first, -1, e);
        out_.constants.push_back({name, std::move(e), ""});
      }
      Table::Row r;
      r.line = line(row);
      uint32_t items = ts_node_named_child_count(row);
      for (uint32_t k = 0; k < items && k < kMaxRowItems; ++k) {
        TSNode item = ts_node_named_child(row, k);
        if (is(item, "comment")) continue;
        Table::Item it;
        if (is(item, "initializer_pair")) {
          it.field = designated_field(ts_node_child_by_field_name(item, "designator", 10));
          item = ts_node_child_by_field_name(item, "value", 5);
        }
        // only what can be a name is kept: strings and identifiers (constants)
        if (is(item, "string_literal") || is(item, "concatenated_string") || is(item, "identifier"))
          eval(item, -1, it.value);
        r.items.push_back(std::move(it));
      }
      table.rows.push_back(std::move(r));
    }
    if (!table.rows.empty()) out_.tables.push_back(std::move(table));
  }

  // A row written as a call of a function-like macro of this file whose body is a braced
  // initializer (`E_V("HOMEDRIVE")` with `#define E_V(str) { L##str, L##str L"=", sizeof(str) }`):
  // the body's items with the call's arguments in place of the parameters, positional.
  // Whether it added a row.
  bool macro_row(TSNode call, Table& table) {
    std::string callee = trim(text(ts_node_child_by_field_name(call, "function", 8)));
    const Definition* m = nullptr;
    std::string text_of_body;
    for (size_t i = 0; i < out_.defs.size() && i < def_nodes_.size(); ++i)
      if (out_.defs[i].macro && out_.defs[i].name == callee) {
        TSNode value = ts_node_child_by_field_name(def_nodes_[i].node, "value", 5);
        if (ts_node_is_null(value)) return false;
        m = &out_.defs[i];
        text_of_body = clip(text(value), 4096);
        break;
      }
    if (!m) return false;
    std::string_view body = text_of_body;
    while (!body.empty() && std::isspace(static_cast<unsigned char>(body.front()))) body.remove_prefix(1);
    while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.remove_suffix(1);
    if (body.size() < 2 || body.front() != '{' || body.back() != '}') return false;
    std::vector<NameExpr> args;
    TSNode list = ts_node_child_by_field_name(call, "arguments", 9);
    for (uint32_t j = 0, n = ts_node_named_child_count(list); j < n && args.size() < 16; ++j) {
      TSNode a = ts_node_named_child(list, j);
      if (is(a, "comment")) continue;
      NameExpr e;
      if (is(a, "string_literal") || is(a, "concatenated_string") || is(a, "identifier")) eval(a, -1, e);
      args.push_back(std::move(e));
    }
    auto toks = tokenize(body.substr(1, body.size() - 2));
    Table::Row r;
    r.line = line(call);
    auto item = [&](size_t from, size_t to) {
      Table::Item it;
      for (Piece& piece : eval_tokens(toks, from, to, m->params)) {
        if (piece.kind == Piece::Param && piece.param >= 0 && static_cast<size_t>(piece.param) < args.size())
          it.value.insert(it.value.end(), args[piece.param].begin(), args[piece.param].end());
        else
          it.value.push_back(std::move(piece));
      }
      r.items.push_back(std::move(it));
    };
    int level = 0;
    size_t start = 0;
    for (size_t k = 0; k < toks.size() && r.items.size() < kMaxRowItems; ++k) {
      if (toks[k].text == "(" || toks[k].text == "{" || toks[k].text == "[") ++level;
      else if (toks[k].text == ")" || toks[k].text == "}" || toks[k].text == "]") --level;
      else if (toks[k].text == "," && level == 0) { item(start, k); start = k + 1; }
    }
    if (start < toks.size() && r.items.size() < kMaxRowItems) item(start, toks.size());
    if (r.items.empty()) return false;
    table.rows.push_back(std::move(r));
    return true;
  }

  // .name (field_designator) or name: (old GNU style): the field's name.
  std::string designated_field(TSNode d) const {
    std::string f = trim(text(d));
    if (!f.empty() && f[0] == '.') f = trim(std::string_view(f).substr(1));
    if (!f.empty() && f.back() == ':') f.pop_back();
    for (char c : f)
      if (!is_ident_char(c)) return {};
    return f;
  }

  // The name of a declaration's type: `struct setting` -> setting, `const setting_t` -> setting_t.
  std::string type_name(TSNode type) const {
    if (ts_node_is_null(type)) return {};
    if (is(type, "struct_specifier") || is(type, "class_specifier")) {
      TSNode n = ts_node_child_by_field_name(type, "name", 4);
      return ts_node_is_null(n) ? std::string() : last_component(text(n));
    }
    if (is(type, "type_identifier") || is(type, "qualified_identifier")) return last_component(text(type));
    return {};
  }

  // --- records, bindings of functions to pointers and fields, table walkers
  // The function an expression stores: f, &f, (T)f, ns::f.
  std::string stored_function(TSNode v) const {
    for (int guard = 0; guard < 4 && !ts_node_is_null(v); ++guard) {
      if (is(v, "parenthesized_expression")) v = ts_node_named_child(v, 0);
      else if (is(v, "cast_expression")) v = ts_node_child_by_field_name(v, "value", 5);
      else if (is(v, "pointer_expression") && text(v).substr(0, 1) == "&") v = ts_node_child_by_field_name(v, "argument", 8);
      else break;
    }
    if (is(v, "identifier") || is(v, "qualified_identifier")) return last_component(text(v));
    return class_name(v);
  }

  // The class a type names: T, ns::T, T<int>, in a type descriptor (using A = T<int>); empty
  // for primitive and other types.
  std::string class_name(TSNode v) const {
    for (int guard = 0; guard < 4 && !ts_node_is_null(v); ++guard) {
      if (is(v, "type_descriptor")) v = ts_node_child_by_field_name(v, "type", 4);
      else if (is(v, "template_type") || is(v, "template_function")) v = ts_node_child_by_field_name(v, "name", 4);
      else break;
    }
    if (is(v, "type_identifier") || is(v, "qualified_identifier") || is(v, "identifier")) return last_component(text(v));
    return {};
  }

  void build_records_and_bindings() {
    for (auto& r : records_) {
      if (is(r.node, "type_definition")) {
        // typedef struct tag name_t;  (a typedef with a body names the struct below instead)
        std::string tag = type_name(r.a);
        if (tag.empty()) continue;
        for (auto& n : typedef_names(r.node))
          if (n != tag) out_.records.push_back({n, {}, tag});
        continue;
      }
      Record rec;
      TSNode name = ts_node_child_by_field_name(r.node, "name", 4);
      uint32_t n = ts_node_named_child_count(r.a);
      for (uint32_t i = 0; i < n && rec.fields.size() < kMaxRowItems; ++i) {
        TSNode fd = ts_node_named_child(r.a, i);
        if (!is(fd, "field_declaration")) continue;
        for (auto& d : declarators(fd)) rec.fields.push_back(declared_name(d));
      }
      if (!ts_node_is_null(name)) {
        rec.name = last_component(text(name));
        out_.records.push_back(rec);
      }
      if (is(ts_node_parent(r.node), "type_definition"))
        for (auto& alias : typedef_names(ts_node_parent(r.node))) {
          rec.name = alias;
          out_.records.push_back(rec);
        }
    }
    for (auto& b : binds_) {
      int def = enclosing(ts_node_start_byte(b.node), ts_node_end_byte(b.node));
      if (is(b.b, "initializer_list")) {
        positional_bindings(b);
        continue;
      }
      if (def >= 0 && is(b.node, "assignment_expression") && is(b.a, "field_expression")) {
        // the fields a function writes: where it parses the environment, they hold its names
        TSNode f = ts_node_child_by_field_name(b.a, "field", 5);
        auto& fields = out_.defs[def].assigned_fields;
        std::string name = ts_node_is_null(f) ? std::string() : std::string(text(f));
        if (!name.empty() && fields.size() < kMaxRowItems && std::find(fields.begin(), fields.end(), name) == fields.end())
          fields.push_back(name);
      }
      std::string fn = stored_function(b.b);
      if (fn.empty()) continue;
      Binding bind;
      bind.function = fn;
      if (is(b.node, "initializer_pair")) {
        bind.target = designated_field(b.a);
        bind.field = true;
      } else if (is(b.a, "field_expression")) {
        TSNode f = ts_node_child_by_field_name(b.a, "field", 5);
        bind.target = ts_node_is_null(f) ? std::string() : std::string(text(f));
        bind.field = true;
      } else if (is(b.a, "identifier") || is(b.a, "type_identifier")) {
        bind.target = std::string(text(b.a));
      } else if (is(b.a, "field_identifier")) {
        bind.target = std::string(text(b.a));
        bind.field = true;
      } else if (is(b.node, "init_declarator")) {
        bind.target = declared_name(b.a);
      }
      if (bind.target.empty() || bind.target == fn) continue;
      // a local that walks a table: for (p = table; ...; ++p) ... p->name
      if (def >= 0 && !bind.field) row_vars_[def][bind.target] = table_in(def, fn);
      out_.bindings.push_back(std::move(bind));
    }
    for (auto& r : ranges_) {
      int def = enclosing(ts_node_start_byte(r.node), ts_node_end_byte(r.node));
      std::string var = declared_name(r.a);
      std::string table = stored_function(r.b);
      if (def >= 0 && !var.empty() && !table.empty()) row_vars_[def][var] = range_rows_[def][var] = table_in(def, table);
    }
  }

  // The range-for loops over braced lists of strings, before the locals that use their
  // variables (`std::string n = std::string(prefix) + name;`) are evaluated.
  void build_inline_lists() {
    if (lang_ != Lang::Cpp) return;
    for (auto& r : ranges_) {
      int def = enclosing(ts_node_start_byte(r.node), ts_node_end_byte(r.node));
      std::string var = declared_name(r.a);
      if (def < 0 || var.empty()) continue;
      std::string table = inline_strings(r.b, def);
      if (!table.empty()) row_vars_[def][var] = range_rows_[def][var] = local_table(def, table);
    }
  }

  // A row of a table of strings: its one unnamed item, cited at its line.
  void add_string_row(TSNode row, Table& table) const {
    Table::Row r;
    r.line = line(row);
    Table::Item it;
    eval(row, -1, it.value);
    r.items.push_back(std::move(it));
    table.rows.push_back(std::move(r));
  }

  // for (auto& prefix : {"LIB_", "OLD_"}): a loop over a braced list of strings walks a table
  // of its own, which the function holds as `FUNCTION::{}@OFFSET` (the resolver cites a name
  // built from one of its rows at the call that gives the rest, not at the list). Its name,
  // or empty when an item is anything but a string.
  std::string inline_strings(TSNode list, int def) {
    if (!is(list, "initializer_list")) return {};
    uint32_t k = ts_node_named_child_count(list);
    Table table;
    for (uint32_t j = 0; j < k && table.rows.size() < kMaxTableRows; ++j) {
      TSNode c = ts_node_named_child(list, j);
      if (is(c, "comment")) continue;
      if (!is(c, "string_literal") && !is(c, "concatenated_string")) return {};
      add_string_row(c, table);
    }
    if (table.rows.empty()) return {};
    std::string name = std::string(kInlineList) + std::to_string(ts_node_start_byte(list));
    local_tables_[def].insert(name);
    table.name = local_table(def, name);
    out_.tables.push_back(std::move(table));
    return name;
  }

  // A table's name as seen from inside `def`: its own table of that name, else the file's.
  std::string table_in(int def, const std::string& name) const {
    auto local = local_tables_.find(def);
    return local != local_tables_.end() && local->second.count(name) ? local_table(def, name) : name;
  }

  // The declarators of a field declaration or typedef (`int a, *b;`), in order: the named
  // children other than the type, qualifiers, bit widths and comments.
  std::vector<TSNode> declarators(TSNode decl) const {
    std::vector<TSNode> out;
    TSNode type = ts_node_child_by_field_name(decl, "type", 4);
    uint32_t k = ts_node_named_child_count(decl);
    for (uint32_t j = 0; j < k && out.size() < kMaxRowItems; ++j) {
      TSNode c = ts_node_named_child(decl, j);
      std::string_view t = ts_node_type(c);
      if (ts_node_eq(c, type)) continue;
      if (t == "field_identifier" || t == "type_identifier" || t == "identifier" ||
          (t.size() > 10 && t.substr(t.size() - 10) == "declarator"))
        out.push_back(c);
    }
    return out;
  }

  std::vector<std::string> typedef_names(TSNode td) const {
    std::vector<std::string> out;
    for (auto& d : declarators(td)) {
      std::string n = declared_name(d);
      if (!n.empty() && out.size() < 8) out.push_back(n);
    }
    return out;
  }

  // struct ops o = {1, f}: f is stored in the second field of struct ops, named across files.
  void positional_bindings(const PairNode& b) {
    if (!is(b.a, "identifier")) return;  // arrays are tables; pointers and the rest are not records
    std::string record = type_name(ts_node_child_by_field_name(ts_node_parent(b.node), "type", 4));
    if (record.empty()) return;
    uint32_t n = ts_node_named_child_count(b.b);
    for (uint32_t i = 0, pos = 0; i < n && i < kMaxRowItems; ++i) {
      TSNode item = ts_node_named_child(b.b, i);
      if (is(item, "comment")) continue;
      if (is(item, "initializer_pair")) break;  // designated from here on: bound by their own match
      std::string fn = stored_function(item);
      if (!fn.empty()) {
        Binding bind;
        bind.field = true;
        bind.record = record;
        bind.position = static_cast<int>(pos);
        bind.function = fn;
        out_.bindings.push_back(std::move(bind));
      }
      ++pos;
    }
  }

  // The first token of the (possibly pasted) identifier that ends at token `i`: buf_ ## name.
  static size_t pasted_start(const std::vector<Token>& t, size_t i) {
    while (i >= 2 && t[i - 1].text == "##" && t[i - 2].kind == Token::Ident) i -= 2;
    return i;
  }

  // Variables a macro body declares or assigns, by their (possibly pasted) name's text, with the
  // tokens of their value: `static char buf_##n[] = #n;` gives "buf_##n" -> `#n`.
  static std::map<std::string, std::pair<size_t, size_t>> macro_locals(const std::vector<Token>& t) {
    std::map<std::string, std::pair<size_t, size_t>> out;
    for (size_t i = 1; i + 1 < t.size() && out.size() < 64; ++i) {
      if (t[i].text != "=" || t[i + 1].text == "=") continue;
      size_t e = i;  // the name ends before `=`, after any [size] suffixes
      while (e > 0 && t[e - 1].text == "]") {
        size_t k = e - 1;
        while (k > 0 && t[k].text != "[") --k;
        if (t[k].text != "[") break;
        e = k;
      }
      if (e == 0 || t[e - 1].kind != Token::Ident) continue;
      size_t s = pasted_start(t, e - 1);
      if (s > 0 && (t[s - 1].text == "=" || t[s - 1].text == "!" || t[s - 1].text == "<" || t[s - 1].text == ">"))
        continue;  // ==, !=, <=, >= and the like
      size_t v = i + 1, depth = 0, end = v;
      for (; end < t.size(); ++end) {
        if (t[end].text == "(" || t[end].text == "{" || t[end].text == "[") ++depth;
        else if (t[end].text == ")" || t[end].text == "}" || t[end].text == "]") { if (depth == 0) break; --depth; }
        else if ((t[end].text == ";" || t[end].text == ",") && depth == 0) break;
      }
      if (end > v) out[join(t, s, e)] = {v, end};
    }
    return out;
  }

  // Calls inside a macro body: IDENT ( args ), nested calls included. A declaration with
  // arguments, `T name(args)` or `T buf_##n(args)`, is also a call of T's constructor. An
  // argument that is a variable the body declared (`char buf_##n[] = #n; T x(buf_##n)`)
  // stands for its value.
  void macro_calls(const std::vector<Token>& t, int def, int first_line) {
    static const std::vector<std::string> none;
    const auto& params = def >= 0 ? out_.defs[def].params : none;
    auto locals = macro_locals(t);
    auto arg_expr = [&](size_t a, size_t b) {
      auto l = locals.find(join(t, a, b));
      return l == locals.end() ? eval_tokens(t, a, b, params) : eval_tokens(t, l->second.first, l->second.second, params);
    };
    for (size_t i = 0; i + 1 < t.size(); ++i) {
      if (t[i].kind != Token::Ident || t[i + 1].text != "(" || is_keyword(t[i].text)) continue;
      if (i > 0 && t[i - 1].text == "#") continue;
      Call call;
      call.callee = t[i].text;
      call.member = i > 0 && (t[i - 1].text == "." || t[i - 1].text == ">");
      call.line = first_line + t[i].line;
      call.def = def;
      int depth = 0;
      size_t start = i + 2, j = i + 1;
      for (; j < t.size(); ++j) {
        if (t[j].text == "(") ++depth;
        else if (t[j].text == ")") {
          if (--depth == 0) break;
        } else if (t[j].text == "," && depth == 1) {
          call.args.push_back({arg_expr(start, j), join(t, start, j)});
          start = j + 1;
        }
      }
      if (j > start || !call.args.empty()) call.args.push_back({arg_expr(start, std::min(j, t.size())), join(t, start, std::min(j, t.size()))});
      // a conversion wrapped around the call names its type: atoi(getenv(n))
      if (i >= 2 && t[i - 1].text == "(" && t[i - 2].kind == Token::Ident)
        if (const char* ty = type_of_conversion(t[i - 2].text)) call.type_hint = ty;
      // T name(args): a construction, a call of T's constructor (`return f(x)` and the like aside)
      size_t s = pasted_start(t, i);
      if (s > 0 && t[s - 1].kind == Token::Ident && !is_keyword(t[s - 1].text) && !call.member &&
          !(s > 1 && (t[s - 2].text == "." || t[s - 2].text == ">"))) {
        Call construction = call;
        construction.callee = t[s - 1].text;
        out_.calls.push_back(std::move(construction));
      }
      out_.calls.push_back(std::move(call));
      threading_call(out_.calls.back().callee, out_.calls.back().line, def);
    }
  }

  static std::string join(const std::vector<Token>& t, size_t a, size_t b) {
    std::string s;
    for (size_t i = a; i < b && i < t.size(); ++i) {
      if (!s.empty() && t[i].kind != Token::Punct && t[i - 1].kind != Token::Punct) s += ' ';
      s += t[i].kind == Token::String ? "\"" + t[i].text + "\"" : t[i].text;
    }
    return clip(s, 120);
  }

  // --- calls
  bool interesting(const NameExpr& e) const {
    for (auto& p : e) if (p.kind != Piece::Unknown) return true;
    return false;
  }

  void add_call(const CallNode& c) {
    std::string callee_text(text(c.callee));
    std::string callee;
    if (lang_ == Lang::Python) {
      callee = callee_text;
      static const char* full[] = {"os.getenv", "os.environ.get", "environ.get", "os.environ.setdefault",
                                   "environ.setdefault", "os.environ.pop", "os.getenvb"};
      bool keep = false;
      for (auto* f : full) keep = keep || callee == f;
      if (!keep) callee = last_component(callee);
    } else {
      callee = last_component(callee_text);
    }
    bool member = false;
    if (lang_ != Lang::Python) {
      // calls through pointers: (*fp)(x) is fp; p->get(x) and (*p->get)(x) are the field get
      TSNode f = c.callee;
      for (int guard = 0; guard < 4 && (is(f, "parenthesized_expression") || is(f, "pointer_expression")); ++guard)
        f = is(f, "parenthesized_expression") ? ts_node_named_child(f, 0) : ts_node_child_by_field_name(f, "argument", 8);
      if (is(f, "field_expression")) {
        TSNode field = ts_node_child_by_field_name(f, "field", 5);
        if (!ts_node_is_null(field)) callee = last_component(text(field));
        member = true;
      } else if (is(f, "identifier")) {
        callee = std::string(text(f));
      } else if (is(f, "field_identifier")) {
        callee = std::string(text(f));  // a member initialiser: the member's constructor
        member = true;
      } else if (!class_name(f).empty()) {
        callee = class_name(f);  // Envar<float>(...), a construction T x(...) or T<int> x(...)
      }
    }
    if (callee.empty() || callee.size() > 80) return;
    uint32_t s = ts_node_start_byte(c.node), e = ts_node_end_byte(c.node);
    int def = enclosing(s, e);
    int ln = line(c.node);
    // a construction (T x(...), a member initialiser) reads env names only: its type is no
    // threading call
    bool construction = is(c.node, "declaration") || is(c.node, "field_initializer");
    if (!construction) threading_call(lang_ == Lang::Python ? callee_text : callee, ln, def);
    if (lang_ == Lang::Python) threading_call(callee_text, ln, def);
    Call call;
    call.callee = callee;
    call.member = member;
    call.line = ln;
    call.def = def;
    uint32_t n = ts_node_is_null(c.args) ? 0 : ts_node_named_child_count(c.args);
    bool keep = false;
    std::vector<TSNode> branches;
    size_t branch_arg = 0;
    for (uint32_t i = 0; i < n && i < 8; ++i) {
      TSNode a = ts_node_named_child(c.args, i);
      if (is(a, "comment")) continue;
      if (is(a, "keyword_argument")) {
        TSNode k = ts_node_child_by_field_name(a, "name", 4);
        if (!ts_node_is_null(k) && (text(k) == "default" || text(k) == "fallback"))
          call.default_hint = clip(text(ts_node_child_by_field_name(a, "value", 5)), 60);
        continue;
      }
      // c ? "A" : "B" (a if c else b): each branch is a name the call may read; the first
      // such argument makes one call per branch. A conditional whose branches hold no name
      // (a default `flag ? 1 : 0`) is an argument like any other.
      if (branches.empty()) {
        std::vector<TSNode> alts = alternatives(a);
        bool named = false;
        for (size_t k = 0; alts.size() > 1 && k < alts.size() && !named; ++k) {
          NameExpr pieces;
          eval(alts[k], def, pieces);
          named = interesting(pieces);
        }
        if (named) {
          branches = std::move(alts);
          branch_arg = call.args.size();
        }
      }
      Arg arg;
      eval(a, def, arg.expr);
      arg.text = clip(text(a), 120);
      keep = keep || interesting(arg.expr);
      call.args.push_back(std::move(arg));
    }
    if (!branches.empty()) {
      for (TSNode b : branches) {
        Call alt = call;
        alt.args[branch_arg].expr.clear();
        eval(b, def, alt.args[branch_arg].expr);
        alt.args[branch_arg].text = clip(text(b), 120);
        if (!interesting(alt.args[branch_arg].expr)) continue;
        context_hints(c.node, alt, def);
        out_.calls.push_back(std::move(alt));
      }
      return;
    }
    if (!keep) return;
    context_hints(c.node, call, def);
    out_.calls.push_back(std::move(call));
  }

  // The branches of a conditional expression, nested ones flattened (at most kMaxBranches);
  // the expression itself when it is none.
  static constexpr size_t kMaxBranches = 8;
  std::vector<TSNode> alternatives(TSNode a) const {
    std::vector<TSNode> out, todo{a};
    while (!todo.empty() && out.size() + todo.size() <= kMaxBranches) {
      TSNode n = todo.back();
      todo.pop_back();
      while (is(n, "parenthesized_expression") && ts_node_named_child_count(n) == 1) n = ts_node_named_child(n, 0);
      if (!is(n, "conditional_expression")) {
        out.push_back(n);
        continue;
      }
      if (lang_ == Lang::Python) {
        // a if c else b: the first and last named children
        uint32_t k = ts_node_named_child_count(n);
        if (k < 3) return {a};
        todo.push_back(ts_node_named_child(n, k - 1));
        todo.push_back(ts_node_named_child(n, 0));
      } else {
        TSNode yes = ts_node_child_by_field_name(n, "consequence", 11);
        TSNode no = ts_node_child_by_field_name(n, "alternative", 11);
        if (ts_node_is_null(yes) || ts_node_is_null(no)) return {a};
        todo.push_back(no);
        todo.push_back(yes);
      }
    }
    if (!todo.empty()) return {a};
    return out;
  }

  // Type and default from what surrounds a call: atoi(getenv(X)), p = getenv(X) ... atoi(p),
  // getenv(X) ? ... : 4, int(os.environ.get(X, 2)).
  void context_hints(TSNode node, Call& call, int def) {
    TSNode p = ts_node_parent(node);
    TSNode child = node;
    for (int g = 0; g < 4 && !ts_node_is_null(p) &&
                    (is(p, "parenthesized_expression") || is(p, "cast_expression"));
         ++g) {
      child = p;
      p = ts_node_parent(p);
    }
    if (ts_node_is_null(p)) return;
    if (is(p, "argument_list")) {
      TSNode outer = ts_node_parent(p);
      TSNode f = ts_node_child_by_field_name(outer, "function", 8);
      if (!ts_node_is_null(f))
        if (const char* ty = type_of_conversion(last_component(text(f)))) call.type_hint = ty;
    } else if (is(p, "conditional_expression")) {
      TSNode cond = ts_node_child_by_field_name(p, "condition", 9);
      TSNode alt = ts_node_child_by_field_name(p, "alternative", 11);
      if (ts_node_eq(cond, child) && !ts_node_is_null(alt)) {
        auto a = trim(text(alt));
        if (!a.empty() && a.size() < 40) call.default_hint = a;
      }
    } else if (is(p, "boolean_operator") && lang_ == Lang::Python) {
      TSNode right = ts_node_child_by_field_name(p, "right", 5);
      if (!ts_node_is_null(right) && !ts_node_eq(right, child)) call.default_hint = clip(text(right), 40);
    }
    std::string var;
    if (is(p, "init_declarator")) var = declared_name(ts_node_child_by_field_name(p, "declarator", 10));
    else if (is(p, "assignment_expression") || is(p, "assignment")) {
      TSNode l = ts_node_child_by_field_name(p, "left", 4);
      if (!ts_node_is_null(l) && (is(l, "identifier"))) var = std::string(text(l));
    }
    if (call.type_hint.empty()) {
      uint32_t from = ts_node_end_byte(node);
      uint32_t to = def >= 0 ? def_ranges_[def].end : std::min<uint32_t>(from + 600, src_.size());
      to = std::min<uint32_t>({to, from + 1500, static_cast<uint32_t>(src_.size())});
      std::string_view after = src_.substr(from, to - from);
      if (!var.empty()) call.type_hint = conversion_of(after, var);
      // wrappers that fill an out-parameter: readenv(p, "X") ... atoi(p)
      for (size_t i = 0; call.type_hint.empty() && i < call.args.size(); ++i)
        if (call.args[i].expr.size() == 1 && call.args[i].expr[0].kind == Piece::Ident)
          call.type_hint = conversion_of(after, call.args[i].expr[0].text);
    }
  }

  // The conversion applied to `var` in `s`, by the first conv(var ...) seen.
  static std::string conversion_of(std::string_view s, const std::string& var) {
    if (var.empty()) return {};
    size_t pos = 0;
    while ((pos = s.find(var, pos)) != std::string_view::npos) {
      size_t end = pos + var.size();
      bool whole = (pos == 0 || !is_ident_char(s[pos - 1])) && (end >= s.size() || !is_ident_char(s[end]));
      if (whole) {
        size_t k = pos;
        while (k > 0 && std::isspace(static_cast<unsigned char>(s[k - 1]))) --k;
        if (k > 0 && s[k - 1] == '(') {
          size_t fe = k - 1;
          while (fe > 0 && std::isspace(static_cast<unsigned char>(s[fe - 1]))) --fe;
          size_t fs = fe;
          while (fs > 0 && (is_ident_char(s[fs - 1]) || s[fs - 1] == ':')) --fs;
          if (const char* ty = type_of_conversion(last_component(s.substr(fs, fe - fs)))) return ty;
        }
      }
      pos = end;
    }
    return {};
  }

  void add_subscript(const PairNode& s) {
    auto v = text(s.a);
    if (v != "os.environ" && v != "environ") return;
    // os.environ[X] = ... and del os.environ[X] write; += reads first
    TSNode parent = ts_node_parent(s.node);
    if (is(parent, "assignment") && ts_node_eq(ts_node_child_by_field_name(parent, "left", 4), s.node)) return;
    if (is(parent, "delete_statement") || (is(parent, "expression_list") && is(ts_node_parent(parent), "delete_statement")))
      return;
    Call call;
    call.callee = "os.environ[]";
    call.line = line(s.node);
    call.def = enclosing(ts_node_start_byte(s.node), ts_node_end_byte(s.node));
    Arg arg;
    eval(s.b, call.def, arg.expr);
    arg.text = clip(text(s.b), 120);
    call.args.push_back(std::move(arg));
    context_hints(s.node, call, call.def);
    out_.calls.push_back(std::move(call));
  }

  void add_compare(TSNode n) {
    // "NAME" in os.environ
    if (ts_node_named_child_count(n) != 2) return;
    TSNode left = ts_node_named_child(n, 0), right = ts_node_named_child(n, 1);
    auto r = text(right);
    if (r != "os.environ" && r != "environ") return;
    auto whole = text(n);
    if (whole.find(" in ") == std::string_view::npos) return;
    Call call;
    call.callee = "os.environ[]";
    call.line = line(n);
    call.def = enclosing(ts_node_start_byte(n), ts_node_end_byte(n));
    call.type_hint = "bool";
    Arg arg;
    eval(left, call.def, arg.expr);
    arg.text = clip(text(left), 120);
    call.args.push_back(std::move(arg));
    out_.calls.push_back(std::move(call));
  }

  // --- threading
  void fact(const char* kind, std::string detail, int ln, int def) {
    ThreadingFact f;
    f.kind = kind;
    f.detail = std::move(detail);
    f.file = out_.file;
    f.line = ln;
    if (def >= 0) {
      f.function = out_.defs[def].name;
      f.init_time = out_.defs[def].init_time;
    }
    out_.threading.push_back(std::move(f));
  }

  void threading_call(const std::string& callee, int ln, int def) {
    static const std::unordered_map<std::string_view, const char*> kinds = {
        {"pthread_create", "thread_create"}, {"thrd_create", "thread_create"},
        {"CreateThread", "thread_create"}, {"_beginthreadex", "thread_create"},
        {"std::async", "thread_create"}, {"async", "thread_create"},
        {"threading.Thread", "thread_create"}, {"Thread", "thread_create"},
        {"ThreadPoolExecutor", "thread_create"}, {"ProcessPoolExecutor", "fork"},
        {"multiprocessing.Process", "fork"}, {"multiprocessing.Pool", "fork"},
        {"clone", "fork"}, {"clone3", "fork"}, {"fork", "fork"}, {"vfork", "fork"},
        {"posix_spawn", "fork"}, {"os.fork", "fork"},
        {"sched_setaffinity", "affinity"}, {"pthread_setaffinity_np", "affinity"},
        {"pthread_attr_setaffinity_np", "affinity"}, {"SetThreadAffinityMask", "affinity"},
        {"hwloc_set_cpubind", "affinity"}, {"os.sched_setaffinity", "affinity"},
        {"sched_yield", nullptr}};
    auto it = kinds.find(callee);
    if (it != kinds.end()) {
      if (it->second) {
        if (lang_ == Lang::Python && (callee == "async" || callee == "clone")) return;
        if (lang_ != Lang::Python && callee == "Thread") return;
        fact(it->second, callee, ln, def);
      }
      return;
    }
    if (lang_ == Lang::Python) return;
    auto starts = [&](const char* p, size_t n) {
      return callee.size() > n && callee.compare(0, n, p) == 0 && std::isupper(static_cast<unsigned char>(callee[n]));
    };
    if (starts("cuda", 4) || starts("cu", 2) || starts("nccl", 4) || starts("cublas", 6) ||
        starts("hip", 3) || starts("cudnn", 5))
      fact("gpu_call", callee, ln, def);
  }

  void add_qualified(TSNode n) {
    auto t = text(n);
    if (t != "std::thread" && t != "std::jthread" && t != "std::async") return;
    int ln = line(n);
    if (ln == last_qualified_line_) return;  // one fact per line
    last_qualified_line_ = ln;
    fact("thread_create", std::string(t), ln, enclosing(ts_node_start_byte(n), ts_node_end_byte(n)));
  }

  void add_pragma(const PairNode& p) {
    if (text(p.a) != "#pragma") return;
    std::string arg = trim(text(p.b));
    if (arg.rfind("omp", 0) != 0) return;
    std::string rest = trim(std::string_view(arg).substr(3));
    if (rest.rfind("parallel", 0) != 0 && rest.rfind("task", 0) != 0) return;
    fact("omp_parallel", "#pragma " + clip(arg, 80), line(p.node),
         enclosing(ts_node_start_byte(p.node), ts_node_end_byte(p.node)));
  }

  // A loop whose body does nothing but wait: empty, or only pause/yield/relax steps.
  void add_loop(const PairNode& l) {
    if (ts_node_is_null(l.b)) return;
    if (is(l.node, "for_statement")) {
      TSNode update = ts_node_child_by_field_name(l.node, "update", 6);
      if (!ts_node_is_null(update)) return;  // a counted loop, not a wait
    }
    std::string cond = ts_node_is_null(l.a) ? "" : trim(text(l.a));
    std::string body = trim(text(l.b));
    if (body.size() > 200) return;
    std::string waited;
    bool only_wait = true;
    std::string stmt;
    auto flush = [&] {
      std::string s = trim(stmt);
      stmt.clear();
      if (s.empty()) return;
      std::string low;
      for (char c : s) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (const char* w : {"sched_yield", "_mm_pause", "pause", "yield", "relax", "nop", "spin", "__builtin_ia32_pause"})
        if (low.find(w) != std::string::npos) { if (waited.empty()) waited = s.substr(0, 40); return; }
      only_wait = false;
    };
    for (char c : body) {
      if (c == '{' || c == '}' || c == ';') flush();
      else stmt += c;
    }
    flush();
    if (!only_wait) return;
    bool constant_cond = cond.empty() || cond == "(1)" || cond == "(true)" || cond == "1" || cond == "true";
    if (waited.empty() && constant_cond) return;          // for(;;); is not a poll
    if (waited.empty() && cond.find('(') == std::string::npos && cond.empty()) return;
    fact("spin_wait", waited.empty() ? "empty loop polling " + clip(cond, 60) : clip(waited, 40) + " loop",
         line(l.node), enclosing(ts_node_start_byte(l.node), ts_node_end_byte(l.node)));
  }

  // Functions that create threads at init time start the pool.
  void mark_pool_init() {
    std::vector<std::string> seen;
    size_t n = out_.threading.size();
    for (size_t i = 0; i < n; ++i) {
      auto f = out_.threading[i];
      if (f.kind != "thread_create" || !f.init_time || f.function.empty()) continue;
      if (std::find(seen.begin(), seen.end(), f.function) != seen.end()) continue;
      seen.push_back(f.function);
      f.kind = "pool_init";
      f.detail = f.function + " creates threads (" + f.detail + ")";
      out_.threading.push_back(f);
    }
  }

  std::string_view src_;
  Lang lang_;
  Diagnostics& diags_;
  FileCode out_;
  std::vector<CallNode> calls_;
  // per definition and variable: the calls that write a name into it, in source order
  std::map<std::pair<int, std::string>, std::vector<size_t>> buffer_writes_;
  std::vector<FuncNode> funcs_, def_nodes_;
  std::vector<PairNode> consts_, vars_, pragmas_, loops_, subscripts_, tables_, binds_, records_, ranges_;
  std::map<int, std::set<std::string>> local_tables_;  // per definition: tables declared inside it
  std::vector<TSNode> compares_, qualified_;
  std::vector<Range> def_ranges_;
  std::vector<std::unordered_map<std::string, NameExpr>> locals_;
  std::vector<std::unordered_map<std::string, uint32_t>> local_ends_;  // where each local's declaration ends
  // per definition: a variable that stands for the rows of a table (range-for, p = table)
  std::vector<std::unordered_map<std::string, std::string>> row_vars_;
  // per definition: the variables of range-for loops over a table (for (auto& n : names))
  std::vector<std::unordered_map<std::string, std::string>> range_rows_;
  int last_qualified_line_ = -1;
};

}  // namespace

namespace {

// The directive of a preprocessor line ("if", "ifdef", "else", ...) and what follows it; empty
// when the line is no directive.
std::string_view directive(std::string_view line, std::string_view& rest) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i >= line.size() || line[i] != '#') return {};
  ++i;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  size_t b = i;
  while (i < line.size() && std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
  rest = line.substr(i);
  return line.substr(b, i - b);
}

// `#if 0`, `#if (0)`, `#if false`: a condition no configuration makes true.
bool never_true(std::string_view rest) {
  std::string c;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest.compare(i, 2, "//") == 0 || rest.compare(i, 2, "/*") == 0) break;
    if (!std::isspace(static_cast<unsigned char>(rest[i])) && rest[i] != '(' && rest[i] != ')') c += rest[i];
  }
  return c == "0" || c == "false";
}

}  // namespace

std::string blank_never_compiled(std::string_view text) {
  std::string out(text);
  if (text.find("if") == std::string_view::npos) return out;
  // dead: inside an `#if 0` group at `depth` nested conditionals below it
  bool dead = false, in_comment = false;
  int depth = 0;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    std::string_view line(out.data() + pos, eol - pos), rest;
    // a directive inside a block comment is text
    std::string_view d = in_comment ? std::string_view{} : directive(line, rest);
    for (size_t i = 0; i + 1 < line.size(); ++i) {
      if (!in_comment && line[i] == '/' && line[i + 1] == '/') break;
      if (!in_comment && line[i] == '/' && line[i + 1] == '*') in_comment = true, ++i;
      else if (in_comment && line[i] == '*' && line[i + 1] == '/') in_comment = false, ++i;
    }
    bool blank = dead;
    if (!dead) {
      if (d == "if" && never_true(rest)) dead = true, depth = 0;
    } else if (d == "if" || d == "ifdef" || d == "ifndef") {
      ++depth;
    } else if (d == "endif") {
      if (depth == 0) dead = false, blank = false;
      else --depth;
    } else if ((d == "else" || d == "elif" || d == "elifdef" || d == "elifndef") && depth == 0) {
      dead = false;  // the other branch of `#if 0` is compiled (an #elif by its own condition)
      blank = false;
    }
    if (blank)
      for (size_t i = pos; i < eol; ++i) out[i] = ' ';
    pos = eol + 1;
  }
  return out;
}

std::string first_branch_inside_expressions(std::string_view text) {
  std::string out(text);
  // One entry per open conditional: whether it opened inside parentheses, and whether the
  // branch now running is one after the first (blanked).
  struct Group {
    bool in_expr;
    bool skipping;
  };
  std::vector<Group> groups;
  int depth = 0;
  size_t pos = 0;
  bool in_block_comment = false;
  while (pos < out.size()) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    std::string_view line(out.data() + pos, eol - pos), rest;
    std::string_view d = in_block_comment ? std::string_view{} : directive(line, rest);
    bool skipping = !groups.empty() && groups.back().in_expr && groups.back().skipping;
    bool blank = false;
    if (!d.empty()) {
      if (d == "if" || d == "ifdef" || d == "ifndef") {
        groups.push_back({depth > 0, false});
        blank = depth > 0 || skipping;
        if (skipping) groups.back().skipping = true;  // nested in a blanked branch: blanked whole
      } else if (d == "else" || d == "elif" || d == "elifdef" || d == "elifndef") {
        if (!groups.empty() && groups.back().in_expr) groups.back().skipping = true, blank = true;
      } else if (d == "endif") {
        if (!groups.empty()) {
          blank = groups.back().in_expr;
          groups.pop_back();
        }
      } else {
        blank = skipping;
      }
      // a directive's own parentheses (#define BEGIN( ...) count for nothing; nor do its
      // continuation lines
      while (eol < out.size() && eol > pos && out[eol - 1] == '\\') {
        if (blank) for (size_t i = pos; i < eol; ++i) out[i] = ' ';
        pos = eol + 1;
        eol = out.find('\n', pos);
        if (eol == std::string::npos) eol = out.size();
      }
    } else if (skipping) {
      blank = true;
    } else {
      // parentheses of the code, outside strings, characters and comments
      for (size_t i = pos; i < eol; ++i) {
        char ch = out[i];
        if (in_block_comment) {
          if (ch == '*' && i + 1 < eol && out[i + 1] == '/') in_block_comment = false, ++i;
          continue;
        }
        if (ch == '/' && i + 1 < eol && out[i + 1] == '/') break;
        if (ch == '/' && i + 1 < eol && out[i + 1] == '*') { in_block_comment = true, ++i; continue; }
        // 1'000'000: a digit separator, not a character literal
        if (ch == '\'' && i > pos && std::isxdigit(static_cast<unsigned char>(out[i - 1])) && i + 1 < eol &&
            std::isxdigit(static_cast<unsigned char>(out[i + 1])))
          continue;
        if (ch == '"' || ch == '\'') {
          for (++i; i < eol && out[i] != ch; ++i)
            if (out[i] == '\\') ++i;
          continue;
        }
        if (ch == '(') ++depth;
        else if (ch == ')' && depth > 0) --depth;
      }
      // a function's closing brace in the first column: whatever was left open was no
      // expression (a macro that opens a parenthesis, a misread literal)
      if (!line.empty() && line[0] == '}') depth = 0;
    }
    if (blank)
      for (size_t i = pos; i < eol; ++i) out[i] = ' ';
    pos = eol + 1;
  }
  return out;
}

FileCode scan_code(const std::string& rel, std::string_view text, Lang lang, Diagnostics& diags) {
  if (lang != Lang::Python && text.find("#") != std::string_view::npos) {
    // Code under `#if 0` is never compiled, under any configuration: what it reads is not read.
    // A conditional inside a call's arguments is read by its first branch: the grammar parses
    // directives between statements, not inside expressions.
    std::string live = first_branch_inside_expressions(blank_never_compiled(text));
    FileScanner scanner(rel, live, lang, diags);
    return scanner.run();
  }
  FileScanner scanner(rel, text, lang, diags);
  return scanner.run();
}

}  // namespace syspilot::extract::code
