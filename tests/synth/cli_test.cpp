// `syspilot synth` as a process: exit codes, output file, summary, and the store.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

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
  // One file per process: ctest -j runs the tests of this binary side by side.
  const std::string errf = ::testing::TempDir() + "/synth-cli-" + std::to_string(::getpid()) + ".err";
  int rc = std::system((cmd + " 2>" + errf + " >/dev/null").c_str());
  if (err) {
    std::ifstream in(errf);
    std::ostringstream ss;
    ss << in.rdbuf();
    *err = ss.str();
  }
  std::error_code ec;
  std::filesystem::remove(errf, ec);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(SynthCli, OfflineWritesTheContractAndSaysWhichDrafter) {
  const std::string out = ::testing::TempDir() + "/zstd.lpcl";
  const std::string db = ::testing::TempDir() + "/synth-cli.db";
  std::filesystem::remove(out);
  std::filesystem::remove(db);  // a store left by another run or version must not decide the outcome
  std::string err;
  EXPECT_EQ(run("env -u SYSPILOT_LLM_URL " + kBin + " synth " + kFacts + " --lib zstd --lib-version 1.5.4 --db " + db + " -o " + out, &err), 0) << err;
  EXPECT_NE(err.find("drafter offline (deterministic rules, no LLM)"), std::string::npos) << err;
  EXPECT_NE(err.find("stored as #"), std::string::npos) << err;
  std::ifstream in(out);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "contract zstd \"1.5.4\" {");
}

TEST(SynthCli, BadInputIsAUsageError) {
  std::string err;
  EXPECT_EQ(run(kBin + " synth /no/such/path --lib x --lib-version 1 --no-store", &err), 2);
  EXPECT_NE(err.find("/no/such/path"), std::string::npos) << err;
  EXPECT_EQ(run(kBin + " synth " + kFacts + " --lib x --lib-version 1 --no-store --llm http://127.0.0.1:1", &err), 2);
  EXPECT_NE(err.find("--model"), std::string::npos) << err;
}

// An empty folder: exit 2 with what was wrong and what to give instead; no store is created.
TEST(SynthCli, EmptyFolderIsAUsageErrorAndStoresNothing) {
  const std::string dir = ::testing::TempDir() + "/synth-cli-empty";
  const std::string db = ::testing::TempDir() + "/synth-cli-empty.db";
  std::filesystem::remove_all(dir);
  std::filesystem::remove(db);
  std::filesystem::create_directories(dir);
  std::string err;
  EXPECT_EQ(run("env -u SYSPILOT_LLM_URL " + kBin + " synth " + dir + " --lib empty --lib-version 1 --db " + db, &err), 2)
      << err;
  EXPECT_NE(err.find("no facts about empty in " + dir), std::string::npos) << err;
  EXPECT_NE(err.find("source tree, public headers, documentation or shared object"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(db)) << "nothing to store, so no store";
}

TEST(SynthCli, NeverConvergingExitsOne) {
  testsupport::FakeLlmServer s;
  s.fallback(testsupport::ScriptedReply::answer(testing::kSyntaxError));
  std::string err;
  EXPECT_EQ(run(kBin + " synth " + kFacts + " --lib zstd --lib-version 1.5.4 --no-store --llm " + s.url() +
                    " --model m --max-rounds 1",
                &err),
            1)
      << err;
  EXPECT_NE(err.find("NOT converged"), std::string::npos) << err;
  EXPECT_EQ(s.request_count(), 2u);
}

}  // namespace
}  // namespace syspilot::synth
