// Round-trip properties over every .lpcl file in the repository (fmt idempotent, JSON round
// trip, diff(x, fmt(x)) empty), and the canonical layout: groups, wrapping, comments.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lpcl_test_support.h"

namespace syspilot::lpcl {
namespace {

using testing::read_file;
using testing::run;

// Checks the three properties on `text`; returns false (with a message) when it does not parse.
void expect_round_trips(const std::string& text, const std::string& name) {
  Diagnostics d;
  Document doc = parse(text, name, d);
  ASSERT_FALSE(d.has_errors()) << d.str();
  std::string f1 = format(doc);
  Diagnostics d2;
  Document doc2 = parse(f1, name + " (formatted)", d2);
  ASSERT_FALSE(d2.has_errors()) << "formatted text does not parse:\n" << d2.str() << f1;
  EXPECT_EQ(format(doc2), f1) << "fmt is not idempotent for " << name;
  // JSON through its text form, as another process would see it.
  auto j = nlohmann::json::parse(to_json(doc).dump());
  Diagnostics d3;
  Document doc3 = from_json(j, name + ".json", d3);
  ASSERT_FALSE(d3.has_errors()) << d3.str();
  EXPECT_EQ(format(doc3), f1) << "JSON round trip differs for " << name;
  EXPECT_EQ(to_json(doc3)["contracts"].size(), j["contracts"].size());
  auto dd = diff(doc, doc2);
  EXPECT_TRUE(dd.empty()) << to_text(dd);
}

TEST(RoundTrip, EveryRepositoryFile) {
  auto files = testing::repository_lpcl_files();
  ASSERT_FALSE(files.empty()) << "no .lpcl files under " << SYSPILOT_SOURCE_DIR;
  size_t parsed = 0;
  for (auto& f : files) {
    SCOPED_TRACE(f);
    Diagnostics d;
    parse_file(f, d);
    if (d.has_errors()) {
      // A deliberately broken fixture: it must still be reported with a location.
      EXPECT_GT(d.items()[0].loc.line, 0) << d.str();
      continue;
    }
    ++parsed;
    expect_round_trips(read_file(f), f);
  }
  EXPECT_GT(parsed, 0u);
  std::cout << "[ round trip ] " << parsed << " of " << files.size() << " repository .lpcl files\n";
}

TEST(RoundTrip, DocumentedExamplesCheckClean) {
  for (const char* name : {"openmp", "openblas", "tbb", "jemalloc", "cuda_runtime"}) {
    std::string path = std::string(SYSPILOT_SOURCE_DIR) + "/docs/examples/" + name + ".lpcl";
    SCOPED_TRACE(path);
    Diagnostics d;
    Document doc = parse_file(path, d);
    ASSERT_FALSE(d.has_errors()) << d.str();
    check(doc, d);
    EXPECT_TRUE(d.empty()) << d.str();
    EXPECT_EQ(format(doc), read_file(path)) << "docs/examples/" << name << ".lpcl is not in canonical form";
  }
}

TEST(Format, GroupsStatementsInCanonicalOrderKeepingWrittenOrderInside) {
  auto r = run(R"(contract x "1" {
  signal os.threads expect 2;
  demand cpu.threads = B;
  control B : env int;
  control A : env int;
  binds soname "libx.so";
  origin manual;
  doc "d";
  assume exclusive(cpu.cores);
}
)");
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  EXPECT_EQ(format(r.doc), R"(contract x "1" {
  origin manual;

  doc "d";

  binds soname "libx.so";

  control B : env int;
  control A : env int;

  demand cpu.threads = B;

  assume exclusive(cpu.cores);

  signal os.threads expect 2;
}
)");
}

TEST(Format, WrapsLongControlLinesOntoContinuationLines) {
  auto r = run(R"(contract x "1" {
  control OPENBLAS_THREAD_TIMEOUT : env int in [4, 30] default 28 read_at init doc "idle workers spin for 2^N cycles before sleeping" @ "driver/others/blas_server.c:110" origin extracted confidence 0.9;
}
)");
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  std::string f = format(r.doc);
  EXPECT_EQ(f, R"(contract x "1" {
  control OPENBLAS_THREAD_TIMEOUT : env int in [4, 30] default 28 read_at init
      doc "idle workers spin for 2^N cycles before sleeping" @ "driver/others/blas_server.c:110"
      origin extracted confidence 0.9;
}
)");
  for (size_t start = 0, end; (end = f.find('\n', start)) != std::string::npos; start = end + 1)
    EXPECT_LE(end - start, 100u);
}

TEST(Format, CommentsAttachToStatementsAndSurvive) {
  std::string text = R"(# file header
contract x "1" {  # after the brace
  # about A
  # second line
  control A : env int;   # end of A's line
  # about the demand
  demand cpu.threads = A;
  # before the closing brace
}
# end of file
)";
  auto r = run(text);
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  const Contract& c = r.doc.contracts[0];
  EXPECT_EQ(c.comments, (std::vector<std::string>{"file header", "after the brace"}));
  EXPECT_EQ(c.controls[0].comments, (std::vector<std::string>{"about A", "second line", "end of A's line"}));
  EXPECT_EQ(c.demands[0].comments, (std::vector<std::string>{"about the demand"}));
  EXPECT_EQ(c.trailing_comments, (std::vector<std::string>{"before the closing brace"}));
  EXPECT_EQ(r.doc.trailing_comments, (std::vector<std::string>{"end of file"}));
  EXPECT_EQ(format(r.doc), R"(# file header
# after the brace
contract x "1" {
  # about A
  # second line
  # end of A's line
  control A : env int;

  # about the demand
  demand cpu.threads = A;

  # before the closing brace
}

# end of file
)");
  expect_round_trips(text, "comments");
}

TEST(Format, ExpressionsGetMinimalParentheses) {
  auto r = run(R"(contract x "1" {
  control A : env int;
  control B : env int;
  demand cpu.threads = ((A + B)) * (2 - (1 - A)) ?? (A ?? B) ?? -(-A) ?? !(A > 1);
}
)");
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  EXPECT_EQ(format(r.doc.contracts[0].demands[0].value), "(A + B) * (2 - (1 - A)) ?? (A ?? B) ?? - -A ?? !(A > 1)");
  expect_round_trips(format(r.doc), "parens");
}

TEST(Format, EveryStatementFormRoundTrips) {
  expect_round_trips(R"(contract glibc.malloc "2.36" {
  origin extracted @ "malloc/arena.c:1" confidence 0.5, llm("m-1"), manual;
  doc "tab\tquote\"backslash\\newline\n";
  binds soname "libc.so.6";
  binds symbol "malloc";
  binds header "malloc.h";
  binds module "ctypes";
  control glibc.malloc.arena_max : option("GLIBC_TUNABLES", ":", "=") size in {1, 2, 8} default 8 read_at init sets mem.arenas, mem.capacity;
  control MODE : env enum{passive, active} in {passive, active} default passive read_at region doc "wait policy";
  control mallopt : api(int param, int value) int read_at call;
  control F : env float in [0.0, 1e3] default 2.5e-1 origin llm confidence 0.25;
  control S : env string default "x";
  control D : env duration in [5us, 2min] default 1h @ "a.c:1" @ "b.c:2:3" @ "c.c:4-9";
  control BO : env bool default true;
  control H : env int default 0x1F;
  demand mem.arenas = glibc.malloc.arena_max ?? 8 * ncores when ncores > 1 && !(nnuma == 0) || ngpus != 0;
  assume shared(mem.capacity) origin manual;
  assume no_nesting(parallel_region);
  behavior allocates_arenas per cpu.cores count glibc.malloc.arena_max;
  behavior lazy_init;
  provides region none;
  signal os.minor_faults rises_with contention confidence 0.75;
  signal os.sys_time above 10 % ncpus;
  signal introspect env MALLOC_CHECK_ = 3;
}
)", "every-form");
}

TEST(RoundTrip, CommentsWithControlCharactersSurviveJson) {
  // Found by the fuzzer: a comment may hold any byte but the line end.
  expect_round_trips("# GNU\x10 runtime\r\ncontract x \"1\" {\n  # tab\there\x01\n  control A : env int;\n}\n# end\x1b\n", "control-chars");
}

TEST(Format, CrlfInputFormatsToLf) {
  auto r = run("contract x \"1\" {\r\n  control A : env int; # c\r\n}\r\n");
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  EXPECT_EQ(format(r.doc), "contract x \"1\" {\n  # c\n  control A : env int;\n}\n");
}

}  // namespace
}  // namespace syspilot::lpcl
