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
bool sets_knob(const std::string& name, const std::vector<Knob>& knobs) {
  std::string n = lower(name);
  size_t set = n.find("_set_");
  if (set == std::string::npos || set + 5 >= n.size()) return false;
  std::string subject = n.substr(set + 5);
  for (auto& [prefix, rest] : knobs)
    if (n.starts_with(prefix) && n[prefix.size()] == '_' && subject.starts_with(rest) &&
        (subject.size() == rest.size() || subject[rest.size()] == '_'))
      return true;
  return false;
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
};

std::string real(const std::string& p) {
  std::error_code ec;
  auto r = std::filesystem::weakly_canonical(p, ec);
  return ec ? p : r.string();
}

CXChildVisitResult visit(CXCursor c, CXCursor, CXClientData data) {
  auto* v = static_cast<Visit*>(data);
  CXSourceLocation loc = clang_getCursorLocation(c);
  CXFile f;
  unsigned line = 0, col = 0;
  clang_getExpansionLocation(loc, &f, &line, &col, nullptr);
  if (!f) return CXChildVisit_Continue;
  std::string fname = take(clang_getFileName(f));
  auto pub = v->public_rel->find(fname);
  if (pub == v->public_rel->end()) pub = v->public_rel->find(real(fname));
  if (pub == v->public_rel->end() || v->done->count(pub->first)) return CXChildVisit_Continue;
  v->covered->insert(pub->first);
  v->rel = pub->second;
  CXCursorKind k = clang_getCursorKind(c);
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
  if (name.empty() || name[0] == '_') return CXChildVisit_Continue;
  if (k == CXCursor_MacroDefinition && clang_Cursor_isMacroFunctionLike(c) == 0) return CXChildVisit_Continue;
  std::string sig;
  if (fn) {
    std::string params;
    int n = clang_Cursor_getNumArguments(c);
    for (int i = 0; i < n; ++i) {
      CXCursor a = clang_Cursor_getArgument(c, static_cast<unsigned>(i));
      if (i) params += ", ";
      params += take(clang_getTypeSpelling(clang_getCursorType(a)));
      std::string an = take(clang_getCursorSpelling(a));
      if (!an.empty()) params += " " + an;
    }
    std::string ret = k == CXCursor_Constructor ? "" : take(clang_getTypeSpelling(clang_getCursorResultType(c))) + " ";
    CXCursor parent = clang_getCursorSemanticParent(c);
    std::string owner = (k == CXCursor_CXXMethod || k == CXCursor_Constructor)
                            ? take(clang_getCursorSpelling(parent)) + "::" : "";
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
  std::string cat = control_category(name, sig, doc);
  if (cat.empty() && fn && sets_knob(name, *v->knobs)) cat = "setting";
  if (cat.empty() || !v->seen->insert(name).second) return CXChildVisit_Continue;
  v->out->push_back({name, sig, cat, v->rel, static_cast<int>(line), doc});
  return CXChildVisit_Continue;
}

// The length of a configure template's suffix after the header's name: foo.h.in, omp.h.var,
// foo.h.cmake (inputs of autoconf and of CMake's configure_file); 0 for other files.
size_t template_suffix(std::string_view rel) {
  for (std::string_view s : {".h.in", ".h.var", ".h.cmake", ".hpp.in"})
    if (rel.ends_with(s)) return s.size() - s.find('.', 1);
  return 0;
}

// Configure templates (foo.h.in) hold @NAME@ placeholders: drop them so clang sees C.
std::string unconfigure(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '@') {
      size_t j = i + 1;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      if (j < s.size() && s[j] == '@' && j > i + 1) { i = j; continue; }
    }
    out += s[i];
  }
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

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

}  // namespace

std::string control_category(const std::string& name, const std::string& sig, const std::string& doc) {
  std::string n = lower(name), s = lower(sig);
  std::string params = s.find('(') != std::string::npos ? s.substr(s.find('(')) : "";
  if (contains_any(n, {"affinity", "bind_thread", "pin_thread", "setaffinity"})) return "affinity";
  // binding calls (hwloc_set_cpubind, hwloc_alloc_membind): functions only, not the flags and
  // policies named after them; a name that only mentions a CPU set (a conversion, a query)
  // binds nothing
  if (!params.empty() && contains_any(n, {"cpubind", "membind", "cpunodebind"})) return "affinity";
  if (contains_any(n, {"num_threads", "numthreads", "nthreads", "nbworkers", "nb_workers", "thread_count",
                       "max_threads", "threads_num", "concurrency", "parallelism", "num_procs", "cpu_number",
                       "thread_limit", "set_threads", "max_active_levels", "set_dynamic", "set_nested"}))
    return n.find("worker") != std::string::npos ? "workers" : "threads";
  if (contains_any(n, {"threadpool", "thread_pool", "jobsize", "job_size", "overlaplog", "overlap_log"})) return "workers";
  if (contains_any(n, {"mallctl", "malloc_conf", "arena", "tcache", "mallocx_", "malloc_stats"})) return "allocator";
  if (contains_any(n, {"setdevice", "set_device", "device_id", "select_device"})) return "device";
  if (contains_any(n, {"blocktime", "wait_policy", "spin", "thread_timeout"})) return "spin";
  if (contains_any(n, {"global_control", "task_arena", "task_scheduler_init", "init_threads", "cleanup_threads",
                       "make_planner_thread_safe", "threads_set_callback"}))
    return "threads";
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

bool is_public_header(const std::string& rel) {
  std::string r = lower(rel);
  bool header = r.size() > 2 && (r.ends_with(".h") || r.ends_with(".hpp") || r.ends_with(".hh") || template_suffix(r) > 0);
  if (!header) return false;
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
  // a header of deprecated calls (hwloc/deprecated.h) offers nothing a new contract should use
  if (parts.back().starts_with("deprecated.")) return false;
  for (auto& p : parts)
    if (p == "include" || p == "api") return true;
  if (parts.size() == 1) return parts[0] != "config.h" && parts[0].rfind("common", 0) != 0 && parts[0] != "param.h";
  if (parts.size() == 2 && parts[0] == "lib") return true;  // zstd: lib/zstd.h
  return false;
}

std::vector<ApiControl> scan_headers(const std::vector<std::pair<std::string, std::string>>& headers,
                                     const std::vector<std::string>& include_dirs,
                                     const std::vector<std::string>& knob_names, Diagnostics& diags) {
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
  auto start = std::chrono::steady_clock::now();
  for (auto& [path, rel] : headers) {
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
    for (auto& m : opt_in_macros(templ ? unconfigure(path) : slurp(path))) args.push_back("-D" + m);
    for (auto& d : include_dirs) args.push_back("-I" + d);
    for (auto& d : incs) args.push_back("-I" + d);
    std::vector<const char*> argv;
    for (auto& a : args) argv.push_back(a.c_str());
    std::string parse_name = path.substr(0, path.size() - template_suffix(path));
    CXUnsavedFile unsaved{};
    if (templ) {
      contents = unconfigure(path);
      unsaved.Filename = parse_name.c_str();
      unsaved.Contents = contents.c_str();
      unsaved.Length = contents.size();
    }
    CXTranslationUnit tu = nullptr;
    unsigned flags = CXTranslationUnit_SkipFunctionBodies | CXTranslationUnit_Incomplete |
                     CXTranslationUnit_DetailedPreprocessingRecord | CXTranslationUnit_KeepGoing;
    CXErrorCode rc = clang_parseTranslationUnit2(index, parse_name.c_str(), argv.data(), static_cast<int>(argv.size()),
                                                 templ ? &unsaved : nullptr, templ ? 1 : 0, flags, &tu);
    if (rc != CXError_Success || !tu) {
      diags.warning({rel, 0, 0}, "libclang could not parse this header (error " + std::to_string(rc) + ")",
                    "clang-parse", "pass its include folders with -I");
      continue;
    }
    std::set<std::string> covered;
    Visit v{&public_rel, &done, &covered, rel, &out, &seen, &knobs};
    clang_visitChildren(clang_getTranslationUnitCursor(tu), visit, &v);
    done.insert(key);
    done.insert(covered.begin(), covered.end());
    clang_disposeTranslationUnit(tu);
  }
  clang_disposeIndex(index);
  return out;
}

}  // namespace syspilot::extract::api
