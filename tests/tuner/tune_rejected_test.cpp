// A setting the library says it rejected fails its trial with the library's words: libgomp's
// "Invalid value for environment variable", jemalloc's "Invalid conf value" for a MALLOC_CONF
// key; lines the default run prints too, lines without words of refusal and lines naming other
// controls do not. And introspection (debug, verbose, trace) knobs are never searched, and set
// while profiling only when a person reviewed the contract that declares them.
#include <gtest/gtest.h>

#include <filesystem>

#include "lpcl/lpcl.h"
#include "tuner/analyze.h"
#include "tuner/hypothesis.h"
#include "tuner/measure.h"
#include "tuner/rejected.h"
#include "tuner/space.h"

using namespace syspilot;
using namespace syspilot::tuner;

namespace {

std::string program(const std::string& name) { return std::string(SYSPILOT_TEST_PROGRAMS) + "/" + name; }
const char* kJemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

Param env_param(const std::string& name, std::vector<std::string> values) {
  Param p;
  p.name = name;
  p.values = std::move(values);
  p.library = "test";
  return p;
}

}  // namespace

TEST(Rejected, TheLineNamingTheControlWithWordsOfRefusal) {
  EXPECT_EQ(rejected_setting("\nlibgomp: Invalid value for environment variable OMP_NUM_THREADS\n",
                             {{"OMP_NUM_THREADS", "banana"}}),
            "libgomp: Invalid value for environment variable OMP_NUM_THREADS");
  EXPECT_EQ(rejected_setting("<jemalloc>: Invalid conf value: max_background_threads:true\n",
                             {{"opt.max_background_threads", "true"}}),
            "<jemalloc>: Invalid conf value: max_background_threads:true");
  EXPECT_EQ(rejected_setting("OMP: Warning #42: OMP_PROC_BIND: \"x\" is an invalid value; ignored.\r\n",
                             {{"OMP_PROC_BIND", "x"}}),
            "OMP: Warning #42: OMP_PROC_BIND: \"x\" is an invalid value; ignored.");
}

TEST(Rejected, OtherLinesAreNotBlamed) {
  const Config c = {{"OMP_NUM_THREADS", "2"}};
  // another control, a longer name, no refusal, the program's own output
  EXPECT_EQ(rejected_setting("libgomp: Invalid value for environment variable OMP_PROC_BIND\n", c), "");
  EXPECT_EQ(rejected_setting("Invalid value for MY_OMP_NUM_THREADS_X\n", c), "");
  EXPECT_EQ(rejected_setting("OMP_NUM_THREADS = '2'\n", c), "");
  // printed by the default run as well: not the setting's doing
  const std::string both = "warning: unknown option OMP_NUM_THREADS in config file\n";
  EXPECT_EQ(rejected_setting(both, c, both), "");
  EXPECT_NE(rejected_setting(both, c, "something else\n"), "");
  EXPECT_EQ(rejected_setting("", c), "");
  EXPECT_EQ(rejected_setting("libgomp: Invalid value for environment variable OMP_NUM_THREADS\n", {}), "");
  // a huge line is not read
  EXPECT_EQ(rejected_setting("invalid OMP_NUM_THREADS " + std::string(5000, 'x') + "\n", c), "");
}

// Real runs: libgomp refuses OMP_NUM_THREADS=banana and the trial fails with its message; a
// value it accepts measures as usual.
TEST(Rejected, LibgompRefusalFailsTheTrial) {
  Space space;
  space.params.push_back(env_param("OMP_NUM_THREADS", {"1", "banana"}));
  ObjectiveSpec spec;
  spec.argv = {program("omp_loop"), "20", "1000"};
  spec.timeout_s = 30;
  LiveObjective obj(space, spec);
  Measurement d = obj.evaluate({});
  ASSERT_TRUE(d.failure.empty()) << d.failure;
  Measurement bad = obj.evaluate({{"OMP_NUM_THREADS", "banana"}});
  EXPECT_NE(bad.failure.find("rejected a setting: libgomp: Invalid value for environment variable OMP_NUM_THREADS"),
            std::string::npos)
      << bad.failure;
  Measurement good = obj.evaluate({{"OMP_NUM_THREADS", "1"}});
  EXPECT_TRUE(good.failure.empty()) << good.failure;
}

// jemalloc preloaded: max_background_threads takes a number; "true" is refused with a warning
// on stderr, the process still exits 0, and the trial fails.
TEST(Rejected, JemallocConfRefusalFailsTheTrial) {
  if (!std::filesystem::exists(kJemalloc)) GTEST_SKIP() << "no " << kJemalloc;
  Space space;
  Param p = env_param("max_background_threads", {"1", "true"});
  p.kind = Param::Kind::Option;
  p.carrier = "MALLOC_CONF";
  p.item_sep = ",";
  p.kv_sep = ":";
  space.params.push_back(p);
  ObjectiveSpec spec;
  spec.argv = {"/bin/ls", "/"};
  spec.env = {{"LD_PRELOAD", kJemalloc}};
  spec.timeout_s = 30;
  LiveObjective obj(space, spec);
  ASSERT_TRUE(obj.evaluate({}).failure.empty());
  Measurement bad = obj.evaluate({{"max_background_threads", "true"}});
  EXPECT_NE(bad.failure.find("Invalid conf value: max_background_threads:true"), std::string::npos) << bad.failure;
  EXPECT_TRUE(obj.evaluate({{"max_background_threads", "1"}}).failure.empty());
}

// ---- Introspection knobs ----------------------------------------------------------------------

namespace {

lpcl::Contract parse_contract(const std::string& text) {
  Diagnostics d;
  lpcl::Document doc = lpcl::parse(text, "t.lpcl", d);
  EXPECT_FALSE(d.has_errors()) << d.str();
  return doc.contracts.at(0);
}

// A draft: a thread count, and a debug switch it declares as introspection.
const char* kDraft = R"(contract dbg "1" {
  binds soname "libdbg.so.1";
  control DBG_NUM_THREADS : env int in [1, ncpus] read_at init sets cpu.threads;
  control DBG_DEBUG : env int in [0, 1] read_at init;
  signal introspect env DBG_DEBUG = 1;
})";

}  // namespace

// Neither --space all nor a hypothesis naming it puts an introspection knob in the space; a
// note says so; --pin still does.
TEST(Introspection, KnobsAreNeverSearchedUnlessPinned) {
  lpcl::Contract c = parse_contract(kDraft);
  Guide g;
  g.id = "h";
  g.controls = {"DBG_NUM_THREADS", "DBG_DEBUG"};
  MachineFacts m = MachineFacts::detect();
  for (SpaceScope scope : {SpaceScope::All, SpaceScope::Hypotheses}) {
    Diagnostics d;
    Space s = build_space({c}, {g}, scope, {}, m, d);
    EXPECT_NE(s.find("DBG_NUM_THREADS"), nullptr);
    EXPECT_EQ(s.find("DBG_DEBUG"), nullptr);
    EXPECT_NE(d.str().find("not searched: DBG_DEBUG (introspection"), std::string::npos) << d.str();
  }
  SpaceEdits e;
  e.pin["DBG_DEBUG"] = "1";
  Diagnostics d;
  Space pinned = build_space({c}, {g}, SpaceScope::All, e, m, d);
  ASSERT_NE(pinned.find("DBG_DEBUG"), nullptr);
  EXPECT_EQ(pinned.find("DBG_DEBUG")->values, std::vector<std::string>{"1"});
}

// Profiling switches on the introspection knobs of reviewed contracts only: a draft's debug
// switch stays off.
TEST(Introspection, ProfilingSetsOnlyReviewedContractsKnobs) {
  Composition comp;
  comp.contracts.push_back({parse_contract(kDraft), "synthesized", "libdbg.so.1", {"libdbg.so.1"}});
  RunSpec run;
  run.argv = {"/bin/true"};
  EXPECT_EQ(profile_spec(comp, run).env_set.count("DBG_DEBUG"), 0u);
  comp.contracts.front().source = "store";
  comp.contracts.front().path = "s.db#dbg@1 revision 1, unreviewed draft";
  EXPECT_EQ(profile_spec(comp, run).env_set.count("DBG_DEBUG"), 0u);
  comp.contracts.front().path = "s.db#dbg@1 revision 2, reviewed";
  EXPECT_EQ(profile_spec(comp, run).env_set.at("DBG_DEBUG"), "1");
  comp.contracts.front().source = "corpus";
  EXPECT_EQ(profile_spec(comp, run).env_set.at("DBG_DEBUG"), "1");
}

// ---- Queries --------------------------------------------------------------------------------

// A stored contract drafted before the checker warned of queries may still say that
// omp_get_num_threads sets cpu.threads: hypotheses never name it, the space never holds it.
TEST(Queries, AreNeverNamedNorSearched) {
  lpcl::Contract c = parse_contract(R"(contract rt "1" {
  binds soname "librt-omp.so.1";
  control omp_get_num_threads : api() int read_at call sets cpu.threads;
  control omp_get_max_threads : api() int read_at call sets cpu.threads;
  control RT_NUM_THREADS : env int in [1, ncpus] read_at init sets cpu.threads;
  control omp_set_num_threads : api(int n) int in [1, ncpus] read_at call sets cpu.threads;
})");
  EXPECT_EQ(rules::controls_for(c, "cpu.threads"), (std::vector<std::string>{"RT_NUM_THREADS", "omp_set_num_threads"}));
  Guide g;
  g.id = "h";
  g.controls = {"omp_get_num_threads", "RT_NUM_THREADS"};
  MachineFacts m = MachineFacts::detect();
  for (SpaceScope scope : {SpaceScope::All, SpaceScope::Hypotheses}) {
    Diagnostics d;
    Space s = build_space({c}, {g}, scope, {}, m, d);
    EXPECT_NE(s.find("RT_NUM_THREADS"), nullptr);
    EXPECT_EQ(s.find("omp_get_num_threads"), nullptr);
    EXPECT_EQ(s.find("omp_get_max_threads"), nullptr);
    EXPECT_NE(d.str().find("not searched: omp_get_num_threads"), std::string::npos) << d.str();
  }
}
