// The LPCL subcommands of the real syspilot binary: exit codes, stdin, in-place rewrite.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "lpcl_test_support.h"

namespace syspilot::lpcl {
namespace {

using testing::read_file;
using testing::syspilot;
using testing::write_file;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::temp_dir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& text) {
    std::string p = dir_ + "/" + name;
    write_file(p, text);
    return p;
  }
  std::string dir_;
};

const char* kMessy = "contract x \"1\" {\n  demand cpu.threads = (A);\n    control A : env int;\n}\n";
const char* kCanonical = "contract x \"1\" {\n  control A : env int;\n\n  demand cpu.threads = A;\n}\n";

TEST_F(Cli, CheckExitCodes) {
  auto ok = syspilot({"check", file("ok.lpcl", kCanonical)});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(ok.err, "1 file(s) checked: 0 error(s), 0 warning(s)\n");
  std::string bad = file("bad.lpcl", "contract x \"1\" {\n  demand cpu.thread = 1;\n}\n");
  auto r = syspilot({"check", bad});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, bad + ":2:3: error: unknown resource 'cpu.thread' [unknown-resource]\n  hint: did you mean 'cpu.threads'?\n"
                         "1 file(s) checked: 1 error(s), 0 warning(s)\n");
  auto missing = syspilot({"check", dir_ + "/missing.lpcl"});
  EXPECT_EQ(missing.status, 2) << missing.err;
  auto stdin_run = syspilot({"check", "-"}, "contract x \"1\" {\n  demand cpu.threads = 2\n}\n");
  EXPECT_EQ(stdin_run.status, 1);
  EXPECT_NE(stdin_run.err.find("<stdin>:2:25: error: expected ';' after demand"), std::string::npos) << stdin_run.err;
}

// A file with thousands of errors prints the first 200 and says how many more there are; the
// summary counts them all.
TEST_F(Cli, CheckPrintsAtMost200DiagnosticsAFile) {
  std::string text = "contract x \"1\" {\n  control A : env int;\n";
  for (int i = 0; i < 3000; ++i) text += "  demand cpu.thread = 1;\n";
  text += "}\n";
  std::string path = file("many.lpcl", text);
  auto r = syspilot({"check", path});
  EXPECT_EQ(r.status, 1);
  size_t lines = std::count(r.err.begin(), r.err.end(), '\n');
  EXPECT_LT(lines, 500u) << r.err.size() << " bytes";
  // every line is an unknown resource, and every demand after the first repeats it: 5999 in all
  EXPECT_NE(r.err.find(path + ": 5799 more diagnostic(s) not shown (the first 200 are)"), std::string::npos)
      << r.err.substr(r.err.size() > 400 ? r.err.size() - 400 : 0);
  EXPECT_NE(r.err.find("1 file(s) checked: 5999 error(s)"), std::string::npos);
}

TEST_F(Cli, FmtPrintsChecksAndRewrites) {
  std::string messy = file("messy.lpcl", kMessy);
  auto out = syspilot({"fmt", messy});
  EXPECT_EQ(out.status, 0) << out.err;
  EXPECT_EQ(out.out, kCanonical);
  EXPECT_EQ(syspilot({"fmt", "--check", messy}).status, 1);
  EXPECT_EQ(read_file(messy), kMessy);  // --check never writes
  auto w = syspilot({"fmt", "-w", messy});
  EXPECT_EQ(w.status, 0) << w.err;
  EXPECT_EQ(read_file(messy), kCanonical);
  EXPECT_EQ(syspilot({"fmt", "--check", messy}).status, 0);
  auto piped = syspilot({"fmt", "-"}, kMessy);
  EXPECT_EQ(piped.out, kCanonical);
}

// fmt -w through a link rewrites the file the link names and leaves the link a link; the file
// keeps its permissions (a private contract stays private).
TEST_F(Cli, FmtRewritesThroughALinkAndKeepsPermissions) {
  namespace fs = std::filesystem;
  std::string real = file("real.lpcl", kMessy);
  fs::permissions(real, fs::perms::owner_read | fs::perms::owner_write);
  std::string link = dir_ + "/link.lpcl";
  fs::create_symlink("real.lpcl", link);
  auto w = syspilot({"fmt", "-w", link});
  EXPECT_EQ(w.status, 0) << w.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_file(real), kCanonical);
  EXPECT_EQ(fs::status(real).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  for (auto& e : fs::directory_iterator(dir_)) EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
}

// contracts import of a file with thousands of errors prints the first 200 and how many more,
// as check does, and stores nothing.
TEST_F(Cli, ImportPrintsAtMost200DiagnosticsAFile) {
  std::string text = "contract x \"1\" {\n  control A : env int;\n";
  for (int i = 0; i < 3000; ++i) text += "  demand cpu.thread = 1;\n";
  text += "}\n";
  std::string path = file("many.lpcl", text);
  auto r = syspilot({"contracts", "import", path, "--db", dir_ + "/s.db"});
  EXPECT_EQ(r.status, 2) << r.err.substr(0, 400);
  size_t lines = std::count(r.err.begin(), r.err.end(), '\n');
  EXPECT_LT(lines, 500u) << r.err.size() << " bytes";
  EXPECT_NE(r.err.find(path + ": 5799 more diagnostic(s) not shown (the first 200 are)"), std::string::npos)
      << r.err.substr(r.err.size() > 400 ? r.err.size() - 400 : 0);
  EXPECT_NE(r.err.find("nothing was stored"), std::string::npos) << r.err.substr(r.err.size() > 400 ? r.err.size() - 400 : 0);
}

TEST_F(Cli, FmtRefusesBrokenFilesAndLeavesThemAlone) {
  std::string broken = file("broken.lpcl", "contract x \"1\" {\n  control A : env int\n}\n");
  auto r = syspilot({"fmt", "-w", broken});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("broken.lpcl:2:22: error: expected ';'"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(broken), "contract x \"1\" {\n  control A : env int\n}\n");
}

TEST_F(Cli, JsonBothWays) {
  std::string src = file("x.lpcl", kMessy);
  auto j = syspilot({"to-json", src});
  ASSERT_EQ(j.status, 0) << j.err;
  auto parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["contracts"][0]["name"], "x");
  std::string jf = file("x.json", j.out);
  auto back = syspilot({"from-json", jf});
  EXPECT_EQ(back.status, 0) << back.err;
  EXPECT_EQ(back.out, kCanonical);
  auto bad = syspilot({"from-json", file("bad.json", "{not json")});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("is not valid JSON"), std::string::npos);
  auto invalid = syspilot({"from-json", "-"}, R"({"contracts": [{"name": 3}]})");
  EXPECT_EQ(invalid.status, 2);
  EXPECT_NE(invalid.err.find("contracts[0].name: expected a string"), std::string::npos) << invalid.err;
}

TEST_F(Cli, DiffTextJsonAndExitCodes) {
  std::string a = file("a.lpcl", kCanonical);
  std::string b = file("b.lpcl", "contract x \"1\" {\n  control A : env int default 4;\n\n  demand cpu.threads = A;\n}\n");
  auto same = syspilot({"diff", a, file("m.lpcl", kMessy)});
  EXPECT_EQ(same.status, 0);
  EXPECT_EQ(same.out, "");
  auto changed = syspilot({"diff", a, b});
  EXPECT_EQ(changed.status, 0);
  EXPECT_EQ(changed.out, "~ control A default: (none) -> 4\n");
  auto js = syspilot({"diff", "--json", a, b});
  EXPECT_EQ(js.status, 0);
  EXPECT_EQ(nlohmann::json::parse(js.out)["changes"][0]["after"], "4");
  EXPECT_EQ(syspilot({"diff", a, dir_ + "/nope.lpcl"}).status, 2);
}

TEST_F(Cli, EverySubcommandHasHelp) {
  for (const char* cmd : {"check", "fmt", "to-json", "from-json", "diff"}) {
    auto r = syspilot({cmd, "--help"});
    EXPECT_EQ(r.status, 0) << cmd;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << cmd << ": " << r.out;
  }
  EXPECT_EQ(syspilot({"fmt"}).status, 2);  // FILE is required
}

}  // namespace
}  // namespace syspilot::lpcl
