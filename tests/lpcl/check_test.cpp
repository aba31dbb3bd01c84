// Every checker rule: a failing case with its exact diagnostic and a passing case that
// differs only in the fix.
#include <gtest/gtest.h>

#include <algorithm>

#include "lpcl_test_support.h"

namespace syspilot::lpcl {
namespace {

using testing::codes;
using testing::run;

struct Rule {
  const char* code;
  const char* failing;
  const char* passing;
  const char* expected;  // first diagnostic of `failing`
};

const Rule kRules[] = {
    {"unknown-resource", "contract x \"1\" {\n  demand cpu.thread = 2;\n}\n", "contract x \"1\" {\n  demand cpu.threads = 2;\n}\n",
     "t.lpcl:2:3: error: unknown resource 'cpu.thread' [unknown-resource]\n  hint: did you mean 'cpu.threads'?"},
    {"unknown-resource", "contract x \"1\" {\n  control A : env int sets gpu.mem;\n}\n",
     "contract x \"1\" {\n  control A : env int sets gpu.memory;\n}\n",
     "t.lpcl:2:3: error: unknown resource 'gpu.mem' in 'sets' of control 'A' [unknown-resource]\n  hint: resources: cpu.threads, "
     "cpu.cores, cpu.spin, mem.capacity, mem.bandwidth, mem.arenas, cache.llc, gpu.device, gpu.memory, gpu.streams, io.disk, net"},
    {"unknown-resource", "contract x \"1\" {\n  assume exclusive(cpu.core);\n}\n", "contract x \"1\" {\n  assume exclusive(cpu.cores);\n}\n",
     "t.lpcl:2:3: error: unknown resource 'cpu.core' in 'exclusive(...)' [unknown-resource]\n  hint: did you mean 'cpu.cores'?"},
    {"undeclared-control", "contract x \"1\" {\n  demand cpu.threads = OMP_NUM_THREADS ?? ncpus;\n}\n",
     "contract x \"1\" {\n  control OMP_NUM_THREADS : env int;\n  demand cpu.threads = OMP_NUM_THREADS ?? ncpus;\n}\n",
     "t.lpcl:2:24: error: 'OMP_NUM_THREADS' is not a declared control, a machine fact or a resource [undeclared-control]\n"
     "  hint: declare it with `control OMP_NUM_THREADS : env int;` or use a machine fact: ncpus, ncores, nnuma, ngpus, mem_total"},
    {"undeclared-control", "contract x \"1\" {\n  control OMP_NUM_THREADS : env int;\n  demand cpu.threads = OMP_NUM_THREAD ?? ncpus;\n}\n",
     "contract x \"1\" {\n  control OMP_NUM_THREADS : env int;\n  demand cpu.threads = OMP_NUM_THREADS ?? ncpus;\n}\n",
     "t.lpcl:3:24: error: 'OMP_NUM_THREAD' is not a declared control, a machine fact or a resource [undeclared-control]\n"
     "  hint: did you mean control 'OMP_NUM_THREADS'?"},
    {"undeclared-control", "contract x \"1\" {\n  control A : env int fallback_for B;\n}\n",
     "contract x \"1\" {\n  control A : env int fallback_for B;\n  control B : env int;\n}\n",
     "t.lpcl:2:3: error: control 'A' is fallback_for 'B', which is not a declared control [undeclared-control]\n"
     "  hint: declare 'B' as a control"},
    {"undeclared-control", "contract x \"1\" {\n  control A : env int default B;\n}\n",
     "contract x \"1\" {\n  control A : env int default B;\n  control B : env int;\n}\n",
     "t.lpcl:2:31: error: 'B' is not a declared control, a machine fact or a resource [undeclared-control]\n"
     "  hint: did you mean control 'A'?"},
    {"undeclared-control", "contract x \"1\" {\n  behavior spin_wait idle_timeout TIMEOUT;\n}\n",
     "contract x \"1\" {\n  control TIMEOUT : env duration;\n  behavior spin_wait idle_timeout TIMEOUT;\n}\n",
     "t.lpcl:2:35: error: 'TIMEOUT' is not a declared control, a machine fact or a resource [undeclared-control]\n"
     "  hint: declare it with `control TIMEOUT : env int;` or use a machine fact: ncpus, ncores, nnuma, ngpus, mem_total"},
    {"undeclared-control", "contract x \"1\" {\n  control A : env int;\n  demand cpu.threads = A when B > 1;\n}\n",
     "contract x \"1\" {\n  control A : env int;\n  demand cpu.threads = A when A > 1;\n}\n",
     "t.lpcl:3:31: error: 'B' is not a declared control, a machine fact or a resource [undeclared-control]\n"
     "  hint: did you mean control 'A'?"},
    {"fallback-cycle",
     "contract x \"1\" {\n  control A : env int fallback_for B;\n  control B : env int fallback_for C;\n  control C : env int fallback_for A;\n}\n",
     "contract x \"1\" {\n  control A : env int fallback_for B;\n  control B : env int fallback_for C;\n  control C : env int;\n}\n",
     "t.lpcl:2:3: error: fallback cycle: A -> B -> C -> A [fallback-cycle]\n  hint: a control falls back to another; the chain must end"},
    {"fallback-cycle", "contract x \"1\" {\n  control A : env int fallback_for A;\n}\n", "contract x \"1\" {\n  control A : env int;\n}\n",
     "t.lpcl:2:3: error: fallback cycle: A -> A [fallback-cycle]\n  hint: a control falls back to another; the chain must end"},
    {"default-outside-domain", "contract x \"1\" {\n  control A : env int in [1, 8] default 16;\n}\n",
     "contract x \"1\" {\n  control A : env int in [1, 8] default 8;\n}\n",
     "t.lpcl:2:41: error: default 16 of control 'A' is outside its domain [1, 8] [default-outside-domain]\n"
     "  hint: change the default or widen the domain"},
    {"default-outside-domain", "contract x \"1\" {\n  control A : env enum{passive, active} in {passive} default active;\n}\n",
     "contract x \"1\" {\n  control A : env enum{passive, active} in {passive, active} default active;\n}\n",
     "t.lpcl:2:62: error: default active of control 'A' is not in its domain {passive} [default-outside-domain]\n"
     "  hint: change the default or add it to the set"},
    {"default-outside-domain", "contract x \"1\" {\n  control A : env size in [1MiB, 1GiB] default 2GiB;\n}\n",
     "contract x \"1\" {\n  control A : env size in [1MiB, 1GiB] default 1024MiB;\n}\n",
     "t.lpcl:2:48: error: default 2GiB of control 'A' is outside its domain [1MiB, 1GiB] [default-outside-domain]\n"
     "  hint: change the default or widen the domain"},
    {"type-mismatch", "contract x \"1\" {\n  control A : env int default 0.5;\n}\n", "contract x \"1\" {\n  control A : env float default 0.5;\n}\n",
     "t.lpcl:2:31: error: default '0.5' of control 'A' is float, but the control is int [type-mismatch]\n"
     "  hint: declare the control as float, or use an integer"},
    {"type-mismatch", "contract x \"1\" {\n  control A : env duration default 200;\n}\n",
     "contract x \"1\" {\n  control A : env duration default 200ms;\n}\n",
     "t.lpcl:2:36: error: default '200' of control 'A' is int, but the control is duration [type-mismatch]\n"
     "  hint: add a unit: 200ms, 5us, 1s"},
    {"type-mismatch", "contract x \"1\" {\n  control A : env enum{passive, active} default spin;\n}\n",
     "contract x \"1\" {\n  control A : env enum{passive, active} default active;\n}\n",
     "t.lpcl:2:49: error: 'spin' is not a value of enum{passive, active} [type-mismatch]\n  hint: use one of: passive, active"},
    {"type-mismatch", "contract x \"1\" {\n  control A : env bool in [0, 1];\n}\n", "contract x \"1\" {\n  control A : env bool in {true, false};\n}\n",
     "t.lpcl:2:3: error: control 'A' is bool; a range [lo, hi] needs a numeric type [type-mismatch]\n"
     "  hint: use a set {a, b} or declare the control int, float, size or duration"},
    {"type-mismatch", "contract x \"1\" {\n  control A : env string default 3;\n}\n",
     "contract x \"1\" {\n  control A : env string default \"3\";\n}\n",
     "t.lpcl:2:34: error: default '3' of control 'A' is int, but the control is string [type-mismatch]"},
    {"type-mismatch", "contract x \"1\" {\n  control A : env int in {1, 2.5};\n}\n", "contract x \"1\" {\n  control A : env int in {1, 2};\n}\n",
     "t.lpcl:2:30: error: domain value '2.5' of control 'A' is float, but the control is int [type-mismatch]\n"
     "  hint: declare the control as float, or use an integer"},
    {"duplicate-control", "contract x \"1\" {\n  control A : env int;\n  control A : env int;\n}\n",
     "contract x \"1\" {\n  control A : env int;\n  control B : env int;\n}\n",
     "t.lpcl:3:3: error: control 'A' is declared twice [duplicate-control]\n  hint: the first declaration is at line 2; keep one"},
    {"duplicate-demand", "contract x \"1\" {\n  demand cpu.threads = 2;\n  demand cpu.threads = 4;\n}\n",
     "contract x \"1\" {\n  demand cpu.threads = 2;\n  demand cpu.threads = 4 when ncpus > 8;\n}\n",
     "t.lpcl:3:3: error: duplicate demand on 'cpu.threads' [duplicate-demand]\n"
     "  hint: the first is at line 2; combine them, or make them conditional with 'when'"},
    {"duplicate-enumerator", "contract x \"1\" {\n  control A : env enum{a, a};\n}\n", "contract x \"1\" {\n  control A : env enum{a, b};\n}\n",
     "t.lpcl:2:3: error: enum value 'a' appears twice in control 'A' [duplicate-enumerator]"},
    {"duplicate-contract", "contract x \"1\" {\n}\ncontract x \"1\" {\n}\n", "contract x \"1\" {\n}\ncontract x \"2\" {\n}\n",
     "t.lpcl:3:1: error: contract 'x' \"1\" appears twice in this file [duplicate-contract]\n  hint: the first is at line 1"},
    {"impossible-range", "contract x \"1\" {\n  control A : env int in [8, 1];\n}\n", "contract x \"1\" {\n  control A : env int in [1, 8];\n}\n",
     "t.lpcl:2:3: error: range [8, 1] of control 'A' is empty (lower bound > upper bound) [impossible-range]\n  hint: swap the bounds"},
    {"unknown-fact", "contract x \"1\" {\n  demand cpu.threads = ncore;\n}\n", "contract x \"1\" {\n  demand cpu.threads = ncores;\n}\n",
     "t.lpcl:2:24: error: unknown machine fact 'ncore' [unknown-fact]\n  hint: did you mean 'ncores'?"},
    {"unknown-fact", "contract x \"1\" {\n  control A : env int in [1, mem_totl];\n}\n",
     "contract x \"1\" {\n  control A : env size in [1, mem_total];\n}\n",
     "t.lpcl:2:30: error: unknown machine fact 'mem_totl' [unknown-fact]\n  hint: did you mean 'mem_total'?"},
    {"bad-api-params", "contract x \"1\" {\n  control A : api(int n,) int;\n}\n", "contract x \"1\" {\n  control A : api(int n) int;\n}\n",
     "t.lpcl:2:3: error: parameters 'int n,' of api control 'A' are malformed: empty parameter 2 [bad-api-params]\n"
     "  hint: write the C parameter list: api(int n), api(void), api(const char* name, size_t len)"},
    {"bad-api-params", "contract x \"1\" {\n  control A : api(int $n) int;\n}\n",
     "contract x \"1\" {\n  control A : api(const char* name, size_t len) int;\n}\n",
     "t.lpcl:2:3: error: parameters 'int $n' of api control 'A' are malformed: unexpected character '$' [bad-api-params]\n"
     "  hint: write the C parameter list: api(int n), api(void), api(const char* name, size_t len)"},
    {"option-without-carrier", "contract x \"1\" {\n  control A : option() int;\n}\n",
     "contract x \"1\" {\n  control A : option(\"MALLOC_CONF\", \",\", \":\") int;\n}\n",
     "t.lpcl:2:3: error: option control 'A' has no carrier variable [option-without-carrier]\n"
     "  hint: name the variable that carries it: option(\"MALLOC_CONF\", \",\", \":\")"},
    {"confidence-range", "contract x \"1\" {\n  control A : env int confidence 1.5;\n}\n",
     "contract x \"1\" {\n  control A : env int confidence 1;\n}\n",
     "t.lpcl:2:3: error: confidence 1.5 is outside [0, 1] [confidence-range]\n  hint: confidence is a probability: 0 (a guess) to 1 (certain)"},
    {"confidence-range", "contract x \"1\" {\n  origin llm(\"m\") confidence -0.1;\n}\n",
     "contract x \"1\" {\n  origin llm(\"m\") confidence 0;\n}\n",
     "t.lpcl:1:1: error: confidence -0.1 is outside [0, 1] [confidence-range]\n  hint: confidence is a probability: 0 (a guess) to 1 (certain)"},
    {"bad-ref", "contract x \"1\" {\n  control A : env int @ \"src/env.c\";\n}\n",
     "contract x \"1\" {\n  control A : env int @ \"src/env.c:12\";\n}\n",
     "t.lpcl:2:3: error: reference \"src/env.c\" is not \"file:line\" [bad-ref]\n"
     "  hint: write the source position as \"path/to/file.c:52\" (line numbers start at 1)"},
    {"bad-ref", "contract x \"1\" {\n  demand cpu.threads = 1 @ \"a.c:0\";\n}\n",
     "contract x \"1\" {\n  demand cpu.threads = 1 @ \"a.c:10-12\";\n}\n",
     "t.lpcl:2:3: error: reference \"a.c:0\" is not \"file:line\" [bad-ref]\n"
     "  hint: write the source position as \"path/to/file.c:52\" (line numbers start at 1)"},
    {"empty-version", "contract x \"\" {\n}\n", "contract x \"1.0\" {\n}\n",
     "t.lpcl:1:1: error: contract 'x' has an empty version [empty-version]\n"
     "  hint: give the library version the contract describes, e.g. \"0.3.21\""},
    {"bad-version", "contract x \"1@1\" {\n}\n", "contract x \"1:16.0.6-15~deb12u1\" {\n}\n",
     "t.lpcl:1:1: error: contract 'x' has version \"1@1\": a version is a letter or digit, then letters, digits and . _ + "
     "~ : - (at most 128), so that `contracts show LIB VERSION@REV` and /v1/contracts/LIB/VERSION name it [bad-version]\n"
     "  hint: write the version as the library names it, e.g. \"0.3.21\" or \"1:16.0.6-15\""},
    {"bad-version", "contract x \"1.0/rc 1\\t\" {\n}\n", "contract x \"0.3.21+ds-4\" {\n}\n",
     "t.lpcl:1:1: error: contract 'x' has version \"1.0/rc 1?\": a version is a letter or digit, then letters, digits and . _ "
     "+ ~ : - (at most 128), so that `contracts show LIB VERSION@REV` and /v1/contracts/LIB/VERSION name it [bad-version]\n"
     "  hint: write the version as the library names it, e.g. \"0.3.21\" or \"1:16.0.6-15\""},
    {"unknown-predicate", "contract x \"1\" {\n  assume fair(cpu.cores);\n}\n", "contract x \"1\" {\n  assume shared(cpu.cores);\n}\n",
     "t.lpcl:2:3: error: unknown predicate 'fair' [unknown-predicate]\n  hint: predicates: exclusive, shared, no_nesting, pinned"},
    {"predicate-args", "contract x \"1\" {\n  assume exclusive(cpu.cores, mem.arenas);\n}\n",
     "contract x \"1\" {\n  assume exclusive(cpu.cores);\n}\n",
     "t.lpcl:2:3: error: 'exclusive' takes 1 argument(s), not 2 [predicate-args]\n  hint: write: assume exclusive(cpu.cores);"},
    {"query-control", "contract x \"1\" {\n  control omp_get_num_threads : api() int sets cpu.threads;\n}\n",
     "contract x \"1\" {\n  control omp_set_num_threads : api(int n) int sets cpu.threads;\n}\n",
     "t.lpcl:2:3: warning: control 'omp_get_num_threads' is a query: its name asks for a value, so a call sets no "
     "cpu.threads [query-control]\n  hint: drop the control (the tuner never searches a query), or its sets clause"},
    {"unknown-behavior", "contract x \"1\" {\n  behavior spins;\n}\n", "contract x \"1\" {\n  behavior spin_wait;\n}\n",
     "t.lpcl:2:3: warning: unknown behavior 'spins' [unknown-behavior]\n  hint: known behaviors: spin_wait, passive_wait, creates_pool, "
     "pins_threads, allocates_arenas, uses_gpu, nested_parallelism, lazy_init"},
    {"unknown-metric", "contract x \"1\" {\n  signal os.thread expect 2;\n}\n", "contract x \"1\" {\n  signal os.threads expect 2;\n}\n",
     "t.lpcl:2:3: warning: unknown metric 'os.thread' [unknown-metric]\n  hint: did you mean 'os.threads'?"},
    {"missing-signal-value", "contract x \"1\" {\n  signal os.threads expect;\n}\n",
     "contract x \"1\" {\n  signal os.threads expect cpu.threads + 1;\n}\n",
     "t.lpcl:2:3: error: signal 'os.threads expect' needs a value [missing-signal-value]\n"
     "  hint: write: signal os.threads expect cpu.threads + 1;"},
    {"bad-signal-value", "contract x \"1\" {\n  signal os.threads rises_with 1 + 2;\n}\n",
     "contract x \"1\" {\n  signal os.threads rises_with oversubscription;\n}\n",
     "t.lpcl:2:3: error: 'rises_with' takes a condition word, not '1 + 2' [bad-signal-value]\n"
     "  hint: write a word such as oversubscription or contention"},
    {"unknown-binding-kind", "contract x \"1\" {\n  binds library \"libfoo.so\";\n}\n",
     "contract x \"1\" {\n  binds soname \"libfoo.so\";\n}\n",
     "t.lpcl:2:3: error: unknown binding kind 'library' [unknown-binding-kind]\n  hint: binding kinds: soname, symbol, header, module, executable"},
    {"empty-binding", "contract x \"1\" {\n  binds soname \"\";\n}\n", "contract x \"1\" {\n  binds soname \"libfoo.so.1\";\n}\n",
     "t.lpcl:2:3: error: binding 'soname' has an empty pattern [empty-binding]\n  hint: write: binds soname \"libfoo.so.1\";"},
    {"unknown-provides", "contract x \"1\" {\n  provides pool omp;\n}\n", "contract x \"1\" {\n  provides region omp;\n}\n",
     "t.lpcl:2:3: error: unknown 'provides pool' [unknown-provides]\n  hint: write: provides region NAME; or provides region none;"},
    {"unknown-function", "contract x \"1\" {\n  demand cpu.threads = mini(ncpus, 4);\n}\n",
     "contract x \"1\" {\n  demand cpu.threads = min(ncpus, 4);\n}\n",
     "t.lpcl:2:24: error: unknown function 'mini' [unknown-function]\n  hint: did you mean 'min'?"},
    {"function-arity", "contract x \"1\" {\n  demand cpu.threads = clamp(ncpus, 4);\n}\n",
     "contract x \"1\" {\n  demand cpu.threads = clamp(ncpus, 1, 4);\n}\n",
     "t.lpcl:2:24: error: 'clamp' takes 3 argument(s), not 2 [function-arity]"},
    {"empty-enum", "contract x \"1\" {\n  control A : env enum{};\n}\n", "contract x \"1\" {\n  control A : env enum{on};\n}\n",
     "t.lpcl:2:3: error: enum type of control 'A' has no values [empty-enum]\n  hint: write: enum{a, b}"},
    {"empty-domain", "contract x \"1\" {\n  control A : env int in {};\n}\n", "contract x \"1\" {\n  control A : env int in {1};\n}\n",
     "t.lpcl:2:3: error: value set of control 'A' is empty [empty-domain]\n  hint: list the values: in {1, 2, 4}"},
};

class CheckerRule : public ::testing::TestWithParam<Rule> {};

TEST_P(CheckerRule, FailingCaseReportsAndPassingCaseIsClean) {
  const Rule& r = GetParam();
  auto bad = run(r.failing);
  ASSERT_TRUE(bad.parsed) << bad.diags.str();
  ASSERT_FALSE(bad.diags.empty()) << "no diagnostic for rule " << r.code;
  EXPECT_EQ(bad.diags.items()[0].code, r.code);
  EXPECT_EQ(bad.diags.items()[0].str(), r.expected) << bad.diags.str();
  auto good = run(r.passing);
  ASSERT_TRUE(good.parsed) << good.diags.str();
  EXPECT_TRUE(good.diags.empty()) << "passing case of " << r.code << " reported:\n" << good.diags.str();
}

INSTANTIATE_TEST_SUITE_P(Rules, CheckerRule, ::testing::ValuesIn(kRules));

TEST(CheckerRule, QueriesAreTheFunctionsNamedForReading) {
  for (const char* q : {"omp_get_num_threads", "openblas_getaffinity", "cudaDeviceGetLimit", "omp_is_initial_device",
                        "ZSTD_getFrameContentSize", "mkl_has_feature", "nccl.query_config"})
    EXPECT_TRUE(is_query_name(q)) << q;
  for (const char* s : {"omp_set_num_threads", "ZSTD_c_nbWorkers", "task_arena.initialize", "max_allowed_parallelism",
                        "fftw_plan_with_nthreads", "cudaSetDevice", "target_threads", "budget", "this_thread"})
    EXPECT_FALSE(is_query_name(s)) << s;
  Control env;
  env.name = "GET_THREADS";
  EXPECT_FALSE(is_query(env)) << "only functions are queries";
  env.how.kind = ControlKind::Kind::Api;
  EXPECT_TRUE(is_query(env));
}

TEST(CheckerRule, CheckReturnsFalseOnErrorsOnly) {
  Diagnostics parse_diags;
  auto warn_only = parse("contract x \"1\" {\n  behavior spins;\n}\n", "t.lpcl", parse_diags);
  ASSERT_TRUE(parse_diags.empty());
  Diagnostics d;
  EXPECT_TRUE(check(warn_only, d));
  EXPECT_EQ(d.warning_count(), 1u);
  Diagnostics d2;
  auto broken = parse("contract x \"1\" {\n  demand cpu.thread = 1;\n}\n", "t.lpcl", d2);
  EXPECT_FALSE(check(broken, d2));
}

TEST(CheckerRule, EmptyNameFromJson) {
  // The parser cannot produce an empty name; the JSON form can.
  Contract c;
  c.version = "1";
  Diagnostics d;
  EXPECT_FALSE(check(c, d));
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d.items()[0].code, "empty-name");
}

TEST(CheckerRule, ExpressionsOverFactsResourcesAndControlsAreAccepted) {
  auto r = run(R"(contract x "1" {
  control N : env int in [1, ncpus * 2] default min(ncores, 8);
  control M : env size in [0, mem_total / 2] default 64MiB;
  control T : env duration in [0s, 1min] default 200ms;
  demand cpu.threads = N ?? max(ncpus - 1, 1) when nnuma <= 1 && ngpus == 0;
  demand mem.capacity = M * 2;
  signal os.threads expect cpu.threads + 1;
  signal os.max_rss below mem_total;
}
)");
  EXPECT_TRUE(r.diags.empty()) << r.diags.str();
}

TEST(CheckerRule, EveryRuleIsCovered) {
  std::vector<std::string> covered;
  for (auto& r : kRules) covered.push_back(r.code);
  for (const char* code : {"unknown-resource", "undeclared-control", "fallback-cycle", "default-outside-domain", "type-mismatch",
                           "duplicate-control", "duplicate-demand", "impossible-range", "unknown-fact", "bad-api-params",
                           "option-without-carrier", "confidence-range", "bad-ref", "empty-version", "bad-version", "unknown-predicate",
                           "unknown-behavior", "unknown-metric"})
    EXPECT_NE(std::find(covered.begin(), covered.end(), code), covered.end()) << code;
}

}  // namespace
}  // namespace syspilot::lpcl
