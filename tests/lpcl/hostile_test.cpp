// Hostile inputs: empty, 50 MB, deep nesting, NUL bytes, invalid UTF-8, CRLF, oversized
// files, random bytes. Each gives a clear error or a correct result, never a crash or hang.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <sstream>

#include "lpcl_test_support.h"

namespace syspilot::lpcl {
namespace {

namespace fs = std::filesystem;
using testing::first;
using testing::run;

TEST(Hostile, EmptyAndBlankInputsAreEmptyDocuments) {
  for (const char* text : {"", "\n\n", "   \t\r\n", "# only a comment\n"}) {
    auto r = run(text);
    EXPECT_TRUE(r.diags.empty()) << r.diags.str();
    EXPECT_TRUE(r.doc.contracts.empty());
  }
}

TEST(Hostile, FiftyMegabyteFileParsesAndChecks) {
  std::string dir = testing::temp_dir();
  std::string path = dir + "/big.lpcl";
  std::string text = "contract big \"1\" {\n";
  const std::string doc(180, 'd');
  size_t n = 0;
  while (text.size() < 50u * 1000 * 1000) {
    std::string i = std::to_string(n++);
    text += "  control C" + i + " : env int in [1, ncpus] default min(ncores, 8) read_at init doc \"" + doc + "\" @ \"src/f" + i +
            ".c:" + std::to_string(n) + "\";\n";
  }
  text += "  demand cpu.threads = C0 ?? ncpus;\n}\n";
  testing::write_file(path, text);
  auto t0 = std::chrono::steady_clock::now();
  Diagnostics d;
  Document doc_ = parse_file(path, d);
  auto t1 = std::chrono::steady_clock::now();
  ASSERT_FALSE(d.has_errors()) << d.str().substr(0, 2000);
  EXPECT_TRUE(check(doc_, d)) << d.str().substr(0, 2000);
  auto t2 = std::chrono::steady_clock::now();
  ASSERT_EQ(doc_.contracts.size(), 1u);
  EXPECT_EQ(doc_.contracts[0].controls.size(), n);
  EXPECT_EQ(doc_.contracts[0].controls.back().loc.line, static_cast<int>(n) + 1);
  double mb = text.size() / 1e6;
  std::cout << "[ 50 MB ] " << mb << " MB: parse " << std::chrono::duration<double>(t1 - t0).count() << " s, check "
            << std::chrono::duration<double>(t2 - t1).count() << " s\n";
  fs::remove_all(dir);
}

TEST(Hostile, FilesOver64MiBAreRefusedWithoutReading) {
  std::string dir = testing::temp_dir();
  std::string path = dir + "/huge.lpcl";
  testing::write_file(path, "");
  fs::resize_file(path, (64u << 20) + 1);  // sparse: costs no disk
  Diagnostics d;
  Document doc = parse_file(path, d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.items()[0].str(), path + ": error: file is 67108865 bytes; LPCL files are limited to 64 MiB [file-too-large]\n"
                                       "  hint: split it into one file per contract");
  EXPECT_TRUE(doc.contracts.empty());
  fs::remove_all(dir);
}

// A device, a FIFO or standard input has no size to check first: reading stops at the limit
// (it grew to gigabytes before the check) and the input is refused as too large.
TEST(Hostile, EndlessInputsStopAtTheLimit) {
  Diagnostics d;
  Document doc = parse_file("/dev/zero", d);
  ASSERT_EQ(d.size(), 1u) << d.str();
  EXPECT_EQ(d.items()[0].code, "file-too-large");
  EXPECT_TRUE(doc.contracts.empty());

  std::istringstream exact(std::string(1000, 'x')), over(std::string(1001, 'x'));
  std::string out;
  EXPECT_TRUE(read_bounded(exact, 1000, out));
  EXPECT_EQ(out.size(), 1000u);
  EXPECT_FALSE(read_bounded(over, 1000, out));
  EXPECT_EQ(out.size(), 1000u);
}

// A file that repeats one contract 20000 times: every copy after the first is a duplicate, and
// the counts of errors stay right while they arrive and after an edit of their severities.
TEST(Hostile, RepeatedContractsAreEachReportedOnce) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "contract c \"1\" {\n}\n";
  auto r = run(text);
  EXPECT_EQ(r.doc.contracts.size(), 20000u);
  Diagnostics d;
  EXPECT_FALSE(check(r.doc, d));
  EXPECT_EQ(d.error_count(), 19999u);
  for (auto& x : d.items()) x.severity = Severity::Warning;
  EXPECT_EQ(d.error_count(), 0u);
  EXPECT_EQ(d.warning_count(), 19999u);
  d.error({"f", 1, 1}, "one more");
  EXPECT_EQ(d.error_count(), 1u);
  d.clear();
  EXPECT_EQ(d.error_count(), 0u);
  EXPECT_EQ(d.warning_count(), 0u);
}

TEST(Hostile, MissingFileAndDirectoryAreReadErrors) {
  Diagnostics d;
  parse_file("/nonexistent/x.lpcl", d);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.items()[0].str(), "/nonexistent/x.lpcl: error: cannot read '/nonexistent/x.lpcl': No such file or directory [io-error]\n"
                                "  hint: check the path");
  Diagnostics d2;
  parse_file("/tmp", d2);
  ASSERT_EQ(d2.size(), 1u);
  EXPECT_EQ(d2.items()[0].code, "io-error");
}

std::string nested(const std::string& open, const std::string& middle, const std::string& close, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += open;
  s += middle;
  for (int i = 0; i < n; ++i) s += close;
  return s;
}

TEST(Hostile, DeepNestingIsRejectedWithoutStackOverflow) {
  const std::string head = "contract x \"1\" {\n  demand cpu.threads = ";
  const std::vector<std::string> exprs = {
      nested("(", "1", ")", 100000),       nested("-", "1", "", 100000),
      nested("min(", "1", ")", 100000),    nested("", "1", " ?? 1", 100000),
      nested("", "1", " + 1", 100000),     nested("!(", "true", ")", 50000),
  };
  for (auto& e : exprs) {
    auto r = run(head + e + ";\n}\n");
    ASSERT_FALSE(r.parsed);
    bool found = false;
    for (auto& x : r.diags.items())
      if (x.code == "too-deep") {
        found = true;
        EXPECT_EQ(x.message, "expression nested too deeply (more than 256 levels)");
        EXPECT_EQ(x.loc.line, 2);
      }
    EXPECT_TRUE(found) << r.diags.str().substr(0, 500);
    EXPECT_LE(r.diags.error_count(), 2u) << r.diags.str().substr(0, 500);
  }
  // Within the limit, deep expressions are fine and round-trip.
  auto ok = run(head + nested("(", "1", " + 1)", 100) + ";\n}\n");
  EXPECT_TRUE(ok.parsed) << ok.diags.str();
  EXPECT_EQ(format(parse(format(ok.doc), "f", ok.diags)), format(ok.doc));
}

TEST(Hostile, NulBytesAreReportedWithLocation) {
  EXPECT_EQ(first(std::string("contract x \"1\" {\n  doc \"a") + '\0' + "b\";\n}\n"),
            "t.lpcl:2:9: error: NUL byte in input [nul-byte]\n  hint: LPCL files are UTF-8 text; is this a binary file?");
  std::string binary(1000, '\0');
  auto r = run(binary);
  EXPECT_EQ(r.diags.error_count(), 10u);  // capped, then one summary note
  EXPECT_EQ(r.diags.items().back().message, "990 more encoding errors not shown");
}

TEST(Hostile, InvalidUtf8IsReportedWithLocationAndValidUtf8IsKept) {
  EXPECT_EQ(first("contract x \"1\" {\n  doc \"caf\xC3\";\n}\n"),
            "t.lpcl:2:11: error: invalid UTF-8 byte 0xc3 [invalid-utf8]\n  hint: save the file as UTF-8");
  EXPECT_EQ(first("contract x \"1\" {\n  # \xED\xA0\x80 surrogate\n}\n"),
            "t.lpcl:2:5: error: invalid UTF-8 byte 0xed [invalid-utf8]\n  hint: save the file as UTF-8");
  EXPECT_EQ(first("contract x \"1\" {\n  doc \"\xC0\xAF overlong\";\n}\n"),
            "t.lpcl:2:8: error: invalid UTF-8 byte 0xc0 [invalid-utf8]\n  hint: save the file as UTF-8");
  auto r = run("contract x \"1\" {\n  doc \"caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x9A\x80\"; # \xC3\xBC\n}\n");
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  EXPECT_EQ(r.doc.contracts[0].doc, "caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x9A\x80");
  EXPECT_EQ(first("contract x \"1\" {\n  control caf\xC3\xA9 : env int;\n}\n"),
            "t.lpcl:2:14: error: unexpected character '\xC3\xA9' [bad-character]\n"
            "  hint: non-ASCII text is allowed only inside strings and comments");
}

TEST(Hostile, ControlCharacterInApiParameters) {
  // Found by the fuzzer: raw C text must still be plain text.
  EXPECT_EQ(first("contract x \"1\" {\n  control A : api(int\x18 n) int;\n}\n"),
            "t.lpcl:2:22: error: control character in the parameter list of an api control [bad-character]\n"
            "  hint: write the C parameters as plain text: api(int n)");
}

TEST(Hostile, CrlfAndByteOrderMarkAreAccepted) {
  auto r = run("\xEF\xBB\xBF# c\r\ncontract x \"1\" {\r\n  control A : env int in [1, 2]\r\n      default 2;\r\n}\r\n");
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  EXPECT_EQ(r.doc.contracts[0].comments, std::vector<std::string>{"c"});
  EXPECT_EQ(r.doc.contracts[0].controls[0].loc.line, 3);
  auto bad = run("contract x \"1\" {\r\n  control A : env int\r\n}\r\n");
  EXPECT_EQ(bad.diags.items()[0].str(),
            "t.lpcl:2:22: error: expected ';' after control 'A', found '}' at line 3 [expected-token]\n  hint: end each statement with ';'");
}

TEST(Hostile, RandomBytesNeverCrash) {
  std::mt19937 rng(12345);
  const std::string alphabet = "contract x\"1\"{}()[];:,@=?!<>&|+-*/%# \n\t0123456789.eKiBmsuabc_\\\r";
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    size_t len = rng() % 200;
    for (size_t k = 0; k < len; ++k)
      text += (rng() % 10 == 0) ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
    if (i % 2) text = "contract x \"1\" {\n  control A : env int " + text;
    auto r = run(text);
    if (r.parsed) {
      // Anything that parses must format to something that parses to the same text.
      std::string f = format(r.doc);
      Diagnostics d;
      EXPECT_EQ(format(parse(f, "f", d)), f) << text;
      EXPECT_FALSE(d.has_errors()) << text;
    } else {
      for (auto& x : r.diags.items()) EXPECT_FALSE(x.message.empty());
    }
  }
}

}  // namespace
}  // namespace syspilot::lpcl
