// Composition across processes: scripts run through their #! interpreter, the process counts a
// command exposes to its launchers (`xargs -P {NPROC:-2}`, `make -j "$JOBS"`), and how many
// processes of a run had each library mapped at once.
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tuner/compose.h"

namespace fs = std::filesystem;

namespace syspilot::tuner {
namespace compose_detail {
namespace {

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  for (std::string w; is >> w;) out.push_back(w);
  return out;
}


bool is_name_char(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (!first && std::isdigit(static_cast<unsigned char>(c)));
}

// A launcher option's value as a control: {NAME}, {NAME:-D}, $NAME, ${NAME}, ${NAME:-D},
// ${NAME-D}, quoted or not. False for anything else; `literal` is set for a plain number.
bool control_value(std::string v, std::string& name, std::string& fallback, bool& literal) {
  literal = false;
  while (!v.empty() && (v.front() == '"' || v.front() == '\'')) v.erase(0, 1);
  while (!v.empty() && (v.back() == '"' || v.back() == '\'' || v.back() == ';')) v.pop_back();
  if (v.empty()) return false;
  if (std::all_of(v.begin(), v.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    literal = true;
    return false;
  }
  size_t i = 0;
  bool braced = false, dollar = v[0] == '$';
  if (dollar) {
    ++i;
    if (i < v.size() && v[i] == '{') braced = true, ++i;
  } else if (v[i] == '{') {
    braced = true, ++i;
  } else {
    return false;
  }
  size_t start = i;
  while (i < v.size() && is_name_char(v[i], i == start)) ++i;
  if (i == start) return false;
  name = v.substr(start, i - start);
  // Without '$' it is our placeholder, which names an environment variable in capitals (the
  // runner replaces nothing else).
  if (!dollar && std::any_of(name.begin(), name.end(), [](char c) { return std::islower(static_cast<unsigned char>(c)); }))
    return false;
  fallback.clear();
  if (!braced) return i == v.size();
  if (i < v.size() && v[i] == '}') return i + 1 == v.size();
  size_t dash = v.compare(i, 2, ":-") == 0 ? 2 : (i < v.size() && v[i] == '-' ? 1 : 0);
  if (dash == 0) return false;
  size_t close = v.find('}', i);
  if (close == std::string::npos || close + 1 != v.size()) return false;
  fallback = v.substr(i + dash, close - i - dash);
  return true;
}

bool is_separator(const std::string& t) {
  return t == "|" || t == "||" || t == "&&" || t == ";" || t == "&" || t == "(" || t == ")" || t == "then" ||
         t == "do" || t == "else" || t == "{" || t == "}";
}

// Scans one command line's tokens: a launcher's tool starts a command, its options follow.
void scan_tokens(const std::vector<std::string>& tokens, const std::string& where, const std::vector<Launcher>& launchers,
                 std::vector<ProcessControl>& out, std::vector<std::string>* fixed) {
  std::vector<const Launcher*> active;  // launchers whose tool this command runs, and the "*" ones
  std::string tool;
  auto reset = [&] {
    active.clear();
    tool.clear();
    for (auto& l : launchers)
      if (l.tools == "*") active.push_back(&l);
  };
  reset();
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string t = tokens[i];
    bool ends_command = !t.empty() && (t.back() == ';' || t.back() == '|');
    if (is_separator(t)) {
      reset();
      continue;
    }
    std::string base = fs::path(t).filename().string();
    for (auto& l : launchers) {
      if (l.tools == "*") continue;
      std::istringstream alts(l.tools);
      for (std::string g; std::getline(alts, g, '|');)
        if (!g.empty() && ::fnmatch(g.c_str(), base.c_str(), 0) == 0) {
          if (std::find(active.begin(), active.end(), &l) == active.end()) active.push_back(&l);
          tool = base;
        }
    }
    for (auto* l : active)
      for (auto& opt : l->options) {
        std::string value;
        if (t == opt && i + 1 < tokens.size()) value = tokens[i + 1];
        else if (t.size() > opt.size() && t.compare(0, opt.size(), opt) == 0 &&
                 (t[opt.size()] == '=' || opt.rfind("--", 0) != 0))
          value = t.substr(opt.size() + (t[opt.size()] == '=' ? 1 : 0));
        else continue;
        std::string name, fallback;
        bool literal = false;
        if (control_value(value, name, fallback, literal)) {
          bool have = std::any_of(out.begin(), out.end(), [&](const ProcessControl& c) { return c.name == name; });
          if (!have) out.push_back({name, fallback, opt, tool.empty() ? l->tools : tool, where});
        } else if (literal && fixed) {
          fixed->push_back(where + ": " + (tool.empty() ? "" : tool + " ") + opt + " " + value);
        }
      }
    if (ends_command) reset();
  }
}

// A script's lines, continuation lines (ending in a backslash) joined; comments dropped.
void scan_text(const std::string& text, const std::string& label, bool numbered, const std::vector<Launcher>& launchers,
               std::vector<ProcessControl>& out, std::vector<std::string>* fixed) {
  std::istringstream is(text);
  std::string joined;
  int line = 0, first = 0;
  for (std::string l; std::getline(is, l);) {
    ++line;
    if (joined.empty()) first = line;
    if (!l.empty() && l.back() == '\\') {
      joined += l.substr(0, l.size() - 1) + " ";
      continue;
    }
    joined += l;
    std::string code = joined;
    joined.clear();
    auto trimmed = code.find_first_not_of(" \t");
    if (trimmed == std::string::npos || code[trimmed] == '#') continue;
    if (auto hash = code.find(" #"); hash != std::string::npos) code = code.substr(0, hash);
    scan_tokens(words(code), numbered ? label + ":" + std::to_string(first) : label, launchers, out, fixed);
  }
}

}  // namespace

std::string interpreter_of(const std::string& path, const std::map<std::string, std::string>& env, std::string& why) {
  std::ifstream in(path, std::ios::binary);
  std::string first;
  if (!in || !std::getline(in, first) || first.rfind("#!", 0) != 0) {
    why = "not an ELF file, and no #! line";
    return "";
  }
  if (!first.empty() && first.back() == '\r') first.pop_back();
  auto w = words(first.substr(2));
  if (w.empty()) {
    why = "its #! line names no interpreter";
    return "";
  }
  std::string interp = w[0];
  if (fs::path(interp).filename() == "env") {
    // `#!/usr/bin/env [-S] NAME ...`: the first word that is not an option or an assignment.
    interp.clear();
    for (size_t i = 1; i < w.size(); ++i)
      if (w[i][0] != '-' && w[i].find('=') == std::string::npos) {
        interp = find_on_path(w[i], env);
        if (interp.empty()) why = "its interpreter " + w[i] + " (#!" + first.substr(2) + ") is not on PATH";
        break;
      }
    if (interp.empty() && why.empty()) why = "its #! line names no interpreter after env";
    return interp;
  }
  std::error_code ec;
  if (!fs::is_regular_file(interp, ec)) {
    why = "its interpreter " + interp + " does not exist";
    return "";
  }
  return interp;
}

std::vector<Launcher> load_launchers(const std::string& rules_dir, Diagnostics& diags) {
  std::vector<Launcher> out;
  std::string path = rules_dir_or_default(rules_dir) + "/launchers.json";
  std::ifstream in(path);
  if (!in) return out;  // optional: without it no process count is recognised
  try {
    auto j = nlohmann::json::parse(in);
    for (auto& l : j.at("launchers")) {
      Launcher x;
      x.tools = l.at("tools").get<std::string>();
      for (auto& o : l.at("options")) x.options.push_back(o.get<std::string>());
      out.push_back(std::move(x));
    }
  } catch (const std::exception& e) {
    diags.error({path, 0, 0}, std::string("malformed launcher list: ") + e.what(), "bad-region-rules",
                "fix the JSON (see docs/analysis.md)");
  }
  return out;
}

// A placeholder the command passes to a program that is no launcher (`main.py 6000 {NJOBS:-2}`,
// `--jobs={N}`): a count the user has made a control of, whose meaning the command does not
// say. With a number or nothing as its default it is a candidate process count, looked for only
// where no launcher's option names one. Our placeholders only: `$NAME` in a script is any
// shell variable; and nothing a launcher is given (`xargs -n {N}` is not its process count).
bool is_launcher(const std::string& program, const std::vector<Launcher>& launchers) {
  for (auto& l : launchers) {
    if (l.tools == "*") continue;
    std::istringstream alts(l.tools);
    for (std::string g; std::getline(alts, g, '|');)
      if (!g.empty() && ::fnmatch(g.c_str(), program.c_str(), 0) == 0) return true;
  }
  return false;
}

void scan_arguments(const std::vector<std::string>& tokens, const std::vector<Launcher>& launchers,
                    std::vector<ProcessControl>& out) {
  std::string program;
  for (const auto& t : tokens) {
    if (is_separator(t)) {
      program.clear();
      continue;
    }
    std::string name, fallback, value = t.substr(t.find('=') == std::string::npos ? 0 : t.find('=') + 1);
    bool literal = false;
    if (value.empty() || value.front() != '{' || !control_value(value, name, fallback, literal)) {
      bool prefix = t == "exec" || t == "env" || t == "nice" || t == "time" || t.find('=') != std::string::npos;
      if (program.empty() && !prefix) program = fs::path(t).filename().string();
      continue;
    }
    if (program.empty() || is_launcher(program, launchers)) continue;
    bool count = std::all_of(fallback.begin(), fallback.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    bool have = std::any_of(out.begin(), out.end(), [&](const ProcessControl& c) { return c.name == name; });
    if (count && !have) out.push_back({name, fallback, "", program, "argv"});
  }
}

std::vector<ProcessControl> find_process_controls(const std::vector<std::string>& args,
                                                  const std::vector<std::pair<std::string, std::string>>& scripts,
                                                  const std::vector<Launcher>& launchers, std::vector<std::string>* fixed) {
  std::vector<ProcessControl> out;
  if (launchers.empty()) return out;
  std::vector<std::string> tokens, arguments;
  for (auto& a : args) {
    if (a.find_first_of(" \t\n") != std::string::npos) {
      scan_text(a, "argv", false, launchers, out, fixed);  // `sh -c '...'`: script text
      tokens.push_back("|");                                 // and not one token of the command
      auto w = words(a);
      arguments.push_back("|");
      arguments.insert(arguments.end(), w.begin(), w.end());
      arguments.push_back("|");
      continue;
    }
    tokens.push_back(a);
    arguments.push_back(a);
  }
  scan_tokens(tokens, "argv", launchers, out, fixed);
  for (auto& [path, text] : scripts) scan_text(text, path, true, launchers, out, fixed);
  if (out.empty()) scan_arguments(arguments, launchers, out);
  return out;
}

}  // namespace compose_detail

namespace {

using namespace compose_detail;

// Whether a mapped path is the composed library `l`.
bool same_library(const Library& l, const std::string& path, const std::string& real) {
  if (!l.path.empty() && l.path == path) return true;
  if (!l.real_path.empty() && l.real_path == real) return true;
  return fs::path(path).filename().string() == l.soname;
}

}  // namespace

void compose_processes(Composition& c, const RunResult& run) {
  c.processes.clear();
  c.process_threads.clear();
  c.apart.clear();
  for (auto& l : c.libraries) l.processes = 0;
  std::map<std::string, std::set<int>> pids;  // contract -> the processes seen with its libraries
  for (auto& use : run.library_use) {
    std::error_code ec;
    std::string real = fs::canonical(use.path, ec).string();
    if (ec) real = use.path;
    for (auto& l : c.libraries) {
      if (!same_library(l, use.path, real)) continue;
      l.processes = std::max(l.processes, use.max_concurrent);
      if (l.contract.empty()) continue;
      c.processes[l.contract] = std::max(c.processes[l.contract], use.max_concurrent);
      c.process_threads[l.contract] = std::max(c.process_threads[l.contract], use.max_threads);
      pids[l.contract].insert(use.pids.begin(), use.pids.end());
    }
  }
  // A contract whose libraries no process was seen with (a manifest's, a run that failed) may
  // meet any other: only two seen in processes with none in common are apart.
  for (auto a = pids.begin(); a != pids.end(); ++a)
    for (auto b = std::next(a); b != pids.end(); ++b) {
      if (a->second.empty() || b->second.empty()) continue;
      bool shared = std::any_of(a->second.begin(), a->second.end(), [&](int p) { return b->second.count(p) > 0; });
      if (!shared) c.apart.insert({a->first, b->first});
    }
}

}  // namespace syspilot::tuner
