// Splits of the cores at any machine size, deterministically on this machine: thread-count
// domains and the guided strategy's candidates for 2, 16 and 64 CPUs (machine facts given,
// and SYSPILOT_NCPUS for the detected ones), fallback-coupled candidates tried with their
// partner held, and a search that spends its budget instead of stopping early.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "tuner/space.h"

using namespace syspilot;
using namespace syspilot::tuner;

namespace {

MachineFacts cpus(int n) {
  MachineFacts m;
  m.ncpus = m.ncores = n;
  return m;
}

lpcl::Expr lit(const std::string& t, lpcl::Expr::Kind k = lpcl::Expr::Kind::Int) {
  lpcl::Expr e;
  e.kind = k;
  e.text = t;
  return e;
}

// A thread count as contracts state it: int in [1, hi], sets cpu.threads.
lpcl::Control threads(const std::string& name, const std::string& hi, const std::string& def = "") {
  lpcl::Control c;
  c.name = name;
  c.type.kind = lpcl::Type::Kind::Int;
  c.domain.kind = lpcl::Domain::Kind::Range;
  c.domain.lo = lit("1");
  c.domain.hi = hi == "ncpus" ? lit("ncpus", lpcl::Expr::Kind::Name) : lit(hi);
  if (!def.empty()) c.default_value = def == "ncpus" ? lit("ncpus", lpcl::Expr::Kind::Name) : lit(def);
  c.sets = {"cpu.threads"};
  return c;
}

std::vector<std::string> ladder(int n, const std::string& hi = "1024") {
  Param p;
  EXPECT_TRUE(discretise(threads("T", hi), cpus(n), p));
  return p.values;
}

// The first `k` proposals of a strategy, each measured as 1 (a flat landscape: the order is
// the strategy's own).
std::vector<Config> proposals(Strategy& st, size_t k) {
  std::vector<Trial> h(1);
  h[0].m.ok = true;
  h[0].m.value = 1;
  h[0].m.samples = {1};
  h[0].m.repeats = 1;
  std::vector<Config> out;
  while (out.size() < k) {
    auto c = st.next(h);
    if (!c) break;
    out.push_back(*c);
    Trial t;
    t.index = static_cast<int>(h.size());
    t.config = *c;
    t.m = h[0].m;
    h.push_back(t);
  }
  return out;
}

Space two_pools(const MachineFacts& m, const std::string& constraint) {
  Space s;
  Diagnostics d;
  for (const char* n : {"OUTER", "INNER"}) {
    Param p;
    EXPECT_TRUE(discretise(threads(n, "1024", "ncpus"), m, p));
    s.params.push_back(p);
  }
  s.constraints = {constraint};
  return s;
}

Guide guide(const std::string& kind, const std::string& constraint) {
  Guide g;
  g.id = kind + ":outer>inner";
  g.kind = kind;
  g.controls = {"OUTER", "INNER"};
  g.constraint = constraint;
  return g;
}

// One successful run of `t` seconds.
Measurement one_run(double t) {
  Measurement m;
  m.ok = true;
  m.repeats = 1;
  m.value = t;
  m.samples = {t};
  return m;
}

int value(const Config& c, const std::string& k, int dflt) { return c.count(k) ? std::stoi(c.at(k)) : dflt; }

}  // namespace

TEST(TuneSplits, ThreadCountDomainsComeFromTheMachine) {
  EXPECT_EQ(ladder(2), (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(ladder(16), (std::vector<std::string>{"1", "2", "4", "8", "16", "32"}));
  EXPECT_EQ(ladder(64), (std::vector<std::string>{"1", "2", "4", "8", "16", "32", "64", "128"}));
  // A core count that is no power of two is on the ladder too; a contract bound caps it.
  EXPECT_EQ(ladder(12), (std::vector<std::string>{"1", "2", "4", "8", "12", "16", "24"}));
  EXPECT_EQ(ladder(16, "ncpus"), (std::vector<std::string>{"1", "2", "4", "8", "16"}));
}

TEST(TuneSplits, DetectedFactsCanStandInForAnotherMachine) {
  ::setenv("SYSPILOT_NCPUS", "64", 1);
  MachineFacts m = MachineFacts::detect();
  ::unsetenv("SYSPILOT_NCPUS");
  EXPECT_EQ(m.ncpus, 64);
  EXPECT_EQ(m.ncores, 64);
  ::setenv("SYSPILOT_NCPUS", "banana", 1);
  EXPECT_NE(MachineFacts::detect().ncpus, 0);  // ignored, not zero
  ::unsetenv("SYSPILOT_NCPUS");
}

// outer * inner <= ncores: the splits that use every core, the outer pool's share largest first;
// never one that oversubscribes.
TEST(TuneSplits, NestedPoolsGetEveryFactorisationOfTheCores) {
  const std::string con = "OUTER * INNER <= ncores";
  struct Want {
    int n;
    std::vector<std::pair<int, int>> first;
  };
  for (const Want& w : {Want{2, {{2, 1}, {1, 2}}}, Want{16, {{16, 1}, {8, 2}, {4, 4}}},
                        Want{64, {{64, 1}, {32, 2}, {16, 4}}}}) {
    MachineFacts m = cpus(w.n);
    StrategyContext ctx;
    ctx.machine = m;
    ctx.guides = {guide("nested_oversubscription", con)};
    auto st = make_strategy("syspilot", two_pools(m, con), ctx);
    auto got = proposals(*st, w.first.size());
    ASSERT_EQ(got.size(), w.first.size()) << w.n << " cpus";
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(value(got[i], "OUTER", w.n), w.first[i].first) << w.n << " cpus, #" << i << ": " << to_string(got[i]);
      EXPECT_EQ(value(got[i], "INNER", w.n), w.first[i].second) << w.n << " cpus, #" << i << ": " << to_string(got[i]);
    }
    for (const auto& c : proposals(*make_strategy("syspilot", two_pools(m, con), ctx), 12))
      EXPECT_LE(value(c, "OUTER", w.n) * value(c, "INNER", w.n), w.n) << to_string(c);
  }
}

// a + b <= ncores: each pool's ladder share with the rest of the cores for the other.
TEST(TuneSplits, CoRunningPoolsShareTheCores) {
  const std::string con = "OUTER + INNER <= ncores";
  MachineFacts m = cpus(16);
  StrategyContext ctx;
  ctx.machine = m;
  ctx.guides = {guide("corun_oversubscription", con)};
  auto got = proposals(*make_strategy("syspilot", two_pools(m, con), ctx), 3);
  ASSERT_EQ(got.size(), 3u);
  std::vector<std::pair<int, int>> want = {{15, 1}, {14, 2}, {12, 4}};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(value(got[i], "OUTER", 16), want[i].first) << to_string(got[i]);
    EXPECT_EQ(value(got[i], "INNER", 16), want[i].second) << to_string(got[i]);
  }
}

// OpenBLAS reads OMP_NUM_THREADS when its own variable is unset: the remedy "outer team of 1"
// alone also makes BLAS single-threaded. Right after it, the same with BLAS held at what it
// had before (all CPUs) is tried; and an explicit BLAS value equal to its default is kept.
TEST(TuneSplits, FallbackCoupledCandidateIsTriedWithItsPartnerHeld) {
  for (int n : {2, 16}) {
    MachineFacts m = cpus(n);
    lpcl::Contract blas, omp;
    blas.name = "openblas_pthread";
    blas.controls = {threads("OPENBLAS_NUM_THREADS", "ncpus", "ncpus"), threads("GOTO_NUM_THREADS", "ncpus"),
                     threads("OMP_NUM_THREADS", "ncpus")};
    blas.controls[1].fallback_for = "OPENBLAS_NUM_THREADS";
    blas.controls[2].fallback_for = "GOTO_NUM_THREADS";
    omp.name = "libgomp";
    omp.controls = {threads("OMP_NUM_THREADS", "1024", "ncpus")};
    Guide g;
    g.id = "nested_oversubscription:libgomp>openblas_pthread";
    g.kind = "nested_oversubscription";
    g.controls = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"};
    g.remedies = {{{"OMP_NUM_THREADS", "1"}}};
    Diagnostics d;
    Space s = build_space({omp, blas}, {g}, SpaceScope::Hypotheses, {}, m, d);
    const Param* p = s.find("OPENBLAS_NUM_THREADS");
    ASSERT_TRUE(p);
    EXPECT_EQ(p->falls_back_on, (std::vector<std::string>{"GOTO_NUM_THREADS", "OMP_NUM_THREADS"}));
    StrategyContext ctx;
    ctx.machine = m;
    ctx.guides = {g};
    auto got = proposals(*make_strategy("syspilot", s, ctx), 2);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0], (Config{{"OMP_NUM_THREADS", "1"}}));
    EXPECT_EQ(got[1], (Config{{"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", std::to_string(n)}}))
        << n << " cpus: " << to_string(got[1]);
  }
}

// A hypothesis may name a control no contract declares (a process count the program takes as
// an argument): the space warns and says how to add it, and once it is added or pinned it is
// searched without the warning.
TEST(TuneSplits, AControlNoContractDeclaresIsWarnedUntilAdded) {
  MachineFacts m = cpus(16);
  lpcl::Contract omp;
  omp.name = "libgomp";
  omp.controls = {threads("OMP_NUM_THREADS", "1024", "ncpus")};
  Guide g;
  g.id = "process_oversubscription:libgomp";
  g.kind = "process_oversubscription";
  g.controls = {"NPROC", "OMP_NUM_THREADS"};
  auto warned = [](const Diagnostics& d) { return d.str().find("unknown-control") != std::string::npos; };
  Diagnostics plain;
  Space s = build_space({omp}, {g}, SpaceScope::Hypotheses, {}, m, plain);
  EXPECT_TRUE(warned(plain)) << plain.str();
  EXPECT_FALSE(s.find("NPROC"));
  SpaceEdits add;
  add.add["NPROC"] = {"1", "2", "4"};
  Diagnostics added;
  s = build_space({omp}, {g}, SpaceScope::Hypotheses, add, m, added);
  EXPECT_FALSE(warned(added)) << added.str();
  ASSERT_TRUE(s.find("NPROC"));
  EXPECT_EQ(s.find("NPROC")->values.size(), 3u);
  SpaceEdits pin;
  pin.pin["NPROC"] = "2";
  Diagnostics pinned;
  build_space({omp}, {g}, SpaceScope::Hypotheses, pin, m, pinned);
  EXPECT_FALSE(warned(pinned)) << pinned.str();
}

// The guides' candidates and refinement run out long before a budget of 40 on a space of
// hundreds of configurations: the rest is spent model-based, moving few controls at a time,
// and the search finishes early only when nothing is left to measure.
TEST(TuneSplits, GuidedSearchSpendsTheBudgetAndFinishesOnlyWhenExhausted) {
  struct Bowl : Objective {
    Measurement evaluate(const Config& c) override {
      auto get = [&](const char* k, double d) { auto it = c.find(k); return it == c.end() ? d : std::stod(it->second); };
      double o = get("OUTER", 16), i = get("INNER", 16), x = get("X", 1), y = get("Y", 1);
      double t = 64.0 / std::min(o * i, 16.0) + (o * i > 16 ? o * i / 4 : 0) + 0.2 * std::fabs(std::log2(x / 4)) +
                 0.1 * std::fabs(std::log2(y / 2));
      return one_run(t);
    }
  } obj;
  MachineFacts m = cpus(16);
  const std::string con = "OUTER * INNER <= ncores";
  Space s = two_pools(m, con);
  for (const char* extra : {"X", "Y"}) {
    Param p;
    p.name = extra;
    p.values = {"1", "2", "4", "8", "16"};
    p.default_value = "1";
    p.numeric = true;
    s.params.push_back(p);
  }
  StrategyContext ctx;
  ctx.machine = m;
  ctx.guides = {guide("nested_oversubscription", con)};
  auto st = make_strategy("syspilot", s, ctx);
  TuneOptions o;
  o.budget = 40;
  o.max_repeats = 1;
  TuneResult r = tune(*st, obj, o);
  EXPECT_EQ(r.runs, 40);
  EXPECT_EQ(r.stop_reason, "budget");
  ASSERT_GE(r.best, 0);
  const Config& best = r.trials[r.best].config;
  EXPECT_EQ(value(best, "OUTER", 16) * value(best, "INNER", 16), 16) << to_string(best);
  EXPECT_EQ(value(best, "X", 1), 4) << to_string(best);

  // A space of 4 configurations is exhausted: then, and only then, the strategy finishes.
  Space tiny;
  Param a;
  a.name = "A";
  a.values = {"1", "2", "3", "4"};
  a.default_value = "1";
  a.numeric = true;
  tiny.params = {a};
  Guide ga;
  ga.id = "spin_interference:a";
  ga.kind = "spin_interference";
  ga.controls = {"A"};
  StrategyContext tctx;
  tctx.machine = m;
  tctx.guides = {ga};
  auto ts = make_strategy("syspilot", tiny, tctx);
  TuneResult tr = tune(*ts, obj, o);
  EXPECT_EQ(tr.stop_reason, "strategy finished");
  EXPECT_EQ(tr.trials.size(), 4u);
}

// Two controls of one cause that only help together: the spin count's best value lies between
// none and the default, and only under an active wait policy; each alone, and each remedy, is
// no better than the default. Refinement from an incumbent moves one control at a time and
// never sees the pair; the hypothesis' joint values find it within their own count of runs,
// before any control the hypothesis does not name is moved.
TEST(TuneSplits, AHypothesisControlsAreTriedTogether) {
  struct Pair : Objective {
    Measurement evaluate(const Config& c) override {
      auto get = [&](const char* k) { auto it = c.find(k); return it == c.end() ? std::string() : it->second; };
      double t = 1.5;
      if (get("SPIN") == "1000" && get("WAIT") == "active") t = 1.0;
      else if (get("WAIT") == "passive" || get("SPIN") == "0") t = 1.4;
      if (get("X") == "2") t *= 0.98;  // a control no hypothesis names, nearly inert
      return one_run(t);
    }
  } obj;
  Space s;
  auto add = [&](const char* name, std::vector<std::string> values, bool numeric) {
    Param p;
    p.name = name;
    p.values = std::move(values);
    p.numeric = numeric;
    s.params.push_back(p);
  };
  add("SPIN", {"", "0", "1000", "30000", "3000000"}, true);
  add("WAIT", {"", "passive", "active"}, false);
  add("X", {"", "1", "2", "4", "8"}, true);
  add("Y", {"", "1", "2", "4", "8"}, true);
  StrategyContext ctx;
  ctx.machine = cpus(2);
  Guide g;
  g.id = "spin_interference:a>b";
  g.kind = "spin_interference";
  g.controls = {"SPIN", "WAIT"};
  g.remedies = {{{"WAIT", "passive"}}, {{"SPIN", "0"}}};
  ctx.guides = {g};
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    ctx.seed = seed;
    auto st = make_strategy("syspilot", s, ctx);
    TuneOptions o;
    o.budget = 16;  // the reference, then at most the 14 joint values of SPIN and WAIT
    o.max_repeats = 1;
    TuneResult r = tune(*st, obj, o);
    ASSERT_GE(r.best, 0);
    const Config& best = r.trials[r.best].config;
    EXPECT_EQ(to_string(best), "SPIN=1000 WAIT=active") << "seed " << seed;
    for (const auto& t : r.trials) {
      if (t.config == best) break;
      EXPECT_EQ(t.config.count("X") + t.config.count("Y"), 0u) << "seed " << seed << ": " << to_string(t.config);
    }
  }
}

// On a landscape where nothing the model has measured pays for a jump, a guided search changes
// few controls at a time: no proposal sets more than three of nine controls, though the model's
// candidates over the whole space set six on average.
TEST(TuneSplits, FewControlsChangeAtATimeUnlessTheModelSaysOtherwise) {
  struct Flat : Objective {
    Measurement evaluate(const Config&) override { return one_run(1.0); }
  } obj;
  Space s;
  for (int i = 0; i < 9; ++i) {
    Param p;
    p.name = "C" + std::to_string(i);
    p.values = {"a", "b", "c"};
    p.default_value = "a";
    s.params.push_back(p);
  }
  StrategyContext ctx;
  ctx.machine = cpus(2);
  Guide g;
  g.id = "spin_interference:a>b";
  g.kind = "spin_interference";
  g.controls = {"C0", "C1"};
  g.remedies = {{{"C0", "b"}}};
  ctx.guides = {g};
  for (std::uint64_t seed : {1, 2, 3}) {
    ctx.seed = seed;
    auto st = make_strategy("syspilot", s, ctx);
    TuneOptions o;
    o.budget = 60;
    o.max_repeats = 1;
    TuneResult r = tune(*st, obj, o);
    EXPECT_EQ(r.runs, 60);
    for (const auto& t : r.trials) EXPECT_LE(t.config.size(), 3u) << "seed " << seed << ": " << to_string(t.config);
  }
}
