// Renders prompt templates from facts: ranks every fact by how much it matters for
// resource contention, keeps the best that fit the token budget, adds checked examples.
#include "synth/prompt.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "lpcl/lpcl.h"
#include "synth/draft.h"
#include "synth/rules.h"

namespace syspilot::synth {
namespace fs = std::filesystem;

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
}

struct Line {
  int score;
  std::string text;
};

std::vector<Line> ranked_facts(const extract::Facts& f, const std::string& lib) {
  std::vector<Line> out;
  std::string prefix;
  for (char c : lib.rfind("lib", 0) == 0 ? lib.substr(3) : lib)
    if (std::isalnum(static_cast<unsigned char>(c))) prefix += static_cast<char>(std::toupper(c));
  auto score_of = [&](const std::string& name, const std::string& category = {}) {
    auto role = classify_knob(name, category);
    if (role && resource_relevant(role->role)) return 100;
    if (role) return 60;
    if (!prefix.empty() && name.rfind(prefix, 0) == 0) return 40;
    return 5;
  };
  // One line per environment variable, with up to three read sites.
  std::map<std::string, std::vector<const extract::EnvRead*>> env;
  for (auto& e : f.env_vars) env[e.name].push_back(&e);
  for (auto& [name, reads] : env) {
    std::ostringstream l;
    auto* first = reads.front();
    l << "env " << name << " type=" << (first->type.empty() ? "unknown" : first->type);
    for (auto* r : reads)
      if (!r->default_value.empty()) {
        l << " default=" << r->default_value;
        break;
      }
    l << " read";
    for (size_t i = 0; i < reads.size() && i < 3; ++i)
      l << (i ? "," : "") << " @ \"" << fact_ref(reads[i]->file, reads[i]->line) << "\""
        << (reads[i]->function.empty() ? "" : " in " + reads[i]->function + "()");
    if (reads.size() > 3) l << " (+" << reads.size() - 3 << " more)";
    out.push_back({score_of(name) + 5, l.str()});
  }
  for (auto& a : f.api_controls)
    out.push_back({score_of(a.name, a.category), "api " + a.name + ": " + a.signature + " @ \"" + fact_ref(a.file, a.line) +
                                                     "\"" + (a.doc.empty() ? "" : " doc: " + a.doc.substr(0, 200))});
  for (auto& t : f.threading)
    out.push_back({t.kind == "thread_create" || t.kind == "spin_wait" || t.kind == "affinity" ? 70 : 30,
                   "code " + t.kind + " " + t.detail + " @ \"" + fact_ref(t.file, t.line) + "\"" +
                       (t.function.empty() ? "" : " in " + t.function + "()") + (t.init_time ? " at init" : "")});
  for (auto& d : f.doc_mentions)
    out.push_back({score_of(d.name) / 2, "doc " + d.name + " @ \"" + fact_ref(d.file, d.line) + "\": " + d.sentence.substr(0, 240)});
  for (auto& b : f.binaries) {
    std::ostringstream l;
    l << "binary " << b.path << (b.soname.empty() ? "" : " soname " + b.soname);
    if (!b.imports.empty()) {
      l << " imports";
      for (auto& i : b.imports) l << " " << i;
    }
    if (!b.knob_strings.empty()) {
      l << " strings";
      for (auto& k : b.knob_strings) l << " " << k;
    }
    out.push_back({90, l.str()});
  }
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) {
    return a.score != b.score ? a.score > b.score : a.text < b.text;
  });
  return out;
}

std::string examples_for(const std::string& dir, const std::string& lib, size_t budget_tokens) {
  std::vector<std::pair<size_t, std::string>> files;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".lpcl" && e.path().stem() != lib) files.emplace_back(e.file_size(ec), e.path().string());
  std::sort(files.begin(), files.end());
  std::string out;
  int taken = 0;
  for (auto& [size, path] : files) {
    if (taken == 2) break;
    std::string text;
    try {
      text = read_file(path);
    } catch (...) {
      continue;
    }
    if (approx_tokens(out + text) > budget_tokens) break;
    Diagnostics d;
    auto doc = lpcl::parse(text, path, d);
    if (d.has_errors() || !lpcl::check(doc, d)) continue;  // only checked contracts teach
    out += "```lpcl\n" + text + (text.ends_with("\n") ? "" : "\n") + "```\n";
    ++taken;
  }
  return out.empty() ? "(none available)\n" : out;
}

}  // namespace

size_t approx_tokens(const std::string& s) { return (s.size() + 3) / 4; }

std::string prompts_dir(const SynthOptions& o) {
  return !o.prompts_dir.empty() ? o.prompts_dir : env_or("SYSPILOT_PROMPTS_DIR", std::string(SYSPILOT_SOURCE_DIR) + "/prompts");
}

std::string corpus_dir(const SynthOptions& o) {
  return !o.corpus_dir.empty() ? o.corpus_dir : env_or("SYSPILOT_CORPUS_DIR", std::string(SYSPILOT_SOURCE_DIR) + "/corpus");
}

Template load_template(const std::string& dir, const std::string& id) {
  const std::string path = dir + "/" + id + ".txt";
  std::istringstream in(read_file(path));
  Template t;
  t.path = path;
  std::string line, part;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (part.empty() && line.rfind("# id:", 0) == 0) {
      std::istringstream(line.substr(5)) >> t.id;
    } else if (part.empty() && line.rfind("# version:", 0) == 0) {
      t.version = std::atoi(line.substr(10).c_str());
    } else if (line == "=== system" || line == "=== user") {
      part = line.substr(4);
    } else if (part == "system") {
      t.system += line + "\n";
    } else if (part == "user") {
      t.user += line + "\n";
    } else if (!line.empty() && line[0] != '#') {
      throw std::runtime_error(path + ":" + std::to_string(n) + ": text before `=== system`; templates start with "
                               "`# id:` and `# version:` lines, then `=== system` and `=== user` parts");
    }
  }
  if (t.id.empty() || t.version <= 0 || t.system.empty() || t.user.empty())
    throw std::runtime_error(path + ": a template needs `# id: NAME`, `# version: N`, `=== system` and `=== user` parts");
  if (t.id != id) throw std::runtime_error(path + ": declares id '" + t.id + "' but is named " + id + ".txt");
  return t;
}

Prompt render(const Template& t, const extract::Facts& facts, const SynthOptions& opts,
              const std::map<std::string, std::string>& extra) {
  const std::string lib = contract_name(facts, opts);
  std::string resources;
  for (auto& r : lpcl::resources()) resources += (resources.empty() ? "" : ", ") + r;
  std::map<std::string, std::string> vals = extra;
  vals["library"] = lib;
  vals["version"] = contract_version(opts);
  vals["resources"] = resources;
  vals["budget"] = std::to_string(opts.prompt_token_budget);
  auto fill = [&](std::string s, bool with_lists) {
    for (auto& [k, v] : vals)
      if (with_lists || (k != "facts" && k != "examples")) replace_all(s, "{{" + k + "}}", v);
    return s;
  };
  // The fixed part first; examples get at most a third of what is left, facts the rest.
  vals["facts"] = "";
  vals["examples"] = "";
  const size_t fixed = approx_tokens(fill(t.system, true) + fill(t.user, true));
  const size_t left = opts.prompt_token_budget > fixed ? opts.prompt_token_budget - fixed : 0;
  if (t.user.find("{{examples}}") != std::string::npos) vals["examples"] = examples_for(corpus_dir(opts), lib, left / 3);
  size_t room = left > approx_tokens(vals["examples"]) ? left - approx_tokens(vals["examples"]) : 0;
  Prompt p;
  p.id = t.ref();
  std::string listed;
  auto lines = ranked_facts(facts, lib);
  for (auto& l : lines) {
    if (approx_tokens(listed + l.text + "\n") + 16 > room) {
      ++p.facts_dropped;
      continue;
    }
    listed += l.text + "\n";
    ++p.facts_kept;
  }
  if (p.facts_dropped) listed += "(" + std::to_string(p.facts_dropped) + " lower-ranked facts left out to fit the budget)\n";
  if (lines.empty()) listed = "(no facts)\n";
  vals["facts"] = listed;
  p.system = fill(t.system, true);
  p.user = fill(t.user, true);
  p.tokens = approx_tokens(p.system) + approx_tokens(p.user);
  return p;
}

Prompt build_prompt(const extract::Facts& facts, const SynthOptions& opts) {
  return render(load_template(prompts_dir(opts), "draft-contract"), facts, opts);
}

}  // namespace syspilot::synth
