// Tests of composition and hypotheses on the real test programs: the loader's view of their
// libraries, the source scan's nesting and co-running, manifests, and rules as data.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/tuner/analyze_support.h"
#include "tuner/analyze.h"

namespace fs = std::filesystem;
using namespace syspilot;
using namespace syspilot::tuner;

namespace {

std::string program(const std::string& name) { return std::string(SYSPILOT_TEST_PROGRAMS) + "/" + name; }

using Files = std::vector<std::pair<std::string, std::string>>;

// A private folder holding one program's source, so a scan sees that program alone.
struct SourceDir {
  fs::path dir;
  explicit SourceDir(const Files& files) {
    dir = fs::temp_directory_path() / ("syspilot-src-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::create_directories(dir);
    for (auto& [name, text] : files) std::ofstream(dir / name) << text;
  }
  static SourceDir of(const std::string& program_source) {
    std::ifstream in(std::string(SYSPILOT_TEST_PROGRAM_SOURCES) + "/" + program_source);
    std::stringstream ss;
    ss << in.rdbuf();
    return SourceDir(Files{{program_source, ss.str()}});
  }
  ~SourceDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

ComposeOptions options(const std::string& prog) {
  ComposeOptions o;
  o.binary = program(prog);
  o.contract_dirs = {SYSPILOT_TEST_CONTRACTS};
  o.synthesize = false;
  return o;
}

const Library* find_lib(const Composition& c, const std::string& prefix) {
  for (auto& l : c.libraries)
    if (l.soname.rfind(prefix, 0) == 0) return &l;
  return nullptr;
}

using testing_support::find_h;
using testing_support::has_relation;

}  // namespace

TEST(Compose, ResolvesTheOpenBlasVariantAndContracts) {
  Diagnostics d;
  Composition c = compose(options("omp_blas"), d);
  EXPECT_FALSE(d.has_errors()) << d.str();
  const Library* blas = find_lib(c, "libopenblas");
  ASSERT_NE(blas, nullptr);
  EXPECT_TRUE(blas->direct);
  EXPECT_EQ(blas->variant, "openblas-pthread");
  EXPECT_TRUE(blas->found_by == "runpath" || blas->found_by == "rpath") << blas->found_by;
  EXPECT_EQ(blas->contract, "openblas");
  const Library* gomp = find_lib(c, "libgomp");
  ASSERT_NE(gomp, nullptr);
  EXPECT_EQ(gomp->contract, "libgomp");
  EXPECT_NE(c.find_contract("openblas"), nullptr);
  EXPECT_NE(c.find_contract("libgomp"), nullptr);
  // Transitive dependencies are listed too (OpenBLAS needs libgfortran), without contracts.
  const Library* gfortran = find_lib(c, "libgfortran");
  ASSERT_NE(gfortran, nullptr);
  EXPECT_FALSE(gfortran->direct);
  EXPECT_FALSE(c.source_scanned);
}

TEST(Compose, LdLibraryPathSwitchesTheVariant) {
  auto o = options("omp_blas");
  o.env["LD_LIBRARY_PATH"] = "/usr/lib/x86_64-linux-gnu/openblas-openmp";
  Diagnostics d;
  Composition c = compose(o, d);
  const Library* blas = find_lib(c, "libopenblas");
  ASSERT_NE(blas, nullptr);
  EXPECT_EQ(blas->found_by, "LD_LIBRARY_PATH");
  EXPECT_EQ(blas->variant, "openblas-openmp");
}

TEST(Compose, UnreadableBinaryIsAnError) {
  auto o = options("omp_blas");
  o.binary = std::string(SYSPILOT_TEST_PROGRAM_SOURCES) + "/omp_blas.c";
  Diagnostics d;
  Composition c = compose(o, d);
  ASSERT_TRUE(d.has_errors());
  EXPECT_NE(d.str().find("not an ELF file"), std::string::npos) << d.str();
  EXPECT_TRUE(c.libraries.empty());
}

TEST(Compose, SourceScanFindsBlasInsideOpenMP) {
  auto src = SourceDir::of("omp_blas.c");
  auto o = options("omp_blas");
  o.source_dir = src.dir.string();
  Diagnostics d;
  Composition c = compose(o, d);
  EXPECT_TRUE(c.source_scanned);
  EXPECT_TRUE(has_relation(c, Relation::Kind::Nested, "libgomp", "openblas")) << to_json(c).dump(1);
  bool dgemm = false;
  for (auto& cs : c.call_sites)
    if (cs.symbol == "cblas_dgemm") {
      dgemm = true;
      EXPECT_EQ(cs.library, "openblas");
      EXPECT_EQ(cs.file, "omp_blas.c");
      ASSERT_FALSE(cs.regions.empty());
      EXPECT_EQ(cs.regions.front().rfind("omp_parallel@omp_blas.c:", 0), 0u);
    }
  EXPECT_TRUE(dgemm);
}

TEST(Compose, SourceScanSeesNoNestingWhereThereIsNone) {
  auto src = SourceDir::of("calm.c");
  auto o = options("calm");
  o.source_dir = src.dir.string();
  Diagnostics d;
  Composition c = compose(o, d);
  EXPECT_TRUE(c.source_scanned);
  EXPECT_TRUE(c.relations.empty()) << to_json(c).dump(1);
  // Nothing meets: only single-library hypotheses remain (each pool may under-use the machine).
  for (auto& h : hypothesize(c, d)) EXPECT_EQ(h.kind, "under_utilisation") << h.id;
}

TEST(Compose, SourceScanFindsThreadsBesideOpenMP) {
  auto src = SourceDir::of("spin_pool.c");
  auto o = options("spin_pool");
  o.source_dir = src.dir.string();
  Diagnostics d;
  Composition c = compose(o, d);
  EXPECT_TRUE(c.app_threads);
  EXPECT_TRUE(has_relation(c, Relation::Kind::CoRun, "app-threads", "libgomp")) << to_json(c).dump(1);
  EXPECT_FALSE(has_relation(c, Relation::Kind::Nested, "libgomp", "app-threads"));
}

TEST(Compose, SourceScanFindsTbbBesideOpenMPInAStdThread) {
  auto src = SourceDir::of("tbb_omp.cpp");
  auto o = options("tbb_omp");
  o.source_dir = src.dir.string();
  Diagnostics d;
  Composition c = compose(o, d);
  EXPECT_NE(c.find_contract("onetbb"), nullptr);
  EXPECT_TRUE(has_relation(c, Relation::Kind::CoRun, "libgomp", "onetbb")) << to_json(c).dump(1);
}

TEST(Compose, CallGraphCarriesRegionsIntoCalledFunctions) {
  // BLAS is called two functions away from the parallel region, and from a pthread start routine.
  SourceDir src(Files{{"app.cpp", R"(
#include <cblas.h>
#include <pthread.h>
static void leaf(double* a) { cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 4, 4, 4, 1.0, a, 4, a, 4, 0.0, a, 4); }
static void middle(double* a) { leaf(a); }
void compute(double* a, int n) {
#pragma omp parallel for
  for (int i = 0; i < n; ++i) middle(a);
}
static void* worker(void* p) { cblas_ddot(4, (double*)p, 1, (double*)p, 1); return 0; }
int main() { pthread_t t; double a[16] = {0}; pthread_create(&t, 0, worker, a); compute(a, 8); return 0; }
)"}});
  auto o = options("omp_blas");
  o.source_dir = src.dir.string();
  Diagnostics d;
  Composition c = compose(o, d);
  bool via_graph = false, in_thread = false;
  for (auto& cs : c.call_sites) {
    if (cs.symbol == "cblas_dgemm") {
      EXPECT_EQ(cs.function, "leaf");
      for (auto& r : cs.regions) via_graph |= r.rfind("omp_parallel@app.cpp:7", 0) == 0;
    }
    if (cs.symbol == "cblas_ddot")
      for (auto& r : cs.regions) in_thread |= r.rfind("thread@app.cpp:", 0) == 0;
  }
  EXPECT_TRUE(via_graph) << to_json(c).dump(1);
  EXPECT_TRUE(in_thread) << to_json(c).dump(1);
  EXPECT_TRUE(has_relation(c, Relation::Kind::Nested, "libgomp", "openblas"));
  EXPECT_TRUE(has_relation(c, Relation::Kind::CoRun, "openblas", "libgomp"));
}

TEST(Compose, ManifestStatesLibrariesAndNesting) {
  SourceDir dir(Files{{"app.manifest", "# stated by hand\nlibrary libtbb.so.12\nnested onetbb > openblas\ncorun libgomp + onetbb\n"},
                 {"bad.manifest", "library libfoo.so\nnested onetbb openblas\nfrobnicate x\n"},
                 {"app.json", R"({"libraries": ["libtbb.so.12"], "nested": [["libgomp", "openblas"]]})"}});
  auto o = options("omp_blas");
  o.manifest = (dir.dir / "app.manifest").string();
  Diagnostics d;
  Composition c = compose(o, d);
  EXPECT_FALSE(d.has_errors()) << d.str();
  EXPECT_NE(c.find_contract("onetbb"), nullptr);
  EXPECT_TRUE(has_relation(c, Relation::Kind::Nested, "onetbb", "openblas"));
  EXPECT_TRUE(has_relation(c, Relation::Kind::CoRun, "libgomp", "onetbb"));

  o.manifest = (dir.dir / "app.json").string();
  Diagnostics dj;
  c = compose(o, dj);
  EXPECT_FALSE(dj.has_errors()) << dj.str();
  EXPECT_TRUE(has_relation(c, Relation::Kind::Nested, "libgomp", "openblas"));

  o.manifest = (dir.dir / "bad.manifest").string();
  Diagnostics bad;
  compose(o, bad);
  ASSERT_EQ(bad.error_count(), 2u) << bad.str();
  EXPECT_EQ(bad.items()[0].loc.line, 2);
  EXPECT_NE(bad.str().find("unknown manifest statement `frobnicate`"), std::string::npos);
}

TEST(Hypotheses, NestedOversubscriptionFromTheSourceAndTheContracts) {
  auto src = SourceDir::of("omp_blas.c");
  auto o = options("omp_blas");
  o.source_dir = src.dir.string();
  Diagnostics d;
  Composition c = compose(o, d);
  auto hs = hypothesize(c, d);
  const Hypothesis* h = find_h(hs, "nested_oversubscription:libgomp>openblas");
  ASSERT_NE(h, nullptr) << d.str();
  EXPECT_EQ(h->kind, "nested_oversubscription");
  EXPECT_EQ(h->constraint, "OMP_NUM_THREADS * OPENBLAS_NUM_THREADS <= ncores");
  EXPECT_EQ(h->probe.at("OPENBLAS_NUM_THREADS"), "1");
  EXPECT_NE(std::find(h->controls.begin(), h->controls.end(), "OPENBLAS_NUM_THREADS"), h->controls.end());
  EXPECT_NE(std::find(h->controls.begin(), h->controls.end(), "OMP_NUM_THREADS"), h->controls.end());
  bool from_assume = false;
  for (auto& s : h->sources) from_assume |= s.find("openblas.lpcl:") != std::string::npos && s.find("assume no_nesting") != std::string::npos;
  EXPECT_TRUE(from_assume) << testing::PrintToString(h->sources);
  EXPECT_NE(h->basis.find("omp_blas.c:"), std::string::npos);
  // Only relations the source shows: nothing co-runs here.
  for (auto& x : hs) EXPECT_NE(x.kind, "corun_oversubscription") << x.id;
  auto g = guides(hs, true);
  auto gi = std::find_if(g.begin(), g.end(), [&](const Guide& x) { return x.id == h->id; });
  ASSERT_NE(gi, g.end());
  EXPECT_EQ(gi->constraint, h->constraint);
  EXPECT_EQ(gi->remedies.size(), h->remedies.size());
}

TEST(Hypotheses, WithoutSourceEveryPairIsPossible) {
  Diagnostics d;
  Composition c = compose(options("omp_blas"), d);
  auto hs = hypothesize(c, d);
  const Hypothesis* nested = find_h(hs, "nested_oversubscription:libgomp>openblas");
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->basis.rfind("possible", 0), 0u);
  EXPECT_NE(find_h(hs, "spin_interference:libgomp>openblas"), nullptr);
  // OpenBLAS opens no region: it cannot be the outer side.
  EXPECT_EQ(find_h(hs, "nested_oversubscription:openblas>libgomp"), nullptr);
}

TEST(Hypotheses, NameOnlyCompositionForTheService) {
  NamedComposition req;
  req.libraries = {"libgomp", "libopenblas.so.0"};
  req.nested = {{"libgomp", "libopenblas.so.0"}};
  req.contract_dirs = {SYSPILOT_TEST_CONTRACTS};
  Diagnostics d;
  Composition c = compose_named(req, d);
  EXPECT_FALSE(d.has_errors()) << d.str();
  auto hs = hypothesize(c, d);
  ASSERT_NE(find_h(hs, "nested_oversubscription:libgomp>openblas"), nullptr);
  req.libraries.push_back("libnothing.so.9");
  Diagnostics d2;
  compose_named(req, d2);
  EXPECT_TRUE(d2.has_errors());
  EXPECT_NE(d2.str().find("libnothing.so.9"), std::string::npos);
}

TEST(Hypotheses, RulesAreDataAndMalformedOnesAreReported) {
  SourceDir rules(Files{{"my_rule.json", R"({"kind": "custom_pool_check", "title": "Custom", "relation": "single",
      "roles": [{"name": "lib", "all": ["demand:cpu.threads"]}],
      "symptom": "{lib} uses {lib:cpu.threads}", "controls": ["lib:cpu.threads"], "constraint": "{lib:cpu.threads} <= ncores",
      "checks": [{"signal": "threads_max", "op": "<=", "value": "ncpus"}]})"},
                   {"broken.json", R"({"kind": "x", "relation": "sideways", "roles": []})"}});
  Diagnostics d;
  Composition c = compose(options("omp_blas"), d);
  Diagnostics rd;
  auto hs = hypothesize(c, rd, rules.dir.string());
  const Hypothesis* h = find_h(hs, "custom_pool_check:openblas");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->symptom, "openblas uses OPENBLAS_NUM_THREADS");
  EXPECT_EQ(h->constraint, "OPENBLAS_NUM_THREADS <= ncores");
  ASSERT_EQ(rd.error_count(), 1u) << rd.str();
  EXPECT_NE(rd.str().find("broken.json"), std::string::npos);
  EXPECT_NE(rd.str().find("sideways"), std::string::npos);
}

// A library linked into the executable itself has no soname to bind. Three kinds of evidence
// bind its contract: a defined symbol matching `binds symbol` (unstripped), the executable's name
// matching `binds executable`, or the names of two env controls no other contract declares
// among the executable's read-only strings (stripped). A name shared by several contracts, or a
// single name, binds nothing.
TEST(Compose, LibrariesLinkedIntoTheExecutableBindTheirContracts) {
  testing_support::Scratch s("embedded");
  const std::string contracts = (s.dir / "contracts").string();
  fs::create_directories(contracts);
  std::ofstream(contracts + "/foolib.lpcl") << R"(contract foolib "1.0" {
  binds soname "libfoo.so.1";
  binds symbol "foolib_*";
  binds executable "foo-cli";
  control FOOLIB_THREADS : env int in [0, 64] read_at init;
  control FOOLIB_LEVEL : env int in [1, 19] read_at init;
  control OMP_NUM_THREADS : env int in [1, 1024] read_at init;
}
)";
  std::ofstream(contracts + "/barlib.lpcl") << R"(contract barlib "1.0" {
  binds soname "libbar.so.1";
  control OMP_NUM_THREADS : env int in [1, 1024] read_at init;
  control GOMP_SPINCOUNT : env int read_at init;
}
)";
  // The library's code, linked in: reads its two variables; foolib_init is its entry point.
  s.write("foolib.c", R"(#include <stdlib.h>
int foolib_init(void) { return atoi(getenv("FOOLIB_THREADS") ? getenv("FOOLIB_THREADS") : "0") +
                               atoi(getenv("FOOLIB_LEVEL") ? getenv("FOOLIB_LEVEL") : "3"); }
)");
  s.write("main.c", "int foolib_init(void);\nint main(void) { return foolib_init() > 1000; }\n");
  s.write("one.c", R"(#include <stdlib.h>
int main(void) { return getenv("FOOLIB_THREADS") != 0; }
)");
  s.write("shared.c", R"(#include <stdlib.h>
int main(void) { return (getenv("OMP_NUM_THREADS") != 0) + (getenv("GOMP_SPINCOUNT") != 0); }
)");
  const std::string unstripped = s.compile("app", "'" + s / "main.c" + "' '" + s / "foolib.c" + "'");
  ASSERT_FALSE(unstripped.empty());
  const std::string stripped = s.compile("app-stripped", "-s '" + s / "main.c" + "' '" + s / "foolib.c" + "'");
  const std::string named = s.compile("foo-cli", "-s '" + s / "one.c" + "'");
  const std::string one = s.compile("one-name", "-s '" + s / "one.c" + "'");
  const std::string shared = s.compile("shared-names", "-s '" + s / "shared.c" + "'");
  ASSERT_FALSE(stripped.empty() || named.empty() || one.empty() || shared.empty());

  auto bound = [&](const std::string& binary, std::string* how = nullptr) {
    ComposeOptions o;
    o.binary = binary;
    o.contract_dirs = {contracts};
    o.synthesize = false;
    Diagnostics d;
    Composition c = compose(o, d);
    std::set<std::string> names;
    for (const auto& u : c.contracts) names.insert(u.contract.name);
    for (const auto& l : c.libraries)
      if (l.contract == "foolib" && how) *how = l.found_by;
    return names;
  };
  std::string how;
  EXPECT_EQ(bound(unstripped, &how), (std::set<std::string>{"foolib"}));
  EXPECT_EQ(how, "embedded: defines foolib_init");
  how.clear();
  EXPECT_EQ(bound(stripped, &how), (std::set<std::string>{"foolib"}));
  EXPECT_EQ(how, "embedded: holds the names FOOLIB_THREADS, FOOLIB_LEVEL");
  how.clear();
  EXPECT_EQ(bound(named, &how), (std::set<std::string>{"foolib"}));
  EXPECT_EQ(how, "embedded: executable foo-cli");
  EXPECT_TRUE(bound(one).empty()) << "one name alone binds nothing";
  EXPECT_TRUE(bound(shared).empty()) << "OMP_NUM_THREADS is declared by two contracts; GOMP_SPINCOUNT alone is one name";
}

// Debian's zstd command links libzstd statically and is stripped: the corpus contract binds it
// by the names its getenv calls read, and `analyze` sees zstd's controls.
TEST(Compose, DebiansStaticZstdCommandBindsTheZstdContract) {
  if (!fs::exists("/usr/bin/zstd")) GTEST_SKIP() << "Debian's zstd package is not installed";
  ComposeOptions o;
  o.binary = "/usr/bin/zstd";
  o.contract_dirs = {std::string(SYSPILOT_TEST_PROGRAM_SOURCES) + "/../../../corpus"};
  o.synthesize = false;
  Diagnostics d;
  Composition c = compose(o, d);
  const ContractUse* z = c.find_contract("zstd");
  ASSERT_TRUE(z) << d.str();
  const Library* l = find_lib(c, "zstd (linked into zstd)");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->found_by.rfind("embedded: ", 0), 0u) << l->found_by;
  EXPECT_NE(d.str().find("embedded-library"), std::string::npos) << d.str();
}
