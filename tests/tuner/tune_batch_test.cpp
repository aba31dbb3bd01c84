// tune()'s batches (TuneOptions::parallel): the constant liar makes unchanged strategies, the
// frozen ones included, propose distinct configurations per batch, and every run is charged
// without exceeding the budget, on a fake objective that records its batches.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tuner/search.h"

namespace syspilot::tuner {
namespace {

// Value: 1 for the default, else 1 - X/100; each run charged once, or, with `double_cost`, twice
// for a configuration unless it is the budget's last run (as the Slurm executor spends a node's
// reference run, and keeps the budget's last run on the reference node).
struct BatchFake : Objective {
  std::vector<size_t> batches;
  std::vector<Config> runs;
  bool double_cost = false;
  RunPlan next;
  void plan(const RunPlan& p) override { next = p; }
  Measurement evaluate(const Config& c) override {
    runs.push_back(c);
    Measurement m;
    m.ok = true;
    m.repeats = double_cost && !c.empty() && next.runs_left != 1 ? 2 : 1;
    m.value = c.empty() ? 1.0 : 1.0 - std::stod(c.at("X")) / 100;
    m.samples = {m.value};
    m.walls = {m.value};
    return m;
  }
  std::vector<Measurement> evaluate_batch(const std::vector<BatchRun>& rs) override {
    batches.push_back(rs.size());
    std::vector<Measurement> out;
    for (const auto& r : rs) {
      EXPECT_GE(r.plan.trial, 0);
      next = r.plan;
      out.push_back(evaluate(r.config));
    }
    return out;
  }
};

Space x_space(int n) {
  Param p;
  p.name = "X";
  for (int i = 1; i <= n; ++i) p.values.push_back(std::to_string(i));
  p.numeric = true;
  Space s;
  s.params = {p};
  return s;
}

// Proposes the lowest X not in the history: without the lies it would propose the same one
// N times per batch.
struct Lowest : Strategy {
  int n;
  std::vector<size_t> seen;  // history sizes it was asked with
  explicit Lowest(int n) : n(n) {}
  std::string name() const override { return "lowest"; }
  std::optional<Config> next(const std::vector<Trial>& history) override {
    seen.push_back(history.size());
    for (int i = 1; i <= n; ++i) {
      Config c{{"X", std::to_string(i)}};
      if (std::none_of(history.begin(), history.end(), [&](const Trial& t) { return t.config == c; })) return c;
    }
    return std::nullopt;
  }
};

TEST(TuneBatch, ConstantLiarProposesDistinctConfigurations) {
  BatchFake obj;
  Lowest st(10);
  TuneOptions o;
  o.budget = 9;
  o.max_repeats = 1;
  o.parallel = 3;
  TuneResult r = tune(st, obj, o);
  EXPECT_EQ(r.runs, 9);
  ASSERT_GE(obj.batches.size(), 2u);
  EXPECT_EQ(obj.batches.front(), 3u);  // 8 runs left after the reference: room for 3 (twice over)
  std::set<Config> configs;
  for (const auto& t : r.trials) EXPECT_TRUE(configs.insert(t.config).second) << to_string(t.config);
  EXPECT_EQ(static_cast<int>(obj.runs.size()), r.runs);
  // The history it was asked with grew by one provisional trial per proposal in a batch.
  EXPECT_EQ(st.seen[1], st.seen[0] + 1);
  EXPECT_EQ(st.seen[2], st.seen[0] + 2);
}

// Each run may cost two (a node's reference run): a batch never takes more than half the room,
// so the budget holds exactly, whatever it is.
TEST(TuneBatch, BudgetHoldsWhenARunCostsTwo) {
  for (int budget = 1; budget <= 12; ++budget) {
    BatchFake obj;
    obj.double_cost = true;
    Lowest st(20);
    TuneOptions o;
    o.budget = budget;
    o.max_repeats = 1;
    o.parallel = 4;
    TuneResult r = tune(st, obj, o);
    EXPECT_LE(r.runs, budget) << "budget " << budget;
    int repeats = 0;
    for (const auto& t : r.trials) repeats += t.m.repeats;
    EXPECT_EQ(repeats, r.runs);
    for (size_t b : obj.batches) EXPECT_LE(b, 4u);
  }
}

// The frozen strategies run unchanged in batches: random and grid give distinct configurations.
TEST(TuneBatch, FrozenStrategiesProposeDistinctBatches) {
  for (const char* name : {"random", "grid"}) {
    BatchFake obj;
    Space space = x_space(12);
    StrategyContext ctx;
    auto st = make_strategy(name, space, ctx);
    TuneOptions o;
    o.budget = 10;
    o.max_repeats = 1;
    o.parallel = 4;
    TuneResult r = tune(*st, obj, o);
    std::set<Config> measured;
    for (const auto& c : obj.runs) EXPECT_TRUE(measured.insert(c).second) << name << ": " << to_string(c) << " twice";
    EXPECT_LE(r.runs, 10);
    EXPECT_GE(*std::max_element(obj.batches.begin(), obj.batches.end()), 2u) << name;
  }
}

}  // namespace
}  // namespace syspilot::tuner
