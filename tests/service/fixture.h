// Shared fixtures of the service tests: temporary folders, a tiny C library written in
// release versions, a git repository with tagged releases, waiting helpers, and a running
// `syspilot serve` process.
#pragma once
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "service/process.h"

extern char** environ;

namespace syspilot::service::test {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "syspilot-service-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  std::string str(const std::string& rel = {}) const { return rel.empty() ? path_.string() : (path_ / rel).string(); }

 private:
  fs::path path_;
};

inline void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::trunc) << text;
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A small threaded library, "foo". Release 1.1 adds a spin knob; 1.2 changes the default.
inline void write_foo_release(const fs::path& dir, const std::string& version) {
  std::string c = "// foo " + version +
                  "\n#include <stdlib.h>\n#include <pthread.h>\n#include \"foo.h\"\n"
                  "static int nthreads = 0;\n"
                  "int foo_threads(void) {\n"
                  "  const char* s = getenv(\"FOO_NUM_THREADS\");\n"
                  "  return s ? atoi(s) : " +
                  std::string(version == "1.2.0" ? "8" : "4") +
                  ";\n}\n"
                  "void foo_set_num_threads(int n) { nthreads = n; }\n"
                  "static void* worker(void* arg) { return arg; }\n"
                  "void foo_start(void) { pthread_t t; pthread_create(&t, 0, worker, 0); }\n";
  if (version != "1.0.0")
    c += "int foo_spin_timeout(void) {\n  const char* s = getenv(\"FOO_SPIN_TIMEOUT\");\n  return s ? atoi(s) : 100;\n}\n";
  write_file(dir / "src" / "foo.c", c);
  write_file(dir / "include" / "foo.h",
             "/* foo " + version +
                 " public API */\n#pragma once\n/** Sets the number of worker threads foo uses. */\n"
                 "void foo_set_num_threads(int n);\nint foo_threads(void);\n");
  write_file(dir / "README.md", "# foo " + version +
                                    "\n\nSet FOO_NUM_THREADS to choose how many threads foo starts.\n");
}

inline ProcessResult sh(const std::vector<std::string>& argv, const std::string& cwd = {}) {
  ProcessOptions o;
  o.cwd = cwd;
  o.timeout_s = 60;
  o.env_extra = {{"GIT_AUTHOR_NAME", "t"},      {"GIT_AUTHOR_EMAIL", "t@example.org"},
                 {"GIT_COMMITTER_NAME", "t"},   {"GIT_COMMITTER_EMAIL", "t@example.org"},
                 {"GIT_CONFIG_NOSYSTEM", "1"},  {"HOME", cwd.empty() ? "/tmp" : cwd}};
  return run_process(argv, o);
}

// A git repository with tags v1.0.0, v1.1.0 (and v1.2.0 when `three`), plus a non-release tag.
inline std::string make_foo_repo(const fs::path& dir, bool three = false) {
  fs::create_directories(dir);
  EXPECT_TRUE(sh({"git", "init", "-q", "-b", "main", dir.string()}).ok());
  std::vector<std::string> versions = {"1.0.0", "1.1.0"};
  if (three) versions.push_back("1.2.0");
  for (auto& v : versions) {
    write_foo_release(dir, v);
    EXPECT_TRUE(sh({"git", "add", "-A"}, dir.string()).ok());
    EXPECT_TRUE(sh({"git", "commit", "-q", "-m", "release " + v}, dir.string()).ok());
    EXPECT_TRUE(sh({"git", "tag", "v" + v}, dir.string()).ok());
  }
  EXPECT_TRUE(sh({"git", "tag", "nightly-build"}, dir.string()).ok());
  return dir.string();
}

// Polls `done` every 50 ms up to `seconds`.
inline bool eventually(const std::function<bool()>& done, double seconds = 30) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// A running `syspilot serve`, its port read from its first line of output.
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args, const std::string& bin = SYSPILOT_BIN) {
    int out[2];
    EXPECT_EQ(pipe(out), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    args.insert(args.begin(), {bin, "serve"});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid_, bin.c_str(), &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    std::string line;
    char c;
    // The first line is "syspilot serve: listening on http://127.0.0.1:PORT".
    while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
    fd_ = out[0];
    auto colon = line.rfind(':');
    if (line.find("listening on") != std::string::npos && colon != std::string::npos)
      port_ = std::stoi(line.substr(colon + 1));
  }
  ~ServeProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }
  void kill9() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // Sends SIGTERM; returns the exit status (or -1 when it did not exit in time).
  int terminate(double seconds) {
    kill(pid_, SIGTERM);
    int status = 0;
    bool done = eventually([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, seconds);
    if (!done) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  int port_ = 0;
};


}  // namespace syspilot::service::test
