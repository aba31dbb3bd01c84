// `syspilot synth` as a process: exit codes, output file, summary, and the store.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/fake_llm.h"
#include "tests/synth/fixture.h"

namespace syspilot::synth {
namespace {

const std::string kBin = std::string(SYSPILOT_BINARY_DIR) + "/syspilot";
const std::string kFacts = std::string(SYSPILOT_SOURCE_DIR) + "/corpus/facts/zstd.json";

int run(const std::string& cmd, std::string* err = nullptr) {
  const std::string errf = ::testing::TempDir() + "/synth-cli.err";
  int rc = std::system((cmd + " 2>" + errf + " >/dev/null").c_str());
  if (err) {
    std::ifstream in(errf);
    std::ostringstream ss;
    ss << in.rdbuf();
    *err = ss.str();
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(SynthCli, OfflineWritesTheContractAndSaysWhichDrafter) {
  const std::string out = ::testing::TempDir() + "/zstd.lpcl";
  const std::string db = ::testing::TempDir() + "/synth-cli.db";
  std::filesystem::remove(out);
  std::string err;
  EXPECT_EQ(run("env -u SYSPILOT_LLM_URL " + kBin + " synth " + kFacts + " --lib zstd --version 1.5.4 --db " + db + " -o " + out, &err), 0) << err;
  EXPECT_NE(err.find("drafter offline (deterministic rules, no LLM)"), std::string::npos) << err;
  EXPECT_NE(err.find("stored as #"), std::string::npos) << err;
  std::ifstream in(out);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "contract zstd \"1.5.4\" {");
}

TEST(SynthCli, BadInputIsAUsageError) {
  std::string err;
  EXPECT_EQ(run(kBin + " synth /no/such/path --lib x --version 1 --no-store", &err), 2);
  EXPECT_NE(err.find("/no/such/path"), std::string::npos) << err;
  EXPECT_EQ(run(kBin + " synth " + kFacts + " --lib x --version 1 --no-store --llm http://127.0.0.1:1", &err), 2);
  EXPECT_NE(err.find("--model"), std::string::npos) << err;
}

TEST(SynthCli, NeverConvergingExitsOne) {
  testsupport::FakeLlmServer s;
  s.fallback(testsupport::ScriptedReply::answer(testing::kSyntaxError));
  std::string err;
  EXPECT_EQ(run(kBin + " synth " + kFacts + " --lib zstd --version 1.5.4 --no-store --llm " + s.url() +
                    " --model m --max-rounds 1",
                &err),
            1)
      << err;
  EXPECT_NE(err.find("NOT converged"), std::string::npos) << err;
  EXPECT_EQ(s.request_count(), 2u);
}

}  // namespace
}  // namespace syspilot::synth
