// Scenarios: reading eval/scenarios/*/scenario.json, their configuration spaces, the tuners'
// view of those spaces, and the child environment a configuration becomes.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "eval/eval.h"
#include "tuner/run.h"
#include "tuner/space.h"

namespace syspilot::eval {

namespace fs = std::filesystem;

namespace {
std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

bool numeric(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return *end == 0;
}
}  // namespace

std::string scenarios_dir() { return env_or("SYSPILOT_EVAL_SCENARIOS", std::string(checkout_dir()) + "/eval/scenarios"); }
std::string programs_dir() { return env_or("SYSPILOT_EVAL_PROGRAMS", SYSPILOT_EVAL_PROGRAMS_DIR); }
std::string data_dir() { return env_or("SYSPILOT_EVAL_DATA", std::string(checkout_dir()) + "/eval/data"); }
std::string corpus_dir() { return env_or("SYSPILOT_CORPUS_DIR", std::string(checkout_dir()) + "/corpus"); }

std::vector<Scenario> load_scenarios(const std::string& dir, Diagnostics& diags) {
  return load_scenarios(dir, diags, tuner::MachineFacts::detect());
}

std::vector<Scenario> load_scenarios(const std::string& dir, Diagnostics& diags, const tuner::MachineFacts& m) {
  std::vector<Scenario> out;
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (fs::exists(e.path() / "scenario.json")) files.push_back(e.path() / "scenario.json");
  if (ec) {
    diags.error({dir, 0, 0}, "cannot read the scenarios folder: " + ec.message(), "eval-scenarios",
                "pass --scenarios DIR or set SYSPILOT_EVAL_SCENARIOS");
    return out;
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      diags.error({f.string(), 0, 0}, "not a JSON object", "eval-scenario-json", "fix the file's syntax");
      continue;
    }
    try {
      Scenario s;
      s.name = j.at("name").get<std::string>();
      s.dir = f.parent_path().string();
      s.program = j.at("program").get<std::string>();
      s.written_args = j.value("args", std::vector<std::string>{});
      s.libraries = j.value("libraries", std::vector<std::string>{});
      s.written_default = j.value("default", Config{});
      for (const auto& c : j.at("space")) {
        ControlSpec cs{c.at("control"), c.value("library", ""), c.value("kind", "env"), {}};
        cs.written = c.value("values", std::vector<std::string>{});
        cs.ladder = c.value("ladder", std::string());
        if ((cs.written.empty() && cs.ladder.empty()) || (cs.kind != "env" && cs.kind != "api" && cs.kind != "preload"))
          throw std::invalid_argument("control " + cs.name + ": needs values (or a ladder) and kind env|api|preload");
        s.space.push_back(std::move(cs));
      }
      build_for(s, m);
      s.expert = j.value("expert", std::vector<std::string>{});
      s.timeout_s = j.value("timeout_s", 15.0);
      s.negative_control = j.value("negative_control", false);
      s.group = j.value("group", std::string("dev"));
      if (s.group != "dev" && s.group != "held-out")
        throw std::invalid_argument("group must be \"dev\" or \"held-out\", not \"" + s.group + "\"");
      std::ifstream readme(f.parent_path() / "README.md");
      std::string line;
      while (std::getline(readme, line))
        if (!line.empty() && line[0] != '#') s.readme += (s.readme.empty() ? "" : " ") + line;
      out.push_back(std::move(s));
    } catch (const std::exception& e) {
      diags.error({f.string(), 0, 0}, std::string("bad scenario: ") + e.what(), "eval-scenario-json",
                  "see docs/eval.md for the scenario.json fields");
    }
  }
  return out;
}

namespace {
// A whole number from an expression over the machine facts, or why not.
long long whole(const std::string& expr, const std::map<std::string, double>& names) {
  std::string why;
  auto v = tuner::evaluate_expr(expr, names, &why);
  if (!v) throw std::invalid_argument("\"" + expr + "\" does not evaluate over the machine facts" + (why.empty() ? "" : ": " + why));
  if (!std::isfinite(*v) || std::fabs(*v - std::round(*v)) > 1e-9 || std::fabs(*v) > 1e15)
    throw std::invalid_argument("\"" + expr + "\" is not a whole number on this machine");
  return std::llround(*v);
}

// "{=EXPR}" replaced by its value, as many times as it occurs.
std::string substitute(const std::string& text, const std::map<std::string, double>& names) {
  std::string out;
  size_t at = 0;
  for (size_t open; (open = text.find("{=", at)) != std::string::npos;) {
    size_t close = text.find('}', open);
    if (close == std::string::npos) throw std::invalid_argument("\"" + text + "\": \"{=\" without its \"}\"");
    out += text.substr(at, open - at) + std::to_string(whole(text.substr(open + 2, close - open - 2), names));
    at = close + 1;
  }
  return out + text.substr(at);
}
}  // namespace

void build_for(Scenario& s, const tuner::MachineFacts& m) {
  auto names = m.names();
  s.ncpus = m.ncpus;
  s.args.clear();
  for (const auto& a : s.written_args) s.args.push_back(substitute(a, names));
  s.user_default.clear();
  for (const auto& [k, v] : s.written_default) s.user_default[k] = substitute(v, names);
  for (auto& c : s.space) {
    std::vector<std::string> values;
    auto add = [&](std::string v) {
      if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(std::move(v));
    };
    for (const auto& v : c.written) add(substitute(v, names));
    if (!c.ladder.empty()) {
      long long top = whole(c.ladder, names);
      if (top < 1) throw std::invalid_argument("control " + c.name + ": ladder \"" + c.ladder + "\" is below 1 on this machine");
      for (double v : tuner::thread_ladder(1, static_cast<double>(top), m)) add(std::to_string(std::llround(v)));
    }
    c.values = std::move(values);
  }
}

std::vector<std::string> command_line(const Scenario& s) {
  std::vector<std::string> argv{s.program.rfind('/', 0) == 0 ? s.program : programs_dir() + "/" + s.program};
  for (std::string a : s.args) {
    const std::string key = "{scenario_dir}";
    for (size_t at = a.find(key); at != std::string::npos; at = a.find(key, at + s.dir.size())) a.replace(at, key.size(), s.dir);
    argv.push_back(std::move(a));
  }
  return argv;
}

Freeze load_freeze(const std::string& path) {
  Freeze f;
  const std::string file = path.empty() ? std::string(checkout_dir()) + "/eval/freeze.json" : path;
  std::ifstream in(file);
  if (!in) return f;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) {
    f.changed_note = file + " is not a JSON object";
    return f;
  }
  f.commit = j.value("commit", std::string());
  f.date = j.value("date", std::string());
  f.paths = j.value("paths", std::vector<std::string>{});
  if (j.contains("earlier") && j["earlier"].is_array())
    for (const auto& e : j["earlier"])
      if (e.is_object())
        f.earlier.push_back({e.value("commit", std::string()), e.value("date", std::string()), e.value("note", std::string())});
  // A commit is hex only: nothing from the file reaches the shell otherwise.
  bool hex = !f.commit.empty() && f.commit.size() <= 40 &&
             std::all_of(f.commit.begin(), f.commit.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  if (!hex) {
    f.changed_note = "no commit named";
    return f;
  }
  tuner::RunSpec git;
  git.argv = {"git", "-C", checkout_dir(), "diff", "--name-only", f.commit, "--"};
  git.argv.insert(git.argv.end(), f.paths.begin(), f.paths.end());
  git.timeout_s = 30;
  git.sample_interval_s = 0;
  git.perf = false;
  git.placeholders = false;
  tuner::RunResult r = tuner::run(git);
  if (!r.ok()) {
    f.changed_note = "unknown: git could not compare with the freeze commit (" +
                     (r.failure.empty() ? std::string("no history") : r.failure) + ")";
    return f;
  }
  std::string names;
  std::istringstream lines(r.stdout_text);
  for (std::string l; std::getline(lines, l);)
    if (!l.empty()) names += (names.empty() ? "" : ", ") + l;
  f.changed = !names.empty();
  f.changed_note = names.empty() ? "unchanged since the freeze" : "changed since the freeze: " + names;
  return f;
}

std::vector<Config> enumerate(const Scenario& s) {
  std::vector<Config> out{Config{}};
  for (const auto& c : s.space) {
    std::vector<Config> next;
    for (const auto& base : out)
      for (const auto& v : c.values) {
        Config x = base;
        x[c.name] = v;
        next.push_back(std::move(x));
      }
    out = std::move(next);
  }
  return out;
}

namespace {
// The fallback D of a control that the arguments take as {NAME:-D} and that no composed library
// reads (the command line's own: a launcher's job count, a script's argument). Setting such a
// control to D runs the very same command: it is that control unset.
std::optional<std::string> argument_fallback(const Scenario& s, const std::string& name) {
  for (const auto& c : s.space)
    if (c.name == name && std::find(s.libraries.begin(), s.libraries.end(), c.library) != s.libraries.end())
      return std::nullopt;
  for (const auto& p : tuner::placeholders(s.args))
    if (p.name == name && p.has_fallback) return p.fallback;
  return std::nullopt;
}
}  // namespace

Config normalise(const Scenario& s, const Config& c) {
  Config out = s.user_default;
  for (const auto& [k, v] : c) out[k] = v;
  for (auto it = out.begin(); it != out.end();) {
    auto fallback = it->second.empty() ? std::nullopt : argument_fallback(s, it->first);
    it = it->second.empty() || (fallback && *fallback == it->second) ? out.erase(it) : std::next(it);
  }
  return out;
}

Config assignment(const Scenario& s, const Config& normalised) {
  Config out;
  for (const auto& c : s.space) {
    auto it = normalised.find(c.name);
    out[c.name] = it == normalised.end() ? "" : it->second;
  }
  return out;
}

namespace {
tuner::Space space_of(const Scenario& s, const std::vector<std::string>* only) {
  tuner::Space space;
  for (const auto& c : s.space) {
    if (only && std::find(only->begin(), only->end(), c.name) == only->end()) continue;
    tuner::Param p;
    p.name = c.name;
    p.library = c.library;
    p.kind = c.kind == "api" ? tuner::Param::Kind::Api : tuner::Param::Kind::Env;
    // "" (not set) stays a value the tuners can choose: the library's own default is often
    // the best setting of one control while another is changed, and leaving a variable unset
    // is what a user can do too (LD_PRELOAD unset is glibc's allocator).
    p.values = c.values;
    auto d = s.user_default.find(c.name);
    p.default_value = d == s.user_default.end() ? "" : d->second;
    p.numeric = std::all_of(p.values.begin(), p.values.end(), [](const std::string& v) { return v.empty() || numeric(v); });
    space.params.push_back(std::move(p));
  }
  return space;
}
}  // namespace

tuner::Space search_space(const Scenario& s) { return space_of(s, nullptr); }
tuner::Space expert_space(const Scenario& s) { return space_of(s, &s.expert); }

Environment environment(const Scenario& s, const Config& c) {
  Environment env;
  Config n = normalise(s, c);
  std::string preload;
  bool shim = false;
  auto prepend = [&](const std::string& lib) { preload = preload.empty() ? lib : lib + ":" + preload; };
  for (const auto& cs : s.space) {
    auto it = n.find(cs.name);
    std::string var = cs.kind == "api" ? "SYSPILOT_API_" + cs.name : cs.name;
    if (cs.kind == "preload") continue;
    if (it == n.end()) {
      env.unset.push_back(var);
    } else {
      env.set[var] = it->second;
      shim = shim || cs.kind == "api";
    }
  }
  if (shim) prepend(programs_dir() + "/libsyspilot_api_shim.so");
  for (const auto& cs : s.space)
    if (cs.kind == "preload" && n.count(cs.name)) prepend(n.at(cs.name));
  if (preload.empty()) env.unset.push_back("LD_PRELOAD");
  else env.set["LD_PRELOAD"] = preload;
  return env;
}

}  // namespace syspilot::eval
