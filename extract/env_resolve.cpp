// Cross-file wrapper analysis: a function or macro whose parameter reaches an env read is
// itself an env reader. Iterates to a fixed point, then resolves every reader call to the
// variable names it reads, through string constants, macro parameters and token pasting.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "extract/code_scan.h"

namespace syspilot::extract::code {
namespace {

struct Reader {
  NameExpr name;           // in terms of the reader's own parameters
  int default_index = -1;  // parameter holding the fallback value
  std::string type;        // int | float | bool | string | unknown
  std::string via;         // the base call it reaches (getenv, secure_getenv, ...)
  bool base = false;
};

using Readers = std::unordered_map<std::string, Reader>;

Readers base_readers() {
  Readers r;
  auto add = [&](const char* n, int idx, int def = -1, const char* type = "string") {
    Reader x;
    x.name = {{Piece::Param, "name", idx}};
    x.default_index = def;
    x.type = type;
    x.via = n;
    x.base = true;
    r[n] = x;
  };
  for (auto* n : {"getenv", "secure_getenv", "__secure_getenv", "__libc_secure_getenv", "_wgetenv",
                  "GetEnvironmentVariable", "GetEnvironmentVariableA", "GetEnvironmentVariableW"})
    add(n, 0);
  add("getenv_s", 3);
  add("_dupenv_s", 2);
  add("os.getenv", 0, 1);
  add("os.getenvb", 0, 1);
  add("os.environ.get", 0, 1);
  add("environ.get", 0, 1);
  add("os.environ.setdefault", 0, 1);
  add("environ.setdefault", 0, 1);
  add("os.environ.pop", 0, 1);
  add("os.environ[]", 0);
  return r;
}

bool has_param(const NameExpr& e) {
  // Apply pieces over a parameter are resolved at the caller, like Param
  for (auto& p : e) if (p.kind == Piece::Apply && p.param >= 0) return true;
  for (auto& p : e) if (p.kind == Piece::Param || p.kind == Piece::Stringize) return true;
  return false;
}

// R's name expression with R's parameters replaced by the call's arguments (which are in
// the caller's terms). Stringize of an argument yields its raw text.
NameExpr substitute(const NameExpr& name, const Call& call) {
  NameExpr out;
  for (auto& p : name) {
    if (p.kind == Piece::Param) {
      if (p.param < 0 || p.param >= static_cast<int>(call.args.size())) return {{Piece::Unknown, "missing argument"}};
      auto& a = call.args[p.param].expr;
      out.insert(out.end(), a.begin(), a.end());
    } else if (p.kind == Piece::Stringize) {
      if (p.param < 0 || p.param >= static_cast<int>(call.args.size())) return {{Piece::Unknown, "missing argument"}};
      auto& a = call.args[p.param];
      // a stringized argument that is itself a parameter of the caller stays symbolic
      if (a.expr.size() == 1 && a.expr[0].kind == Piece::Param) out.push_back({Piece::Stringize, a.expr[0].text, a.expr[0].param});
      else out.push_back({Piece::Lit, a.text});
    } else {
      out.push_back(p);
    }
  }
  return out;
}

bool valid_env_name(const std::string& s) {
  if (s.empty() || s.size() > 128 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string strip_quotes(std::string s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front()) return s.substr(1, s.size() - 2);
  return s;
}

class Resolver {
 public:
  Resolver(const std::vector<FileCode>& files, Diagnostics& d) : files_(files), diags_(d) {
    readers_ = base_readers();
    // every definition is an alternative: #ifdef branches, table rows
    for (auto& f : files)
      for (auto& c : f.constants) {
        if (!c.value.empty()) constants_[c.name].push_back(c.value);
        if (!c.raw.empty()) raw_macros_[c.name].push_back(c.raw);
      }
    find_stringifiers();
  }

  std::vector<EnvRead> run() {
    fixed_point();
    std::vector<EnvRead> out;
    for (auto& f : files_)
      for (auto& c : f.calls) resolve_call(f, c, out);
    std::sort(out.begin(), out.end(), [](const EnvRead& a, const EnvRead& b) {
      return std::tie(a.name, a.file, a.line) < std::tie(b.name, b.file, b.line);
    });
    out.erase(std::unique(out.begin(), out.end(), [](const EnvRead& a, const EnvRead& b) {
                return a.name == b.name && a.file == b.file && a.line == b.line;
              }), out.end());
    if (unresolved_ > 0)
      diags_.note({}, std::to_string(unresolved_) + " env read(s) with a name computed at run time were not resolved",
                  "env-name-unresolved", "the first one: " + first_unresolved_);
    return out;
  }

 private:
  void fixed_point() {
    bool changed = true;
    for (int round = 0; changed && round < 64; ++round) {
      changed = false;
      for (auto& f : files_) {
        for (auto& c : f.calls) {
          if (c.def < 0) continue;
          auto it = readers_.find(c.callee);
          if (it == readers_.end()) continue;
          const Definition& d = f.defs[c.def];
          if (d.params.empty()) continue;
          auto existing = readers_.find(d.name);
          if (existing != readers_.end() && (existing->second.base || has_param(existing->second.name))) continue;
          NameExpr name = substitute(it->second.name, c);
          if (!has_param(name)) continue;
          Reader r;
          r.name = std::move(name);
          r.via = it->second.via;
          r.type = d.macro || d.return_type == "unknown" || d.return_type.empty() ? it->second.type : d.return_type;
          if (d.return_type == "string" && it->second.type != "string") r.type = it->second.type;
          if (!c.type_hint.empty() && (d.macro || r.type == "string")) r.type = c.type_hint;
          int di = it->second.default_index;
          if (di >= 0 && di < static_cast<int>(c.args.size()) && c.args[di].expr.size() == 1 &&
              c.args[di].expr[0].kind == Piece::Param)
            r.default_index = c.args[di].expr[0].param;
          if (r.default_index < 0)
            for (size_t i = 0; i < d.params.size(); ++i) {
              std::string p = d.params[i];
              std::transform(p.begin(), p.end(), p.begin(), ::tolower);
              if (p.find("def") != std::string::npos || p.find("fallback") != std::string::npos) r.default_index = static_cast<int>(i);
            }
          readers_[d.name] = std::move(r);
          changed = true;
        }
      }
    }
  }

  // Macros that turn their argument into a string: #define S(x) #x, #define T(x) S(x).
  void find_stringifiers() {
    bool changed = true;
    for (int round = 0; changed && round < 8; ++round) {
      changed = false;
      for (auto& f : files_)
        for (auto& d : f.defs) {
          if (!d.macro || d.params.size() != 1 || stringifiers_.count(d.name)) continue;
          std::string b;
          for (char c : d.body) if (!std::isspace(static_cast<unsigned char>(c))) b += c;
          const std::string& p = d.params[0];
          bool direct = b == "#" + p;
          bool via = false;
          auto open = b.find('(');
          if (!direct && open != std::string::npos && b.substr(open) == "(" + p + ")")
            via = stringifiers_.count(b.substr(0, open)) > 0;
          if (direct || via) {
            stringifiers_.insert(d.name);
            changed = true;
          }
        }
    }
  }

  // Evaluates a name expression to its possible texts (one per #ifdef branch or table row);
  // false when it depends on something unknown.
  bool evaluate(const NameExpr& e, std::vector<std::string>& outs, int depth = 0) const {
    if (depth > 8) return false;
    outs = {""};
    auto extend = [&](const std::vector<std::string>& alts) {
      std::vector<std::string> next;
      for (auto& o : outs)
        for (auto& a : alts)
          if (next.size() < 32) next.push_back(o + a);
      outs = std::move(next);
    };
    for (auto& p : e) {
      switch (p.kind) {
        case Piece::Lit: extend({p.text}); break;
        case Piece::Ident: {
          auto it = constants_.find(p.text);
          if (it != constants_.end()) {
            std::vector<std::string> alts;
            for (auto& v : it->second) {
              std::vector<std::string> sub;
              if (evaluate(v, sub, depth + 1)) alts.insert(alts.end(), sub.begin(), sub.end());
            }
            if (alts.empty()) return false;
            std::sort(alts.begin(), alts.end());
            alts.erase(std::unique(alts.begin(), alts.end()), alts.end());
            extend(alts);
          } else if (!p.in_concat) {
            return false;
          }  // an unknown macro beside string literals is a configure-time prefix: empty by default
          break;
        }
        case Piece::Apply: {
          if (!stringifiers_.count(p.text)) return false;
          auto it = raw_macros_.find(p.arg);
          extend(it != raw_macros_.end() ? it->second : std::vector<std::string>{p.arg});
          break;
        }
        default: return false;
      }
    }
    return true;
  }

  void resolve_call(const FileCode& f, const Call& c, std::vector<EnvRead>& out) {
    auto it = readers_.find(c.callee);
    if (it == readers_.end()) return;
    const Reader& r = it->second;
    if (c.def >= 0 && f.defs[c.def].name == c.callee) return;  // a reader's own recursion or a stub
    NameExpr name = substitute(r.name, c);
    if (has_param(name)) return;  // inside a wrapper: its callers are resolved instead
    std::vector<std::string> values;
    if (!evaluate(name, values)) {
      ++unresolved_;
      if (first_unresolved_.empty()) first_unresolved_ = f.file + ":" + std::to_string(c.line) + " " + c.callee;
      return;
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    for (auto& v : values) add_read(f, c, r, strip_quotes(v), out);
  }

  void add_read(const FileCode& f, const Call& c, const Reader& r, const std::string& value, std::vector<EnvRead>& out) {
    if (!valid_env_name(value)) return;
    EnvRead e;
    e.name = value;
    e.file = f.file;
    e.line = c.line;
    e.function = c.def >= 0 ? f.defs[c.def].name : "";
    e.language = lang_name(f.lang);
    e.via = c.callee;
    e.type = !c.type_hint.empty() && (r.base || r.type == "string" || r.type == "unknown") ? c.type_hint : r.type;
    if (e.type.empty()) e.type = "unknown";
    if (r.default_index >= 0 && r.default_index < static_cast<int>(c.args.size()))
      e.default_value = c.args[r.default_index].text;
    if (e.default_value.empty()) e.default_value = c.default_hint;
    e.default_value = strip_quotes(e.default_value);
    out.push_back(std::move(e));
  }

  const std::vector<FileCode>& files_;
  Diagnostics& diags_;
  Readers readers_;
  std::unordered_map<std::string, std::vector<NameExpr>> constants_;
  std::unordered_map<std::string, std::vector<std::string>> raw_macros_;
  std::set<std::string> stringifiers_;
  size_t unresolved_ = 0;
  std::string first_unresolved_;
};

}  // namespace

std::vector<EnvRead> resolve_env(const std::vector<FileCode>& files, Diagnostics& diags) {
  return Resolver(files, diags).run();
}

}  // namespace syspilot::extract::code
