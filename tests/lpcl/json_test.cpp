// The JSON form: explicit fields, expressions as trees plus text, and from_json's validation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lpcl_test_support.h"

namespace syspilot::lpcl {
namespace {

using nlohmann::json;
using testing::run;

const char* kContract = R"(contract openblas "0.3.21" {
  origin llm("m") confidence 0.5;
  control OPENBLAS_NUM_THREADS : env int in [1, ncpus] default ncpus read_at init @ "env.c:52";
  control MODE : env enum{passive, active} in {passive, active} default passive;
  control T : env duration default 200ms;
  demand cpu.threads = OPENBLAS_NUM_THREADS ?? ncpus;
  signal os.threads expect cpu.threads + 1;
}
)";

TEST(Json, FieldsAreExplicit) {
  auto r = run(kContract);
  ASSERT_TRUE(r.diags.empty()) << r.diags.str();
  json j = to_json(r.doc);
  EXPECT_EQ(j["lpcl"], 1);
  const json& c = j["contracts"][0];
  EXPECT_EQ(c["name"], "openblas");
  EXPECT_EQ(c["version"], "0.3.21");
  EXPECT_EQ(c["origins"][0], (json{{"refs", json::array()}, {"origin", "llm"}, {"model", "m"}, {"confidence", 0.5}}));
  const json& k = c["controls"][0];
  EXPECT_EQ(k["kind"], "env");
  EXPECT_EQ(k["type"], "int");
  EXPECT_EQ(k["domain"]["kind"], "range");
  EXPECT_EQ(k["domain"]["text"], "[1, ncpus]");
  EXPECT_EQ(k["domain"]["lo"]["ast"], (json{{"kind", "int"}, {"text", "1"}, {"value", 1.0}}));
  EXPECT_EQ(k["default"]["ast"], (json{{"kind", "name"}, {"text", "ncpus"}}));
  EXPECT_EQ(k["read_at"], "init");
  EXPECT_EQ(k["fallback_for"], "");
  EXPECT_EQ(k["sets"], json::array());
  EXPECT_EQ(k["provenance"]["refs"], json::array({"env.c:52"}));
  EXPECT_EQ(k["provenance"]["confidence"], nullptr);
  EXPECT_EQ(k["loc"], (json{{"line", 3}, {"col", 3}}));
  EXPECT_EQ(c["controls"][1]["enumerators"], json::array({"passive", "active"}));
  EXPECT_EQ(c["controls"][2]["default"]["ast"]["value"], 0.2);
  const json& d = c["demands"][0];
  EXPECT_EQ(d["value"]["text"], "OPENBLAS_NUM_THREADS ?? ncpus");
  EXPECT_EQ(d["value"]["ast"]["kind"], "binary");
  EXPECT_EQ(d["value"]["ast"]["op"], "??");
  EXPECT_EQ(d["value"]["ast"]["args"][0]["text"], "OPENBLAS_NUM_THREADS");
  EXPECT_EQ(d["when"], nullptr);
  EXPECT_EQ(c["signals"][0]["kind"], "metric");
  EXPECT_EQ(c["signals"][0]["relation"], "expect");
}

TEST(Json, SingleContractObjectAndTextOnlyExpressionsAreAccepted) {
  json j = {{"name", "x"},
            {"version", "1"},
            {"controls", json::array({{{"name", "A"}, {"kind", "env"}, {"type", "int"}, {"default", "min(ncpus, 4)"}}})},
            {"demands", json::array({{{"resource", "cpu.threads"}, {"value", {{"text", "A ?? 2"}}}}})}};
  Diagnostics d;
  Document doc = from_json(j, "x.json", d);
  ASSERT_FALSE(d.has_errors()) << d.str();
  EXPECT_EQ(format(doc), "contract x \"1\" {\n  control A : env int default min(ncpus, 4);\n\n  demand cpu.threads = A ?? 2;\n}\n");
  EXPECT_TRUE(check(doc, d)) << d.str();
}

struct BadJson {
  const char* json_text;
  const char* expected;
};

class JsonErrors : public ::testing::TestWithParam<BadJson> {};

TEST_P(JsonErrors, AreReportedWithTheirPath) {
  Diagnostics d;
  from_json(json::parse(GetParam().json_text), "x.json", d);
  ASSERT_TRUE(d.has_errors());
  EXPECT_EQ(d.items()[0].message, GetParam().expected) << d.str();
  EXPECT_EQ(d.items()[0].code, "bad-json");
}

INSTANTIATE_TEST_SUITE_P(
    Table, JsonErrors,
    ::testing::Values(
        BadJson{R"([1, 2])", "expected a JSON object with \"contracts\" (or a single contract object)"},
        BadJson{R"({"contracts": 3})", "contracts: expected an array"},
        BadJson{R"({"contracts": [{"name": 7}]})", "contracts[0].name: expected a string"},
        BadJson{R"({"contracts": [{"name": "a b"}]})", "contracts[0].name: 'a b' is not a valid contract name"},
        BadJson{R"({"contracts": [{"version": "1"}]})",
                "contracts[0].name: a contract needs a name (`contract NAME \"VERSION\" { ... }`)"},
        BadJson{R"({"name": "", "version": "1"})", "name: a contract needs a name (`contract NAME \"VERSION\" { ... }`)"},
        BadJson{R"({"lpcl": 2, "contracts": []})", "lpcl: this is LPCL JSON version 2; this reader knows version 1"},
        BadJson{R"({"lpcl": "1", "contracts": []})", "lpcl: this is LPCL JSON version \"1\"; this reader knows version 1"},
        BadJson{R"({"name": "x", "controls": [{"name": "A", "kind": "registry"}]})",
                "controls[0].kind: a control kind is env, api or option"},
        BadJson{R"({"name": "x", "controls": [{"name": "A", "type": "long"}]})", "controls[0].type: unknown type 'long'"},
        BadJson{R"({"name": "x", "controls": [{"name": "A", "default": {"ast": {"kind": "int", "text": "12x"}}}]})",
                "controls[0].default.ast.text: '12x' is not a valid int literal"},
        BadJson{R"({"name": "x", "controls": [{"name": "A", "default": {"ast": {"kind": "binary", "op": "^", "args": []}}}]})",
                "controls[0].default.ast.op: unknown binary operator '^'"},
        BadJson{R"({"name": "x", "controls": [{"name": "A", "default": "1 +"}]})", "controls[0].default: expression text '1 +' does not parse"},
        BadJson{R"({"name": "x", "controls": [{"name": "A", "default": "1; control B : env int"}]})",
                "controls[0].default: expression text '1; control B : env int' does not parse"},
        BadJson{R"({"name": "x", "controls": [{"name": "A", "kind": "env", "params": "int n"}]})",
                "controls[0].params: params belong to api controls"},
        BadJson{R"({"name": "x", "controls": [{"name": "A", "kind": "api", "params": "int n); evil("}]})",
                "controls[0].params: api parameters are one line of C parameter declarations with balanced parentheses"},
        BadJson{R"({"name": "x", "doc": "bell\u0007"})", "doc: control character in string"},
        BadJson{R"({"name": "x", "comments": ["two\nlines"]})", "comments[0]: a comment is one line without NUL bytes"},
        BadJson{R"({"name": "x", "origins": [{"origin": ""}]})", "origins[0].origin: expected extracted, llm or manual"},
        BadJson{R"({"name": "x", "origins": [{"origin": "manual", "model": "m"}]})", "origins[0].model: a model is given only with origin llm"},
        BadJson{R"({"name": "x", "behaviors": [{"name": "b", "params": [{"key": "origin", "value": "1"}]}]})",
                "behaviors[0].params[0].key: 'origin' is reserved for provenance"},
        BadJson{R"({"name": "x", "signals": [{"kind": "metric", "metric": "os.threads", "relation": "grows"}]})",
                "signals[0].relation: unknown relation 'grows' (expect, rises_with, falls_with, above, below)"},
        BadJson{R"({"name": "x", "demands": [{"resource": "cpu.threads", "value": {"ast": {"kind": "name", "text": "true"}}}]})",
                "demands[0].value.ast.text: 'true'/'false' are bool literals, not names"},
        BadJson{R"({"name": "x", "controls": [{"name": "A", "loc": {"line": -1}}]})", "controls[0].loc.line: expected a non-negative integer"}));

TEST(Json, DeepJsonExpressionIsRejected) {
  json e = {{"kind", "int"}, {"text", "1"}};
  for (int i = 0; i < 1000; ++i) e = json{{"kind", "unary"}, {"op", "-"}, {"args", json::array({e})}};
  json j = {{"name", "x"}, {"demands", json::array({{{"resource", "cpu.threads"}, {"value", {{"ast", e}}}}})}};
  Diagnostics d;
  from_json(j, "x.json", d);
  ASSERT_TRUE(d.has_errors());
  EXPECT_NE(d.items()[0].message.find("expression nested too deeply (more than 256 levels)"), std::string::npos) << d.str();
}

}  // namespace
}  // namespace syspilot::lpcl
