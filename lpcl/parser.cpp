// The LPCL parser: recursive descent over the lexer's tokens, with recovery at statement
// boundaries so that one pass reports every error it can. Also parse_file (size and
// encoding checks) and Contract::find_control.
#include <sys/stat.h>

#include <cerrno>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "lpcl/lexer.h"
#include "lpcl/lpcl.h"
#include "lpcl/syntax.h"

namespace syspilot::lpcl {

const Control* Contract::find_control(const std::string& n) const {
  for (auto& c : controls)
    if (c.name == n) return &c;
  return nullptr;
}

namespace {

struct Abort {};       // unwinds one statement after an error was reported
struct StopParse {};   // too many errors

using K = Token::Kind;

class Parser {
 public:
  Parser(std::string_view text, const std::string& file, Diagnostics& diags)
      : file_(file), diags_(diags), lex_(text, file, diags, pending_), start_errors_(diags.error_count()) {
    cur_ = lex_.next();
  }

  std::optional<Expr> run_expression() {
    try {
      Expr e = parse_expr();
      if (cur_.kind != K::End) {
        error_here("expected the end of the expression, found " + describe(cur_), "trailing-input",
                   "write one expression");
        return std::nullopt;
      }
      if (diags_.error_count() > start_errors_) return std::nullopt;
      return e;
    } catch (const StopParse&) {
      return std::nullopt;
    } catch (const Abort&) {  // the error is reported; a contract would resynchronise here
      return std::nullopt;
    }
  }

  Document run() {
    Document doc;
    try {
      while (cur_.kind != K::End) {
        if (is_word("contract")) {
          doc.contracts.push_back(parse_contract());
        } else {
          std::string hint = "a file holds contracts: contract NAME \"VERSION\" { ... }";
          if (cur_.kind == K::Ident && edit_distance(cur_.text, "contract", 2) <= 2)
            hint = "did you mean 'contract'?";
          error_here("expected 'contract', found " + describe(cur_), "expected-contract", hint);
          advance();
          while (cur_.kind != K::End && !(is_word("contract") && cur_.first_on_line)) advance();
        }
      }
    } catch (const StopParse&) {
      diags_.note(loc(cur_), "too many errors; stopping here", "too-many-errors", "fix the errors above and run again");
      return doc;
    }
    doc.trailing_comments = take_comments();
    return doc;
  }

 private:
  // ---- token helpers ----
  SourceLoc loc(const Token& t) const { return {file_, t.line, t.col}; }
  bool is_word(std::string_view w) const { return cur_.kind == K::Ident && cur_.text == w; }
  bool is_op(std::string_view op) const { return cur_.kind == K::Op && cur_.text == op; }

  void advance() {
    if (cur_.kind == K::Invalid && !cur_.reported) report_invalid(cur_);
    prev_end_ = {file_, cur_.line, cur_.col + static_cast<int>(cur_.end - cur_.offset)};
    cur_ = lex_.next();
  }

  void report_invalid(Token& t) {
    t.reported = true;
    unsigned char c = static_cast<unsigned char>(t.text.empty() ? '?' : t.text[0]);
    std::string shown = c >= 0x80 ? t.text : std::string(1, static_cast<char>(c));
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", c);
      shown = buf;
    }
    count_error();
    diags_.error(loc(t), "unexpected character '" + shown + "'", "bad-character",
                 c >= 0x80 ? "non-ASCII text is allowed only inside strings and comments" : "");
  }

  void count_error() {
    if (diags_.error_count() - start_errors_ >= kMaxErrors) throw StopParse{};
  }

  [[noreturn]] void fail(const Token& at, const std::string& msg, const std::string& code = "syntax",
                         const std::string& hint = "") {
    if (at.kind == K::Invalid) {
      if (&at == &cur_ && !cur_.reported) report_invalid(cur_);
      throw Abort{};
    }
    count_error();
    diags_.error(loc(at), msg, code, hint);
    throw Abort{};
  }
  void error_here(const std::string& msg, const std::string& code, const std::string& hint = "") {
    count_error();
    diags_.error(loc(cur_), msg, code, hint);
  }

  void expect(K k, const std::string& context) {
    if (cur_.kind != k) fail(cur_, std::string("expected ") + describe(k) + " " + context + ", found " + describe(cur_), "expected-token");
    advance();
  }
  std::string expect_string(const std::string& context) {
    if (cur_.kind != K::String) fail(cur_, "expected a string " + context + ", found " + describe(cur_), "expected-token");
    std::string s = cur_.text;
    advance();
    return s;
  }
  std::string expect_ident(const std::string& context, bool allow_path = true) {
    if (cur_.kind != K::Ident) fail(cur_, "expected a name " + context + ", found " + describe(cur_), "expected-token");
    if (!allow_path && cur_.text.find('.') != std::string::npos)
      fail(cur_, "expected a plain name " + context + ", found dotted name '" + cur_.text + "'", "expected-token");
    std::string s = cur_.text;
    advance();
    return s;
  }

  // ---- comments ----
  std::vector<std::string> take_comments() {
    std::vector<std::string> out;
    for (auto& c : pending_) out.push_back(std::move(c.text));
    pending_.clear();
    return out;
  }
  void take_all_into(std::vector<std::string>& into) {
    for (auto& c : pending_) into.push_back(std::move(c.text));
    pending_.clear();
  }
  // Consumes the current token (a ';', '{' or '}') and gives the statement the comments
  // inside it and the one that ends its line.
  void finish_statement(std::vector<std::string>& into) {
    take_all_into(into);
    int line = cur_.line;
    advance();
    size_t n = 0;
    while (n < pending_.size() && pending_[n].line == line) ++n;
    for (size_t i = 0; i < n; ++i) into.push_back(std::move(pending_[i].text));
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<long>(n));
  }

  // Skips to the end of a broken statement: past ';', or before '}' / a statement keyword
  // that starts a line / end of file.
  void synchronize() {
    while (cur_.kind != K::End) {
      if (cur_.kind == K::Semi) {
        advance();
        return;
      }
      if (cur_.kind == K::RBrace) return;
      if (cur_.kind == K::Ident && cur_.first_on_line && (is_statement_keyword(cur_.text) || cur_.text == "contract")) return;
      advance();
    }
  }

  // ---- contract ----
  Contract parse_contract() {
    Contract c;
    c.comments = take_comments();
    c.loc = loc(cur_);
    advance();  // contract
    try {
      c.name = expect_ident("after 'contract'");
      if (cur_.kind != K::String)
        fail(cur_, "expected the version string after contract name '" + c.name + "', found " + describe(cur_),
             "expected-token", "write: contract " + c.name + " \"1.0\" { ... }");
      c.version = cur_.text;
      advance();
      if (cur_.kind != K::LBrace) fail(cur_, "expected '{' after contract version, found " + describe(cur_), "expected-token");
      finish_statement(c.comments);
    } catch (const Abort&) {
      while (cur_.kind != K::End && cur_.kind != K::LBrace && !(is_word("contract") && cur_.first_on_line)) advance();
      if (cur_.kind != K::LBrace) return c;
      finish_statement(c.comments);
    }
    Token open = cur_;
    bool have_doc = false;
    while (true) {
      if (cur_.kind == K::RBrace) {
        finish_statement(c.trailing_comments);
        return c;
      }
      if (cur_.kind == K::End) {
        count_error();
        diags_.error(c.loc, "contract '" + c.name + "' is not closed: missing '}' before end of file", "unclosed-contract",
                     "add '}' after the last statement");
        take_all_into(c.trailing_comments);
        return c;
      }
      if (is_word("contract") && cur_.first_on_line) {
        count_error();
        diags_.error(loc(cur_), "missing '}' to close contract '" + c.name + "' (opened at line " +
                                    std::to_string(c.loc.line) + ") before the next contract",
                     "unclosed-contract", "add '}' after the last statement of '" + c.name + "'");
        return c;
      }
      try {
        parse_statement(c, have_doc);
      } catch (const Abort&) {
        synchronize();
      }
    }
  }

  void parse_statement(Contract& c, bool& have_doc) {
    if (cur_.kind != K::Ident) {
      fail(cur_, "expected a statement, found " + describe(cur_), "expected-statement",
           "statements start with origin, doc, binds, control, demand, assume, behavior, provides or signal");
    }
    const std::string w = cur_.text;
    if (w == "control") return parse_control(c);
    if (w == "demand") return parse_demand(c);
    if (w == "assume") return parse_assume(c);
    if (w == "behavior") return parse_behavior(c);
    if (w == "provides") return parse_provides(c);
    if (w == "signal") return parse_signal(c);
    if (w == "binds") return parse_binds(c);
    if (w == "origin") return parse_origin(c);
    if (w == "doc") return parse_doc(c, have_doc);
    std::string best;
    size_t best_d = 3;
    for (const char* k : {"origin", "doc", "binds", "control", "demand", "assume", "behavior", "provides", "signal"}) {
      size_t d = edit_distance(w, k, 2);
      if (d < best_d) best_d = d, best = k;
    }
    fail(cur_, "unknown statement '" + w + "'", "unknown-statement",
         best.empty() ? "statements start with origin, doc, binds, control, demand, assume, behavior, provides or signal"
                      : "did you mean '" + best + "'?");
  }

  // ---- provenance ----
  Origin parse_origin_word(std::string& model) {
    if (cur_.kind != K::Ident) fail(cur_, "expected extracted, llm or manual after 'origin', found " + describe(cur_), "bad-origin");
    std::string w = cur_.text;
    Token at = cur_;
    if (w == "extracted") {
      advance();
      return Origin::Extracted;
    }
    if (w == "manual") {
      advance();
      return Origin::Manual;
    }
    if (w == "llm") {
      advance();
      if (cur_.kind == K::LParen) {
        advance();
        model = expect_string("naming the model in llm(\"...\")");
        expect(K::RParen, "after the model name");
      }
      return Origin::Llm;
    }
    fail(at, "unknown origin '" + w + "'", "bad-origin", "origin is extracted, llm(\"model\") or manual");
  }

  double parse_confidence() {
    advance();  // confidence
    bool neg = false;
    if (is_op("-")) {
      neg = true;
      advance();
    }
    if (cur_.kind != K::Int && cur_.kind != K::Float)
      fail(cur_, "expected a number after 'confidence', found " + describe(cur_), "expected-token", "write: confidence 0.9");
    double v = std::strtod(cur_.text.c_str(), nullptr);
    if (cur_.text.rfind("0x", 0) == 0 || cur_.text.rfind("0X", 0) == 0) v = static_cast<double>(std::strtoull(cur_.text.c_str(), nullptr, 16));
    if (!std::isfinite(v)) fail(cur_, "confidence '" + cur_.text + "' is not a finite number", "bad-confidence", "confidence is between 0 and 1");
    advance();
    return neg ? -v : v;
  }

  // A statement keyword starting a line: the previous statement lacks its ';'.
  // (`doc` and `origin` are clauses too, so they do not count.)
  bool at_next_statement() const {
    if (cur_.kind != K::Ident || !cur_.first_on_line) return false;
    const std::string& w = cur_.text;
    return w == "control" || w == "demand" || w == "assume" || w == "behavior" || w == "provides" || w == "signal" ||
           w == "binds" || w == "contract";
  }

  bool at_provenance() const {
    return cur_.kind == K::At || (cur_.kind == K::Ident && (cur_.text == "origin" || cur_.text == "confidence"));
  }

  // Parses one provenance clause if the current token starts one.
  bool parse_provenance_clause(Provenance& p) {
    if (cur_.kind == K::At) {
      advance();
      p.refs.push_back(expect_string("after '@' (a \"file:line\" reference)"));
      return true;
    }
    if (is_word("origin")) {
      Token at = cur_;
      advance();
      if (p.origin != Origin::Unspecified) fail(at, "'origin' given twice in one statement", "duplicate-clause");
      p.origin = parse_origin_word(p.model);
      return true;
    }
    if (is_word("confidence")) {
      Token at = cur_;
      if (p.confidence) fail(at, "'confidence' given twice in one statement", "duplicate-clause");
      p.confidence = parse_confidence();
      return true;
    }
    return false;
  }

  void parse_provenance(Provenance& p) {
    while (parse_provenance_clause(p)) {
    }
  }

  void end_statement(std::vector<std::string>& comments, const std::string& what) {
    if (cur_.kind != K::Semi) {
      if (cur_.first_on_line && cur_.kind != K::Invalid) {
        // The statement ended on an earlier line: point where the ';' is missing.
        count_error();
        diags_.error(prev_end_, "expected ';' after " + what + ", found " + describe(cur_) + " at line " + std::to_string(cur_.line), "expected-token",
                     "end each statement with ';'");
        throw Abort{};
      }
      fail(cur_, "expected ';' after " + what + ", found " + describe(cur_), "expected-token", "end each statement with ';'");
    }
    finish_statement(comments);
  }

  // ---- statements ----
  template <class T>
  T begin_statement() {
    T s;
    s.comments = take_comments();
    s.loc = loc(cur_);
    advance();  // the keyword
    return s;
  }
  template <class T>
  void finish(T& s, std::vector<T>& into, const std::string& what) {
    if constexpr (requires { s.prov; }) parse_provenance(s.prov);
    end_statement(s.comments, what);
    into.push_back(std::move(s));
  }
  // ITEM { "," ITEM } up to `close` (consumed); an empty list is allowed.
  template <class F>
  void list_until(K close, const std::string& where, F&& item) {
    while (cur_.kind != close) {
      item();
      if (cur_.kind == K::Comma) {
        advance();
        continue;
      }
      if (cur_.kind != close)
        fail(cur_, std::string("expected ',' or ") + describe(close) + " in " + where + ", found " + describe(cur_), "expected-token");
    }
    advance();
  }

  void parse_origin(Contract& c) {
    auto comments = take_comments();
    Token start = cur_;
    advance();
    std::vector<Provenance> items;
    while (true) {
      Provenance p;
      p.origin = parse_origin_word(p.model);
      while (cur_.kind == K::At || is_word("confidence")) parse_provenance_clause(p);
      items.push_back(std::move(p));
      if (cur_.kind != K::Comma) break;
      advance();
    }
    end_statement(comments, "origin list");
    for (auto& p : items) c.origins.push_back(std::move(p));
    // Several origin statements are formatted as one list.
    c.origin_comments.insert(c.origin_comments.end(), comments.begin(), comments.end());
  }

  void parse_doc(Contract& c, bool& have_doc) {
    auto comments = take_comments();
    Token start = cur_;
    advance();
    std::string text = expect_string("after 'doc'");
    end_statement(comments, "doc string");
    if (have_doc) {
      count_error();
      diags_.error(loc(start), "contract doc given twice", "duplicate-clause", "join the two texts into one doc string");
    }
    have_doc = true;
    c.doc = std::move(text);
    c.doc_comments.insert(c.doc_comments.end(), comments.begin(), comments.end());
  }

  void parse_binds(Contract& c) {
    auto b = begin_statement<Binding>();
    b.kind = expect_ident("after 'binds' (soname, symbol, header, module or executable)", false);
    b.pattern = expect_string("after 'binds " + b.kind + "'");
    finish(b, c.bindings, "binding");
  }

  void parse_control(Contract& c) {
    auto k = begin_statement<Control>();
    k.name = expect_ident("after 'control'");
    if (cur_.kind != K::Colon)
      fail(cur_, "expected ':' after control name '" + k.name + "', found " + describe(cur_), "expected-token",
           "write: control " + k.name + " : env int;");
    advance();
    // kind
    if (cur_.kind != K::Ident) fail(cur_, "expected env, api(...) or option(...) after ':', found " + describe(cur_), "expected-token");
    Token kind_tok = cur_;
    if (cur_.text == "env") {
      k.how.kind = ControlKind::Kind::Env;
      advance();
    } else if (cur_.text == "api") {
      k.how.kind = ControlKind::Kind::Api;
      advance();
      if (cur_.kind != K::LParen)
        fail(cur_, "expected '(' after 'api', found " + describe(cur_), "expected-token", "write the C parameters: api(int n)");
      Token open = cur_;
      std::string raw;
      if (!lex_.raw_until_close_paren(raw, open.line, open.col)) {
        count_error();
        throw Abort{};
      }
      k.how.params = normalize_params(raw);
      advance();  // the token after ')'
    } else if (cur_.text == "option") {
      k.how.kind = ControlKind::Kind::Option;
      advance();
      expect(K::LParen, "after 'option'");
      std::vector<std::string> args;
      list_until(K::RParen, "option(...)",
                 [&] { args.push_back(expect_string("in option(\"CARRIER\", \"ITEM_SEP\", \"KV_SEP\")")); });
      if (args.size() > 3)
        fail(kind_tok, "option(...) takes at most 3 strings: carrier, item separator, key/value separator", "bad-option");
      if (args.size() > 0) k.how.carrier = args[0];
      k.how.item_sep = args.size() > 1 ? args[1] : ",";
      k.how.kv_sep = args.size() > 2 ? args[2] : "=";
    } else {
      fail(cur_, "unknown control kind '" + cur_.text + "'", "bad-control-kind", "a control is env, api(PARAMS) or option(\"CARRIER\")");
    }
    // type (optional; int when omitted)
    if (cur_.kind == K::Ident) {
      const std::string& t = cur_.text;
      bool known = true;
      if (t == "int") k.type.kind = Type::Kind::Int;
      else if (t == "float") k.type.kind = Type::Kind::Float;
      else if (t == "bool") k.type.kind = Type::Kind::Bool;
      else if (t == "string") k.type.kind = Type::Kind::String;
      else if (t == "size") k.type.kind = Type::Kind::Size;
      else if (t == "duration") k.type.kind = Type::Kind::Duration;
      else if (t == "enum") k.type.kind = Type::Kind::Enum;
      else known = false;
      if (known) {
        advance();
        if (k.type.kind == Type::Kind::Enum) {
          if (cur_.kind != K::LBrace) fail(cur_, "expected '{' after 'enum', found " + describe(cur_), "expected-token", "write: enum{passive, active}");
          advance();
          list_until(K::RBrace, "enum{...}", [&] { k.type.enumerators.push_back(expect_ident("in enum{...}", false)); });
        }
      }
    }
    // clauses, in any order, each once (references may repeat)
    bool seen_in = false, seen_default = false, seen_fallback = false, seen_read = false, seen_sets = false, seen_doc = false;
    auto once = [&](bool& seen, const Token& at) {
      if (seen) fail(at, "'" + at.text + "' given twice in control '" + k.name + "'", "duplicate-clause");
      seen = true;
    };
    while (cur_.kind != K::Semi) {
      if (parse_provenance_clause(k.prov)) continue;
      if (cur_.kind != K::Ident || at_next_statement()) break;
      Token at = cur_;
      const std::string w = cur_.text;
      if (w == "in") {
        once(seen_in, at);
        advance();
        k.domain = parse_domain();
      } else if (w == "default") {
        once(seen_default, at);
        advance();
        k.default_value = parse_expr();
      } else if (w == "fallback_for") {
        once(seen_fallback, at);
        advance();
        k.fallback_for = expect_ident("after 'fallback_for'");
      } else if (w == "read_at") {
        once(seen_read, at);
        advance();
        Token r = cur_;
        std::string v = expect_ident("after 'read_at'", false);
        if (v == "init") k.read_at = ReadAt::Init;
        else if (v == "call") k.read_at = ReadAt::Call;
        else if (v == "region") k.read_at = ReadAt::Region;
        else fail(r, "unknown read_at value '" + v + "'", "bad-read-at", "read_at is init, call or region");
      } else if (w == "sets") {
        once(seen_sets, at);
        advance();
        k.sets.push_back(expect_ident("after 'sets' (a resource)"));
        while (cur_.kind == K::Comma) {
          advance();
          k.sets.push_back(expect_ident("after ',' in 'sets'"));
        }
      } else if (w == "doc") {
        once(seen_doc, at);
        advance();
        k.doc = expect_string("after 'doc'");
      } else {
        std::string best;
        size_t best_d = 3;
        for (const char* kw : {"in", "default", "fallback_for", "read_at", "sets", "doc", "origin", "confidence",
                               "int", "float", "bool", "string", "size", "duration", "enum"}) {
          size_t d = edit_distance(w, kw, 2);
          if (d < best_d && std::string_view(kw).size() > 2) best_d = d, best = kw;
        }
        fail(at, "unknown clause '" + w + "' in control '" + k.name + "'", "unknown-clause",
             best.empty() ? "control clauses: in, default, fallback_for, read_at, sets, doc, @, origin, confidence"
                          : "did you mean '" + best + "'?");
      }
    }
    finish(k, c.controls, "control '" + k.name + "'");
  }


  Domain parse_domain() {
    Domain d;
    if (cur_.kind == K::LBracket) {
      d.kind = Domain::Kind::Range;
      advance();
      d.lo = parse_expr();
      expect(K::Comma, "between the bounds of a range [lo, hi]");
      d.hi = parse_expr();
      expect(K::RBracket, "after the range [lo, hi]");
      return d;
    }
    if (cur_.kind == K::LBrace) {
      d.kind = Domain::Kind::Set;
      advance();
      list_until(K::RBrace, "a value set", [&] { d.values.push_back(parse_expr()); });
      return d;
    }
    fail(cur_, "expected '[' or '{' after 'in', found " + describe(cur_), "expected-token",
         "a domain is a range [1, ncpus] or a set {1, 2, 4}");
  }

  void parse_demand(Contract& c) {
    auto d = begin_statement<Demand>();
    d.resource = expect_ident("after 'demand' (a resource such as cpu.threads)");
    if (cur_.kind != K::Assign) fail(cur_, "expected '=' after 'demand " + d.resource + "', found " + describe(cur_), "expected-token",
                                     "write: demand " + d.resource + " = EXPR;");
    advance();
    d.value = parse_expr();
    if (is_word("when")) {
      advance();
      d.when = parse_expr();
    }
    finish(d, c.demands, "demand");
  }

  void parse_assume(Contract& c) {
    auto a = begin_statement<Assumption>();
    a.predicate = expect_ident("after 'assume' (a predicate such as exclusive)", false);
    if (cur_.kind != K::LParen)
      fail(cur_, "expected '(' after predicate '" + a.predicate + "', found " + describe(cur_), "expected-token",
           "write: assume " + a.predicate + "(cpu.cores);");
    advance();
    list_until(K::RParen, "'" + a.predicate + "(...)'", [&] { a.args.push_back(expect_ident("as an argument of '" + a.predicate + "'")); });
    finish(a, c.assumptions, "assumption");
  }

  void parse_behavior(Contract& c) {
    auto b = begin_statement<Behavior>();
    b.name = expect_ident("after 'behavior'", false);
    while (cur_.kind == K::Ident && !at_provenance() && !at_next_statement()) {
      std::string key = expect_ident("as a behavior parameter", false);
      b.params.emplace_back(key, parse_expr());
    }
    finish(b, c.behaviors, "behavior '" + b.name + "'");
  }

  void parse_provides(Contract& c) {
    auto p = begin_statement<Provides>();
    p.what = expect_ident("after 'provides' (region)", false);
    p.name = expect_ident("after 'provides " + p.what + "'", false);
    finish(p, c.provides, "provides");
  }

  void parse_signal(Contract& c) {
    auto s = begin_statement<Signal>();
    if (is_word("introspect")) {
      s.kind = Signal::Kind::Introspect;
      advance();
      if (!is_word("env")) fail(cur_, "expected 'env' after 'signal introspect', found " + describe(cur_), "expected-token",
                                "write: signal introspect env NAME = VALUE;");
      advance();
      s.metric = expect_ident("after 'signal introspect env'");
      expect(K::Assign, "after the introspection variable");
      s.value = parse_expr();
    } else {
      s.metric = expect_ident("after 'signal' (a metric such as os.threads)");
      Token r = cur_;
      s.relation = expect_ident("after metric '" + s.metric + "' (expect, rises_with, falls_with, above, below)", false);
      if (s.relation != "expect" && s.relation != "rises_with" && s.relation != "falls_with" && s.relation != "above" &&
          s.relation != "below")
        fail(r, "unknown signal relation '" + s.relation + "'", "bad-relation", "relations: expect, rises_with, falls_with, above, below");
      if (cur_.kind != K::Semi && !at_provenance()) s.value = parse_expr();
    }
    finish(s, c.signals, "signal");
  }

  // ---- expressions ----
  struct Parsed {
    Expr e;
    int depth = 1;
  };

  Expr parse_expr() { return parse_binary(1, 0).e; }

  void check_depth(int depth, const Token& at) {
    if (depth > kMaxExprDepth)
      fail(at, "expression nested too deeply (more than " + std::to_string(kMaxExprDepth) + " levels)", "too-deep",
           "split the expression; LPCL expressions are short formulas");
  }

  // `nest` counts syntactic nesting (parentheses, operands, unary operators, call
  // arguments), so recursion stops at kMaxExprDepth; `depth` is the tree's height, which
  // long left-associative chains grow without recursion.
  Parsed parse_binary(int min_prec, int nest) {
    check_depth(nest, cur_);
    Parsed lhs = parse_unary(nest);
    while (cur_.kind == K::Op) {
      int p = precedence(cur_.text);
      if (p == 0 || p < min_prec) break;
      Token op = cur_;
      advance();
      Parsed rhs = parse_binary(right_assoc(op.text) ? p : p + 1, nest + 1);
      Parsed out;
      out.e.kind = Expr::Kind::Binary;
      out.e.op = op.text;
      out.e.loc = loc(op);
      out.depth = 1 + std::max(lhs.depth, rhs.depth);
      check_depth(out.depth, op);
      out.e.args.reserve(2);
      out.e.args.push_back(std::move(lhs.e));
      out.e.args.push_back(std::move(rhs.e));
      lhs = std::move(out);
    }
    return lhs;
  }

  Parsed parse_unary(int nest) {
    check_depth(nest, cur_);
    if (is_op("-") || is_op("!")) {
      Token op = cur_;
      advance();
      Parsed inner = parse_unary(nest + 1);
      Parsed out;
      out.e.kind = Expr::Kind::Unary;
      out.e.op = op.text;
      out.e.loc = loc(op);
      out.depth = inner.depth + 1;
      check_depth(out.depth, op);
      out.e.args.push_back(std::move(inner.e));
      return out;
    }
    return parse_primary(nest);
  }

  Parsed parse_primary(int nest) {
    Parsed out;
    out.e.loc = loc(cur_);
    switch (cur_.kind) {
      case K::Int: out.e.kind = Expr::Kind::Int; break;
      case K::Float: out.e.kind = Expr::Kind::Float; break;
      case K::Size: out.e.kind = Expr::Kind::Size; break;
      case K::Duration: out.e.kind = Expr::Kind::Duration; break;
      case K::String: out.e.kind = Expr::Kind::String; break;
      case K::Ident:
        out.e.kind = (cur_.text == "true" || cur_.text == "false") ? Expr::Kind::Bool : Expr::Kind::Name;
        break;
      case K::LParen: {
        advance();
        Parsed inner = parse_binary(1, nest + 1);
        expect(K::RParen, "to close '('");
        return inner;
      }
      default:
        fail(cur_, "expected an expression, found " + describe(cur_), "expected-expression");
    }
    out.e.text = cur_.text;
    advance();
    if (out.e.kind == Expr::Kind::Name && cur_.kind == K::LParen) {
      out.e.kind = Expr::Kind::Call;
      advance();
      list_until(K::RParen, "call to '" + out.e.text + "'", [&] {
        Parsed a = parse_binary(1, nest + 1);
        out.depth = std::max(out.depth, a.depth + 1);
        check_depth(out.depth, cur_);
        out.e.args.push_back(std::move(a.e));
      });
    }
    return out;
  }

  const std::string& file_;
  Diagnostics& diags_;
  std::vector<Comment> pending_;
  Lexer lex_;
  Token cur_;
  SourceLoc prev_end_;  // just past the previous token: where a missing ';' belongs
  size_t start_errors_ = 0;
};

// NUL bytes and invalid UTF-8 are reported with their location before parsing.
bool check_encoding(std::string_view text, const std::string& file, Diagnostics& diags) {
  int line = 1;
  size_t line_start = 0;
  size_t reported = 0;
  auto report = [&](size_t at, const std::string& msg, const char* code, const char* hint) {
    if (reported++ < 10) diags.error({file, line, static_cast<int>(at - line_start) + 1}, msg, code, hint);
  };
  size_t i = 0, n = text.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\n') {
        ++line;
        line_start = i + 1;
      } else if (c == 0) {
        report(i, "NUL byte in input", "nul-byte", "LPCL files are UTF-8 text; is this a binary file?");
      }
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned cp = 0;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (ok && ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))))
      ok = false;
    if (!ok) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", c);
      report(i, std::string("invalid UTF-8 byte ") + buf, "invalid-utf8", "save the file as UTF-8");
      ++i;
      continue;
    }
    i += len;
  }
  if (reported > 10)
    diags.note({file, 0, 0}, std::to_string(reported - 10) + " more encoding errors not shown", "invalid-utf8");
  return reported == 0;
}

}  // namespace

Document parse(std::string_view text, const std::string& file, Diagnostics& diags) {
  if (!check_encoding(text, file, diags)) return {};
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // byte order mark
  Parser p(text, file, diags);
  return p.run();
}

std::optional<Expr> parse_expression(std::string_view text, const std::string& file, Diagnostics& diags) {
  if (!check_encoding(text, file, diags)) return std::nullopt;
  Parser p(text, file, diags);
  return p.run_expression();
}

bool read_bounded(std::istream& in, size_t limit, std::string& out) {
  out.clear();
  std::vector<char> buf(64 * 1024);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(std::min(buf.size(), limit + 1 - out.size())));
    out.append(buf.data(), static_cast<size_t>(in.gcount()));
    if (out.size() > limit) {
      out.resize(limit);
      return false;
    }
  }
  return true;
}

Document parse_file(const std::string& path, Diagnostics& diags) {
  std::string name = path == "-" ? "<stdin>" : path;
  std::string text;
  if (path == "-") {
    if (!read_bounded(std::cin, kMaxFileBytes, text)) {
      diags.error({name, 0, 0}, "input is larger than 64 MiB; LPCL files are limited to 64 MiB", "file-too-large",
                  "split it into one file per contract");
      return {};
    }
  } else {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      diags.error({name, 0, 0}, "cannot read '" + path + "': " + std::strerror(errno), "io-error", "check the path");
      return {};
    }
    if (S_ISDIR(st.st_mode)) {
      diags.error({name, 0, 0}, "'" + path + "' is a directory, not an LPCL file", "io-error", "name a .lpcl file");
      return {};
    }
    if (S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) > kMaxFileBytes) {
      diags.error({name, 0, 0}, "file is " + std::to_string(st.st_size) + " bytes; LPCL files are limited to 64 MiB",
                  "file-too-large", "split it into one file per contract");
      return {};
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      diags.error({name, 0, 0}, "cannot read '" + path + "': " + std::strerror(errno), "io-error", "check the path and its permissions");
      return {};
    }
    // A FIFO or a device has no size to check beforehand: the read stops at the limit.
    if (!read_bounded(in, kMaxFileBytes, text)) {
      diags.error({name, 0, 0}, "file is larger than 64 MiB", "file-too-large", "split it into one file per contract");
      return {};
    }
  }
  return parse(text, name, diags);
}

}  // namespace syspilot::lpcl
