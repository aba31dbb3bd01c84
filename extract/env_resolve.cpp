// Cross-file wrapper analysis: a function or macro whose parameter reaches an env read is
// itself an env reader. Iterates to a fixed point, then resolves every reader call to the
// variable names it reads, through string constants, macro parameters and token pasting.
// Calls through function pointers and struct fields reach the functions stored in them
// (fp = f, p->get = f, {.get = f}, {1, f}), and a field of each row of a settings table read
// in a loop (getenv(table[i].name)) is one read per row, cited at the row.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "extract/code_scan.h"

namespace syspilot::extract::code {
namespace {

struct Reader {
  NameExpr name;           // in terms of the reader's own parameters
  int default_index = -1;  // parameter holding the fallback value
  std::string type;        // int | float | bool | string | unknown
  std::string via;         // the base call it reaches (getenv, secure_getenv, ...)
  bool base = false;
  // A function of the tree outside any class (Definition::free_function): member calls never reach it.
  bool free_function = false;
  // Name: the argument is the variable's name. Percent, Dollar: the argument is a text whose
  // %NAME% (ExpandEnvironmentStrings) or $NAME / ${NAME} (wordexp, os.path.expandvars)
  // references are read.
  enum class Syntax : uint8_t { Name, Percent, Dollar } syntax = Syntax::Name;
};

using Readers = std::unordered_map<std::string, Reader>;

// How many pointer-to-pointer hops an indirect call follows to reach a stored function
// (fp2 = fp1; fp1 = f: two hops). Stored functions that are wrappers themselves are found by
// the fixed point, not by this bound.
constexpr int kMaxIndirection = 4;
// Typedef chains followed to find a struct's fields (typedef a b; typedef b c; ...).
constexpr int kMaxAliases = 4;
// Call-graph steps followed from `environ` to the functions that parse it, and from their
// fields to the parameters that receive a name.
constexpr int kMaxEnvironmentRounds = 16;

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
  add("_wgetenv_s", 3);
  add("_wdupenv_s", 2);
  // Readers of the platforms and frameworks libraries are built on, declared outside the tree
  // (so the fixed point cannot find that they reach getenv): GLib, Qt, NSPR, APR, SDL, libuv.
  for (auto* n : {"g_getenv", "qgetenv", "qEnvironmentVariableIsSet", "qEnvironmentVariableIsEmpty", "PR_GetEnv",
                  "PR_GetEnvSecure", "SDL_getenv", "uv_os_getenv"})
    add(n, 0);
  add("g_environ_getenv", 1);
  add("qEnvironmentVariable", 0, 1);
  add("qEnvironmentVariableIntValue", 0, -1, "int");
  add("apr_env_get", 1);
  // Expanders: every reference in the text is a read.
  for (auto* n : {"ExpandEnvironmentStrings", "ExpandEnvironmentStringsA", "ExpandEnvironmentStringsW"}) {
    add(n, 0);
    r[n].syntax = Reader::Syntax::Percent;
  }
  for (auto* n : {"wordexp", "os.path.expandvars", "path.expandvars", "expandvars"}) {
    add(n, 0);
    r[n].syntax = Reader::Syntax::Dollar;
  }
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

bool has_param(const NameExpr& e, int depth = 0) {
  // Apply pieces over a parameter are resolved at the caller, like Param
  for (auto& p : e) if (p.kind == Piece::Apply && p.param >= 0) return true;
  for (auto& p : e)
    if (p.kind == Piece::Param || p.kind == Piece::Stringize || (p.kind == Piece::Field && p.param >= 0)) return true;
  if (depth < 8)
    for (auto& p : e)
      for (auto& a : p.args)
        if (has_param(a, depth + 1)) return true;
  return false;
}

// R's name expression with R's parameters replaced by the call's arguments (which are in
// the caller's terms). Stringize of an argument yields its raw text.
NameExpr substitute(const NameExpr& name, const Call& call, int depth = 0) {
  NameExpr out;
  for (auto& p : name) {
    if (p.kind == Piece::Apply && !p.args.empty()) {
      // the arguments of a name-building macro are in the same terms as the name
      if (depth >= 8) return {{Piece::Unknown, "nested too deep"}};
      Piece q = p;
      for (auto& a : q.args) a = substitute(a, call, depth + 1);
      for (size_t i = 0; i < q.args.size() && i < q.arg_texts.size(); ++i)
        if (p.args[i].size() == 1 && p.args[i][0].kind == Piece::Param && p.args[i][0].param >= 0 &&
            p.args[i][0].param < static_cast<int>(call.args.size()))
          q.arg_texts[i] = call.args[p.args[i][0].param].text;
      if (q.arg_texts.size() == 1) q.arg = q.arg_texts[0];
      out.push_back(std::move(q));
    } else if (p.kind == Piece::Param) {
      if (p.param < 0 || p.param >= static_cast<int>(call.args.size())) return {{Piece::Unknown, "missing argument"}};
      auto& a = call.args[p.param].expr;
      out.insert(out.end(), a.begin(), a.end());
    } else if (p.kind == Piece::Field && p.param >= 0) {
      // rows of the table the caller passes: a table by name, or its own parameter in turn
      if (p.param >= static_cast<int>(call.args.size())) return {{Piece::Unknown, "missing argument"}};
      auto& a = call.args[p.param].expr;
      Piece q{Piece::Field};
      q.arg = p.arg;
      if (a.size() == 1 && a[0].kind == Piece::Ident) q.text = a[0].text;
      else if (a.size() == 1 && a[0].kind == Piece::Param) q.param = a[0].param;
      else return {{Piece::Unknown, "not a table: " + call.args[p.param].text}};
      out.push_back(std::move(q));
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
        if (!c.value.empty()) constants_[c.name].push_back({c.value, &f});
        if (!c.raw.empty()) raw_macros_[c.name].push_back(c.raw);
      }
    for (auto& f : files)
      for (auto& r : f.records) records_.emplace(r.name, &r);  // the first definition wins
    for (auto& f : files)
      for (auto& d : f.defs)
        if (d.macro && !d.name_body.empty()) builders_.emplace(d.name, d.name_body);
    for (auto& f : files)
      for (auto& t : f.tables) tables_[t.name].push_back({&f, &t});
    for (auto& f : files)
      for (auto& b : f.bindings) {
        std::string key = b.field ? "." + b.target : b.target;
        if (!b.record.empty()) {
          const Record* r = record(b.record);
          if (!r || b.position < 0 || b.position >= static_cast<int>(r->fields.size())) continue;
          key = "." + r->fields[b.position];
        }
        auto& fns = bindings_[key];
        if (key.size() > 1 && fns.size() < 64 && std::find(fns.begin(), fns.end(), b.function) == fns.end())
          fns.push_back(b.function);
      }
    for (auto& f : files)
      for (auto& d : f.defs)
        if (!d.returns.empty()) returns_.emplace(key_of(d, f), &d.returns);
    for (auto& f : files)
      for (auto& d : f.defs)
        if (module_keyed(d, f)) module_defs_.insert(local_key(d.name, f.file));
    for (auto& f : files)
      for (auto& d : f.defs) {
        if (d.macro || d.owner.empty()) continue;
        auto& cls = classes_[d.owner];
        if (d.name == d.owner && !d.stores.empty() && cls.constructors.size() < 64) cls.constructors.push_back({&f, &d});
        if (!d.returns_member.empty() && d.params.empty())
          cls.getters.emplace(d.name, std::make_pair(d.returns_member, d.member_case));
      }
    find_stringifiers();
    find_environment_names();
  }

  std::vector<EnvRead> run() {
    fixed_point();
    std::vector<EnvRead> out;
    for (auto& f : files_)
      for (auto& c : f.calls) {
        resolve_call(f, c, out);
        resolve_table_compare(f, c, out);
      }
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
          const Definition& d = f.defs[c.def];
          if (!d.owner.empty() && !d.macro && member_read(f, d, c)) changed = true;
          if (d.params.empty()) continue;
          std::string key = key_of(d, f);
          auto existing = readers_.find(key);
          if (existing != readers_.end() && (existing->second.base || has_param(existing->second.name))) continue;
          std::vector<std::string> reached;
          readers_of(f, c, reached);
          for (auto& callee : reached)
            if (callee != key && promote(d, key, c, readers_.at(callee))) {  // not a pointer to its own caller
              if (module_keyed(d, f)) readers_.emplace(d.name, readers_.at(key));
              changed = true;
              break;
            }
        }
      }
    }
  }

  // A method of a class reads a member (GetEnv(name_), getenv(GetName()) with GetName returning
  // name_, upper-cased in place or not): each constructor of the class that stores a parameter
  // in that member reads the name passed to it, later, through the object it builds. The
  // constructions (T x("NAME"), a derived class's `: T(name)`, a macro's declaration) are its
  // calls, as for a constructor that reads at once.
  bool member_read(const FileCode& f, const Definition& d, const Call& c) {
    auto cls = classes_.find(d.owner);
    if (cls == classes_.end() || cls->second.constructors.empty()) return false;
    std::vector<std::string> reached;
    readers_of(f, c, reached);
    bool changed = false;
    for (auto& callee : reached) {
      const Reader& r = readers_.at(callee);
      NameExpr name = substitute(r.name, c);
      if (name.size() != 1) continue;
      std::string member, kase;
      if (name[0].kind == Piece::Ident || name[0].kind == Piece::Member) {
        member = name[0].text;
      } else if (name[0].kind == Piece::Apply && name[0].args.empty()) {
        auto g = cls->second.getters.find(name[0].text);
        if (g == cls->second.getters.end()) continue;
        member = g->second.first;
        kase = g->second.second;
      }
      if (member.empty()) continue;
      for (auto& [file, ctor] : cls->second.constructors)
        for (auto& [stored, index] : ctor->stores) {
          if (stored != member || index < 0 || index >= static_cast<int>(ctor->params.size())) continue;
          std::string key = key_of(*ctor, *file);
          auto existing = readers_.find(key);
          if (existing != readers_.end() && (existing->second.base || has_param(existing->second.name))) continue;
          Piece param{Piece::Param, ctor->params[index], index};
          Reader held;
          if (kase.empty()) {
            held.name = {param};
          } else {
            Piece change{Piece::Apply, kase};
            change.args.push_back({param});
            change.arg_texts.push_back(ctor->params[index]);
            held.name = {change};
          }
          held.via = r.via;
          held.type = r.type;
          held.syntax = r.syntax;
          if (ctor->file_local) local_names_[ctor->name].push_back(key);
          readers_[key] = std::move(held);
          changed = true;
        }
    }
    return changed;
  }

  // Where a definition is kept among the readers: by its name, or by its name and file when only
  // its own file's calls can reach it (a static function of a .c file, a macro of a .cpp file).
  // A Python function is kept by its module too: a call in that module reaches the module's own
  // definition, and a call elsewhere (which imported it) the first module's of that name.
  static std::string local_key(const std::string& name, const std::string& file) { return name + "@" + file; }
  static bool module_keyed(const Definition& d, const FileCode& f) { return f.lang == Lang::Python && !d.macro; }
  static std::string key_of(const Definition& d, const FileCode& f) {
    return d.file_local || module_keyed(d, f) ? local_key(d.name, f.file) : d.name;
  }

  // The entry of `map` (keyed as key_of keys) a call by `name` in `file` sees: the file's own
  // definition first, then one visible to every file; end() when neither.
  template <class Map>
  static typename Map::const_iterator visible(const Map& map, const std::string& name, const std::string& file) {
    auto local = map.find(local_key(name, file));
    return local != map.end() ? local : map.find(name);
  }

  // The reader a call by `name` in `file` reaches. A Python module's own function of that name
  // that reads nothing shadows the readers of other modules.
  const std::string* reader_key(const std::string& name, const std::string& file) const {
    auto it = visible(readers_, name, file);
    if (it != readers_.end() && it->first == name && module_defs_.count(local_key(name, file))) return nullptr;
    return it == readers_.end() ? nullptr : &it->first;
  }

  // `d` passes a parameter into the name that `callee` reads: d becomes a reader.
  bool promote(const Definition& d, const std::string& key, const Call& c, const Reader& callee) {
    NameExpr name = substitute(callee.name, c);
    if (!has_param(name) || !expandable(name)) return false;
    Reader r;
    r.name = std::move(name);
    r.via = callee.via;
    r.syntax = callee.syntax;
    r.type = d.macro || d.return_type == "unknown" || d.return_type.empty() ? callee.type : d.return_type;
    if (d.return_type == "string" && callee.type != "string") r.type = callee.type;
    if (!c.type_hint.empty() && (d.macro || r.type == "string")) r.type = c.type_hint;
    int di = callee.default_index;
    if (di >= 0 && di < static_cast<int>(c.args.size()) && c.args[di].expr.size() == 1 &&
        c.args[di].expr[0].kind == Piece::Param)
      r.default_index = c.args[di].expr[0].param;
    if (r.default_index < 0)
      for (size_t i = 0; i < d.params.size(); ++i) {
        std::string p = d.params[i];
        std::transform(p.begin(), p.end(), p.begin(), ::tolower);
        if (p.find("def") != std::string::npos || p.find("fallback") != std::string::npos) r.default_index = static_cast<int>(i);
      }
    r.free_function = d.free_function;
    if (d.file_local) local_names_[d.name].push_back(key);
    readers_[key] = std::move(r);
    return true;
  }

  // A parameter passed through a call that is not a name-building or stringizing macro
  // (getenv(make_name(buf, n))) is computed at run time: the caller is not a reader.
  bool expandable(const NameExpr& e) const {
    for (auto& p : e)
      if (p.kind == Piece::Apply && !builders_.count(p.text) && !stringifiers_.count(p.text) && p.text != kUpper &&
          p.text != kLower &&
          std::any_of(p.args.begin(), p.args.end(), [](const NameExpr& a) { return has_param(a); }))
        return false;
    return true;
  }

  // The readers a call reaches: its callee by name or, for a call through a pointer or a
  // struct field, the functions stored in it, following pointers copied from pointers for at
  // most kMaxIndirection hops.
  void readers_of(const FileCode& f, const Call& c, std::vector<std::string>& out) const {
    if (const std::string* key = reader_key(c.callee, f.file)) {
      // obj.read(x) calls a method or a function stored in a field, never a free function
      // named read: those are reached through the bindings below.
      if (!(c.member && readers_.at(*key).free_function)) {
        out.push_back(*key);
        return;
      }
    }
    // `#define curlx_getenv curl_getenv`: a macro that renames a reader (each #ifdef
    // alternative, through at most kMaxAliases renames) is that reader.
    if (!c.member) {
      std::vector<std::string> names{c.callee};
      for (int hop = 0; hop < kMaxAliases && !names.empty(); ++hop) {
        std::vector<std::string> next;
        for (auto& n : names) {
          auto m = raw_macros_.find(n);
          if (m == raw_macros_.end()) continue;
          for (auto& target : m->second) {
            if (target == c.callee || next.size() >= 16) continue;
            if (const std::string* key = reader_key(target, f.file)) {
              if (std::find(out.begin(), out.end(), *key) == out.end()) out.push_back(*key);
            } else {
              next.push_back(target);
            }
          }
        }
        names = std::move(next);
      }
      if (!out.empty()) return;
    }
    std::vector<std::string> frontier{(c.member ? "." : "") + c.callee};
    std::set<std::string> seen;
    for (int hop = 0; hop < kMaxIndirection && !frontier.empty(); ++hop) {
      std::vector<std::string> next;
      for (auto& key : frontier) {
        if (!seen.insert(key).second) continue;
        auto b = bindings_.find(key);
        if (b == bindings_.end()) continue;
        for (auto& fn : b->second) {
          // a function stored in a pointer may be a static one of the file that stores it
          std::vector<std::string> keys;
          if (readers_.count(fn)) keys.push_back(fn);
          if (auto l = local_names_.find(fn); l != local_names_.end()) keys.insert(keys.end(), l->second.begin(), l->second.end());
          for (auto& k : keys)
            if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
          if (keys.empty() && next.size() < 64) {
            next.push_back(fn);  // a pointer or field copied from another
          }
        }
      }
      frontier = std::move(next);
    }
  }

  const Record* record(const std::string& name) const {
    std::string n = name;
    for (int hop = 0; hop <= kMaxAliases; ++hop) {
      auto it = records_.find(n);
      if (it == records_.end()) return nullptr;
      if (it->second->alias.empty()) return it->second;
      n = it->second->alias;
    }
    return nullptr;
  }

  // The value of `field` in one table row: designated, or by position in the row type's
  // fields; with the type unknown, the row's first string (the usual name-first layout).
  static const NameExpr* row_value(const Table::Row& row, const std::string& field, const Record* rec) {
    for (auto& it : row.items)
      if (it.field == field) return &it.value;
    if (rec) {
      auto pos = std::find(rec->fields.begin(), rec->fields.end(), field);
      if (pos == rec->fields.end()) return nullptr;
      size_t idx = static_cast<size_t>(pos - rec->fields.begin());
      if (idx < row.items.size() && row.items[idx].field.empty()) return &row.items[idx].value;
      return nullptr;
    }
    if (!row.items.empty() && row.items[0].field.empty() && !row.items[0].value.empty() &&
        row.items[0].value[0].kind == Piece::Lit)
      return &row.items[0].value;
    return nullptr;
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
  // false when it depends on something unknown. `site`: the file the expression is written in.
  // A constant of a source file is that file's: another file reaches it only through an extern
  // declaration, which names no value. So a name is the constant of its own file where that
  // file defines one (`const char* name = "UV_TEST_FOO"` in a test, not another test's
  // `static const char* name = "localhost"`), and any file's (a header's, a macro's) otherwise.
  bool evaluate(const NameExpr& e, std::vector<std::string>& outs, int depth = 0, const FileCode* site = nullptr) const {
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
            const bool own = site && std::any_of(it->second.begin(), it->second.end(),
                                                 [&](const auto& d) { return d.second == site; });
            std::vector<std::string> alts;
            for (auto& [v, file] : it->second) {
              if (own && file != site) continue;
              std::vector<std::string> sub;
              if (evaluate(v, sub, depth + 1, file)) alts.insert(alts.end(), sub.begin(), sub.end());
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
          if ((p.text == kUpper || p.text == kLower) && p.args.size() == 1) {
            std::vector<std::string> sub;
            if (!evaluate(p.args[0], sub, depth + 1, site)) return false;
            for (auto& v : sub)
              for (auto& ch : v)
                ch = static_cast<char>(p.text == kUpper ? std::toupper(static_cast<unsigned char>(ch))
                                                        : std::tolower(static_cast<unsigned char>(ch)));
            extend(sub);
            break;
          }
          auto builder = builders_.find(p.text);
          if (!stringifiers_.count(p.text) && builder != builders_.end()) {
            // LIB_ENV("X") with #define LIB_ENV(s) "LIB_" s: the body with the arguments in
            Call args;
            for (size_t i = 0; i < p.args.size(); ++i)
              args.args.push_back({p.args[i], i < p.arg_texts.size() ? p.arg_texts[i] : std::string()});
            NameExpr body = substitute(builder->second, args);
            if (has_param(body)) return false;
            std::vector<std::string> sub;
            if (!evaluate(body, sub, depth + 1, site)) return false;
            extend(sub);
            break;
          }
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
    if (c.def >= 0 && f.defs[c.def].name == c.callee) return;  // a reader's own recursion or a stub
    std::vector<std::string> reached;
    readers_of(f, c, reached);
    for (auto& callee : reached) {
      if (c.def >= 0 && key_of(f.defs[c.def], f) == callee) continue;  // a pointer that holds its caller
      const Reader& r = readers_.at(callee);
      for (const NameExpr& name : expand_returned(f, substitute(r.name, c))) {
        if (has_param(name)) continue;  // inside a wrapper: its callers are resolved instead
        auto field = std::find_if(name.begin(), name.end(), [](const Piece& p) { return p.kind == Piece::Field; });
        if (field != name.end()) {
          if (!resolve_rows(f, c, r, name, static_cast<size_t>(field - name.begin()), out)) unresolved(f, c);
          continue;
        }
        std::vector<std::string> values;
        if (!evaluate(name, values, 0, &f)) {
          unresolved(f, c);
          continue;
        }
        std::sort(values.begin(), values.end());
        values.erase(std::unique(values.begin(), values.end()), values.end());
        for (auto& v : values) add_read(f, c, r, strip_quotes(v), out);
      }
    }
  }

  // A call of a function that returns names (env_name_for(k), a row of its table of names),
  // replaced by what it returns: one name expression per return statement. The argument does
  // not matter: every name it may return is one it may read.
  std::vector<NameExpr> expand_returned(const FileCode& f, const NameExpr& e) const {
    std::vector<NameExpr> outs(1);
    for (const Piece& p : e) {
      const std::vector<NameExpr>* returns = nullptr;
      if (p.kind == Piece::Apply && !builders_.count(p.text) && !stringifiers_.count(p.text)) {
        if (auto it = visible(returns_, p.text, f.file); it != returns_.end()) returns = it->second;
      }
      if (!returns) {
        for (auto& o : outs) o.push_back(p);
        continue;
      }
      std::vector<NameExpr> next;
      for (auto& o : outs)
        for (auto& ret : *returns)
          if (next.size() < 32) {
            NameExpr x = o;
            x.insert(x.end(), ret.begin(), ret.end());
            next.push_back(std::move(x));
          }
      outs = std::move(next);
    }
    return outs;
  }

  // Where a library copies the process environment into records of its own
  // (`parse(block, environ)` fills `vars[i].name = ...`), the names of those records come
  // from the environment: the parameters that receive `environ` (through calls, to a fixed
  // point) mark the functions that parse it, the fields those functions write are the
  // environment's fields, and the parameters that receive such a field (`find(b.vars[i].name)`)
  // hold an environment variable's name. Fields are matched by name across the tree.
  void find_environment_names() {
    using Slot = std::pair<std::string, int>;  // a function's parameter
    // one call-graph step: the parameters that receive `marked` values or marked parameters
    auto spread = [&](std::set<Slot>& slots, const std::function<bool(const Piece&)>& marked) {
      bool changed = true;
      for (int round = 0; changed && round < kMaxEnvironmentRounds; ++round) {
        changed = false;
        for (auto& f : files_)
          for (auto& c : f.calls)
            for (size_t i = 0; i < c.args.size(); ++i) {
              if (c.args[i].expr.size() != 1) continue;
              const Piece& p = c.args[i].expr[0];
              bool from_param = p.kind == Piece::Param && c.def >= 0 && slots.count({f.defs[c.def].name, p.param});
              if ((from_param || marked(p)) && slots.size() < 4096 && slots.insert({c.callee, static_cast<int>(i)}).second)
                changed = true;
            }
      }
    };
    std::set<Slot> parsers;
    spread(parsers, [](const Piece& p) {
      return p.kind == Piece::Ident && (p.text == "environ" || p.text == "__environ" || p.text == "_environ");
    });
    std::set<std::string> parsing;
    for (auto& [fn, index] : parsers) parsing.insert(fn);
    for (auto& f : files_)
      for (auto& d : f.defs)
        if ((d.uses_environ || parsing.count(d.name)) && environ_fields_.size() < 256)
          environ_fields_.insert(d.assigned_fields.begin(), d.assigned_fields.end());
    if (environ_fields_.empty()) return;
    spread(environ_names_, [&](const Piece& p) { return environ_fields_.count(member_field(p)) > 0; });
  }

  // The field a piece reads from a record that is no table of the tree: block->vars[i].name,
  // or v[i].name with v a parameter (records the caller passes, which may be the
  // environment's); "" for anything else.
  static std::string member_field(const Piece& p) {
    if (p.kind == Piece::Member) return p.text;
    if (p.kind == Piece::Field && p.param >= 0) return p.arg;
    return {};
  }

  // An argument that holds an environment variable's name taken from the environment itself.
  bool environment_name(const FileCode& f, const Call& c, const NameExpr& e) const {
    if (e.size() != 1) return false;
    if (!member_field(e[0]).empty()) return environ_fields_.count(member_field(e[0])) > 0;
    return e[0].kind == Piece::Param && c.def >= 0 && environ_names_.count({f.defs[c.def].name, e[0].param});
  }

  // strcmp(table[i].name, name) with `name` taken from the environment: the loop finds the row
  // of each variable set, so every row's name is a read (cited at the row).
  void resolve_table_compare(const FileCode& f, const Call& c, std::vector<EnvRead>& out) {
    static const std::set<std::string> comparators = {
        "strcmp", "strncmp", "strcasecmp", "strncasecmp", "_stricmp", "_strnicmp", "stricmp",
        "strnicmp", "strcmpi", "wcscmp", "wcsncmp", "_wcsicmp", "lstrcmp", "lstrcmpi"};
    if (environ_fields_.empty() || c.args.size() < 2 || !comparators.count(c.callee)) return;
    for (int side = 0; side < 2; ++side) {
      const NameExpr& table = c.args[side].expr;
      if (table.size() != 1 || table[0].kind != Piece::Field || !environment_name(f, c, c.args[1 - side].expr)) continue;
      Reader r;
      r.type = "string";
      r.via = c.callee;
      resolve_rows(f, c, r, table, 0, out);
    }
  }

  void unresolved(const FileCode& f, const Call& c) {
    ++unresolved_;
    if (first_unresolved_.empty()) first_unresolved_ = f.file + ":" + std::to_string(c.line) + " " + c.callee;
  }

  // getenv(table[i].name): one read per row of every table of that name, cited at the row.
  bool resolve_rows(const FileCode& f, const Call& c, const Reader& r, const NameExpr& name, size_t at,
                    std::vector<EnvRead>& out) {
    auto t = tables_.find(name[at].text);
    if (t == tables_.end()) return false;
    size_t before = out.size();
    for (auto& [file, table] : t->second) {
      const Record* rec = table->type.empty() ? nullptr : record(table->type);
      for (auto& row : table->rows) {
        const NameExpr* value = row_value(row, name[at].arg, rec);
        if (!value) continue;
        NameExpr one(name.begin(), name.begin() + at);
        one.insert(one.end(), value->begin(), value->end());
        one.insert(one.end(), name.begin() + at + 1, name.end());
        std::vector<std::string> values;
        if (!evaluate(one, values, 0, file)) continue;
        // a row of a braced list the reader loops over is one spelling of a prefix or suffix
        // of every name it reads: the call that gives the rest is the site
        if (is_inline_list(name[at].text))
          for (auto& v : values) add_read(f, c, r, strip_quotes(v), out);
        else
          for (auto& v : values) add_read(f, c, r, strip_quotes(v), out, file->file, row.line);
      }
    }
    return out.size() > before;
  }

  // The names a text refers to in an expander's syntax: %NAME%, or $NAME, ${NAME} and
  // ${NAME:-default} (what follows the name inside the braces is ignored).
  static std::vector<std::string> references(const std::string& text, Reader::Syntax syntax) {
    std::vector<std::string> out;
    auto name_char = [](char c, bool first) {
      return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (!first && std::isdigit(static_cast<unsigned char>(c)));
    };
    for (size_t i = 0; i < text.size(); ++i) {
      if (syntax == Reader::Syntax::Percent && text[i] == '%') {
        size_t close = text.find('%', i + 1);
        if (close == std::string::npos) break;
        std::string n = text.substr(i + 1, close - i - 1);
        if (valid_env_name(n)) {
          out.push_back(n);
          i = close;
        } else {
          i = close - 1;  // the closing % may open the next reference
        }
      } else if (syntax == Reader::Syntax::Dollar && text[i] == '$' && i + 1 < text.size()) {
        size_t from = i + 1 + (text[i + 1] == '{');
        size_t end = from;
        while (end < text.size() && name_char(text[end], end == from)) ++end;
        if (end > from) out.push_back(text.substr(from, end - from));
        i = end - 1;
      }
    }
    return out;
  }

  void add_read(const FileCode& f, const Call& c, const Reader& r, const std::string& value, std::vector<EnvRead>& out,
                const std::string& at_file = {}, int at_line = 0) {
    if (r.syntax != Reader::Syntax::Name) {
      Reader named = r;
      named.syntax = Reader::Syntax::Name;
      for (const auto& n : references(value, r.syntax)) add_read(f, c, named, n, out, at_file, at_line);
      return;
    }
    if (!valid_env_name(value)) return;
    EnvRead e;
    e.name = value;
    e.file = at_file.empty() ? f.file : at_file;
    e.line = at_line ? at_line : c.line;
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
  std::unordered_map<std::string, std::vector<std::string>> local_names_;  // name -> file-local reader keys
  std::unordered_map<std::string, const std::vector<NameExpr>*> returns_;  // functions that return names
  std::unordered_set<std::string> module_defs_;  // name@module of every Python function
  // Classes whose constructors keep names in members, by the class's name.
  struct ClassMembers {
    std::vector<std::pair<const FileCode*, const Definition*>> constructors;  // those that store
    std::map<std::string, std::pair<std::string, std::string>> getters;      // method -> {member, case}
  };
  std::unordered_map<std::string, ClassMembers> classes_;
  // every definition of a constant, with the file it is written in
  std::unordered_map<std::string, std::vector<std::pair<NameExpr, const FileCode*>>> constants_;
  std::unordered_map<std::string, std::vector<std::string>> raw_macros_;
  std::set<std::string> stringifiers_;
  std::unordered_map<std::string, const Record*> records_;
  std::unordered_map<std::string, NameExpr> builders_;  // macros that build a name: "LIB_" s
  std::unordered_map<std::string, std::vector<std::pair<const FileCode*, const Table*>>> tables_;
  std::unordered_map<std::string, std::vector<std::string>> bindings_;  // .field or pointer -> functions
  std::set<std::string> environ_fields_;                  // fields that hold the environment's names
  std::set<std::pair<std::string, int>> environ_names_;  // parameters that receive such a name
  size_t unresolved_ = 0;
  std::string first_unresolved_;
};

}  // namespace

std::vector<EnvRead> resolve_env(const std::vector<FileCode>& files, Diagnostics& diags) {
  return Resolver(files, diags).run();
}

}  // namespace syspilot::extract::code
