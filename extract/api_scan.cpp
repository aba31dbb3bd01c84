// API controls from public headers with libclang: functions, methods, enumerators, classes
// and macros whose name, parameters or doc comment mark them as resource controls.
#include <clang-c/Index.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "extract/scanners.h"
#include "lpcl/lpcl.h"

namespace syspilot::extract::api {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string take(CXString s) {
  const char* c = clang_getCString(s);
  std::string out = c ? c : "";
  clang_disposeString(s);
  return out;
}

bool contains_any(const std::string& s, std::initializer_list<const char*> words) {
  for (auto* w : words) if (s.find(w) != std::string::npos) return true;
  return false;
}

// Whether one of `any` is a whole word of `words` (lpcl::identifier_words of a name or a title).
bool has_any_word(const std::vector<std::string>& words, std::initializer_list<const char*> any) {
  for (auto* w : any)
    if (std::find(words.begin(), words.end(), w) != words.end()) return true;
  return false;
}

// Doc comment text without the comment markers.
std::string clean_doc(std::string raw) {
  std::string out;
  std::istringstream in(raw);
  std::string line;
  while (std::getline(in, line)) {
    size_t a = line.find_first_not_of(" \t/*!<");
    if (a == std::string::npos) continue;
    std::string l = line.substr(a);
    while (!l.empty() && (l.back() == '/' || l.back() == '*' || l.back() == ' ')) l.pop_back();
    if (!out.empty()) out += ' ';
    out += l;
  }
  if (out.size() > 600) out = out.substr(0, 600) + "...";
  return out;
}

// A knob the library reads from the environment, split at its first '_': KMP_STACKSIZE is
// ("kmp", "stacksize").
using Knob = std::pair<std::string, std::string>;

// A setter named with a knob's prefix whose subject (after `_set_`) is the rest of the knob's
// name or starts with it: kmp_set_stacksize and kmp_set_stacksize_s set KMP_STACKSIZE,
// hwloc_topology_set_synthetic sets HWLOC_SYNTHETIC, kmp_set_library_serial KMP_LIBRARY.
// The verb may also come last, GObject's order: vips_leak_set sets VIPS_LEAK,
// vips_pipe_read_limit_set VIPS_PIPE_READ_LIMIT.
bool sets_knob(const std::string& name, const std::vector<Knob>& knobs) {
  std::string n = lower(name);
  size_t set = n.find("_set_");
  if (set != std::string::npos && set + 5 < n.size()) {
    std::string subject = n.substr(set + 5);
    for (auto& [prefix, rest] : knobs)
      if (n.starts_with(prefix) && n[prefix.size()] == '_' && subject.starts_with(rest) &&
          (subject.size() == rest.size() || subject[rest.size()] == '_'))
        return true;
  }
  if (n.size() > 4 && n.ends_with("_set"))
    for (auto& [prefix, rest] : knobs)
      if (n == prefix + "_" + rest + "_set") return true;
  return false;
}

// An options entry point as declared ("setting" once an enum names its options), and the USR of
// its key's enum when the key parameter has that type ("" for an int key).
struct OptionSetter {
  ApiControl decl;
  std::string key_enum;
  // named as a call that only sets (X_configure, X_config): every value of its key's enum sets
  // something, not only those whose words say so
  bool sets_every_key = false;
};

// At most `limit` bytes of a file.
std::string slurp(const std::string& path, size_t limit = std::string::npos) {
  std::ifstream in(path, std::ios::binary);
  if (limit == std::string::npos) return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string s(limit, '\0');
  in.read(s.data(), static_cast<std::streamsize>(limit));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

// A documentation group of a header (Doxygen's `\defgroup NAME Title` ... `@{` ... `@}`): the
// lines it spans and its title.
struct DocGroup {
  unsigned from = 0, to = 0;
  std::string title;
  std::string text;  // its introduction: from the \\defgroup line to the `@{` that opens it
};

// The documentation groups of a header's text, innermost last where they nest. A group opened
// and never closed runs to the end of the file.
std::vector<DocGroup> doc_groups(const std::string& text) {
  std::vector<DocGroup> out;
  std::vector<size_t> open;
  std::string pending, intro;
  bool in_intro = false;
  unsigned line = 0;
  size_t at = 0;
  while (at < text.size() && out.size() < 4096) {
    size_t eol = text.find('\n', at);
    std::string_view l(text.data() + at, (eol == std::string::npos ? text.size() : eol) - at);
    at = eol == std::string::npos ? text.size() : eol + 1;
    ++line;
    for (std::string_view cmd : {"defgroup", "addtogroup"}) {
      size_t c = l.find(cmd);
      if (c == std::string::npos || c == 0 || (l[c - 1] != '\\' && l[c - 1] != '@')) continue;
      std::string rest(l.substr(c + cmd.size()));
      std::stringstream ss(rest);
      std::string name, word, title;
      ss >> name;
      while (ss >> word && word != "@{" && word != "\\{" && word != "*/") title += (title.empty() ? "" : " ") + word;
      pending = title.empty() ? name : title;
      intro.clear();
      in_intro = true;
    }
    if (in_intro && intro.size() < (1u << 16)) intro.append(l).push_back('\n');
    if (l.find("@{") != std::string_view::npos || l.find("\\{") != std::string_view::npos) {
      open.push_back(out.size());
      out.push_back({line, 0, pending, intro});
      pending.clear();
      intro.clear();
      in_intro = false;
    }
    if ((l.find("@}") != std::string_view::npos || l.find("\\}") != std::string_view::npos) && !open.empty()) {
      out[open.back()].to = line;
      open.pop_back();
    }
  }
  for (size_t i : open) out[i].to = line;
  return out;
}

// Whether a text names an environment variable the library reads (upper case, as written).
bool names_knob(const std::string& text, const std::vector<Knob>& knobs) {
  std::string word;
  auto check = [&] {
    bool upper = word.size() > 2 && std::none_of(word.begin(), word.end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)); });
    size_t u = word.find('_');
    bool hit = upper && u != std::string::npos && u > 0 && u + 1 < word.size() &&
               std::binary_search(knobs.begin(), knobs.end(), Knob{lower(word.substr(0, u)), lower(word.substr(u + 1))});
    word.clear();
    return hit;
  };
  for (char ch : text) {
    if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') word.push_back(ch);
    else if (check()) return true;
  }
  return check();
}

// A setting by where the library's documentation puts it: a call that sets, allows, enables or
// disables something, declared in a documentation group whose title calls it configuration,
// settings or options (hwloc's "Topology Detection Configuration and Query": its flags and type
// filters), or whose introduction names an environment variable the library reads: its calls
// change what that variable changes (hwloc's "Changing the Source of Topology Discovery":
// "Setting HWLOC_XMLFILE in the environment enforces the discovery from a XML file as if
// hwloc_topology_set_xml() had been called"). A user pointer or a callback set there is
// plumbing, not a setting (a call that takes a function, git_trace_set, is left out by the
// caller: see takes_function).
bool documented_setting(const std::string& name, const DocGroup& group, const std::vector<Knob>& knobs) {
  if (!has_any_word(lpcl::identifier_words(group.title), {"configuration", "configuring", "settings", "options", "tuning"}) &&
      !names_knob(group.text, knobs))
    return false;
  auto words = lpcl::identifier_words(name);
  return has_any_word(words, {"set", "allow", "enable", "disable"}) &&
         !has_any_word(words, {"userdata", "user", "data", "callback", "callbacks", "handler", "hook"});
}

// Whether a function takes a pointer to a function (a callback) among its parameters.
bool takes_function(CXCursor fn) {
  for (int i = 0, n = clang_Cursor_getNumArguments(fn); i < n; ++i) {
    CXType t = clang_getCanonicalType(clang_getCursorType(clang_Cursor_getArgument(fn, static_cast<unsigned>(i))));
    if (t.kind != CXType_Pointer) continue;
    CXTypeKind pointee = clang_getCanonicalType(clang_getPointeeType(t)).kind;
    if (pointee == CXType_FunctionProto || pointee == CXType_FunctionNoProto) return true;
  }
  return false;
}

// A value a program passes to a setting: a number, a flag, an enum's value or a string. A
// pointer to anything else is an object (an image, a buffer, a repository), a place the call
// writes to, or a callback.
bool value_parameter(CXType t) {
  t = clang_getCanonicalType(t);
  if (t.kind >= CXType_Bool && t.kind <= CXType_LongDouble) return true;
  if (t.kind == CXType_Enum) return true;
  if (t.kind != CXType_Pointer) return false;
  CXTypeKind p = clang_getCanonicalType(clang_getPointeeType(t)).kind;
  return p == CXType_Char_S || p == CXType_Char_U || p == CXType_SChar || p == CXType_UChar;
}

// A setter of the library's own state: a function named with the library's prefix (the first
// part of the environment variables it reads: vips_ for VIPS_*), with `set` among the words of
// its name, that takes values and nothing else. It holds no object to set a field of, so what
// it sets is the library's, for the whole process: vips_cache_set_dump(gboolean),
// vips_operation_block_set(const char *, gboolean), where vips_image_set_progress(VipsImage *,
// gboolean) sets one image's. A number named as an object's identifier or handle (`id`,
// `handle`, `ctx`, `context`, `fd` its last word: starpu_sched_ctx_set_min_priority(unsigned
// sched_ctx_id, int)) holds an object as a pointer would. Setting an error or a status is
// reporting, not a setting.
bool library_wide_setter(CXCursor fn, const std::string& name, const std::vector<Knob>& knobs) {
  auto words = lpcl::identifier_words(name);
  if (words.size() < 2 || !has_any_word(words, {"set"}) ||
      has_any_word(words, {"error", "errno", "status", "userdata", "user", "callback", "handler", "hook"}))
    return false;
  // the title or name a process or thread shows (uv_set_process_title, set_thread_name) is how
  // it is listed, no setting of the library
  if (has_any_word(words, {"title"}) || (has_any_word(words, {"name"}) && has_any_word(words, {"process", "proc", "thread"})))
    return false;
  auto prefix = std::lower_bound(knobs.begin(), knobs.end(), Knob{words.front(), ""});
  if (prefix == knobs.end() || prefix->first != words.front()) return false;
  int n = clang_Cursor_getNumArguments(fn);
  if (n < 1) return false;
  for (int i = 0; i < n; ++i) {
    CXCursor a = clang_Cursor_getArgument(fn, static_cast<unsigned>(i));
    if (!value_parameter(clang_getCursorType(a))) return false;
    auto pw = lpcl::identifier_words(take(clang_getCursorSpelling(a)));
    if (!pw.empty() && (pw.back() == "id" || pw.back() == "handle" || pw.back() == "ctx" || pw.back() == "context" ||
                        pw.back() == "fd"))
      return false;
  }
  return true;
}

// One translation unit covers every public header it includes: those are done afterwards.
struct Visit {
  const std::map<std::string, std::string>* public_rel;  // real path -> rel
  const std::set<std::string>* done;                     // headers covered by earlier units
  std::set<std::string>* covered;                        // headers this unit reached
  std::string rel;
  std::vector<ApiControl>* out;
  std::set<std::string>* seen;
  const std::vector<Knob>* knobs;
  std::map<std::string, std::string>* aliases;  // #define A B in a public header: A -> B
  std::set<std::string>* taken_enums;           // USRs of the enums some setting call takes
  std::map<size_t, std::string>* enumerators;   // index in *out of an enumerator -> its enum's USR
  // Every public enum: its names (tag, typedefs) -> USR, and USR -> its values (name, file, line).
  std::map<std::string, std::string>* enum_names;
  std::map<std::string, std::vector<ApiControl>>* enum_values;
  std::vector<OptionSetter>* option_setters;    // `X_opts(int option, ...)`: keyed by an enum's values
  std::map<std::string, std::vector<DocGroup>>* groups;  // real path -> its documentation groups
};

// A header that keeps an older API working: its file name says compat, legacy or deprecated.
bool compatibility_header(const std::string& rel) {
  std::string f = lower(std::filesystem::path(rel).filename().string());
  return contains_any(f, {"compat", "legacy", "deprecated"});
}

// The USR of the enum a parameter's type is (through typedefs), or "".
std::string enum_usr(CXType t) {
  t = clang_getCanonicalType(t);
  if (t.kind != CXType_Enum) return "";
  return take(clang_getCursorUSR(clang_getTypeDeclaration(t)));
}

// Enumerators that mark no value of their own: the first "undefined" one, the count or bound
// at the end.
bool sentinel(const std::string& name) {
  std::string n = lower(name);
  for (const char* w : {"undefined", "unknown", "invalid"})
    if (n.find(w) != std::string::npos) return true;
  for (const char* w : {"max", "count", "last", "_num", "_end"})
    if (n.size() > std::strlen(w) && n.ends_with(w)) return true;
  return false;
}

std::string real(const std::string& p) {
  std::error_code ec;
  auto r = std::filesystem::weakly_canonical(p, ec);
  return ec ? p : r.string();
}

// The longest name of a call, enum value or variable the scan reports.
constexpr size_t kMaxApiName = 256;

// Whether a function takes a thread pool the program implements (see its use below).
bool takes_program_pool(CXCursor fn) {
  int n = clang_Cursor_getNumArguments(fn);
  for (int i = 0; i < n; ++i) {
    CXCursor a = clang_Cursor_getArgument(fn, static_cast<unsigned>(i));
    CXType t = clang_getCanonicalType(clang_getCursorType(a));
    std::string named = lower(take(clang_getCursorSpelling(a)) + " " + take(clang_getTypeSpelling(clang_getCursorType(a))));
    if (named.find("pool") == std::string::npos) continue;
    if (t.kind != CXType_Pointer && t.kind != CXType_LValueReference) continue;
    CXType to = clang_getCanonicalType(clang_getPointeeType(t));
    if (to.kind == CXType_Void) return true;
    if (to.kind == CXType_Record && clang_CXXRecord_isAbstract(clang_getTypeDeclaration(to))) return true;
  }
  return false;
}

// The public header a cursor is written in (real path -> rel), by its name as clang gives it or
// its real path; null for any other file. `line`: where in it.
const std::pair<const std::string, std::string>* public_header_of(const Visit& v, CXCursor c, unsigned& line) {
  CXFile f;
  clang_getExpansionLocation(clang_getCursorLocation(c), &f, &line, nullptr, nullptr);
  if (!f) return nullptr;
  std::string fname = take(clang_getFileName(f));
  auto pub = v.public_rel->find(fname);
  if (pub == v.public_rel->end()) pub = v.public_rel->find(real(fname));
  return pub == v.public_rel->end() ? nullptr : &*pub;
}

CXChildVisitResult visit(CXCursor c, CXCursor, CXClientData data) {
  auto* v = static_cast<Visit*>(data);
  unsigned line = 0;
  auto* pub = public_header_of(*v, c, line);
  if (!pub || v->done->count(pub->first)) return CXChildVisit_Continue;
  v->covered->insert(pub->first);
  v->rel = pub->second;
  CXCursorKind k = clang_getCursorKind(c);
  if ((k == CXCursor_EnumDecl || k == CXCursor_TypedefDecl) && v->enum_names->size() < 100000) {
    CXType t = k == CXCursor_EnumDecl ? clang_getCursorType(c) : clang_getTypedefDeclUnderlyingType(c);
    if (std::string usr = enum_usr(t); !usr.empty()) {
      std::string name = take(clang_getCursorSpelling(c));
      if (!name.empty() && name.find(' ') == std::string::npos) v->enum_names->emplace(name, usr);
      if (k == CXCursor_EnumDecl && !v->enum_values->count(usr)) {
        std::pair<Visit*, std::vector<ApiControl>*> ctx{v, &(*v->enum_values)[usr]};
        clang_visitChildren(
            c,
            [](CXCursor e, CXCursor, CXClientData d) {
              auto* x = static_cast<std::pair<Visit*, std::vector<ApiControl>*>*>(d);
              if (clang_getCursorKind(e) != CXCursor_EnumConstantDecl || x->second->size() >= 4096)
                return CXChildVisit_Continue;
              unsigned eline = 0;
              auto* pub = public_header_of(*x->first, e, eline);
              std::string en = take(clang_getCursorSpelling(e));
              if (pub && !en.empty())
                x->second->push_back({en, "", "", pub->second, static_cast<int>(eline),
                                      clean_doc(take(clang_Cursor_getRawCommentText(e)))});
              return CXChildVisit_Continue;
            },
            &ctx);
      }
    }
  }
  if (k == CXCursor_Namespace || k == CXCursor_UnexposedDecl || k == CXCursor_LinkageSpec ||
      k == CXCursor_EnumDecl || k == CXCursor_ClassDecl || k == CXCursor_StructDecl || k == CXCursor_ClassTemplate) {
    if (k == CXCursor_ClassDecl || k == CXCursor_ClassTemplate) {
      std::string name = take(clang_getCursorSpelling(c));
      std::string doc = clean_doc(take(clang_Cursor_getRawCommentText(c)));
      std::string cat = control_category(name, "", doc);
      if (!cat.empty() && v->seen->insert("class " + name).second)
        v->out->push_back({name, "class " + name, cat, v->rel, static_cast<int>(line), doc});
    }
    clang_visitChildren(c, visit, data);
    return CXChildVisit_Continue;
  }
  bool fn = k == CXCursor_FunctionDecl || k == CXCursor_CXXMethod || k == CXCursor_Constructor ||
            k == CXCursor_FunctionTemplate;
  bool item = fn || k == CXCursor_EnumConstantDecl || k == CXCursor_MacroDefinition || k == CXCursor_VarDecl;
  if (!item) return CXChildVisit_Continue;
  std::string name = take(clang_getCursorSpelling(c));
  // no library's call is named with hundreds of characters (a hostile header's 60,000-letter
  // name would be carried into every stage after this one)
  if (name.empty() || name[0] == '_' || name.size() > kMaxApiName) return CXChildVisit_Continue;
  // A variable is a setting of the library only where programs can assign it: a declaration
  // (extern) of a number, a flag or a string the library defines. An object a header defines
  // itself (C++'s `inline state::Value<...> NThreads`, a static) is each unit's own, and one of
  // a class type is set through its members, not by a program's assignment.
  if (k == CXCursor_VarDecl) {
    CXTypeKind t = clang_getCanonicalType(clang_getCursorType(c)).kind;
    if (clang_Cursor_getStorageClass(c) != CX_SC_Extern || t == CXType_Record || t == CXType_Elaborated)
      return CXChildVisit_Continue;
  }
  if (k == CXCursor_MacroDefinition && clang_Cursor_isMacroFunctionLike(c) == 0) {
    // `#define omp_set_affinity_format ompc_set_affinity_format`: programs call the first name
    CXTranslationUnit tu = clang_Cursor_getTranslationUnit(c);
    CXToken* toks = nullptr;
    unsigned n = 0;
    clang_tokenize(tu, clang_getCursorExtent(c), &toks, &n);
    // not a compatibility header's name for an older API (vips7compat.h's im_concurrency_set
    // for vips_concurrency_set): programs written today call the declared name
    if (n == 2 && clang_getTokenKind(toks[1]) == CXToken_Identifier && v->aliases->size() < 100000 &&
        !compatibility_header(v->rel))
      v->aliases->emplace(name, take(clang_getTokenSpelling(tu, toks[1])));
    if (toks) clang_disposeTokens(tu, toks, n);
    return CXChildVisit_Continue;
  }
  // a pure virtual method is an interface the program implements (a thread pool the library is
  // handed), not a call into the library
  if (k == CXCursor_CXXMethod && clang_CXXMethod_isPureVirtual(c)) return CXChildVisit_Continue;
  std::string sig;
  std::vector<std::string> param_enums;  // the enums this function takes (see below)
  if (fn) {
    std::string params;
    int n = clang_Cursor_getNumArguments(c);
    for (int i = 0; i < n; ++i) {
      CXCursor a = clang_Cursor_getArgument(c, static_cast<unsigned>(i));
      if (std::string e = enum_usr(clang_getCursorType(a)); !e.empty()) param_enums.push_back(e);
      if (i) params += ", ";
      params += take(clang_getTypeSpelling(clang_getCursorType(a)));
      std::string an = take(clang_getCursorSpelling(a));
      if (!an.empty()) params += " " + an;
    }
    std::string ret = k == CXCursor_Constructor ? "" : take(clang_getTypeSpelling(clang_getCursorResultType(c))) + " ";
    CXCursor parent = clang_getCursorSemanticParent(c);
    std::string owner = (k == CXCursor_CXXMethod || k == CXCursor_Constructor)
                            ? take(clang_getCursorSpelling(parent)) + "::" : "";
    // a C++ function outside any class is named with its namespaces (dnnl::set_verbose): the
    // namespace is to C++ what a name prefix is to C (inline namespaces, a version's, aside)
    if (owner.empty() && (k == CXCursor_FunctionDecl || k == CXCursor_FunctionTemplate))
      for (CXCursor p = parent; clang_getCursorKind(p) == CXCursor_Namespace && owner.size() < 256;
           p = clang_getCursorSemanticParent(p)) {
        std::string ns = take(clang_getCursorSpelling(p));
        if (!ns.empty() && !clang_Cursor_isInlineNamespace(p)) owner = ns + "::" + owner;
      }
    sig = ret + owner + name + "(" + params + ")";
    if (!owner.empty()) name = owner + name;
  } else if (k == CXCursor_EnumConstantDecl) {
    sig = "enum " + take(clang_getTypeSpelling(clang_getCursorType(c))) + "::" + name;
  } else if (k == CXCursor_MacroDefinition) {
    sig = "#define " + name + "(...)";
  } else {
    sig = take(clang_getTypeSpelling(clang_getCursorType(c))) + " " + name;
  }
  std::string doc = clean_doc(take(clang_Cursor_getRawCommentText(c)));
  // git_libgit2_opts(int option, ...): the library's options set through one entry point, the
  // option named by a value of an enum (resolved once every header is read)
  // A configuring call (uv_loop_configure(uv_loop_t *loop, uv_loop_option option, ...)) takes
  // the object it configures first and its key, an enum, second; it only sets, so each value of
  // that enum is an option it sets.
  if (k == CXCursor_FunctionDecl && clang_Cursor_isVariadic(c) && clang_Cursor_getNumArguments(c) >= 1 &&
      v->option_setters->size() < 64) {
    auto words = lpcl::identifier_words(name);
    CXType key = clang_getCanonicalType(clang_getCursorType(clang_Cursor_getArgument(c, 0)));
    const bool keyed = key.kind == CXType_Int || key.kind == CXType_UInt || key.kind == CXType_Enum;
    static const std::set<std::string> option_words = {"opt", "opts", "option", "options", "setopt", "setopts"};
    const bool configures = !words.empty() && (words.back() == "configure" || words.back() == "config");
    const ApiControl decl{name, sig, "setting", v->rel, static_cast<int>(line), doc};
    if (keyed && !words.empty() && option_words.count(words.back()))
      v->option_setters->push_back({decl, key.kind == CXType_Enum ? enum_usr(key) : ""});
    else if (configures)
      for (int i = 0; i < 2 && i < clang_Cursor_getNumArguments(c); ++i)
        if (std::string e = enum_usr(clang_getCursorType(clang_Cursor_getArgument(c, static_cast<unsigned>(i))));
            !e.empty()) {
          v->option_setters->push_back({decl, e, true});
          break;
        }
  }
  std::string cat = control_category(name, sig, doc);
  // a call that takes a thread pool the program implements (an opaque `void *threadpool`, or
  // an interface of pure virtual methods) runs on the program's threads, which the program
  // sizes: a GEMM or a stream made over that pool sets nothing of the library's. A pool of the
  // library's own type (ZSTD_CCtx_refThreadPool(cctx, ZSTD_threadPool*)) is its to set.
  if (!cat.empty() && fn && takes_program_pool(c)) cat.clear();
  if (cat.empty() && fn && sets_knob(name, *v->knobs)) cat = "setting";
  if (cat.empty() && k == CXCursor_FunctionDecl && library_wide_setter(c, name, *v->knobs)) cat = "setting";
  if (cat.empty() && k == CXCursor_FunctionDecl && v->groups->size() < 4096) {
    auto g = v->groups->find(pub->first);
    if (g == v->groups->end()) g = v->groups->emplace(pub->first, doc_groups(slurp(pub->first, 1u << 20))).first;
    const DocGroup* inner = nullptr;
    for (auto& grp : g->second)
      if (grp.from <= line && line <= grp.to && (!inner || grp.from >= inner->from)) inner = &grp;
    if (inner && documented_setting(name, *inner, *v->knobs) && !takes_function(c)) cat = "setting";
  }
  // The values of an enum are settings only as the key or value of a call that sets something
  // (ZSTD_CCtx_setParameter's ZSTD_cParameter): an enum only a lookup takes (the device
  // runtime's lookup32(ValueKind)) names what the library keeps, not what a program sets.
  if (!param_enums.empty() && v->taken_enums->size() < 100000 &&
      (!cat.empty() || has_any_word(lpcl::identifier_words(name), {"set", "enable", "disable", "configure"})))
    v->taken_enums->insert(param_enums.begin(), param_enums.end());
  if (cat.empty() || !v->seen->insert(name).second) return CXChildVisit_Continue;
  if (k == CXCursor_EnumConstantDecl)
    (*v->enumerators)[v->out->size()] = take(clang_getCursorUSR(clang_getCursorSemanticParent(c)));
  v->out->push_back({name, sig, cat, v->rel, static_cast<int>(line), doc});
  // A keyed setter (SetMagickResourceLimit(ResourceType, limit), cudaDeviceSetLimit(cudaLimit,
  // value)) sets one limit per value of its enum argument: each value is a control of its own.
  if (fn && cat == "limit") {
    for (int i = 0, n = clang_Cursor_getNumArguments(c); i < n; ++i) {
      CXType t = clang_getCanonicalType(clang_getCursorType(clang_Cursor_getArgument(c, static_cast<unsigned>(i))));
      if (t.kind != CXType_Enum) continue;
      CXCursor decl = clang_getTypeDeclaration(t);
      std::pair<Visit*, std::string> keyed{
          v, take(clang_getTypeSpelling(clang_getCursorType(clang_Cursor_getArgument(c, static_cast<unsigned>(i)))))};
      if (keyed.second.starts_with("const ")) keyed.second = keyed.second.substr(6);
      clang_visitChildren(
          decl,
          [](CXCursor e, CXCursor, CXClientData d) {
            auto* ctx = static_cast<std::pair<Visit*, std::string>*>(d);
            if (clang_getCursorKind(e) != CXCursor_EnumConstantDecl) return CXChildVisit_Continue;
            std::string en = take(clang_getCursorSpelling(e));
            if (en.empty() || en[0] == '_' || sentinel(en)) return CXChildVisit_Continue;
            unsigned eline = 0;
            auto* pub = public_header_of(*ctx->first, e, eline);
            if (!pub || !ctx->first->seen->insert(en).second) return CXChildVisit_Continue;
            std::string edoc = clean_doc(take(clang_Cursor_getRawCommentText(e)));
            std::string ecat = lower(en).find("thread") != std::string::npos ? "threads" : "limit";
            ctx->first->out->push_back({en, "enum " + ctx->second + "::" + en, ecat, pub->second,
                                        static_cast<int>(eline), edoc});
            return CXChildVisit_Continue;
          },
          &keyed);
    }
  }
  return CXChildVisit_Continue;
}

// The length of a configure template's suffix after the header's name: foo.h.in, omp.h.var,
// foo.h.cmake (inputs of autoconf and of CMake's configure_file); 0 for other files.
size_t template_suffix(std::string_view rel) {
  for (std::string_view s : {".h.in", ".h.var", ".h.cmake", ".hpp.in"})
    if (rel.ends_with(s)) return s.size() - s.find('.', 1);
  return 0;
}

// Configure templates (foo.h.in) hold @NAME@ placeholders: drop them so clang sees C. CMake's
// `#cmakedefine X` is left undefined, `#cmakedefine01 X` defined to 0, as an unconfigured build
// would have them.
std::string unconfigure_text(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  auto word_end = [&](size_t e) {
    while (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) ++e;
    return e;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    // #cmakedefine01 X -> #define X 0; #cmakedefine X ... -> #undef X (the rest of the line dropped)
    const bool zero_one = s.compare(i, 15, "#cmakedefine01 ") == 0, plain = s.compare(i, 13, "#cmakedefine ") == 0;
    if (zero_one || plain) {
      size_t b = std::min(s.find_first_not_of(" \t", i + (zero_one ? 15 : 13)), s.size());
      size_t e = word_end(b);
      out += (zero_one ? "#define " : "#undef ") + s.substr(b, e - b) + (zero_one ? " 0" : "");
      i = std::min(s.find('\n', e), s.size()) - 1;
      continue;
    }
    if (s[i] == '@') {
      size_t j = word_end(i + 1);
      if (j < s.size() && s[j] == '@' && j > i + 1) { i = j; continue; }
    }
    // autoconf's `#undef hwloc_thread_t` ("Define this to the thread ID type"): a type of the
    // library's own that configure defines, and whose `#ifdef` guards the calls that take it
    // (hwloc_set_thread_cpubind). A placeholder type stands in, as on a configured system;
    // the C library's own (size_t, pid_t, uint32_t: one word before _t, or int/uint ones)
    // are left alone.
    if ((i == 0 || s[i - 1] == '\n') && s.compare(i, 7, "#undef ") == 0) {
      size_t b = std::min(s.find_first_not_of(" \t", i + 7), s.size());
      size_t e = word_end(b);
      std::string name = s.substr(b, e - b);
      const bool lower_case =
          std::none_of(name.begin(), name.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
      const std::string stem = name.size() > 2 ? name.substr(0, name.size() - 2) : "";
      if (lower_case && name.ends_with("_t") && stem.find('_') != std::string::npos && stem.front() != '_' &&
          !name.starts_with("int") && !name.starts_with("uint")) {
        out += "#define " + name + " long";
        i = std::min(s.find('\n', e), s.size()) - 1;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::string unconfigure(const std::string& path) { return unconfigure_text(slurp(path)); }

// Whether a preprocessor line (not a comment) defines `m`.
bool defines(const std::string& text, const std::string& m) {
  size_t pos = 0;
  while ((pos = text.find(m, pos)) != std::string::npos) {
    size_t bol = text.rfind('\n', pos);
    bol = bol == std::string::npos ? 0 : bol + 1;
    std::string head = text.substr(bol, pos - bol);
    std::string squeezed;
    for (char c : head) if (c != ' ' && c != '\t') squeezed += c;
    if (squeezed == "#define") return true;
    pos += m.size();
  }
  return false;
}

// Opt-in sections of a public header are API too: ZSTD_STATIC_LINKING_ONLY, *_EXPERIMENTAL,
// and the OS switch a generated config header would set (OPENBLAS_OS_LINUX).
std::vector<std::string> opt_in_macros(const std::string& text) {
  std::set<std::string> out;
  for (const char* kw : {"#ifdef", "defined(", "defined ("}) {
    size_t pos = 0;
    while ((pos = text.find(kw, pos)) != std::string::npos) {
      pos += std::strlen(kw);
      while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
      size_t e = pos;
      while (e < text.size() && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_')) ++e;
      std::string m = text.substr(pos, e - pos);
      for (const char* suffix : {"STATIC_LINKING_ONLY", "_EXPERIMENTAL", "_OS_LINUX"})
        // a macro the header defines itself is a guard, not a switch for the user
        if (m.size() > std::strlen(suffix) && m.ends_with(suffix) && !defines(text, m)) out.insert(m);
    }
  }
  return {out.begin(), out.end()};
}

// The names a header includes, "quoted" or <bracketed>.
std::vector<std::string> includes_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line) && out.size() < 1000;) {
    size_t a = line.find_first_not_of(" \t");
    if (a == std::string::npos || line[a] != '#') continue;
    size_t b = line.find_first_not_of(" \t", a + 1);
    if (b == std::string::npos || line.compare(b, 7, "include") != 0) continue;
    size_t open = line.find_first_of("\"<", b + 7);
    if (open == std::string::npos) continue;
    size_t close = line.find(line[open] == '"' ? '"' : '>', open + 1);
    if (close == std::string::npos || close == open + 1) continue;
    out.push_back(line.substr(open + 1, close - open - 1));
  }
  return out;
}

// Where the public headers' includes are in the tree: the folders to search, the generated
// names of the public headers some public header includes, and configure templates that stand
// in for the headers they would generate (hwloc/autogen/config.h from config.h.in).
struct Includes {
  std::set<std::string> dirs;
  std::set<std::string> included;                // rel, as generated
  std::map<std::string, std::string> stand_ins;  // absolute path of the missing header -> text
};

Includes resolve_includes(const std::vector<std::pair<std::string, std::string>>& headers,
                          const std::vector<std::pair<std::string, std::string>>& tree_headers) {
  Includes r;
  struct File { std::string path, gen_path, gen_rel; bool templ, pub; };
  std::vector<File> files;
  std::multimap<std::string, size_t> by_name;  // file name as generated -> files
  for (auto* list : {&headers, &tree_headers})
    for (auto& [path, rel] : *list) {
      size_t t = template_suffix(rel);
      File f{path, path.substr(0, path.size() - template_suffix(path)), rel.substr(0, rel.size() - t), t > 0,
             list == &headers};
      by_name.emplace(std::filesystem::path(f.gen_rel).filename().string(), files.size());
      files.push_back(std::move(f));
    }
  std::set<size_t> visited;
  std::vector<size_t> queue;
  for (size_t i = 0; i < headers.size(); ++i) queue.push_back(i), visited.insert(i);
  constexpr size_t kMaxFiles = 4000;             // headers read for their includes
  constexpr size_t kMaxHeaderBytes = 1u << 20;   // of each, the first MB
  constexpr size_t kMaxBytes = 64u << 20;        // of all of them together
  size_t read = 0;
  for (size_t q = 0; q < queue.size() && q < kMaxFiles && read < kMaxBytes; ++q) {
    const File& from = files[queue[q]];
    std::string text = slurp(from.path, kMaxHeaderBytes);
    read += text.size();
    if (from.templ) text = unconfigure_text(text);
    for (auto& inc : includes_of(text)) {
      if (inc.find("..") != std::string::npos || inc[0] == '/') continue;
      auto [lo, hi] = by_name.equal_range(std::filesystem::path(inc).filename().string());
      const File* best = nullptr;
      size_t best_i = 0;
      for (auto it = lo; it != hi; ++it) {
        const File& f = files[it->second];
        bool matches = f.gen_rel == inc || (f.gen_rel.size() > inc.size() && f.gen_rel.ends_with(inc) &&
                                             f.gen_rel[f.gen_rel.size() - inc.size() - 1] == '/');
        if (matches && (!best || f.gen_rel.size() < best->gen_rel.size())) best = &f, best_i = it->second;
      }
      if (!best) continue;
      if (best->gen_path.size() > inc.size()) r.dirs.insert(best->gen_path.substr(0, best->gen_path.size() - inc.size() - 1));
      if (from.pub && best->pub) r.included.insert(best->gen_rel);
      std::error_code ec;
      if (best->templ && !std::filesystem::exists(best->gen_path, ec) && r.stand_ins.size() < 256)
        r.stand_ins.emplace(best->gen_path, unconfigure_text(slurp(best->path, 4u << 20)));
      if (visited.insert(best_i).second) queue.push_back(best_i);
    }
  }
  return r;
}

}  // namespace

std::string control_category(const std::string& name, const std::string& sig, const std::string& doc) {
  std::string n = lower(name), s = lower(sig);
  std::string params = s.find('(') != std::string::npos ? s.substr(s.find('(')) : "";
  std::vector<std::string> words = lpcl::identifier_words(name);
  auto has_word = [&](std::initializer_list<const char*> ws) { return has_any_word(words, ws); };
  // a call that runs work on a pool (vips_threadpool_run, a task arena's execute) configures
  // nothing: what it runs is the program's
  if (has_word({"run", "execute", "submit", "enqueue"})) return "";
  if (contains_any(n, {"affinity", "setaffinity"})) return "affinity";
  // binding calls (hwloc_set_cpubind, hwloc_alloc_membind, bind_thread): functions only, not the
  // flags and policies named after them (HWLOC_CPUBIND_THREAD); a name that only mentions a CPU
  // set (a conversion, a query) binds nothing
  if (!params.empty() && contains_any(n, {"cpubind", "membind", "cpunodebind", "bind_thread", "pin_thread"}))
    return "affinity";
  // set_dynamic, set_nested: the runtime's own switch (omp_set_dynamic), not an object's
  // (vips_buf_set_dynamic sets a buffer's)
  const bool own_switch = words.size() == 3 && words[1] == "set" && (words[2] == "dynamic" || words[2] == "nested");
  if (own_switch ||
      contains_any(n, {"num_threads", "numthreads", "nthreads", "nbworkers", "nb_workers", "thread_count",
                       "max_threads", "threads_num", "concurrency", "parallelism", "num_procs", "cpu_number",
                       "thread_limit", "set_threads", "max_active_levels"}))
    return n.find("worker") != std::string::npos ? "workers" : "threads";
  if (contains_any(n, {"threadpool", "thread_pool", "jobsize", "job_size", "overlaplog", "overlap_log"})) return "workers";
  if (contains_any(n, {"mallctl", "malloc_conf", "arena", "mallocx_", "malloc_stats"})) return "allocator";
  // the size or limit of the library's cache (vips_cache_set_max_mem): a resource limit
  if (!params.empty() && has_word({"set"}) && has_word({"cache"}) && has_word({"max", "size", "limit", "capacity"}))
    return "limit";
  // a call that empties the library's cache as a whole, taking nothing (vips_cache_drop_all):
  // like a pause of the runtime's threads, it gives back what the cache holds and the library
  // goes on; one that takes an object empties that object's
  if ((params == "()" || params == "(void)") && has_word({"cache", "caches"}) &&
      has_word({"drop", "flush", "purge", "clear", "trim", "empty"}))
    return "limit";
  // a switch of the library's vector (SIMD) code paths (vips_vector_set_enabled)
  if (!params.empty() && has_word({"set"}) && has_word({"vector", "simd"})) return "setting";
  // the allocator the library allocates with (omp_set_default_allocator, uv_replace_allocator)
  if (!params.empty() && has_word({"set", "replace", "use", "install"}) && has_word({"allocator"})) return "allocator";
  // the library's settings as a whole, from a string or a table (kmp_set_defaults)
  if (!params.empty() && has_word({"set"}) && has_word({"defaults", "settings", "options"})) return "setting";
  // a call that pauses, releases or frees the runtime's threads and resources
  // (omp_pause_resource_all, blosc_free_resources)
  if (!params.empty() && has_word({"pause", "release", "free"}) && has_word({"resource", "resources", "threads", "workers"}))
    return "threads";
  // a thread cache (tcache) as a word of its own, not the end of GetCache
  for (size_t at = n.find("tcache"); at != std::string::npos; at = n.find("tcache", at + 1))
    if (at == 0 || !std::isalpha(static_cast<unsigned char>(n[at - 1]))) return "allocator";
  if (contains_any(n, {"setdevice", "set_device", "device_id", "select_device"})) return "device";
  // the OS scheduling priority of a process or thread (uv_os_setpriority(uv_pid_t pid, int),
  // as setpriority(2) sets it): how much of the CPU it gets beside the others
  if ((n.ends_with("setpriority") || n.ends_with("set_priority")) &&
      contains_any(params, {"pid", "tid", "thread", "process"}))
    return "setting";
  if (contains_any(n, {"blocktime", "wait_policy", "spin", "thread_timeout"})) return "spin";
  if (contains_any(n, {"global_control", "task_arena", "task_scheduler_init", "init_threads", "cleanup_threads",
                       "make_planner_thread_safe", "threads_set_callback"}))
    return "threads";
  // a limit set or read through the library (SetMagickResourceLimit, cudaDeviceSetLimit): a
  // keyed setter when its argument is an enum of the limits (scan_headers lists each value)
  // (the limit of the library's resources or of the device, not a limit of one drawing call)
  if (!params.empty() && contains_any(n, {"set", "get"}))
    for (const char* w : {"resourcelimit", "resource_limit", "setlimit", "set_limit", "getlimit", "get_limit", "setrlimit", "getrlimit"})
      if (n.ends_with(w) || n.ends_with(std::string(w) + "s")) return "limit";
  // parameters that are thread counts make a setter a control even with an unusual name
  if (contains_any(params, {"nthreads", "num_threads", "nbworkers", "max_concurrency", "n_threads"}) &&
      contains_any(n, {"set", "init", "plan_with"}))
    return "threads";
  std::string d = lower(doc);
  if (!d.empty() && contains_any(n, {"set", "init"}) &&
      contains_any(d, {"number of threads", "number of worker", "thread count", "worker threads"}))
    return "threads";
  return "";
}

bool is_header(const std::string& rel) {
  std::string r = lower(rel);
  return r.size() > 2 && (r.ends_with(".h") || r.ends_with(".hpp") || r.ends_with(".hh") || template_suffix(r) > 0);
}

bool is_public_header(const std::string& rel, bool installed) {
  if (!is_header(rel)) return false;
  std::string r = lower(rel);
  // a header of deprecated calls (hwloc/deprecated.h) offers nothing a new contract should use
  if (std::filesystem::path(r).filename().string().starts_with("deprecated.")) return false;
  if (installed) return true;
  std::vector<std::string> parts;
  std::stringstream ss(r);
  for (std::string p; std::getline(ss, p, '/');) parts.push_back(p);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const auto& p = parts[i];
    if (p == "test" || p == "tests" || p == "testing" || p == "example" || p == "examples" || p == "bench" ||
        p == "benchmark" || p == "benchmarks" || p == "internal" || p == "detail" || p == "contrib" ||
        p == "doc" || p == "docs" || p == "3rdparty" || p == "third_party" || p == "thirdparty" ||
        p == "python" || p == "programs" || p == "legacy" || p == "deprecated" || p == "lapack-netlib" || p == "private" ||
        p == "relapack" || p == "zlibwrapper" || p == "build" || p == "msvc" || p == "win32" || p == "tools")
      return false;
  }
  for (auto& p : parts)
    if (p == "include" || p == "api") return true;
  if (parts.size() == 1) return parts[0] != "config.h" && parts[0].rfind("common", 0) != 0 && parts[0] != "param.h";
  if (parts.size() == 2 && parts[0] == "lib") return true;  // zstd: lib/zstd.h
  return false;
}

std::vector<ApiControl> scan_headers(const std::vector<std::pair<std::string, std::string>>& headers,
                                     const std::vector<std::string>& include_dirs,
                                     const std::vector<std::string>& knob_names, Diagnostics& diags,
                                     const std::vector<std::pair<std::string, std::string>>& tree_headers) {
  std::vector<ApiControl> out;
  if (headers.empty()) return out;
  std::vector<Knob> knobs;
  for (auto& k : knob_names) {
    size_t u = k.find('_');
    if (u != std::string::npos && u > 0 && u + 1 < k.size() && knobs.size() < 4096)
      knobs.emplace_back(lower(k.substr(0, u)), lower(k.substr(u + 1)));
  }
  std::sort(knobs.begin(), knobs.end());
  knobs.erase(std::unique(knobs.begin(), knobs.end()), knobs.end());
  CXIndex index = clang_createIndex(0, 0);
  std::set<std::string> seen, done;
  std::set<std::string> incs;
  std::map<std::string, std::string> public_rel;
  for (auto& [path, rel] : headers) {
    incs.insert(std::filesystem::path(path).parent_path().string());
    std::string r = real(path);
    public_rel[r.substr(0, r.size() - template_suffix(r))] = rel;
  }
  Includes found = resolve_includes(headers, tree_headers);
  incs.insert(found.dirs.begin(), found.dirs.end());
  // umbrella headers first (those no other public header includes): one unit then covers the
  // headers it includes, with the macros and types they need from each other
  std::vector<std::pair<std::string, std::string>> order;
  for (int pass = 0; pass < 2; ++pass)
    for (auto& h : headers) {
      std::string gen = h.second.substr(0, h.second.size() - template_suffix(h.second));
      if (found.included.count(gen) == (pass == 0 ? 0u : 1u)) order.push_back(h);
    }
  // the opt-in sections of every public header, whichever unit reaches it
  std::set<std::string> opt_in;
  for (auto& [path, rel] : headers)
    for (auto& m : opt_in_macros(template_suffix(rel) > 0 ? unconfigure(path) : slurp(path))) opt_in.insert(m);
  std::map<std::string, std::string> aliases;
  std::set<std::string> taken_enums;
  std::map<size_t, std::string> enumerators;
  std::map<std::string, std::string> enum_names;
  std::map<std::string, std::vector<ApiControl>> enum_values;
  std::vector<OptionSetter> option_setters;
  std::map<std::string, std::vector<DocGroup>> groups;
  auto start = std::chrono::steady_clock::now();
  for (auto& [path, rel] : order) {
    std::string key = real(path);
    key = key.substr(0, key.size() - template_suffix(key));
    if (done.count(key)) continue;  // already covered by an including header
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) {
      diags.warning({rel, 0, 0}, "libclang header pass stopped after 60 s; remaining public headers not parsed",
                    "clang-budget", "pass the umbrella header's folder alone, or --no-api");
      break;
    }
    bool cxx = rel.ends_with(".hpp") || rel.ends_with(".hh");
    std::string contents;
    bool templ = template_suffix(rel) > 0;
    if (!cxx) {
      std::ifstream in(path, std::ios::binary);
      std::string head(4096, '\0');
      in.read(head.data(), static_cast<std::streamsize>(head.size()));
      head.resize(static_cast<size_t>(in.gcount()));
      for (const char* w : {"namespace ", "template", "class ", "std::"})
        if (head.find(w) != std::string::npos) cxx = true;
    }
    // the compiler the library's users build with: GCC 12 (FFTW's quad API checks __GNUC__)
    std::vector<std::string> args = {"-x", cxx ? "c++" : "c", cxx ? "-std=c++17" : "-std=gnu11",
                                     "-fparse-all-comments", "-Wno-everything", "-ferror-limit=0",
                                     "-fgnuc-version=12.2.0"};
    for (auto& m : opt_in) args.push_back("-D" + m);
    for (auto& d : include_dirs) args.push_back("-I" + d);
    for (auto& d : incs) args.push_back("-I" + d);
    std::vector<const char*> argv;
    for (auto& a : args) argv.push_back(a.c_str());
    std::string parse_name = path.substr(0, path.size() - template_suffix(path));
    // the template itself under the name it would be generated as, and every template the
    // public headers include in place of its missing output
    std::vector<CXUnsavedFile> unsaved;
    if (templ) {
      contents = unconfigure(path);
      unsaved.push_back({parse_name.c_str(), contents.c_str(), static_cast<unsigned long>(contents.size())});
    }
    for (auto& [name, text] : found.stand_ins)
      if (name != parse_name) unsaved.push_back({name.c_str(), text.c_str(), static_cast<unsigned long>(text.size())});
    CXTranslationUnit tu = nullptr;
    unsigned flags = CXTranslationUnit_SkipFunctionBodies | CXTranslationUnit_Incomplete |
                     CXTranslationUnit_DetailedPreprocessingRecord | CXTranslationUnit_KeepGoing;
    CXErrorCode rc = clang_parseTranslationUnit2(index, parse_name.c_str(), argv.data(), static_cast<int>(argv.size()),
                                                 unsaved.empty() ? nullptr : unsaved.data(),
                                                 static_cast<unsigned>(unsaved.size()), flags, &tu);
    if (rc == CXError_Crashed) {
      diags.warning({rel, 0, 0}, "libclang stopped on this header (out of memory or crashed: a file it includes "
                    "may be endless, such as a device)", "clang-parse", "check the header's #include lines");
      continue;
    }
    if (rc != CXError_Success || !tu) {
      diags.warning({rel, 0, 0}, "libclang could not parse this header (error " + std::to_string(rc) + ")",
                    "clang-parse", "pass its include folders with -I");
      continue;
    }
    std::set<std::string> covered;
    Visit v{&public_rel, &done, &covered, rel, &out, &seen, &knobs, &aliases, &taken_enums, &enumerators,
            &enum_names, &enum_values, &option_setters, &groups};
    clang_visitChildren(clang_getTranslationUnitCursor(tu), visit, &v);
    done.insert(key);
    done.insert(covered.begin(), covered.end());
    clang_disposeTranslationUnit(tu);
  }
  clang_disposeIndex(index);
  // An enumerator names a setting only as a value some setting call takes (ZSTD_c_nbWorkers, of
  // ZSTD_cParameter, for ZSTD_CCtx_setParameter): one of an enum no such call takes is a value
  // the library reports (kmp_mutex_impl_spin, given to a tool's callback), not a control.
  {
    std::vector<ApiControl> kept;
    for (size_t i = 0; i < out.size(); ++i) {
      auto e = enumerators.find(i);
      if (e == enumerators.end() || e->second.empty() || taken_enums.count(e->second)) kept.push_back(std::move(out[i]));
    }
    out = std::move(kept);
  }
  // An options entry point (git_libgit2_opts(int option, ...)) and, of the enum that names its
  // options (its parameter's type, else the enum whose name is the entry point's: the words of
  // git_libgit2_opt_t are git_libgit2_opts's, plural aside), each value that sets something
  // (SET, ENABLE, DISABLE among its words; GET reads): one control per option, as for a keyed
  // limit setter.
  auto singular = [](std::string w) {
    if (w.size() > 3 && w.back() == 's') w.pop_back();
    return w;
  };
  for (auto& [setter, key_enum, sets_every_key] : option_setters) {
    std::string usr = key_enum;
    if (usr.empty()) {
      std::set<std::string> fw;
      for (auto& w : lpcl::identifier_words(setter.name)) fw.insert(singular(w));
      for (auto& [ename, eusr] : enum_names) {
        auto ew = lpcl::identifier_words(ename);
        if (!ew.empty() && ew.back() == "t") ew.pop_back();
        if (ew.size() < 2 || !std::all_of(ew.begin(), ew.end(), [&](const std::string& w) { return fw.count(singular(w)) > 0; }))
          continue;
        usr = eusr;
        break;
      }
    }
    auto values = enum_values.find(usr);
    if (usr.empty() || values == enum_values.end()) continue;
    std::vector<ApiControl> keyed;
    for (auto& e : values->second) {
      auto ew = lpcl::identifier_words(e.name);
      const bool sets = sets_every_key || std::any_of(ew.begin(), ew.end(), [](const std::string& w) {
                          return w == "set" || w == "enable" || w == "disable";
                        });
      const bool reads = std::any_of(ew.begin(), ew.end(), [](const std::string& w) { return w == "get"; });
      if (!sets || reads || sentinel(e.name) || seen.count(e.name)) continue;
      keyed.push_back({e.name, "enum " + setter.name + "::" + e.name, "setting", e.file, e.line, e.doc});
    }
    if (keyed.empty()) continue;
    if (seen.insert(setter.name).second)
      out.push_back(setter);
    for (auto& e : keyed)
      if (seen.insert(e.name).second) out.push_back(std::move(e));
  }
  // a control declared under one name and offered under another by a public macro is listed
  // under the name programs call
  // (omp_set_affinity_format for ompc_set_affinity_format)
  for (auto& [name, target] : aliases) {
    if (seen.count(name)) continue;
    for (auto& ctl : out)
      if (ctl.name == target) {
        ctl.name = name;
        seen.insert(name);
        break;
      }
  }
  return out;
}

}  // namespace syspilot::extract::api
