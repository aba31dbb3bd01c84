// Env-var extraction on fixtures: direct reads, function and macro wrappers to a fixed point,
// token pasting (NCCL_PARAM), constants, locals, Python, and the JSON round trip.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "extract/extract.h"

using namespace syspilot::extract;

namespace {

const Facts& wrapper_facts() {
  static Facts f = [] {
    ExtractOptions o;
    o.paths = {std::string(EXTRACT_FIXTURES) + "/wrappers"};
    o.threads = 2;
    return extract(o);
  }();
  return f;
}

const EnvRead* find(const Facts& f, const std::string& name) {
  for (auto& e : f.env_vars)
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace

TEST(ExtractEnv, DirectAndWrapperReadsInC) {
  auto& f = wrapper_facts();
  for (const char* n : {"OPENBLAS_VERBOSE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "BLIS_NUM_THREADS",
                        "BLIS_JC_NT", "ZSTD_CLEVEL", "MALLOC_CONF", "FIX_SPIN", "FIX_QUIET"})
    EXPECT_NE(find(f, n), nullptr) << n;
  auto* v = find(f, "OPENBLAS_VERBOSE");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->via, "readenv");
  EXPECT_EQ(v->type, "int");
  EXPECT_EQ(v->function, "openblas_read_env");
  EXPECT_EQ(v->file, "src/blas_env.c");
  EXPECT_EQ(v->line, 17);
  auto* b = find(f, "BLIS_NUM_THREADS");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->via, "bli_env_get_var");
  EXPECT_EQ(b->default_value, "-1");
  EXPECT_EQ(b->type, "int");
  auto* s = find(f, "FIX_SPIN");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->default_value, "100");
  auto* m = find(f, "MALLOC_CONF");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->via, "jemalloc_secure_getenv");
}

TEST(ExtractEnv, TokenPastingMacroAcrossFiles) {
  auto& f = wrapper_facts();
  auto* g = find(f, "NCCL_NET_GDR_LEVEL");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->file, "src/transport.cc");
  EXPECT_EQ(g->via, "NCCL_PARAM");
  EXPECT_EQ(g->default_value, "2");
  EXPECT_NE(find(f, "NCCL_IB_TIMEOUT"), nullptr);
  // the suffix alone is not a variable anyone reads
  EXPECT_EQ(find(f, "NET_GDR_LEVEL"), nullptr);
}

TEST(ExtractEnv, CppQualifiedWrappers) {
  auto& f = wrapper_facts();
  auto* v = find(f, "TBB_VERSION");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->type, "bool");
  EXPECT_EQ(v->language, "cpp");
  auto* t = find(f, "TBB_MALLOC_SET_HUGE_SIZE_THRESHOLD");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->type, "int");
}

TEST(ExtractEnv, PythonReads) {
  auto& f = wrapper_facts();
  for (const char* n : {"FIXPY_WORKERS", "FIXPY_HOME", "FIXPY_DEBUG", "FIXPY_LEVEL", "FIXPY_TRACE"})
    EXPECT_NE(find(f, n), nullptr) << n;
  auto* w = find(f, "FIXPY_WORKERS");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->via, "env_int");
  EXPECT_EQ(w->default_value, "4");
  EXPECT_EQ(w->language, "python");
  auto* l = find(f, "FIXPY_LEVEL");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->default_value, "info");
}

TEST(ExtractEnv, NoFalseNamesFromComputedOrParameterReads) {
  auto& f = wrapper_facts();
  std::set<std::string> names;
  for (auto& e : f.env_vars) names.insert(e.name);
  for (const char* bad : {"name", "env", "n", "buf", "_X", "NET_GDR_LEVEL", "FIXPY_", "FIX_PID_"}) EXPECT_EQ(names.count(bad), 0u) << bad;
  bool noted = false;
  for (auto& d : f.diagnostics.items()) noted = noted || d.code == "env-name-unresolved";
  EXPECT_TRUE(noted) << "the getenv(buf) of a name formatted from getpid() is reported as unresolved";
}

TEST(ExtractEnv, JsonRoundTrip) {
  auto& f = wrapper_facts();
  auto j = to_json(f);
  ASSERT_TRUE(j["env_vars"].is_array());
  ASSERT_FALSE(j["env_vars"].empty());
  for (const char* k : {"name", "file", "line", "function", "type", "default", "via"})
    EXPECT_TRUE(j["env_vars"][0].contains(k)) << k;
  Facts back = facts_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_EQ(back.env_vars.size(), f.env_vars.size());
  EXPECT_EQ(back.env_vars[3].name, f.env_vars[3].name);
  EXPECT_EQ(back.env_vars[3].line, f.env_vars[3].line);
  EXPECT_EQ(back.threading.size(), f.threading.size());
  EXPECT_EQ(to_json(back).dump(), j.dump());
  EXPECT_THROW(facts_from_json(nlohmann::json::parse(R"({"env_vars": 3})")), std::runtime_error);
  EXPECT_THROW(facts_from_json(nlohmann::json::parse(R"({"env_vars": [{"line": 1}]})")), std::runtime_error);
  EXPECT_THROW(facts_from_json(nlohmann::json::parse(R"([1,2])")), std::runtime_error);
}
