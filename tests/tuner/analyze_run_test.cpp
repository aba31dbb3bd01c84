// Tests of the process runner on real processes: exit codes, signals, timeouts that kill a
// whole process group, environment handling, output capture and the sampled signals.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>

#include "tuner/run.h"

using namespace syspilot::tuner;

namespace {
std::string program(const std::string& name) { return std::string(SYSPILOT_TEST_PROGRAMS) + "/" + name; }
}  // namespace

TEST(Run, CapturesExitCodeAndOutput) {
  RunSpec s;
  s.argv = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3"};
  auto r = run(s);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.failure, "exit 3");
  EXPECT_EQ(r.stdout_text, "out\n");
  EXPECT_EQ(r.stderr_text, "err\n");
}

TEST(Run, ReportsCrashBySignal) {
  RunSpec s;
  s.argv = {program("crash")};
  auto r = run(s);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.term_signal, SIGSEGV);
  EXPECT_EQ(r.failure, "SIGSEGV");
  EXPECT_EQ(r.stdout_text, "about to crash\n");
}

TEST(Run, TimeoutKillsTheWholeProcessGroup) {
  RunSpec s;
  s.argv = {program("hang")};
  s.timeout_s = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  auto r = run(s);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.failure, "timeout after 0.5 s");
  EXPECT_LT(took, 5.0);
  EXPECT_GE(r.max_threads, 3);  // main thread, its thread, the forked child
  // The forked grandchild held stdout too; it must be gone, or its pipe would keep us waiting.
  EXPECT_EQ(r.stdout_text.find("hanging"), 0u);
}

TEST(Run, ExecFailureIsExplained) {
  RunSpec s;
  s.argv = {"/nonexistent/program"};
  auto r = run(s);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.failure.find("exec failed: /nonexistent/program"), std::string::npos) << r.failure;
  s.argv = {"/bin/true"};
  s.cwd = "/nonexistent-dir";
  r = run(s);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.failure.find("working directory"), std::string::npos) << r.failure;
  s.argv = {};
  s.cwd = "";
  EXPECT_FALSE(run(s).started);
}

TEST(Run, EnvironmentSetUnsetAndInherit) {
  setenv("SYSPILOT_RUN_TEST_INHERITED", "yes", 1);
  RunSpec s;
  s.argv = {"/bin/sh", "-c", "echo \"$SYSPILOT_RUN_TEST_INHERITED|$SYSPILOT_RUN_TEST_SET|$HOME\""};
  s.env_set = {{"SYSPILOT_RUN_TEST_SET", "42"}};
  s.env_unset = {"HOME"};
  auto r = run(s);
  EXPECT_EQ(r.stdout_text, "yes|42|\n");
  s.inherit_env = false;
  r = run(s);
  EXPECT_EQ(r.stdout_text, "|42|\n");
}

TEST(Run, SamplesThreadsRunQueueAndLibraries) {
  RunSpec s;
  s.argv = {program("omp_blas"), "1000", "128"};
  auto r = run(s);
  ASSERT_TRUE(r.ok()) << r.failure << r.stderr_text;
  EXPECT_GT(r.samples, 0);
  EXPECT_GE(r.max_threads, 2);
  EXPECT_GT(r.user_s, 0);
  EXPECT_FALSE(r.threads.empty());
  bool saw_openblas = false;
  for (auto& l : r.libraries) saw_openblas |= l.find("openblas-pthread") != std::string::npos;
  EXPECT_TRUE(saw_openblas);
  // Software counters work on these kernels; hardware ones may not, and then say why.
  EXPECT_TRUE(r.perf.count("context_switches") || !r.perf_notes.empty());
  for (auto& n : r.perf_notes) EXPECT_NE(n.find(": "), std::string::npos);
}

TEST(Run, OutputIsCapped) {
  RunSpec s;
  s.argv = {"/bin/sh", "-c", "head -c 100000 /dev/zero"};
  s.output_cap = 1000;
  auto r = run(s);
  EXPECT_TRUE(r.ok());
  // One line longer than the cap: its first and last 500 bytes, the marker between.
  const std::string marker = "[syspilot: 99000 bytes of output dropped here]\n";
  EXPECT_EQ(r.stdout_text, std::string(500, '\0') + "\n" + marker + std::string(500, '\0'));
  EXPECT_EQ(r.stdout_dropped, 99000u);
}

// An output past the cap keeps its first and its last whole lines, each within half the cap, and
// one marker line says how many bytes were dropped between them; on stdout and stderr alike.
TEST(Run, OutputPastTheCapKeepsItsFirstAndLastLines) {
  std::string all;  // what `seq 1 300000` prints, 2 MB
  for (int i = 1; i <= 300000; ++i) all += std::to_string(i) + "\n";
  for (const std::string redirect : {"", " >&2"}) {
    RunSpec s;
    s.argv = {"/bin/sh", "-c", "seq 1 300000" + redirect};
    auto r = run(s);
    ASSERT_TRUE(r.ok()) << r.failure;
    const std::string& text = redirect.empty() ? r.stdout_text : r.stderr_text;
    const size_t dropped = redirect.empty() ? r.stdout_dropped : r.stderr_dropped;
    EXPECT_EQ(redirect.empty() ? r.stderr_dropped : r.stdout_dropped, 0u);
    const OutputDropped last = last_output_dropped();
    EXPECT_EQ(redirect.empty() ? last.stdout_bytes : last.stderr_bytes, dropped);
    const std::string marker = "[syspilot: " + std::to_string(dropped) + " bytes of output dropped here]\n";
    const size_t at = text.find(marker);
    ASSERT_NE(at, std::string::npos) << redirect << ": no marker of " << dropped << " bytes";
    const std::string head = text.substr(0, at), tail = text.substr(at + marker.size());
    EXPECT_LE(head.size(), size_t{1} << 19);
    EXPECT_LE(tail.size(), size_t{1} << 19);
    EXPECT_GT(head.size() + tail.size(), (size_t{1} << 20) - 20) << "less than the cap was kept";
    // Whole lines: the first ones as printed, the last ones as printed, nothing else.
    EXPECT_EQ(all.compare(0, head.size(), head), 0);
    EXPECT_EQ(all.compare(all.size() - tail.size(), tail.size(), tail), 0);
    EXPECT_EQ(head.back(), '\n');
    EXPECT_EQ(all[all.size() - tail.size() - 1], '\n') << "the tail starts inside a line";
    EXPECT_EQ(head.size() + dropped + tail.size(), all.size());
  }
  RunSpec small;
  small.argv = {"/bin/sh", "-c", "seq 1 1000"};
  auto r = run(small);
  EXPECT_EQ(r.stdout_text, all.substr(0, all.find("\n1001\n") + 1));
  EXPECT_EQ(r.stdout_dropped, 0u);
  EXPECT_EQ(last_output_dropped().stdout_bytes, 0u);
}
