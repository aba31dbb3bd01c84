// What synthesis refuses to call converged: nothing to draft from, a contract with no control
// or no binding, a type or range its own documentation contradicts, and per-call flags (an
// allocator's mallocx() flag macros) drafted as controls. Real files, the real extractor and a
// real store.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "extract/extract.h"
#include "lpcl/lpcl.h"
#include "store/store.h"
#include "synth/rules.h"
#include "synth/synth.h"

namespace syspilot::synth {
namespace {

namespace fs = std::filesystem;

struct TempTree {
  fs::path root;
  TempTree() {
    std::string tmpl = (fs::temp_directory_path() / "syspilot-checks-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    root = tmpl;
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  std::string write(const std::string& rel, const std::string& text) const {
    fs::path p = root / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string str(const std::string& rel = "") const { return (root / rel).string(); }
};

SynthOptions options(const std::string& lib, const std::string& version = "1") {
  SynthOptions o;
  o.library = lib;
  o.version = version;
  return o;
}

extract::DocMention mention(std::string name, std::string sentence, std::string file, int line) {
  return {std::move(name), std::move(sentence), std::move(file), line, "html"};
}

bool has_code(const Diagnostics& d, const std::string& code) {
  for (auto& x : d.items())
    if (x.code == code) return true;
  return false;
}

int contracts_in(store::Store& s) { return static_cast<int>(*s.db().query_int("SELECT count(*) FROM contracts")); }

// An empty folder is no library: a clear error, and nothing is drafted or stored.
TEST(SynthChecks, EmptyFolderIsRefusedAndStoresNothing) {
  TempTree t;
  fs::create_directories(t.str("empty"));
  extract::ExtractOptions eo;
  eo.paths = {t.str("empty")};
  eo.library = "nothing";
  extract::Facts facts = extract::extract(eo);
  store::Store st(t.str("s.db"));
  try {
    synthesize(facts, options("nothing"), &st);
    FAIL() << "an empty folder was synthesized";
  } catch (const EmptyFacts& e) {
    EXPECT_NE(std::string(e.what()).find(t.str("empty")), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing was drafted or stored"), std::string::npos) << e.what();
  }
  EXPECT_EQ(contracts_in(st), 0);
  EXPECT_TRUE(st.libraries().empty());
}

// Facts, but nothing that is a setting, and nothing that binds: stored with its errors, never
// as converged.
TEST(SynthChecks, NoControlOrNoBindingIsNotConverged) {
  TempTree t;
  store::Store st(t.str("s.db"));
  extract::Facts f;
  f.library = "quiet";
  extract::ThreadingFact th;
  th.kind = "thread_create";
  th.detail = "pthread_create";
  th.file = "src/pool.c";
  th.line = 12;
  f.threading.push_back(th);
  auto r = synthesize(f, options("quiet"), &st);
  EXPECT_FALSE(r.converged) << r.text;
  EXPECT_TRUE(has_code(r.open, "no-controls")) << r.open.str();
  EXPECT_TRUE(has_code(r.open, "no-binding")) << r.open.str();
  auto rec = st.get_contract("quiet", "1");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->status, store::ContractStatus::OpenDiagnostics);
  EXPECT_EQ(rec->review, store::Review::Unreviewed);

  // A control read in code, but no shared object or header: nothing would ever bind it.
  f.env_vars.push_back({"QUIET_NUM_THREADS", "src/env.c", 4, "init", "int", "", "getenv", "c"});
  r = synthesize(f, options("quiet", "2"), nullptr);
  EXPECT_FALSE(r.converged);
  EXPECT_FALSE(has_code(r.open, "no-controls")) << r.open.str();
  EXPECT_TRUE(has_code(r.open, "no-binding")) << r.open.str();

  // With its shared object, the same facts converge.
  f.binaries.push_back({"/usr/lib/libquiet.so.1", "libquiet.so.1", {}, {}, {}, {}});
  r = synthesize(f, options("quiet", "3"), nullptr);
  EXPECT_TRUE(r.converged) << r.open.str() << "\n" << r.text;
}

// jemalloc's manual says "opt.tcache (bool)": the name rule's int is repaired from the sentence
// the control cites, as are a const char * and a size_t; a draft that keeps int is not converged.
TEST(SynthChecks, TheDocumentedTypeWinsOverTheNameRule) {
  extract::Facts f;
  f.library = "alloc";
  f.doc_mentions = {
      mention("opt.tcache", "opt.tcache (bool) r- Thread-specific caching (tcache) enabled/disabled.", "alloc.xml.in", 1322),
      mention("opt.percpu_arena", "opt.percpu_arena ( const char * ) r- Per CPU arena mode.", "alloc.xml.in", 1059),
      mention("opt.max_background_threads",
              "opt.max_background_threads (size_t) r- Maximum number of background threads that will be created.",
              "alloc.xml.in", 1092),
      mention("opt.narenas", "opt.narenas (unsigned) r- Maximum number of arenas to use.", "alloc.xml.in", 1030),
  };
  f.binaries.push_back({"/usr/lib/liballoc.so.2", "liballoc.so.2", {}, {}, {}, {"MALLOC_CONF"}});

  // The offline draft takes the declared switch and numbers itself and types the rest by name
  // (an arena knob is an int); validation reads the sentence.
  auto raw = draft_offline(f, options("alloc"));
  ASSERT_NE(raw.find_control("tcache"), nullptr);
  EXPECT_EQ(raw.find_control("tcache")->type.kind, lpcl::Type::Kind::Bool);
  ASSERT_NE(raw.find_control("percpu_arena"), nullptr);
  EXPECT_EQ(raw.find_control("percpu_arena")->type.kind, lpcl::Type::Kind::Int) << "by name";
  Diagnostics unrepaired = validate(raw, f, false);
  EXPECT_TRUE(has_code(unrepaired, "doc-type-mismatch")) << unrepaired.str();
  EXPECT_TRUE(unrepaired.has_errors()) << "a contradicted type must block convergence";

  auto r = synthesize(f, options("alloc"));
  EXPECT_TRUE(r.converged) << r.open.str() << "\n" << r.text;
  auto type_of = [&](const char* n) {
    const lpcl::Control* c = r.contract.find_control(n);
    EXPECT_NE(c, nullptr) << n << "\n" << r.text;
    return c ? c->type.kind : lpcl::Type::Kind::Enum;
  };
  EXPECT_EQ(type_of("tcache"), lpcl::Type::Kind::Bool);
  EXPECT_EQ(type_of("percpu_arena"), lpcl::Type::Kind::String);
  EXPECT_EQ(type_of("max_background_threads"), lpcl::Type::Kind::Int);  // the name rule said bool
  EXPECT_EQ(type_of("narenas"), lpcl::Type::Kind::Int);
  ASSERT_EQ(r.rounds.size(), 1u);
  bool said = false;
  for (auto& rep : r.rounds[0].repairs) said |= rep.find("set the type of percpu_arena to string") != std::string::npos;
  EXPECT_TRUE(said) << "the repair is reported";

  // A sentence that only says "enabled/disabled" makes a wide int a switch too.
  extract::Facts g = f;
  g.doc_mentions = {mention("opt.tcache", "Thread-specific caching (tcache) enabled/disabled; see opt.tcache.",
                            "alloc.xml.in", 1322)};
  r = synthesize(g, options("alloc"));
  ASSERT_NE(r.contract.find_control("tcache"), nullptr) << r.text;
  EXPECT_EQ(r.contract.find_control("tcache")->type.kind, lpcl::Type::Kind::Bool) << r.text;
}

// A domain the cited sentence contradicts ("between 1 and 64" against [1, 128]) is an error;
// the repair takes the documented range. A narrower domain is no contradiction.
TEST(SynthChecks, TheDocumentedRangeBoundsTheDomain) {
  extract::Facts f;
  f.library = "net";
  f.doc_mentions = {mention("NET_NSOCKS_PERTHREAD",
                            "Set the environment variable NET_NSOCKS_PERTHREAD to a value between 1 and 64 sockets.",
                            "net.md", 7)};
  f.binaries.push_back({"/usr/lib/libnet.so.2", "libnet.so.2", {}, {}, {}, {}});
  Diagnostics d;
  auto doc = lpcl::parse(
      "contract net \"1\" {\n  binds soname \"libnet.so.2\";\n"
      "  control NET_NSOCKS_PERTHREAD : env int in [1, 128] default 100 @ \"net.md:7\";\n}\n",
      "draft.lpcl", d);
  ASSERT_FALSE(d.has_errors()) << d.str();
  lpcl::Contract c = doc.contracts.at(0);
  lpcl::Contract probe = c;
  Diagnostics open = validate(probe, f, false);
  EXPECT_TRUE(has_code(open, "doc-range-mismatch")) << open.str();
  std::vector<std::string> repairs;
  validate(c, f, true, &repairs);
  const lpcl::Control* n = c.find_control("NET_NSOCKS_PERTHREAD");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(lpcl::format(*n->domain.hi), "64");
  EXPECT_FALSE(n->default_value.has_value()) << "100 lies outside the documented range";
  EXPECT_FALSE(validate(c, f, false).has_errors());

  auto narrow = lpcl::parse(
      "contract net \"1\" {\n  binds soname \"libnet.so.2\";\n"
      "  control NET_NSOCKS_PERTHREAD : env int in [1, 8] @ \"net.md:7\";\n}\n",
      "draft.lpcl", d);
  EXPECT_FALSE(has_code(validate(narrow.contracts.at(0), f, false), "doc-range-mismatch"));
}

// An installed allocator shaped like jemalloc (header and manual, no code): its mallocx()
// flag macros, function-like or documented beside one, are arguments of a call, not settings.
TEST(SynthChecks, PerCallFlagMacrosAreNotControls) {
  TempTree t;
  t.write("include/foox.h",
          "/* foox: a small allocator with per-call flags. */\n"
          "#pragma once\n#include <stddef.h>\n\n"
          "#define FOOX_LG_ALIGN(la) ((int)(la))\n"
          "#define FOOX_ZERO ((int)0x40)\n"
          "#define FOOX_TCACHE(tc) ((int)(((tc) + 2) << 8))\n"
          "#define FOOX_TCACHE_NONE FOOX_TCACHE(-1)\n"
          "#define FOOX_ARENA(a) ((((int)(a)) + 1) << 20)\n"
          "#define FOOX_SET_ARENAS(n) foox_set_narenas(n)\n\n"
          "void *foox_mallocx(size_t size, int flags);\n"
          "/* Sets the number of arenas later threads spread over. */\n"
          "void foox_set_narenas(unsigned n);\n");
  t.write("doc/foox.md",
          "# foox\n\n## foox_mallocx\n\n"
          "The flags argument of foox_mallocx() is zero or more of the following, combined with bitwise or:\n\n"
          "FOOX_LG_ALIGN(la)\n:   Align the allocation to a multiple of (1 << la).\n\n"
          "FOOX_ZERO\n:   Initialize newly allocated memory to contain zero bytes.\n\n"
          "FOOX_TCACHE(tc)\n:   Use the thread-specific cache (tcache) tc.\n\n"
          "FOOX_TCACHE_NONE\n:   Do not use a thread-specific cache (tcache).\n\n"
          "Unless FOOX_TCACHE(tc) or FOOX_TCACHE_NONE is specified, an automatically managed tcache is used.\n\n"
          "FOOX_ARENA(a)\n:   Use the arena specified by the index a.\n");
  extract::ExtractOptions eo;
  eo.paths = {t.str()};
  eo.library = "foox";
  extract::Facts facts = extract::extract(eo);
  ASSERT_FALSE(facts.api_controls.empty()) << "the header was not scanned";

  auto r = synthesize(facts, options("foox"));
  for (const char* flag : {"FOOX_LG_ALIGN", "FOOX_ZERO", "FOOX_TCACHE", "FOOX_TCACHE_NONE", "FOOX_ARENA", "FOOX_SET_ARENAS"})
    EXPECT_EQ(r.contract.find_control(flag), nullptr) << flag << " is passed per call\n" << r.text;
  const lpcl::Control* setter = r.contract.find_control("foox_set_narenas");
  ASSERT_NE(setter, nullptr) << "the declared setter is the control\n" << r.text;
  EXPECT_EQ(setter->how.kind, lpcl::ControlKind::Kind::Api);
  EXPECT_TRUE(r.converged) << r.open.str() << "\n" << r.text;

  // A model's draft that names them anyway loses them in validation.
  Diagnostics d;
  auto doc = lpcl::parse(
      "contract foox \"1\" {\n  binds header \"foox.h\";\n"
      "  control FOOX_TCACHE_NONE : env bool;\n"
      "  control FOOX_ARENA : api(int a) int sets mem.arenas;\n"
      "  control foox_set_narenas : api(unsigned n) int sets mem.arenas;\n}\n",
      "draft.lpcl", d);
  ASSERT_FALSE(d.has_errors()) << d.str();
  lpcl::Contract c = doc.contracts.at(0);
  lpcl::Contract probe = c;
  Diagnostics found = validate(probe, facts, false);
  EXPECT_TRUE(has_code(found, "per-call-flag")) << found.str();
  validate(c, facts, true);
  EXPECT_EQ(c.find_control("FOOX_TCACHE_NONE"), nullptr);
  EXPECT_EQ(c.find_control("FOOX_ARENA"), nullptr);
  EXPECT_NE(c.find_control("foox_set_narenas"), nullptr);
}

// A function that reads a setting (foox_get_narenas, fooxGetArenaCount, foox_getaffinity) is a
// query: the drafter never drafts one, and validation drops one a model drafted.
TEST(SynthChecks, QueriesAreNotControls) {
  TempTree t;
  t.write("include/foox.h",
          "/* foox: a small thread-pooled allocator. */\n"
          "#pragma once\n\n"
          "/* Sets the number of arenas later threads spread over. */\n"
          "void foox_set_narenas(unsigned n);\n"
          "/* Returns the number of arenas. */\n"
          "unsigned foox_get_narenas(void);\n"
          "/* Returns the number of arenas. */\n"
          "unsigned fooxGetArenaCount(void);\n"
          "/* Sets the number of worker threads. */\n"
          "void foox_set_num_threads(int n);\n"
          "/* Returns the number of worker threads. */\n"
          "int foox_get_num_threads(void);\n"
          "/* Writes the CPUs thread i may run on. */\n"
          "int foox_getaffinity(int i, unsigned long *mask);\n");
  extract::ExtractOptions eo;
  eo.paths = {t.str()};
  eo.library = "foox";
  extract::Facts facts = extract::extract(eo);
  // The extractor leaves the queries out (extractor revision 6); facts written before it (the
  // corpus's) carry them, and the drafter must still leave them out.
  ASSERT_EQ(facts.api_controls.size(), 2u) << "the header was not scanned, or a query was taken for a control";
  for (auto [q, category] : std::vector<std::pair<std::string, std::string>>{
           {"unsigned foox_get_narenas(void)", "allocator"},
           {"unsigned fooxGetArenaCount(void)", "allocator"},
           {"int foox_get_num_threads(void)", "threads"},
           {"int foox_getaffinity(int i, unsigned long *mask)", "affinity"}}) {
    auto open = q.find('(');
    auto sp = q.rfind(' ', open);
    facts.api_controls.push_back({q.substr(sp + 1, open - sp - 1), q, category, "include/foox.h", 1, "", "library"});
  }

  auto r = synthesize(facts, options("foox"));
  for (const char* query : {"foox_get_narenas", "fooxGetArenaCount", "foox_get_num_threads", "foox_getaffinity"})
    EXPECT_EQ(r.contract.find_control(query), nullptr) << query << " reads a setting\n" << r.text;
  EXPECT_NE(r.contract.find_control("foox_set_narenas"), nullptr) << r.text;
  EXPECT_NE(r.contract.find_control("foox_set_num_threads"), nullptr) << r.text;
  EXPECT_TRUE(r.converged) << r.open.str() << "\n" << r.text;

  Diagnostics d;
  auto doc = lpcl::parse(
      "contract foox \"1\" {\n  binds header \"foox.h\";\n"
      "  control foox_get_num_threads : api() int read_at call sets cpu.threads;\n"
      "  control foox_set_num_threads : api(int n) int read_at call sets cpu.threads;\n}\n",
      "draft.lpcl", d);
  ASSERT_FALSE(d.has_errors()) << d.str();
  lpcl::Contract c = doc.contracts.at(0);
  lpcl::Contract probe = c;
  Diagnostics found = validate(probe, facts, false);
  EXPECT_TRUE(has_code(found, "query-control")) << found.str();
  std::vector<std::string> repairs;
  validate(c, facts, true, &repairs);
  EXPECT_EQ(c.find_control("foox_get_num_threads"), nullptr);
  EXPECT_NE(c.find_control("foox_set_num_threads"), nullptr);
  EXPECT_NE(std::find(repairs.begin(), repairs.end(), "dropped query foox_get_num_threads"), repairs.end());
}

// A call that reports (display, capture, print) is a query whatever it takes; the making or
// unmaking of a value of the library's own type is no control (every parameter of a type the
// name's words name), but that of a pool of threads is; acting names keep their controls.
TEST(SynthChecks, ReportsAndValueLifecyclesAreNoControls) {
  EXPECT_TRUE(lpcl::is_query_function("foox_display_affinity", "void foox_display_affinity(const char * format)", ""));
  EXPECT_TRUE(lpcl::is_query_function("foox_capture_affinity", "size_t foox_capture_affinity(char *, size_t, const char *)", ""));
  EXPECT_FALSE(lpcl::is_query_function("foox_set_affinity_format", "void foox_set_affinity_format(const char *)", ""));
  EXPECT_TRUE(lpcl::is_object_lifecycle("foox_create_affinity_mask", "void foox_create_affinity_mask(foox_affinity_mask_t *)"));
  EXPECT_TRUE(lpcl::is_object_lifecycle("foox_init_lock", "void foox_init_lock(foox_lock_t * lock)"));
  EXPECT_TRUE(lpcl::is_object_lifecycle("foox_topology_destroy", "void foox_topology_destroy(struct foox_topology * t)"));
  EXPECT_FALSE(lpcl::is_object_lifecycle("foox_free_thread_pool", "void foox_free_thread_pool(foox_thread_pool_t * p)"));
  EXPECT_FALSE(lpcl::is_object_lifecycle("foox_create_pool", "foox_pool * foox_create_pool(size_t nthreads)"));
  EXPECT_FALSE(lpcl::is_object_lifecycle("foox_init_threads", "int foox_init_threads(void)"));
  EXPECT_FALSE(lpcl::is_object_lifecycle("foox_set_affinity_mask_proc", "int foox_set_affinity_mask_proc(int, foox_affinity_mask_t *)"));
  EXPECT_FALSE(lpcl::is_object_lifecycle("foox_alloc_membind", "void * foox_alloc_membind(foox_topology_t t, size_t len, int flags)"));
}

// A query named for what it reports, not for reading it: no parameter and a returned count
// (foox_planner_nthreads(), Pool::max_concurrency() const), or documentation that begins
// "Returns" / "Reports". A function whose name says it acts (foox_init_threads(), which returns
// a status) stays a control. A model's draft of such a query is dropped on validation.
TEST(SynthChecks, QueriesBySignatureAndDocumentation) {
  EXPECT_TRUE(lpcl::is_query_function("foox_planner_nthreads", "int foox_planner_nthreads()", ""));
  EXPECT_TRUE(lpcl::is_query_function("Pool::max_concurrency", "int Pool::max_concurrency() const", ""));
  EXPECT_TRUE(lpcl::is_query_function("foox_threads_in_use", "int foox_threads_in_use(int pool)",
                                "Reports how many threads of the pool are busy."));
  EXPECT_TRUE(lpcl::is_query_function("foox_arena_threads", "unsigned foox_arena_threads(int a)", "Returns the count."));
  EXPECT_FALSE(lpcl::is_query_function("foox_init_threads", "int foox_init_threads(void)", "Returns 0 on failure."));
  EXPECT_FALSE(lpcl::is_query_function("foox_pause_resource", "int foox_pause_resource(int kind)", "Returns 0 on success."));
  EXPECT_FALSE(lpcl::is_query_function("foox_plan_with_nthreads", "void foox_plan_with_nthreads(int n)", ""));
  EXPECT_FALSE(lpcl::is_query_function("foox_flush", "void foox_flush(void)", ""));
  EXPECT_FALSE(lpcl::is_query_function("foox_workers", "int foox_workers(int n)", "Sets the number of workers; returns the old one."));

  TempTree t;
  t.write("include/foox.h",
          "/* foox: a thread-pooled planner. */\n"
          "#pragma once\n\n"
          "/* Plans made later use n threads. */\n"
          "void foox_plan_with_nthreads(int nthreads);\n"
          "/* The thread count plans are made with. */\n"
          "int foox_planner_nthreads(void);\n"
          "/* Reports how many threads a pool keeps busy. */\n"
          "int foox_pool_threads(int pool);\n"
          "/* Starts the thread machinery; returns 0 on failure. */\n"
          "int foox_init_threads(void);\n");
  extract::ExtractOptions eo;
  eo.paths = {t.str()};
  eo.library = "foox";
  extract::Facts facts = extract::extract(eo);
  ASSERT_EQ(facts.api_controls.size(), 2u) << "the header was not scanned, or a query was taken for a control";
  // As facts written before extractor revision 6 carry them:
  facts.api_controls.push_back({"foox_planner_nthreads", "int foox_planner_nthreads(void)", "threads", "include/foox.h", 6,
                                "The thread count plans are made with.", "library"});
  facts.api_controls.push_back({"foox_pool_threads", "int foox_pool_threads(int pool)", "threads", "include/foox.h", 8,
                                "Reports how many threads a pool keeps busy.", "library"});
  auto r = synthesize(facts, options("foox"));
  for (const char* query : {"foox_planner_nthreads", "foox_pool_threads"})
    EXPECT_EQ(r.contract.find_control(query), nullptr) << query << " reads a setting\n" << r.text;
  EXPECT_NE(r.contract.find_control("foox_plan_with_nthreads"), nullptr) << r.text;

  Diagnostics d;
  auto doc = lpcl::parse(
      "contract foox \"1\" {\n  binds header \"foox.h\";\n"
      "  control foox_planner_nthreads : api() int read_at call sets cpu.threads;\n"
      "  control foox_plan_with_nthreads : api(int n) int read_at call sets cpu.threads;\n}\n",
      "draft.lpcl", d);
  ASSERT_FALSE(d.has_errors()) << d.str();
  lpcl::Contract c = doc.contracts.at(0);
  std::vector<std::string> repairs;
  Diagnostics found = validate(c, facts, true, &repairs);
  EXPECT_EQ(c.find_control("foox_planner_nthreads"), nullptr) << found.str();
  EXPECT_NE(c.find_control("foox_plan_with_nthreads"), nullptr);
  EXPECT_NE(std::find(repairs.begin(), repairs.end(), "dropped query foox_planner_nthreads"), repairs.end());
}

// The draft of a small "pool" library from its declared functions alone.
SynthResult draft_pool(std::vector<extract::ApiControl> api) {
  extract::Facts f;
  f.library = "pool";
  f.api_controls = std::move(api);
  f.binaries.push_back({"/usr/lib/libpool.so.1", "libpool.so.1", {}, {}, {}, {}});
  auto r = synthesize(f, options("pool"));
  EXPECT_TRUE(r.converged) << r.open.str() << "\n" << r.text;
  return r;
}

// A parameter that counts threads (num_threads, nthreads, max_concurrency) makes the call a
// thread-count setter in [1, ncpus], as the environment's thread counts are, whatever the
// function's name suggests (an arena's constructor); a count of workers may be 0 and an unnamed
// or otherwise named integer says nothing of what it counts.
TEST(SynthChecks, AParameterThatCountsThreadsBoundsTheSetter) {
  auto r = draft_pool({
      {"pool_set_num_threads", "void pool_set_num_threads(int num_threads)", "threads", "pool.h", 3, "", "library"},
      {"pool_plan_with_nthreads", "void pool_plan_with_nthreads(int nthreads)", "threads", "pool.h", 4, "", "library"},
      {"work_arena::work_arena", "work_arena::work_arena(int max_concurrency_, unsigned int reserved)", "allocator",
       "pool.h", 5, "", "library"},
      {"pool_set_workers", "void pool_set_workers(pool_t *p, int nbWorkers)", "threads", "pool.h", 6, "", "library"},
      {"pool_set_thread_limit", "void pool_set_thread_limit(int)", "threads", "pool.h", 7, "", "library"},
  });
  for (const char* n : {"pool_set_num_threads", "pool_plan_with_nthreads", "work_arena.work_arena"}) {
    const lpcl::Control* c = r.contract.find_control(n);
    ASSERT_NE(c, nullptr) << n << "\n" << r.text;
    EXPECT_EQ(c->domain.kind, lpcl::Domain::Kind::Range) << n << "\n" << r.text;
    EXPECT_EQ(lpcl::format(*c->domain.lo), "1") << n;
    EXPECT_EQ(lpcl::format(*c->domain.hi), "ncpus") << n;
    EXPECT_EQ(c->sets, std::vector<std::string>{"cpu.threads"}) << n << ": the count decides over the name";
  }
  for (const char* n : {"pool_set_workers", "pool_set_thread_limit"}) {
    const lpcl::Control* c = r.contract.find_control(n);
    ASSERT_NE(c, nullptr) << n << "\n" << r.text;
    EXPECT_EQ(c->domain.kind, lpcl::Domain::Kind::None) << n << "\n" << r.text;
  }
  EXPECT_EQ(r.text.find("allocates_arenas"), std::string::npos) << "an arena of threads holds no memory\n" << r.text;
}

// Values and defaults the documentation states in words: an enum of the listed words with its
// default, a switch's default, example assignments as values when the default is among them,
// "Default: the number of processors" as ncpus, "0 or 1" as a set; a debugging variable keeps
// the type of its signal, and a default stated for a neighbour is not taken.
TEST(SynthChecks, DocumentedWordsMakeEnumsAndDefaults) {
  extract::Facts f;
  f.library = "rt";
  f.doc_mentions = {
      mention("RT_DEVICE_ORDER", "- RT_DEVICE_ORDER: FASTEST_FIRST or PCI_BUS_ID (default FASTEST_FIRST); sorts devices.",
              "rt.md", 3),
      mention("RT_SPIN_MODE", "RT_SPIN_MODE: Default: throughput The values for this variable are serial, turnaround, or throughput.",
              "rt.rst", 10),
      mention("RT_WAIT_POLICY", "RT_WAIT_POLICY: Default: passive", "rt.rst", 20),
      mention("RT_WAIT_POLICY", "RT_WAIT_POLICY=active is an alias for RT_SPIN_MODE=turnaround, and RT_WAIT_POLICY=passive is an alias for RT_SPIN_MODE=throughput.",
              "rt.rst", 22),
      mention("RT_NESTED", "RT_NESTED: Default: false", "rt.rst", 30),
      mention("RT_NUM_THREADS", "RT_NUM_THREADS: Default: The number of processors visible to the operating system.",
              "rt.rst", 40),
      mention("RT_LAUNCH_BLOCKING", "- RT_LAUNCH_BLOCKING: 0 or 1 (default 0); serialises launches.", "rt.md", 50),
      mention("RT_DEBUG", "- RT_DEBUG: VERSION, WARN, INFO or TRACE; what the runtime logs.", "rt.md", 60),
      mention("RT_PROC_BIND", "RT_PROC_BIND: close or spread. RT_NESTED: default true.", "rt.md", 70),
  };
  f.binaries.push_back({"/usr/lib/librt.so.1", "librt.so.1", {}, {}, {}, {}});
  auto r = synthesize(f, options("rt"));
  EXPECT_TRUE(r.converged) << r.open.str() << "\n" << r.text;
  auto text = [&](const char* n) {
    const lpcl::Control* c = r.contract.find_control(n);
    EXPECT_NE(c, nullptr) << n << "\n" << r.text;
    if (!c) return std::string();
    lpcl::Control bare = *c;
    bare.prov = {};
    bare.doc.clear();
    lpcl::Contract one;
    one.name = "x";
    one.version = "0";
    one.controls.push_back(bare);
    std::string t = lpcl::format(one);
    auto at = t.find("control ");
    std::string line;
    for (char ch : t.substr(at, t.find(';', at) - at))
      if (!(std::isspace(static_cast<unsigned char>(ch)) && (line.empty() || line.back() == ' '))) line += ch == '\n' ? ' ' : ch;
    return line;
  };
  EXPECT_EQ(text("RT_DEVICE_ORDER"), "control RT_DEVICE_ORDER : env enum{FASTEST_FIRST, PCI_BUS_ID} default FASTEST_FIRST sets gpu.device");
  EXPECT_NE(text("RT_SPIN_MODE").find("enum{serial, turnaround, throughput} default throughput"), std::string::npos)
      << text("RT_SPIN_MODE");
  EXPECT_NE(text("RT_WAIT_POLICY").find("enum{active, passive} default passive"), std::string::npos) << text("RT_WAIT_POLICY");
  EXPECT_NE(text("RT_NESTED").find("bool default false"), std::string::npos) << text("RT_NESTED");
  EXPECT_NE(text("RT_NUM_THREADS").find("int in [1, ncpus] default ncpus"), std::string::npos) << text("RT_NUM_THREADS");
  EXPECT_NE(text("RT_LAUNCH_BLOCKING").find("int in {0, 1} default 0"), std::string::npos) << text("RT_LAUNCH_BLOCKING");
  EXPECT_NE(text("RT_DEBUG").find("env int"), std::string::npos) << "a debugging variable keeps its signal's type: "
                                                                 << text("RT_DEBUG");
  EXPECT_EQ(text("RT_PROC_BIND").find("default"), std::string::npos) << "the neighbour's default: " << text("RT_PROC_BIND");
}

// A variable named among the shared object's strings is read when the library starts, as one
// read in code is; a variable only the documentation names says nothing of when.
TEST(SynthChecks, AVariableAmongTheObjectsStringsIsReadAtInit) {
  extract::Facts f;
  f.library = "rt";
  f.binaries.push_back({"/usr/lib/librt.so.1", "librt.so.1", {}, {}, {}, {"RT_NUM_THREADS", "RT_PROC_BIND"}});
  f.doc_mentions = {mention("RT_SPIN_COUNT", "Set the environment variable RT_SPIN_COUNT to the spins before sleeping.",
                            "rt.md", 3)};
  auto r = synthesize(f, options("rt"));
  EXPECT_TRUE(r.converged) << r.open.str() << "\n" << r.text;
  for (const char* n : {"RT_NUM_THREADS", "RT_PROC_BIND"}) {
    const lpcl::Control* c = r.contract.find_control(n);
    ASSERT_NE(c, nullptr) << n << "\n" << r.text;
    EXPECT_EQ(c->read_at, lpcl::ReadAt::Init) << n << "\n" << r.text;
  }
  const lpcl::Control* doc_only = r.contract.find_control("RT_SPIN_COUNT");
  ASSERT_NE(doc_only, nullptr) << r.text;
  EXPECT_NE(doc_only->read_at, lpcl::ReadAt::Init) << r.text;
}

// A class whose constructor takes a count of threads acts on threads: the class and its members
// set cpu.threads whatever the name rule says ("arena"); another class's members do not.
TEST(SynthChecks, AClassBuiltWithAThreadCountActsOnThreads) {
  auto r = draft_pool({
      {"work_arena", "class work_arena", "allocator", "pool.h", 3, "", "library"},
      {"work_arena::work_arena", "work_arena::work_arena(int max_concurrency_, unsigned int reserved)", "allocator",
       "pool.h", 5, "", "library"},
      {"work_arena::initialize", "void work_arena::initialize()", "allocator", "pool.h", 6, "", "library"},
      {"memory_arena::reserve", "void memory_arena::reserve(size_t bytes)", "allocator", "pool.h", 8, "", "library"},
  });
  for (const char* n : {"work_arena", "work_arena.initialize"}) {
    const lpcl::Control* c = r.contract.find_control(n);
    ASSERT_NE(c, nullptr) << n << "\n" << r.text;
    EXPECT_EQ(c->sets, std::vector<std::string>{"cpu.threads"}) << n << "\n" << r.text;
    EXPECT_EQ(c->domain.kind, lpcl::Domain::Kind::None) << n << ": no count of its own\n" << r.text;
  }
  const lpcl::Control* other = r.contract.find_control("memory_arena.reserve");
  ASSERT_NE(other, nullptr) << r.text;
  EXPECT_EQ(other->sets, std::vector<std::string>{"mem.arenas"}) << r.text;
}

}  // namespace
}  // namespace syspilot::synth
