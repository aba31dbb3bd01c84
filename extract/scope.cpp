// Scope of facts: which sources make the library, from CMake (add_library, add_executable,
// target_sources, set/list variables, add_test), meson (library(), executable(), test(),
// files() variables) and Makefiles (library object lists, lib*.a rules); paths decide the rest.
// Build files are hostile text like any source: every loop, expansion and list is bounded.
#include "extract/scope.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <cctype>
#include <filesystem>
#include <functional>
#include <set>
#include <vector>

namespace syspilot::extract::scope {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxArgs = 20000;       // words of one command or variable after expansion
constexpr int kMaxExpansionDepth = 4;    // ${A} holding ${B} holding ...
constexpr size_t kMaxVariables = 10000;  // distinct variables of one build file
constexpr size_t kMaxWords = 1000000;    // words one build file may produce in all, expansions included
constexpr size_t kMaxWordBytes = 4096;   // a longer word (flags grown by set(X "${X} ...")) is dropped
constexpr size_t kMaxIncludes = 32;      // files a Makefile's `include` lines may bring in
constexpr int kMaxIncludeDepth = 4;      // includes of includes

std::string lower(std::string_view s) {
  std::string o(s);
  for (auto& c : o) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_source(std::string_view path) {
  std::string ext = lower(fs::path(path).extension().string());
  static const char* exts[] = {".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx",
                               ".ipp", ".inl", ".cu", ".cuh", ".s", ".asm", ".py", ".in", ".m", ".mm",
                               ".pyx", ".pxi"};
  for (auto* e : exts)
    if (ext == e) return true;
  return false;
}

bool is_header(std::string_view path) {
  std::string f = lower(fs::path(path).filename().string());
  if (ends_with(f, ".in") || ends_with(f, ".cmake")) f = fs::path(f).stem().string();  // configure templates
  for (const char* e : {".h", ".hh", ".hpp", ".hxx", ".h++"})
    if (ends_with(f, e)) return true;
  return false;
}

bool is_object(std::string_view word) {
  return ends_with(word, ".o") || ends_with(word, ".lo") || ends_with(word, ".obj");
}

// The words of a target's name: split at non-alphanumerics and at lower-to-upper case
// changes (pool_test, PoolTest, test-pool, bench2 all hold a word of their own).
std::vector<std::string> name_words(const std::string& name) {
  std::vector<std::string> words;
  std::string cur;
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    bool boundary = !std::isalnum(c) ||
                    (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1])));
    if (boundary && !cur.empty()) words.push_back(lower(cur)), cur.clear();
    if (std::isalnum(c)) cur += static_cast<char>(c);
  }
  if (!cur.empty()) words.push_back(lower(cur));
  return words;
}

// `word` is `stem`, its plural or gerund, or `stem` followed by digits (test2); for tests also
// a compound ending in it (unittest, gtest). Whole words only: samplerate is not a sample,
// fastest not a test.
bool is_word(const std::string& word, const std::string& stem) {
  if (word == stem || word == stem + "s" || word == stem + "es" || word == stem + "ing") return true;
  if (word.size() > stem.size() && word.compare(0, stem.size(), stem) == 0 &&
      std::all_of(word.begin() + stem.size(), word.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return true;
  if (stem == "test")
    for (const char* compound : {"unittest", "unittests", "gtest", "ctest", "selftest", "selftests"})
      if (word == compound) return true;
  return false;
}

// What a target's name says it is: test, bench, example, or empty.
std::string by_target_name(const std::string& name) {
  auto words = name_words(name);
  auto has = [&](const char* stem) {
    return std::any_of(words.begin(), words.end(), [&](const std::string& w) { return is_word(w, stem); });
  };
  if (has("test") || has("check")) return "test";
  if (has("bench") || has("benchmark")) return "bench";
  for (const char* w : {"example", "demo", "sample", "tutorial"})
    if (has(w)) return "example";
  return {};
}

// `path` as written in the build file in folder `dir`, relative to the root; empty when it
// is generated, absolute or leaves the root.
std::string resolve(const std::string& dir, std::string path) {
  for (const char* var : {"${CMAKE_CURRENT_SOURCE_DIR}/", "${CMAKE_CURRENT_LIST_DIR}/", "@srcdir@/", "$(srcdir)/",
                          "$(top_srcdir)/", "${PROJECT_SOURCE_DIR}/", "${CMAKE_SOURCE_DIR}/"}) {
    if (path.rfind(var, 0) == 0) {
      bool top = std::string_view(var).find("top") != std::string_view::npos ||
                 std::string_view(var).find("PROJECT") != std::string_view::npos ||
                 std::string_view(var).find("CMAKE_SOURCE") != std::string_view::npos;
      path = path.substr(std::string_view(var).size());
      if (top) return fs::path(path).lexically_normal().generic_string();
      break;
    }
  }
  if (path.empty() || path[0] == '/' || path.find('$') != std::string::npos || path.find('@') != std::string::npos)
    return {};
  std::string p = (dir.empty() ? fs::path(path) : fs::path(dir) / path).lexically_normal().generic_string();
  if (p.rfind("..", 0) == 0) return {};
  return p;
}

// --- CMake: commands `name(args)`, comments, quoted and bracket arguments.
struct Command {
  std::string name;
  std::vector<std::string> args;
};

std::vector<Command> cmake_commands(std::string_view s) {
  std::vector<Command> out;
  size_t i = 0, n = s.size();
  while (i < n) {
    char c = s[i];
    if (c == '#') {
      while (i < n && s[i] != '\n') ++i;
      continue;
    }
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_')) { ++i; continue; }
    size_t j = i;
    while (j < n && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
    Command cmd{lower(s.substr(i, j - i)), {}};
    size_t k = j;
    while (k < n && (s[k] == ' ' || s[k] == '\t')) ++k;
    if (k >= n || s[k] != '(') { i = j; continue; }
    // arguments up to the matching parenthesis
    int depth = 1;
    std::string word;
    bool quoted = false;
    auto flush = [&] {
      if (!word.empty() && cmd.args.size() < kMaxArgs) cmd.args.push_back(word);
      word.clear();
    };
    for (k = k + 1; k < n && depth > 0; ++k) {
      char d = s[k];
      if (quoted) {
        if (d == '\\' && k + 1 < n) word += s[++k];
        else if (d == '"') { quoted = false; flush(); }
        else word += d;
        continue;
      }
      if (d == '"') { flush(); quoted = true; }
      else if (d == '#') { flush(); while (k < n && s[k] != '\n') ++k; }
      else if (d == '(') { ++depth; flush(); }
      else if (d == ')') { if (--depth > 0) flush(); }
      else if (std::isspace(static_cast<unsigned char>(d))) flush();
      else word += d;
    }
    flush();
    out.push_back(std::move(cmd));
    i = k;
  }
  return out;
}

// Variables of one build file, and what is left of its word budget: `set(A ${A} ${A})`
// repeated must not grow memory or time without bound.
struct Vars {
  std::unordered_map<std::string, std::vector<std::string>> map;
  size_t budget = kMaxWords;
  auto find(const std::string& k) const { return map.find(k); }
  auto end() const { return map.end(); }
};

// `${VAR}` words replaced by the variable's words, nested up to kMaxExpansionDepth.
void expand(const std::string& word, Vars& vars, std::vector<std::string>& out, int depth,
            const char* open = "${", char close = '}') {
  if (out.size() >= kMaxArgs || vars.budget == 0) return;
  --vars.budget;
  size_t a = word.find(open);
  if (a == std::string::npos || depth >= kMaxExpansionDepth) {
    out.push_back(word);
    return;
  }
  size_t b = word.find(close, a + 2);
  if (b == std::string::npos) {
    out.push_back(word);
    return;
  }
  auto it = vars.find(word.substr(a + 2, b - a - 2));
  if (it == vars.end()) {
    out.push_back(word);  // unknown: stays a word with '$', dropped by resolve()
    return;
  }
  std::string pre = word.substr(0, a), post = word.substr(b + 1);
  for (auto& v : it->second) {
    if (out.size() >= kMaxArgs) return;
    if (pre.size() + v.size() + post.size() > kMaxWordBytes) continue;
    expand(pre + v + post, vars, out, depth + 1, open, close);
  }
}

std::vector<std::string> expand_all(const std::vector<std::string>& words, Vars& vars, const char* open = "${",
                                    char close = '}') {
  std::vector<std::string> out;
  for (auto& w : words) expand(w, vars, out, 0, open, close);
  return out;
}

void add_var(Vars& vars, const std::string& name, std::vector<std::string> words, bool append) {
  if (!vars.map.count(name) && vars.map.size() >= kMaxVariables) return;
  auto& v = vars.map[name];
  if (!append) v.clear();
  for (auto& w : words)
    if (v.size() < kMaxArgs) v.push_back(std::move(w));
}

struct Target {
  bool library = false;
  std::vector<std::string> sources;
};

}  // namespace

bool is_build_file(const std::string& rel) {
  std::string name = lower(fs::path(rel).filename().string());
  return name == "cmakelists.txt" || ends_with(name, ".cmake") || name == "meson.build" || name == "makefile" ||
         name == "gnumakefile" || ends_with(name, ".mk") || name == "makefile.am" || name == "makefile.in";
}

void BuildMap::record(const std::string& path, const std::string& scope, bool by_stem, bool convenience) {
  if (path.empty()) return;
  auto& map = by_stem ? by_stem_ : by_file_;
  auto it = map.find(path);
  const std::string key = (by_stem ? "stem:" : "file:") + path;
  // A convenience library (not installed) in a folder that says what it is (tests/libtest's
  // stub library) is that; otherwise it is the library's unless a program builds the file too
  // (libcurltool.la, the curl program's sources again for its unit tests).
  if (convenience && scope == "library") {
    std::string said = by_path(path);
    if (!said.empty()) {
      record(path, said, by_stem);
      return;
    }
    if (it == map.end()) {
      map.emplace(path, scope);
      convenience_.insert(key);
    }
    return;
  }
  // a source built into an installed library and into a program (tools often compile library
  // files again) is library; otherwise the first statement wins, but over a convenience library
  // the program's word wins
  if (it == map.end()) {
    map.emplace(path, scope);
  } else if (scope == "library") {
    it->second = scope;
    convenience_.erase(key);
  } else if (convenience_.count(key)) {
    it->second = scope;
    convenience_.erase(key);
  }
}

void BuildMap::installed_header(const std::string& path) {
  if (!path.empty() && is_header(path) && headers_.size() < kMaxWords) {
    headers_.insert(path);
    header_dirs_.insert(fs::path(path).parent_path().generic_string());
  }
}

bool BuildMap::installs_header(const std::string& rel) const {
  return headers_.count(fs::path(rel).lexically_normal().generic_string()) > 0;
}

bool BuildMap::installs_beside(const std::string& rel) const {
  return header_dirs_.count(fs::path(rel).lexically_normal().parent_path().generic_string()) > 0;
}

void BuildMap::target_built(const std::string& key, std::vector<std::string> paths) {
  if (target_paths_.size() >= kMaxVariables * 4) return;
  if (linked_.count(key))
    for (auto& p : paths) record(p, "library", false);
  auto& known = target_paths_[key];
  for (auto& p : paths)
    if (known.size() < kMaxArgs) known.push_back(std::move(p));
}

void BuildMap::linked_into_library(const std::string& key) {
  if (linked_.size() >= kMaxVariables * 4 || !linked_.insert(key).second) return;
  auto it = target_paths_.find(key);
  if (it != target_paths_.end())
    for (auto& p : it->second) record(p, "library", false);
}

void BuildMap::add(const std::string& rel, std::string_view text) {
  std::string dir = fs::path(rel).parent_path().generic_string();
  std::string name = lower(fs::path(rel).filename().string());
  // The sources a build file lists that are sources of this tree, relative to its root.
  auto source_paths = [&](const std::vector<std::string>& sources) {
    std::vector<std::string> out;
    for (auto& src : sources) {
      std::string path = resolve(dir, src);
      if (!path.empty() && is_source(path)) out.push_back(path);
    }
    return out;
  };
  auto classify = [&](const std::string& target, bool library, bool tested, const std::vector<std::string>& sources,
                      bool convenience = false) {
    std::string said = by_target_name(target);
    for (auto& path : source_paths(sources)) {
      std::string scope;
      if (tested) scope = "test";
      else if (!said.empty()) scope = said;
      else if (library) scope = "library";
      else scope = by_path(path).empty() ? "tool" : by_path(path);
      record(path, scope, false, convenience);
    }
  };
  // The scope a target's sources get when nothing but its kind and name speak (classify's).
  auto library_target = [](const std::string& target, bool library, bool tested) {
    return library && !tested && by_target_name(target).empty();
  };

  if (name == "cmakelists.txt" || ends_with(name, ".cmake")) {
    Vars vars;
    std::unordered_map<std::string, Target> targets;
    std::set<std::string> tested;
    std::vector<std::string> order;
    std::vector<std::vector<std::string>> links;  // target_link_libraries' arguments
    for (auto& cmd : cmake_commands(text)) {
      if (cmd.args.empty()) continue;
      if (cmd.name == "set" || (cmd.name == "list" && cmd.args.size() > 1 && cmd.args[0] == "APPEND")) {
        bool append = cmd.name == "list";
        std::string var = append ? cmd.args[1] : cmd.args[0];
        std::vector<std::string> words(cmd.args.begin() + (append ? 2 : 1), cmd.args.end());
        words.erase(std::remove_if(words.begin(), words.end(),
                                   [](const std::string& w) { return w == "CACHE" || w == "PARENT_SCOPE"; }),
                    words.end());
        add_var(vars, var, expand_all(words, vars), append);
      } else if (cmd.name == "add_library" || cmd.name == "add_executable" || cmd.name == "target_sources") {
        static const std::set<std::string> keywords = {
            "STATIC", "SHARED", "MODULE", "OBJECT", "INTERFACE", "IMPORTED", "ALIAS", "EXCLUDE_FROM_ALL", "GLOBAL",
            "WIN32", "MACOSX_BUNDLE", "PRIVATE", "PUBLIC", "FILE_SET", "TYPE", "BASE_DIRS", "FILES", "HEADERS"};
        const std::string& t = cmd.args[0];
        if (!targets.count(t)) order.push_back(t);
        Target& target = targets[t];
        if (cmd.name == "add_library") target.library = true;
        for (auto& w : expand_all({cmd.args.begin() + 1, cmd.args.end()}, vars))
          if (!keywords.count(w) && target.sources.size() < kMaxArgs) target.sources.push_back(w);
      } else if (cmd.name == "target_link_libraries" && cmd.args.size() > 1) {
        if (links.size() < kMaxArgs) links.push_back(cmd.args);
      } else if (cmd.name == "install" && cmd.args[0] == "FILES") {
        // install(FILES a.h b.h DESTINATION include/x): headers where the users' includes go
        auto dest = std::find(cmd.args.begin(), cmd.args.end(), "DESTINATION");
        if (dest != cmd.args.end() && dest + 1 != cmd.args.end() && lower(*(dest + 1)).find("include") != std::string::npos)
          for (auto& w : expand_all({cmd.args.begin() + 1, dest}, vars)) installed_header(resolve(dir, w));
      } else if (cmd.name == "set_target_properties" || cmd.name == "set_property") {
        // PUBLIC_HEADER "a.h;b.h" (a list in one argument or several)
        auto ph = std::find(cmd.args.begin(), cmd.args.end(), "PUBLIC_HEADER");
        if (ph != cmd.args.end())
          for (auto it = ph + 1; it != cmd.args.end(); ++it)
            for (auto& w : expand_all({*it}, vars)) {
              std::stringstream list(w);
              for (std::string item; std::getline(list, item, ';');) installed_header(resolve(dir, item));
            }
      } else if (cmd.name == "add_test") {
        // add_test(NAME n COMMAND exe ...) or add_test(n exe ...)
        auto c = std::find(cmd.args.begin(), cmd.args.end(), "COMMAND");
        if (c != cmd.args.end() && c + 1 != cmd.args.end()) tested.insert(*(c + 1));
        else if (cmd.args.size() > 1 && cmd.args[0] != "NAME") tested.insert(cmd.args[1]);
      } else if (cmd.name == "gtest_discover_tests" || cmd.name == "gtest_add_tests" ||
                 cmd.name == "catch_discover_tests") {
        tested.insert(cmd.args[0]);
      }
    }
    for (auto& t : order) {
      classify(t, targets[t].library, tested.count(t) > 0, targets[t].sources);
      target_built("cmake:" + t, source_paths(targets[t].sources));
    }
    // target_link_libraries(LIB [PRIVATE|PUBLIC|INTERFACE] DEP...): a library of this file
    // that the build's rules call the library's links its dependencies in
    for (auto& args : links) {
      auto t = targets.find(args[0]);
      if (t == targets.end() || !library_target(args[0], t->second.library, tested.count(args[0]) > 0)) continue;
      for (auto& dep : expand_all({args.begin() + 1, args.end()}, vars))
        if (dep != "PRIVATE" && dep != "PUBLIC" && dep != "INTERFACE" && dep != args[0]) linked_into_library("cmake:" + dep);
    }
    return;
  }

  if (name == "meson.build") {
    // tokens: 'strings', identifiers, punctuation; # comments
    struct Tok { char kind; std::string text; };  // s string, i identifier, p punctuation
    std::vector<Tok> toks;
    for (size_t i = 0, n = text.size(); i < n && toks.size() < 200000;) {
      char c = text[i];
      if (c == '#') { while (i < n && text[i] != '\n') ++i; continue; }
      if (c == '\'') {
        size_t j = i + 1;
        std::string s;
        while (j < n && text[j] != '\'' && text[j] != '\n') s += text[j++];
        toks.push_back({'s', s});
        i = j + 1;
        continue;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t j = i;
        while (j < n && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
        toks.push_back({'i', std::string(text.substr(i, j - i))});
        i = j;
        continue;
      }
      if (!std::isspace(static_cast<unsigned char>(c))) toks.push_back({'p', std::string(1, c)});
      ++i;
    }
    Vars vars;
    std::unordered_map<std::string, Target> targets;  // by the variable holding the target
    std::set<std::string> tested;
    struct Made { std::string name, var; bool library; std::vector<std::string> sources, links; };
    std::vector<Made> made;
    // the words a variable holds, added to `words` (within the bounds)
    auto add_words_of = [&](const std::string& name, std::vector<std::string>& words) {
      auto v = vars.find(name);
      if (v != vars.end())
        for (auto& w : v->second)
          if (words.size() < kMaxArgs && vars.budget > 0) {
            --vars.budget;
            words.push_back(w);
          }
    };
    // the words of a bracketed or parenthesised group starting at toks[i] (the opener)
    auto group = [&](size_t i, size_t& end, bool stop_at_keyword) {
      std::vector<std::string> words;
      int depth = 0;
      size_t k = i;
      bool stopped = false;
      for (; k < toks.size(); ++k) {
        auto& t = toks[k];
        if (t.kind == 'p' && (t.text == "(" || t.text == "[")) ++depth;
        else if (t.kind == 'p' && (t.text == ")" || t.text == "]")) { if (--depth == 0) break; }
        else if (stopped) continue;
        else if (t.kind == 'i' && k + 1 < toks.size() && toks[k + 1].text == ":" && stop_at_keyword && depth == 1) stopped = true;
        else if (t.kind == 's' && words.size() < kMaxArgs) words.push_back(t.text);
        else if (t.kind == 'i' && t.text != "files") add_words_of(t.text, words);
      }
      end = k;
      return words;
    };
    static const std::set<std::string> lib_calls = {"library", "shared_library", "static_library", "both_libraries",
                                                    "shared_module"};
    // The targets a call's `link_with:` / `link_whole:` name (variables holding them), between
    // its opener toks[i] and its closer toks[end].
    auto linked = [&](size_t i, size_t end) {
      std::vector<std::string> out;
      int depth = 0;
      for (size_t k = i; k < end && k < toks.size(); ++k) {
        auto& t = toks[k];
        if (t.kind == 'p' && (t.text == "(" || t.text == "[")) ++depth;
        else if (t.kind == 'p' && (t.text == ")" || t.text == "]")) --depth;
        if (depth != 1 || t.kind != 'i' || (t.text != "link_with" && t.text != "link_whole") || k + 2 >= end ||
            toks[k + 1].text != ":")
          continue;
        size_t j = k + 2;
        if (toks[j].kind == 'i') {
          out.push_back(toks[j].text);
          continue;
        }
        if (toks[j].text != "[") continue;
        for (++j; j < end && toks[j].text != "]" && out.size() < kMaxArgs; ++j)
          if (toks[j].kind == 'i') out.push_back(toks[j].text);
      }
      return out;
    };
    for (size_t i = 0; i < toks.size(); ++i) {
      if (toks[i].kind != 'i') continue;
      // var = files(...) / [...] / var += [...]
      bool assign = i + 2 < toks.size() && toks[i + 1].text == "=";
      bool append = i + 3 < toks.size() && toks[i + 1].text == "+" && toks[i + 2].text == "=";
      if (assign || append) {
        size_t v = i + (assign ? 2 : 3);
        std::string var = toks[i].text;
        if (toks[v].kind == 'i' && v + 1 < toks.size() && toks[v + 1].text == "(" &&
            (lib_calls.count(toks[v].text) || toks[v].text == "executable")) {
          size_t end = v + 1;
          auto words = group(v + 1, end, true);
          if (!words.empty())
            made.push_back({words[0], var, lib_calls.count(toks[v].text) > 0, {words.begin() + 1, words.end()},
                            linked(v + 1, end)});
          i = end;
        } else if (toks[v].text == "[" || (toks[v].text == "files" && v + 1 < toks.size() && toks[v + 1].text == "(")) {
          size_t end = v;
          auto words = group(toks[v].text == "[" ? v : v + 1, end, false);
          add_var(vars, var, std::move(words), append);
          i = end;
        } else if (toks[v].kind == 'i' && vars.find(toks[v].text) != vars.end()) {
          // var += other (+ another ...): the lists those variables hold. A list added inside
          // `if get_option(...)` counts: the tree is read as the build that enables everything
          // (libvips: public_other_headers += public_deprecated_headers, installed by default).
          std::vector<std::string> words;
          size_t end = v;
          for (; end < toks.size() && toks[end].kind == 'i'; end += 2) {
            add_words_of(toks[end].text, words);
            if (end + 1 >= toks.size() || toks[end + 1].text != "+") break;
          }
          add_var(vars, var, std::move(words), append);
          i = end;
        }
        continue;
      }
      if (i + 1 < toks.size() && toks[i + 1].text == "(") {
        if (lib_calls.count(toks[i].text) || toks[i].text == "executable") {
          size_t end = i + 1;
          auto words = group(i + 1, end, true);
          if (!words.empty())
            made.push_back({words[0], "", lib_calls.count(toks[i].text) > 0, {words.begin() + 1, words.end()},
                            linked(i + 1, end)});
          i = end;
        } else if (toks[i].text == "install_headers") {
          size_t end = i + 1;
          for (auto& w : group(i + 1, end, true)) installed_header(resolve(dir, w));
          i = end;
        } else if (toks[i].text == "test" || toks[i].text == "benchmark") {
          // test('name', exe): the executable held by `exe` is a test
          size_t k = i + 2;
          if (k < toks.size() && toks[k].kind == 's') k += 2;  // 'name' ,
          if (k < toks.size() && toks[k].kind == 'i') tested.insert(toks[k].text);
        }
      }
    }
    for (auto& m : made) {
      bool test = !m.var.empty() && tested.count(m.var) > 0;
      classify(m.name, m.library, test, m.sources);
      if (!m.var.empty()) target_built("meson:" + m.var, source_paths(m.sources));
      if (library_target(m.name, m.library, test))
        for (auto& l : m.links) linked_into_library("meson:" + l);
    }
    return;
  }

  // Makefiles: continued lines joined; `include FILE` read in place (at most kMaxIncludes
  // files, kMaxIncludeDepth deep, within the tree); variables by name; library object lists
  // and lib*.a rules.
  std::vector<std::string> lines;
  size_t included = 0;
  std::function<void(std::string_view, int)> split_lines = [&](std::string_view t, int depth) {
    std::string cur;
    auto finish = [&] {
      size_t b = cur.find_first_not_of(" \t");
      std::string_view l = b == std::string::npos ? std::string_view{} : std::string_view(cur).substr(b);
      for (std::string_view kw : {"include ", "-include ", "sinclude "}) {
        if (l.substr(0, kw.size()) != kw || !read_include || depth >= kMaxIncludeDepth) continue;
        std::string target(l.substr(kw.size()));
        target = target.substr(0, target.find_first_of(" \t#"));
        std::string rel = resolve(dir, target), inc;
        if (!rel.empty() && included < kMaxIncludes && read_include(rel, inc)) {
          ++included;
          split_lines(inc, depth + 1);
        }
        break;
      }
      lines.push_back(std::move(cur));
      cur.clear();
    };
    for (size_t i = 0; i < t.size() && lines.size() < 200000; ++i) {
      char c = t[i];
      if (c == '\\' && i + 1 < t.size() && t[i + 1] == '\n') { cur += ' '; ++i; continue; }
      if (c == '\n') { finish(); continue; }
      if (cur.size() < 65536) cur += c;
    }
    finish();
  };
  split_lines(text, 0);
  Vars vars;
  std::vector<std::string> listed;                 // variables, in order of first assignment
  std::vector<std::vector<std::string>> lib_rules;  // prerequisites of lib*.a rules
  auto split = [](std::string_view s) {
    std::vector<std::string> w;
    size_t i = 0;
    while (i < s.size() && w.size() < kMaxArgs) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      size_t j = i;
      while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
      if (j > i) w.emplace_back(s.substr(i, j - i));
      i = j;
    }
    return w;
  };
  for (auto& raw : lines) {
    std::string line = raw.substr(0, raw.find('#'));
    if (line.empty() || line[0] == '\t') continue;  // recipes
    size_t eq = line.find('=');
    size_t colon = line.find(':');
    if (eq != std::string::npos && (colon == std::string::npos || colon + 1 >= eq)) {
      size_t e = eq;
      bool append = e > 0 && line[e - 1] == '+';
      while (e > 0 && (line[e - 1] == ':' || line[e - 1] == '+' || line[e - 1] == '?' || line[e - 1] == ' ')) --e;
      auto name_words = split(line.substr(0, e));
      if (name_words.size() != 1) continue;
      // `A = $(B)` is recursive: make expands it where it is used, so B may be set further
      // down (GraphicsMagick lists its headers after naming the list); `A := $(B)` now.
      bool simple = eq >= 1 && line[eq - 1] == ':';
      auto words = simple ? expand_all(split(line.substr(eq + 1)), vars, "$(", ')') : split(line.substr(eq + 1));
      if (!vars.map.count(name_words[0])) listed.push_back(name_words[0]);
      add_var(vars, name_words[0], words, append);
    } else if (colon != std::string::npos) {
      // libfoo.a: a.o b.o   /   $(LIBNAME): $(OBJS)
      auto targets = expand_all(split(line.substr(0, colon)), vars, "$(", ')');
      bool lib = false;
      for (auto& t : targets) {
        std::string f = lower(fs::path(t).filename().string());
        lib = lib || (f.rfind("lib", 0) == 0 && (ends_with(f, ".a") || f.find(".so") != std::string::npos ||
                                                 ends_with(f, ".la") || ends_with(f, ".dylib")));
      }
      if (lib) lib_rules.push_back(expand_all(split(line.substr(colon + 1)), vars, "$(", ')'));
    }
  }
  auto library_words = [&](const std::vector<std::string>& words) {
    for (auto& w : words) {
      if (is_object(w)) record(resolve(dir, fs::path(w).replace_extension().generic_string()), "library", true);
      else if (is_source(w)) record(resolve(dir, w), "library", false);
    }
  };
  for (auto& words : lib_rules) library_words(words);
  // Automake: WHERE_PRIMARY = targets, each target's sources in CANON_SOURCES (the name with
  // every character but letters, digits and '@' turned into '_'). Libraries installed or not are
  // the library's, check_* targets are built for `make check` only (tests), programs are tools;
  // the target's own name still speaks first (lstopo vs. test-foo).
  std::set<std::string> target_sources;  // Automake CANON_SOURCES of the listed targets
  for (auto& var : listed) {
    auto under = var.rfind('_');
    if (under == std::string::npos || under == 0) continue;
    const std::string where = var.substr(0, under), primary = var.substr(under + 1);
    if (primary == "HEADERS") {
      // nobase_/dist_/nodist_ say how, WHERE where: every WHERE but noinst and check installs
      std::string w = where;
      for (const char* how : {"nobase_", "dist_", "nodist_"})
        if (w.rfind(how, 0) == 0) w = w.substr(std::strlen(how));
      auto listed_headers = vars.find(var);
      if (w != "noinst" && w != "check" && w != "EXTRA" && listed_headers != vars.end())
        for (auto& h : expand_all(listed_headers->second, vars, "$(", ')')) installed_header(resolve(dir, h));
      continue;
    }
    const bool program = primary == "PROGRAMS", lib = primary == "LTLIBRARIES" || primary == "LIBRARIES";
    if (!program && !lib) continue;
    auto listed_targets = vars.find(var);
    if (listed_targets == vars.end()) continue;
    const bool check = where == "check";
    for (auto& t : expand_all(listed_targets->second, vars, "$(", ')')) {
      std::string canon;
      for (char c : fs::path(t).filename().string())
        canon += std::isalnum(static_cast<unsigned char>(c)) || c == '@' ? c : '_';
      // its sources, built (nodist_: generated) or only shipped (EXTRA_, dist_)
      for (const char* prefix : {"", "nodist_", "dist_", "EXTRA_"}) {
        std::string var_name = prefix + canon + "_SOURCES";
        target_sources.insert(var_name);
        auto sources = vars.find(var_name);
        if (sources == vars.end()) continue;
        classify(fs::path(t).stem().string(), lib && !check, check, expand_all(sources->second, vars, "$(", ')'),
                 lib && where == "noinst");
      }
    }
  }
  for (auto& var : listed) {
    auto found = vars.find(var);
    // a target's own sources were classified with their target (a program named lib*, such as
    // curl's libntlmconnect, is no library)
    if (found == vars.end() || target_sources.count(var)) continue;
    std::string v = lower(var);
    bool library =
                   (v.find("lib") != std::string::npos &&
                    (v.find("obj") != std::string::npos || v.find("src") != std::string::npos ||
                     v.find("source") != std::string::npos)) ||
                   (v.rfind("lib", 0) == 0 && (ends_with(v, "_la_sources") || ends_with(v, "_a_sources")));
    bool tested = v.find("test") != std::string::npos || v.rfind("check_", 0) == 0;
    if (library && !tested) library_words(expand_all(found->second, vars, "$(", ')'));
  }
}

std::string BuildMap::scope_of(const std::string& rel, bool defines_main) const {
  std::string path = fs::path(rel).lexically_normal().generic_string();
  if (headers_.count(path)) return "library";  // the interface the library installs for its users
  auto it = by_file_.find(path);
  if (it != by_file_.end()) return it->second;
  auto st = by_stem_.find(fs::path(path).replace_extension().generic_string());
  if (st != by_stem_.end() && !fs::path(path).has_extension()) st = by_stem_.end();
  if (st != by_stem_.end()) return st->second;
  std::string p = by_path(path);
  if (!p.empty()) return p;
  if (defines_main) {
    std::string said = by_target_name(fs::path(path).stem().string());
    return said.empty() ? "tool" : said;
  }
  return "library";
}

std::string by_path(const std::string& rel) {
  fs::path p(rel);
  std::string file = lower(p.filename().string());
  // Python files speak for themselves: pytest's test_*.py, setup.py
  if (ends_with(file, ".py")) {
    if (file.rfind("test_", 0) == 0 || ends_with(file, "_test.py") || file == "conftest.py") return "test";
    if (file == "setup.py" || file == "conanfile.py" || file == "noxfile.py") return "build";
    // build_sdk.py, build_framework.py, gen_java.py: scripts that build or generate code
    if (file == "build.py" || file.rfind("build_", 0) == 0 || file.rfind("gen_", 0) == 0) return "build";
  }
  // googletest's and googlemock's single-file copies (gtest-all.cc, ts_gtest.cpp) are test code
  // wherever they sit
  if (file.find("gtest") != std::string::npos || file.find("gmock") != std::string::npos) return "test";
  if (file == "sconstruct" || file == "sconscript") return "build";
  // LLVM lit's configurations say how tests run, wherever they sit
  if (file == "lit.cfg" || file == "lit.local.cfg" || file == "lit.site.cfg" || file == "lit.site.cfg.in") return "test";
  std::vector<std::string> dirs;
  for (auto& part : p.parent_path()) dirs.push_back(lower(part.string()));
  // the innermost folder that says something decides: tools/tests/ holds tests
  bool sources_below = false;  // a src/, source/, lib/ or include/ folder inside the one deciding
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) {
    const std::string& n = *d;
    if (n == "src" || n == "source" || n == "sources" || n == "lib" || n == "include") sources_below = true;
    if (n == "test" || n == "tests" || n == "testing" || n == "testsuite" || n == "unittest" || n == "unittests" ||
        n == "utest" || n == "ctest" || n == "gtest" || n == "googletest" || n.rfind("test_", 0) == 0 ||
        ends_with(n, "_test") || ends_with(n, "_tests") || ends_with(n, "-tests"))
      return "test";
    if (n.rfind("bench", 0) == 0 || n == "perf" || n == "perf_tests") return "bench";
    if (n == "example" || n == "examples" || n == "demo" || n == "demos" || n == "sample" || n == "samples" ||
        n == "tutorial" || n == "tutorials")
      return "example";
    // contrib/ holds contributed tools, or contributed modules with sources of their own
    // (contrib/modules/ovis/src/ovis.cpp): those are libraries, as the tree's own are
    if (n == "contrib" && sources_below) continue;
    if (n == "programs" || n == "tools" || n == "tool" || n == "apps" || n == "contrib" || n == "cli")
      return "tool";
    // the build's own helpers, the documentation's generators, a distribution's packaging
    if (n == "cmake" || n == "bazel" || n == "build-aux" || n == "buildtools" || n == "build_tools" || n == "m4" || n == "ci" ||
        n == "scripts" || n == "doc" || n == "docs" || n == "debian" || n == "packaging")
      return "build";
  }
  return {};
}

}  // namespace syspilot::extract::scope
