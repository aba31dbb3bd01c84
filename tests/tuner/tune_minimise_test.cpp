// Minimising a result (tuner/minimise.h) on objectives whose answer is known: which controls
// matter is decided by the objective, and a run costs nothing.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "tuner/minimise.h"

using namespace syspilot;
using namespace syspilot::tuner;

namespace {

// Run time as a function of the configuration; exact (no noise), one run per evaluate().
class Exact : public Objective {
 public:
  explicit Exact(std::function<double(const Config&)> f) : f_(std::move(f)) {}
  Measurement evaluate(const Config& c) override {
    ++runs;
    Measurement m;
    m.ok = true;
    m.repeats = 1;
    m.value = f_(c);
    m.samples = {m.value};
    m.walls = {m.value};
    return m;
  }
  int runs = 0;

 private:
  std::function<double(const Config&)> f_;
};

// Six controls A..F, each 1 or 2 (default 2), all set to 1 in the best found.
Space six() {
  Space s;
  for (const char* n : {"A", "B", "C", "D", "E", "F"}) {
    Param p;
    p.name = n;
    p.values = {"1", "2"};
    p.default_value = "2";
    p.numeric = true;
    s.params.push_back(p);
  }
  return s;
}

Config all_set() { return {{"A", "1"}, {"B", "1"}, {"C", "1"}, {"D", "1"}, {"E", "1"}, {"F", "1"}}; }

bool set_to_one(const Config& c, const std::string& n) {
  auto it = c.find(n);
  return it != c.end() && it->second == "1";
}

}  // namespace

// A best found by sampling sets every control; when one of six matters, the five others go in
// a few checks, within the usual 16 runs: dropping them one at a time would need five checks
// of four runs each and stop capped with a control left.
TEST(Minimise, ControlsThatMakeNoDifferenceGoInChunks) {
  Space space = six();
  Exact objective([](const Config& c) { return set_to_one(c, "A") ? 1.0 : 2.0; });
  MinimiseOptions o;
  o.max_runs = 16;
  o.pairs = 2;
  o.noise = 0.02;
  Minimised m = minimise(objective, space, all_set(), o);
  EXPECT_EQ(m.config, (Config{{"A", "1"}}));
  EXPECT_EQ(m.dropped.size(), 5u);
  EXPECT_FALSE(m.capped);
  EXPECT_LE(m.runs, 16);
  EXPECT_EQ(m.runs, objective.runs);
}

// Where every control matters, none is dropped; the checks stop at the run cap and say so.
TEST(Minimise, ControlsThatAllMatterAreAllKept) {
  Space space = six();
  Exact objective([](const Config& c) {
    double t = 1;
    for (const char* n : {"A", "B", "C", "D", "E", "F"}) t += set_to_one(c, n) ? 0 : 0.5;
    return t;
  });
  MinimiseOptions o;
  o.max_runs = 16;
  o.pairs = 2;
  o.noise = 0.02;
  Minimised m = minimise(objective, space, all_set(), o);
  EXPECT_EQ(m.config, all_set());
  EXPECT_TRUE(m.dropped.empty());
  EXPECT_TRUE(m.capped);
  EXPECT_LE(m.runs, 16);
}

// Two controls matter, at either end of the order: the chunks around them go, they stay.
TEST(Minimise, OnlyTheControlsThatMatterStay) {
  Space space = six();
  Exact objective([](const Config& c) { return 1.0 + (set_to_one(c, "A") ? 0 : 1) + (set_to_one(c, "F") ? 0 : 1); });
  MinimiseOptions o;
  o.max_runs = 40;
  o.pairs = 2;
  o.noise = 0.02;
  Minimised m = minimise(objective, space, all_set(), o);
  EXPECT_EQ(m.config, (Config{{"A", "1"}, {"F", "1"}}));
  EXPECT_EQ(m.dropped.size(), 4u);
  EXPECT_FALSE(m.capped);
}
