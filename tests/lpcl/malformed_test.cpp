// At least 40 malformed inputs, each with the exact first diagnostic (text, location, code,
// hint), plus recovery: several errors reported in one pass.
#include <gtest/gtest.h>

#include "lpcl_test_support.h"

namespace syspilot::lpcl {
namespace {

using testing::first;
using testing::run;

struct Malformed {
  const char* input;
  const char* expected;
};

const Malformed kCases[] = {
    {R"lpcl(contract x "1" {
  control A : env int
}
)lpcl",
     R"lpcl(t.lpcl:2:22: error: expected ';' after control 'A', found '}' at line 3 [expected-token]
  hint: end each statement with ';')lpcl"},
    {R"lpcl(contract x "1" {
  contrl A : env int;
}
)lpcl",
     R"lpcl(t.lpcl:2:3: error: unknown statement 'contrl' [unknown-statement]
  hint: did you mean 'control'?)lpcl"},
    {R"lpcl(contract x "1" {
  control A env int;
}
)lpcl",
     R"lpcl(t.lpcl:2:13: error: expected ':' after control name 'A', found identifier 'env' [expected-token]
  hint: write: control A : env int;)lpcl"},
    {R"lpcl(contract x "1" {
  control A : envv int;
}
)lpcl",
     R"lpcl(t.lpcl:2:15: error: unknown control kind 'envv' [bad-control-kind]
  hint: a control is env, api(PARAMS) or option("CARRIER"))lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int in [1, 2;
}
)lpcl",
     R"lpcl(t.lpcl:2:31: error: expected ']' after the range [lo, hi], found ';' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int in (1, 2);
}
)lpcl",
     R"lpcl(t.lpcl:2:26: error: expected '[' or '{' after 'in', found '(' [expected-token]
  hint: a domain is a range [1, ncpus] or a set {1, 2, 4})lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int default;
}
)lpcl",
     R"lpcl(t.lpcl:2:30: error: expected an expression, found ';' [expected-expression])lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int defualt 3;
}
)lpcl",
     R"lpcl(t.lpcl:2:23: error: unknown clause 'defualt' in control 'A' [unknown-clause]
  hint: did you mean 'default'?)lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int default 1 default 2;
}
)lpcl",
     R"lpcl(t.lpcl:2:33: error: 'default' given twice in control 'A' [duplicate-clause])lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int read_at boot;
}
)lpcl",
     R"lpcl(t.lpcl:2:31: error: unknown read_at value 'boot' [bad-read-at]
  hint: read_at is init, call or region)lpcl"},
    {R"lpcl(contract x "1" {
  control A : env enum{a, b default a;
}
)lpcl",
     R"lpcl(t.lpcl:2:29: error: expected ',' or '}' in enum{...}, found identifier 'default' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  control A : api(int n sets cpu.threads;
}
)lpcl",
     R"lpcl(t.lpcl:2:18: error: parameter list of api control is not closed [expected-token]
  hint: write the C parameters on one line: api(int n))lpcl"},
    {R"lpcl(contract x "1" {
  control A : option("X", ",", "=", "?");
}
)lpcl",
     R"lpcl(t.lpcl:2:15: error: option(...) takes at most 3 strings: carrier, item separator, key/value separator [bad-option])lpcl"},
    {R"lpcl(contract x {
  control A : env int;
}
)lpcl",
     R"lpcl(t.lpcl:1:12: error: expected the version string after contract name 'x', found '{' [expected-token]
  hint: write: contract x "1.0" { ... })lpcl"},
    {R"lpcl(contract "1" {
}
)lpcl",
     R"lpcl(t.lpcl:1:10: error: expected a name after 'contract', found string "1" [expected-token])lpcl"},
    {R"lpcl(contract x "1"
  control A : env int;
}
)lpcl",
     R"lpcl(t.lpcl:2:3: error: expected '{' after contract version, found identifier 'control' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int;
)lpcl",
     R"lpcl(t.lpcl:1:1: error: contract 'x' is not closed: missing '}' before end of file [unclosed-contract]
  hint: add '}' after the last statement)lpcl"},
    {R"lpcl(control A : env int;
)lpcl",
     R"lpcl(t.lpcl:1:1: error: expected 'contract', found identifier 'control' [expected-contract]
  hint: a file holds contracts: contract NAME "VERSION" { ... })lpcl"},
    {R"lpcl(contract x "1" {
  demand cpu.threads 4;
}
)lpcl",
     R"lpcl(t.lpcl:2:22: error: expected '=' after 'demand cpu.threads', found number '4' [expected-token]
  hint: write: demand cpu.threads = EXPR;)lpcl"},
    {R"lpcl(contract x "1" {
  demand cpu.threads = ;
}
)lpcl",
     R"lpcl(t.lpcl:2:24: error: expected an expression, found ';' [expected-expression])lpcl"},
    {R"lpcl(contract x "1" {
  demand cpu.threads = (1 + 2;
}
)lpcl",
     R"lpcl(t.lpcl:2:30: error: expected ')' to close '(', found ';' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  demand cpu.threads = 1 +* 2;
}
)lpcl",
     R"lpcl(t.lpcl:2:27: error: expected an expression, found '*' [expected-expression])lpcl"},
    {R"lpcl(contract x "1" {
  demand cpu.threads = min(1, 2;
}
)lpcl",
     R"lpcl(t.lpcl:2:32: error: expected ',' or ')' in call to 'min', found ';' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  assume exclusive cpu.cores;
}
)lpcl",
     R"lpcl(t.lpcl:2:20: error: expected '(' after predicate 'exclusive', found identifier 'cpu.cores' [expected-token]
  hint: write: assume exclusive(cpu.cores);)lpcl"},
    {R"lpcl(contract x "1" {
  assume exclusive(cpu.cores;
}
)lpcl",
     R"lpcl(t.lpcl:2:29: error: expected ',' or ')' in 'exclusive(...)', found ';' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  behavior spin_wait idle_timeout;
}
)lpcl",
     R"lpcl(t.lpcl:2:34: error: expected an expression, found ';' [expected-expression])lpcl"},
    {R"lpcl(contract x "1" {
  provides region;
}
)lpcl",
     R"lpcl(t.lpcl:2:18: error: expected a name after 'provides region', found ';' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  signal os.threads grows 3;
}
)lpcl",
     R"lpcl(t.lpcl:2:21: error: unknown signal relation 'grows' [bad-relation]
  hint: relations: expect, rises_with, falls_with, above, below)lpcl"},
    {R"lpcl(contract x "1" {
  signal introspect OPENBLAS_VERBOSE = 2;
}
)lpcl",
     R"lpcl(t.lpcl:2:21: error: expected 'env' after 'signal introspect', found identifier 'OPENBLAS_VERBOSE' [expected-token]
  hint: write: signal introspect env NAME = VALUE;)lpcl"},
    {R"lpcl(contract x "1" {
  signal introspect env OPENBLAS_VERBOSE 2;
}
)lpcl",
     R"lpcl(t.lpcl:2:42: error: expected '=' after the introspection variable, found number '2' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  binds soname libopenblas.so;
}
)lpcl",
     R"lpcl(t.lpcl:2:16: error: expected a string after 'binds soname', found identifier 'libopenblas.so' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  origin robot;
}
)lpcl",
     R"lpcl(t.lpcl:2:10: error: unknown origin 'robot' [bad-origin]
  hint: origin is extracted, llm("model") or manual)lpcl"},
    {R"lpcl(contract x "1" {
  origin llm(gpt);
}
)lpcl",
     R"lpcl(t.lpcl:2:14: error: expected a string naming the model in llm("..."), found identifier 'gpt' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int confidence high;
}
)lpcl",
     R"lpcl(t.lpcl:2:34: error: expected a number after 'confidence', found identifier 'high' [expected-token]
  hint: write: confidence 0.9)lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int @ src.c:12;
}
)lpcl",
     R"lpcl(t.lpcl:2:25: error: expected a string after '@' (a "file:line" reference), found identifier 'src.c' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  doc "unterminated;
}
)lpcl",
     R"lpcl(t.lpcl:2:7: error: unterminated string [unterminated-string]
  hint: close the string with '"' on the same line; write a line break as \n)lpcl"},
    {R"lpcl(contract x "1" {
  doc "bad \q escape";
}
)lpcl",
     R"lpcl(t.lpcl:2:12: error: unknown escape '\q' in string [bad-escape]
  hint: strings accept \" \\ \n and \t; write a backslash as \\)lpcl"},
    {R"lpcl(contract x "1" {
  control A : env size default 64XB;
}
)lpcl",
     R"lpcl(t.lpcl:2:34: error: unknown unit 'XB' after number [bad-number]
  hint: sizes take B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; durations take ns, us, ms, s, min, h)lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int default 0x;
}
)lpcl",
     R"lpcl(t.lpcl:2:31: error: hexadecimal number '0x' has no digits [bad-number]
  hint: write hexadecimal numbers as 0x followed by digits, e.g. 0x10)lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int default 3 $;
}
)lpcl",
     R"lpcl(t.lpcl:2:33: error: unexpected character '$' [bad-character])lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int origin manual origin llm;
}
)lpcl",
     R"lpcl(t.lpcl:2:37: error: 'origin' given twice in one statement [duplicate-clause])lpcl"},
    {R"lpcl(contract x "1" {
  doc "a";
  doc "b";
}
)lpcl",
     R"lpcl(t.lpcl:3:3: error: contract doc given twice [duplicate-clause]
  hint: join the two texts into one doc string)lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int;
  demand cpu.threads = A
  assume exclusive(cpu.cores);
}
)lpcl",
     R"lpcl(t.lpcl:3:25: error: expected ';' after demand, found identifier 'assume' at line 4 [expected-token]
  hint: end each statement with ';')lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int sets;
}
)lpcl",
     R"lpcl(t.lpcl:2:27: error: expected a name after 'sets' (a resource), found ';' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  control A.: env int;
}
)lpcl",
     R"lpcl(t.lpcl:2:12: error: unexpected character '.' [bad-character])lpcl"},
    {R"lpcl(contract x "1" {
  control A : env enum{} ;
  control B : env int fallback_for ;
}
)lpcl",
     R"lpcl(t.lpcl:3:36: error: expected a name after 'fallback_for', found ';' [expected-token])lpcl"},
    {R"lpcl(contract x "1" {
  demand cpu.threads = 1 when ;
}
)lpcl",
     R"lpcl(t.lpcl:2:31: error: expected an expression, found ';' [expected-expression])lpcl"},
    {R"lpcl(contract x "1" {
}
}
)lpcl",
     R"lpcl(t.lpcl:3:1: error: expected 'contract', found '}' [expected-contract]
  hint: a file holds contracts: contract NAME "VERSION" { ... })lpcl"},
    {R"lpcl(contract x "1" { control A : env int; } junk
)lpcl",
     R"lpcl(t.lpcl:1:41: error: expected 'contract', found identifier 'junk' [expected-contract]
  hint: a file holds contracts: contract NAME "VERSION" { ... })lpcl"},
    {R"lpcl(contract x "1" {
  control A : env int in [1, 2, 3];
}
)lpcl",
     R"lpcl(t.lpcl:2:31: error: expected ']' after the range [lo, hi], found ',' [expected-token])lpcl"},
};

class MalformedInput : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedInput, ReportsExactDiagnostic) {
  const Malformed& m = GetParam();
  auto r = run(m.input);
  ASSERT_FALSE(r.parsed) << "input parsed without error:\n" << m.input;
  EXPECT_EQ(r.diags.items()[0].str(), m.expected) << "input:\n" << m.input << "\nall diagnostics:\n" << r.diags.str();
}

INSTANTIATE_TEST_SUITE_P(Table, MalformedInput, ::testing::ValuesIn(kCases));

TEST(MalformedInput, TableHasAtLeastFortyCases) { EXPECT_GE(std::size(kCases), 40u); }

TEST(Recovery, ReportsSeveralErrorsInOnePass) {
  auto r = run(R"(contract x "1" {
  control A : env int defualt 3;
  control B : env int;
  demand cpu.threads = ;
  assume exclusive(cpu.cores);
  signal os.threads grows 3;
}
)");
  ASSERT_EQ(r.diags.error_count(), 3u) << r.diags.str();
  EXPECT_EQ(r.diags.items()[0].loc.line, 2);
  EXPECT_EQ(r.diags.items()[1].loc.line, 4);
  EXPECT_EQ(r.diags.items()[2].loc.line, 6);
  // The statements around the broken ones are still there.
  ASSERT_EQ(r.doc.contracts.size(), 1u);
  EXPECT_EQ(r.doc.contracts[0].controls.size(), 1u);
  EXPECT_EQ(r.doc.contracts[0].controls[0].name, "B");
  EXPECT_EQ(r.doc.contracts[0].assumptions.size(), 1u);
}

TEST(Recovery, MissingSemicolonDoesNotSwallowTheNextStatement) {
  auto r = run("contract x \"1\" {\n  control A : env int\n  control B : env int;\n}\n");
  ASSERT_EQ(r.diags.error_count(), 1u) << r.diags.str();
  EXPECT_EQ(r.diags.items()[0].str(),
            "t.lpcl:2:22: error: expected ';' after control 'A', found identifier 'control' at line 3 [expected-token]\n"
            "  hint: end each statement with ';'");
  ASSERT_EQ(r.doc.contracts[0].controls.size(), 1u);
  EXPECT_EQ(r.doc.contracts[0].controls[0].name, "B");
}

TEST(Recovery, MissingBraceBeforeNextContract) {
  auto r = run("contract a \"1\" {\n  control A : env int;\n\ncontract b \"2\" {\n  control B : env int;\n}\n");
  ASSERT_EQ(r.diags.error_count(), 1u) << r.diags.str();
  EXPECT_EQ(r.diags.items()[0].code, "unclosed-contract");
  EXPECT_EQ(r.diags.items()[0].loc.line, 4);
  ASSERT_EQ(r.doc.contracts.size(), 2u);
  EXPECT_EQ(r.doc.contracts[1].name, "b");
  EXPECT_EQ(r.doc.contracts[1].controls.size(), 1u);
}

TEST(Recovery, StopsAfterTooManyErrors) {
  std::string text = "contract x \"1\" {\n";
  for (int i = 0; i < 500; ++i) text += "  control : env int;\n";
  text += "}\n";
  auto r = run(text);
  EXPECT_EQ(r.diags.error_count(), 100u);
  EXPECT_EQ(r.diags.items().back().code, "too-many-errors");
}

TEST(Recovery, StrayCharactersEachReported) {
  auto r = run("contract x \"1\" {\n  control A : env int default 3 $ ;\n  demand cpu.threads = A ` ;\n}\n");
  ASSERT_EQ(r.diags.error_count(), 2u) << r.diags.str();
  EXPECT_EQ(r.diags.items()[0].str(), "t.lpcl:2:33: error: unexpected character '$' [bad-character]");
  EXPECT_EQ(r.diags.items()[1].str(), "t.lpcl:3:26: error: unexpected character '`' [bad-character]");
}

}  // namespace
}  // namespace syspilot::lpcl
