// Hostile trees: symbolic link loops, dangling links, links leading out of the tree, FIFOs,
// unreadable files, invalid UTF-8, a 200 MB generated file, binary content named .c.
// Extraction finishes with a diagnostic for each skipped thing and still reports what the
// good files say, and never text from outside the tree.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "extract/extract.h"
#include "extract/walk.h"
#include "tests/extract/temp_tree.h"

namespace fs = std::filesystem;
using namespace syspilot::extract;

namespace {

using syspilot::extract::testing::TempTree;

bool has_code(const Facts& f, const std::string& code) {
  for (auto& d : f.diagnostics.items())
    if (d.code == code) return true;
  return false;
}

}  // namespace

TEST(ExtractHostile, SurvivesAndReportsEverySkippedThing) {
  TempTree t;
  t.write("src/good.c", "#include <stdlib.h>\nint n(void) { return atoi(getenv(\"GOOD_THREADS\")); }\n");
  t.write("src/latin1.c", std::string("/* caf\xe9 \xff\xfe */\nchar* f(void) { return getenv(\"LATIN1_OK\"); }\n"));
  t.write("src/blob.c", std::string("\x7f\x45LF\0\0\0getenv(\"NOT_SOURCE\")", 24));
  t.write("src/nul.c", std::string("int x;\0\0\0 getenv(\"NUL_BYTES\");", 31));
  fs::create_directories(t.root / "loop");
  fs::create_directory_symlink(t.root, t.root / "loop" / "back");   // loop to the root
  fs::create_symlink(t.root / "missing.c", t.root / "src" / "dangling.c");
  ASSERT_EQ(mkfifo((t.root / "src" / "pipe.c").c_str(), 0600), 0);  // opening it would block
  t.write("locked/secret.c", "char* s(void) { return getenv(\"LOCKED\"); }\n");
  fs::permissions(t.root / "locked" / "secret.c", fs::perms::none);
  {
    // a 200 MB generated source: sparse, so the test costs no disk time
    int fd = ::open((t.root / "src" / "generated_tables.c").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 200LL << 20), 0);
    ::close(fd);
  }
  ExtractOptions o;
  o.paths = {t.root.string()};
  o.threads = 2;
  o.api_controls = false;
  auto start = std::chrono::steady_clock::now();
  Facts f = extract(o);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(secs, 20.0) << "nothing may hang the walk";

  std::set<std::string> names;
  for (auto& e : f.env_vars) names.insert(e.name);
  EXPECT_TRUE(names.count("GOOD_THREADS"));
  EXPECT_TRUE(names.count("LATIN1_OK")) << "invalid UTF-8 is scanned as bytes";
  EXPECT_FALSE(names.count("NOT_SOURCE"));
  EXPECT_FALSE(names.count("NUL_BYTES"));
  EXPECT_TRUE(has_code(f, "walk-symlink-loop"));
  EXPECT_TRUE(has_code(f, "walk-bad-link"));
  EXPECT_TRUE(has_code(f, "skip-generated"));
  EXPECT_TRUE(has_code(f, "skip-not-source"));
  EXPECT_TRUE(has_code(f, "invalid-utf8"));
  if (::geteuid() != 0) {
    EXPECT_TRUE(has_code(f, "skip-unreadable"));
    EXPECT_FALSE(names.count("LOCKED"));
  }
  auto j = to_json(f).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  EXPECT_NE(j.find("GOOD_THREADS"), std::string::npos);
}

TEST(ExtractHostile, MissingPathAndSizeLimit) {
  ExtractOptions o;
  o.paths = {"/nonexistent/extract-path"};
  Facts f = extract(o);
  EXPECT_TRUE(f.diagnostics.has_errors());
  EXPECT_EQ(f.files_scanned, 0u);

  TempTree t;
  t.write("big.c", std::string(4096, ' ') + "char* f(void){return getenv(\"BIG\");}\n");
  ExtractOptions small;
  small.paths = {t.root.string()};
  small.max_file_bytes = 1024;
  small.api_controls = false;
  Facts g = extract(small);
  EXPECT_TRUE(has_code(g, "skip-too-large"));
  EXPECT_TRUE(g.env_vars.empty());
}

// A submitted tree whose links point at a file outside it: the outside text must never reach
// the facts (it would be served in a contract). Links that stay inside are read under their
// own names; loops and FIFOs end the walk quickly; a root that is itself a link is resolved.
TEST(ExtractHostile, SymlinksNeverLeadOutOfTheTree) {
  TempTree t, outside;
  const std::string marker = "OUTSIDE-MARKER-7f3a9c";
  outside.write("secret.c", "/* " + marker + " */\nchar* s(void) { return getenv(\"SECRET_MARKER_VAR\"); }\n");
  outside.write("docs/secret.md", "Set SECRET_DOC_VAR to leak. " + marker + "\n");
  t.write("lib/src/good.c", "char* g(void) { return getenv(\"GOOD_THREADS\"); }\n");
  t.write("lib/src/inner.c", "char* i(void) { return getenv(\"INSIDE_LINK_VAR\"); }\n");
  fs::path lib = t.root / "lib";
  fs::create_symlink(outside.root / "secret.c", lib / "src" / "abs_leak.c");                 // absolute
  fs::create_symlink(fs::relative(outside.root / "secret.c", lib / "src"), lib / "src" / "rel_leak.c");
  fs::create_directory_symlink(outside.root / "docs", lib / "docs_out");                    // folder out
  fs::create_symlink("inner.c", lib / "src" / "alias.c");                                   // stays inside
  fs::create_directory_symlink("src", lib / "src_again");                                   // folder inside
  fs::create_symlink("loop_b.c", lib / "src" / "loop_a.c");                                 // a <-> b
  fs::create_symlink("loop_a.c", lib / "src" / "loop_b.c");
  ASSERT_EQ(mkfifo((lib / "src" / "fifo.c").c_str(), 0600), 0);
  ASSERT_EQ(mkfifo((outside.root / "pipe.c").c_str(), 0600), 0);
  fs::create_symlink(outside.root / "pipe.c", lib / "src" / "to_fifo.c");
  fs::create_directory_symlink(lib, t.root / "lib-link");  // the root as given is itself a link

  ExtractOptions o;
  o.paths = {(t.root / "lib-link").string()};
  o.threads = 2;
  o.api_controls = false;
  auto start = std::chrono::steady_clock::now();
  Facts f = extract(o);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);

  std::multiset<std::string> names;
  std::set<std::string> files;
  for (auto& e : f.env_vars) {
    names.insert(e.name);
    files.insert(e.file);
  }
  EXPECT_TRUE(names.count("GOOD_THREADS"));
  EXPECT_FALSE(names.count("SECRET_MARKER_VAR")) << "a link led out of the tree";
  auto j = to_json(f).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  EXPECT_EQ(j.find(marker), std::string::npos);
  EXPECT_EQ(j.find("SECRET_DOC_VAR"), std::string::npos);
  EXPECT_TRUE(has_code(f, "walk-link-escape"));
  // A file link inside the tree is read under the link's name; a folder link inside is not
  // descended, so src/ is scanned once.
  EXPECT_EQ(names.count("INSIDE_LINK_VAR"), 2u);
  EXPECT_TRUE(files.count("src/alias.c"));
  EXPECT_TRUE(files.count("src/inner.c"));
  EXPECT_EQ(names.count("GOOD_THREADS"), 1u);
  EXPECT_TRUE(has_code(f, "walk-link-dir"));
  EXPECT_TRUE(has_code(f, "walk-bad-link"));    // the a <-> b loop
  EXPECT_TRUE(has_code(f, "skip-not-source"));  // the FIFO, never opened
}

// A root that is a FIFO is skipped, not opened (opening it would block for ever).
TEST(ExtractHostile, FifoRootIsNotOpened) {
  TempTree t;
  ASSERT_EQ(mkfifo((t.root / "pipe.c").c_str(), 0600), 0);
  ExtractOptions o;
  o.paths = {(t.root / "pipe.c").string()};
  o.api_controls = false;
  auto start = std::chrono::steady_clock::now();
  Facts f = extract(o);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
  EXPECT_TRUE(has_code(f, "skip-not-source"));
  EXPECT_EQ(f.files_scanned, 0u);
}

// An initializer of 200000 elements: the query walk over so wide a node slows with the
// square of its width, so it is left out and said so; the reads before and after it stand.
TEST(ExtractHostile, AHugeInitializerIsLeftOutAndSaidSo) {
  TempTree t;
  std::string wide = "#include <stdlib.h>\nchar* a(void) { return getenv(\"BEFORE_WIDE\"); }\nint x[] = {";
  for (int i = 0; i < 200000; ++i) wide += "1,";
  wide += "1};\nchar* b(void) { return getenv(\"AFTER_WIDE\"); }\n";
  t.write("src/wide.c", wide);
  ExtractOptions o;
  o.paths = {t.root.string()};
  o.threads = 1;
  o.api_controls = false;
  Facts f = extract(o);
  std::set<std::string> names;
  for (auto& e : f.env_vars) names.insert(e.name);
  EXPECT_EQ(names, (std::set<std::string>{"BEFORE_WIDE", "AFTER_WIDE"}));
  EXPECT_NE(f.diagnostics.str().find("too-wide"), std::string::npos) << f.diagnostics.str();
}

// Files of tens of thousands of unclosed brackets (C and Python) once corrupted the parser's
// heap and killed the process: they are not parsed, said so, and the tree's other files are
// read. A file nesting deep but within the bound, with brackets inside literals and comments,
// is read.
TEST(ExtractHostile, DeeplyNestedBracketsAreSkippedNotFatal) {
  TempTree t;
  t.write("src/parens.c", std::string(65535, '('));
  std::string calls;
  for (int i = 0; i < 20000; ++i) calls += "f(x,";
  t.write("src/calls.c", calls);
  t.write("tools/deep.py", std::string(30000, '['));
  std::string fine = "#include <stdlib.h>\n/* ((((((((( */ const char* s = \"[[[[[[[[\";\n";
  for (int i = 0; i < 100; ++i) fine += "int g" + std::to_string(i) + "(void) { if (1) { ";
  fine += "getenv(\"STILL_READ\");";
  for (int i = 0; i < 100; ++i) fine += " } return 0; }\n";
  t.write("src/fine.c", fine);
  ExtractOptions o;
  o.paths = {t.root.string()};
  o.threads = 2;
  o.api_controls = false;
  o.scope = "all";
  Facts f = extract(o);
  std::set<std::string> names;
  for (auto& e : f.env_vars) names.insert(e.name);
  EXPECT_EQ(names, (std::set<std::string>{"STILL_READ"}));
  std::string d = f.diagnostics.str();
  for (const char* file : {"src/parens.c", "src/calls.c", "tools/deep.py"})
    EXPECT_NE(d.find(std::string(file) + ": warning: brackets nested"), std::string::npos) << file << "\n" << d;
  EXPECT_EQ(d.find("src/fine.c: warning: brackets"), std::string::npos) << d;
}

// An isolated extraction runs in a child process: with room for its work it finds what the
// same extraction finds in-process; one that cannot finish (here: 16 MB of source in 16 files
// against a one-second limit) is ended, leaves empty facts with an extract-failed error, and the caller
// goes on.
TEST(ExtractHostile, AnIsolatedExtractionThatFailsLeavesTheCallerStanding) {
  TempTree t;
  t.write("src/env.c", "#include <stdlib.h>\nvoid f(void) { getenv(\"LIB_ONE\"); getenv(\"LIB_TWO\"); }\n");
  ExtractOptions o;
  o.paths = {t.root.string()};
  o.threads = 2;
  o.api_controls = false;
  Facts in_process = extract(o);
  o.isolate = true;
  Facts isolated = extract(o);
  auto names = [](const Facts& f) {
    std::set<std::string> n;
    for (auto& e : f.env_vars) n.insert(e.name + " " + e.file + ":" + std::to_string(e.line));
    return n;
  };
  EXPECT_EQ(names(isolated), names(in_process));
  EXPECT_EQ(names(isolated).size(), 2u);
  std::string big;
  for (int i = 0; big.size() < (1u << 20); ++i) big += "int f" + std::to_string(i) + "(void) { return " + std::to_string(i) + "; }\n";
  for (int k = 0; k < 16; ++k) t.write("src/big" + std::to_string(k) + ".c", big);
  o.isolate_timeout_s = 1;
  auto t0 = std::chrono::steady_clock::now();
  Facts failed = extract(o);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10);
  EXPECT_TRUE(failed.env_vars.empty()) << failed.diagnostics.str();
  EXPECT_NE(failed.diagnostics.str().find("stopped after 1 s; no facts [extract-failed]"), std::string::npos)
      << failed.diagnostics.str();
  for (int k = 0; k < 16; ++k) std::filesystem::remove(t.root / ("src/big" + std::to_string(k) + ".c"));
  EXPECT_EQ(names(extract(ExtractOptions{.paths = {t.root.string()}, .threads = 1, .api_controls = false})).size(), 2u);
}

// Headers that make the header pass work hard: a configure template of 200000 #cmakedefine
// lines (rewritten in one pass, not once per line), a public header including 3000 headers
// of the tree and each of those including it back (read once each, within the byte budget).
// The control after them is still found.
TEST(ExtractHostile, HeaderIncludesAndTemplatesAreReadWithinBounds) {
  TempTree t;
  std::string config;
  for (int i = 0; i < 200000; ++i) config += "#cmakedefine LIB_HAVE_" + std::to_string(i) + " 1\n";
  config += "#define LIB_API extern\n";
  t.write("include/lib/config.h.cmake", config);
  std::string top = "#include \"lib/config.h\"\n";
  for (int i = 0; i < 3000; ++i) {
    top += "#include \"part" + std::to_string(i) + ".h\"\n";
    t.write("src/part" + std::to_string(i) + ".h", "#include \"lib/lib.h\"\n");
  }
  top += "LIB_API int lib_set_num_threads(int n);\n";
  t.write("include/lib/lib.h", top);
  ExtractOptions o;
  o.paths = {t.root.string()};
  o.threads = 2;
  Facts f = extract(o);
  std::set<std::string> names;
  for (auto& a : f.api_controls) names.insert(a.name);
  EXPECT_EQ(names, (std::set<std::string>{"lib_set_num_threads"})) << f.diagnostics.str();
}

// A public header that includes an endless file (/dev/zero) or a FIFO nobody writes: clang
// reads what a header names, so the pass runs in a child bounded in memory and in time. The
// extraction ends with a warning on the header and keeps what the code scan found.
TEST(ExtractHostile, AHeaderIncludingAnEndlessOrBlockingFileIsBounded) {
  TempTree t;
  t.write("src/good.c", "#include <stdlib.h>\nchar* g(void) { return getenv(\"GOOD_THREADS\"); }\n");
  ASSERT_EQ(mkfifo((t.root / "pipe").c_str(), 0600), 0);
  for (const std::string& target : {std::string("/dev/zero"), (t.root / "pipe").string()}) {
    SCOPED_TRACE(target);
    t.write("include/lib/lib.h", "#include \"" + target + "\"\nint lib_set_num_threads(int n);\n");
    ExtractOptions o;
    o.paths = {t.root.string()};
    o.threads = 1;
    o.api_max_mb = 256;
    o.api_timeout_s = 5;
    Facts f = extract(o);
    // over the memory cap libclang gives up on the header (clang-parse) or the child ends (clang-budget)
    EXPECT_TRUE(has_code(f, "clang-budget") || has_code(f, "clang-parse")) << f.diagnostics.str();
    EXPECT_TRUE(f.api_controls.empty());
    ASSERT_EQ(f.env_vars.size(), 1u);
    EXPECT_EQ(f.env_vars[0].name, "GOOD_THREADS");
  }
}

// Files replaced between the walk and the read: by a link to a file outside the tree, by a
// FIFO (whose open would block), by a folder, by another file. Each is refused with a reason;
// the outside text is never read, and an unchanged file still is.
TEST(ExtractHostile, AFileReplacedAfterTheWalkIsNotRead) {
  TempTree t, outside("outside");
  outside.write("secret.c", "char* s(void) { return getenv(\"OUTSIDE_MARKER\"); }\n");
  for (auto* name : {"link.c", "fifo.c", "dir.c", "other.c", "kept.c"})
    t.write(std::string("src/") + name, "char* f(void) { return getenv(\"INSIDE\"); }\n");
  syspilot::Diagnostics d;
  auto entries = walk::list_files({t.root.string()}, d);
  ASSERT_EQ(entries.size(), 5u) << d.str();
  fs::path src = t.root / "src";
  for (auto* name : {"link.c", "fifo.c", "dir.c"}) fs::remove(src / name);
  fs::create_symlink(outside.root / "secret.c", src / "link.c");
  ASSERT_EQ(mkfifo((src / "fifo.c").c_str(), 0600), 0);
  fs::create_directory(src / "dir.c");
  t.write("src/other.c.new", "char* f(void) { return getenv(\"REPLACED\"); }\n");  // a new inode
  fs::rename(src / "other.c.new", src / "other.c");
  for (auto& e : entries) {
    SCOPED_TRACE(e.rel);
    std::string text, err;
    bool ok = walk::read_entry(e, 1 << 20, text, err);
    EXPECT_EQ(text.find("OUTSIDE_MARKER"), std::string::npos);
    EXPECT_EQ(text.find("REPLACED"), std::string::npos);
    if (e.rel == "src/kept.c") {
      EXPECT_TRUE(ok) << err;
      EXPECT_NE(text.find("INSIDE"), std::string::npos);
    } else {
      EXPECT_FALSE(ok);
      EXPECT_FALSE(err.empty());
    }
  }
}
