// What the analysis stage tells the syspilot tuner about a scenario: run once live (its
// profiling runs are charged to syspilot's budget) and kept beside the measured table.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <sstream>

#include "eval/eval.h"
#include "tuner/analyze.h"
#include "tuner/session.h"

namespace syspilot::eval {


// A remedy value the table did not measure (a threshold the rule computes, say) cannot be
// replayed as such. The table's values of a numeric control are a sample of its domain, so a
// numeric remedy value goes to the nearest measured one (on a log scale: thresholds and counts
// act by orders of magnitude), as a tuner over that discrete domain would take it; any other
// unmeasured assignment is dropped and the rest of the remedy kept.
static bool nearest_measured(const ControlSpec& spec, const std::string& value, std::string& out) {
  char* end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end || !(v > 0)) return false;
  double best = 0;
  for (const auto& x : spec.values) {
    double m = std::strtod(x.c_str(), &end);
    if (x.empty() || *end || !(m > 0)) continue;
    double d = std::fabs(std::log(m / v));
    if (out.empty() || d < best) out = x, best = d;
  }
  return !out.empty();
}

// Says which profiling runs the search reuses: the default's as the reference, a probe's as a
// trial where its configuration lies in the measured space (compare() makes them so).
static void describe_reuse(const Scenario& s, Guidance& g) {
  if (g.profiling_runs == 0) return;
  tuner::Space space = search_space(s);
  int as_trials = 0;
  for (const auto& p : g.probes)
    if (tuner::probe_configuration(space, {p.env.begin(), p.env.end()})) as_trials += p.runs;
  std::string& n = g.note;
  if (!n.empty() && n.back() == '.') n.pop_back();
  n += "; of these, " + std::to_string(g.default_runs) + " runs of the default are the reference and " +
       std::to_string(as_trials) + " probe runs are trials of configurations in the measured space.";
}

static void keep_measured_values(const Scenario& s, Guidance& g) {
  for (auto& guide : g.guides) {
    std::vector<Config> kept;
    for (auto r : guide.remedies) {
      for (auto it = r.begin(); it != r.end();) {
        auto spec = std::find_if(s.space.begin(), s.space.end(), [&](const ControlSpec& c) { return c.name == it->first; });
        if (spec == s.space.end()) {
          it = r.erase(it);
          continue;
        }
        if (std::find(spec->values.begin(), spec->values.end(), it->second) != spec->values.end()) {
          ++it;
          continue;
        }
        std::string near;
        if (nearest_measured(*spec, it->second, near)) {
          it->second = near;
          ++it;
        } else {
          it = r.erase(it);
        }
      }
      if (!r.empty() && std::find(kept.begin(), kept.end(), r) == kept.end()) kept.push_back(r);
    }
    guide.remedies = kept;
  }
}

namespace {
std::string draw_path(const Scenario& s, int k) {
  return data_dir() + "/" + s.name + (k == 1 ? std::string(".analysis.json") : ".analysis-" + std::to_string(k) + ".json");
}

// One stored draw, as the analysis wrote it (before keep_measured_values). False when the file
// is absent, or unreadable (a warning then).
bool read_draw(const std::string& path, Guidance& g, Diagnostics& diags) {
  if (!std::filesystem::exists(path)) return false;
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) {
    diags.warning({path, 0, 0}, "unreadable analysis; analysing again", "eval-bad-analysis");
    return false;
  }
  try {
    g.guides = tuner::guides_from_json(j.value("guides", nlohmann::json::array()).dump());
    g.profiling_runs = j.value("profiling_runs", 0);
    g.default_runs = std::min(g.profiling_runs, j.value("default_runs", 0));
    g.max_runs = j.value("max_runs", 0);
    for (const auto& p : j.value("probes", nlohmann::json::array()))
      if (p.is_object() && p.value("env", nlohmann::json()).is_object())
        g.probes.push_back({p["env"].get<Config>(), p.value("runs", 0)});
    g.note = j.value("note", "");
    if (j.contains("hypotheses") && j["hypotheses"].is_array()) {
      for (const auto& h : j["hypotheses"]) {
        std::string id = h.value("id", "");
        if (id.empty()) continue;
        g.hypotheses.push_back(id);
        if (h.value("verdict", "") == "confirmed") g.confirmed.push_back(id);
      }
    } else {
      for (const auto& guide : g.guides) g.hypotheses.push_back(guide.id), g.confirmed.push_back(guide.id);
    }
  } catch (const std::exception& e) {
    diags.warning({path, 0, 0}, std::string("unreadable analysis (") + e.what() + "); analysing again", "eval-bad-analysis");
    g = Guidance{};
    return false;
  }
  return true;
}

void write_draw(const Scenario& s, const std::string& path, const Guidance& g,
                const std::vector<std::pair<std::string, std::string>>& verdicts) {
  nlohmann::json j;
  j["scenario"] = s.name;
  j["guides"] = nlohmann::json::parse(tuner::guides_to_json(g.guides));
  j["profiling_runs"] = g.profiling_runs;
  j["default_runs"] = g.default_runs;
  j["max_runs"] = g.max_runs;
  j["probes"] = nlohmann::json::array();
  for (const auto& p : g.probes) j["probes"].push_back({{"env", p.env}, {"runs", p.runs}});
  j["hypotheses"] = nlohmann::json::array();
  for (const auto& [id, verdict] : verdicts) j["hypotheses"].push_back({{"id", id}, {"verdict", verdict}});
  j["note"] = g.note;
  j["contracts_digest"] = contracts_digest(corpus_dir());
  std::filesystem::create_directories(data_dir());
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump(1) << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

// The analysis stage, when the tuner library has it (SYSPILOT_EVAL_HAVE_ANALYSIS); the
// hypotheses' ids and verdicts go to `verdicts`.
bool analyse_live(const Scenario& s, Guidance& g, std::vector<std::pair<std::string, std::string>>& verdicts,
                  Diagnostics& diags);

// Whether a stored draw ran more runs than the analysis may take now: one made without the cap
// that the cap would have cut short.
bool beyond_cap(const Guidance& g) {
  int cap = tuner::analysis_run_cap(kDrawBudget);
  return g.max_runs != cap && g.profiling_runs > cap;
}

// Draw k: the stored one unless `refresh`, else analysed now and stored.
bool one_draw(const Scenario& s, int k, bool refresh, Guidance& g, Diagnostics& diags) {
  std::string path = draw_path(s, k);
  // A draw made under another cap (or none) is drawn again where the cap could have stopped it.
  if (!refresh && read_draw(path, g, diags) && !beyond_cap(g)) return true;
  g = Guidance{};
  std::vector<std::pair<std::string, std::string>> verdicts;
  if (!analyse_live(s, g, verdicts, diags)) return false;
  write_draw(s, path, g, verdicts);
  for (const auto& [id, verdict] : verdicts) {
    g.hypotheses.push_back(id);
    if (verdict == "confirmed") g.confirmed.push_back(id);
  }
  return true;
}
}  // namespace

Guidance analyse(const Scenario& s, bool refresh, Diagnostics& diags) {
  Guidance g;
  if (!one_draw(s, 1, refresh, g, diags)) return g;
  keep_measured_values(s, g);
  describe_reuse(s, g);
  return g;
}

std::vector<Guidance> analysis_draws(const Scenario& s, Diagnostics& diags) {
  std::vector<Guidance> out;
  for (int k = 1; k <= 1000; ++k) {
    Guidance g;
    if (!read_draw(draw_path(s, k), g, diags)) break;
    if (beyond_cap(g))
      diags.warning({draw_path(s, k), 0, 0},
                    "this draw ran " + std::to_string(g.profiling_runs) + " profiling runs, more than the " +
                        std::to_string(tuner::analysis_run_cap(kDrawBudget)) +
                        " syspilot tune --budget " + std::to_string(kDrawBudget) +
                        " allows; replayed as stored: draw again with --draw-analyses",
                    "eval-draw-beyond-cap");
    keep_measured_values(s, g);
    describe_reuse(s, g);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<Guidance> draw_analyses(const Scenario& s, int n, bool refresh, Diagnostics& diags) {
  std::vector<Guidance> out;
  for (int k = 1; k <= n; ++k) {
    Guidance g;
    if (!one_draw(s, k, refresh, g, diags)) break;
    keep_measured_values(s, g);
    describe_reuse(s, g);
    out.push_back(std::move(g));
  }
  return out;
}

namespace {
#if SYSPILOT_EVAL_HAVE_ANALYSIS
bool analyse_live(const Scenario& s, Guidance& g, std::vector<std::pair<std::string, std::string>>& verdicts,
                  Diagnostics& diags) {
  Environment env = environment(s, {});
  tuner::AnalyzeOptions opts;
  opts.profile.run.argv = command_line(s);
  opts.compose.binary = opts.profile.run.argv.front();
  opts.compose.source_dir = s.dir;
  opts.compose.contract_dirs = {corpus_dir()};
  opts.compose.env = env.set;
  opts.profile.run.env_set = env.set;
  opts.profile.run.env_unset = env.unset;
  opts.profile.run.timeout_s = s.timeout_s;
  opts.profile.max_runs = tuner::analysis_run_cap(kDrawBudget);
  tuner::Analysis a = tuner::analyze(opts);
  g.max_runs = opts.profile.max_runs;
  for (const auto& d : a.diagnostics.items())
    if (d.severity == Severity::Error) diags.add(d);
  g.profiling_runs = a.profile.runs();
  g.default_runs = static_cast<int>(a.profile.default_runs.size());
  for (const auto& p : a.profile.probes)
    g.probes.push_back({Config(p.env.begin(), p.env.end()), static_cast<int>(p.runs.size())});
  // The search can only act on controls the table measured; others stay at the default.
  std::set<std::string> measured;
  for (const auto& c : s.space) measured.insert(c.name);
  std::set<std::string> dropped;
  for (auto guide : tuner::guides(a.hypotheses)) {
    std::vector<std::string> keep;
    for (const auto& c : guide.controls)
      (measured.count(c) ? keep.push_back(c) : (void)dropped.insert(c));
    guide.controls = keep;
    std::vector<Config> remedies;
    for (auto r : guide.remedies) {
      for (auto it = r.begin(); it != r.end();) it = measured.count(it->first) ? std::next(it) : r.erase(it);
      if (!r.empty()) remedies.push_back(r);
    }
    guide.remedies = remedies;
    if (!guide.controls.empty()) g.guides.push_back(guide);
  }
  std::ostringstream note;
  int confirmed = 0;
  std::set<std::string> kinds;
  for (const auto& h : a.hypotheses) {
    verdicts.emplace_back(h.id, tuner::to_string(h.verdict));
    if (h.verdict == tuner::Verdict::Confirmed) ++confirmed, kinds.insert(h.kind);
  }
  note << a.composition.contracts.size() << " contracts composed, " << a.hypotheses.size() << " hypotheses, "
       << confirmed << " confirmed (";
  for (const auto& k : kinds) note << (k == *kinds.begin() ? "" : ", ") << k;
  note << "); " << g.guides.size() << " guides over the measured controls; " << g.profiling_runs
       << " profiling runs charged to the budget";
  if (!dropped.empty()) {
    note << "; controls outside the measured space left at their defaults:";
    for (const auto& d : dropped) note << " " << d;
  }
  g.note = note.str() + ".";
  return true;
}
#else
bool analyse_live(const Scenario& s, Guidance& g, std::vector<std::pair<std::string, std::string>>&, Diagnostics&) {
  g.note = "the analysis stage is not built: syspilot searched without guides";
  return false;
}
#endif
}  // namespace

}  // namespace syspilot::eval
