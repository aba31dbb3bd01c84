// Tests of the search: constraint expressions, domains from contracts, applying a
// configuration, the strategies (on a known landscape), Optuna through its bridge, sessions in
// a real SQLite file, and the report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "tuner/measure.h"
#include "tuner/report.h"
#include "tuner/session.h"
#include "tuner/space.h"

using namespace syspilot;
using namespace syspilot::tuner;

namespace {

std::string temp_dir(const std::string& tag) {
  auto d = std::filesystem::temp_directory_path() / ("syspilot-tune-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

lpcl::Expr num(const std::string& t) {
  lpcl::Expr e;
  e.kind = lpcl::Expr::Kind::Int;
  e.text = t;
  return e;
}
lpcl::Expr name(const std::string& t) {
  lpcl::Expr e;
  e.kind = lpcl::Expr::Kind::Name;
  e.text = t;
  return e;
}

Param param(const std::string& n, std::vector<std::string> values, std::string def, bool numeric = true) {
  Param p;
  p.name = n;
  p.values = std::move(values);
  p.default_value = std::move(def);
  p.numeric = numeric;
  return p;
}

// A nested-oversubscription landscape on 4 cores: time grows with outer x inner beyond the
// cores, shrinks with parallelism below; a passive wait policy helps a little. Deterministic
// noise of +-2% from the seed; a run costs nothing.
class Landscape : public Objective {
 public:
  explicit Landscape(std::uint64_t seed) : rng_(seed) {}
  Measurement evaluate(const Config& c) override {
    ++runs;
    auto get = [&](const char* k, double d) { auto it = c.find(k); return it == c.end() ? d : std::stod(it->second); };
    double outer = get("OUTER", 4), inner = get("INNER", 4);
    double threads = outer * inner;
    double t = 8.0 / std::min(threads, 4.0) + (threads > 4 ? 0.6 * (threads - 4) : 0) + 0.1 * inner;
    auto w = c.find("WAIT");
    if (w != c.end() && w->second == "passive") t *= 0.95;
    std::uniform_real_distribution<double> u(-0.02, 0.02);
    Measurement m;
    m.ok = true;
    m.repeats = 1;
    m.value = t * (1 + u(rng_));
    m.samples = {m.value};
    return m;
  }
  int runs = 0;

 private:
  std::mt19937_64 rng_;
};

Space landscape_space() {
  Space s;
  s.params = {param("OUTER", {"1", "2", "3", "4"}, "4"), param("INNER", {"1", "2", "3", "4"}, "4"),
              param("WAIT", {"active", "passive"}, "active", false)};
  return s;
}

Guide nested_guide() {
  Guide g;
  g.id = "nested_oversubscription:outer>inner";
  g.kind = "nested_oversubscription";
  g.controls = {"OUTER", "INNER"};
  g.constraint = "OUTER * INNER <= ncores";
  return g;
}

MachineFacts four_cores() {
  MachineFacts m;
  m.ncpus = m.ncores = 4;
  return m;
}

}  // namespace

TEST(TuneExpr, EvaluatesArithmeticComparisonsAndFallbacks) {
  std::map<std::string, double> n = {{"A", 2}, {"B", 3}, {"ncores", 4}};
  EXPECT_EQ(*evaluate_expr("A * B <= ncores", n), 0);
  EXPECT_EQ(*evaluate_expr("A + 1 <= ncores && B < 4", n), 1);
  EXPECT_EQ(*evaluate_expr("min(A, B) * 2 - 1", n), 3);
  EXPECT_EQ(*evaluate_expr("C ?? D ?? ncores", n), 4);
  EXPECT_EQ(*evaluate_expr("64KiB / 1KiB", n), 64);
  EXPECT_EQ(*evaluate_expr("10 - 4 - 3", n), 3);  // left associative
  EXPECT_EQ(*evaluate_expr("(A + B) * 2", n), 10);
  std::string err;
  EXPECT_FALSE(evaluate_expr("C * 2", n, &err));
  EXPECT_NE(err.find("'C'"), std::string::npos);
  EXPECT_FALSE(evaluate_expr("A *", n, &err));
  EXPECT_FALSE(evaluate_expr("A / 0", n, &err));
  EXPECT_NE(err.find("division"), std::string::npos);
  EXPECT_FALSE(evaluate_expr("frob(A)", n, &err));
}

TEST(TuneSpace, AdmitsByConstraintWithDefaultsAndMachineFacts) {
  Space s = landscape_space();
  s.constraints = {"OUTER * INNER <= ncores"};
  MachineFacts m = four_cores();
  EXPECT_FALSE(s.admits({}, m));  // defaults 4 x 4
  EXPECT_TRUE(s.admits({{"OUTER", "2"}, {"INNER", "2"}}, m));
  EXPECT_FALSE(s.admits({{"OUTER", "2"}}, m));  // inner stays 4
  EXPECT_TRUE(s.admits({{"OUTER", "1"}}, m));
  s.constraints = {"UNKNOWN_KNOB < 3"};  // a constraint without values does not exclude
  EXPECT_TRUE(s.admits({}, m));
  EXPECT_EQ(landscape_space().size(), 32u);
}

TEST(TuneSpace, DiscretisesContractDomains) {
  MachineFacts m = four_cores();
  lpcl::Control c;
  c.name = "OPENBLAS_NUM_THREADS";
  c.type.kind = lpcl::Type::Kind::Int;
  c.domain.kind = lpcl::Domain::Kind::Range;
  c.domain.lo = num("1");
  c.domain.hi = name("ncpus");
  lpcl::Expr fallback;
  fallback.kind = lpcl::Expr::Kind::Binary;
  fallback.op = "??";
  fallback.args = {name("OMP_NUM_THREADS"), name("ncpus")};
  c.default_value = fallback;
  Param p;
  ASSERT_TRUE(discretise(c, m, p));
  EXPECT_EQ(p.values, (std::vector<std::string>{"1", "2", "3", "4"}));
  EXPECT_EQ(p.default_value, "4");
  EXPECT_TRUE(p.numeric);

  lpcl::Control big = c;
  big.name = "GOMP_SPINCOUNT";
  big.domain.lo = num("0");
  big.domain.hi = num("30000000");
  big.default_value = num("300000");
  ASSERT_TRUE(discretise(big, m, p));
  EXPECT_LE(p.values.size(), 12u);
  EXPECT_EQ(p.values.front(), "0");
  EXPECT_EQ(p.values.back(), "30000000");

  lpcl::Control wait;
  wait.name = "OMP_WAIT_POLICY";
  wait.type.kind = lpcl::Type::Kind::Enum;
  wait.type.enumerators = {"active", "passive"};
  ASSERT_TRUE(discretise(wait, m, p));
  EXPECT_EQ(p.values, (std::vector<std::string>{"active", "passive"}));
  EXPECT_FALSE(p.numeric);

  lpcl::Control free_text;
  free_text.name = "SOME_PATH";
  free_text.type.kind = lpcl::Type::Kind::String;
  std::string why;
  EXPECT_FALSE(discretise(free_text, m, p, &why));
  EXPECT_NE(why.find("--add SOME_PATH"), std::string::npos);
}

TEST(TuneSpace, BuildsFromContractsGuidesAndEdits) {
  lpcl::Contract blas;
  blas.name = "openblas";
  lpcl::Control t;
  t.name = "OPENBLAS_NUM_THREADS";
  t.type.kind = lpcl::Type::Kind::Int;
  t.domain.kind = lpcl::Domain::Kind::Range;
  t.domain.lo = num("1");
  t.domain.hi = name("ncpus");
  t.default_value = name("ncpus");
  lpcl::Control setter = t;
  setter.name = "openblas_set_num_threads";
  setter.how.kind = lpcl::ControlKind::Kind::Api;
  setter.sets = {"cpu.threads"};
  t.sets = {"cpu.threads"};
  blas.controls = {t, setter};
  lpcl::Contract omp;
  omp.name = "libgomp";
  lpcl::Control o = t;
  o.name = "OMP_NUM_THREADS";
  omp.controls = {o};
  Guide g;
  g.id = "nested";
  g.controls = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"};
  g.constraint = "OMP_NUM_THREADS * OPENBLAS_NUM_THREADS <= ncores";
  Diagnostics d;
  Space s = build_space({blas, omp}, {g}, SpaceScope::Hypotheses, {}, four_cores(), d);
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.constraints, std::vector<std::string>{g.constraint});

  // --space all leaves out the setter that an env control of the same contract covers.
  Space all = build_space({blas, omp}, {}, SpaceScope::All, {}, four_cores(), d);
  EXPECT_EQ(all.params.size(), 2u);
  EXPECT_EQ(all.find("openblas_set_num_threads"), nullptr);

  SpaceEdits e;
  e.pin["OMP_NUM_THREADS"] = "2";
  e.add["MALLOC_ARENA_MAX"] = {"1", "2", "8"};
  e.drop = {"OPENBLAS_NUM_THREADS", "NOT_THERE"};
  Diagnostics d2;
  Space edited = build_space({blas, omp}, {g}, SpaceScope::Hypotheses, e, four_cores(), d2);
  ASSERT_NE(edited.find("OMP_NUM_THREADS"), nullptr);
  EXPECT_EQ(edited.find("OMP_NUM_THREADS")->values, std::vector<std::string>{"2"});
  EXPECT_EQ(edited.find("OPENBLAS_NUM_THREADS"), nullptr);
  ASSERT_NE(edited.find("MALLOC_ARENA_MAX"), nullptr);
  EXPECT_EQ(d2.warning_count(), 1u);  // NOT_THERE

  // A guide may name a declared control that cannot be searched (a getter with no domain): that
  // gets a note; only a name no contract declares is warned about.
  lpcl::Control getter;
  getter.name = "omp_get_max_threads";
  getter.how.kind = lpcl::ControlKind::Kind::Api;
  omp.controls.push_back(getter);
  Guide named = g;
  named.controls = {"OMP_NUM_THREADS", "omp_get_max_threads", "INVENTED_KNOB"};
  Diagnostics d3;
  Space s3 = build_space({blas, omp}, {named}, SpaceScope::Hypotheses, {}, four_cores(), d3);
  EXPECT_EQ(s3.find("omp_get_max_threads"), nullptr);
  EXPECT_EQ(d3.warning_count(), 1u) << d3.str();
  EXPECT_NE(d3.str().find("INVENTED_KNOB"), std::string::npos) << d3.str();
}

TEST(TuneSpace, EnvironmentForEnvOptionAndApiControls) {
  Space s;
  s.params = {param("OMP_NUM_THREADS", {"1", "2"}, "2")};
  Param narenas = param("narenas", {"1", "4"}, "");
  narenas.kind = Param::Kind::Option;
  narenas.carrier = "MALLOC_CONF";
  narenas.item_sep = ",";
  narenas.kv_sep = ":";
  Param setter = param("openblas_set_num_threads", {"1", "2"}, "2");
  setter.kind = Param::Kind::Api;
  s.params.push_back(narenas);
  s.params.push_back(setter);
  auto env = environment_for(s, {{"OMP_NUM_THREADS", "1"}, {"narenas", "4"}, {"openblas_set_num_threads", "1"}},
                             "/x/libsyspilot_shim.so", {{"MALLOC_CONF", "background_thread:true"}, {"LD_PRELOAD", "/y.so"}});
  EXPECT_EQ(env["OMP_NUM_THREADS"], "1");
  EXPECT_EQ(env["MALLOC_CONF"], "background_thread:true,narenas:4");
  EXPECT_EQ(env["SYSPILOT_SHIM_CALLS"], "openblas_set_num_threads=1;");
  EXPECT_EQ(env["LD_PRELOAD"], "/x/libsyspilot_shim.so:/y.so");
  EXPECT_TRUE(environment_for(s, {}, "/x.so", {}).empty());
}

// The contract-guided strategy reaches the landscape's optimum in fewer runs than the
// general-purpose ones, and stops on its own.
TEST(TuneStrategy, GuidedFindsOptimumQuicklyAndStops) {
  Space s = landscape_space();
  s.constraints = {nested_guide().constraint};
  StrategyContext ctx;
  ctx.guides = {nested_guide()};
  ctx.machine = four_cores();
  auto st = make_strategy("syspilot", s, ctx);
  Landscape obj(7);
  TuneOptions o;
  o.budget = 40;
  TuneResult r = tune(*st, obj, o);
  ASSERT_GE(r.best, 0);
  const Config& best = r.trials[r.best].config;
  double outer = best.count("OUTER") ? std::stod(best.at("OUTER")) : 4;
  double inner = best.count("INNER") ? std::stod(best.at("INNER")) : 4;
  EXPECT_EQ(outer * inner, 4) << to_string(best);
  EXPECT_EQ(r.stop_reason, "strategy finished");
  EXPECT_LT(r.runs, 40);
  EXPECT_GT(r.speedup, 2.0);
  // The first suggestion already uses every core without oversubscribing: outer 4, inner 1.
  ASSERT_GE(r.trials.size(), 2u);
  EXPECT_EQ(r.trials[1].config, (Config{{"INNER", "1"}}));
}

// A control left unset whose default the contract does not state cannot be put into the
// guide's constraint: such a candidate says nothing about the fit and comes after those that
// can be checked (it once ranked first, as if it fitted exactly).
TEST(TuneStrategy, ConstraintSeedsThatCannotBeEvaluatedComeLast) {
  Space s;
  s.params = {param("OUTER", {"", "1", "2", "4"}, ""), param("INNER", {"", "2", "4"}, "")};
  StrategyContext ctx;
  ctx.guides = {nested_guide()};
  ctx.machine = four_cores();
  auto st = make_strategy("syspilot", s, ctx);
  std::vector<Trial> history(1);  // the default, measured
  history[0].m.ok = true;
  history[0].m.value = 1;
  history[0].m.samples = {1};
  auto first = st->next(history);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->count("OUTER"), 1u) << to_string(*first);
  ASSERT_EQ(first->count("INNER"), 1u) << to_string(*first);
  EXPECT_EQ(std::stoi(first->at("OUTER")) * std::stoi(first->at("INNER")), 4) << to_string(*first);
}

// Two remedies that each remove one cause (no thread for the second pool; no spinning) are
// measured as the guides give them, but not together (the seeds' union combines each guide's
// first remedy, and the co-run guide's first, a split, does not help); their union, which
// removes both causes, comes right after the seeds.
TEST(TuneStrategy, RemediesThatEachHelpedAreTriedTogether) {
  struct TwoCauses : Objective {
    Measurement evaluate(const Config& c) override {
      auto on = [&](const char* k, const char* v) { auto it = c.find(k); return it != c.end() && it->second == v; };
      Measurement m;
      m.ok = true;
      m.repeats = 1;
      m.value = 1.0 * (on("B", "0") ? 0.8 : 1.0) * (on("WAIT", "passive") ? 0.8 : 1.0);
      m.samples = {m.value};
      return m;
    }
  } obj;
  Space s;
  s.params = {param("A", {"1", "2"}, "2"), param("B", {"0", "1", "2"}, "2"),
              param("WAIT", {"active", "passive"}, "active", false)};
  Guide corun, spin;
  corun.id = "corun_oversubscription:a>b";
  corun.kind = "corun_oversubscription";
  corun.controls = {"A", "B"};
  corun.remedies = {{{"A", "1"}, {"B", "1"}}, {{"B", "0"}}};
  spin.id = "spin_interference:a>b";
  spin.kind = "spin_interference";
  spin.controls = {"WAIT"};
  spin.remedies = {{{"WAIT", "passive"}}};
  StrategyContext ctx;
  ctx.guides = {corun, spin};
  ctx.machine = four_cores();
  auto st = make_strategy("syspilot", s, ctx);
  TuneOptions o;
  o.budget = 12;
  o.max_repeats = 1;
  TuneResult r = tune(*st, obj, o);
  std::vector<Config> order;
  for (const auto& t : r.trials) order.push_back(t.config);
  auto at = [&](const Config& c) { return std::find(order.begin(), order.end(), c) - order.begin(); };
  Config both = {{"B", "0"}, {"WAIT", "passive"}};
  ASSERT_LT(at(both), static_cast<long>(order.size())) << "the union was never tried";
  // Right after the last of its halves (and of the seeds) was measured.
  long halves = std::max(at({{"B", "0"}}), at({{"WAIT", "passive"}}));
  ASSERT_LT(halves, static_cast<long>(order.size()));
  EXPECT_EQ(at(both), halves + 1);
  ASSERT_GE(r.best, 0);
  EXPECT_EQ(r.trials[r.best].config, both);
}

// Where the analysis derived hypotheses and confirmed none, the controls of the libraries no
// hypothesis involved come first, one value at a time from the incumbent, before any sampling;
// with no hypothesis at all, or with a guide, the search is as before.
TEST(TuneStrategy, ControlsNoHypothesisInvolvedAreScreenedFirstWhenNoneIsConfirmed) {
  // The application's own pool (JOBS) is what matters; the libraries' controls do not.
  struct OwnPool : Objective {
    Measurement evaluate(const Config& c) override {
      auto it = c.find("JOBS");
      Measurement m;
      m.ok = true;
      m.repeats = 1;
      m.value = it != c.end() && it->second == "1" ? 0.5 : it != c.end() && it->second == "8" ? 1.4 : 1.0;
      m.samples = {m.value};
      return m;
    }
  };
  Space s;
  s.params = {param("OMP_NUM_THREADS", {"1", "2", "4"}, "4"), param("OPENBLAS_NUM_THREADS", {"1", "2", "4"}, "4"),
              param("OMP_WAIT_POLICY", {"active", "passive"}, "active", false), param("JOBS", {"1", "4", "8"}, "4")};
  s.params[0].library = s.params[2].library = "libgomp";
  s.params[1].library = "openblas_pthread";
  s.params[3].library = "user";
  auto first_two = [&](const StrategyContext& ctx, std::uint64_t seed) {
    StrategyContext c = ctx;
    c.machine = four_cores();
    c.seed = seed;
    auto st = make_strategy("syspilot", s, c);
    OwnPool obj;
    TuneOptions o;
    o.budget = 3;  // the reference and two proposals
    o.max_repeats = 1;
    TuneResult r = tune(*st, obj, o);
    std::vector<Config> out;
    for (const auto& t : r.trials)
      if (!t.config.empty()) out.push_back(t.config);
    return out;
  };
  StrategyContext refuted;
  refuted.hypothesised = {"libgomp", "openblas_pthread"};
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    auto order = first_two(refuted, seed);
    ASSERT_EQ(order.size(), 2u);
    std::set<Config> got(order.begin(), order.end());
    EXPECT_EQ(got, (std::set<Config>{{{"JOBS", "1"}}, {{"JOBS", "8"}}})) << "seed " << seed;
  }
  // Without hypotheses the first proposals sample the whole space: some seed moves a library's
  // control first.
  bool other = false;
  for (std::uint64_t seed = 1; seed <= 5 && !other; ++seed)
    for (const auto& c : first_two(StrategyContext{}, seed)) other |= !(c.size() == 1 && c.count("JOBS"));
  EXPECT_TRUE(other) << "a search without hypotheses screened JOBS first on every seed";
  // With a confirmed hypothesis its guide leads.
  Guide g;
  g.id = "corun_oversubscription:libgomp>openblas_pthread";
  g.kind = "corun_oversubscription";
  g.controls = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"};
  g.remedies = {{{"OMP_NUM_THREADS", "1"}}};
  StrategyContext guided = refuted;
  guided.guides = {g};
  auto order = first_two(guided, 1);
  ASSERT_FALSE(order.empty());
  EXPECT_FALSE(order.front().count("JOBS")) << "a guided search screened JOBS before its guide";
  EXPECT_TRUE(order.front().count("OMP_NUM_THREADS") || order.front().count("OPENBLAS_NUM_THREADS"));
  // The screen moves from the incumbent: once JOBS=1 leads, the rest of JOBS is tried from there
  // and then the search goes on over the whole space.
  StrategyContext c = refuted;
  c.machine = four_cores();
  auto st = make_strategy("syspilot", s, c);
  OwnPool obj;
  TuneOptions o;
  o.budget = 8;
  o.max_repeats = 1;
  TuneResult r = tune(*st, obj, o);
  ASSERT_GE(r.best, 0);
  EXPECT_EQ(r.trials[r.best].config.at("JOBS"), "1");
  EXPECT_EQ(r.runs, 8);
}

TEST(TuneStrategy, BaselinesCoverTheSpaceAndRespectBudget) {
  Space s = landscape_space();
  StrategyContext ctx;
  ctx.seed = 3;
  for (const char* name : {"random", "grid"}) {
    auto st = make_strategy(name, s, ctx);
    Landscape obj(1);
    TuneOptions o;
    o.budget = 200;
    o.max_repeats = 1;
    TuneResult r = tune(*st, obj, o);
    std::set<Config> distinct;
    for (const auto& t : r.trials)
      if (t.m.repeats > 0) distinct.insert(t.config);
    EXPECT_EQ(distinct.size(), 33u) << name;  // 32 configurations + the default reference
    EXPECT_EQ(r.runs, obj.runs) << name;
    EXPECT_LE(r.runs, 200) << name;
  }
  auto st = make_strategy("random", s, ctx);
  Landscape obj(1);
  TuneOptions o;
  o.budget = 7;
  TuneResult r = tune(*st, obj, o);
  EXPECT_EQ(r.runs, 7);
  EXPECT_EQ(obj.runs, 7);
  EXPECT_THROW(make_strategy("simulated-annealing", s, ctx), std::invalid_argument);
}

TEST(TuneStrategy, AdaptiveRepeatsOnlyNearTheIncumbent) {
  // A landscape where one configuration is clearly worse: it must get a single run.
  Space s;
  s.params = {param("X", {"1", "2", "3"}, "1")};
  struct Obj : Objective {
    std::map<std::string, int> runs;
    Measurement evaluate(const Config& c) override {
      std::string x = c.count("X") ? c.at("X") : "1";
      ++runs[x];
      Measurement m;
      m.ok = true;
      m.repeats = 1;
      m.value = x == "3" ? 5.0 : x == "2" ? 0.99 : 1.0;
      m.samples = {m.value};
      return m;
    }
  } obj;
  auto st = make_strategy("grid", s, {});
  TuneOptions o;
  o.budget = 30;
  o.noise = 0.05;
  tune(*st, obj, o);
  EXPECT_EQ(obj.runs["3"], 1);
  EXPECT_EQ(obj.runs["2"], 3);  // within the noise of the incumbent: repeated to the cap
}

TEST(TuneOptuna, TpeAndCmaesProposeFromTheDomainsAndResume) {
  Space s = landscape_space();
  StrategyContext ctx;
  ctx.seed = 5;
  for (const char* name : {"optuna-tpe", "optuna-cmaes"}) {
    std::unique_ptr<Strategy> st;
    try {
      st = make_strategy(name, s, ctx);
    } catch (const std::runtime_error& e) {
      GTEST_SKIP() << "Optuna unavailable: " << e.what();
    }
    Landscape obj(2);
    TuneOptions o;
    o.budget = 12;
    o.max_repeats = 1;
    TuneResult r = tune(*st, obj, o);
    // CMA-ES may keep proposing measured points on so small a space; those cost nothing.
    EXPECT_LE(r.runs, 12) << name;
    EXPECT_GE(r.runs, 8) << name;
    for (const auto& t : r.trials)
      for (const auto& [k, v] : t.config) {
        const Param* p = s.find(k);
        ASSERT_NE(p, nullptr);
        EXPECT_NE(std::find(p->values.begin(), p->values.end(), v), p->values.end()) << k << "=" << v;
      }
    // A new bridge taught the finished trials continues from them.
    auto again = make_strategy(name, s, ctx);
    TuneOptions o2 = o;
    o2.budget = 16;
    o2.resumed = r.trials;
    Landscape obj2(3);
    TuneResult r2 = tune(*again, obj2, o2);
    EXPECT_EQ(obj2.runs, r2.runs - r.runs) << name;  // finished trials were not run again
    EXPECT_GT(obj2.runs, 0) << name;
    EXPECT_LE(r2.runs, 16) << name;
  }
}

TEST(TuneSession, TrialsSurviveReopenAndSpaceRoundTrips) {
  std::string dir = temp_dir("session");
  std::string db = dir + "/s.db";
  Space s = landscape_space();
  s.params[2].kind = Param::Kind::Option;
  s.params[2].carrier = "MALLOC_CONF";
  s.constraints = {"OUTER * INNER <= ncores"};
  std::int64_t id;
  {
    SessionStore st(db);
    SessionInfo i;
    i.argv = {"/bin/true", "a b"};
    i.strategy = "syspilot";
    i.budget = 12;
    i.seed = 9;
    i.space_json = space_to_json(s);
    i.guides_json = guides_to_json({nested_guide()});
    id = st.create(i);
    Trial t;
    t.index = 0;
    t.config = {{"OUTER", "2"}};
    t.m.ok = true;
    t.m.value = 1.5;
    t.m.samples = {1.4, 1.6};
    t.m.repeats = 2;
    t.m.spread = relative_spread(t.m.samples);
    t.strategy = "reference";
    st.add_trial(id, t);
    Trial f;
    f.index = 1;
    f.config = {{"OUTER", "3"}};
    f.m.failure = "signal 11 (SIGSEGV)";
    f.m.repeats = 1;
    st.add_trial(id, f);
  }
  SessionStore st(db);
  auto info = st.get(id);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->argv, (std::vector<std::string>{"/bin/true", "a b"}));
  EXPECT_EQ(info->seed, 9u);
  EXPECT_EQ(info->status, "running");
  Space back = space_from_json(info->space_json);
  ASSERT_EQ(back.params.size(), 3u);
  EXPECT_EQ(back.params[2].carrier, "MALLOC_CONF");
  EXPECT_EQ(back.constraints, s.constraints);
  auto gs = guides_from_json(info->guides_json);
  ASSERT_EQ(gs.size(), 1u);
  EXPECT_EQ(gs[0].constraint, nested_guide().constraint);
  auto trials = st.trials(id);
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[0].m.samples, (std::vector<double>{1.4, 1.6}));
  EXPECT_FALSE(trials[1].m.ok);
  EXPECT_EQ(trials[1].m.failure, "signal 11 (SIGSEGV)");
  st.finish(id, "finished");
  EXPECT_EQ(st.get(id)->status, "finished");
  EXPECT_FALSE(st.get(id + 100));
  EXPECT_THROW(space_from_json("{not json"), std::runtime_error);
  EXPECT_THROW(space_from_json(R"({"params":[{"name":"A","values":[]}]})"), std::runtime_error);

  // A file that is not a database is refused with a message naming it.
  std::ofstream(dir + "/junk.db") << std::string(4096, 'x');
  try {
    SessionStore bad(dir + "/junk.db");
    FAIL() << "opened a junk file";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("junk.db"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(TuneReport, MarkdownAndSvgShowEveryStrategyRun) {
  Space s = landscape_space();
  std::vector<ReportRun> runs;
  for (const char* name : {"syspilot", "random"}) {
    StrategyContext ctx;
    ctx.guides = {nested_guide()};
    ctx.machine = four_cores();
    auto st = make_strategy(name, s, ctx);
    Landscape obj(4);
    TuneOptions o;
    o.budget = 10;
    runs.push_back({name, tune(*st, obj, o)});
  }
  std::string dir = temp_dir("report");
  ReportInput in;
  in.argv = {"app", "x|y"};
  in.space = s;
  in.guides = {nested_guide()};
  in.runs = runs;
  std::string svg = write_report(dir + "/r.md", in);
  EXPECT_EQ(svg, dir + "/r.svg");
  std::ifstream m(dir + "/r.md"), v(svg);
  std::string md((std::istreambuf_iterator<char>(m)), {}), plot((std::istreambuf_iterator<char>(v)), {});
  EXPECT_NE(md.find("](r.svg)"), std::string::npos);
  EXPECT_NE(md.find("## Trials: random"), std::string::npos);
  EXPECT_NE(md.find("| syspilot | "), std::string::npos);
  EXPECT_NE(md.find("| random | "), std::string::npos);
  EXPECT_EQ(plot.rfind("<svg", 0), 0u);
  EXPECT_NE(plot.find(">syspilot</text>"), std::string::npos);
  EXPECT_NE(plot.find(">random</text>"), std::string::npos);
  EXPECT_EQ(std::count(plot.begin(), plot.end(), '<') , std::count(plot.begin(), plot.end(), '>'));
  std::filesystem::remove_all(dir);
}
