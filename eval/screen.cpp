// The peers' space beyond a scenario's table: the env controls its contracts offer, screened
// by live runs (inert within noise or not), and answered in replay by projection.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "eval/eval.h"
#include "lpcl/lpcl.h"
#include "tuner/search.h"
#include "tuner/space.h"

namespace syspilot::eval {

namespace fs = std::filesystem;

namespace {

std::string snake(std::string s) {
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

bool is_number(const std::string& v) {
  if (v.empty()) return false;
  char* end = nullptr;
  std::strtod(v.c_str(), &end);
  return end && *end == '\0';
}

// The corpus contracts of `libraries`: a contract named like the library (glibc-malloc is
// glibc_malloc), else every contract whose name starts with it and '_' (openblas: both builds).
std::vector<lpcl::Contract> contracts_of(const std::vector<std::string>& libraries, Diagnostics& diags) {
  std::vector<lpcl::Contract> all;
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(corpus_dir(), ec))
    if (e.path().extension() == ".lpcl") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    Diagnostics d;
    lpcl::Document doc = lpcl::parse_file(f, d);
    if (d.has_errors()) {
      diags.warning({f, 0, 0}, "a corpus contract does not parse: its controls are not offered to the peers",
                    "eval-screen-contract");
      continue;
    }
    for (auto& c : doc.contracts) all.push_back(std::move(c));
  }
  std::vector<lpcl::Contract> out;
  std::set<std::string> taken;
  for (const auto& lib : libraries) {
    const std::string want = snake(lib);
    bool exact = std::any_of(all.begin(), all.end(), [&](const lpcl::Contract& c) { return c.name == want; });
    for (const auto& c : all)
      if ((exact ? c.name == want : c.name.rfind(want + "_", 0) == 0) && taken.insert(c.name).second) out.push_back(c);
  }
  return out;
}

// The environment of the user's default with one more variable set.
Environment with(const Scenario& s, const std::string& name, const std::string& value) {
  Environment env = environment(s, {});
  env.unset.erase(std::remove(env.unset.begin(), env.unset.end(), name), env.unset.end());
  env.set[name] = value;
  return env;
}

// An outside load as progress lines print it (0.12).
std::string load_text(double load) { return fixed(load, 2); }

nlohmann::json to_json(const Screen& sc) {
  nlohmann::json j;
  j["scenario"] = sc.scenario;
  j["machine"] = sc.machine;
  j["measured_at"] = sc.measured_at;
  j["args"] = sc.args;
  j["default_samples"] = sc.default_samples;
  j["default_outside_load"] = sc.default_load;
  j["tolerance"] = sc.tolerance;
  j["table_default_median"] = sc.table_default;
  j["rule"] = "a value is inert when its run lies within [min x (1 - tolerance), max x (1 + tolerance)] of the "
              "default's runs just before and just after it (after_default and the next; all of them where it is "
              "not recorded), tolerance the table's noise and at least 5%";
  j["controls"] = nlohmann::json::array();
  for (const auto& c : sc.controls) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& v : c.values) {
      nlohmann::json x = {{"value", v.value},   {"samples", v.samples},           {"outside_load", v.outside_load},
                          {"inert", v.inert},   {"after_default", v.after_default}};
      if (!v.failure.empty()) x["failure"] = v.failure;
      values.push_back(std::move(x));
    }
    j["controls"].push_back({{"control", c.name}, {"library", c.library}, {"values", std::move(values)}});
  }
  return j;
}

}  // namespace

const ScreenedControl* Screen::find(const std::string& name) const {
  for (const auto& c : controls)
    if (c.name == name) return &c;
  return nullptr;
}

bool Screen::default_drifted() const {
  if (table_default <= 0 || default_samples.empty()) return false;
  double m = tuner::median(default_samples);
  return m > table_default * (1 + tolerance) || m < table_default * (1 - tolerance);
}

std::vector<double> neighbours(const Screen& sc, const ScreenedValue& v) {
  const auto& d = sc.default_samples;
  if (v.after_default < 0 || static_cast<size_t>(v.after_default) >= d.size()) return d;
  std::vector<double> out = {d[v.after_default]};
  if (static_cast<size_t>(v.after_default) + 1 < d.size()) out.push_back(d[v.after_default + 1]);
  return out;
}

bool inert(const std::vector<double>& samples, const std::vector<double>& default_samples, double tolerance) {
  if (samples.empty() || default_samples.empty()) return false;
  auto [lo, hi] = std::minmax_element(default_samples.begin(), default_samples.end());
  for (double v : samples)
    if (!(v >= *lo * (1 - tolerance) && v <= *hi * (1 + tolerance))) return false;
  return true;
}

std::vector<ScreenedControl> screen_candidates(const Scenario& s, Diagnostics& diags) {
  std::vector<std::string> libraries = s.libraries;
  for (const auto& c : s.space)
    if (std::find(libraries.begin(), libraries.end(), c.library) == libraries.end()) libraries.push_back(c.library);
  tuner::MachineFacts m = tuner::MachineFacts::detect();
  if (s.ncpus > 0) m.ncpus = m.ncores = s.ncpus;  // the machine the scenario was built for
  std::vector<ScreenedControl> out;
  std::set<std::string> seen;
  for (const auto& cs : s.space) seen.insert(cs.name);
  for (const auto& contract : contracts_of(libraries, diags))
    for (const auto& control : contract.controls) {
      tuner::Param p;
      if (!tuner::discretise(control, m, p) || p.kind != tuner::Param::Kind::Env || p.values.empty()) continue;
      if (!seen.insert(control.name).second) continue;
      ScreenedControl c{control.name, contract.name, {}};
      for (const auto& v : p.values) c.values.push_back({v, {}, {}, "", false});
      out.push_back(std::move(c));
    }
  return out;
}

bool load_screen(const std::string& path, Screen& out, Diagnostics& diags) {
  std::ifstream in(path);
  if (!in) {
    diags.error({path, 0, 0}, "no screen here", "eval-no-screen", "run `syspilot eval --screen --scenario NAME`");
    return false;
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  try {
    if (j.is_discarded() || !j.is_object()) throw std::runtime_error("not a JSON object");
    Screen sc;
    sc.scenario = j.at("scenario").get<std::string>();
    sc.machine = j.value("machine", std::map<std::string, std::string>{});
    sc.measured_at = j.value("measured_at", "");
    sc.args = j.value("args", std::vector<std::string>{});
    sc.default_samples = j.at("default_samples").get<std::vector<double>>();
    sc.default_load = j.value("default_outside_load", std::vector<double>{});
    sc.tolerance = j.at("tolerance").get<double>();
    sc.table_default = j.value("table_default_median", 0.0);
    for (const auto& c : j.at("controls")) {
      ScreenedControl x{c.at("control").get<std::string>(), c.value("library", ""), {}};
      for (const auto& v : c.at("values"))
        x.values.push_back({v.at("value").get<std::string>(), v.at("samples").get<std::vector<double>>(),
                            v.value("outside_load", std::vector<double>{}), v.value("failure", ""),
                            v.at("inert").get<bool>(), v.value("after_default", -1)});
      sc.controls.push_back(std::move(x));
    }
    out = std::move(sc);
    return true;
  } catch (const std::exception& e) {
    diags.error({path, 0, 0}, std::string("the screen is malformed: ") + e.what(), "eval-bad-screen",
                "restore it from git or screen again");
    return false;
  }
}

void save_screen(const std::string& path, const Screen& sc) { write_atomically(path, to_json(sc).dump(1) + "\n"); }

Screen screen(const Scenario& s, const Table& t, const std::string& path, const MeasureOptions& o, Diagnostics& diags) {
  Screen sc;
  if (fs::exists(path) && !load_screen(path, sc, diags)) return sc;
  if (!sc.controls.empty() && sc.args != s.args) {
    diags.error({path, 0, 0}, "the screen was taken with other arguments than the scenario runs now",
                "eval-args-changed", "move the screen away to screen the new workload");
    return sc;
  }
  sc.scenario = s.name;
  sc.args = s.args;
  sc.machine = describe_machine();
  sc.tolerance = std::max(0.05, t.noise());
  if (const Entry* d = t.find(normalise(s, {}))) sc.table_default = d->median();
  // The band is the default's runs of this screen around each value's run (neighbours()): a
  // table measured on another day (another kernel, another host) may hold another default.
  auto verdicts = [&] {
    for (auto& c : sc.controls)
      for (auto& v : c.values) v.inert = v.failure.empty() && inert(v.samples, neighbours(sc, v), sc.tolerance);
  };
  auto progress = [&](const std::string& line) {
    if (o.progress) o.progress(s.name + " screen  " + line);
  };
  auto run_default = [&] {
    Run r = run_guarded(s, environment(s, {}), o);
    if (r.ok) {
      sc.default_samples.push_back(r.wall_s);
      sc.default_load.push_back(r.outside_load);
    }
    progress("default  " + (r.ok ? std::to_string(r.wall_s) + " s" : "FAILED: " + r.failure) + "  load " +
             load_text(r.outside_load));
  };
  int since_default = 0;
  for (const auto& candidate : screen_candidates(s, diags)) {
    const ScreenedControl* done = sc.find(candidate.name);
    if (done && done->values.size() == candidate.values.size() &&
        std::equal(done->values.begin(), done->values.end(), candidate.values.begin(),
                   [](const ScreenedValue& a, const ScreenedValue& b) { return a.value == b.value; }))
      continue;
    if (sc.default_samples.empty()) run_default();
    ScreenedControl c = candidate;
    for (auto& v : c.values) {
      v.after_default = static_cast<int>(sc.default_samples.size()) - 1;
      Run r = run_guarded(s, with(s, c.name, v.value), o);
      if (r.ok) {
        v.samples.push_back(r.wall_s);
        v.outside_load.push_back(r.outside_load);
      } else
        v.failure = r.failure.empty() ? "failed" : r.failure;
      progress(c.name + "=" + v.value + "  " + (r.ok ? std::to_string(r.wall_s) + " s" : "FAILED: " + v.failure) +
               "  load " + load_text(r.outside_load));
      // the default again every few runs, so that the band follows the machine's drift
      if (++since_default >= 4) {
        run_default();
        since_default = 0;
      }
    }
    sc.controls.erase(std::remove_if(sc.controls.begin(), sc.controls.end(),
                                     [&](const ScreenedControl& x) { return x.name == c.name; }),
                      sc.controls.end());
    sc.controls.push_back(std::move(c));
    verdicts();
    sc.measured_at = utc_now();
    save_screen(path, sc);
  }
  verdicts();
  // Saved even with nothing to screen: the report then says the peers search the table's
  // controls because the contracts offer no other, not because nobody looked.
  if (sc.measured_at.empty()) sc.measured_at = utc_now();
  save_screen(path, sc);
  return sc;
}

tuner::Space peer_space(const Scenario& s, const Screen* sc, std::vector<std::string>* projected) {
  tuner::Space space = search_space(s);
  if (!sc) return space;
  for (const auto& c : sc->controls) {
    if (space.find(c.name)) continue;  // the table varies it
    tuner::Param p;
    p.name = c.name;
    p.library = c.library;
    p.kind = tuner::Param::Kind::Env;
    p.values = {""};  // not set, as the table's controls offer it
    for (const auto& v : c.values)
      if (v.inert) p.values.push_back(v.value);
    if (p.values.size() < 2) continue;
    p.numeric = std::all_of(p.values.begin() + 1, p.values.end(), is_number);
    if (projected) projected->push_back(c.name);
    space.params.push_back(std::move(p));
  }
  return space;
}

Config project(const Config& c, const std::vector<std::string>& projected) {
  if (projected.empty()) return c;
  Config out = c;
  for (const auto& name : projected) out.erase(name);
  return out;
}

}  // namespace syspilot::eval
