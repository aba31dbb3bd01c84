// Docs (Markdown, RST, man, gzipped man, texinfo, HTML), binaries through libelf, threading
// facts and API controls from a public header, on fixtures and on installed libraries.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "extract/extract.h"
#include "extract/scanners.h"
#include "tests/extract/temp_tree.h"

namespace fs = std::filesystem;
using namespace syspilot::extract;

namespace {

Facts run(const std::string& path, bool api = false) {
  ExtractOptions o;
  o.paths = {path};
  o.threads = 2;
  o.api_controls = api;
  return extract(o);
}

const DocMention* mention(const Facts& f, const std::string& name) {
  for (auto& d : f.doc_mentions)
    if (d.name == name) return &d;
  return nullptr;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST(ExtractDocs, EveryFormatWithItsSentence) {
  Facts f = run(std::string(EXTRACT_FIXTURES) + "/docs");
  auto* md = mention(f, "FIXLIB_NUM_THREADS");
  ASSERT_NE(md, nullptr);
  EXPECT_EQ(md->format, "markdown");
  EXPECT_EQ(md->line, 3);
  EXPECT_NE(md->sentence.find("limit the worker pool"), std::string::npos) << md->sentence;
  std::map<std::string, std::string> want = {{"FIXLIB_SPIN_COUNT", "markdown"}, {"fixlib_set_num_threads", "markdown"},
                                             {"FIXLIB_ARENA_COUNT", "rst"}, {"FIXLIB_THREAD_TIMEOUT", "man"},
                                             {"FIXLIB_AFFINITY", "texinfo"}, {"FIXLIB_GPU_DEVICE", "html"}};
  for (auto& [name, fmt] : want) {
    auto* m = mention(f, name);
    ASSERT_NE(m, nullptr) << name;
    EXPECT_EQ(m->format, fmt) << name;
  }
  auto* man = mention(f, "FIXLIB_THREAD_TIMEOUT");
  EXPECT_EQ(man->file, "fixlib.3");
  EXPECT_EQ(mention(f, "X_Y_Z"), nullptr) << "HTML style blocks are not prose";
  for (auto& d : f.doc_mentions) EXPECT_EQ(d.sentence.find("\\fB"), std::string::npos) << "troff escapes stripped";
}

TEST(ExtractDocs, GzippedManPageFromTheSystem) {
  const char* page = "/usr/share/man/man1/zstd.1.gz";
  if (!fs::exists(page)) GTEST_SKIP() << page << " not installed";
  Facts f = run(page);
  auto* m = mention(f, "ZSTD_CLEVEL");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->format, "man");
  EXPECT_GT(m->line, 0);
}

TEST(ExtractBinary, InstalledSharedObjects) {
  struct Want { const char* path; const char* import; const char* knob; const char* exported; };
  std::vector<Want> libs = {
      {"/usr/lib/x86_64-linux-gnu/libopenblas.so.0", "getenv", "OPENBLAS_NUM_THREADS", "openblas_set_num_threads"},
      {"/usr/lib/x86_64-linux-gnu/libgomp.so.1", "pthread_create", "OMP_NUM_THREADS", "omp_set_num_threads"},
      {"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "pthread_create", "MALLOC_CONF", "mallctl"},
      {"/usr/lib/x86_64-linux-gnu/libtbb.so.12", "pthread_create", "TBB_VERSION", nullptr}};
  int seen = 0;
  for (auto& w : libs) {
    if (!fs::exists(w.path)) continue;
    ++seen;
    syspilot::Diagnostics d;
    BinaryFacts b = scan_binary(w.path, d);
    EXPECT_FALSE(b.soname.empty()) << w.path;
    EXPECT_TRUE(has(b.needed, "libc.so.6")) << w.path;
    EXPECT_TRUE(has(b.imports, w.import)) << w.path;
    EXPECT_TRUE(has(b.knob_strings, w.knob)) << w.path;
    if (w.exported) EXPECT_TRUE(has(b.exports, w.exported)) << w.path;
  }
  if (!seen) GTEST_SKIP() << "none of the libraries is installed";
  syspilot::Diagnostics d;
  scan_binary(std::string(EXTRACT_FIXTURES) + "/docs/README.md", d);
  EXPECT_TRUE(d.has_errors() || d.warning_count() > 0) << "a non-ELF file is a diagnostic, not a crash";
}

// A versioned shared object (libopenblas.so.0, 34 MB) is a shared object, not a man page of
// section 0 turned away by the size limit of documents.
TEST(ExtractBinary, LargeVersionedSharedObjectIsScanned) {
  const std::string path = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0";
  ASSERT_TRUE(fs::exists(path)) << "scripts/setup.sh installs libopenblas0-pthread";
  ASSERT_GT(fs::file_size(fs::canonical(path)), 16u << 20) << "the case needs an object over the documents' limit";
  ExtractOptions o;
  o.paths = {path};
  o.api_controls = false;
  Facts f = extract(o);
  ASSERT_EQ(f.binaries.size(), 1u) << f.diagnostics.str();
  EXPECT_EQ(f.binaries[0].soname, "libopenblas.so.0");
  EXPECT_TRUE(has(f.binaries[0].imports, "pthread_create"));
  EXPECT_TRUE(has(f.binaries[0].knob_strings, "OPENBLAS_NUM_THREADS"));
}

TEST(ExtractThreading, PoolSpinAffinityOmpGpu) {
  Facts f = run(std::string(EXTRACT_FIXTURES) + "/wrappers/src");
  std::map<std::string, int> kinds;
  for (auto& t : f.threading) ++kinds[t.kind];
  EXPECT_EQ(kinds["thread_create"], 1);
  EXPECT_EQ(kinds["spin_wait"], 2);
  EXPECT_EQ(kinds["affinity"], 1);
  EXPECT_EQ(kinds["omp_parallel"], 1);
  EXPECT_GE(kinds["gpu_call"], 1);
  for (auto& t : f.threading) {
    if (t.kind == "thread_create") {
      EXPECT_EQ(t.function, "blas_thread_init");
      EXPECT_TRUE(t.init_time);
      EXPECT_EQ(t.file, "pool.c");
    }
    if (t.kind == "spin_wait") EXPECT_EQ(t.function, "worker_main");
  }
  EXPECT_EQ(kinds["pool_init"], 1);
}

TEST(ExtractApi, ControlsFromAPublicHeaderWithDocs) {
  Facts f = run(std::string(EXTRACT_FIXTURES) + "/wrappers", true);
  std::map<std::string, const ApiControl*> by;
  for (auto& a : f.api_controls) by[a.name] = &a;
  ASSERT_TRUE(by.count("fixlib_set_num_threads"));
  EXPECT_EQ(by["fixlib_set_num_threads"]->category, "threads");
  EXPECT_EQ(by["fixlib_set_num_threads"]->file, "include/fixlib.h");
  EXPECT_EQ(by["fixlib_set_num_threads"]->line, 7);
  EXPECT_NE(by["fixlib_set_num_threads"]->doc.find("number of worker threads"), std::string::npos);
  EXPECT_NE(by["fixlib_set_num_threads"]->signature.find("int num_threads"), std::string::npos);
  ASSERT_TRUE(by.count("fixlib_set_affinity"));
  EXPECT_EQ(by["fixlib_set_affinity"]->category, "affinity");
  ASSERT_TRUE(by.count("fixlib_set_device"));
  EXPECT_EQ(by["fixlib_set_device"]->category, "device");
  EXPECT_FALSE(by.count("fixlib_get_num_threads"));  // "Returns the number of threads": a query
  EXPECT_FALSE(by.count("fixlib_dot"));
  // headers under src/ are not public: their functions are not API controls
  EXPECT_FALSE(by.count("ncclGetEnv"));
}

// DocBook manuals break tags across lines (`<link` then `linkend="...">` on the next): the
// attributes are markup and never reach a sentence; a bare `<` in prose is no tag.
TEST(ExtractDocs, TagsSplitAcrossLinesStayOutOfSentences) {
  std::string xml =
      "<para>This value is capped at <link\n"
      "linkend=\"opt.max_background_threads\"><mallctl>opt.max_background_threads</mallctl></link>\n"
      "at startup.</para>\n\n"
      "<para>When 1 < 2 the <link\n"
      "    linkend=\"opt.narenas\"\n"
      "    ><mallctl>opt.narenas</mallctl></link> option sets the arena count.</para>\n";
  auto ms = docs::scan_doc("jemalloc.xml.in", xml, "html");
  bool capped = false, narenas = false;
  for (const auto& m : ms) {
    EXPECT_EQ(m.sentence.find("linkend"), std::string::npos) << m.name << ": " << m.sentence;
    capped = capped || (m.name.find("max_background_threads") != std::string::npos &&
                        m.sentence.find("capped at") != std::string::npos);
    narenas = narenas || (m.name.find("narenas") != std::string::npos && m.sentence.find("1 < 2") != std::string::npos);
  }
  EXPECT_TRUE(capped);
  EXPECT_TRUE(narenas) << "a bare < in prose is text";
}

// A variable's rst section: the heading names it, the paragraphs below give its default and
// values without naming it again; one mention carries them after "NAME:", the field first.
// A sentence that names no knob but states a default speaks of the knobs named before it in
// its paragraph: the last sentence's that named any, or the entry's subject's ("this option").
TEST(ExtractDocs, ASentenceThatStatesADefaultSpeaksOfTheKnobsBeforeIt) {
  std::string md =
      "If `FIXLIB_NUM_THREADS` is not set, fixlib reads `OMP_NUM_THREADS`. If neither variable is set, the "
      "default number of threads is 1.\n\n"
      "The team is `FIXLIB_A_NT * FIXLIB_B_NT` threads.\nNote that any of these loop variables that is unset "
      "will default to 1.\n\n"
      "Nothing is named here. The default is 7.\n";
  auto ms = docs::scan_doc("threads.md", md, "markdown");
  std::map<std::string, std::string> said;
  for (const auto& m : ms) {
    EXPECT_EQ(m.sentence.find("default is 7"), std::string::npos) << "no knob before it: " << m.sentence;
    if (m.sentence.rfind(m.name + ": ", 0) == 0) said[m.name] = m.sentence;
  }
  EXPECT_EQ(said["FIXLIB_NUM_THREADS"], "FIXLIB_NUM_THREADS: If neither variable is set, the default number of threads is 1.");
  EXPECT_EQ(said["OMP_NUM_THREADS"], "OMP_NUM_THREADS: If neither variable is set, the default number of threads is 1.");
  EXPECT_EQ(said["FIXLIB_A_NT"], "FIXLIB_A_NT: Note that any of these loop variables that is unset will default to 1.");
  EXPECT_EQ(said["FIXLIB_B_NT"], "FIXLIB_B_NT: Note that any of these loop variables that is unset will default to 1.");
  for (const auto& m : ms)
    if (m.name == "FIXLIB_A_NT" && m.sentence.rfind("FIXLIB_A_NT: ", 0) == 0) EXPECT_EQ(m.line, 4);

  // A reference entry: "this option" is the entry's subject, not the option it points to.
  std::string xml =
      "<varlistentry><term><mallctl>opt.fix_threads</mallctl> (<type>bool</type>)</term>\n"
      "<listitem><para>Fixlib worker threads enabled/disabled. See <mallctl>opt.fix_arena_max</mallctl> for\n"
      "related tuning. This option is enabled by default.</para></listitem></varlistentry>\n";
  std::vector<std::string> subjects;
  for (const auto& m : docs::scan_doc("fixlib.xml", xml, "html"))
    if (m.sentence.find("enabled by default") != std::string::npos && m.sentence.rfind(m.name + ": ", 0) == 0)
      subjects.push_back(m.name);
  EXPECT_NE(std::find(subjects.begin(), subjects.end(), "opt.fix_threads"), subjects.end());
  EXPECT_EQ(std::find(subjects.begin(), subjects.end(), "opt.fix_arena_max"), subjects.end());
}

// A text file named after a shared object (what `ld.so --list-tunables` printed, saved beside
// it) is read as text: only ".so." followed by version numbers makes a shared object.
TEST(ExtractDocs, ATextFileNamedAfterASharedObjectIsReadAsText) {
  syspilot::extract::testing::TempTree t("sonames");
  t.write("ld-linux-x86-64.so.2_--list-tunables.txt",
          "glibc.malloc.arena_max: 0x0 (min: 0x1, max: 0xffffffffffffffff)\n"
          "glibc.pthread.mutex_spin_count: 0x64 (min: 0x0, max: 0x7fff)\n");
  Facts f = run(t.root.string());
  EXPECT_NE(mention(f, "glibc.malloc.arena_max"), nullptr) << f.diagnostics.str();
  EXPECT_NE(mention(f, "glibc.pthread.mutex_spin_count"), nullptr) << f.diagnostics.str();
}

// glibc's MALLOC_TOP_PAD_: a name of three parts or more that ends in an underscore is a name; a
// shorter one, or a family's prefix before `*`, is not.
TEST(ExtractDocs, TrailingUnderscoreNamesOfThreePartsOrMore) {
  auto names = knob_names_in(
      "MALLOC_TOP_PAD_ and MALLOC_MMAP_MAX_ control the same parameters; MALLOC_CHECK_ does not; "
      "the OMPI_MCA_ variables and BLIS_*_NT, BLIS_IC_*, FIX_ARENA_<n>_ are families.");
  EXPECT_TRUE(has(names, "MALLOC_TOP_PAD_"));
  EXPECT_TRUE(has(names, "MALLOC_MMAP_MAX_"));
  for (const char* n : {"MALLOC_CHECK_", "OMPI_MCA_", "BLIS_", "BLIS_IC_", "FIX_ARENA_"})
    EXPECT_FALSE(has(names, n)) << n;
}

TEST(ExtractDocs, RstSectionCarriesItsDefaultAndValues) {
  std::string rst =
      "Variables\n=========\n\n"
      "FIXLIB_WAIT_MODE (Linux)\n\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\"\n\n"
      "Selects how idle workers wait. The values for this variable are ``spin``, ``yield``, or ``sleep``.\n\n"
      "| **Default:** ``yield``\n| **Example:** ``FIXLIB_WAIT_MODE=spin``\n\n"
      "Not a variable\n\"\"\"\"\"\"\"\"\"\"\"\"\"\"\n\nThe default here is 3.\n";
  auto ms = docs::scan_doc("runtime.rst", rst, "rst");
  const DocMention* section = nullptr;
  for (const auto& m : ms)
    if (m.name == "FIXLIB_WAIT_MODE" && m.sentence.rfind("FIXLIB_WAIT_MODE:", 0) == 0) section = &m;
  ASSERT_NE(section, nullptr);
  EXPECT_EQ(section->line, 4);
  EXPECT_EQ(section->sentence,
            "FIXLIB_WAIT_MODE: Default: yield The values for this variable are spin, yield, or sleep.");
  for (const auto& m : ms) EXPECT_EQ(m.sentence.find("default here"), std::string::npos) << m.sentence;
}
