// The lossless JSON form of contracts (schema in docs/lpcl.md): every field explicit,
// expressions as structured trees plus their canonical text. from_json validates what it
// reads so that the formatted result parses back to the same contract.
#include <cmath>
#include <nlohmann/json.hpp>

#include "lpcl/format_internal.h"
#include "lpcl/lexer.h"
#include "lpcl/lpcl.h"
#include "lpcl/syntax.h"

namespace syspilot::lpcl {

using nlohmann::json;

namespace {

json loc_json(const SourceLoc& l) { return json{{"line", l.line}, {"col", l.col}}; }

json node_json(const Expr& e) {
  json j;
  j["kind"] = to_string(e.kind);
  switch (e.kind) {
    case Expr::Kind::Unary:
    case Expr::Kind::Binary:
      j["op"] = e.op;
      break;
    default:
      j["text"] = e.text;
  }
  if (auto v = literal_value(e); v && e.kind != Expr::Kind::Bool) j["value"] = *v;
  if (e.kind == Expr::Kind::Bool) j["value"] = e.text == "true";
  if (e.kind == Expr::Kind::Unary || e.kind == Expr::Kind::Binary || e.kind == Expr::Kind::Call) {
    json args = json::array();
    for (auto& a : e.args) args.push_back(node_json(a));
    j["args"] = std::move(args);
  }
  return j;
}

json expr_json(const Expr& e) { return json{{"text", format(e)}, {"ast", node_json(e)}}; }
json opt_expr_json(const std::optional<Expr>& e) { return e ? expr_json(*e) : json(nullptr); }

json prov_json(const Provenance& p) {
  return json{{"refs", p.refs},
              {"origin", to_string(p.origin)},
              {"model", p.model},
              {"confidence", p.confidence ? json(*p.confidence) : json(nullptr)}};
}

template <class T>
void common(json& j, const T& s) {
  j["provenance"] = prov_json(s.prov);
  j["loc"] = loc_json(s.loc);
  j["comments"] = s.comments;
}

}  // namespace

json to_json(const Contract& c) {
  json j;
  j["name"] = c.name;
  j["version"] = c.version;
  j["doc"] = c.doc;
  j["origins"] = json::array();
  for (auto& p : c.origins) j["origins"].push_back(prov_json(p));
  j["bindings"] = json::array();
  for (auto& b : c.bindings)
    j["bindings"].push_back(json{{"kind", b.kind}, {"pattern", b.pattern}, {"loc", loc_json(b.loc)}, {"comments", b.comments}});
  j["controls"] = json::array();
  for (auto& k : c.controls) {
    json o;
    o["name"] = k.name;
    o["kind"] = to_string(k.how.kind);
    o["params"] = k.how.params;
    o["carrier"] = k.how.carrier;
    o["item_sep"] = k.how.item_sep;
    o["kv_sep"] = k.how.kv_sep;
    o["type"] = to_string(k.type.kind);
    o["enumerators"] = k.type.enumerators;
    json d;
    d["kind"] = k.domain.kind == Domain::Kind::None ? "none" : k.domain.kind == Domain::Kind::Range ? "range" : "set";
    d["text"] = domain_text(k.domain);
    d["lo"] = opt_expr_json(k.domain.lo);
    d["hi"] = opt_expr_json(k.domain.hi);
    d["values"] = json::array();
    for (auto& v : k.domain.values) d["values"].push_back(expr_json(v));
    o["domain"] = std::move(d);
    o["default"] = opt_expr_json(k.default_value);
    o["fallback_for"] = k.fallback_for;
    o["read_at"] = to_string(k.read_at);
    o["sets"] = k.sets;
    o["doc"] = k.doc;
    common(o, k);
    j["controls"].push_back(std::move(o));
  }
  j["demands"] = json::array();
  for (auto& d : c.demands) {
    json o{{"resource", d.resource}, {"value", expr_json(d.value)}, {"when", opt_expr_json(d.when)}};
    common(o, d);
    j["demands"].push_back(std::move(o));
  }
  j["assumptions"] = json::array();
  for (auto& a : c.assumptions) {
    json o{{"predicate", a.predicate}, {"args", a.args}};
    common(o, a);
    j["assumptions"].push_back(std::move(o));
  }
  j["behaviors"] = json::array();
  for (auto& b : c.behaviors) {
    json params = json::array();
    for (auto& [k, v] : b.params) params.push_back(json{{"key", k}, {"value", expr_json(v)}});
    json o{{"name", b.name}, {"params", std::move(params)}};
    common(o, b);
    j["behaviors"].push_back(std::move(o));
  }
  j["provides"] = json::array();
  for (auto& p : c.provides) {
    json o{{"what", p.what}, {"name", p.name}};
    common(o, p);
    j["provides"].push_back(std::move(o));
  }
  j["signals"] = json::array();
  for (auto& s : c.signals) {
    json o{{"kind", s.kind == Signal::Kind::Metric ? "metric" : "introspect"},
           {"metric", s.metric},
           {"relation", s.relation},
           {"value", opt_expr_json(s.value)}};
    common(o, s);
    j["signals"].push_back(std::move(o));
  }
  j["loc"] = loc_json(c.loc);
  j["comments"] = c.comments;
  j["trailing_comments"] = c.trailing_comments;
  j["origin_comments"] = c.origin_comments;
  j["doc_comments"] = c.doc_comments;
  return j;
}

json to_json(const Document& doc) {
  json j;
  j["lpcl"] = 1;
  j["contracts"] = json::array();
  for (auto& c : doc.contracts) j["contracts"].push_back(to_json(c));
  j["trailing_comments"] = doc.trailing_comments;
  return j;
}

namespace {

// Reads the JSON form, reporting each problem with its JSON path ("contracts[0].controls[2].name").
class Reader {
 public:
  Reader(const std::string& file, Diagnostics& diags) : file_(file), diags_(diags) {}

  Document document(const json& j) {
    Document doc;
    if (!j.is_object()) {
      err("", "expected a JSON object with \"contracts\" (or a single contract object)");
      return doc;
    }
    // The version of the JSON form: this reader knows 1 (to_json writes it); a document that
    // names another was written by a reader this one cannot vouch for.
    if (const json* v = field(j, "lpcl"); v && !(v->is_number_integer() && v->get<long long>() == 1))
      err("lpcl", "this is LPCL JSON version " + v->dump().substr(0, 40) + "; this reader knows version 1");
    if (j.contains("contracts")) {
      const json& cs = j["contracts"];
      if (!cs.is_array()) {
        err("contracts", "expected an array");
      } else {
        for (size_t i = 0; i < cs.size(); ++i) doc.contracts.push_back(contract(cs[i], "contracts[" + std::to_string(i) + "]"));
      }
      doc.trailing_comments = comments(j, "trailing_comments", "");
    } else if (j.contains("name")) {
      doc.contracts.push_back(contract(j, ""));
    } else {
      err("", "expected \"contracts\" (a document) or \"name\" (a single contract)");
    }
    return doc;
  }

 private:
  static std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

  void err(const std::string& path, const std::string& msg) {
    diags_.error({file_, 0, 0}, (path.empty() ? "" : path + ": ") + msg, "bad-json",
                 "see the JSON form in docs/lpcl.md; `syspilot to-json` shows an example");
  }

  const json* field(const json& o, const char* key) {
    if (!o.is_object()) return nullptr;
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::string str(const json& o, const char* key, const std::string& path, bool check_text = true) {
    const json* f = field(o, key);
    if (!f) return {};
    if (!f->is_string()) {
      err(join(path, key), "expected a string");
      return {};
    }
    std::string s = f->get<std::string>();
    if (check_text) text_ok(s, join(path, key));
    return s;
  }

  // Strings are written with \n and \t escapes; other control characters cannot be.
  void text_ok(const std::string& s, const std::string& path) {
    for (unsigned char c : s)
      if (c < 0x20 && c != '\n' && c != '\t') {
        err(path, "control character in string");
        return;
      }
  }

  std::string name(const json& o, const char* key, const std::string& path, bool dotted, bool required = true) {
    std::string s = str(o, key, path, false);
    if (s.empty()) {
      if (required) err(join(path, key), "missing or empty name");
      return s;
    }
    if (dotted ? !is_name_path(s) : !is_identifier(s))
      err(join(path, key), "'" + s.substr(0, 60) + "' is not a valid " + (dotted ? "name (letters, digits, '_', '.')" : "identifier"));
    return s;
  }

  std::vector<std::string> strings(const json& o, const char* key, const std::string& path) {
    std::vector<std::string> out;
    const json* f = field(o, key);
    if (!f) return out;
    if (!f->is_array()) {
      err(join(path, key), "expected an array of strings");
      return out;
    }
    for (size_t i = 0; i < f->size(); ++i) {
      if (!(*f)[i].is_string()) {
        err(join(path, key) + "[" + std::to_string(i) + "]", "expected a string");
        continue;
      }
      out.push_back((*f)[i].get<std::string>());
    }
    return out;
  }

  std::vector<std::string> names(const json& o, const char* key, const std::string& path, bool dotted) {
    auto v = strings(o, key, path);
    for (size_t i = 0; i < v.size(); ++i)
      if (dotted ? !is_name_path(v[i]) : !is_identifier(v[i]))
        err(join(path, key) + "[" + std::to_string(i) + "]", "'" + v[i].substr(0, 60) + "' is not a valid name");
    return v;
  }

  std::vector<std::string> comments(const json& o, const char* key, const std::string& path) {
    auto v = strings(o, key, path);
    for (size_t i = 0; i < v.size(); ++i) {
      auto& s = v[i];
      while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
      // The lexer keeps any byte of a comment line except the line end (NUL is an encoding error).
      for (char c : s)
        if (c == '\n' || c == '\0') {
          err(join(path, key) + "[" + std::to_string(i) + "]", "a comment is one line without NUL bytes");
          break;
        }
    }
    return v;
  }

  SourceLoc location(const json& o, const std::string& path) {
    SourceLoc l{file_, 0, 0};
    const json* f = field(o, "loc");
    if (!f) return l;
    if (!f->is_object()) {
      err(join(path, "loc"), "expected {\"line\": N, \"col\": N}");
      return l;
    }
    auto num = [&](const char* k) {
      const json* v = field(*f, k);
      if (!v) return 0;
      if (!v->is_number_integer() || v->get<long long>() < 0 || v->get<long long>() > 1'000'000'000) {
        err(join(path, std::string("loc.") + k), "expected a non-negative integer");
        return 0;
      }
      return static_cast<int>(v->get<long long>());
    };
    l.line = num("line");
    l.col = num("col");
    return l;
  }

  Origin origin(const json& o, const std::string& path, bool required) {
    std::string s = str(o, "origin", path);
    if (s.empty()) {
      if (required) err(join(path, "origin"), "expected extracted, llm or manual");
      return Origin::Unspecified;
    }
    if (s == "extracted") return Origin::Extracted;
    if (s == "llm") return Origin::Llm;
    if (s == "manual") return Origin::Manual;
    err(join(path, "origin"), "unknown origin '" + s.substr(0, 40) + "' (extracted, llm, manual or empty)");
    return Origin::Unspecified;
  }

  Provenance provenance(const json& o, const std::string& path, bool required_origin) {
    Provenance p;
    if (!o.is_object()) {
      err(path, "expected an object");
      return p;
    }
    p.refs = strings(o, "refs", path);
    for (auto& r : p.refs) text_ok(r, join(path, "refs"));
    p.origin = origin(o, path, required_origin);
    p.model = str(o, "model", path);
    if (!p.model.empty() && p.origin != Origin::Llm) err(join(path, "model"), "a model is given only with origin llm");
    if (const json* f = field(o, "confidence")) {
      if (!f->is_number() || !std::isfinite(f->get<double>())) err(join(path, "confidence"), "expected a number");
      else p.confidence = f->get<double>();
    }
    return p;
  }

  Provenance stmt_provenance(const json& o, const std::string& path) {
    const json* f = field(o, "provenance");
    if (!f) return {};
    return provenance(*f, join(path, "provenance"), false);
  }

  // Expressions: {"text": "...", "ast": {...}}; with only "text", the text is parsed.
  std::optional<Expr> expr(const json& o, const char* key, const std::string& path, bool required) {
    const json* f = field(o, key);
    std::string p = join(path, key);
    if (!f) {
      if (required) err(p, "missing expression");
      return std::nullopt;
    }
    if (f->is_object() && f->contains("ast")) return node((*f)["ast"], p + ".ast", 0);
    if (f->is_object() && f->contains("text") && (*f)["text"].is_string()) return parse_text((*f)["text"].get<std::string>(), p);
    if (f->is_string()) return parse_text(f->get<std::string>(), p);
    err(p, "expected {\"text\": \"...\", \"ast\": {...}}");
    return std::nullopt;
  }

  std::optional<Expr> parse_text(const std::string& text, const std::string& path) {
    // Reuse the parser on a one-statement contract so the text follows LPCL exactly.
    Diagnostics d;
    Document doc = parse("contract x \"0\" { demand x = " + text + "; }", "<json>", d);
    bool one = doc.contracts.size() == 1 && doc.contracts[0].demands.size() == 1 && doc.contracts[0].controls.empty() &&
               doc.contracts[0].comments.empty() && doc.contracts[0].trailing_comments.empty() && doc.trailing_comments.empty();
    if (one) {
      auto& d0 = doc.contracts[0].demands[0];
      one = !d0.when && d0.prov.refs.empty() && d0.prov.origin == Origin::Unspecified && !d0.prov.confidence && d0.comments.empty();
    }
    if (d.has_errors() || !one) {
      err(path, "expression text '" + text.substr(0, 60) + "' does not parse");
      return std::nullopt;
    }
    Expr e = std::move(doc.contracts[0].demands[0].value);
    relocate(e);
    return e;
  }

  void relocate(Expr& e) {
    e.loc = {file_, 0, 0};
    for (auto& a : e.args) relocate(a);
  }

  std::optional<Expr> node(const json& j, const std::string& path, int depth) {
    if (depth > kMaxExprDepth) {
      err(path, "expression nested too deeply (more than " + std::to_string(kMaxExprDepth) + " levels)");
      return std::nullopt;
    }
    if (!j.is_object()) {
      err(path, "expected an expression object");
      return std::nullopt;
    }
    Expr e;
    e.loc = {file_, 0, 0};
    std::string kind = str(j, "kind", path);
    static const std::pair<const char*, Expr::Kind> kinds[] = {
        {"int", Expr::Kind::Int},       {"float", Expr::Kind::Float},   {"size", Expr::Kind::Size},
        {"duration", Expr::Kind::Duration}, {"string", Expr::Kind::String}, {"bool", Expr::Kind::Bool},
        {"name", Expr::Kind::Name},     {"unary", Expr::Kind::Unary},   {"binary", Expr::Kind::Binary},
        {"call", Expr::Kind::Call}};
    bool found = false;
    for (auto& [n, k] : kinds)
      if (kind == n) e.kind = k, found = true;
    if (!found) {
      err(join(path, "kind"), "unknown expression kind '" + kind.substr(0, 40) + "'");
      return std::nullopt;
    }
    size_t nargs = 0;
    bool ok = true;
    switch (e.kind) {
      case Expr::Kind::Unary:
        e.op = str(j, "op", path);
        if (e.op != "-" && e.op != "!") ok = false, err(join(path, "op"), "unary operator is '-' or '!'");
        nargs = 1;
        break;
      case Expr::Kind::Binary:
        e.op = str(j, "op", path);
        if (precedence(e.op) == 0) ok = false, err(join(path, "op"), "unknown binary operator '" + e.op.substr(0, 10) + "'");
        nargs = 2;
        break;
      case Expr::Kind::Call:
        e.text = name(j, "text", path, true);
        break;
      case Expr::Kind::Name:
        e.text = name(j, "text", path, true);
        if (e.text == "true" || e.text == "false") ok = false, err(join(path, "text"), "'true'/'false' are bool literals, not names");
        break;
      case Expr::Kind::String:
        e.text = str(j, "text", path);
        break;
      case Expr::Kind::Bool:
        e.text = str(j, "text", path);
        if (e.text != "true" && e.text != "false") ok = false, err(join(path, "text"), "a bool is true or false");
        break;
      default: {
        e.text = str(j, "text", path);
        if (!literal_ok(e)) ok = false, err(join(path, "text"), "'" + e.text.substr(0, 40) + "' is not a valid " + to_string(e.kind) + " literal");
      }
    }
    if (e.kind == Expr::Kind::Unary || e.kind == Expr::Kind::Binary || e.kind == Expr::Kind::Call) {
      const json* args = field(j, "args");
      if (!args || !args->is_array()) {
        err(join(path, "args"), "expected an array of expressions");
        return std::nullopt;
      }
      if (nargs && args->size() != nargs) {
        err(join(path, "args"), "expected " + std::to_string(nargs) + " operand(s)");
        return std::nullopt;
      }
      for (size_t i = 0; i < args->size(); ++i) {
        auto a = node((*args)[i], join(path, "args") + "[" + std::to_string(i) + "]", depth + 1);
        if (!a) return std::nullopt;
        e.args.push_back(std::move(*a));
      }
    }
    if (!ok) return std::nullopt;
    return e;
  }

  // A literal's text must lex back as one token of its kind.
  bool literal_ok(const Expr& e) {
    Diagnostics d;
    std::vector<Comment> cs;
    Lexer lx(e.text, "<json>", d, cs);
    Token t = lx.next();
    Token end = lx.next();
    if (d.has_errors() || end.kind != Token::Kind::End || !cs.empty() || t.offset != 0) return false;
    switch (e.kind) {
      case Expr::Kind::Int: return t.kind == Token::Kind::Int;
      case Expr::Kind::Float: return t.kind == Token::Kind::Float;
      case Expr::Kind::Size: return t.kind == Token::Kind::Size;
      case Expr::Kind::Duration: return t.kind == Token::Kind::Duration;
      default: return false;
    }
  }

  // Reads an array of statements: `fill` reads the statement's own fields, this the shared ones.
  template <class T, class F>
  void statements(const json& j, const char* key, const std::string& path, std::vector<T>& into, F&& fill) {
    each(j, key, path, [&](const json& o, const std::string& p) {
      T s;
      fill(s, o, p);
      if constexpr (requires { s.prov; }) s.prov = stmt_provenance(o, p);
      s.loc = location(o, p);
      s.comments = comments(o, "comments", p);
      into.push_back(std::move(s));
    });
  }

  Contract contract(const json& j, const std::string& path) {
    Contract c;
    if (!j.is_object()) {
      err(path, "expected a contract object");
      return c;
    }
    c.name = str(j, "name", path);
    if (c.name.empty()) err(join(path, "name"), "a contract needs a name (`contract NAME \"VERSION\" { ... }`)");
    else if (!is_name_path(c.name)) err(join(path, "name"), "'" + c.name.substr(0, 60) + "' is not a valid contract name");
    c.version = str(j, "version", path);
    c.doc = str(j, "doc", path);
    c.loc = location(j, path);
    c.comments = comments(j, "comments", path);
    c.trailing_comments = comments(j, "trailing_comments", path);
    c.origin_comments = comments(j, "origin_comments", path);
    c.doc_comments = comments(j, "doc_comments", path);
    each(j, "origins", path, [&](const json& o, const std::string& p) { c.origins.push_back(provenance(o, p, true)); });
    statements(j, "bindings", path, c.bindings, [&](Binding& b, const json& o, const std::string& p) {
      b.kind = name(o, "kind", p, false);
      b.pattern = str(o, "pattern", p);
    });
    statements(j, "controls", path, c.controls, [&](Control& k, const json& o, const std::string& p) { control(k, o, p); });
    statements(j, "demands", path, c.demands, [&](Demand& d, const json& o, const std::string& p) {
      d.resource = name(o, "resource", p, true);
      if (auto e = expr(o, "value", p, true)) d.value = std::move(*e);
      d.when = expr(o, "when", p, false);
    });
    statements(j, "assumptions", path, c.assumptions, [&](Assumption& a, const json& o, const std::string& p) {
      a.predicate = name(o, "predicate", p, false);
      a.args = names(o, "args", p, true);
    });
    statements(j, "behaviors", path, c.behaviors, [&](Behavior& b, const json& o, const std::string& p) {
      b.name = name(o, "name", p, false);
      each(o, "params", p, [&](const json& kv, const std::string& pp) {
        std::string key = name(kv, "key", pp, false);
        if (key == "origin" || key == "confidence") err(join(pp, "key"), "'" + key + "' is reserved for provenance");
        if (auto e = expr(kv, "value", pp, true)) b.params.emplace_back(key, std::move(*e));
      });
    });
    statements(j, "provides", path, c.provides, [&](Provides& pr, const json& o, const std::string& p) {
      pr.what = name(o, "what", p, false);
      pr.name = name(o, "name", p, false);
    });
    statements(j, "signals", path, c.signals, [&](Signal& s, const json& o, const std::string& p) {
      std::string kind = str(o, "kind", p);
      if (kind == "introspect") s.kind = Signal::Kind::Introspect;
      else if (kind != "metric" && !kind.empty()) err(join(p, "kind"), "a signal is \"metric\" or \"introspect\"");
      s.metric = name(o, "metric", p, true);
      s.relation = str(o, "relation", p);
      s.value = expr(o, "value", p, s.kind == Signal::Kind::Introspect);
      if (s.kind == Signal::Kind::Metric) {
        static const char* rel[] = {"expect", "rises_with", "falls_with", "above", "below"};
        if (std::find(std::begin(rel), std::end(rel), s.relation) == std::end(rel))
          err(join(p, "relation"), "unknown relation '" + s.relation.substr(0, 40) + "' (expect, rises_with, falls_with, above, below)");
        if (s.value && s.value->kind == Expr::Kind::Name && (s.value->text == "origin" || s.value->text == "confidence"))
          err(join(p, "value"), "'" + s.value->text + "' is reserved for provenance");
      } else if (!s.relation.empty()) {
        err(join(p, "relation"), "an introspect signal has no relation");
      }
    });
    return c;
  }

  void control(Control& k, const json& o, const std::string& p) {
    k.name = name(o, "name", p, true);
    std::string kind = str(o, "kind", p);
    if (kind == "api") k.how.kind = ControlKind::Kind::Api;
    else if (kind == "option") k.how.kind = ControlKind::Kind::Option;
    else if (kind != "env" && !kind.empty()) err(join(p, "kind"), "a control kind is env, api or option");
    k.how.params = str(o, "params", p);
    k.how.carrier = str(o, "carrier", p);
    k.how.item_sep = str(o, "item_sep", p);
    k.how.kv_sep = str(o, "kv_sep", p);
    if (k.how.kind != ControlKind::Kind::Api && !k.how.params.empty()) err(join(p, "params"), "params belong to api controls");
    if (k.how.kind != ControlKind::Kind::Option && !(k.how.carrier.empty() && k.how.item_sep.empty() && k.how.kv_sep.empty()))
      err(join(p, "carrier"), "carrier and separators belong to option controls");
    if (k.how.kind == ControlKind::Kind::Api) {
      int depth = 0;
      bool bad = false;
      for (char ch : k.how.params) {
        if (ch == '(') ++depth;
        if (ch == ')' && --depth < 0) bad = true;
        if (ch == '\n' || ch == ';' || ch == '{' || ch == '}' || ch == '#' || static_cast<unsigned char>(ch) < 0x20) bad = true;
      }
      if (bad || depth != 0) err(join(p, "params"), "api parameters are one line of C parameter declarations with balanced parentheses");
      k.how.params = normalize_params(k.how.params);
    }
    std::string type = str(o, "type", p);
    static const std::pair<const char*, Type::Kind> types[] = {
        {"int", Type::Kind::Int},   {"float", Type::Kind::Float}, {"bool", Type::Kind::Bool},    {"string", Type::Kind::String},
        {"size", Type::Kind::Size}, {"duration", Type::Kind::Duration}, {"enum", Type::Kind::Enum}};
    bool found = type.empty();
    for (auto& [n, t] : types)
      if (type == n) k.type.kind = t, found = true;
    if (!found) err(join(p, "type"), "unknown type '" + type.substr(0, 40) + "'");
    k.type.enumerators = names(o, "enumerators", p, false);
    if (k.type.kind != Type::Kind::Enum && !k.type.enumerators.empty()) err(join(p, "enumerators"), "enumerators belong to enum types");
    if (const json* d = field(o, "domain")) {
      std::string dp = join(p, "domain");
      std::string dk = str(*d, "kind", dp);
      if (dk == "range") {
        k.domain.kind = Domain::Kind::Range;
        k.domain.lo = expr(*d, "lo", dp, true);
        k.domain.hi = expr(*d, "hi", dp, true);
      } else if (dk == "set") {
        k.domain.kind = Domain::Kind::Set;
        each(*d, "values", dp, [&](const json&, const std::string&) {});
        if (const json* vs = field(*d, "values"); vs && vs->is_array())
          for (size_t i = 0; i < vs->size(); ++i) {
            json holder = json{{"v", (*vs)[i]}};
            if (auto e = expr(holder, "v", join(dp, "values") + "[" + std::to_string(i) + "]", true)) k.domain.values.push_back(std::move(*e));
          }
      } else if (dk != "none" && !dk.empty()) {
        err(join(dp, "kind"), "a domain is none, range or set");
      }
    }
    k.default_value = expr(o, "default", p, false);
    k.fallback_for = name(o, "fallback_for", p, true, false);
    std::string r = str(o, "read_at", p);
    if (r == "init") k.read_at = ReadAt::Init;
    else if (r == "call") k.read_at = ReadAt::Call;
    else if (r == "region") k.read_at = ReadAt::Region;
    else if (!r.empty()) err(join(p, "read_at"), "read_at is init, call, region or empty");
    k.sets = names(o, "sets", p, true);
    k.doc = str(o, "doc", p);
  }


  template <class F>
  void each(const json& o, const char* key, const std::string& path, F&& fn) {
    const json* f = field(o, key);
    if (!f) return;
    if (!f->is_array()) {
      err(join(path, key), "expected an array");
      return;
    }
    for (size_t i = 0; i < f->size(); ++i) fn((*f)[i], join(path, key) + "[" + std::to_string(i) + "]");
  }

  const std::string& file_;
  Diagnostics& diags_;
};

}  // namespace

Document from_json(const json& j, const std::string& file, Diagnostics& diags) {
  Reader r(file, diags);
  return r.document(j);
}

}  // namespace syspilot::lpcl
