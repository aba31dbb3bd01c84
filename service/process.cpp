// posix_spawn-based process runner: no shell ever sees an argument, and a timeout or a
// cancellation kills the whole process group so that no grandchild (git-remote-https) lingers.
#include "service/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace syspilot::service {

namespace {
void append_capped(std::string& s, const char* data, size_t n, size_t cap) {
  if (s.size() < cap) s.append(data, std::min(n, cap - s.size()));
}
}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts) {
  ProcessResult r;
  if (argv.empty()) {
    r.start_error = "empty command";
    return r;
  }
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    r.start_error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    r.start_error = std::string("pipe: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return r;
  }

  // Environment: ours, with the extras replacing same-named entries.
  std::vector<std::string> env_store;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos && opts.env_extra.count(kv.substr(0, eq))) continue;
    env_store.push_back(std::move(kv));
  }
  for (auto& [k, v] : opts.env_extra) env_store.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  if (!opts.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, opts.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);

  pid_t pid = -1;
  int rc = posix_spawnp(&pid, cargv[0], &fa, &attr, cargv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    r.start_error = "cannot run " + argv[0] + ": " + std::strerror(rc);
    close(out_pipe[0]);
    close(err_pipe[0]);
    return r;
  }

  auto start = std::chrono::steady_clock::now();
  bool killed = false;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[8192];
  while (open_fds > 0) {
    int n = poll(fds, 2, 50);
    if (n > 0) {
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t got = read(fds[i].fd, buf, sizeof buf);
        if (got > 0) {
          append_capped(i == 0 ? r.out : r.err, buf, static_cast<size_t>(got), opts.max_output);
        } else if (got == 0 || errno != EINTR) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
    if (killed) continue;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    bool cancel = opts.cancelled && opts.cancelled();
    if (elapsed > opts.timeout_s || cancel) {
      r.timed_out = !cancel;
      r.cancelled = cancel;
      kill(-pid, SIGKILL);
      killed = true;
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!killed) {
    // Kill any stragglers left in the group (daemonised helpers).
    kill(-pid, SIGKILL);
  }
  if (WIFEXITED(status) && !killed) r.exit_code = WEXITSTATUS(status);
  return r;
}

}  // namespace syspilot::service
