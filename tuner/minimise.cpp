// Minimising the best configuration with fresh interleaved re-measurements (tuner/minimise.h).
#include "tuner/minimise.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "tuner/measure.h"

namespace syspilot::tuner {

namespace {

// Two pairs of short runs vary by a few percent whatever the search's noise says (tune()'s prior).
constexpr double kNoiseFloor = 0.05;

// Counts the runs a check spends, whatever verify() stops at.
class CountingObjective final : public Objective {
 public:
  explicit CountingObjective(Objective& inner) : inner_(inner) {}
  Measurement evaluate(const Config& c) override {
    ++runs;
    return inner_.evaluate(c);
  }
  int runs = 0;

 private:
  Objective& inner_;
};

Config without(Config c, const std::vector<std::string>& names) {
  for (const auto& n : names) c.erase(n);
  return c;
}

std::string names_text(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : " ") + n;
  return s;
}

}  // namespace

Minimised minimise(Objective& objective, const Space& space, const Config& best, const MinimiseOptions& o) {
  Minimised out;
  out.config = best;
  out.controls = static_cast<int>(best.size());
  const int pairs = std::max(1, o.pairs);
  CountingObjective counted(objective);
  auto is_named = [&](const std::string& n) { return std::find(o.named.begin(), o.named.end(), n) != o.named.end(); };
  auto is_api = [&](const std::string& n) {
    const Param* p = space.find(n);
    return p && p->kind == Param::Kind::Api;
  };

  // Least important first: controls no hypothesis names, API controls before env ones (the
  // shim is one more thing to apply), later controls of the space before earlier ones.
  std::vector<std::string> order;
  for (const auto& [k, v] : best) order.push_back(k);
  auto position = [&](const std::string& n) {
    for (size_t i = 0; i < space.params.size(); ++i)
      if (space.params[i].name == n) return static_cast<int>(i);
    return static_cast<int>(space.params.size());
  };
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    if (is_named(a) != is_named(b)) return !is_named(a);
    if (is_api(a) != is_api(b)) return is_api(a);
    return position(a) > position(b);
  });

  // One check: true when `candidate` keeps the speed of the configuration kept so far.
  auto check = [&](const std::vector<std::string>& drop) -> bool {
    Config candidate = without(out.config, drop);
    if (candidate.empty() || candidate == out.config || !space.admits(candidate, o.machine)) return false;
    if (out.runs + 2 * pairs > o.max_runs) {
      out.capped = true;
      return false;
    }
    const int before = counted.runs;
    // Against the full best, not the configuration kept so far: small losses do not add up.
    Verification v = verify(counted, best, candidate, pairs, false);
    out.runs += counted.runs - before;
    ++out.checks;
    const double tolerance = std::max({o.noise, v.spread, kNoiseFloor});
    const bool keeps = v.ok && v.speedup >= 1 - tolerance;
    if (o.progress) {
      std::ostringstream line;
      line << "minimise: without " << names_text(drop) << ": ";
      if (v.ok)
        line << std::round(v.speedup * 100) / 100 << "x the full best's speed (" << pairs << " pairs, +-"
             << std::lround(v.spread * 100) << "%, tolerance " << std::lround(tolerance * 100) << "%): "
             << (keeps ? "dropped" : "kept");
      else
        line << v.failure << ": kept";
      line << "  (" << out.runs << "/" << o.max_runs << " runs)";
      o.progress(line.str());
    }
    if (keeps) {
      out.config = candidate;
      out.dropped.insert(out.dropped.end(), drop.begin(), drop.end());
    }
    return keeps;
  };

  std::vector<std::string> unnamed;
  for (const auto& n : order)
    if (!is_named(n)) unnamed.push_back(n);
  if (unnamed.size() >= 2 && unnamed.size() < order.size()) check(unnamed);
  // Then the controls still set, least important first, in chunks that halve (delta
  // debugging): a best found by sampling sets every control, most of them to values that make
  // no difference, and one check clears a chunk of them; once no chunk of a size can go, the
  // size halves, down to each control alone. A set already tried is not tried again.
  std::set<std::vector<std::string>> tried;
  auto left = [&] {
    std::vector<std::string> l;
    for (const auto& n : order)
      if (out.config.count(n)) l.push_back(n);
    return l;
  };
  for (size_t chunk = (left().size() + 1) / 2; chunk >= 1 && !out.capped; chunk = chunk == 1 ? 0 : (chunk + 1) / 2) {
    std::vector<std::string> l = left();
    if (chunk >= l.size() && chunk > 1) continue;  // the whole rest is the default: never a candidate
    for (size_t i = 0; i < l.size() && !out.capped; i += chunk) {
      std::vector<std::string> drop(l.begin() + i, l.begin() + std::min(l.size(), i + chunk));
      if (!tried.insert(drop).second) continue;
      check(drop);
    }
  }
  return out;
}

}  // namespace syspilot::tuner
