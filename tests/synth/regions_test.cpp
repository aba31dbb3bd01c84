// What the drafter says of a library's threads from its facts: the pool's demand and size,
// the parallel regions it opens (from `#pragma omp parallel` in the code, from the runtime entry
// points its shared object imports or exports) or that it opens none, each with the facts it
// cites; and a reviewed statement that repeats the draft keeps the draft's provenance.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "extract/extract.h"
#include "lpcl/lpcl.h"
#include "lpcl/syntax.h"
#include "synth/synth.h"
#include "tests/synth/fixture.h"

namespace syspilot::synth {
namespace {

namespace fs = std::filesystem;

SynthOptions options(const std::string& lib) {
  SynthOptions o;
  o.library = lib;
  o.version = "1.0";
  return o;
}

extract::BinaryFacts object(const std::string& soname, std::vector<std::string> imports,
                            std::vector<std::string> exports = {}) {
  extract::BinaryFacts b;
  b.path = "/usr/lib/x86_64-linux-gnu/" + soname + ".2.3";
  b.soname = soname;
  b.imports = std::move(imports);
  b.exports = std::move(exports);
  return b;
}

extract::ThreadingFact pragma(const std::string& file, int line) {
  extract::ThreadingFact t;
  t.kind = "omp_parallel";
  t.detail = "#pragma omp parallel";
  t.file = file;
  t.line = line;
  return t;
}

// A library with a threads variable, read in its code, and whatever threading facts a test adds.
extract::Facts pool_library(const std::string& name) {
  extract::Facts f;
  f.library = name;
  extract::EnvRead e;
  e.name = "POOLX_NUM_THREADS";
  e.file = "src/env.c";
  e.line = 12;
  e.type = "int";
  e.via = "getenv";
  e.language = "c";
  f.env_vars.push_back(e);
  return f;
}

const lpcl::Provides* provides(const lpcl::Contract& c, const std::string& name) {
  auto it = std::find_if(c.provides.begin(), c.provides.end(), [&](auto& p) { return p.name == name; });
  return it == c.provides.end() ? nullptr : &*it;
}

const lpcl::Behavior* behavior(const lpcl::Contract& c, const std::string& name) {
  auto it = std::find_if(c.behaviors.begin(), c.behaviors.end(), [&](auto& b) { return b.name == name; });
  return it == c.behaviors.end() ? nullptr : &*it;
}

bool cites(const lpcl::Provenance& p, const std::string& ref) {
  return std::find(p.refs.begin(), p.refs.end(), ref) != p.refs.end();
}

TEST(ParallelRegionEntry, NamesTheOpenMpAndTbbEntryPointsOnly) {
  EXPECT_EQ(extract::parallel_region_entry("GOMP_parallel"), "omp_parallel");
  EXPECT_EQ(extract::parallel_region_entry("GOMP_parallel_loop_dynamic"), "omp_parallel");
  EXPECT_EQ(extract::parallel_region_entry("GOMP_teams_reg"), "omp_parallel");
  EXPECT_EQ(extract::parallel_region_entry("__kmpc_fork_call"), "omp_parallel");
  EXPECT_EQ(extract::parallel_region_entry("_ZN3tbb6detail2r17executeERNS0_2d115task_arena_baseERNS2_13delegate_baseE"),
            "tbb_arena");
  EXPECT_EQ(extract::parallel_region_entry("GOMP_barrier"), "");
  EXPECT_EQ(extract::parallel_region_entry("omp_get_num_threads"), "");
  EXPECT_EQ(extract::parallel_region_entry("pthread_create"), "");
  EXPECT_EQ(extract::parallel_region_entry("_ZN3tbb6detail2r110initializeERNS0_2d115task_arena_baseE"), "");
}

TEST(SymbolReference, IsAValidLpclReferenceAndAMalformedOneIsNot) {
  EXPECT_TRUE(lpcl::is_valid_ref("libgomp.so.1#GOMP_parallel"));
  EXPECT_TRUE(lpcl::is_valid_ref("libfoo.so#sym@@VERS_1.0"));
  EXPECT_TRUE(lpcl::is_valid_ref("src/env.c:12"));
  EXPECT_FALSE(lpcl::is_valid_ref("libgomp.so.1#"));
  EXPECT_FALSE(lpcl::is_valid_ref("#GOMP_parallel"));
  EXPECT_FALSE(lpcl::is_valid_ref("libgomp.so.1#GOMP parallel"));
  EXPECT_FALSE(lpcl::is_valid_ref("libgomp.so.1#1abc"));
  Diagnostics d;
  auto doc = lpcl::parse("contract x \"1\" {\n  provides region omp_parallel @ \"libx.so.1#GOMP_parallel\";\n}\n", "t.lpcl", d);
  EXPECT_TRUE(lpcl::check(doc, d)) << d.str();
  doc = lpcl::parse("contract x \"1\" {\n  provides region omp_parallel @ \"libx.so.1#\";\n}\n", "t.lpcl", d);
  EXPECT_FALSE(lpcl::check(doc, d));
}

// The shared object imports GOMP_parallel and pthread_create: its work runs in OpenMP regions
// and it starts threads; the demand, the pool and the region cite those symbols.
TEST(DraftRegions, ImportedRuntimeEntryMeansItsRegionsCitedBySymbol) {
  auto f = pool_library("poolx");
  f.binaries.push_back(object("libpoolx.so.2", {"GOMP_parallel", "GOMP_barrier", "pthread_create", "getenv"}));
  auto r = synthesize(f, options("poolx"));
  ASSERT_TRUE(r.converged) << r.open.str() << "\n" << r.text;
  const auto& c = r.contract;
  const auto* p = provides(c, "omp_parallel");
  ASSERT_NE(p, nullptr) << r.text;
  EXPECT_EQ(p->prov.origin, lpcl::Origin::Extracted);
  EXPECT_TRUE(cites(p->prov, "libpoolx.so.2#GOMP_parallel")) << r.text;
  EXPECT_EQ(provides(c, "none"), nullptr);
  ASSERT_EQ(c.demands.size(), 1u);
  EXPECT_EQ(lpcl::format(c.demands[0].value), "POOLX_NUM_THREADS ?? ncpus");
  EXPECT_TRUE(cites(c.demands[0].prov, "src/env.c:12")) << r.text;
  EXPECT_TRUE(cites(c.demands[0].prov, "libpoolx.so.2#pthread_create")) << r.text;
  const auto* pool = behavior(c, "creates_pool");
  ASSERT_NE(pool, nullptr) << r.text;
  ASSERT_EQ(pool->params.size(), 1u);
  EXPECT_EQ(pool->params[0].first, "size");
  EXPECT_EQ(lpcl::format(pool->params[0].second), "cpu.threads");
  // The contract as text parses and checks: the symbol references are valid LPCL.
  Diagnostics d;
  auto doc = lpcl::parse(r.text, "poolx.lpcl", d);
  EXPECT_TRUE(lpcl::check(doc, d)) << d.str();
}

// The runtime itself exports the entry points: it provides the regions it implements.
TEST(DraftRegions, ExportedRuntimeEntryMeansTheRuntimesRegions) {
  auto f = pool_library("rtx");
  f.binaries.push_back(object("librtx.so.1", {"pthread_create"}, {"GOMP_parallel", "GOMP_parallel_end", "__kmpc_fork_call"}));
  auto r = synthesize(f, options("rtx"));
  ASSERT_TRUE(r.converged) << r.open.str();
  const auto* p = provides(r.contract, "omp_parallel");
  ASSERT_NE(p, nullptr) << r.text;
  // One citation per object and kind: the entry that sorts first.
  EXPECT_EQ(p->prov.refs, std::vector<std::string>{"librtx.so.1#GOMP_parallel"});
}

TEST(DraftRegions, TbbArenaEntryMeansTbbArenaRegions) {
  auto f = pool_library("tbbx");
  f.binaries.push_back(object("libtbbx.so.12", {"pthread_create"},
                              {"_ZN3tbb6detail2r17executeERNS0_2d115task_arena_baseERNS2_13delegate_baseE"}));
  auto r = synthesize(f, options("tbbx"));
  ASSERT_TRUE(r.converged) << r.open.str();
  EXPECT_NE(provides(r.contract, "tbb_arena"), nullptr) << r.text;
  EXPECT_EQ(provides(r.contract, "omp_parallel"), nullptr) << r.text;
}

// `#pragma omp parallel` in a tree whose shared object shows no OpenMP at all is code of
// another build (OpenBLAS's OpenMP server beside the pthreads one): the library starts
// threads of its own and opens no region. Without the object, the pragma is the evidence.
TEST(DraftRegions, PragmaNotBuiltIntoTheObjectIsNoRegion) {
  auto f = pool_library("serverx");
  f.threading.push_back(pragma("driver/server_omp.c", 40));
  extract::ThreadingFact t;
  t.kind = "thread_create";
  t.detail = "pthread_create";
  t.file = "driver/server.c";
  t.line = 70;
  f.threading.push_back(t);
  // A public setter, so that the tree alone binds by its header.
  extract::ApiControl a;
  a.name = "serverx_set_num_threads";
  a.signature = "void serverx_set_num_threads(int n)";
  a.category = "threads";
  a.file = "serverx.h";
  a.line = 5;
  f.api_controls.push_back(a);

  auto source_only = synthesize(f, options("serverx"));
  ASSERT_TRUE(source_only.converged) << source_only.open.str();
  const auto* p = provides(source_only.contract, "omp_parallel");
  ASSERT_NE(p, nullptr) << source_only.text;
  EXPECT_TRUE(cites(p->prov, "driver/server_omp.c:40"));

  f.binaries.push_back(object("libserverx.so.0", {"pthread_create", "sched_yield"}));
  auto built = synthesize(f, options("serverx"));
  ASSERT_TRUE(built.converged) << built.open.str();
  EXPECT_EQ(provides(built.contract, "omp_parallel"), nullptr) << built.text;
  const auto* none = provides(built.contract, "none");
  ASSERT_NE(none, nullptr) << built.text;
  EXPECT_TRUE(cites(none->prov, "driver/server.c:70")) << built.text;
  EXPECT_TRUE(cites(none->prov, "libserverx.so.0#pthread_create")) << built.text;
  EXPECT_FALSE(cites(none->prov, "driver/server_omp.c:40")) << built.text;

  // The OpenMP build of the same tree imports the runtime: the pragma counts again.
  f.binaries.back().imports.push_back("GOMP_parallel");
  auto omp = synthesize(f, options("serverx"));
  ASSERT_TRUE(omp.converged) << omp.open.str();
  p = provides(omp.contract, "omp_parallel");
  ASSERT_NE(p, nullptr) << omp.text;
  EXPECT_TRUE(cites(p->prov, "driver/server_omp.c:40")) << omp.text;
}

// Nothing in the facts starts a thread: no pool, no region, not even `none`.
TEST(DraftRegions, NoThreadEvidenceSaysNothingOfRegions) {
  auto f = pool_library("calmx");
  f.binaries.push_back(object("libcalmx.so.1", {"getenv", "mmap"}));
  auto r = synthesize(f, options("calmx"));
  ASSERT_TRUE(r.converged) << r.open.str();
  EXPECT_TRUE(r.contract.provides.empty()) << r.text;
  EXPECT_EQ(behavior(r.contract, "creates_pool"), nullptr) << r.text;
}

class OverlayFile {
 public:
  explicit OverlayFile(const std::string& text) {
    path_ = (fs::path(::testing::TempDir()) / ("overlay-" + std::to_string(::getpid()) + "-" +
                                                std::to_string(counter_++) + ".lpcl")).string();
    std::ofstream(path_) << text;
  }
  ~OverlayFile() { fs::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

// A reviewed statement that says what the draft says confirms it and stays extracted, with the
// facts it cites; one that says something else is the reviewer's (origin manual).
TEST(Overlay, ConfirmingStatementKeepsTheDraftsProvenanceACorrectionIsManual) {
  auto f = pool_library("poolx");
  f.binaries.push_back(object("libpoolx.so.2", {"GOMP_parallel", "pthread_create"}));
  OverlayFile same(
      "contract poolx \"1.0\" {\n"
      "  # Checked against the manual.\n"
      "  demand cpu.threads = POOLX_NUM_THREADS ?? ncpus;\n"
      "  provides region omp_parallel;\n"
      "}\n");
  auto o = options("poolx");
  o.overlays = {same.path()};
  auto r = synthesize(f, o);
  ASSERT_TRUE(r.converged) << r.open.str();
  ASSERT_EQ(r.contract.demands.size(), 1u);
  EXPECT_EQ(r.contract.demands[0].prov.origin, lpcl::Origin::Extracted) << r.text;
  EXPECT_TRUE(cites(r.contract.demands[0].prov, "src/env.c:12")) << r.text;
  EXPECT_NE(r.text.find("# Checked against the manual."), std::string::npos) << r.text;
  const auto* p = provides(r.contract, "omp_parallel");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->prov.origin, lpcl::Origin::Extracted);
  EXPECT_TRUE(cites(p->prov, "libpoolx.so.2#GOMP_parallel"));

  OverlayFile other(
      "contract poolx \"1.0\" {\n"
      "  demand cpu.threads = POOLX_NUM_THREADS ?? 1;\n"
      "}\n");
  o.overlays = {other.path()};
  r = synthesize(f, o);
  ASSERT_TRUE(r.converged) << r.open.str();
  ASSERT_EQ(r.contract.demands.size(), 1u);
  EXPECT_EQ(r.contract.demands[0].prov.origin, lpcl::Origin::Manual) << r.text;
  EXPECT_TRUE(r.contract.demands[0].prov.refs.empty()) << r.text;
}

// The real runtimes and BLAS builds of this machine, through the ELF scanner: libgomp exports
// GOMP_parallel, the OpenMP OpenBLAS imports it, the pthreads one does not.
TEST(DraftRegions, DebianSharedObjectsShowTheirRegions) {
  struct Case {
    std::string path, symbol;
    bool exported, present;
  };
  const std::vector<Case> cases = {
      {"/usr/lib/x86_64-linux-gnu/libgomp.so.1", "GOMP_parallel", true, true},
      {"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0", "GOMP_parallel", false, true},
      {"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0", "GOMP_parallel", false, false},
  };
  for (auto& k : cases) {
    SCOPED_TRACE(k.path);
    ASSERT_TRUE(fs::exists(k.path)) << "scripts/setup.sh installs it";
    Diagnostics d;
    auto b = extract::scan_binary(k.path, d);
    const auto& syms = k.exported ? b.exports : b.imports;
    EXPECT_EQ(std::find(syms.begin(), syms.end(), k.symbol) != syms.end(), k.present);
  }
}

}  // namespace
}  // namespace syspilot::synth
