// The contract-guided strategy: first the configurations the confirmed hypotheses' constraints
// and remedies suggest (splits of the machine's cores that the constraints allow, remedies, and
// each with the controls that fall back on what it changes held where they were), then the
// joint values of each hypothesis' own controls, then refinement around the incumbent, then
// model-based search near the incumbent until the budget is spent or the space exhausted.
// Without a guide it samples the space (uniform draws and an additive model of what was
// measured) instead of crawling it; where the analysis derived hypotheses and confirmed none, it
// first screens the controls of the libraries no hypothesis involved.
// Also make_strategy(), the one place that maps strategy names to implementations.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "tuner/consistency.h"
#include "tuner/search.h"

namespace syspilot::tuner {

std::unique_ptr<Strategy> make_random_strategy(const Space& space, const StrategyContext& ctx);
std::unique_ptr<Strategy> make_grid_strategy(const Space& space, const StrategyContext& ctx);
std::unique_ptr<Strategy> make_optuna_strategy(const std::string& sampler, const Space& space,
                                               const StrategyContext& ctx);

namespace {

std::optional<double> as_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end) return std::nullopt;
  return v;
}

// Splits "L <= R" at its top-level relational operator; the sign says which side must be
// larger (+1: R - L >= 0 is the slack, -1: L - R). Empty when the text is not a comparison.
struct Comparison {
  std::string lhs, rhs;
  int sign = 0;
};
Comparison split_comparison(const std::string& t) {
  int depth = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth != 0 || (c != '<' && c != '>')) continue;
    size_t len = (i + 1 < t.size() && t[i + 1] == '=') ? 2 : 1;
    return {t.substr(0, i), t.substr(i + len), c == '<' ? +1 : -1};
  }
  return {};
}

std::map<std::string, double> numeric_names(const Space& space, const Config& c, const MachineFacts& m) {
  std::map<std::string, double> names = m.names();
  for (const auto& p : space.params)
    if (auto v = as_number(space.value(c, p.name))) names[p.name] = *v;
  return names;
}

// Every assignment of the parameters' values, the last parameter fastest (callers bound the
// count).
std::vector<Config> cross_product(const std::vector<const Param*>& ps) {
  std::vector<Config> out{Config{}};
  for (const Param* p : ps) {
    std::vector<Config> next;
    next.reserve(out.size() * p->values.size());
    for (const auto& base : out)
      for (const auto& v : p->values) {
        Config c = base;
        c[p->name] = v;
        next.push_back(std::move(c));
      }
    out = std::move(next);
  }
  return out;
}

class GuidedSearch : public Strategy {
 public:
  GuidedSearch(const Space& space, const StrategyContext& ctx) : space_(space), ctx_(ctx), rng_(ctx.seed) {
    std::stable_sort(ctx_.guides.begin(), ctx_.guides.end(),
                     [](const Guide& a, const Guide& b) { return a.weight > b.weight; });
    build_seeds();
    guided_ = !seeds_.empty();
  }
  std::string name() const override { return "syspilot"; }

  std::optional<Config> next(const std::vector<Trial>& all) override {
    const std::vector<Trial> history = standing(all);  // a re-measured configuration once
    std::set<Config> seen;
    for (const auto& t : history) seen.insert(canonical(t.config));
    seen.insert(Config{});
    // 1. What the hypotheses suggest, best predicted first.
    for (const auto& s : seeds_)
      if (!seen.count(s)) return s;
    const Trial* inc = incumbent(history);
    double noise = noise_of(history);
    // 2. Remedies that each helped may help together: the union of two of the three best
    // measured configurations that set different controls, best pair first.
    if (guided_)
      if (auto u = union_of_best(history, seen)) return u;
    // 3. Each hypothesis' own controls together, the rest at their defaults: the controls of one
    // cause interact (a spin count matters under one wait policy and not the other; an inner
    // team's best size depends on the outer one), and the best value may lie between the default
    // and the remedy. Strongest hypothesis first, best predicted first.
    if (guided_)
      if (auto c = joint_pick(history, seen)) return c;
    ++step_;
    if (guided_) {
      // 4. The guides held: refine around the incumbent one control at a time (the guides'
      // controls first), every other step a draw from the model of what was measured so that
      // an interaction between two controls is not missed. Converged when no neighbour is
      // left that could beat the incumbent beyond the noise.
      std::optional<Config> local = inc ? refinement(*inc, history, seen, noise) : std::nullopt;
      if (local) {
        if (step_ % 2 == 0)
          if (auto m = model_pick(history, seen)) return m;
        return local;
      }
      // 5. Refinement found nothing left near the incumbent: the budget is still worth
      // spending. Model-based over the whole space with the contracts as the prior: moves of
      // one or two controls from the incumbent, the guides' controls first, every fourth a
      // draw from the model over everything; finished only when the space is exhausted.
      ++continued_;
      if (continued_ % 4 != 0 && inc)
        if (auto c = near_pick(*inc, history, seen)) return c;
      if (auto m = model_pick(history, seen)) return m;
      return uniform_pick(seen);
    }
    // 6. No guide, though the analysis derived hypotheses: it confirmed none, so what makes the
    // default slow (if anything) lies outside what the contracts describe. The controls of the
    // libraries no hypothesis involved (the application's own pool, a program without a
    // contract, the user's additions) are screened first, one value at a time from the
    // incumbent.
    if (!ctx_.hypothesised.empty() && inc)
      if (auto c = unexplained_move(*inc, history, seen)) return c;
    // 7. No guide: sample the space. Of every three proposals one is a uniform draw (what
    // random search does), one a neighbour of the incumbent (to settle the last few percent)
    // and one the best candidate of an additive model of the measured trials.
    if (step_ % 3 == 1)
      if (auto r = uniform_pick(seen)) return r;
    if (step_ % 3 == 0 && inc)
      if (auto l = refinement(*inc, history, seen, noise)) return l;
    if (auto m = model_pick(history, seen)) return m;
    return uniform_pick(seen);
  }

  const std::vector<Config>& seeds() const { return seeds_; }

 private:
  // Joint values of one guide's controls, at most this many (a larger product is left to the
  // refinement and the model, which move one or two controls at a time).
  static constexpr std::uint64_t kMaxJoint = 32;

  // The unmeasured admissible configuration, over the first guide (strongest first) that has
  // one left, that sets only that guide's controls and that the additive model of the trials
  // predicts fastest (a value never measured is credited with its control's best effect, so
  // each value is tried before the model settles; ties broken by the seed).
  std::optional<Config> joint_pick(const std::vector<Trial>& history, const std::set<Config>& seen) {
    auto effect = additive_model(history);
    std::uniform_real_distribution<double> jitter(0, std::max(0.01, noise_of(history)));
    for (const auto& g : ctx_.guides) {
      std::vector<const Param*> ctl;
      std::uint64_t total = 1;
      for (const auto& n : g.controls)
        if (const Param* p = space_.find(n); p && !p->values.empty() && std::find(ctl.begin(), ctl.end(), p) == ctl.end()) {
          ctl.push_back(p);
          total *= p->values.size();
          if (total > kMaxJoint) break;
        }
      if (ctl.empty() || total > kMaxJoint) continue;
      std::optional<Config> pick;
      double best = 0;
      for (Config c : cross_product(ctl)) {
        c = canonical(c);
        if (c.empty() || seen.count(c) || !admissible(c)) continue;
        double pred = jitter(rng_);
        for (const auto& p : space_.params) pred += effect(p.name, space_.value(c, p.name));
        if (!pick || pred < best) pick = c, best = pred;
      }
      if (pick) return pick;
    }
    return std::nullopt;
  }

  // The union of two of the three best measured configurations (other than the default)
  // that set disjoint controls, unmeasured and admissible; pairs ranked by the sum of their
  // values (times, or negated metrics when maximising). Each remedy removes one cause: where
  // two causes add up, so do the remedies.
  std::optional<Config> union_of_best(const std::vector<Trial>& history, const std::set<Config>& seen) const {
    // Only what helped: faster than the reference (the default) beyond the noise.
    const Trial* reference = nullptr;
    for (const auto& t : history)
      if (t.m.ok && canonical(t.config).empty()) reference = &t;
    double noise = noise_of(history);
    std::vector<const Trial*> best;
    for (const auto& t : history)
      if (t.m.ok && !canonical(t.config).empty() &&
          (!reference || t.m.value < reference->m.value * (1 - noise)) &&
          std::none_of(best.begin(), best.end(), [&](const Trial* b) { return canonical(b->config) == canonical(t.config); }))
        best.push_back(&t);
    std::sort(best.begin(), best.end(), [](const Trial* a, const Trial* b) { return a->m.value < b->m.value; });
    if (best.size() > 3) best.resize(3);
    std::optional<Config> pick;
    double score = 0;
    for (size_t i = 0; i < best.size(); ++i)
      for (size_t j = i + 1; j < best.size(); ++j) {
        Config a = canonical(best[i]->config), b = canonical(best[j]->config), u = a;
        bool disjoint = true;
        for (const auto& [k, v] : b) disjoint = disjoint && u.emplace(k, v).second;
        u = canonical(u);
        if (!disjoint || seen.count(u) || !admissible(u)) continue;
        double sc = best[i]->m.value + best[j]->m.value;
        if (!pick || sc < score) pick = u, score = sc;
      }
    return pick;
  }

  std::optional<Config> refinement(const Trial& inc, const std::vector<Trial>& history, const std::set<Config>& seen,
                                   double noise) const {
    for (const auto& c : neighbours(canonical(inc.config))) {
      if (seen.count(c)) continue;
      if (predicted_worse(c, inc, history, noise)) continue;
      return c;
    }
    return std::nullopt;
  }

  // Candidates for sampling: the whole admissible cross product when it is small, else a
  // seeded sample of it. Controls always carry an explicit value, as in random search.
  std::vector<Config> candidates(const std::set<Config>& seen) {
    std::vector<Config> out;
    if (space_.params.empty()) return out;
    std::uint64_t total = space_.size();
    auto keep = [&](Config c) {
      c = canonical(c);
      if (!c.empty() && !seen.count(c) && admissible(c)) out.push_back(std::move(c));
    };
    if (total <= 4096) {
      std::vector<const Param*> all;
      for (const auto& p : space_.params) all.push_back(&p);
      for (auto& c : cross_product(all)) keep(std::move(c));
    } else {
      for (int n = 0; n < 512; ++n) {
        Config c;
        for (const auto& p : space_.params) {
          std::uniform_int_distribution<size_t> pick(0, p.values.size() - 1);
          c[p.name] = p.values[pick(rng_)];
        }
        keep(std::move(c));
      }
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
    }
    return out;
  }

  std::optional<Config> uniform_pick(const std::set<Config>& seen) {
    auto cand = candidates(seen);
    if (cand.empty()) return std::nullopt;
    std::uniform_int_distribution<size_t> pick(0, cand.size() - 1);
    return cand[pick(rng_)];
  }

  // An additive model of log run time over the controls' values, from the measured trials:
  // the effect of a value is the mean log time of the trials that had it, relative to the
  // mean of all. A value never measured is credited with its control's best effect, so the
  // model explores every value of every control at once instead of one control at a time;
  // failed trials count as twice the slowest success. The candidate with the lowest
  // predicted time wins, ties (and near-ties within the noise) broken by the seed.
  // The additive model itself: control, value -> predicted effect on log time.
  std::function<double(const std::string&, const std::string&)> additive_model(const std::vector<Trial>& history) const {
    std::vector<std::pair<const Trial*, double>> obs;
    double worst = 0;
    for (const auto& t : history)
      if (t.m.ok && t.m.value > 0) worst = std::max(worst, std::log(t.m.value));
    for (const auto& t : history) {
      if (t.m.ok && t.m.value > 0) obs.push_back({&t, std::log(t.m.value)});
      else if (!t.m.ok && t.m.repeats > 0 && worst > 0) obs.push_back({&t, worst + std::log(2.0)});
    }
    double mean = 0;
    for (const auto& o : obs) mean += o.second;
    if (!obs.empty()) mean /= obs.size();
    auto sums = std::make_shared<std::map<std::string, std::map<std::string, std::pair<double, int>>>>();
    for (const auto& o : obs)
      for (const auto& p : space_.params) {
        auto& cell = (*sums)[p.name][space_.value(o.first->config, p.name)];
        cell.first += o.second - mean;
        ++cell.second;
      }
    return [sums](const std::string& control, const std::string& value) {
      const auto& per = (*sums)[control];
      auto it = per.find(value);
      if (it != per.end()) return it->second.first / it->second.second;
      double best = 0;
      for (const auto& [v, cell] : per) best = std::min(best, cell.first / cell.second);
      return best;
    };
  }

  std::optional<Config> model_pick(const std::vector<Trial>& history, const std::set<Config>& seen) {
    int observed = 0;
    for (const auto& t : history)
      if ((t.m.ok && t.m.value > 0) || (!t.m.ok && t.m.repeats > 0)) ++observed;
    if (observed < 2) return uniform_pick(seen);
    auto effect = additive_model(history);
    auto cand = candidates(seen);
    if (cand.empty()) return std::nullopt;
    double noise = std::max(0.01, noise_of(history));
    std::uniform_real_distribution<double> jitter(0, noise);
    const Config* pick = nullptr;
    double best = 0;
    // Guided, a jump is taken only where the model says it pays: each control changed from the
    // incumbent beyond two costs the noise, so few controls change at a time unless the
    // measured effects outweigh that.
    const Trial* from = guided_ ? incumbent(history) : nullptr;
    for (const auto& c : cand) {
      double pred = jitter(rng_);
      for (const auto& p : space_.params) pred += effect(p.name, space_.value(c, p.name));
      if (from) {
        int moves = 0;
        for (const auto& p : space_.params) moves += space_.value(c, p.name) != space_.value(from->config, p.name);
        pred += noise * std::max(0, moves - 2);
      }
      if (!pick || pred < best) pick = &c, best = pred;
    }
    return *pick;
  }

  // The unmeasured move of one control of a library no hypothesis involved, from the
  // incumbent, that the additive model predicts fastest (a value never measured is credited
  // with its control's best effect; ties broken by the seed). None once each such value has
  // been measured from the incumbent.
  std::optional<Config> unexplained_move(const Trial& inc, const std::vector<Trial>& history,
                                         const std::set<Config>& seen) {
    Config base = canonical(inc.config);
    auto model = additive_model(history);
    std::uniform_real_distribution<double> jitter(0, std::max(0.01, noise_of(history)));
    std::optional<Config> pick;
    double best = 0;
    for (const auto& p : space_.params) {
      if (ctx_.hypothesised.count(p.library)) continue;
      for (const auto& v : p.values) {
        if (v == space_.value(base, p.name)) continue;
        Config c = base;
        c[p.name] = v;
        c = canonical(c);
        if (c.empty() || seen.count(c) || !admissible(c)) continue;
        double pred = jitter(rng_);
        for (const auto& q : space_.params) pred += model(q.name, space_.value(c, q.name));
        if (!pick || pred < best) pick = c, best = pred;
      }
    }
    return pick;
  }

  // The unmeasured configuration at most two controls away from the incumbent that the
  // additive model predicts fastest. A change of a control no guide names costs a penalty of
  // the noise (the contracts say the effect is elsewhere), so such moves come only once the
  // guides' controls are spent; a change of two controls costs the same again.
  std::optional<Config> near_pick(const Trial& inc, const std::vector<Trial>& history, const std::set<Config>& seen) {
    Config base = canonical(inc.config);
    std::set<std::string> named;
    for (const auto& g : ctx_.guides) named.insert(g.controls.begin(), g.controls.end());
    auto model = additive_model(history);
    double noise = std::max(0.01, noise_of(history));
    std::optional<Config> pick;
    double best = 0;
    auto consider = [&](Config c, int moves, int unnamed) {
      c = canonical(c);
      if (c.empty() || seen.count(c) || !admissible(c)) return;
      double pred = noise * (moves - 1 + 2 * unnamed);
      for (const auto& p : space_.params) pred += model(p.name, space_.value(c, p.name));
      if (!pick || pred < best - 1e-12) pick = c, best = pred;
    };
    const auto& ps = space_.params;
    for (size_t i = 0; i < ps.size(); ++i)
      for (const auto& v : ps[i].values) {
        if (v == space_.value(base, ps[i].name)) continue;
        Config one = base;
        one[ps[i].name] = v;
        int un_i = named.count(ps[i].name) ? 0 : 1;
        consider(one, 1, un_i);
        for (size_t j = i + 1; j < ps.size(); ++j)
          for (const auto& w : ps[j].values) {
            if (w == space_.value(base, ps[j].name)) continue;
            Config two = one;
            two[ps[j].name] = w;
            consider(two, 2, un_i + (named.count(ps[j].name) ? 0 : 1));
          }
      }
    return pick;
  }

  // Drops assignments equal to the control's default: {A=2} with default 2 is the default,
  // unless the configuration also sets a control that A falls back on (then unset A would
  // take that control's value, not its default).
  Config canonical(const Config& c) const {
    Config out;
    for (const auto& [k, v] : c) {
      const Param* p = space_.find(k);
      // "" in a domain means "not set": the default, unless the user's own setting is the default.
      if (v.empty() && (!p || p->default_value.empty())) continue;
      if (p && !p->default_value.empty() && p->default_value == v && !falls_back_within(*p, c)) continue;
      out[k] = v;
    }
    return out;
  }

  // Whether `c` sets (to a value) a control that `p` falls back on.
  static bool falls_back_within(const Param& p, const Config& c) {
    for (const auto& [k, v] : c)
      if (k != p.name && !v.empty() && falls_back(p, k)) return true;
    return false;
  }
  static bool falls_back(const Param& p, const std::string& other) {
    return std::find(p.falls_back_on.begin(), p.falls_back_on.end(), other) != p.falls_back_on.end() ||
           mentions(p.default_expr, other);
  }

  bool admissible(const Config& c) const { return space_.admits(c, ctx_.machine); }

  static const Trial* incumbent(const std::vector<Trial>& h) {
    const Trial* best = nullptr;
    for (const auto& t : h)
      if (t.m.ok && (!best || t.m.value < best->m.value)) best = &t;
    return best;
  }

  double noise_of(const std::vector<Trial>& h) const {
    std::vector<double> s;
    for (const auto& t : h)
      if (t.m.ok && t.m.samples.size() >= 2) s.push_back(t.m.spread);
    if (s.empty()) return ctx_.noise;
    return std::max(0.01, median(s));
  }

  // Controls the guides name come first in refinement: they are where the hypotheses say the
  // effect is; the rest of the space follows.
  std::vector<const Param*> ordered_params() const {
    std::vector<const Param*> out;
    for (const auto& g : ctx_.guides)
      for (const auto& n : g.controls)
        if (const Param* p = space_.find(n); p && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
    for (const auto& p : space_.params)
      if (std::find(out.begin(), out.end(), &p) == out.end()) out.push_back(&p);
    return out;
  }

  // Position of the control's current value in its domain; for a value outside the domain
  // (a default not listed), the nearest listed number.
  static int position(const Param& p, const std::string& value) {
    auto it = std::find(p.values.begin(), p.values.end(), value);
    if (it != p.values.end()) return static_cast<int>(it - p.values.begin());
    auto v = as_number(value);
    if (!p.numeric || !v) return -1;
    int best = -1;
    double d = 0;
    for (size_t i = 0; i < p.values.size(); ++i) {
      auto x = as_number(p.values[i]);
      if (!x) continue;
      double e = std::fabs(*x - *v);
      if (best < 0 || e < d) best = static_cast<int>(i), d = e;
    }
    return best;
  }

  std::vector<Config> neighbours(const Config& base) const {
    std::vector<Config> out;
    for (const Param* p : ordered_params()) {
      std::string cur = space_.value(base, p->name);
      int pos = position(*p, cur);
      std::vector<std::string> vals;
      if (p->numeric && pos >= 0) {
        // Adjacent domain values; when the current value lies outside the domain, its nearest too.
        if (p->values[pos] != cur) vals.push_back(p->values[pos]);
        if (pos > 0) vals.push_back(p->values[pos - 1]);
        if (pos + 1 < static_cast<int>(p->values.size())) vals.push_back(p->values[pos + 1]);
      } else {
        for (const auto& v : p->values)
          if (v != cur) vals.push_back(v);
      }
      for (const auto& v : vals) {
        Config c = base;
        c[p->name] = v;
        c = canonical(c);
        if (admissible(c) && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
      }
    }
    return out;
  }

  // A neighbour moving one control from the incumbent toward a value that a measured trial
  // (same otherwise, further along the same direction) showed worse beyond the noise is
  // predicted to lose too: effects of thread counts and sizes are monotone over such short steps.
  bool predicted_worse(const Config& c, const Trial& inc, const std::vector<Trial>& h, double noise) const {
    Config base = canonical(inc.config);
    std::string moved;
    for (const auto& p : space_.params)
      if (space_.value(c, p.name) != space_.value(base, p.name)) moved = p.name;
    const Param* p = space_.find(moved);
    if (!p || !p->numeric) return false;
    auto from = as_number(space_.value(base, moved));
    auto to = as_number(space_.value(c, moved));
    if (!from || !to) return false;
    for (const auto& t : h) {
      if (!t.m.ok && t.m.repeats == 0) continue;
      Config tc = canonical(t.config);
      bool same_elsewhere = true;
      for (const auto& q : space_.params)
        if (q.name != moved && space_.value(tc, q.name) != space_.value(base, q.name)) same_elsewhere = false;
      if (!same_elsewhere) continue;
      auto tv = as_number(space_.value(tc, moved));
      if (!tv) continue;
      bool beyond = (*to > *from && *tv > *to) || (*to < *from && *tv < *to);
      bool worse = !t.m.ok || t.m.value > inc.m.value + 2 * noise * std::fabs(inc.m.value);
      if (beyond && worse) return true;
    }
    return false;
  }

  // Splits of the machine between the two controls a guide's constraint relates: each value of
  // one on the ladder 1, 2, 4, ..., 2 x ncpus (and ncpus) with the largest value of the other
  // that keeps the constraint. A * B <= ncores on 16 cores gives 16x1, 8x2, 4x4, 2x8, 1x16;
  // A + B <= ncores gives 15+1, 14+2, 12+4, 8+8. Ranked: splits that use every core first, then
  // larger values of the control the guide lists first (coarser parallelism outside).
  std::vector<Config> constraint_splits(const Guide& g, const std::vector<const Param*>& ctl) const {
    std::vector<Config> out;
    if (ctl.size() != 2) return out;
    int n = std::max(1, ctx_.machine.ncpus);
    std::vector<int> ladder;
    for (int v = 1; v <= 2 * n; v *= 2) ladder.push_back(v);
    ladder.push_back(n);
    std::sort(ladder.begin(), ladder.end());
    ladder.erase(std::unique(ladder.begin(), ladder.end()), ladder.end());
    auto holds = [&](const Config& c) {
      auto names = numeric_names(space_, c, ctx_.machine);
      auto v = evaluate_expr(g.constraint, names);
      return v && *v != 0;
    };
    struct Split {
      Config c;
      double used;
      int first;
    };
    std::vector<Split> splits;
    for (int fixed = 0; fixed < 2; ++fixed) {
      const Param* a = ctl[fixed];
      const Param* b = ctl[1 - fixed];
      for (int av : ladder) {
        int best = 0;
        for (int bv = 2 * n; bv >= 1 && !best; --bv) {
          Config c{{a->name, std::to_string(av)}, {b->name, std::to_string(bv)}};
          if (holds(c)) best = bv;
        }
        if (!best) continue;
        Config c{{a->name, std::to_string(av)}, {b->name, std::to_string(best)}};
        int first = std::stoi(c.at(ctl[0]->name));
        int second = std::stoi(c.at(ctl[1]->name));
        double used = std::min(1.0, double(first) * second / n);  // product splits
        if (g.constraint.find('+') != std::string::npos) used = std::min(1.0, double(first + second) / n);
        splits.push_back({c, used, first});
      }
    }
    std::stable_sort(splits.begin(), splits.end(), [](const Split& x, const Split& y) {
      if (std::fabs(x.used - y.used) > 1e-9) return x.used > y.used;
      return x.first > y.first;
    });
    for (auto& sp : splits) {
      Config c = canonical(sp.c);
      if (c.empty() || !admissible(c) || std::find(out.begin(), out.end(), c) != out.end()) continue;
      out.push_back(c);
    }
    return out;
  }

  // The controls whose default falls back on a control `c` changes (OpenBLAS's thread count
  // on OMP_NUM_THREADS) change with it. The variant that holds each such control at the value
  // it had before the change tells the two effects apart: `OMP_NUM_THREADS=1` alone also makes
  // BLAS single-threaded; with OPENBLAS_NUM_THREADS held, only the outer team changes.
  std::optional<Config> held_partners(const Config& c) const {
    Config out = c;
    bool any = false;
    std::map<std::string, double> before = ctx_.machine.names();
    std::map<std::string, double> after = before;
    for (const auto& [k, v] : c)
      if (auto x = as_number(v)) after[k] = *x;
    for (const auto& p : space_.params) {
      if (c.count(p.name) || !falls_back_within(p, c)) continue;
      // Its value before the change: its stated default (the controls it falls back on are
      // unset in the default configuration).
      std::optional<double> was = as_number(p.default_value);
      if (!was && !p.default_expr.empty()) was = evaluate_expr(p.default_expr, before);
      if (!was) continue;
      if (!p.falls_back_on.empty() || p.default_expr.empty()) {
        // A fallback chain: unset, it now takes the first value set along the chain.
        std::optional<double> now;
        for (const auto& k : p.falls_back_on)
          if (auto it = c.find(k); it != c.end() && !it->second.empty()) {
            now = as_number(it->second);
            break;
          }
        if (now && std::fabs(*now - *was) < 1e-9) continue;
      } else if (auto now = evaluate_expr(p.default_expr, after); now && std::fabs(*now - *was) < 1e-9) {
        continue;
      }
      out[p.name] = format_count(*was);
      any = true;
    }
    if (!any) return std::nullopt;
    out = canonical(out);
    if (!admissible(out)) return std::nullopt;
    return out;
  }

  static bool mentions(const std::string& expr, const std::string& name) {
    for (size_t p = expr.find(name); p != std::string::npos; p = expr.find(name, p + 1)) {
      auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
      bool left = p == 0 || !word(expr[p - 1]);
      bool right = p + name.size() >= expr.size() || !word(expr[p + name.size()]);
      if (left && right) return true;
    }
    return false;
  }

  static std::string format_count(double v) {
    if (std::fabs(v - std::round(v)) < 1e-9) return std::to_string(static_cast<long long>(std::llround(v)));
    std::ostringstream o;
    o << v;
    return o.str();
  }

  // Seeds from one guide's constraint: assignments of its numeric controls that satisfy every
  // constraint, ranked by slack of the guide's own constraint (a constraint met exactly uses
  // the resource fully: for A * B <= ncores the factorisations of ncores come first), then by
  // larger values of the controls the guide lists first (coarser parallelism outside).
  std::vector<Config> constraint_seeds(const Guide& g) const {
    std::vector<Config> out;
    Comparison cmp = split_comparison(g.constraint);
    if (g.constraint.empty()) return out;
    std::vector<const Param*> ctl;
    for (const auto& n : g.controls)
      if (const Param* p = space_.find(n); p && p->numeric && g.constraint.find(n) != std::string::npos) ctl.push_back(p);
    if (ctl.empty() || ctl.size() > 4) return out;
    if (ctl.size() == 2) {
      out = constraint_splits(g, ctl);
      if (out.size() > 3) out.resize(3);
      if (!out.empty()) return out;
    }
    std::uint64_t total = 1;
    for (const Param* p : ctl) total *= p->values.size();
    if (total > 20000) return out;
    struct Ranked {
      Config c;
      double slack;
      std::vector<double> key;
    };
    std::vector<Ranked> ranked;
    for (Config c : cross_product(ctl)) {
      std::vector<double> key;
      for (const Param* p : ctl) key.push_back(as_number(c.at(p->name)).value_or(0));
      c = canonical(c);
      if (c.empty() || !admissible(c)) continue;
      double slack = 0;
      if (cmp.sign != 0) {
        auto names = numeric_names(space_, c, ctx_.machine);
        auto l = evaluate_expr(cmp.lhs, names), r = evaluate_expr(cmp.rhs, names);
        // A side that cannot be evaluated (a control left unset whose default the contract
        // does not state) says nothing about the fit: such candidates come after the rest.
        slack = l && r ? cmp.sign * (*r - *l) / std::max(1.0, std::fabs(*r)) : std::numeric_limits<double>::infinity();
        if (slack < -1e-9) continue;  // breaks the guide's own constraint (the space may not state it)
      }
      ranked.push_back({c, slack, key});
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
      if (std::fabs(a.slack - b.slack) > 1e-9) return a.slack < b.slack;
      return a.key > b.key;
    });
    for (size_t i = 0; i < ranked.size() && out.size() < 3; ++i) out.push_back(ranked[i].c);
    return out;
  }

  void build_seeds() {
    std::vector<std::vector<Config>> per_guide;
    for (const auto& g : ctx_.guides) {
      std::vector<Config> mine;
      auto add = [&](Config c) {
        // Keep only controls in the space; a remedy naming a pinned-away control still counts.
        Config k;
        for (const auto& [n, v] : c)
          if (space_.find(n)) k[n] = v;
        k = canonical(k);
        if (!k.empty() && admissible(k) && std::find(mine.begin(), mine.end(), k) == mine.end()) mine.push_back(k);
      };
      for (const auto& r : g.remedies) add(r);
      for (auto& c : constraint_seeds(g)) add(c);
      // Each suggestion that moves a control others fall back on, again with those held.
      for (size_t i = 0, n = mine.size(); i < n && i < 4; ++i)
        if (auto h = held_partners(mine[i])) {
          if (std::find(mine.begin(), mine.end(), *h) == mine.end()) mine.insert(mine.begin() + i + 1, *h), ++n, ++i;
        }
      if (mine.empty()) {
        // No remedy or constraint to go on: each other value of the guide's small-domain
        // controls, smallest step from the default first.
        for (const auto& n : g.controls) {
          const Param* p = space_.find(n);
          if (!p || p->values.size() > 6) continue;
          for (const auto& v : p->values) add(Config{{n, v}});
        }
      }
      if (mine.size() > 6) mine.resize(6);
      per_guide.push_back(mine);
    }
    // Best of each guide first (round-robin), then the rest, then the union of every guide's
    // first suggestion when several hypotheses hold at once.
    for (size_t round = 0; round < 6; ++round)
      for (const auto& mine : per_guide)
        if (round < mine.size() && std::find(seeds_.begin(), seeds_.end(), mine[round]) == seeds_.end())
          seeds_.push_back(mine[round]);
    size_t with = std::count_if(per_guide.begin(), per_guide.end(), [](const auto& m) { return !m.empty(); });
    if (with >= 2) {
      Config all;
      for (const auto& mine : per_guide)
        if (!mine.empty())
          for (const auto& [k, v] : mine.front()) all.emplace(k, v);
      all = canonical(all);
      if (admissible(all) && std::find(seeds_.begin(), seeds_.end(), all) == seeds_.end())
        seeds_.insert(seeds_.begin() + std::min<size_t>(seeds_.size(), with), all);
    }
    if (seeds_.size() > 8) seeds_.resize(8);
  }

  Space space_;
  StrategyContext ctx_;
  std::mt19937_64 rng_;
  std::vector<Config> seeds_;
  bool guided_ = false;  // the guides gave something to try: refine and stop instead of sampling
  int step_ = 0;         // proposals after the seeds, for the interleaving of the phases
  int continued_ = 0;    // proposals after refinement converged
};

}  // namespace

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = {"syspilot", "random", "grid", "optuna-tpe", "optuna-cmaes"};
  return names;
}

namespace {

std::unique_ptr<Strategy> make_inner_strategy(const std::string& name, const Space& space, const StrategyContext& ctx) {
  if (name == "syspilot") return std::make_unique<GuidedSearch>(space, ctx);
  if (name == "random") return make_random_strategy(space, ctx);
  if (name == "grid") return make_grid_strategy(space, ctx);
  if (name == "optuna-tpe") return make_optuna_strategy("tpe", space, ctx);
  if (name == "optuna-cmaes") return make_optuna_strategy("cmaes", space, ctx);
  return nullptr;
}

}  // namespace

// Every strategy's proposals give the controls of one resource one value (tuner/consistency.h).
std::unique_ptr<Strategy> make_strategy(const std::string& name, const Space& space, const StrategyContext& ctx) {
  if (auto s = make_inner_strategy(name, space, ctx)) return consistent_strategy(std::move(s), space);
  throw std::invalid_argument("unknown strategy '" + name +
                              "'; use one of syspilot, random, grid, optuna-tpe, optuna-cmaes");
}

}  // namespace syspilot::tuner
