// Semantic diff: added, removed and changed statements; reordering and reformatting are no change.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lpcl_test_support.h"

namespace syspilot::lpcl {
namespace {

Document doc(const std::string& text) {
  Diagnostics d;
  Document out = parse(text, "t.lpcl", d);
  EXPECT_FALSE(d.has_errors()) << d.str();
  return out;
}

const char* kOld = R"(contract openblas "0.3.21" {
  control OPENBLAS_NUM_THREADS : env int in [1, ncpus] default ncpus read_at init @ "env.c:52";
  control OMP_NUM_THREADS : env int fallback_for OPENBLAS_NUM_THREADS;
  control GOTO_NUM_THREADS : env int;
  demand cpu.threads = OPENBLAS_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus;
  assume exclusive(cpu.cores);
  behavior spin_wait;
  signal os.threads expect cpu.threads + 1;
}
)";

TEST(Diff, ReorderingAndReformattingIsNoChange) {
  const char* reordered = R"(# a comment
contract openblas "0.3.21" {
  signal os.threads expect cpu.threads+1;
  behavior spin_wait;
  assume exclusive(cpu.cores);
  demand cpu.threads = (OPENBLAS_NUM_THREADS ?? (OMP_NUM_THREADS ?? ncpus));
  control GOTO_NUM_THREADS : env int;
  control OMP_NUM_THREADS : env int fallback_for OPENBLAS_NUM_THREADS;
  control OPENBLAS_NUM_THREADS : env int   read_at init default ncpus in [1, ncpus]
      @ "env.c:60";   # provenance moved: not a change of meaning
}
)";
  auto d = diff(doc(kOld), doc(reordered));
  EXPECT_TRUE(d.empty()) << to_text(d);
}

TEST(Diff, ReportsAddedRemovedAndChanged) {
  const char* next = R"(contract openblas "0.3.26" {
  control OPENBLAS_NUM_THREADS : env int in [1, 2 * ncpus] default 4 read_at init;
  control OMP_NUM_THREADS : env float fallback_for OPENBLAS_NUM_THREADS;
  control OPENBLAS_THREAD_TIMEOUT : env int in [4, 30] default 28;
  demand cpu.threads = OPENBLAS_NUM_THREADS ?? ncpus;
  assume shared(cpu.cores);
  behavior spin_wait idle_timeout OPENBLAS_THREAD_TIMEOUT;
  signal os.threads expect cpu.threads + 1;
  signal os.involuntary_switches rises_with oversubscription;
}
)";
  auto d = diff(doc(kOld), doc(next));
  EXPECT_EQ(to_text(d),
            "~ contract openblas version: 0.3.21 -> 0.3.26\n"
            "- control GOTO_NUM_THREADS: control GOTO_NUM_THREADS : env int;\n"
            "~ control OMP_NUM_THREADS type: int -> float\n"
            "~ control OPENBLAS_NUM_THREADS domain: [1, ncpus] -> [1, 2 * ncpus]\n"
            "~ control OPENBLAS_NUM_THREADS default: ncpus -> 4\n"
            "+ control OPENBLAS_THREAD_TIMEOUT: control OPENBLAS_THREAD_TIMEOUT : env int in [4, 30] default 28;\n"
            "~ demand cpu.threads value: OPENBLAS_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus -> OPENBLAS_NUM_THREADS ?? ncpus\n"
            "- assumption exclusive(cpu.cores): assume exclusive(cpu.cores);\n"
            "+ assumption shared(cpu.cores): assume shared(cpu.cores);\n"
            "~ behavior spin_wait params: (none) -> idle_timeout OPENBLAS_THREAD_TIMEOUT\n"
            "+ signal os.involuntary_switches rises_with: signal os.involuntary_switches rises_with oversubscription;\n");
  nlohmann::json j = to_json(d);
  EXPECT_EQ(j["empty"], false);
  EXPECT_EQ(j["changes"].size(), d.changes.size());
  EXPECT_EQ(j["changes"][3], (nlohmann::json{{"kind", "changed"},
                                             {"entity", "control"},
                                             {"name", "OPENBLAS_NUM_THREADS"},
                                             {"field", "domain"},
                                             {"before", "[1, ncpus]"},
                                             {"after", "[1, 2 * ncpus]"}}));
}

TEST(Diff, DocumentsMatchContractsByName) {
  auto d = diff(doc("contract a \"1\" {\n}\ncontract b \"1\" {\n  control X : env int;\n}\n"),
                doc("contract b \"1\" {\n  control X : env int default 2;\n}\ncontract c \"1\" {\n}\n"));
  EXPECT_EQ(to_text(d),
            "- contract a: contract a \"1\"\n"
            "~ control X default: (none) -> 2\n"
            "+ contract c: contract c \"1\"\n");
}

TEST(Diff, DuplicateKeysCompareAsMultisets) {
  auto d = diff(doc("contract a \"1\" {\n  signal os.threads above 4;\n  signal os.threads above 8;\n}\n"),
                doc("contract a \"1\" {\n  signal os.threads above 8;\n  signal os.threads above 16;\n}\n"));
  EXPECT_EQ(to_text(d),
            "- signal os.threads above: signal os.threads above 4;\n"
            "+ signal os.threads above: signal os.threads above 16;\n");
}

}  // namespace
}  // namespace syspilot::lpcl
