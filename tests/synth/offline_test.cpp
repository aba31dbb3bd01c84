// The offline drafter, answer extraction, the validators' repairs and prompt rendering.
#include <gtest/gtest.h>

#include <thread>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "extract/scanners.h"
#include "lpcl/lpcl.h"
#include "synth/prompt.h"
#include "synth/rules.h"
#include "synth/synth.h"
#include "tests/synth/fixture.h"

namespace syspilot::synth {
namespace {

SynthOptions offline_options(const std::string& library = "openblas", const std::string& version = "0.3.21") {
  SynthOptions o;
  o.library = library;
  o.version = version;
  return o;
}

TEST(OfflineDrafter, WritesACheckedGroundedContract) {
  auto r = synthesize(testing::openblas_facts(), offline_options());
  EXPECT_TRUE(r.converged) << r.open.str() << "\n" << r.text;
  EXPECT_EQ(r.drafter, "offline");
  EXPECT_TRUE(r.prompt_id.empty());
  ASSERT_EQ(r.rounds.size(), 1u);
  EXPECT_TRUE(r.rounds[0].repairs.empty()) << r.rounds[0].repairs.front();
  const auto& c = r.contract;
  auto* n = c.find_control("OPENBLAS_NUM_THREADS");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->type.kind, lpcl::Type::Kind::Int);
  EXPECT_EQ(n->domain.kind, lpcl::Domain::Kind::Range);
  EXPECT_EQ(n->prov.origin, lpcl::Origin::Extracted);
  ASSERT_FALSE(n->prov.refs.empty());
  EXPECT_EQ(n->prov.refs[0], "driver/others/openblas_env.c:52");
  EXPECT_EQ(c.find_control("GOTO_NUM_THREADS")->fallback_for, "OPENBLAS_NUM_THREADS");
  EXPECT_EQ(c.find_control("OMP_NUM_THREADS")->fallback_for, "GOTO_NUM_THREADS");
  auto* t = c.find_control("OPENBLAS_THREAD_TIMEOUT");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->sets, std::vector<std::string>{"cpu.spin"});
  ASSERT_TRUE(t->default_value);
  EXPECT_EQ(lpcl::format(*t->default_value), "28");
  auto* api = c.find_control("openblas_set_num_threads");
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->how.kind, lpcl::ControlKind::Kind::Api);
  EXPECT_EQ(api->how.params, "int num_threads");
  EXPECT_EQ(c.find_control("HOME"), nullptr);  // read, but nobody's knob
  ASSERT_EQ(c.demands.size(), 1u);
  EXPECT_EQ(lpcl::format(c.demands[0].value), "OPENBLAS_NUM_THREADS ?? GOTO_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus");
  EXPECT_NE(r.text.find("assume exclusive(cpu.cores)"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("behavior creates_pool"), std::string::npos);
  EXPECT_NE(r.text.find("behavior spin_wait idle_timeout OPENBLAS_THREAD_TIMEOUT"), std::string::npos);
  EXPECT_NE(r.text.find("signal introspect env OPENBLAS_VERBOSE = 1"), std::string::npos);
  EXPECT_NE(r.text.find("binds soname \"libopenblas.so.0\""), std::string::npos);
  EXPECT_NE(r.text.find("binds header \"cblas.h\""), std::string::npos);
  EXPECT_NE(r.text.find("origin extracted;"), std::string::npos);
  EXPECT_EQ(r.text.find("llm"), std::string::npos);  // never presented as a model's work
}

TEST(OfflineDrafter, IsDeterministic) {
  auto f = testing::openblas_facts();
  auto a = synthesize(f, offline_options());
  std::reverse(f.env_vars.begin(), f.env_vars.end());
  auto b = synthesize(f, offline_options());
  EXPECT_EQ(a.text, b.text);
}

TEST(OfflineDrafter, ZeroDefaultOfAThreadCountIsTheUnsetSentinel) {
  auto f = testing::openblas_facts();
  f.env_vars[1].default_value = "0";  // OPENBLAS_NUM_THREADS
  auto c = draft_offline(f, offline_options());
  EXPECT_FALSE(c.find_control("OPENBLAS_NUM_THREADS")->default_value.has_value());
}

// A package's name that LPCL cannot read as an identifier is written as one, so the contract
// parses back under that name.
TEST(OfflineDrafter, APackageNameIsWrittenAsAnIdentifier) {
  for (auto [library, written] : std::vector<std::pair<std::string, std::string>>{
           {"c-blosc", "c_blosc"}, {"gstreamer1.0", "gstreamer1_0"}, {"9lib", "_9lib"}, {"x+y", "x_y"}}) {
    auto r = synthesize(testing::openblas_facts(), offline_options(library, "1.0"));
    EXPECT_EQ(r.contract.name, written) << library;
    Diagnostics d;
    auto parsed = lpcl::parse(r.text, "drafted.lpcl", d);
    EXPECT_FALSE(d.has_errors()) << library << ": " << d.str();
    ASSERT_EQ(parsed.contracts.size(), 1u) << library;
    EXPECT_EQ(parsed.contracts[0].name, written);
  }
}

// Nothing to draft from is no contract at all (it used to be an empty "converged" one).
TEST(OfflineDrafter, EmptyFactsAreRefused) {
  extract::Facts f;
  EXPECT_THROW(synthesize(f, offline_options()), EmptyFacts);
}

extract::DocMention mention(std::string name, std::string sentence, std::string file, int line) {
  return {std::move(name), std::move(sentence), std::move(file), line, "markdown"};
}

// What prose says is not what the code reads: make variables, function names and words in the
// documentation, and change logs, never become environment controls or control docs.
TEST(OfflineDrafter, EnvironmentControlsOnlyFromReadsNotFromProse) {
  extract::Facts f;
  f.library = "fixlib";
  f.env_vars.push_back({"FIXLIB_NUM_THREADS", "src/env.c", 40, "init", "int", "", "readenv", "c"});
  f.doc_mentions = {
      mention("NUM_THREADS", "Please build fixlib with larger NUM_THREADS.", "USAGE.md", 10),
      mention("MAX_THREADS", "make MAX_THREADS=64 raises the limit.", "README.md", 11),
      mention("NO_AFFINITY", "Disable affinity with NO_AFFINITY=1 in Makefile.rule.", "USAGE.md", 12),
      mention("THREAD_TIMEOUT", "Compile with THREAD_TIMEOUT=28 to change the default.", "README.md", 13),
      mention("USE_THREAD", "if (USE_THREAD) set(SMP_SOURCES x.c) endif()", "CMakeLists.txt", 3),
      mention("fixlib_set_num_threads", "Call fixlib_set_num_threads(int n) at run time.", "README.md", 20),
      mention("set_affinity", "The pool calls set_affinity for each worker.", "README.md", 21),
      mention("pthread_setaffinity_np", "Workers are pinned with pthread_setaffinity_np.", "README.md", 22),
      mention("FIXLIB_NUM_THREADS", "0.3.1: FIXLIB_NUM_THREADS was renamed, fixing a crash.", "Changelog.txt", 5),
      mention("FIXLIB_NUM_THREADS", "Set the environment variable FIXLIB_NUM_THREADS to the number of threads.", "README.md", 30),
      mention("FIXLIB_SPIN_COUNT", "export FIXLIB_SPIN_COUNT=1000 makes idle workers spin longer.", "README.md", 31),
      mention("FIXLIB_ARENA_FLAG", "FIXLIB_ARENA_FLAG( a )", "manual.md", 32),
      // Beside the library's own reads: another runtime's variable in its FAQ, and an own name
      // the prose gives a value without saying it is read from the environment.
      mention("OMP_PLACES", "Setting the environment variable OMP_PLACES=cores may help.", "FAQ.md", 40),
      mention("FIXLIB_THREADS_MAX", "FIXLIB_THREADS_MAX=64 raises the limit.", "README.md", 41),
  };
  // The benchmark's own read is not the library's.
  f.env_vars.push_back({"FIXLIB_ORDER_THREADS", "benchmark/gemm.c", 12, "main", "int", "", "getenv", "c"});
  SynthOptions o;
  o.library = "fixlib";
  o.version = "1";
  auto c = draft_offline(f, o);
  for (const char* bad : {"NUM_THREADS", "MAX_THREADS", "NO_AFFINITY", "THREAD_TIMEOUT", "USE_THREAD",
                          "fixlib_set_num_threads", "set_affinity", "pthread_setaffinity_np", "FIXLIB_ARENA_FLAG",
                          "OMP_PLACES", "FIXLIB_THREADS_MAX", "FIXLIB_ORDER_THREADS"})
    EXPECT_EQ(c.find_control(bad), nullptr) << bad << " is no control of the running library";
  auto* n = c.find_control("FIXLIB_NUM_THREADS");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->how.kind, lpcl::ControlKind::Kind::Env);
  EXPECT_EQ(n->prov.refs, std::vector<std::string>{"src/env.c:40"});
  EXPECT_EQ(n->doc, "Set the environment variable FIXLIB_NUM_THREADS to the number of threads.");  // not the change log
  auto* spin = c.find_control("FIXLIB_SPIN_COUNT");  // documented as set in the environment
  ASSERT_NE(spin, nullptr);
  EXPECT_EQ(spin->sets, std::vector<std::string>{"cpu.spin"});
  ASSERT_EQ(c.demands.size(), 1u);
  EXPECT_EQ(lpcl::format(c.demands[0].value), "FIXLIB_NUM_THREADS ?? ncpus");

  // With no code read at all (documentation inputs only), the documented variable is the evidence.
  extract::Facts docs_only;
  docs_only.library = "fixlib";
  docs_only.doc_mentions = {mention("OMP_PLACES", "Setting the environment variable OMP_PLACES=cores may help.", "FAQ.md", 40)};
  EXPECT_NE(draft_offline(docs_only, o).find_control("OMP_PLACES"), nullptr);

  // A declared setter is an API control; the same name in prose alone was not.
  f.api_controls.push_back({"fixlib_set_num_threads", "void fixlib_set_num_threads(int n)", "threads", "fixlib.h", 7, ""});
  c = draft_offline(f, o);
  auto* api = c.find_control("fixlib_set_num_threads");
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->how.kind, lpcl::ControlKind::Kind::Api);
  EXPECT_EQ(api->how.params, "int n");
}

// Documentation alone (no code at hand): the clause after "NAME:" gives a control its range or
// its values and its default; a default stated for a neighbour in the same sentence is not
// taken; threads the clause puts on a GPU are no CPU threads; the pool demand ends in the last
// control's stated default instead of the whole machine.
TEST(OfflineDrafter, TheClauseAfterANameGivesItsRangeValuesAndDefault) {
  extract::Facts f;
  f.library = "gpx";
  f.binaries.push_back({"/usr/lib/libgpx.so.2", "libgpx.so.2", {}, {}, {}, {}});
  f.doc_mentions = {
      mention("GPX_SOCKET_NTHREADS",
              "## CPU-side threads - GPX_SOCKET_NTHREADS: 1 to 16 (default 2; 4 on big nodes); the number of CPU "
              "helper threads per network connection.",
              "gpx.md", 11),
      mention("GPX_NSOCKS_PERTHREAD",
              "- GPX_NSOCKS_PERTHREAD: the number of sockets each helper thread opens (default 3); "
              "GPX_SOCKET_NTHREADS times GPX_NSOCKS_PERTHREAD must not exceed 64.",
              "gpx.md", 12),
      mention("GPX_SOCKET_NTHREADS",
              "- GPX_NSOCKS_PERTHREAD: the number of sockets each helper thread opens (default 3); "
              "GPX_SOCKET_NTHREADS times GPX_NSOCKS_PERTHREAD must not exceed 64.",
              "gpx.md", 12),
      mention("GPX_NTHREADS",
              "## GPU-side resources - GPX_NTHREADS: 64, 128, 256 or 512; the number of CUDA threads per CUDA "
              "block GPX launches (GPU threads, not CPU threads; default 512 on recent GPUs).",
              "gpx.md", 16),
  };
  SynthOptions o;
  o.library = "gpx";
  o.version = "2";
  auto c = draft_offline(f, o);
  const std::string text = lpcl::format(c);
  auto* cpu = c.find_control("GPX_SOCKET_NTHREADS");
  ASSERT_NE(cpu, nullptr) << text;
  EXPECT_EQ(cpu->domain.kind, lpcl::Domain::Kind::Range) << text;
  ASSERT_TRUE(cpu->domain.lo && cpu->domain.hi) << text;
  EXPECT_EQ(lpcl::format(*cpu->domain.lo) + ".." + lpcl::format(*cpu->domain.hi), "1..16") << text;
  ASSERT_TRUE(cpu->default_value) << text;
  EXPECT_EQ(lpcl::format(*cpu->default_value), "2") << "the neighbour's default 3 is not this control's\n" << text;
  EXPECT_EQ(cpu->sets, std::vector<std::string>{"cpu.threads"}) << text;
  auto* gpu = c.find_control("GPX_NTHREADS");
  ASSERT_NE(gpu, nullptr) << text;
  EXPECT_EQ(gpu->domain.kind, lpcl::Domain::Kind::Set) << text;
  std::vector<std::string> values;
  for (auto& v : gpu->domain.values) values.push_back(lpcl::format(v));
  EXPECT_EQ(values, (std::vector<std::string>{"64", "128", "256", "512"})) << text;
  ASSERT_TRUE(gpu->default_value) << text;
  EXPECT_EQ(lpcl::format(*gpu->default_value), "512") << text;
  EXPECT_TRUE(gpu->sets.empty()) << "CUDA threads per block are no CPU threads\n" << text;
  EXPECT_TRUE(gpu->fallback_for.empty()) << text;
  ASSERT_EQ(c.demands.size(), 1u) << text;
  EXPECT_EQ(c.demands[0].resource, "cpu.threads");
  EXPECT_EQ(lpcl::format(c.demands[0].value), "GPX_SOCKET_NTHREADS ?? 2") << text;
}

// What the documentation states around a name: defaults in sentences that speak of it, the end
// of a fallback chain, a call's documented default (and its variant's for another precision),
// a switch with more values.
TEST(OfflineDrafter, DefaultsAndValuesTheDocumentationStatesAroundTheName) {
  extract::Facts f;
  f.library = "fixlib";
  f.binaries.push_back({"/usr/lib/libfixlib.so.1", "libfixlib.so.1", {}, {"pthread_create"}, {},
                        {"FIXLIB_NUM_THREADS", "OMP_NUM_THREADS", "FIXLIB_A_NT", "FIXLIB_B_NT", "FIXLIB_PROC_BIND"}});
  const std::string md =
      "If `FIXLIB_NUM_THREADS` is not set, fixlib reads `OMP_NUM_THREADS`. If neither variable is set, the "
      "default number of threads is 1.\n\n"
      "The team is `FIXLIB_A_NT * FIXLIB_B_NT` threads.\nNote that any of these loop variables that is unset "
      "will default to 1.\n\n"
      "You can call `fix_plan_with_nthreads` again before planning. If you pass an nthreads argument of 1 (the "
      "default), plans run in the caller.\n";
  f.doc_mentions = extract::docs::scan_doc("threads.md", md, "markdown");
  f.doc_mentions.push_back(mention("FIXLIB_PROC_BIND",
                                   "FIXLIB_PROC_BIND: Default: false Acceptable values: true, false, or a comma separated "
                                   "list, each element of which is one of the following values: near, far, or spread.",
                                   "env.rst", 40));
  for (const char* n : {"fix_plan_with_nthreads", "fixf_plan_with_nthreads"}) {
    extract::ApiControl a;
    a.name = n;
    a.signature = std::string("void ") + n + "(int nthreads)";
    a.category = "threads";
    a.file = "fix.h";
    a.line = 10;
    f.api_controls.push_back(a);
  }
  auto c = draft_offline(f, offline_options("fixlib", "1"));
  const std::string text = lpcl::format(c);
  ASSERT_EQ(c.demands.size(), 1u) << text;
  EXPECT_EQ(lpcl::format(c.demands[0].value), "FIXLIB_NUM_THREADS ?? OMP_NUM_THREADS ?? 1") << text;
  auto* head = c.find_control("FIXLIB_NUM_THREADS");
  ASSERT_NE(head, nullptr) << text;
  EXPECT_FALSE(head->default_value) << "what holds when none is set is the chain's, not one variable's\n" << text;
  for (const char* n : {"FIXLIB_A_NT", "FIXLIB_B_NT", "fix_plan_with_nthreads", "fixf_plan_with_nthreads"}) {
    auto* ctl = c.find_control(n);
    ASSERT_NE(ctl, nullptr) << n << "\n" << text;
    ASSERT_TRUE(ctl->default_value) << n << "\n" << text;
    EXPECT_EQ(lpcl::format(*ctl->default_value), "1") << n << "\n" << text;
  }
  auto* bind = c.find_control("FIXLIB_PROC_BIND");
  ASSERT_NE(bind, nullptr) << text;
  EXPECT_EQ(bind->type.kind, lpcl::Type::Kind::Enum) << text;
  EXPECT_EQ(bind->type.enumerators, (std::vector<std::string>{"false", "true", "near", "far", "spread"})) << text;
  ASSERT_TRUE(bind->default_value) << text;
  EXPECT_EQ(lpcl::format(*bind->default_value), "false") << text;
}

// A carrier's key as its reference entry declares it: the type in parentheses, a count of
// threads in [1, ncpus], a switch's "enabled/disabled by default", a stated number.
TEST(OfflineDrafter, CarrierKeysTakeTheTypeAndDefaultTheirEntryStates) {
  extract::Facts f;
  f.library = "jemalloc";
  const std::string xml =
      "<varlistentry><term><mallctl>opt.background_thread</mallctl> (<type>bool</type>)</term>\n"
      "<listitem><para>Internal background worker threads enabled/disabled. See <mallctl>opt.tcache</mallctl>\n"
      "for related options. This option is disabled by default.</para></listitem></varlistentry>\n\n"
      "<varlistentry><term><mallctl>opt.tcache</mallctl> (<type>bool</type>)</term>\n"
      "<listitem><para>Thread-specific caching (tcache) enabled/disabled. This option is enabled by\n"
      "default.</para></listitem></varlistentry>\n\n"
      "<varlistentry><term><mallctl>opt.max_background_threads</mallctl> (<type>size_t</type>)</term>\n"
      "<listitem><para>Maximum number of background threads that will be created.</para></listitem></varlistentry>\n";
  f.doc_mentions = extract::docs::scan_doc("jemalloc.xml.in", xml, "html");
  auto c = draft_offline(f, offline_options("jemalloc", "5"));
  const std::string text = lpcl::format(c);
  auto* bg = c.find_control("background_thread");
  ASSERT_NE(bg, nullptr) << text;
  EXPECT_EQ(bg->how.kind, lpcl::ControlKind::Kind::Option) << text;
  EXPECT_EQ(bg->type.kind, lpcl::Type::Kind::Bool) << text;
  ASSERT_TRUE(bg->default_value) << text;
  EXPECT_EQ(lpcl::format(*bg->default_value), "false") << "this option is the entry's, not opt.tcache's\n" << text;
  auto* tc = c.find_control("tcache");
  ASSERT_NE(tc, nullptr) << text;
  EXPECT_EQ(tc->type.kind, lpcl::Type::Kind::Bool) << text;
  ASSERT_TRUE(tc->default_value) << text;
  EXPECT_EQ(lpcl::format(*tc->default_value), "true") << text;
  auto* mx = c.find_control("max_background_threads");
  ASSERT_NE(mx, nullptr) << text;
  EXPECT_EQ(mx->type.kind, lpcl::Type::Kind::Int) << text;
  ASSERT_EQ(mx->domain.kind, lpcl::Domain::Kind::Range) << text;
  EXPECT_EQ(lpcl::format(*mx->domain.lo) + ".." + lpcl::format(*mx->domain.hi), "1..ncpus") << text;
  EXPECT_FALSE(mx->default_value) << text;
}

// Prose names other libraries' variables too: beside the library's own code, it speaks only for
// the library's own names, also where that code reads no variable but starts the threads.
TEST(OfflineDrafter, CodeThatStartsThreadsIsCodeAtHandForProse) {
  extract::Facts f;
  f.library = "fixlib";
  f.doc_mentions.push_back(mention("OMP_NUM_THREADS",
                                   "To use the threads of an OpenMP program (set by the OMP_NUM_THREADS environment "
                                   "variable), pass omp_get_max_threads() to fix_plan_with_nthreads.",
                                   "threads.texi", 130));
  const SynthOptions o = offline_options("fixlib", "1");
  {
    auto c = draft_offline(f, o);
    EXPECT_NE(c.find_control("OMP_NUM_THREADS"), nullptr) << "no code at hand: the documentation speaks\n"
                                                          << lpcl::format(c);
  }
  f.threading.push_back({"thread_create", "pthread_create", "threads/threads.c", 144, "os_create_thread"});
  auto c = draft_offline(f, o);
  EXPECT_EQ(c.find_control("OMP_NUM_THREADS"), nullptr) << lpcl::format(c);
}

// Keys of carrier variables named in the documentation become option controls.
TEST(OfflineDrafter, CarrierKeysFromTheDocumentationBecomeOptionControls) {
  extract::Facts f;
  f.library = "alloc";
  f.doc_mentions = {
      mention("opt.narenas", "opt.narenas (unsigned) Maximum number of arenas to use.", "alloc.xml.in", 900),
      mention("opt.background_thread", "opt.background_thread (bool) Enable background worker threads.", "alloc.xml.in", 950),
      mention("opt.abort", "opt.abort (bool) Abort on warnings.", "alloc.xml.in", 960),
      mention("glibc.malloc.arena_max", "glibc.malloc.arena_max: 0x0 (min: 0x1, max: 0xffffffff)", "tunables.txt", 3),
  };
  f.binaries.push_back({"/usr/lib/liballoc.so.2", "liballoc.so.2", {}, {}, {}, {"MALLOC_CONF"}});
  SynthOptions o;
  o.library = "alloc";
  auto r = synthesize(f, o);
  EXPECT_TRUE(r.converged) << r.open.str() << "\n" << r.text;
  auto* n = r.contract.find_control("narenas");
  ASSERT_NE(n, nullptr) << r.text;
  EXPECT_EQ(n->how.kind, lpcl::ControlKind::Kind::Option);
  EXPECT_EQ(n->how.carrier, "MALLOC_CONF");
  EXPECT_EQ(n->sets, std::vector<std::string>{"mem.arenas"});
  EXPECT_EQ(n->prov.refs, std::vector<std::string>{"alloc.xml.in:900"});
  ASSERT_NE(r.contract.find_control("background_thread"), nullptr);
  EXPECT_EQ(r.contract.find_control("abort"), nullptr);  // a key, but no resource knob
  auto* t = r.contract.find_control("glibc.malloc.arena_max");
  ASSERT_NE(t, nullptr) << r.text;
  EXPECT_EQ(t->how.carrier, "GLIBC_TUNABLES");
  EXPECT_EQ(t->how.item_sep, ":");
  EXPECT_EQ(t->how.kv_sep, "=");
  EXPECT_EQ(r.contract.find_control("opt.narenas"), nullptr);
}

TEST(KnobRules, ClassifyByName) {
  EXPECT_EQ(classify_knob("GOMP_SPINCOUNT")->role, "spin");
  EXPECT_EQ(classify_knob("OPENBLAS_THREAD_TIMEOUT")->role, "spin");
  EXPECT_EQ(classify_knob("OMP_WAIT_POLICY")->resource, "cpu.spin");
  EXPECT_EQ(classify_knob("KMP_AFFINITY")->resource, "cpu.cores");
  EXPECT_EQ(classify_knob("BLIS_JC_NT")->role, "threads");
  EXPECT_EQ(classify_knob("MALLOC_ARENA_MAX")->resource, "mem.arenas");
  EXPECT_EQ(classify_knob("CUDA_VISIBLE_DEVICES")->resource, "gpu.device");
  EXPECT_EQ(classify_knob("CUDA_DEVICE_MAX_CONNECTIONS")->resource, "gpu.streams");
  EXPECT_EQ(classify_knob("OMP_MAX_ACTIVE_LEVELS")->role, "nesting");
  EXPECT_EQ(classify_knob("do_something", "threads")->resource, "cpu.threads");
  EXPECT_FALSE(classify_knob("HOME").has_value());
  EXPECT_FALSE(classify_knob("OPENBLAS_CORETYPE").has_value());
}

// A name of tens of thousands of characters (a hostile header's, or a model's draft) is judged
// by its category alone, on a thread with an ordinary stack, as a job thread of the service
// is: the naming rules' regular expressions would recurse once per character.
TEST(KnobRules, AHugeNameIsJudgedByItsCategory) {
  const std::string huge = std::string(60000, 'A') + "_B_NT";
  std::optional<KnobRole> threads, none;
  std::thread([&] {
    threads = classify_knob(huge, "threads");
    none = classify_knob(huge);
  }).join();
  ASSERT_TRUE(threads.has_value());
  EXPECT_EQ(threads->resource, "cpu.threads");
  EXPECT_FALSE(none.has_value());
  EXPECT_EQ(classify_knob("LIB_B_NT")->role, "threads");  // the same shape, of a knob's length
}

TEST(ExtractLpcl, EveryAnswerShape) {
  const std::string c = testing::kGoodDraft;
  auto ok = [&](const std::string& answer) {
    Diagnostics d;
    std::string got = extract_lpcl(answer, d);
    EXPECT_FALSE(d.has_errors()) << d.str();
    EXPECT_EQ(got.substr(0, 17), "contract openblas") << answer;
    Diagnostics pd;
    auto doc = lpcl::parse(got, "x", pd);
    EXPECT_FALSE(pd.has_errors()) << pd.str() << "\n" << got;
    return doc.contracts.size();
  };
  EXPECT_EQ(ok(c), 1u);
  EXPECT_EQ(ok("```lpcl\n" + c + "```"), 1u);
  EXPECT_EQ(ok("Here you go.\n```\n" + c + "```\nDone."), 1u);
  EXPECT_EQ(ok("I wrote this:\n" + c + "\nHope it helps {really}."), 1u);
  nlohmann::json j = {{"lpcl", c}};
  EXPECT_EQ(ok(j.dump()), 1u);
  EXPECT_EQ(ok("```json\n" + j.dump(2) + "\n```"), 1u);
  EXPECT_EQ(ok("Result: " + j.dump() + " -- end"), 1u);
  // LPCL-JSON: the machine form of the same contract.
  Diagnostics d;
  auto doc = lpcl::parse(c, "x", d);
  ASSERT_FALSE(d.has_errors());
  EXPECT_EQ(ok(lpcl::to_json(doc.contracts[0]).dump()), 1u);
  // A brace inside a string does not end the contract early.
  std::string tricky = "contract x \"1\" {\n  doc \"uses } and { freely\";\n}\ntrailing words";
  Diagnostics td;
  EXPECT_EQ(extract_lpcl(tricky, td), tricky.substr(0, tricky.find("trailing")));
}

TEST(ExtractLpcl, NoContractIsAClearError) {
  for (std::string a : {"", "   \n", "I cannot help with that.", "{\"answer\": 42}", "```python\nprint(1)\n```"}) {
    Diagnostics d;
    EXPECT_EQ(extract_lpcl(a, d), "");
    ASSERT_TRUE(d.has_errors()) << a;
    EXPECT_EQ(d.items()[0].code, "no-lpcl");
    EXPECT_FALSE(d.items()[0].hint.empty());
  }
}

// A model's answer may invent controls by the tens of thousands: the repair drops every one
// of them, and what speaks of them (a fallback, a demand's chain), in one pass, keeping what
// the facts ground.
TEST(Validate, ThousandsOfInventedControlsAreDroppedTogether) {
  std::string text = "contract openblas \"0.3.21\" {\n  binds soname \"libopenblas.so.0\";\n"
                     "  control OPENBLAS_NUM_THREADS : env int in [1, ncpus] read_at init sets cpu.threads\n"
                     "      @ \"driver/others/openblas_env.c:52\";\n";
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    text += "  control FOO_" + std::to_string(i) + " : env int in [1, ncpus] sets cpu.threads @ \"a.c:1\";\n";
  text += "  control GOTO_NUM_THREADS : env int in [1, ncpus] fallback_for FOO_7 sets cpu.threads\n"
          "      @ \"driver/others/openblas_env.c:55\";\n"
          "  demand cpu.threads = OPENBLAS_NUM_THREADS ?? FOO_3 ?? GOTO_NUM_THREADS ?? ncpus;\n}\n";
  Diagnostics pd;
  auto doc = lpcl::parse(text, "draft", pd);
  ASSERT_FALSE(pd.has_errors()) << pd.str().substr(0, 2000);
  auto c = doc.contracts[0];
  std::vector<std::string> repairs;
  validate(c, testing::openblas_facts(), true, &repairs);
  EXPECT_EQ(c.find_control("FOO_0"), nullptr);
  EXPECT_EQ(c.find_control("FOO_19999"), nullptr);
  ASSERT_NE(c.find_control("OPENBLAS_NUM_THREADS"), nullptr);
  ASSERT_NE(c.find_control("GOTO_NUM_THREADS"), nullptr);
  EXPECT_EQ(c.find_control("GOTO_NUM_THREADS")->fallback_for, "");  // it fell back on an invented one
  ASSERT_EQ(c.demands.size(), 1u);
  EXPECT_EQ(lpcl::format(c.demands[0].value), "OPENBLAS_NUM_THREADS ?? GOTO_NUM_THREADS ?? ncpus");
  EXPECT_GE(repairs.size(), static_cast<size_t>(n));
}

TEST(Validate, ReportsWithoutRepairingWhenAskedTo) {
  Diagnostics pd;
  auto doc = lpcl::parse(testing::kInventedKnob, "draft", pd);
  ASSERT_FALSE(pd.has_errors()) << pd.str();
  auto c = doc.contracts[0];
  auto d = validate(c, testing::openblas_facts(), false);
  EXPECT_TRUE(d.has_errors());
  EXPECT_NE(c.find_control("OPENBLAS_TURBO_MODE"), nullptr);  // untouched
  bool invented = false, ref = false;
  for (auto& x : d.items()) {
    invented |= x.code == "invented-control" && x.message.find("OPENBLAS_TURBO_MODE") != std::string::npos;
    ref |= x.code == "invented-ref" && x.message.find("blas_server.c:9999") != std::string::npos;
    if (x.code == "invented-control") {
      EXPECT_GT(x.loc.line, 0);  // points into the draft
    }
  }
  EXPECT_TRUE(invented) << d.str();
  EXPECT_TRUE(ref) << d.str();
  std::vector<std::string> repairs;
  validate(c, testing::openblas_facts(), true, &repairs);
  EXPECT_EQ(c.find_control("OPENBLAS_TURBO_MODE"), nullptr);
  EXPECT_FALSE(validate(c, testing::openblas_facts(), false).has_errors());
}

TEST(Prompt, RanksAndTrimsFactsToTheBudget) {
  auto f = testing::openblas_facts();
  for (int i = 0; i < 400; ++i) {  // a large tree: many reads of unrelated variables
    extract::EnvRead e;
    e.name = "UNRELATED_SETTING_" + std::to_string(i);
    e.file = "misc/file" + std::to_string(i) + ".c";
    e.line = i + 1;
    e.type = "string";
    f.env_vars.push_back(e);
  }
  auto o = offline_options();
  o.prompt_token_budget = 1500;
  auto p = build_prompt(f, o);
  EXPECT_EQ(p.id, "draft-contract@1");
  EXPECT_LE(p.tokens, 1500u);
  EXPECT_GT(p.facts_dropped, 300u);
  EXPECT_NE(p.user.find("lower-ranked facts left out"), std::string::npos);
  for (auto* k : {"OPENBLAS_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT", "openblas_set_num_threads", "pthread_create"})
    EXPECT_NE(p.user.find(k), std::string::npos) << k;
  o.prompt_token_budget = 1000000;
  auto all = build_prompt(f, o);
  EXPECT_EQ(all.facts_dropped, 0u);
  EXPECT_GT(all.tokens, p.tokens);
  EXPECT_EQ(all.tokens, approx_tokens(all.system) + approx_tokens(all.user));
}

TEST(Prompt, TemplatesNeedIdVersionAndParts) {
  const std::string dir = ::testing::TempDir() + "/synth-prompts";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/draft-contract.txt") << "# id: draft-contract\n=== system\nx\n=== user\ny\n";
  try {
    load_template(dir, "draft-contract");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("# version: N"), std::string::npos) << e.what();
  }
  std::ofstream(dir + "/draft-contract.txt") << "# id: other\n# version: 2\n=== system\nx\n=== user\ny\n";
  EXPECT_THROW(load_template(dir, "draft-contract"), std::runtime_error);
  EXPECT_THROW(load_template(dir + "/missing", "draft-contract"), std::runtime_error);
  std::ofstream(dir + "/draft-contract.txt") << "# id: draft-contract\n# version: 7\n=== system\nS {{library}}\n=== user\nU {{version}}\n";
  auto t = load_template(dir, "draft-contract");
  EXPECT_EQ(t.ref(), "draft-contract@7");
  auto o = offline_options();
  auto p = render(t, testing::openblas_facts(), o);
  EXPECT_EQ(p.system, "S openblas\n");
  EXPECT_EQ(p.user, "U 0.3.21\n");
}

}  // namespace
}  // namespace syspilot::synth
