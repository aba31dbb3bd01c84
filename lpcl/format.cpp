// The canonical formatter: statement groups in a fixed order, two-space indent, long
// control lines wrapped onto 4-space continuation lines, comments kept. Idempotent.
#include <string>

#include "lpcl/format_internal.h"
#include "lpcl/lpcl.h"
#include "lpcl/syntax.h"

namespace syspilot::lpcl {

namespace {
constexpr size_t kLineWidth = 100;

int expr_precedence(const Expr& e) {
  if (e.kind == Expr::Kind::Binary) return precedence(e.op);
  if (e.kind == Expr::Kind::Unary) return kUnaryPrecedence;
  return 99;
}

void put_expr(const Expr& e, std::string& out) {
  switch (e.kind) {
    case Expr::Kind::String: out += quote(e.text); return;
    case Expr::Kind::Unary: {
      out += e.op;
      const Expr* a = e.args.empty() ? nullptr : &e.args[0];
      if (!a) return;
      bool paren = expr_precedence(*a) < kUnaryPrecedence;
      // "- -x" stays two tokens either way; a space keeps it readable.
      if (!paren && a->kind == Expr::Kind::Unary) out += ' ';
      if (paren) out += '(';
      put_expr(*a, out);
      if (paren) out += ')';
      return;
    }
    case Expr::Kind::Binary: {
      int p = precedence(e.op);
      bool ra = right_assoc(e.op);
      if (e.args.size() != 2) return;
      int lp = expr_precedence(e.args[0]), rp = expr_precedence(e.args[1]);
      bool lparen = lp < p || (ra && lp == p);
      bool rparen = rp < p || (!ra && rp == p);
      if (lparen) out += '(';
      put_expr(e.args[0], out);
      if (lparen) out += ')';
      out += ' ';
      out += e.op;
      out += ' ';
      if (rparen) out += '(';
      put_expr(e.args[1], out);
      if (rparen) out += ')';
      return;
    }
    case Expr::Kind::Call: {
      out += e.text;
      out += '(';
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i) out += ", ";
        put_expr(e.args[i], out);
      }
      out += ')';
      return;
    }
    default: out += e.text; return;
  }
}

void put_comments(const std::vector<std::string>& comments, const char* indent, std::string& out) {
  for (auto& c : comments) {
    out += indent;
    out += c.empty() ? "#" : "# " + c;
    out += '\n';
  }
}

void provenance_clauses(const Provenance& p, std::vector<std::string>& clauses) {
  for (auto& r : p.refs) clauses.push_back("@ " + quote(r));
  if (p.origin != Origin::Unspecified) clauses.push_back("origin " + origin_text(p));
  if (p.confidence) clauses.push_back("confidence " + format_double(*p.confidence));
}

std::string join(const std::string& head, const std::vector<std::string>& clauses) {
  std::string s = head;
  for (auto& c : clauses) s += ' ' + c;
  return s;
}

// One statement as "  text;" or, for controls too long for one line, wrapped.
void put_statement(const std::string& head, const std::vector<std::string>& clauses, bool wrap, std::string& out) {
  std::string line = "  " + join(head, clauses) + ";";
  if (!wrap || line.size() <= kLineWidth) {
    out += line;
    out += '\n';
    return;
  }
  std::string cur = "  " + head;
  for (auto& c : clauses) {
    // +1 for the space, +1 for a ';' that may follow.
    if (cur.size() + 1 + c.size() + 1 > kLineWidth) {
      out += cur;
      out += '\n';
      cur = "      " + c;
    } else {
      cur += ' ' + c;
    }
  }
  out += cur + ";\n";
}

}  // namespace

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  out += '"';
  return out;
}

std::string origin_text(const Provenance& p) {
  std::string s = to_string(p.origin);
  if (p.origin == Origin::Llm && !p.model.empty()) s += "(" + quote(p.model) + ")";
  return s;
}

std::string format(const Expr& e) {
  std::string out;
  put_expr(e, out);
  return out;
}

std::string type_text(const Type& t) {
  if (t.kind != Type::Kind::Enum) return to_string(t.kind);
  std::string s = "enum{";
  for (size_t i = 0; i < t.enumerators.size(); ++i) s += (i ? ", " : "") + t.enumerators[i];
  return s + "}";
}

std::string kind_text(const ControlKind& k) {
  switch (k.kind) {
    case ControlKind::Kind::Env: return "env";
    case ControlKind::Kind::Api: return "api(" + k.params + ")";
    case ControlKind::Kind::Option:
      return "option(" + quote(k.carrier) + ", " + quote(k.item_sep) + ", " + quote(k.kv_sep) + ")";
  }
  return "env";
}

std::string domain_text(const Domain& d) {
  switch (d.kind) {
    case Domain::Kind::None: return "";
    case Domain::Kind::Range:
      return "[" + (d.lo ? format(*d.lo) : "") + ", " + (d.hi ? format(*d.hi) : "") + "]";
    case Domain::Kind::Set: {
      std::string s = "{";
      for (size_t i = 0; i < d.values.size(); ++i) s += (i ? ", " : "") + format(d.values[i]);
      return s + "}";
    }
  }
  return "";
}

StatementText statement_text(const Control& k) {
  StatementText st;
  st.head = "control " + k.name + " : " + kind_text(k.how) + " " + type_text(k.type);
  auto& c = st.clauses;
  if (k.domain.kind != Domain::Kind::None) c.push_back("in " + domain_text(k.domain));
  if (k.default_value) c.push_back("default " + format(*k.default_value));
  if (!k.fallback_for.empty()) c.push_back("fallback_for " + k.fallback_for);
  if (k.read_at != ReadAt::Unspecified) c.push_back(std::string("read_at ") + to_string(k.read_at));
  if (!k.sets.empty()) {
    std::string s = "sets ";
    for (size_t i = 0; i < k.sets.size(); ++i) s += (i ? ", " : "") + k.sets[i];
    c.push_back(s);
  }
  if (!k.doc.empty()) c.push_back("doc " + quote(k.doc));
  provenance_clauses(k.prov, c);
  return st;
}

StatementText statement_text(const Demand& d) {
  StatementText st;
  st.head = "demand " + d.resource + " = " + format(d.value);
  if (d.when) st.clauses.push_back("when " + format(*d.when));
  provenance_clauses(d.prov, st.clauses);
  return st;
}

StatementText statement_text(const Assumption& a) {
  StatementText st;
  st.head = "assume " + a.predicate + "(";
  for (size_t i = 0; i < a.args.size(); ++i) st.head += (i ? ", " : "") + a.args[i];
  st.head += ")";
  provenance_clauses(a.prov, st.clauses);
  return st;
}

StatementText statement_text(const Behavior& b) {
  StatementText st;
  st.head = "behavior " + b.name;
  for (auto& [k, v] : b.params) st.clauses.push_back(k + " " + format(v));
  provenance_clauses(b.prov, st.clauses);
  return st;
}

StatementText statement_text(const Provides& p) {
  StatementText st;
  st.head = "provides " + p.what + " " + p.name;
  provenance_clauses(p.prov, st.clauses);
  return st;
}

StatementText statement_text(const Signal& s) {
  StatementText st;
  if (s.kind == Signal::Kind::Introspect) {
    st.head = "signal introspect env " + s.metric + " = " + (s.value ? format(*s.value) : "");
  } else {
    st.head = "signal " + s.metric + " " + s.relation;
    if (s.value) st.head += " " + format(*s.value);
  }
  provenance_clauses(s.prov, st.clauses);
  return st;
}

StatementText statement_text(const Binding& b) {
  return {"binds " + b.kind + " " + quote(b.pattern), {}};
}

std::string one_line(const StatementText& st) { return join(st.head, st.clauses) + ";"; }

std::string format(const Contract& c) {
  std::string out;
  put_comments(c.comments, "", out);
  out += "contract " + c.name + " " + quote(c.version) + " {\n";
  bool any = false;
  auto group_start = [&](bool nonempty) {
    if (!nonempty) return;
    if (any) out += '\n';
    any = true;
  };
  group_start(!c.origins.empty());
  if (c.origins.empty() && !c.origin_comments.empty()) group_start(true);
  put_comments(c.origin_comments, "  ", out);
  if (!c.origins.empty()) {
    std::string s = "origin ";
    for (size_t i = 0; i < c.origins.size(); ++i) {
      auto& p = c.origins[i];
      if (i) s += ", ";
      s += origin_text(p);
      for (auto& r : p.refs) s += " @ " + quote(r);
      if (p.confidence) s += " confidence " + format_double(*p.confidence);
    }
    out += "  " + s + ";\n";
  }
  // An empty doc is written when comments hang on it, so they stay where they were.
  bool doc_line = !c.doc.empty() || !c.doc_comments.empty();
  group_start(doc_line);
  put_comments(c.doc_comments, "  ", out);
  if (doc_line) out += "  doc " + quote(c.doc) + ";\n";
  auto group = [&](const auto& items, bool wrap) {
    group_start(!items.empty());
    for (auto& item : items) {
      put_comments(item.comments, "  ", out);
      StatementText st = statement_text(item);
      put_statement(st.head, st.clauses, wrap, out);
    }
  };
  group(c.bindings, false);
  group(c.controls, true);
  group(c.demands, false);
  group(c.assumptions, false);
  group(c.behaviors, false);
  group(c.provides, false);
  group(c.signals, false);
  if (!c.trailing_comments.empty() && any) out += '\n';
  put_comments(c.trailing_comments, "  ", out);
  out += "}\n";
  return out;
}

std::string format(const Document& doc) {
  std::string out;
  for (size_t i = 0; i < doc.contracts.size(); ++i) {
    if (i) out += '\n';
    out += format(doc.contracts[i]);
  }
  if (!doc.trailing_comments.empty()) {
    if (!out.empty()) out += '\n';
    put_comments(doc.trailing_comments, "", out);
  }
  return out;
}

}  // namespace syspilot::lpcl
