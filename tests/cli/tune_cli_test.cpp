// `syspilot tune`, `analyze`, `synth` and the command itself as processes, where the command line
// is the subject: exit codes (0 ok, 1 the application failed, 2 usage, 3 nothing to tune, 130
// interrupted), --version, synth's --lib-version, tune's checks before any run, --dry-run,
// Ctrl-C during a session, and the verdict "keep your defaults".
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <vector>

#include "store/store.h"
#include "tests/cli/cli_support.h"
#include "tuner/session.h"

using namespace syspilot;
using namespace syspilot::cli::testing;

namespace {

using Clock = std::chrono::steady_clock;

// One POSIX shell word.
std::string q(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string program(const std::string& name) { return std::string(SYSPILOT_TEST_PROGRAMS) + "/" + name; }

// A command that leaves `mark` behind when it runs at all.
std::string touching(const std::string& mark, const std::string& then = "true") {
  return "/bin/sh -c " + q("touch " + mark + "; " + then);
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// `syspilot ARGS` started in the background: its pid, and its stderr read as it comes.
struct Started {
  pid_t pid = -1;
  int err_fd = -1;
  std::string err;

  explicit Started(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {SYSPILOT_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    int err_pipe[2];
    if (::pipe(err_pipe) != 0) return;
    pid = ::fork();
    if (pid == 0) {
      int devnull = ::open("/dev/null", O_WRONLY);
      ::dup2(devnull, 1);
      ::dup2(err_pipe[1], 2);
      ::close(err_pipe[0]);
      std::vector<char*> a;
      for (auto& x : argv) a.push_back(x.data());
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      ::_exit(127);
    }
    ::close(err_pipe[1]);
    err_fd = err_pipe[0];
  }
  ~Started() {
    if (err_fd >= 0) ::close(err_fd);
    if (pid > 0 && ::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  // Reads stderr until it holds `text` (true), or it ends or `limit_s` pass first.
  bool wait_for(const std::string& text, double limit_s = 60) {
    char buf[4096];
    auto t0 = Clock::now();
    while (err.find(text) == std::string::npos && seconds_since(t0) < limit_s) {
      ssize_t n = ::read(err_fd, buf, sizeof buf);
      if (n <= 0) break;
      err.append(buf, static_cast<size_t>(n));
    }
    return err.find(text) != std::string::npos;
  }
  // Signals it, reads the rest of its stderr and reaps it: its exit status, -1 if it did not exit.
  int stop(int sig) {
    ::kill(pid, sig);
    char buf[4096];
    for (ssize_t n; (n = ::read(err_fd, buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(n));
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
};

}  // namespace

// ---- exit codes ---------------------------------------------------------------------------------

TEST(CliExit, UsageErrorsAreTwo) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  EXPECT_EQ(run_cli(dir, "tune --budget banana -- /bin/true").exit, 2);
  EXPECT_EQ(run_cli(dir, "tune --db " + db + " -- /no/such/app").exit, 2);
  EXPECT_EQ(run_cli(dir, "tune --no-such-flag -- /bin/true").exit, 2);
  EXPECT_EQ(run_cli(dir, "analyze -- /no/such/app").exit, 2);
}

// Option values a person cannot mean are usage errors before anything runs or opens the
// application: an --add without values (it crashed the search), a control name that is no
// identifier (it reached --export's shell lines as code), a NaN timeout (no limit at all), and
// an application that is a FIFO (opening it blocked for ever), a folder or not executable.
TEST(CliExit, OptionsNobodyCanMeanAreTwoAndSaySo) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  const std::string mark = dir.file("ran");
  auto two = [&](const std::string& args, const std::string& says) {
    CliRun r = run_cli(dir, args);
    EXPECT_EQ(r.exit, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << "\n" << r.err;
  };
  two("tune --db " + db + " --strategy random --budget 4 --add FOO=, -- " + touching(mark), "no values");
  two("tune --db " + db + " --strategy grid --budget 4 --add FOO=,, --add BAR=1,2 -- " + touching(mark), "no values");
  two("tune --db " + db + " --budget 4 --add " + q("X;touch " + mark + ";Y=1,2") + " -- /bin/true", "identifier");
  two("tune --db " + db + " --budget 4 --pin " + q("A B=1") + " --add X=1,2 -- /bin/true", "identifier");
  two("tune --db " + db + " --budget 4 --drop " + q("1X") + " --add X=1,2 -- /bin/true", "identifier");
  two("tune --db " + db + " --budget 4 --timeout nan --add X=1,2 -- " + touching(mark), "not a finite number");
  two("tune --db " + db + " --budget 4 --cap-factor nan --add X=1,2 -- " + touching(mark), "not a finite number");
  two("analyze --no-store --timeout nan -- " + touching(mark), "not a finite number");
  EXPECT_FALSE(std::filesystem::exists(mark)) << "a run happened before the usage error";

  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto t0 = Clock::now();
  two("tune --db " + db + " --budget 4 --add X=1,2 -- " + fifo, "not a regular file");
  two("analyze --no-store -- " + fifo, "not a regular file");
  EXPECT_LT(seconds_since(t0), 20);
  two("tune --db " + db + " --budget 4 --add X=1,2 -- " + dir.path(), "is a folder");
  const std::string script = dir.file("noexec.sh");
  spit(script, "#!/bin/sh\ntrue\n");
  two("tune --db " + db + " --budget 4 --add X=1,2 -- " + script, "not executable");
  two("analyze --no-store -- " + script, "not executable");
}

// A failure reason quotes the application's stderr: bytes that are no UTF-8 and a terminal's
// escape sequences come out as \xNN text, the progress line and --json stay readable, and the
// stored session prints as JSON.
TEST(CliExit, AnApplicationsBytesAreQuotedAsText) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  const std::string app = dir.file("app.sh");
  spit(app, "#!/bin/sh\nif [ \"$FOO\" = 2 ]; then printf 'bad \\377\\376 \\033[31mred\\n' >&2; exit 3; fi\n");
  ASSERT_EQ(::chmod(app.c_str(), 0755), 0);
  CliRun r = run_cli(dir, "tune --json --db " + db + " --budget 5 --verify 0 --minimise-runs 0 --add FOO=1,2 -- " + app);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.err.find("bad \\xff\\xfe \\x1b[31mred"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(r.out);
  bool quoted = false;
  for (const auto& t : j["trials"])
    if (t.contains("failure") && t["failure"].is_string())
      quoted = quoted || t["failure"].get<std::string>().find("bad \\xff\\xfe \\x1b[31mred") != std::string::npos;
  EXPECT_TRUE(quoted) << r.out;
  CliRun show = run_cli(dir, "sessions show 1 --json --db " + db);
  EXPECT_EQ(show.exit, 0) << show.err;
  EXPECT_NO_THROW((void)nlohmann::json::parse(show.out));
}

// A command whose contracts name no control and nothing added: nothing to tune is 3, not a
// usage error (the command line was right).
TEST(CliExit, NothingToTuneIsThree) {
  TempDir dir;
  CliRun r = run_cli(dir, "tune --db " + dir.file("t.db") + " --budget 4 -- /bin/true");
  EXPECT_EQ(r.exit, 3) << r.err;
  EXPECT_NE(r.err.find("nothing to tune"), std::string::npos) << r.err;
}

// An application that always crashes, or hangs, is 1 (the application failed), quickly, and
// never 2: the command line was right.
TEST(CliExit, CrashingOrHangingApplicationIsOne) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  CliRun crash = run_cli(dir, "tune --db " + db + " --budget 4 --add X=1,2 -- /bin/sh -c " + q("kill -SEGV $$"));
  EXPECT_EQ(crash.exit, 1) << crash.err;
  EXPECT_NE(crash.err.find("SIGSEGV"), std::string::npos) << crash.err;

  auto t0 = Clock::now();
  CliRun hang = run_cli(dir, "tune --db " + db + " --budget 4 --timeout 1 --add X=1,2 -- /bin/sh -c " + q("sleep 30"));
  EXPECT_EQ(hang.exit, 1) << hang.err;
  EXPECT_NE(hang.err.find("did not finish within 1 s"), std::string::npos) << hang.err;
  EXPECT_LT(seconds_since(t0), 15);

  // Without a control to search either: the failure is what is reported, not "nothing to tune".
  CliRun bare = run_cli(dir, "tune --db " + db + " --budget 4 --timeout 1 -- /bin/sh -c " + q("sleep 30"));
  EXPECT_EQ(bare.exit, 1) << bare.err;
  EXPECT_EQ(bare.err.find("nothing to tune:"), std::string::npos) << bare.err;
  EXPECT_NE(bare.err.find("did not finish within 1 s"), std::string::npos) << bare.err;

  CliRun analyze = run_cli(dir, "analyze --no-synth -- /bin/sh -c " + q("kill -SEGV $$"));
  EXPECT_EQ(analyze.exit, 1) << analyze.err;
}

// analyze reports confirmed hypotheses in its report, not in its exit status: OpenBLAS called
// inside an OpenMP loop is confirmed nested oversubscription, and the exit is 0.
TEST(CliExit, AnalyzeExitsZeroWithConfirmedHypotheses) {
  TempDir dir;
  CliRun r = run_cli(dir, "analyze --json --no-synth -- " + program("omp_blas") + " 400");
  ASSERT_EQ(r.exit, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  bool confirmed = false;
  for (auto& h : j["hypotheses"]) confirmed |= h["verdict"] == "confirmed";
  if (!confirmed) GTEST_SKIP() << "no hypothesis confirmed on this machine; the exit status was 0 anyway";
}

// ---- progress ---------------------------------------------------------------------------------

// analyze says what it runs as it runs it: one "run N: ..." line per run of the application, as
// many as the JSON report counts; --quiet says nothing on standard error.
TEST(CliProgress, AnalyzeSaysEachRunAsItGoes) {
  TempDir dir;
  CliRun r = run_cli(dir, "analyze --json --no-synth -- " + program("omp_blas") + " 200");
  ASSERT_EQ(r.exit, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  size_t runs = j["profile"]["default_runs"].size();
  for (auto& p : j["profile"]["probes"]) runs += p["runs"].size();
  ASSERT_GE(runs, 2u) << r.out;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("analyze: composed [0-9]+ contract\\(s\\): [^\\n]*libgomp"))) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("analyze: run 2 of [0-9]+: probe [A-Z_]+="))) << r.err;
  const std::regex done("analyze: run [0-9]+: [0-9.]+ s\\n");
  size_t lines = std::distance(std::sregex_iterator(r.err.begin(), r.err.end(), done), std::sregex_iterator());
  EXPECT_EQ(lines, runs) << r.err;

  CliRun quiet = run_cli(dir, "analyze --quiet --no-synth --no-probe -- " + program("omp_blas") + " 200");
  ASSERT_EQ(quiet.exit, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("analyze: run"), std::string::npos) << quiet.err;
}

// The numpy program: Debian's python3 loads numpy, which loads the pthreads OpenBLAS at run time
// (through libblas.so.3); nothing in python3's own ELF names it. analyze composes it from what
// the run mapped and derives hypotheses over OpenBLAS's thread controls.
TEST(CliNumpy, OpenBlasLoadedAtRunTimeIsComposed) {
  const std::string script = std::string(SYSPILOT_CHECKOUT) + "/tests/cli/programs/blas_pool.py";
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3-numpy is not installed";
  TempDir dir;
  CliRun r = run_cli(dir, "analyze --json --no-synth --quiet -- /usr/bin/python3 " + script + " 1500 128");
  ASSERT_EQ(r.exit, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  bool openblas = false;
  for (auto& c : j["contracts"]) openblas |= c["name"] == "openblas_pthread";
  EXPECT_TRUE(openblas) << j["contracts"].dump(1) << j["libraries"].dump(1);
  bool names_thread_control = false;
  for (auto& h : j["hypotheses"])
    for (auto& c : h["controls"]) names_thread_control |= c == "OPENBLAS_NUM_THREADS";
  EXPECT_TRUE(names_thread_control) << j["hypotheses"].dump(1);
}

// ---- --version ----------------------------------------------------------------------------------

TEST(CliVersion, LongAndShortPrintTheProjectVersion) {
  TempDir dir;
  for (const char* flag : {"--version", "-V"}) {
    CliRun r = run_cli(dir, flag);
    EXPECT_EQ(r.exit, 0) << flag << r.err;
    EXPECT_EQ(r.out, std::string("syspilot ") + SYSPILOT_PROJECT_VERSION + "\n") << flag;
  }
}

// synth's library version is --lib-version; --version still names it there, with a warning,
// and does not print the command's version.
TEST(CliVersion, SynthLibVersionAndTheDeprecatedAlias) {
  TempDir dir;
  const std::string facts = std::string(SYSPILOT_CHECKOUT) + "/corpus/facts/zstd.json";
  CliRun r = run_cli(dir, "synth " + facts + " --lib zstd --lib-version 1.5.4 --no-store -q", "-u SYSPILOT_LLM_URL");
  EXPECT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("contract zstd \"1.5.4\""), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("deprecated"), std::string::npos) << r.err;

  CliRun old = run_cli(dir, "synth " + facts + " --lib zstd --version 1.5.3 --no-store -q", "-u SYSPILOT_LLM_URL");
  EXPECT_EQ(old.exit, 0) << old.err;
  EXPECT_NE(old.out.find("contract zstd \"1.5.3\""), std::string::npos) << old.out;
  EXPECT_NE(old.err.find("--version is deprecated here; use --lib-version"), std::string::npos) << old.err;

  CliRun none = run_cli(dir, "synth " + facts + " --lib zstd --no-store -q");
  EXPECT_EQ(none.exit, 2) << none.err;
  EXPECT_NE(none.err.find("--lib-version"), std::string::npos) << none.err;
}

// ---- tune: checks before any run -------------------------------------------------------------

TEST(TuneChecks, BadMetricRegexFailsBeforeAnyRun) {
  TempDir dir;
  const std::string mark = dir.file("ran");
  auto t0 = Clock::now();
  CliRun r = run_cli(dir, "tune --db " + dir.file("t.db") + " --add X=1,2 --metric " + q("rate ([0-9") + " -- " +
                              touching(mark));
  EXPECT_EQ(r.exit, 2) << r.err;
  EXPECT_NE(r.err.find("--metric 'rate ([0-9' is not a valid regular expression"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(mark)) << "the application ran";
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.db"))) << "checked before the store is opened";
  EXPECT_LT(seconds_since(t0), 5);
}

// A pinned or dropped name no composed contract declares gets the nearest known name; the
// application never runs. OpenBLAS in an OpenMP loop composes libgomp and OpenBLAS.
TEST(TuneChecks, UnknownControlGetsDidYouMean) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  CliRun pin = run_cli(dir, "tune --db " + db + " --pin OMP_NUM_THRAEDS=1 -- " + program("omp_blas") + " 200");
  EXPECT_EQ(pin.exit, 2) << pin.err;
  EXPECT_NE(pin.err.find("did you mean OMP_NUM_THREADS?"), std::string::npos) << pin.err;
  EXPECT_EQ(pin.err.find("tune: analysing"), std::string::npos) << pin.err;

  CliRun drop = run_cli(dir, "tune --db " + db + " --drop openblas_num_threads -- " + program("omp_blas") + " 200");
  EXPECT_EQ(drop.exit, 2) << drop.err;
  EXPECT_NE(drop.err.find("did you mean OPENBLAS_NUM_THREADS?"), std::string::npos) << drop.err;

  // A name of the user's own is fine once added; a typo of an added name is caught too.
  const std::string mark = dir.file("ran");
  CliRun own = run_cli(dir, "tune --db " + db + " --add NPROCS=1,2 --pin NPROC=1 -- " + touching(mark));
  EXPECT_EQ(own.exit, 2) << own.err;
  EXPECT_NE(own.err.find("did you mean NPROCS?"), std::string::npos) << own.err;
  EXPECT_FALSE(std::filesystem::exists(mark));
}

// A pinned value outside its control's type or domain names the domain, before any run.
TEST(TuneChecks, PinnedValueOutsideTheDomain) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  CliRun banana = run_cli(dir, "tune --db " + db + " --pin OMP_NUM_THREADS=banana -- " + program("omp_blas") + " 200");
  EXPECT_EQ(banana.exit, 2) << banana.err;
  EXPECT_NE(banana.err.find("OMP_NUM_THREADS takes an integer, not 'banana'"), std::string::npos) << banana.err;
  EXPECT_EQ(banana.err.find("tune: analysing"), std::string::npos) << banana.err;

  CliRun zero = run_cli(dir, "tune --db " + db + " --pin OMP_NUM_THREADS=0 -- " + program("omp_blas") + " 200");
  EXPECT_EQ(zero.exit, 2) << zero.err;
  EXPECT_NE(zero.err.find("in [1, ncpus]"), std::string::npos) << zero.err;

  CliRun policy = run_cli(dir, "tune --db " + db + " --pin OMP_WAIT_POLICY=sometimes -- " + program("omp_blas") + " 200");
  EXPECT_EQ(policy.exit, 2) << policy.err;
  EXPECT_NE(policy.err.find("one of enum{"), std::string::npos) << policy.err;

  CliRun add = run_cli(dir, "tune --db " + db + " --add OMP_NUM_THREADS=1,two -- " + program("omp_blas") + " 200");
  EXPECT_EQ(add.exit, 2) << add.err;
  EXPECT_NE(add.err.find("not 'two'"), std::string::npos) << add.err;
}

// ---- tune --dry-run -----------------------------------------------------------------------------

TEST(TuneDryRun, PrintsTheSpaceAndThePlanAndRunsNothing) {
  TempDir dir;
  const std::string mark = dir.file("ran");
  CliRun r = run_cli(dir, "tune --dry-run --db " + dir.file("t.db") + " --budget 5 --verify 2 --strategy grid --add X=1,2,3 -- " +
                              touching(mark));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(mark)) << "the application ran";
  EXPECT_NE(r.out.find("nothing was run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("space: 1 controls, 3 configurations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  X (user): 1 2 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1  default (the reference)"), std::string::npos) << r.out;
  for (const char* c : {"X=1", "X=2", "X=3"}) EXPECT_NE(r.out.find(c), std::string::npos) << c << r.out;
  // budget 5 + 2 pairs and a warm-up of each + at most 16 to minimise.
  EXPECT_NE(r.out.find("planned runs: at most 27 (the budget's 5"), std::string::npos) << r.out;
}

// On a program with contracts: the undecided hypotheses' controls and their constraint.
TEST(TuneDryRun, HypothesesControlsAndConstraints) {
  TempDir dir;
  auto t0 = Clock::now();
  CliRun r = run_cli(dir, "tune --dry-run --db " + dir.file("t.db") + " --budget 8 -- " + program("omp_blas") + " 200");
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("undecided"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  OMP_NUM_THREADS ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  OPENBLAS_NUM_THREADS ("), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("constraints:\n  .*OMP_NUM_THREADS.*<=.*"))) << r.out;
  EXPECT_NE(r.out.find("planned candidates (strategy syspilot"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("tune: trial"), std::string::npos) << r.err;
  EXPECT_LT(seconds_since(t0), 20);
}

// A dry run stores nothing: it creates no store (nor the store's folder), whether --db names one
// or the default is used, and it leaves one that exists as it was.
TEST(TuneDryRun, CreatesNoStoreAndLeavesOneThatExists) {
  TempDir dir;
  const std::string args = " --budget 4 --strategy grid --add X=1,2 -- /bin/true";
  const std::string named = dir.file("sub/t.db");
  CliRun r = run_cli(dir, "tune --dry-run --db " + named + args);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("nothing was run"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(named)) << "the dry run created its --db";
  EXPECT_FALSE(std::filesystem::exists(dir.file("sub"))) << "the dry run created the store's folder";

  CliRun d = run_cli(dir, "tune --dry-run" + args);  // the default store, under XDG_DATA_HOME
  ASSERT_EQ(d.exit, 0) << d.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("xdg/syspilot"))) << "the dry run created the default store";

  const std::string db = dir.file("t.db");
  {
    tuner::SessionStore st(db);
    tuner::SessionInfo s;
    s.argv = {"/bin/true"};
    s.strategy = "grid";
    s.budget = 3;
    s.space_json = R"({"params":[]})";
    st.create(s);
  }
  CliRun e = run_cli(dir, "tune --dry-run --db " + db + args);
  ASSERT_EQ(e.exit, 0) << e.err;
  EXPECT_NE(e.out.find("space: 1 controls, 2 configurations"), std::string::npos) << e.out;
  tuner::SessionStore st(db);
  EXPECT_EQ(st.list().size(), 1u) << "the dry run stored a session";
  EXPECT_TRUE(st.analyses().empty()) << "the dry run stored an analysis";
}

// ---- tune: Ctrl-C --------------------------------------------------------------------------------

// SIGINT while trials run: the running trial's process group is killed, the session is marked
// interrupted, stderr says how to resume, and the exit status is 130.
TEST(TuneInterrupt, SigintMarksTheSessionAndSaysHowToResume) {
  TempDir dir;
  const std::string db = dir.file("t.db"), pids = dir.file("pids");
  Started tune({"tune", "--db", db, "--budget", "40", "--max-repeats", "1", "--strategy", "grid", "--verify", "0",
                "--add", "K=1,2,3,4,5,6,7,8", "--", "/bin/sh", "-c", "echo $$ >> " + pids + "; sleep 0.4"});
  ASSERT_GT(tune.pid, 0);
  // Read stderr until the first trial line, then interrupt while the next trial runs.
  ASSERT_TRUE(tune.wait_for("tune: trial 2 ")) << tune.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // inside the next run
  const std::string& err = tune.err;
  EXPECT_EQ(tune.stop(SIGINT), 130) << err;
  EXPECT_NE(err.find("tune: interrupted; resume with: syspilot tune --resume 1 --db " + db), std::string::npos) << err;

  // No run outlives it: every shell it started is gone (or a zombie init has not reaped yet).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (const auto& line : [&] {
         std::vector<std::string> v;
         std::istringstream in(slurp(pids));
         for (std::string l; std::getline(in, l);) v.push_back(l);
         return v;
       }()) {
    std::ifstream stat("/proc/" + line + "/stat");
    std::string s;
    std::getline(stat, s);
    auto close = s.rfind(')');
    if (close != std::string::npos) {
      EXPECT_EQ(s.substr(close + 2, 1), "Z") << "run " << line << " still alive: " << s;
    }
  }

  tuner::SessionStore st(db);
  auto info = st.get(1);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->status, "interrupted");
  for (const auto& t : st.trials(1)) EXPECT_TRUE(t.m.ok) << "a killed run was stored: " << t.m.failure;
  CliRun list = run_cli(dir, "sessions list --db " + db);
  EXPECT_NE(list.out.find("interrupted"), std::string::npos) << list.out;
}

// A resumed session keeps the budget it was started with (not --budget's default), and
// --budget raises it for good: the store counts the session against the raised one.
TEST(TuneInterrupt, ResumeKeepsTheSessionsBudgetUnlessRaised) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  auto interrupted = [&](int budget) {
    const std::string cmd = "env -u SYSPILOT_DB timeout --preserve-status -s INT 2 " + std::string(SYSPILOT_BINARY) + " tune --db " + db +
                            " --budget " + std::to_string(budget) +
                            " --strategy grid --max-repeats 1 --verify 0 --minimise-runs 0 --add K=1,2,3,4,5,6,7,8 -- " +
                            "/bin/sh -c " + q("sleep 0.4") + " >/dev/null 2>&1";
    int st = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 130);
  };
  auto runs_of = [&](std::int64_t id) {
    tuner::SessionStore st(db);
    int runs = 0;
    for (const auto& t : st.trials(id)) runs += t.m.repeats;
    return runs;
  };

  interrupted(6);
  CliRun kept = run_cli(dir, "tune --resume 1 --verify 0 --minimise-runs 0 --db " + db);
  EXPECT_EQ(kept.exit, 0) << kept.err;
  {
    tuner::SessionStore st(db);
    ASSERT_TRUE(st.get(1));
    EXPECT_EQ(st.get(1)->budget, 6);
  }
  EXPECT_LE(runs_of(1), 6);

  interrupted(6);
  CliRun raised = run_cli(dir, "tune --resume 2 --budget 9 --verify 0 --minimise-runs 0 --db " + db);
  EXPECT_EQ(raised.exit, 0) << raised.err;
  tuner::SessionStore st(db);
  ASSERT_TRUE(st.get(2));
  EXPECT_EQ(st.get(2)->budget, 9);
  EXPECT_GT(runs_of(2), 6);
  EXPECT_LE(runs_of(2), 9);
}

TEST(TuneInterrupt, UnknownResumeSaysHowToListSessions) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  CliRun r = run_cli(dir, "tune --db " + db + " --resume 42");
  EXPECT_EQ(r.exit, 2) << r.err;
  EXPECT_NE(r.err.find("no tuning session 42"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("list them with: syspilot sessions list --db " + db), std::string::npos) << r.err;
}

// ---- tune: one process per session ---------------------------------------------------------------

// A session is searched by one live process: a resume while another process resumes it is
// refused (exit 2, naming that process) and runs nothing; once that process is killed with
// SIGKILL, which releases nothing, the session resumes all the same; a process that ends releases
// it.
TEST(TuneOwner, ASecondResumeIsRefusedWhileTheFirstLivesNotOnceItIsKilled) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  const std::vector<std::string> app = {"--", "/bin/sh", "-c", "sleep 0.3"};
  auto tune_args = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"tune", "--db", db});
    args.insert(args.end(), {"--verify", "0", "--minimise-runs", "0"});
    return args;
  };
  std::vector<std::string> first = tune_args({"--budget", "30", "--max-repeats", "1", "--strategy", "grid", "--add",
                                              "K=1,2,3,4,5,6,7,8,9,10,11,12"});
  first.insert(first.end(), app.begin(), app.end());
  Started original(first);
  ASSERT_TRUE(original.wait_for("tune: trial 2 ")) << original.err;
  EXPECT_EQ(original.stop(SIGINT), 130) << original.err;
  tuner::SessionStore st(db);
  EXPECT_FALSE(st.owner(1)) << "an interrupted session is left owned";

  Started resumed(tune_args({"--resume", "1"}));
  ASSERT_TRUE(resumed.wait_for("tune: trial ")) << resumed.err;
  ASSERT_TRUE(st.owner(1));
  EXPECT_EQ(st.owner(1)->pid, resumed.pid);
  CliRun second = run_cli(dir, "tune --resume 1 --verify 0 --minimise-runs 0 --db " + db);
  EXPECT_EQ(second.exit, 2) << second.err;
  EXPECT_NE(second.err.find("session 1 is being tuned by process " + std::to_string(resumed.pid) + " (since "),
            std::string::npos)
      << second.err;
  EXPECT_EQ(second.err.find("tune: trial"), std::string::npos) << "the refused resume ran trials:\n" << second.err;
  EXPECT_EQ(second.err.find("tune: resuming"), std::string::npos) << second.err;

  EXPECT_EQ(resumed.stop(SIGKILL), -1);  // killed: its claim stays behind, its process is gone
  ASSERT_TRUE(st.owner(1));
  EXPECT_FALSE(tuner::owner_alive(*st.owner(1)));
  CliRun third = run_cli(dir, "tune --resume 1 --verify 0 --minimise-runs 0 --db " + db);
  EXPECT_EQ(third.exit, 0) << third.err;
  EXPECT_NE(third.err.find("tune: resuming session 1"), std::string::npos) << third.err;
  EXPECT_FALSE(st.owner(1)) << "the session is still owned after its process ended";
  EXPECT_EQ(st.get(1)->status, "finished");
}

// The owner recorded is a process, not a pid: a live one with that pid and start time holds the
// session; the same pid with another start time (the pid reused since) does not.
TEST(TuneOwner, APidReusedByAnotherProcessDoesNotHoldTheSession) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  CliRun made = run_cli(dir, "tune --db " + db + " --budget 3 --strategy grid --verify 0 --minimise-runs 0 " +
                                 "--add K=1,2 -- /bin/true");
  ASSERT_EQ(made.exit, 0) << made.err;
  tuner::SessionStore st(db);
  EXPECT_FALSE(st.owner(1)) << "a finished session is left owned";
  ASSERT_FALSE(st.claim(1)) << "this test process could not take the session";
  const tuner::SessionOwner me = tuner::this_process();
  ASSERT_GT(me.start, 0u);
  ASSERT_TRUE(st.owner(1));
  EXPECT_EQ(st.owner(1)->pid, ::getpid());
  EXPECT_TRUE(tuner::owner_alive(*st.owner(1)));
  const size_t trials = st.trials(1).size();

  CliRun held = run_cli(dir, "tune --resume 1 --budget 6 --verify 0 --minimise-runs 0 --db " + db);
  EXPECT_EQ(held.exit, 2) << held.err;
  EXPECT_NE(held.err.find("session 1 is being tuned by process " + std::to_string(::getpid())), std::string::npos)
      << held.err;
  EXPECT_EQ(st.trials(1).size(), trials);
  EXPECT_EQ(st.get(1)->budget, 3) << "the refused resume raised the budget";

  store::Database raw(db);
  raw.prepare("UPDATE tune_owners SET start = start + 1 WHERE session_id = 1").run();
  EXPECT_FALSE(tuner::owner_alive(*st.owner(1)));
  CliRun reused = run_cli(dir, "tune --resume 1 --budget 6 --verify 0 --minimise-runs 0 --db " + db);
  EXPECT_EQ(reused.exit, 0) << reused.err;
  EXPECT_GT(st.trials(1).size(), trials);
  EXPECT_FALSE(st.owner(1));
}

// A store written before sessions had owners (tuner schema 4) opens, gains the table, and its
// sessions resume.
TEST(TuneOwner, AStoreFromBeforeOwnersResumes) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  CliRun made = run_cli(dir, "tune --db " + db + " --budget 3 --strategy grid --verify 0 --minimise-runs 0 " +
                                 "--add K=1,2 -- /bin/true");
  ASSERT_EQ(made.exit, 0) << made.err;
  {
    store::Database raw(db);
    raw.exec("DROP TABLE tune_owners; DELETE FROM schema_migrations WHERE component = 'tuner' AND version = 5;");
    EXPECT_EQ(raw.schema_version("tuner"), 4);
  }
  CliRun list = run_cli(dir, "sessions list --db " + db);
  EXPECT_EQ(list.exit, 0) << list.err;
  CliRun resumed = run_cli(dir, "tune --resume 1 --budget 5 --verify 0 --minimise-runs 0 --db " + db);
  EXPECT_EQ(resumed.exit, 0) << resumed.err;
  EXPECT_EQ(store::Database(db).schema_version("tuner"), 5);
  tuner::SessionStore st(db);
  EXPECT_EQ(st.get(1)->budget, 5);
  EXPECT_FALSE(st.owner(1));
}

// ---- tune: keep your defaults -------------------------------------------------------------------

// --min-gain: a real gain (0.3 s -> 0.05 s) below the smallest gain asked for keeps the
// defaults; the default threshold (3%) exports it; a negative threshold is refused.
TEST(TuneVerdict, MinGainIsTheSmallestGainExported) {
  TempDir dir;
  const std::string prog = "/bin/sh -c " + q("if [ \"$X\" = 2 ]; then sleep 0.05; else sleep 0.3; fi");
  CliRun high = run_cli(dir, "tune --db " + dir.file("t.db") + " --budget 6 --verify 2 --strategy grid --no-minimise " +
                                 "--add X=1,2 --min-gain 10 -- " + prog);
  ASSERT_EQ(high.exit, 0) << high.err;
  EXPECT_NE(high.out.find("# keep your defaults"), std::string::npos) << high.out << high.err;
  EXPECT_FALSE(std::regex_search(high.out, std::regex("(^|\n)X="))) << high.out;
  CliRun usual = run_cli(dir, "tune --db " + dir.file("t.db") + " --budget 6 --verify 2 --strategy grid --no-minimise " +
                                  "--add X=1,2 -- " + prog);
  ASSERT_EQ(usual.exit, 0) << usual.err;
  EXPECT_TRUE(std::regex_search(usual.out, std::regex("(^|\n)X=2"))) << usual.out << usual.err;
  CliRun bad = run_cli(dir, "tune --db " + dir.file("t.db") + " --min-gain -1 --add X=1,2 -- " + prog);
  EXPECT_EQ(bad.exit, 2) << bad.out << bad.err;
}

// No hypothesis confirmed: the undecided hypotheses' controls make the space but guide nothing,
// and the control the user added is tried first, not after their remedies. The rules are the
// launchers and regions of tuner/rules and one rule of nested oversubscription whose check
// reads a signal nothing measures, so its hypothesis stays undecided on any machine.
TEST(TuneGuides, AnAddedControlIsTriedBeforeUndecidedRemedies) {
  TempDir dir;
  const std::string rules = dir.file("rules");
  std::filesystem::create_directories(rules);
  for (const char* f : {"launchers.json", "regions.json"})
    std::filesystem::copy_file(std::string(SYSPILOT_CHECKOUT) + "/tuner/rules/" + f, rules + "/" + f);
  spit(rules + "/undecidable.json", R"({
  "kind": "undecidable_nesting", "title": "Nesting nothing can decide", "relation": "nested",
  "roles": [{"name": "outer", "any": ["provides:region", "behavior:creates_pool"]},
            {"name": "inner", "any": ["demand:cpu.threads", "controls:cpu.threads"]}],
  "symptom": "{inner} inside {outer}",
  "controls": ["inner:cpu.threads", "outer:cpu.threads"],
  "constraint": "{outer:cpu.threads} * {inner:cpu.threads} <= ncores",
  "remedies": [{"inner:cpu.threads": "1"}, {"outer:cpu.threads": "1"}],
  "probes": [],
  "checks": [{"signal": "a_signal_nothing_measures", "op": ">=", "value": 1, "why": "undecidable"}]
})");
  const std::string prog = "/bin/sh -c " + q("if [ \"$X\" = 2 ]; then :; else sleep 0.3; fi; exec " +
                                              program("calm") + " 40");
  CliRun r = run_cli(dir, "tune --db " + dir.file("t.db") + " --budget 5 --verify 2 --no-minimise --add X=1,2 -- " + prog,
                     "SYSPILOT_RULES_DIR=" + rules);
  ASSERT_EQ(r.exit, 0) << r.err;
  ASSERT_NE(r.err.find("undecided ones, searched without a guide"), std::string::npos) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("[0-9]+ controls, [0-9]+ configurations"))) << r.err;
  std::regex trial("tune: trial ([0-9]+) [^\n]*");
  // Trials 2 and 3: X's two values, nothing else moved.
  int screened = 0;
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), trial); it != std::sregex_iterator(); ++it) {
    const std::string line = it->str();
    if ((*it)[1] != "2" && (*it)[1] != "3") continue;
    ++screened;
    EXPECT_NE(line.find(" X="), std::string::npos) << "a trial before X's values were measured: " << line;
    EXPECT_EQ(line.find("NUM_THREADS"), std::string::npos) << line;
  }
  EXPECT_EQ(screened, 2) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("(^|\n)X=2"))) << r.out << r.err;
}

// Controls that make no difference: the verdict is to keep the defaults, nothing is exported,
// and the exit status is 0.
TEST(TuneVerdict, KeepYourDefaultsWhenNothingBeatsThemBeyondNoise) {
  TempDir dir;
  CliRun r = run_cli(dir, "tune --db " + dir.file("t.db") + " --budget 6 --verify 3 --strategy grid --add X=1,2 -- " +
                              "/bin/sh -c " + q("sleep 0.2"));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("# keep your defaults: no configuration beat the default beyond "
                                                  "noise \\(speedup [0-9.]+x \\+-[0-9]+%\\)")))
      << r.out << r.err;
  EXPECT_FALSE(std::regex_search(r.out, std::regex("(^|\n)X="))) << "an assignment was printed:\n" << r.out;

  CliRun e = run_cli(dir, "tune --db " + dir.file("t.db") + " --budget 6 --verify 3 --strategy grid --add X=1,2 --export -- " +
                              "/bin/sh -c " + q("sleep 0.2"));
  ASSERT_EQ(e.exit, 0) << e.err;
  EXPECT_EQ(e.out, "") << "nothing to export";
  EXPECT_NE(e.err.find("# keep your defaults"), std::string::npos) << e.err;
}

// A strategy that proposes what it measured already (on a pool over the pthreads OpenBLAS, the
// thread controls of one library move as one: 5 controls, a few distinct configurations) is
// answered from the record, at no cost and with no trial of its own: the result counts the
// trials that ran, as the session's record holds them, and so does --compare's table.
TEST(TuneResult, TrialsCountedAreTheTrialsThatRan) {
  TempDir dir;
  const std::string app = std::string(SYSPILOT_TEST_PROGRAMS) + "/blas_pool 400 128";
  CliRun r = run_cli(dir, "tune --json --db " + dir.file("t.db") + " --budget 10 --verify 0 --minimise-runs 0 --strategy random -- " + app);
  ASSERT_EQ(r.exit, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["trials"].is_array()) << r.out;
  EXPECT_EQ(j["result"]["trials"].get<size_t>(), j["trials"].size()) << r.out;
  // each trial ran the program at least once
  EXPECT_LE(j["result"]["trials"].get<int>(), j["result"]["runs"]["search"].get<int>()) << r.out;
  CliRun cmp = run_cli(dir, "tune --db " + dir.file("c.db") + " --budget 10 --verify 0 --minimise-runs 0 --compare syspilot,random -- " + app);
  ASSERT_EQ(cmp.exit, 0) << cmp.err;
  std::istringstream rows(cmp.out);
  int seen = 0;
  for (std::string line; std::getline(rows, line);) {
    std::istringstream cols(line);
    std::string who;
    int runs = 0, trials = 0;
    if (!(cols >> who >> runs >> trials)) continue;
    ++seen;
    EXPECT_LE(trials, runs) << line;
  }
  EXPECT_EQ(seen, 2) << cmp.out;
}
