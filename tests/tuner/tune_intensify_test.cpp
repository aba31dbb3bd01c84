// Intensification: a leader measured once is run again once later trials fail to beat it, a
// strategy with nothing left to propose leaves the budget to the leaders, and a re-measured
// configuration is judged by its newest record, which holds all its runs.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "tuner/measure.h"
#include "tuner/space.h"

using namespace syspilot::tuner;

namespace {

// Answers each configuration of X from its own queue of values (the last one repeats).
struct Scripted : Objective {
  std::map<std::string, std::deque<double>> values;  // X -> values of its successive runs ("" = default)
  std::vector<std::string> order;                    // X of every run, in order
  Measurement evaluate(const Config& c) override {
    std::string x = c.count("X") ? c.at("X") : "";
    order.push_back(x);
    auto& q = values.at(x);
    Measurement m;
    m.ok = true;
    m.repeats = 1;
    m.value = q.front();
    if (q.size() > 1) q.pop_front();
    m.samples = {m.value};
    m.walls = {m.value};
    return m;
  }
};

Space x_space(std::vector<std::string> values) {
  Space s;
  Param p;
  p.name = "X";
  p.values = std::move(values);
  p.default_value = "0";
  p.numeric = true;
  s.params = {p};
  return s;
}

// A trial measured before the session (an analysis probe run): one run.
Trial probe(const std::string& x, double value) {
  Trial t;
  t.config = {{"X", x}};
  t.strategy = "probe";
  t.m.ok = true;
  t.m.repeats = 1;
  t.m.value = value;
  t.m.samples = {value};
  t.m.walls = {value};
  return t;
}

int runs_of(const std::vector<std::string>& order, const std::string& x) {
  int n = 0;
  for (const auto& o : order) n += o == x;
  return n;
}

}  // namespace

// A probe's lucky single run (0.2 s; the configuration runs 1.0 s whenever run again) leads until three
// later trials fail to beat it; then it is run again, its newest record holds every run, and
// the configuration that is truly best wins.
TEST(TuneIntensify, ALuckySingleRunIsRunAgainOnceThreeTrialsFailToBeatIt) {
  Scripted obj;
  obj.values = {{"1", {1.0}}, {"2", {0.9}}, {"3", {0.95}}, {"4", {0.5}}, {"9", {1.0}}};
  Space s = x_space({"1", "2", "3", "4"});  // the probe's X=9 lies outside the grid
  auto grid = make_strategy("grid", s, {});
  TuneOptions o;
  o.budget = 40;
  Trial ref;
  ref.strategy = "reference";
  ref.m.ok = true;
  ref.m.repeats = 2;
  ref.m.value = 1.0;
  ref.m.samples = {1.0, 1.0};
  ref.m.walls = {1.0, 1.0};
  o.resumed = {ref, probe("9", 0.2)};
  TuneResult r = tune(*grid, obj, o);

  // X=1, 2 and 3 each ran once (clearly worse than 0.2), then X=9 again.
  ASSERT_GE(obj.order.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(obj.order.begin(), obj.order.begin() + 4),
            (std::vector<std::string>{"1", "2", "3", "9"}));

  // Its newest record holds every run of it, charges only its own, and supersedes the others.
  int newest = -1;
  for (const auto& t : r.trials)
    if (t.config.count("X") && t.config.at("X") == "9") newest = t.index;
  ASSERT_GE(newest, 0);
  const Trial& nine = r.trials[newest];
  EXPECT_EQ(nine.strategy, "re-measure");
  EXPECT_EQ(nine.m.samples.front(), 0.2);
  EXPECT_EQ(nine.m.samples.size(), static_cast<size_t>(runs_of(obj.order, "9") + 1));
  EXPECT_EQ(nine.m.repeats, 1);
  EXPECT_TRUE(superseded(r.trials, 1));
  EXPECT_FALSE(superseded(r.trials, static_cast<size_t>(newest)));
  int standing_nines = 0;
  for (const auto& t : standing(r.trials)) standing_nines += t.config.count("X") && t.config.at("X") == "9";
  EXPECT_EQ(standing_nines, 1);

  ASSERT_GE(r.best, 0);
  EXPECT_EQ(r.trials[r.best].config.at("X"), "4");
  EXPECT_EQ(r.runs, static_cast<int>(obj.order.size()) + 2 + 1);  // the resumed runs are charged too
}

// Nothing is re-measured while the strategy proposes; once the space is spent, the rest of the
// budget goes to the leaders within the noise of the incumbent, up to max_repeats runs each,
// and the session ends when none is left, the budget unspent.
TEST(TuneIntensify, ASpentSpaceLeavesTheBudgetToTheLeaders) {
  Scripted obj;
  obj.values = {{"", {1.0}}, {"1", {1.5}}, {"2", {0.5}}, {"3", {0.502, 0.503, 0.9}}};
  Space s = x_space({"1", "2", "3"});
  auto grid = make_strategy("grid", s, {});
  TuneOptions o;
  o.budget = 40;
  TuneResult r = tune(*grid, obj, o);

  EXPECT_EQ(r.stop_reason, "strategy finished");
  EXPECT_EQ(r.runs, 9);
  EXPECT_EQ(runs_of(obj.order, "1"), 1);  // clearly worse: one run, never re-measured
  EXPECT_EQ(runs_of(obj.order, "3"), 3);  // within the noise: repeated at once
  EXPECT_EQ(runs_of(obj.order, "2"), 3);  // clearly better, so two runs; the third once the grid is spent
  EXPECT_EQ(obj.order.back(), "2");
  EXPECT_EQ(r.trials.back().strategy, "re-measure");
  ASSERT_GE(r.best, 0);
  EXPECT_EQ(r.trials[r.best].config.at("X"), "2");
  EXPECT_EQ(r.trials[r.best].m.samples.size(), 3u);
}
