// Measuring a scenario's whole space (interleaved rounds, outside-load guard, resumable) and
// the objectives that answer trials: replay from a table, or live runs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <thread>

#include "eval/eval.h"
#include "tuner/measure.h"
#include "tuner/run.h"

namespace syspilot::eval {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

Run run_once(const Scenario& s, const Config& c) { return run_environment(s, environment(s, c)); }

Run run_environment(const Scenario& s, const Environment& env) {
  tuner::RunSpec spec;
  spec.argv = command_line(s);
  spec.env_set = env.set;
  spec.env_unset = env.unset;
  spec.timeout_s = s.timeout_s;
  spec.sample_interval_s = 0;  // no sampler: the wall time is the measurement
  spec.perf = false;
  spec.output_cap = 4096;
  double busy0 = tuner::machine_busy_seconds();
  tuner::RunResult r = tuner::run(spec);
  double busy1 = tuner::machine_busy_seconds();
  Run out;
  out.ok = r.ok();
  out.failure = r.failure;
  if (!r.ok() && out.failure.empty()) out.failure = "exit " + std::to_string(r.exit_code);
  out.wall_s = r.wall_s;
  if (r.wall_s > 0) out.outside_load = std::max(0.0, (busy1 - busy0 - r.user_s - r.sys_s) / r.wall_s);
  return out;
}

Run run_guarded(const Scenario& s, const Environment& env, const MeasureOptions& o, int* discarded) {
  for (int attempt = 0;; ++attempt) {
    Run r = run_environment(s, env);
    if (!r.ok || r.outside_load <= o.max_load || attempt >= o.load_retries) return r;
    if (discarded) ++*discarded;
    std::this_thread::sleep_for(std::chrono::milliseconds(300 * (attempt + 1)));
  }
}

Table measure(const Scenario& s, const std::string& path, const MeasureOptions& o, Diagnostics& diags) {
  Table t;
  if (std::filesystem::exists(path)) {
    Diagnostics d;
    if (!load_table(path, t, d)) {
      diags.append(d);
      return t;
    }
  }
  if (!t.entries.empty() && t.args != s.args) {
    // Samples of another workload would mix into the medians: nothing is measured or written.
    std::string was, now;
    for (const auto& a : t.args) was += (was.empty() ? "" : " ") + a;
    for (const auto& a : s.args) now += (now.empty() ? "" : " ") + a;
    diags.error({path, 0, 0},
                (t.args.empty() ? std::string("the table does not record the arguments it was measured with")
                                : "the table was measured with arguments '" + was + "'") +
                    "; the scenario now runs '" + now + "'",
                "eval-args-changed", "move the table away (or delete it) to measure the new workload from scratch");
    return t;
  }
  t.args = s.args;
  std::vector<std::string> files;
  std::string digest = contracts_digest(corpus_dir(), &files);
  auto machine = describe_machine();
  if (!t.entries.empty() && (t.machine != machine || t.contracts_digest != digest)) {
    diags.warning({path, 0, 0}, "resuming a table measured on another machine, environment or corpus",
                  "eval-resume-mismatch", "delete the table to measure it from scratch");
  }
  t.scenario = s.name;
  t.machine = machine;
  t.contracts_digest = digest;
  t.contracts = files;
  t.repeats = std::max(t.repeats, o.repeats);
  t.max_load = o.max_load;
  for (const auto& c : enumerate(s)) {
    Config n = normalise(s, c);
    if (!t.find(n)) t.entries.push_back(Entry{n, {}, {}, 0, "", 0});
  }
  std::mt19937_64 rng(o.seed);
  for (int round = 0;; ++round) {
    std::vector<size_t> order;
    for (size_t i = 0; i < t.entries.size(); ++i) {
      const Entry& e = t.entries[i];
      if (!e.failed() && static_cast<int>(e.samples.size()) < t.repeats) order.push_back(i);
    }
    if (order.empty()) break;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      Entry& e = t.entries[i];
      Run r = run_guarded(s, environment(s, assignment(s, e.config)), o, &e.discarded);
      if (r.ok) {
        e.samples.push_back(r.wall_s);
        e.outside_load.push_back(r.outside_load);
      } else {
        ++e.failures;
        e.failure = r.failure;
        e.samples.clear();  // a configuration that fails once is recorded as failing
      }
      if (o.progress) {
        std::ostringstream line;
        line << s.name << " round " << round + 1 << "  " << tuner::to_string(e.config) << "  "
             << (r.ok ? std::to_string(r.wall_s) + " s" : "FAILED: " + r.failure) << "  load "
             << std::round(r.outside_load * 100) / 100;
        o.progress(line.str());
      }
    }
    t.measured_at = utc_now();
    save_table(path, t);
  }
  t.measured_at = utc_now();
  save_table(path, t);
  return t;
}

ReplayObjective::ReplayObjective(const Scenario& s, const Table& t, std::uint64_t seed, std::vector<std::string> projected)
    : scenario_(s), table_(t), rng_(seed), projected_(std::move(projected)) {}

tuner::Measurement ReplayObjective::evaluate(const Config& c) { return evaluate_within(c, 0); }

tuner::Measurement ReplayObjective::evaluate_within(const Config& c, double limit_s) {
  tuner::Measurement m;
  m.repeats = 1;
  const Entry* e = table_.find(normalise(scenario_, project(c, projected_)));
  if (!e) {
    m.failure = "not in the measured table (" + tuner::to_string(c) + ")";
    return m;
  }
  const bool capping = limit_s > 0 && (scenario_.timeout_s <= 0 || limit_s < scenario_.timeout_s);
  auto capped = [&] {
    m.capped = true;
    m.lower_bound = m.value = limit_s;
    simulated_s_ += limit_s;
    return m;
  };
  if (e->samples.empty()) {
    // A failed configuration cost its time too: a timeout costs the whole timeout, or the cap
    // that would have stopped it first. (The table does not say how long other failures took.)
    if (capping && e->failure.rfind("timeout", 0) == 0) return capped();
    m.failure = e->failure.empty() ? "failed when measured" : e->failure;
    simulated_s_ += capping ? limit_s : scenario_.timeout_s;
    return m;
  }
  std::uniform_int_distribution<size_t> pick(0, e->samples.size() - 1);
  double v = e->samples[pick(rng_)];
  if (capping && v > limit_s) return capped();
  m.ok = true;
  m.value = v;
  m.samples = {v};
  m.walls = {v};
  simulated_s_ += v;
  return m;
}

tuner::Measurement LiveObjective::evaluate(const Config& c) {
  Run r = run_once(scenario_, c);
  tuner::Measurement m;
  m.repeats = 1;
  m.ok = r.ok;
  m.failure = r.failure;
  if (r.ok) {
    m.value = r.wall_s;
    m.samples = {r.wall_s};
    m.walls = {r.wall_s};  // tune() caps a run longer than its cap (run_once cannot stop it early)
  }
  return m;
}

}  // namespace syspilot::eval
