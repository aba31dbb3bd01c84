// The offline drafter: deterministic rules from facts to LPCL (knob roles from
// knob_rules.txt, types and defaults from code, fallback chains, pool and spin behaviour).
// It is the default drafter and the source of deterministic repairs.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>

#include "synth/draft.h"

#include "extract/extract.h"
#include "lpcl/lpcl.h"
#include "lpcl/syntax.h"
#include "synth/rules.h"

namespace syspilot::synth {

using lpcl::Expr;
using lpcl::Type;

std::string fact_ref(const std::string& file, int line) {
  return line > 0 ? file + ":" + std::to_string(line) : file;
}

std::string symbol_ref(const extract::BinaryFacts& object, const std::string& symbol) {
  // By soname, as the dynamic linker names it, so that the citation does not depend on where
  // the object was installed.
  std::string name = object.soname;
  if (name.empty()) name = object.path.substr(object.path.find_last_of('/') + 1);
  return name + "#" + symbol;
}

std::string lpcl_name(const std::string& n) {
  std::string out;
  for (size_t i = 0; i < n.size(); ++i) {
    if (n.compare(i, 2, "::") == 0) {
      out += '.';
      ++i;
    } else if (std::isalnum(static_cast<unsigned char>(n[i])) || n[i] == '_') {
      out += n[i];
    } else {
      return "";  // operators, templates: no LPCL name
    }
  }
  return out.empty() || out[0] == '.' || std::isdigit(static_cast<unsigned char>(out[0])) ? "" : out;
}

FactIndex::FactIndex(const extract::Facts& f) {
  for (auto& e : f.env_vars) {
    env.insert(e.name);
    refs.insert(fact_ref(e.file, e.line));
  }
  for (auto& d : f.doc_mentions) {
    env.insert(d.name);
    if (auto o = option_key(d.name)) {
      env.insert(o->key);
      env.insert(o->carrier);
    }
    refs.insert(fact_ref(d.file, d.line));
  }
  for (auto& a : f.api_controls) {
    api.insert(a.name);
    api.insert(lpcl_name(a.name));
    refs.insert(fact_ref(a.file, a.line));
  }
  for (auto& t : f.threading) refs.insert(fact_ref(t.file, t.line));
  for (auto& b : f.binaries) {
    for (auto& k : b.knob_strings) env.insert(k);
    for (auto& x : b.exports) api.insert(x);
    if (!b.soname.empty()) sonames.insert(b.soname);
    refs.insert(b.path);
    // A shared object's symbols are its citable places: "libgomp.so.1#GOMP_parallel".
    for (auto& x : b.imports) refs.insert(symbol_ref(b, x));
    for (auto& x : b.exports) refs.insert(symbol_ref(b, x));
  }
}

Expr name_expr(const std::string& n) {
  Expr e;
  e.kind = Expr::Kind::Name;
  e.text = n;
  return e;
}

Expr int_expr(long long v) {
  Expr e;
  e.kind = Expr::Kind::Int;
  e.text = std::to_string(v);
  return e;
}

namespace {

// 1 to ncpus: the domain of a count of CPU threads, set in the environment or through a call.
lpcl::Domain thread_count_domain() {
  lpcl::Domain d;
  d.kind = lpcl::Domain::Kind::Range;
  d.lo = int_expr(1);
  d.hi = name_expr("ncpus");
  return d;
}

bool parses_int(const std::string& s, long long* out = nullptr) {
  if (s.empty()) return false;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 0);
  if (*end != '\0') return false;
  if (out) *out = v;
  return true;
}

bool parses_float(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return *end == '\0';
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool contains(const std::string& hay, const std::string& needle) {
  return upper(hay).find(upper(needle)) != std::string::npos;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string base_name(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Build files describe how the library is compiled: their variables are not the running
// library's controls.
bool build_file(const std::string& path) {
  const std::string b = lower(base_name(path));
  return b == "cmakelists.txt" || b.ends_with(".cmake") || b.rfind("makefile", 0) == 0 || b.ends_with(".mk") ||
         b.rfind("configure", 0) == 0 || b == "meson.build" || b == "meson_options.txt";
}

// Test suites, benchmarks and examples read variables of their own (OPENBLAS_TEST,
// OPENBLAS_ORDER): a read there is not the library reading its environment.
bool harness_file(const std::string& path) {
  std::string dir = lower(path);
  for (size_t start = 0;;) {
    size_t slash = dir.find('/', start);
    if (slash == std::string::npos) return false;
    const std::string part = dir.substr(start, slash - start);
    for (const char* h : {"test", "tests", "testing", "ctest", "utest", "benchmark", "benchmarks", "bench", "examples",
                          "example", "demo", "demos"})
      if (part == h) return true;
    start = slash + 1;
  }
}

// Change logs say what changed once, not what a control does now.
bool changelog_file(const std::string& path) {
  const std::string b = lower(base_name(path));
  for (const char* p : {"changelog", "changes", "news", "history", "release_notes", "releasenotes", "whatsnew"})
    if (b.rfind(p, 0) == 0) return true;
  return b.find("changelog") != std::string::npos;
}

// FOO_BAR: the shape of an environment variable; function names (openblas_set_num_threads)
// and words (num_threads) are never environment variables.
bool env_shaped(const std::string& n) {
  if (n.size() < 3 || !std::isupper(static_cast<unsigned char>(n[0])) || n.find('_') == std::string::npos) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool has_word(const std::string& low, const std::string& w) {
  for (size_t p = low.find(w); p != std::string::npos; p = low.find(w, p + 1)) {
    const bool left = p == 0 || !std::isalnum(static_cast<unsigned char>(low[p - 1]));
    const bool right = p + w.size() >= low.size() || !std::isalpha(static_cast<unsigned char>(low[p + w.size()]));
    if (left && right) return true;
  }
  return false;
}

// "Set the environment variable X", "export X=1": the sentence itself says X is read from the
// environment, not merely that X has a value.
bool explicit_environment(const std::string& sentence) {
  const std::string low = lower(sentence);
  return low.find("environment") != std::string::npos || has_word(low, "export") || has_word(low, "setenv") ||
         has_word(low, "getenv");
}

// Does a documentation sentence present a name as something set in the environment of a
// running program, rather than as a make variable, macro or build option?
bool runtime_sentence(const std::string& sentence) {
  if (explicit_environment(sentence)) return true;
  const std::string low = lower(sentence);
  if (low.find("makefile") != std::string::npos) return false;
  for (const char* w : {"make", "cmake", "build", "built", "compile", "compiled", "compiling", "configure",
                        "configuring", "configured", "macro", "#define"})
    if (has_word(low, w) || (w[0] == '#' && low.find(w) != std::string::npos)) return false;
  return true;
}

std::string trim_doc(std::string s);


// MALLOCX_ARENA( a ), f(NAME), or a bare term standing alone: a macro or flag of the API, not a
// variable the documentation tells anyone to set.
bool call_like(const std::string& name, const std::string& sentence) {
  if (trim_doc(sentence) == name) return true;
  for (size_t p = sentence.find(name); p != std::string::npos; p = sentence.find(name, p + 1)) {
    size_t q = p + name.size();
    while (q < sentence.size() && sentence[q] == ' ') ++q;
    if (q < sentence.size() && sentence[q] == '(') return true;
    size_t b = p;
    while (b > 0 && sentence[b - 1] == ' ') --b;
    if (b > 0 && sentence[b - 1] == '(') return true;  // STRINGIFY(MALLCTL_ARENAS_ALL): an argument in code
  }
  return false;
}

// Identifiers written as calls in a sentence: "Unless MALLOCX_TCACHE( tc ) or ..." -> MALLOCX_TCACHE.
std::vector<std::string> call_forms(const std::string& sentence) {
  std::vector<std::string> out;
  for (size_t i = 0; i < sentence.size();) {
    auto word = [&](size_t k) { return std::isalnum(static_cast<unsigned char>(sentence[k])) || sentence[k] == '_'; };
    if (!word(i) || (i > 0 && word(i - 1))) {
      ++i;
      continue;
    }
    size_t e = i;
    while (e < sentence.size() && word(e)) ++e;
    size_t q = e;
    while (q < sentence.size() && sentence[q] == ' ') ++q;
    if (q < sentence.size() && sentence[q] == '(') out.push_back(sentence.substr(i, e - i));
    i = e;
  }
  return out;
}

// "MALLOCX_TCACHE_NONE" -> "MALLOCX_": the family a macro name belongs to; "" when too short.
std::string family_of(const std::string& name) {
  auto us = name.find('_');
  return us == std::string::npos || us < 2 ? "" : name.substr(0, us + 1);
}

// Does a sentence present `name` as a flag passed in a call's argument? It says so ("flags
// argument", "bitwise or"), or names it beside a function-like macro of its own family
// ("Unless MALLOCX_TCACHE(tc) or MALLOCX_TCACHE_NONE is specified"): members of one macro
// family are used the same way.
bool flag_sentence(const std::string& name, const std::string& sentence) {
  const std::string low = lower(sentence);
  if (has_word(low, "flags") || low.find("bitwise") != std::string::npos) return true;
  const std::string family = family_of(name);
  if (family.empty()) return false;
  for (auto& f : call_forms(sentence))
    if (f != name && f.rfind(family, 0) == 0) return true;
  return false;
}

// A function-like macro computes a value where it is written (a flag, an index, an alignment
// for one call's argument): the library reads no setting through it, and it has no symbol the
// preload shim could call. A setter behind a macro is declared as a function of its own.
bool function_like_macro(const extract::ApiControl& a) { return a.signature.rfind("#define ", 0) == 0; }

// The prefix a library's own knobs start with: "openblas" -> "OPENBLAS_", "libgomp" -> "GOMP_".
std::string library_prefix(const std::string& lib) {
  std::string s = lib;
  if (s.rfind("lib", 0) == 0 && s.size() > 3) s = s.substr(3);
  std::string p;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) break;
    p += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return p.empty() ? p : p + "_";
}

Type type_for(const std::string& code_type, const KnobRole* role, const std::string& name) {
  Type t;
  if (code_type == "int") { t.kind = Type::Kind::Int; return t; }
  if (code_type == "float") { t.kind = Type::Kind::Float; return t; }
  if (code_type == "bool") { t.kind = Type::Kind::Bool; return t; }
  if (code_type == "string") { t.kind = Type::Kind::String; return t; }
  const std::string r = role ? role->role : "";
  t.kind = Type::Kind::String;
  if (r == "threads") t.kind = contains(name, "BACKGROUND") ? Type::Kind::Bool : Type::Kind::Int;
  else if (r == "spin") t.kind = contains(name, "POLICY") ? Type::Kind::String : Type::Kind::Int;
  else if (r == "nesting") t.kind = contains(name, "LEVELS") ? Type::Kind::Int : Type::Kind::Bool;
  else if (r == "arena" || r == "streams" || r == "allocator" || r == "introspect") t.kind = Type::Kind::Int;
  return t;
}

// Thread-count knobs whose value is the pool size (not caps, not per-loop partitions).
bool pool_size_knob(const lpcl::Control& c) {
  if (c.how.kind != lpcl::ControlKind::Kind::Env || c.type.kind != Type::Kind::Int) return false;
  if (std::find(c.sets.begin(), c.sets.end(), "cpu.threads") == c.sets.end()) return false;
  const std::string n = upper(c.name);
  return n.find("MAX") == std::string::npos && n.find("LIMIT") == std::string::npos &&
         !(n.size() > 3 && n.compare(n.size() - 3, 3, "_NT") == 0) && n.find("LEVELS") == std::string::npos &&
         n.find("DYNAMIC") == std::string::npos && n.find("NESTED") == std::string::npos;
}

// What documentation says of one variable in the clause it introduces ("NAME: 1 to 16 (default
// 1; 2 on AWS)", "NAME=... 64, 128, 256 or 512", "NAME: FASTEST_FIRST or PCI_BUS_ID (default
// FASTEST_FIRST)", "NAME: Default: throughput The values for this variable are serial,
// turnaround, or throughput"): its range or its values, its default, and whether the threads it
// counts run on a GPU ("CUDA threads per block"). Only the clause right after "NAME:" or "NAME="
// up to the next variable's name counts (the variable's own values aside), so a default stated
// for a neighbour in the same sentence is not taken. Examples that assign a word ("NAME=active"
// ... "NAME=passive") are values too, wherever the name stands.
struct DocSpec {
  std::optional<long long> lo, hi, def;
  std::vector<long long> values;
  std::vector<std::string> words;     // values that are words: enum{serial, turnaround, throughput}
  std::vector<std::string> assigned;  // words written as NAME=word
  std::vector<std::string> def_words; // defaults stated as words, in the order stated
  bool def_ncpus = false;             // "Default: the number of processors", "one thread per CPU"
  bool gpu_threads = false;
  // "If neither variable is set, the default number of threads is 1": what holds when none of
  // the variables a sentence speaks of is set (a fallback chain's end).
  std::optional<long long> none_set;
};

// "serial, turnaround, or throughput" at the start of `text`, ending the list's clause. A list
// that goes on "or a list of ..." gives its words and sets `more`.
std::vector<std::string> word_list(const std::string& text, bool* more = nullptr) {
  static const std::regex list_re(
      R"(^\s*([A-Za-z][\w-]*(?:\s*,\s*[A-Za-z][\w-]*)*)\s*,?\s+or\s+([A-Za-z][\w-]*)\s*(?:[.;,)(]|$))");
  static const std::regex open_re(R"(^\s*([A-Za-z][\w-]*(?:\s*,\s*[A-Za-z][\w-]*)+)\s*,?\s+or\s+an?\s+[^.]*\blist\b)");
  std::smatch m;
  const bool closed = std::regex_search(text, m, list_re);
  if (more) *more = false;
  if (!closed) {
    if (!std::regex_search(text, m, open_re)) return {};
    if (more) *more = true;
  }
  std::vector<std::string> out;
  std::string list = m[1].str();
  static const std::regex word(R"([A-Za-z][\w-]*)");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), word); it != std::sregex_iterator(); ++it)
    out.push_back(it->str());
  if (closed) out.push_back(m[2].str());
  return out;
}

DocSpec doc_spec(const std::string& name, const std::string& sentence) {
  DocSpec out;
  static const std::regex assign_re(R"(^=([A-Za-z][\w-]*)(?![\w(]))");
  const std::vector<size_t> occurrences = standalone_at(name, sentence);
  for (size_t at : occurrences) {
    std::smatch a;
    const std::string after = sentence.substr(at + name.size(), 64);
    if (std::regex_search(after, a, assign_re) &&
        std::find(out.assigned.begin(), out.assigned.end(), a[1].str()) == out.assigned.end())
      out.assigned.push_back(a[1].str());
  }
  for (size_t at : occurrences) {
    size_t i = at + name.size();
    while (i < sentence.size() && (sentence[i] == '`' || sentence[i] == '*' || sentence[i] == ' ')) ++i;
    if (i >= sentence.size() || (sentence[i] != ':' && sentence[i] != '=')) continue;
    std::string clause = sentence.substr(i + 1);
    // the values as a list right after the name, or after "values are", "values:", "one of"; a
    // list that ends "or a list ..." ("true, false, or a comma separated list, each element of
    // which is one of the following values: master, close, spread, or primary") has the values
    // of the list it introduces as well
    bool more = false;
    out.words = word_list(clause, &more);
    static const std::regex values_intro(R"(\b(?:values|one of)\b[^.:]*?(?:\bare\b|:)\s*)", std::regex::icase);
    for (auto it = std::sregex_iterator(clause.begin(), clause.end(), values_intro);
         (out.words.empty() || more) && it != std::sregex_iterator(); ++it) {
      bool open = false;
      auto ws = word_list(clause.substr(static_cast<size_t>(it->position(0) + it->length(0))), &open);
      if (ws.empty()) continue;
      for (auto& w : ws)
        if (std::find(out.words.begin(), out.words.end(), w) == out.words.end()) out.words.push_back(w);
      more = open;
    }
    // up to the next variable's name (an upper-case word with an underscore) that is no value of this one
    static const std::regex next_name(R"(\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b)");
    for (auto it = std::sregex_iterator(clause.begin(), clause.end(), next_name); it != std::sregex_iterator(); ++it)
      if (std::find(out.words.begin(), out.words.end(), it->str()) == out.words.end()) {
        clause = clause.substr(0, static_cast<size_t>(it->position(0)));
        break;
      }
    if (clause.size() > 400) clause = clause.substr(0, 400);
    std::smatch m;
    static const std::regex set_re(R"(^\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*,?\s*(?:or|and)\s*(-?\d+)\b)");
    static const std::regex default_re(R"(\bdefault(?:s to| to|:| is| value is| value)?\s*(-?\d+)\b)", std::regex::icase);
    // "an nthreads argument of 1 (the default)": the value the parenthesis calls the default
    static const std::regex default_paren(R"((-?\d+)\s*\((?:the )?default\))", std::regex::icase);
    static const std::regex default_paren_word(R"(\b([A-Za-z][\w-]*)\s*\((?:the )?default\))", std::regex::icase);
    static const std::regex none_set_re(R"(\b(?:neither|none)\b[^.]*?\bset\b[^.]*?\b(?:is|are|to|of)\s+(-?\d+)\b)",
                                        std::regex::icase);
    static const std::regex default_word(R"(\bdefault(?:s to|:| is| value is| value)?\s*\(?([A-Za-z][\w-]*))",
                                         std::regex::icase);
    static const std::regex default_ncpus(
        R"(\bdefault\b[^.]*?\b(?:number of (?:processors|cpus|cores|logical cpus|hardware threads)|one thread per (?:cpu|core|processor)))",
        std::regex::icase);
    if (std::regex_search(clause, m, set_re)) {
      std::string list = m[1].str();
      for (size_t p = 0; p < list.size();) {
        size_t e = list.find(',', p);
        out.values.push_back(std::atoll(list.substr(p, e == std::string::npos ? std::string::npos : e - p).c_str()));
        if (e == std::string::npos) break;
        p = e + 1;
      }
      out.values.push_back(std::atoll(m[2].str().c_str()));
    } else if (auto range = stated_range(clause)) {
      out.lo = range->first;
      out.hi = range->second;
    }
    if (std::regex_search(clause, m, default_re) || std::regex_search(clause, m, default_paren))
      out.def = std::atoll(m[1].str().c_str());
    for (auto it = std::sregex_iterator(clause.begin(), clause.end(), default_word); it != std::sregex_iterator(); ++it)
      out.def_words.push_back((*it)[1].str());
    for (auto it = std::sregex_iterator(clause.begin(), clause.end(), default_paren_word); it != std::sregex_iterator(); ++it)
      out.def_words.push_back((*it)[1].str());
    if (std::regex_search(clause, m, none_set_re)) out.none_set = std::atoll(m[1].str().c_str());
    // "This option is disabled by default": a switch's default
    static const std::regex switch_default(R"(\b(enabled|disabled)\s+by\s+default\b)", std::regex::icase);
    if (std::regex_search(clause, m, switch_default)) out.def_words.push_back(lower(m[1].str()) == "enabled" ? "true" : "false");
    out.def_ncpus = std::regex_search(clause, default_ncpus);
    const std::string low = lower(clause);
    for (const char* w : {"gpu threads", "cuda threads", "threads per block", "threads per cuda block", "per cuda block"})
      if (low.find(w) != std::string::npos) out.gpu_threads = true;
    return out;
  }
  return out;
}

// What one more sentence says of a name, added to what earlier ones said: the first range or
// values and the first default stand; words, assignments and defaults in words accumulate.
void absorb(DocSpec& into, const DocSpec& spec) {
  if (!into.lo && !into.def && into.values.empty()) into.lo = spec.lo, into.hi = spec.hi, into.values = spec.values;
  if (!into.def) into.def = spec.def;
  if (into.words.empty()) into.words = spec.words;
  for (auto& w : spec.assigned)
    if (std::find(into.assigned.begin(), into.assigned.end(), w) == into.assigned.end()) into.assigned.push_back(w);
  into.def_words.insert(into.def_words.end(), spec.def_words.begin(), spec.def_words.end());
  into.def_ncpus |= spec.def_ncpus;
  into.gpu_threads |= spec.gpu_threads;
  if (!into.none_set) into.none_set = spec.none_set;
}

std::string trim_doc(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  std::string out;
  for (char c : s)
    if (!(c == ' ' && !out.empty() && out.back() == ' ')) out += c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  while (!out.empty() && out.front() == ' ') out.erase(out.begin());
  if (out.size() > 200) out = out.substr(0, 197) + "...";
  return out;
}

lpcl::Provenance extracted(std::vector<std::string> refs, size_t most = 3) {
  lpcl::Provenance p;
  // LPCL cites "path:line" or a shared object's symbol, "soname#symbol"; a shared object's path
  // alone or a line-less doc is no reference.
  std::erase_if(refs, [](auto& r) { return !lpcl::is_valid_ref(r); });
  std::sort(refs.begin(), refs.end());
  refs.erase(std::unique(refs.begin(), refs.end()), refs.end());
  if (refs.size() > most) refs.resize(most);
  p.refs = std::move(refs);
  p.origin = lpcl::Origin::Extracted;
  return p;
}

// "void openblas_set_num_threads(int num_threads)" -> "int num_threads"
std::string params_of(const std::string& sig) {
  auto open = sig.find('(');
  auto close = sig.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  std::string p = trim_doc(sig.substr(open + 1, close - open - 1));
  return p == "void" ? "" : p;
}

// A parameter that counts threads: "int num_threads", "int nthreads", "int max_concurrency_",
// "size_t max_allowed_parallelism". Its name says what the call sets, whatever the function's
// own name suggests (a task arena's constructor takes the threads that may work in it). A count
// of workers is not one: workers help the calling thread, and none (0) is a valid count
// (zstd's nbWorkers).
bool thread_count_param(const std::string& param) {
  static const std::regex count(R"((?:^|[\s*&])(?:max_|num_|n_?|nb_?)?(?:threads|concurrency|parallelism)_?\s*$)",
                                std::regex::icase);
  static const std::regex integer(R"(\b(?:int|long|short|unsigned|size_t|u?int\d+_t)\b)");
  return param.find('*') == std::string::npos && std::regex_search(param, integer) && std::regex_search(param, count);
}

bool takes_thread_count(const std::string& params) {
  for (size_t p = 0; p <= params.size();) {
    size_t e = params.find(',', p);
    if (e == std::string::npos) e = params.size();
    if (thread_count_param(params.substr(p, e - p))) return true;
    p = e + 1;
  }
  return false;
}

}  // namespace

Expr literal_expr(const std::string& text, const Type& t) {
  Expr e;
  e.text = text;
  switch (t.kind) {
    case Type::Kind::Int: e.kind = parses_int(text) ? Expr::Kind::Int : Expr::Kind::String; break;
    case Type::Kind::Float: e.kind = parses_float(text) ? Expr::Kind::Float : Expr::Kind::String; break;
    case Type::Kind::Bool:
      if (text == "true" || text == "false") e.kind = Expr::Kind::Bool;
      else if (text == "1" || text == "0") { e.kind = Expr::Kind::Bool; e.text = text == "1" ? "true" : "false"; }
      else e.kind = Expr::Kind::String;
      break;
    default: e.kind = Expr::Kind::String;
  }
  return e;
}

bool expr_mentions(const Expr& e, const std::string& name) {
  if (e.kind == Expr::Kind::Name && e.text == name) return true;
  for (auto& a : e.args)
    if (expr_mentions(a, name)) return true;
  return false;
}

// The contract is written `contract NAME "VERSION"`, so its name is an LPCL identifier: a
// package's name (c-blosc, gstreamer1.0, a folder's name guessed as the library's) is written
// with '_' for every other character, and '_' before a leading digit (c_blosc, gstreamer1_0).
std::string contract_name(const extract::Facts& f, const SynthOptions& o) {
  std::string n = o.library.empty() ? f.library : o.library;
  if (n.empty()) return "library";
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (std::isdigit(static_cast<unsigned char>(n[0]))) n = "_" + n;
  return n;
}

std::string contract_version(const SynthOptions& o) { return o.version.empty() ? "unknown" : o.version; }

std::string per_call_flag(const std::string& name, const extract::Facts& facts) {
  for (auto& a : facts.api_controls)
    if ((a.name == name || lpcl_name(a.name) == name) && function_like_macro(a))
      return "a function-like macro (" + fact_ref(a.file, a.line) + ") computes a value for one call's argument";
  // A declared function is an API control however its documentation writes it.
  for (auto& a : facts.api_controls)
    if (a.name == name || lpcl_name(a.name) == name) return "";
  // Names the library reads (in code or among its binary's strings) are settings whatever the
  // documentation says besides.
  for (auto& e : facts.env_vars)
    if (e.name == name && !harness_file(e.file)) return "";
  for (auto& b : facts.binaries)
    if (std::find(b.knob_strings.begin(), b.knob_strings.end(), name) != b.knob_strings.end()) return "";
  for (auto& d : facts.doc_mentions) {
    if (d.name != name || build_file(d.file) || changelog_file(d.file)) continue;
    if (call_like(name, d.sentence) || flag_sentence(name, d.sentence))
      return "the documentation uses it in a call's argument (" + fact_ref(d.file, d.line) + ")";
  }
  return "";
}

// "fftwf" beside "fftw": the same function for another precision or element type, one letter
// added to the name's first part, the rest and the parameters the same.
bool variant_of(const extract::ApiControl& a, const extract::ApiControl& b) {
  const auto ua = a.name.find('_'), ub = b.name.find('_');
  if (ua == std::string::npos || ub == std::string::npos || a.name.substr(ua) != b.name.substr(ub)) return false;
  const std::string ha = a.name.substr(0, ua), hb = b.name.substr(0, ub);
  const std::string& shorter = ha.size() < hb.size() ? ha : hb;
  const std::string& longer = ha.size() < hb.size() ? hb : ha;
  return longer.size() == shorter.size() + 1 && longer.rfind(shorter, 0) == 0 &&
         params_of(a.signature) == params_of(b.signature);
}

// The default the documentation gives a function's value, said of it or of a variant of it.
std::optional<long long> documented_call_default(const extract::ApiControl& a, const extract::Facts& facts,
                                                 const std::map<std::string, DocSpec>& call_docs) {
  if (auto d = call_docs.find(a.name); d != call_docs.end() && d->second.def) return d->second.def;
  for (auto& other : facts.api_controls)
    if (auto d = call_docs.find(other.name); d != call_docs.end() && d->second.def && variant_of(a, other))
      return d->second.def;
  return std::nullopt;
}

lpcl::Contract draft_offline(const extract::Facts& facts, const SynthOptions& opts) {
  lpcl::Contract c;
  c.name = contract_name(facts, opts);
  c.version = contract_version(opts);
  lpcl::Provenance origin;
  origin.origin = lpcl::Origin::Extracted;
  c.origins.push_back(origin);
  const std::string prefix = library_prefix(c.name);

  // Every knob the facts name, with what each kind of fact says about it.
  // An environment control needs a witness that the running library reads the variable: a
  // read in code (getenv or a wrapper, with file:line), the name among the strings of its
  // shared object, or documentation that sets it in the environment. Function names, words
  // and build variables in prose are none of these.
  struct Knob {
    std::vector<std::string> code_refs, doc_refs;
    std::string code_type, code_default, doc;
    bool in_code = false, in_binary = false, doc_runtime = false, doc_call = false, doc_environment = false;
    bool doc_flag = false;  // documented as a flag passed in a call's argument
    DocSpec spec;           // range, values, default and GPU-side as the docs state them
  };
  struct OptionKnob {
    OptionKey key;
    std::vector<std::string> refs;
    std::string doc;
    DocSpec spec;                             // its default as the documentation states it
    std::optional<Type::Kind> declared;       // "opt.tcache (bool)": the type its entry declares
  };
  std::map<std::string, OptionKnob> option_knobs;
  std::map<std::string, Knob> knobs;
  std::map<std::string, DocSpec> call_docs;  // what the documentation says of a function's value
  // With the library's own code at hand, its reads are the evidence: a name its code never reads
  // and its binary does not hold is most often a build variable (MAX_THREADS=24 in a build line)
  // or another library's knob (OMP_PLACES in OpenBLAS's FAQ). Documentation alone speaks for any
  // name only when no code was read (CUDA's documented variables, an installed man page). Code
  // that starts the library's threads is its code at hand as well, though it reads no variable:
  // then the names its documentation mentions are other libraries' (FFTW's manual on the
  // OMP_NUM_THREADS of an OpenMP program).
  bool code_read = std::any_of(facts.threading.begin(), facts.threading.end(),
                               [](auto& t) { return !harness_file(t.file); });
  for (auto& e : facts.env_vars) {
    if (harness_file(e.file)) continue;
    code_read = true;
    auto& k = knobs[e.name];
    k.in_code = true;
    k.code_refs.push_back(fact_ref(e.file, e.line));
    if (k.code_type.empty() || k.code_type == "unknown") k.code_type = e.type;
    if (k.code_default.empty()) k.code_default = e.default_value;
  }
  for (auto& d : facts.doc_mentions) {
    if (build_file(d.file) || changelog_file(d.file)) continue;
    if (auto o = option_key(d.name)) {
      auto& ok = option_knobs[o->key];
      ok.key = *o;
      ok.refs.push_back(fact_ref(d.file, d.line));
      if (ok.doc.empty()) ok.doc = trim_doc(d.sentence);
      if (!ok.declared) ok.declared = declared_type(d.sentence, {d.name});
      absorb(ok.spec, doc_spec(d.name, d.sentence));
      continue;
    }
    if (!env_shaped(d.name)) {
      absorb(call_docs[d.name], doc_spec(d.name, d.sentence));
      continue;
    }
    const bool runtime = runtime_sentence(d.sentence);
    if (!runtime && !knobs.count(d.name)) continue;
    auto& k = knobs[d.name];
    k.doc_runtime |= runtime;
    k.doc_environment |= runtime && explicit_environment(d.sentence);
    k.doc_call |= call_like(d.name, d.sentence);
    k.doc_flag |= flag_sentence(d.name, d.sentence);
    k.doc_refs.push_back(fact_ref(d.file, d.line));
    if (k.doc.empty() && runtime) k.doc = trim_doc(d.sentence);
    absorb(k.spec, doc_spec(d.name, d.sentence));
  }
  for (auto& b : facts.binaries)
    for (auto& s : b.knob_strings) {
      auto& k = knobs[s];
      k.in_binary = true;
      k.doc_refs.push_back(b.path);
    }

  bool any_spin = false, any_arena = false, any_device = false;
  std::vector<std::pair<std::string, Expr>> spin_params;
  for (auto& [name, k] : knobs) {
    auto role = classify_knob(name);
    const bool own = !prefix.empty() && name.rfind(prefix, 0) == 0;
    // Unclassified knobs enter only when the code reads them and they carry the library's prefix.
    if (!role && !(own && k.in_code)) continue;
    // Written anywhere as a call, a bare flag or a flag of a call's argument, a documented name is
    // the API's, not the environment's.
    if (!k.in_code && !k.in_binary && (!k.doc_runtime || k.doc_call || k.doc_flag)) continue;
    // Beside the library's own reads, prose speaks only for the library's own names, and only when
    // it says outright that they are set in the environment.
    if (!k.in_code && !k.in_binary && code_read && !(own && k.doc_environment)) continue;
    // Documentation and binary strings alone are trusted only for classified knobs.
    lpcl::Control ctl;
    ctl.name = name;
    ctl.how.kind = lpcl::ControlKind::Kind::Env;
    ctl.type = type_for(k.code_type, role ? &*role : nullptr, name);
    // Values the documentation names as words make the type, unless the code reads it as a type
    // of its own: an enum of them, or a switch when they are true and false. A debugging or
    // display variable keeps the type of the value its introspection signal sets.
    const bool introspect = role && role->role == "introspect";
    if (!introspect && (k.code_type.empty() || k.code_type == "unknown")) {
      // Words assigned in examples are its values when the documented default is one of them
      // (OMP_WAIT_POLICY=active, =passive; default passive), not when it is some other form.
      std::vector<std::string> words = k.spec.words;
      const auto& as = k.spec.assigned;
      const bool examples_are_values =
          words.empty() && as.size() >= 2 && std::any_of(k.spec.def_words.begin(), k.spec.def_words.end(), [&](auto& d) {
            return std::find(as.begin(), as.end(), d) != as.end();
          });
      if (examples_are_values) words = as;
      const bool switch_words = std::all_of(words.begin(), words.end(), [](auto& w) { return w == "true" || w == "false"; });
      if (!words.empty() && switch_words) {
        ctl.type = {};
        ctl.type.kind = Type::Kind::Bool;
      } else if (!words.empty()) {
        // A switch with more values ("true, false, or a list of ..."): its switch values come
        // first, in a switch's order (false, true), then the others as listed.
        if (std::find(words.begin(), words.end(), "true") != words.end() &&
            std::find(words.begin(), words.end(), "false") != words.end()) {
          std::erase(words, std::string("true"));
          std::erase(words, std::string("false"));
          words.insert(words.begin(), {"false", "true"});
        }
        ctl.type = {};
        ctl.type.kind = Type::Kind::Enum;
        ctl.type.enumerators = words;
      }
    }
    // threads the docs say run on a GPU (CUDA threads per block) are no CPU threads
    const bool gpu_side = k.spec.gpu_threads && role && role->role == "threads";
    if (role && !role->resource.empty() && !gpu_side) ctl.sets.push_back(role->resource);
    if (role && role->role == "threads" && ctl.type.kind == Type::Kind::Int && !gpu_side) ctl.domain = thread_count_domain();
    // the range or the values the docs give, on a number
    if (ctl.type.kind == Type::Kind::Int && !k.spec.values.empty()) {
      ctl.domain = {};
      ctl.domain.kind = lpcl::Domain::Kind::Set;
      for (long long v : k.spec.values) ctl.domain.values.push_back(int_expr(v));
    } else if (ctl.type.kind == Type::Kind::Int && k.spec.lo) {
      ctl.domain = {};
      ctl.domain.kind = lpcl::Domain::Kind::Range;
      ctl.domain.lo = int_expr(*k.spec.lo);
      ctl.domain.hi = int_expr(*k.spec.hi);
    }
    if (k.code_default.empty() && k.spec.def && ctl.type.kind == Type::Kind::Int) k.code_default = std::to_string(*k.spec.def);
    // A default stated in words: one of an enum's values, or true/false of a switch.
    for (auto& w : k.spec.def_words) {
      if (!k.code_default.empty()) break;
      const auto& en = ctl.type.enumerators;
      if ((ctl.type.kind == Type::Kind::Enum && std::find(en.begin(), en.end(), w) != en.end()) ||
          (ctl.type.kind == Type::Kind::Bool && (w == "true" || w == "false")))
        k.code_default = w;
    }
    if (!k.code_default.empty()) {
      Expr d = literal_expr(k.code_default, ctl.type);
      long long v = 0;
      const bool below_domain = ctl.domain.kind == lpcl::Domain::Kind::Range && parses_int(k.code_default, &v) && v < 1;
      if (ctl.type.kind == Type::Kind::Enum) d.kind = Expr::Kind::Name;  // an enumerator, not a string
      // A 0 default on a thread count is the "unset" sentinel, not a value: the demand says what happens.
      if (!below_domain && (d.kind != Expr::Kind::String || ctl.type.kind == Type::Kind::String)) ctl.default_value = d;
    } else if (k.spec.def_ncpus && ctl.type.kind == Type::Kind::Int && ctl.domain.kind == lpcl::Domain::Kind::Range &&
               ctl.domain.hi && ctl.domain.hi->kind == Expr::Kind::Name && ctl.domain.hi->text == "ncpus") {
      // "Default: the number of processors": a thread count's default is the whole machine.
      ctl.default_value = name_expr("ncpus");
    }
    // Read where the code reads it, or named among the shared object's strings: a runtime that
    // holds a variable's name reads it when it starts (libgomp's initialize_env, libomp's
    // __kmp_env_initialize); prose alone says nothing of when.
    if (k.in_code || k.in_binary) ctl.read_at = lpcl::ReadAt::Init;
    ctl.doc = k.doc;
    ctl.prov = extracted(k.in_code ? k.code_refs : k.doc_refs);
    c.controls.push_back(std::move(ctl));
    if (role && role->role == "spin") {
      any_spin = true;
      std::string key = contains(name, "POLICY") ? "policy" : contains(name, "COUNT") ? "spin_count" : "idle_timeout";
      if (std::none_of(spin_params.begin(), spin_params.end(), [&](auto& p) { return p.first == key; }))
        spin_params.emplace_back(key, name_expr(name));
    }
    if (role && role->role == "arena") any_arena = true;
    if (role && role->role == "device") any_device = true;
    if (role && role->role == "introspect") {
      lpcl::Signal s;
      s.kind = lpcl::Signal::Kind::Introspect;
      s.metric = name;
      const auto& t = c.controls.back().type;
      s.value = t.kind == Type::Kind::Bool ? literal_expr("true", t) : t.kind == Type::Kind::String ? literal_expr("true", t) : int_expr(1);
      s.prov = extracted(c.controls.back().prov.refs);
      c.signals.push_back(std::move(s));
    }
  }

  // Keys of carrier variables (MALLOC_CONF, GLIBC_TUNABLES) named in the documentation.
  for (auto& [key, ok] : option_knobs) {
    auto role = classify_knob(key);
    if (!role || c.find_control(key)) continue;
    lpcl::Control ctl;
    ctl.name = key;
    ctl.how.kind = lpcl::ControlKind::Kind::Option;
    ctl.how.carrier = ok.key.carrier;
    ctl.how.item_sep = ok.key.item_sep;
    ctl.how.kv_sep = ok.key.kv_sep;
    ctl.type = type_for("", &*role, key);
    // The type its entry declares, bounds and a default as an environment control gets them: a
    // count of threads in [1, ncpus]; a stated number, or a switch "enabled/disabled by default".
    if (ok.declared && (*ok.declared == Type::Kind::Bool || *ok.declared == Type::Kind::Int)) {
      ctl.type = {};
      ctl.type.kind = *ok.declared;
    }
    if (role->role == "threads" && ctl.type.kind == Type::Kind::Int) ctl.domain = thread_count_domain();
    if (ctl.type.kind == Type::Kind::Bool) {
      for (auto& w : ok.spec.def_words)
        if (!ctl.default_value && (w == "true" || w == "false")) ctl.default_value = literal_expr(w, ctl.type);
    } else if (ctl.type.kind == Type::Kind::Int && ok.spec.def && *ok.spec.def >= (ctl.domain.kind == lpcl::Domain::Kind::Range ? 1 : 0)) {
      ctl.default_value = int_expr(*ok.spec.def);
    }
    if (!role->resource.empty()) ctl.sets.push_back(role->resource);
    ctl.doc = ok.doc;
    ctl.prov = extracted(ok.refs);
    if (role->role == "spin") any_spin = true;
    if (role->role == "arena") any_arena = true;
    c.controls.push_back(std::move(ctl));
  }

  // Classes whose constructor takes a count of threads (task_arena(max_concurrency)): the class
  // and its members act on those threads, whatever their names suggest.
  std::set<std::string> thread_classes;
  for (auto& a : facts.api_controls) {
    const auto sep = a.name.rfind("::");
    if (sep == std::string::npos || sep == 0) continue;
    const std::string cls = a.name.substr(0, sep);
    const auto outer = cls.rfind("::");
    const bool constructor = a.name.substr(sep + 2) == (outer == std::string::npos ? cls : cls.substr(outer + 2));
    if (constructor && takes_thread_count(params_of(a.signature))) thread_classes.insert(lpcl_name(cls));
  }
  auto of_thread_class = [&](const std::string& n) {
    for (auto& k : thread_classes)
      if (n == k || n.rfind(k + ".", 0) == 0) return true;
    return false;
  };
  // API controls come only from declared functions (headers, exports), never from prose.
  for (auto& a : facts.api_controls) {
    auto role = classify_knob(a.name, a.category);
    const std::string name = lpcl_name(a.name);
    if (!role || name.empty() || c.find_control(name)) continue;
    if (function_like_macro(a)) continue;  // a per-call flag, not a setting
    if (lpcl::is_query_function(a.name, a.signature, a.doc)) continue;  // omp_get_num_threads reads the setting, takes none
    if (lpcl::is_object_lifecycle(a.name, a.signature)) continue;        // omp_init_lock makes a lock, sets nothing
    lpcl::Control ctl;
    ctl.name = name;
    ctl.how.kind = lpcl::ControlKind::Kind::Api;
    ctl.how.params = params_of(a.signature);
    ctl.type.kind = Type::Kind::Int;
    // A count of threads among the parameters decides what the call sets, and bounds it as the
    // environment's thread counts are bounded.
    const bool own_count = takes_thread_count(ctl.how.params);
    const bool counts_threads = own_count || of_thread_class(name);
    if (own_count) ctl.domain = thread_count_domain();
    // The value the documentation calls the default ("an nthreads argument of 1 (the default)"),
    // said of this function or of its variant for another precision, within the domain.
    if (auto def = documented_call_default(a, facts, call_docs)) {
      long long lo = 0;
      const bool below = ctl.domain.kind == lpcl::Domain::Kind::Range && ctl.domain.lo &&
                         parses_int(ctl.domain.lo->text, &lo) && *def < lo;
      if (!below) ctl.default_value = int_expr(*def);
    }
    if (counts_threads) {
      ctl.sets.push_back("cpu.threads");
    } else if (!role->resource.empty()) {
      ctl.sets.push_back(role->resource);
    }
    ctl.read_at = lpcl::ReadAt::Call;
    ctl.doc = trim_doc(a.doc);
    ctl.prov = extracted({fact_ref(a.file, a.line)});
    if (role->role == "spin") any_spin = true;
    if (role->role == "arena" && !counts_threads) any_arena = true;
    if (role->role == "device") any_device = true;
    c.controls.push_back(std::move(ctl));
  }

  // Thread creation and parallel regions, from the code and from the shared objects. A shared
  // object shows what was built: it imports pthread_create when it starts threads, and imports
  // (or, being the runtime, exports) a parallel-region entry such as GOMP_parallel when its work
  // runs in that runtime's regions.
  std::vector<std::string> create_refs, affinity_refs, spin_refs, gpu_refs;
  std::map<std::string, std::vector<std::string>> region_refs;  // kind -> citations
  std::vector<std::string> code_region_refs;                  // #pragma omp parallel in the code
  bool object_seen = false, object_omp = false;
  for (auto& b : facts.binaries) {
    if (b.soname.empty()) continue;
    object_seen = true;
    for (auto& x : b.imports)
      if (x == "pthread_create" || x == "clone") create_refs.push_back(symbol_ref(b, x));
    // One citation per kind of region and object: the entry that sorts first.
    std::map<std::string, std::string> entry;
    for (const auto* syms : {&b.imports, &b.exports})
      for (auto& x : *syms) {
        if (x.rfind("GOMP_", 0) == 0 || x.rfind("__kmpc_", 0) == 0 || x.rfind("omp_", 0) == 0) object_omp = true;
        const std::string kind = extract::parallel_region_entry(x);
        if (!kind.empty() && (entry[kind].empty() || x < entry[kind])) entry[kind] = x;
      }
    for (auto& [kind, x] : entry) {
      region_refs[kind].push_back(symbol_ref(b, x));
      create_refs.push_back(symbol_ref(b, x));
    }
  }
  std::vector<std::string> code_create_refs;
  for (auto& t : facts.threading) {
    const std::string r = fact_ref(t.file, t.line);
    if (t.kind == "thread_create" || t.kind == "pool_init") code_create_refs.push_back(r);
    if (t.kind == "omp_parallel") {
      code_create_refs.push_back(r);
      code_region_refs.push_back(r);
    }
    if (t.kind == "affinity") affinity_refs.push_back(r);
    if (t.kind == "spin_wait") spin_refs.push_back(r);
    if (t.kind == "gpu_call") gpu_refs.push_back(r);
  }
  // `#pragma omp parallel` in the code is an OpenMP region, unless the library's shared object is
  // at hand and shows no OpenMP at all: then that code is not what it was built from (OpenBLAS's
  // tree holds both its pthreads and its OpenMP thread servers; each build takes one).
  const bool code_regions_built = !(object_seen && !object_omp);
  if (!code_region_refs.empty() && code_regions_built) {
    auto& r = region_refs["omp_parallel"];
    r.insert(r.begin(), code_region_refs.begin(), code_region_refs.end());
  }
  for (auto& r : code_create_refs)
    if (code_regions_built || std::find(code_region_refs.begin(), code_region_refs.end(), r) == code_region_refs.end())
      create_refs.push_back(r);

  // cpu.threads = OWN_KNOB ?? GOTO_... ?? OMP_NUM_THREADS ?? ncpus, each a fallback for the one
  // before: the size of the pool the library starts. Cited at the reads of the controls and,
  // where the facts show it, where the threads are started.
  std::vector<lpcl::Control*> chain;
  for (auto& ctl : c.controls)
    if (pool_size_knob(ctl)) chain.push_back(&ctl);
  auto rank = [&](const lpcl::Control* x) {
    if (!prefix.empty() && x->name.rfind(prefix, 0) == 0) return 0;
    if (x->name.rfind("OMP_", 0) == 0) return 2;
    return 1;
  };
  std::stable_sort(chain.begin(), chain.end(), [&](auto* a, auto* b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a->name < b->name;
  });
  if (!chain.empty()) {
    // with none of them set, the pool has what the documentation says holds then ("if neither
    // variable is set, the default number of threads is 1"), else the last one's stated default
    // (NCCL's socket helper threads: 1), and the whole machine where none is stated
    Expr e = name_expr("ncpus");
    long long last_default = 0;
    std::optional<long long> none_set;
    for (auto* ctl : chain)
      if (auto k = knobs.find(ctl->name); !none_set && k != knobs.end() && k->second.spec.none_set && *k->second.spec.none_set >= 1)
        none_set = k->second.spec.none_set;
    if (none_set)
      e = int_expr(*none_set);
    else if (chain.back()->default_value && chain.back()->default_value->kind == Expr::Kind::Int &&
             parses_int(chain.back()->default_value->text, &last_default) && last_default >= 1)
      e = int_expr(last_default);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      Expr b;
      b.kind = Expr::Kind::Binary;
      b.op = "??";
      b.args = {name_expr((*it)->name), e};
      e = b;
    }
    for (size_t i = 1; i < chain.size(); ++i) chain[i]->fallback_for = chain[i - 1]->name;
    lpcl::Demand d;
    d.resource = "cpu.threads";
    d.value = e;
    std::vector<std::string> refs;
    for (auto* ctl : chain)
      if (!ctl->prov.refs.empty()) refs.push_back(ctl->prov.refs.front());
    d.prov = extracted(refs);
    for (auto& r : extracted(create_refs, 2).refs) d.prov.refs.push_back(r);
    c.demands.push_back(std::move(d));
  }

  auto assume = [&](const std::string& pred, const std::string& arg, const std::vector<std::string>& refs) {
    lpcl::Assumption a;
    a.predicate = pred;
    a.args = {arg};
    a.prov = extracted(refs);
    c.assumptions.push_back(std::move(a));
  };
  auto behave = [&](const std::string& name, std::vector<std::pair<std::string, Expr>> params,
                    const std::vector<std::string>& refs) {
    lpcl::Behavior b;
    b.name = name;
    b.params = std::move(params);
    b.prov = extracted(refs);
    c.behaviors.push_back(std::move(b));
  };
  // What the code shows of the pool's start decides what it assumes and how it shows itself;
  // a shared object's imports say only that it starts threads.
  if (!code_create_refs.empty()) {
    assume("exclusive", "cpu.cores", code_create_refs);
    if (!c.demands.empty()) assume("no_nesting", "parallel_region", code_create_refs);
  }
  if (!create_refs.empty()) {
    // The pool is as large as the demand says (cpu.threads names the demand, so that a
    // reviewed demand is not contradicted by a copy of the drafted one).
    std::vector<std::pair<std::string, Expr>> size;
    if (!c.demands.empty()) size.emplace_back("size", name_expr("cpu.threads"));
    behave("creates_pool", size, create_refs);
  }
  if (!affinity_refs.empty()) behave("pins_threads", {}, affinity_refs);
  if (any_spin || !spin_refs.empty()) behave("spin_wait", spin_params, spin_refs);
  if (any_arena) behave("allocates_arenas", {}, {});
  if (any_device || !gpu_refs.empty()) behave("uses_gpu", {}, gpu_refs);
  // The regions it opens; a library that starts threads of its own and opens none says so.
  for (auto& [kind, refs] : region_refs) {
    lpcl::Provides p;
    p.name = kind;
    p.prov = extracted(refs);
    c.provides.push_back(std::move(p));
  }
  if (region_refs.empty() && !create_refs.empty()) {
    lpcl::Provides p;
    p.name = "none";
    p.prov = extracted(create_refs);
    c.provides.push_back(std::move(p));
  }
  if (!code_create_refs.empty() && !c.demands.empty()) {
    lpcl::Signal s;
    s.metric = "os.threads";
    s.relation = "expect";
    Expr plus;
    plus.kind = Expr::Kind::Binary;
    plus.op = "+";
    plus.args = {name_expr("cpu.threads"), int_expr(1)};
    s.value = plus;
    c.signals.insert(c.signals.begin(), s);
    lpcl::Signal inv;
    inv.metric = "os.involuntary_switches";
    inv.relation = "rises_with";
    inv.value = name_expr("oversubscription");
    c.signals.insert(c.signals.begin() + 1, inv);
  }

  // How applications are matched to this contract.
  std::set<std::string> seen;
  for (auto& b : facts.binaries)
    if (!b.soname.empty() && seen.insert("soname:" + b.soname).second)
      c.bindings.push_back({"soname", b.soname, {}, {}});
  for (auto& a : facts.api_controls) {
    auto slash = a.file.find_last_of('/');
    std::string base = slash == std::string::npos ? a.file : a.file.substr(slash + 1);
    if (base.size() > 2 && (base.ends_with(".h") || base.ends_with(".hpp") || base.ends_with(".h++")) &&
        c.find_control(a.name) && seen.insert("header:" + base).second)
      c.bindings.push_back({"header", base, {}, {}});
  }
  return c;
}

}  // namespace syspilot::synth
