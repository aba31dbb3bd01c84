// Hostile trees: symbolic link loops, dangling links, FIFOs, unreadable files, invalid UTF-8,
// a 200 MB generated file, binary content named .c. Extraction finishes with a diagnostic
// for each skipped thing and still reports what the good files say.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "extract/extract.h"

namespace fs = std::filesystem;
using namespace syspilot::extract;

namespace {

struct TempTree {
  fs::path root;
  TempTree() {
    char tmpl[] = "/tmp/extract-hostile-XXXXXX";
    root = mkdtemp(tmpl);
  }
  ~TempTree() {
    std::error_code ec;
    fs::permissions(root / "locked", fs::perms::owner_all, ec);
    fs::remove_all(root, ec);
  }
  void write(const std::string& rel, const std::string& content) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel, std::ios::binary) << content;
  }
};

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
