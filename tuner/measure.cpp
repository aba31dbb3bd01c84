// The measurement driver: the live objective (one fresh process per run), the tune() loop with
// its budget accounting and adaptive repeats, and the interleaved fresh re-measurement.
#include "tuner/measure.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <regex>
#include <sstream>

#include "tuner/rejected.h"
#include "tuner/run.h"
#include "tuner/space.h"

extern char** environ;

namespace syspilot::tuner {

std::map<std::string, std::string> inherited_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

namespace {

std::string tail(const std::string& s, size_t n) { return s.size() > n ? s.substr(s.size() - n) : s; }

// Seconds for messages: three significant digits, whole seconds from 100 on.
std::string seconds_text(double s) {
  std::ostringstream os;
  if (std::fabs(s) >= 100)
    os << std::fixed << std::setprecision(0) << s;
  else
    os << std::setprecision(3) << s;
  return os.str();
}

// The whole text as a number (blanks around it aside): "0.15abc" is no number.
std::optional<double> to_number(const std::string& s) {
  const char* b = s.c_str();
  char* end = nullptr;
  double v = std::strtod(b, &end);
  if (end == b || !std::isfinite(v)) return std::nullopt;
  while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') ++end;
  if (*end != '\0') return std::nullopt;
  return v;
}

// A line longer than this is matched on its first kMaxMetricLine bytes: std::regex recurses
// about once per character it matches, and a 50 KB token overflowed the stack.
constexpr size_t kMaxMetricLine = 4096;

}  // namespace

double relative_spread(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double med = median(v);
  if (med == 0) return 0;
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return (*hi - *lo) / (2 * std::fabs(med));
}

std::optional<double> read_metric(const std::string& output, const std::string& regex) {
  std::regex re(regex, std::regex::ECMAScript);
  for (size_t from = 0; from <= output.size();) {
    size_t nl = output.find('\n', from);
    size_t end = nl == std::string::npos ? output.size() : nl;
    std::string line = output.substr(from, std::min(end - from, kMaxMetricLine));
    std::smatch m;
    if (std::regex_search(line, m, re)) {
      std::string text = m.size() > 1 && m[1].matched ? m[1].str() : m[0].str();
      if (auto v = to_number(text)) return v;  // else a later line may hold the number
    }
    if (nl == std::string::npos) break;
    from = nl + 1;
  }
  return std::nullopt;
}

LiveObjective::LiveObjective(Space space, ObjectiveSpec spec) : space_(std::move(space)), spec_(std::move(spec)) {
  if (spec_.shim.empty()) spec_.shim = shim_path();
  if (!spec_.metric_regex.empty()) std::regex check(spec_.metric_regex);  // throws std::regex_error early
}

Measurement Objective::evaluate_within(const Config& c, double) { return evaluate(c); }

void Objective::plan(const RunPlan&) {}

std::vector<Measurement> Objective::evaluate_batch(const std::vector<BatchRun>& runs) {
  std::vector<Measurement> out;
  for (const auto& r : runs) {
    plan(r.plan);
    out.push_back(evaluate_within(r.config, r.limit_s));
  }
  return out;
}

Measurement LiveObjective::evaluate(const Config& c) { return evaluate_within(c, 0); }

Measurement LiveObjective::evaluate_within(const Config& c, double limit_s) {
  Measurement m;
  m.repeats = 1;
  bool needs_shim = std::any_of(c.begin(), c.end(), [&](const auto& kv) {
    const Param* p = space_.find(kv.first);
    return p && p->kind == Param::Kind::Api;
  });
  if (needs_shim && spec_.shim.empty()) {
    m.failure = "API control needs the preload shim, which is not built (set SYSPILOT_SHIM to libsyspilot_shim.so)";
    return m;
  }
  RunSpec rs;
  rs.argv = spec_.argv;
  // The cap stops the run only where it is tighter than the absolute timeout; where the
  // timeout is tighter, the run that reaches it failed (timeout), as without a cap.
  const bool capping = limit_s > 0 && (spec_.timeout_s <= 0 || limit_s < spec_.timeout_s);
  rs.timeout_s = capping ? limit_s : spec_.timeout_s;
  rs.sample_interval_s = 0;  // no sampling while tuning: it would cost the measured program CPU
  rs.perf = false;
  rs.env_set = spec_.env;
  for (const auto& [k, v] : environment_for(space_, c, spec_.shim, inherited_environment())) rs.env_set[k] = v;
  RunResult r = run(rs);
  last_output_ = tail(r.stderr_text, 2000);
  if (capping && r.timed_out) {
    m.capped = true;
    m.lower_bound = limit_s;
    m.value = limit_s;
    m.failure = "capped at " + seconds_text(limit_s) + " s";
    return m;
  }
  if (!r.ok()) {
    m.failure = r.failure.empty() ? "run failed" : r.failure;
    if (!r.stderr_text.empty()) m.failure += ": " + tail(r.stderr_text, 200);
    while (!m.failure.empty() && (m.failure.back() == '\n' || m.failure.back() == ' ')) m.failure.pop_back();
    return m;
  }
  // A setting the library said it ignored: the run measured its default under another name.
  if (c.empty()) {
    reference_stderr_ = r.stderr_text.substr(0, 64 * 1024);
  } else if (std::string refused = rejected_setting(r.stderr_text, c, reference_stderr_); !refused.empty()) {
    m.failure = "the library rejected a setting: " + refused;
    return m;
  }
  double v = r.wall_s;
  if (!spec_.score_cmd.empty()) {
    // The score command sees the run's output in files and its wall time in the environment.
    char out_path[] = "/tmp/syspilot-score-XXXXXX";
    int fd = mkstemp(out_path);
    if (fd < 0) {
      m.failure = "cannot create a temporary file for --score-cmd";
      return m;
    }
    close(fd);
    {
      std::ofstream(out_path, std::ios::binary) << r.stdout_text;
    }
    RunSpec sc;
    sc.argv = {"/bin/sh", "-c", spec_.score_cmd};
    sc.timeout_s = spec_.timeout_s;
    sc.sample_interval_s = 0;
    sc.perf = false;
    sc.env_set = {{"SYSPILOT_OUTPUT", out_path}, {"SYSPILOT_WALL_S", std::to_string(r.wall_s)}};
    RunResult sr = run(sc);
    std::filesystem::remove(out_path);
    if (!sr.ok()) {
      m.failure = "score command failed (" + sr.failure + ")";
      return m;
    }
    auto s = read_metric(sr.stdout_text, R"(([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?))");
    if (!s) {
      m.failure = "score command printed no number";
      return m;
    }
    v = *s;
  } else if (!spec_.metric_regex.empty()) {
    auto s = read_metric(r.stdout_text + "\n" + r.stderr_text, spec_.metric_regex);
    if (!s) {
      m.failure = "no metric: /" + spec_.metric_regex + "/ matched no number in the output";
      return m;
    }
    v = *s;
  }
  // Runs are compared by ratios (a speedup, the noise as a share): a metric or score must be a
  // positive number of ordinary size (not 0, -5 or 1e-320).
  if ((!spec_.score_cmd.empty() || !spec_.metric_regex.empty()) && !(std::isnormal(v) && v > 0)) {
    std::ostringstream why;
    why << (spec_.score_cmd.empty() ? "the metric" : "the score") << " must be a positive number; read " << v;
    m.failure = why.str();
    return m;
  }
  if (spec_.maximize) v = -v;
  m.ok = true;
  m.value = v;
  m.samples = {v};
  m.walls = {r.wall_s};
  return m;
}

// ---- the adaptive cap -----------------------------------------------------------------------

RunCap run_cap(const std::vector<Trial>& trials, double factor, double slack_s) {
  RunCap cap;
  cap.factor = factor;
  cap.slack_s = slack_s;
  if (factor <= 0) return cap;
  const Trial* inc = nullptr;
  for (size_t i = 0; i < trials.size(); ++i) {
    const Trial& t = trials[i];
    if (t.m.ok && !t.m.capped && (!inc || t.m.value < inc->m.value) && !superseded(trials, i)) inc = &t;
  }
  if (!inc || inc->m.walls.empty()) return cap;
  cap.incumbent = inc->index;
  cap.incumbent_s = median(inc->m.walls);
  cap.limit_s = factor * cap.incumbent_s + std::max(0.0, slack_s);
  return cap;
}

std::string capped_text(const RunCap& cap) {
  return "capped at " + seconds_text(cap.limit_s) + " s (" + seconds_text(cap.factor) + "x the incumbent's " +
         seconds_text(cap.incumbent_s) + " s + " + seconds_text(std::max(0.0, cap.slack_s)) + " s)";
}

bool superseded(const std::vector<Trial>& trials, size_t i) {
  for (size_t j = i + 1; j < trials.size(); ++j)
    if (trials[j].config == trials[i].config) return true;
  return false;
}

std::vector<Trial> standing(const std::vector<Trial>& trials) {
  std::vector<Trial> out;
  for (size_t i = 0; i < trials.size(); ++i)
    if (!superseded(trials, i)) out.push_back(trials[i]);
  return out;
}

// ---- tune() ---------------------------------------------------------------------------------

// One capped run caps the trial: it ran past several times the incumbent's time, so it is not
// the best whatever its other runs did.
void add_run(Measurement& agg, const Measurement& one) {
  agg.repeats += std::max(1, one.repeats);
  if (!one.node.empty() && ("," + agg.node + ",").find("," + one.node + ",") == std::string::npos)
    agg.node += (agg.node.empty() ? "" : ",") + one.node;
  if (one.ok) {
    agg.samples.insert(agg.samples.end(), one.samples.begin(), one.samples.end());
    if (one.samples.empty()) agg.samples.push_back(one.value);
    agg.walls.insert(agg.walls.end(), one.walls.begin(), one.walls.end());
  } else if (one.capped) {
    agg.capped = true;
    agg.lower_bound = std::max(agg.lower_bound, one.lower_bound);
    agg.failure = one.failure;
  } else if (agg.samples.empty() && !agg.capped) {
    agg.failure = one.failure;
  }
  agg.ok = !agg.samples.empty() && !agg.capped;
  if (agg.ok) {
    agg.failure.clear();
    agg.value = median(agg.samples);
    agg.spread = relative_spread(agg.samples);
  } else if (agg.capped) {
    agg.value = agg.lower_bound;
  }
}

namespace {

// A run measured under `cap`: an objective that cannot stop a run early ran it whole, so one
// that took longer than the cap is capped here, charged as if stopped at the cap.
void apply_cap(Measurement& one, const RunCap& cap) {
  if (cap.limit_s <= 0) return;
  if (one.ok && !one.walls.empty() && one.walls.back() > cap.limit_s) {
    one.ok = false;
    one.capped = true;
    one.lower_bound = cap.limit_s;
    one.samples.clear();
    one.walls.clear();
  }
  if (!one.capped) return;
  if (one.lower_bound <= 0) one.lower_bound = cap.limit_s;
  one.value = one.lower_bound;
  one.failure = capped_text(cap);
}

// Noise estimated from every trial measured more than once (median of their spreads).
double pooled_noise(const std::vector<Trial>& trials, double prior) {
  std::vector<double> s;
  for (const auto& t : trials)
    if (t.m.ok && t.m.samples.size() >= 2) s.push_back(t.m.spread);
  if (s.empty()) return prior;
  return std::max(0.01, median(s));
}

int best_of(const std::vector<Trial>& trials) {
  int best = -1;
  for (size_t i = 0; i < trials.size(); ++i) {
    const Trial& t = trials[i];
    if (t.m.ok && (best < 0 || t.m.value < trials[best].m.value) && !superseded(trials, i)) best = t.index;
  }
  return best;
}

double ratio(double reference, double best) {
  if (best == 0 || reference == 0) return 0;
  // Negated (maximised) metrics: the speedup is how much larger the best metric is.
  return reference > 0 ? reference / best : best / reference;
}

}  // namespace

TuneResult tune(Strategy& strategy, Objective& objective, const TuneOptions& o) {
  TuneResult res;
  res.trials = o.resumed;
  res.runs = std::max(0, o.spent);
  for (size_t i = 0; i < res.trials.size(); ++i) {
    res.trials[i].index = static_cast<int>(i);
    res.runs += res.trials[i].m.repeats;
  }
  auto report = [&](const Trial& t) {
    if (o.on_trial) o.on_trial(t);
    if (!o.progress) return;
    int b = best_of(res.trials);
    std::ostringstream line;
    line.precision(4);  // 0.3882, 12.35: the noise is larger than a fifth digit
    line << "trial " << t.index + 1 << "  runs " << res.runs << "/" << o.budget << "  " << to_string(t.config) << "  ";
    if (t.m.ok) {
      // One run has no spread to show: "+-0%" would claim a precision nobody measured.
      // A re-measurement's record holds the configuration's earlier runs too.
      const int runs = std::max<int>(t.m.repeats, static_cast<int>(t.m.samples.size()));
      line << std::fabs(t.m.value) << " (x" << runs;
      if (runs > 1) line << ", +-" << std::lround(t.m.spread * 100) << "%";
      line << ")";
    } else if (t.m.capped) {
      line << t.m.failure;
    } else {
      line << "FAILED: " << t.m.failure;
    }
    if (b >= 0) {
      line << "  best " << std::fabs(res.trials[b].m.value);
      int ref = -1;
      for (const auto& x : res.trials)
        if (x.config.empty() && x.m.ok) ref = x.index;
      if (ref >= 0) line << " (" << std::round(ratio(res.trials[ref].m.value, res.trials[b].m.value) * 100) / 100 << "x)";
    }
    o.progress(line.str());
  };

  // Repeat while the trial is within the noise of the incumbent (or better): only then can
  // another run change which configuration is best. Clearly worse ones stop at once.
  auto worth_repeating = [&](const Trial& t, int b, double noise) {
    if (b < 0) return false;
    double inc = res.trials[b].m.value;
    double band = std::max(noise, t.m.spread) * std::fabs(inc);
    if (t.m.value > inc + band) return false;
    if (t.m.value < inc - 3 * band && t.m.repeats >= 2) return false;  // clearly better and confirmed once
    return true;
  };

  auto measure = [&](Config cfg, const std::string& who, int min_repeats) {
    Trial t;
    t.index = static_cast<int>(res.trials.size());
    t.config = std::move(cfg);
    t.strategy = who;
    t.runs_before = res.runs;
    int b = best_of(res.trials);
    double noise = pooled_noise(res.trials, o.noise);
    for (;;) {
      // The cap follows the incumbent as it improves. The reference's own repeat has no
      // incumbent yet but its first run: that run is its basis.
      RunCap cap = run_cap(res.trials, o.cap_factor, o.cap_slack_s);
      if (cap.incumbent < 0 && t.m.ok) {
        cap = run_cap({t}, o.cap_factor, o.cap_slack_s);
      }
      objective.plan({t.index, t.runs_before, o.budget - res.runs, who});
      Measurement one = objective.evaluate_within(t.config, cap.limit_s);
      apply_cap(one, cap);
      add_run(t.m, one);
      res.runs += std::max(1, one.repeats);
      if (!t.m.ok || res.runs >= o.budget || t.m.repeats >= o.max_repeats) break;
      if (t.m.repeats < min_repeats) continue;
      if (!worth_repeating(t, b, noise)) break;
    }
    res.trials.push_back(t);
    report(res.trials.back());
  };

  // A batch of configurations (TuneOptions::parallel): one run each at once, then again at
  // once for those the repeat rule keeps, as measure() does for one.
  auto measure_batch = [&](const std::vector<Config>& batch, const std::string& who) {
    std::vector<Trial> ts;
    for (const auto& c : batch) {
      Trial t;
      t.index = static_cast<int>(res.trials.size() + ts.size());
      t.config = c;
      t.strategy = who;
      t.runs_before = res.runs + static_cast<int>(ts.size());
      ts.push_back(std::move(t));
    }
    const int b = best_of(res.trials);
    const double noise = pooled_noise(res.trials, o.noise);
    std::vector<size_t> pending(ts.size());
    for (size_t i = 0; i < ts.size(); ++i) pending[i] = i;
    while (!pending.empty() && res.runs < o.budget) {
      const int room = o.budget - res.runs;
      const size_t k = std::min(pending.size(), static_cast<size_t>(std::max(1, room / 2)));
      RunCap cap = run_cap(res.trials, o.cap_factor, o.cap_slack_s);
      std::vector<Objective::BatchRun> runs;
      for (size_t i = 0; i < k; ++i) {
        const Trial& t = ts[pending[i]];
        runs.push_back({t.config, cap.limit_s, {t.index, t.runs_before, room - 2 * static_cast<int>(k - 1), who}});
      }
      std::vector<Measurement> ms = objective.evaluate_batch(runs);
      std::vector<size_t> again;
      for (size_t i = 0; i < k && i < ms.size(); ++i) {
        Trial& t = ts[pending[i]];
        apply_cap(ms[i], cap);
        add_run(t.m, ms[i]);
        res.runs += std::max(1, ms[i].repeats);
        if (t.m.ok && t.m.repeats < o.max_repeats && worth_repeating(t, b, noise)) again.push_back(pending[i]);
      }
      again.insert(again.end(), pending.begin() + static_cast<long>(k), pending.end());
      pending = std::move(again);
    }
    for (auto& t : ts) {
      if (t.m.repeats == 0) continue;  // the budget ran out before its first run
      t.index = static_cast<int>(res.trials.size());
      res.trials.push_back(std::move(t));
      report(res.trials.back());
    }
  };

  // Intensification (as SMAC's): the best is claimed on more than one run. A leader measured
  // once (a probe run of the analysis, a trial whose repeats the budget cut short) is run again
  // once remeasure_after later trials have failed to beat it: one lucky run would otherwise
  // rule the rest of the session, every later trial looking worse than it and run once. Once
  // the strategy has nothing left to propose, the rest of the budget re-measures the leaders
  // within the noise of the incumbent, fewest runs first, up to max_repeats. A re-measurement
  // is a new record of the configuration that holds all its runs and supersedes the older
  // one (superseded()); only its own runs are charged.
  auto remeasure = [&](size_t i) {
    Trial t;
    t.index = static_cast<int>(res.trials.size());
    t.config = res.trials[i].config;
    t.strategy = "re-measure";
    t.runs_before = res.runs;
    t.m = res.trials[i].m;
    t.m.repeats = 0;
    RunCap cap = run_cap(res.trials, o.cap_factor, o.cap_slack_s);
    objective.plan({t.index, t.runs_before, o.budget - res.runs, t.strategy});
    Measurement one = objective.evaluate_within(t.config, cap.limit_s);
    apply_cap(one, cap);
    add_run(t.m, one);
    res.runs += std::max(1, one.repeats);
    res.trials.push_back(std::move(t));
    report(res.trials.back());
  };
  auto single_leader = [&]() -> int {
    int b = best_of(res.trials);
    if (b < 0 || res.runs >= o.budget) return -1;
    const Trial& t = res.trials[b];
    if (t.m.capped || t.m.samples.size() >= static_cast<size_t>(std::min(2, o.max_repeats))) return -1;
    int later = 0;  // trials measured since, none of which beat it
    for (size_t j = static_cast<size_t>(b) + 1; j < res.trials.size(); ++j)
      if (res.trials[j].m.repeats > 0 && res.trials[j].strategy != "re-measure") ++later;
    if (later < o.remeasure_after) return -1;
    return b;
  };
  auto leader_to_remeasure = [&]() -> int {
    int b = best_of(res.trials);
    if (b < 0 || res.runs >= o.budget) return -1;
    const double noise = pooled_noise(res.trials, o.noise);
    const double inc = res.trials[b].m.value;
    int pick = -1;
    for (size_t i = 0; i < res.trials.size(); ++i) {
      const Trial& t = res.trials[i];
      if (!t.m.ok || t.m.capped || superseded(res.trials, i)) continue;
      if (t.m.samples.size() >= static_cast<size_t>(std::max(1, o.max_repeats))) continue;
      if (t.m.value > inc + std::max(noise, t.m.spread) * std::fabs(inc)) continue;
      const Trial* p = pick < 0 ? nullptr : &res.trials[pick];
      if (!p || t.m.samples.size() < p->m.samples.size() ||
          (t.m.samples.size() == p->m.samples.size() && t.m.value < p->m.value))
        pick = static_cast<int>(i);
    }
    return pick;
  };
  auto spend_on_leaders = [&]() {
    for (int l = leader_to_remeasure(); l >= 0; l = leader_to_remeasure()) remeasure(static_cast<size_t>(l));
  };
  // The newest record of a configuration (a stored answer copies it).
  auto newest = [](std::vector<Trial>& ts, const Config& c) {
    auto it = std::find_if(ts.rbegin(), ts.rend(), [&](const Trial& t) { return t.config == c; });
    return it == ts.rend() ? ts.end() : std::prev(it.base());
  };

  bool have_reference = std::any_of(res.trials.begin(), res.trials.end(), [](const Trial& t) { return t.config.empty(); });
  if (!have_reference && res.runs < o.budget) measure({}, "reference", std::min(2, o.max_repeats));

  res.stop_reason = "budget";
  int duplicates = 0;
  // A strategy proposing a measured configuration gets the stored answer at no cost; a strategy
  // that keeps doing so has exhausted what it can propose. False then.
  auto stored_answer = [&](const Trial& seen) {
    if (++duplicates > 50) return false;
    Trial t = seen;
    t.index = static_cast<int>(res.trials.size());
    t.strategy = strategy.name();
    t.runs_before = res.runs;
    t.m.repeats = 0;
    res.trials.push_back(t);
    return true;
  };
  while (o.parallel > 1 && res.runs < o.budget) {
    if (int l = single_leader(); l >= 0) {
      remeasure(static_cast<size_t>(l));
      continue;
    }
    // The constant liar: each configuration in the batch joins the history as a provisional
    // trial with the incumbent's measurement (a failed one before any success).
    const int room = o.budget - res.runs;
    const size_t k = static_cast<size_t>(std::min(o.parallel, std::max(1, room / 2)));
    const int b = best_of(res.trials);
    std::vector<Trial> told = res.trials;
    std::vector<Config> batch;
    bool finished = false;
    while (batch.size() < k) {
      std::optional<Config> next = strategy.next(told);
      if (!next) {
        finished = true;
        break;
      }
      auto seen = newest(told, *next);
      if (seen != told.end()) {
        if (!batch.empty()) break;  // measured or in flight: send what the batch has
        if (!stored_answer(*seen)) {
          finished = true;
          break;
        }
        told = res.trials;
        continue;
      }
      duplicates = 0;
      batch.push_back(*next);
      Trial lie;
      lie.index = static_cast<int>(told.size());
      lie.config = *next;
      lie.strategy = strategy.name();
      lie.runs_before = res.runs;
      if (b >= 0) {
        lie.m = res.trials[b].m;
      } else {
        lie.m.repeats = 1;
        lie.m.failure = "in flight";
      }
      told.push_back(std::move(lie));
    }
    if (!batch.empty()) measure_batch(batch, strategy.name());
    if (finished) {
      spend_on_leaders();
      res.stop_reason = "strategy finished";
      break;
    }
  }
  while (o.parallel <= 1 && res.runs < o.budget) {
    if (int l = single_leader(); l >= 0) {
      remeasure(static_cast<size_t>(l));
      continue;
    }
    std::optional<Config> next = strategy.next(res.trials);
    if (!next) {
      spend_on_leaders();
      res.stop_reason = "strategy finished";
      break;
    }
    auto seen = newest(res.trials, *next);
    if (seen != res.trials.end()) {
      if (!stored_answer(*seen)) {
        spend_on_leaders();
        res.stop_reason = "strategy finished";
        break;
      }
      continue;
    }
    duplicates = 0;
    measure(*next, strategy.name(), 1);
  }
  objective.plan({});
  res.best = best_of(res.trials);
  for (const auto& t : res.trials) {
    if (t.config.empty() && t.m.ok && res.reference < 0) res.reference = t.index;
    if (t.m.capped && t.m.repeats > 0) ++res.capped;  // a stored answer re-proposed costs nothing
  }
  res.noise = pooled_noise(res.trials, o.noise);
  if (res.best >= 0 && res.reference >= 0) {
    const auto& r = res.trials[res.reference].m;
    const auto& b = res.trials[res.best].m;
    res.speedup = ratio(r.value, b.value);
    double rs = r.samples.size() > 1 ? r.spread : res.noise;
    double bs = b.samples.size() > 1 ? b.spread : res.noise;
    res.speedup_spread = rs + bs;
  }
  return res;
}

// ---- verify() -------------------------------------------------------------------------------

Verification verify(Objective& objective, const Config& reference, const Config& candidate, int pairs, bool warm_up) {
  Verification v;
  if (warm_up) {
    objective.evaluate(reference);
    objective.evaluate(candidate);
  }
  std::vector<double> ratios;
  for (int i = 0; i < pairs; ++i) {
    Measurement r = objective.evaluate(reference);
    Measurement c = objective.evaluate(candidate);
    if (!r.ok || !c.ok) {
      v.failure = !r.ok ? "reference failed: " + r.failure : "candidate failed: " + c.failure;
      return v;
    }
    v.reference.push_back(r.value);
    v.candidate.push_back(c.value);
    ratios.push_back(ratio(r.value, c.value));
  }
  v.ok = !ratios.empty();
  // The median of per-pair ratios: each pair ran back to back, so a change of outside load
  // between pairs cancels out.
  v.speedup = median(ratios);
  v.spread = relative_spread(ratios);
  return v;
}

}  // namespace syspilot::tuner
