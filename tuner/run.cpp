// The process runner behind every profile and trial: fork/exec in a fresh process group,
// /proc sampling of the whole process tree, perf_event_open software counters, timeouts.
#include "tuner/run.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

extern char** environ;

namespace syspilot::tuner {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Reads a small /proc file in one syscall; empty on any error (the task may be gone).
std::string slurp(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > (1u << 22)) break;
  }
  ::close(fd);
  return out;
}

std::vector<int> numeric_entries(const std::string& dir) {
  std::vector<int> ids;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return ids;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    ids.push_back(std::atoi(e->d_name));
  }
  ::closedir(d);
  return ids;
}

// Fields of /proc/PID/stat after the parenthesised comm: index 0 is the state (field 3).
bool stat_fields(const std::string& text, std::string& comm, std::vector<std::string>& rest) {
  auto l = text.find('('), r = text.rfind(')');
  if (l == std::string::npos || r == std::string::npos || r < l) return false;
  comm = text.substr(l + 1, r - l - 1);
  std::istringstream is(text.substr(r + 1));
  rest.clear();
  for (std::string f; is >> f;) rest.push_back(f);
  return rest.size() > 5;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string format_seconds(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// Watches the process tree rooted at the child: threads, per-thread CPU and run-queue wait,
// mapped shared objects, and which processes had each mapped at once. Threads that exit keep
// their last values.
class TreeSampler {
 public:
  TreeSampler(int root, int pgid) : root_(root), pgid_(pgid) { procs_[root]; }

  // `read_maps` re-reads every process' maps (a plugin dlopen'ed late); a process' maps are
  // also read on its first three sweeps, whenever its name changes (it exec'ed) and whenever
  // its thread count changes (a library loaded at run time starting its pool).
  void sweep(bool rescan_tree, bool read_maps) {
    if (rescan_tree) rescan();
    int alive_threads = 0, alive_procs = 0;
    std::vector<int> lib_procs(lib_paths_.size(), 0), lib_threads(lib_paths_.size(), 0);
    std::vector<int> born;  // children found through /proc/PID/task/PID/children
    for (auto it = procs_.begin(); it != procs_.end();) {
      int pid = it->first;
      Proc& proc = it->second;
      std::string base = "/proc/" + std::to_string(pid) + "/task";
      auto tids = numeric_entries(base);
      if (tids.empty() && pid != root_) {
        it = procs_.erase(it);
        continue;
      }
      int proc_threads = 0;
      for (int tid : tids) {
        std::string ss = slurp(base + "/" + std::to_string(tid) + "/schedstat");
        if (ss.empty()) continue;
        ++alive_threads;
        ++proc_threads;
        unsigned long long cpu_ns = 0, wait_ns = 0;
        if (std::sscanf(ss.c_str(), "%llu %llu", &cpu_ns, &wait_ns) != 2) continue;
        auto& t = threads_[tid];
        if (t.tid == 0) {
          t.tid = tid;
          t.pid = pid;
          std::string c = slurp(base + "/" + std::to_string(tid) + "/comm");
          while (!c.empty() && c.back() == '\n') c.pop_back();
          t.comm = c;
        }
        t.cpu_s = cpu_ns * 1e-9;
        t.runq_wait_s = wait_ns * 1e-9;
        cpu_set_t mask;
        CPU_ZERO(&mask);
        if (::sched_getaffinity(tid, sizeof mask, &mask) == 0) {
          t.cpus_allowed = CPU_COUNT(&mask);
          t.cpu_mask.assign(reinterpret_cast<const char*>(&mask), sizeof mask);
        }
      }
      if (proc_threads > 0) {
        // A new process (a script's command, a worker) is seen on the next sweep, not at the
        // next full /proc walk: short-lived children count too.
        std::istringstream kids(slurp(base + "/" + std::to_string(pid) + "/children"));
        for (int k; kids >> k;)
          if (!procs_.count(k)) born.push_back(k);
        std::string comm;
        std::vector<std::string> f;
        bool zombie = stat_fields(slurp("/proc/" + std::to_string(pid) + "/stat"), comm, f) && f[0] == "Z";
        if (zombie) {  // exited, not yet reaped: runs nothing, holds no library
          ++it;
          continue;
        }
        bool exec_seen = comm != proc.comm;
        proc.comm = comm;
        // A library loaded at run time usually starts its pool right away (numpy's OpenBLAS,
        // a plugin's runtime): a change in the thread count is when to look at the maps again,
        // not only the periodic re-read, which a program shorter than its period never gets.
        bool threads_changed = proc_threads != proc.threads;
        proc.threads = proc_threads;
        if (read_maps || proc.sweeps < 3 || exec_seen || threads_changed) read_libraries(pid, proc);
        ++proc.sweeps;
        ++alive_procs;
        lib_procs.resize(lib_paths_.size(), 0);  // maps read just now may add libraries
        lib_threads.resize(lib_paths_.size(), 0);
        for (int id : proc.libs) {
          ++lib_procs[id];
          lib_threads[id] += proc_threads;
        }
      }
      ++it;
    }
    for (int k : born) procs_[k];
    if (alive_threads > 0) {
      ++samples_;
      thread_sum_ += alive_threads;
      max_threads_ = std::max(max_threads_, alive_threads);
      max_procs_ = std::max(max_procs_, alive_procs);
      for (size_t id = 0; id < lib_procs.size(); ++id) {
        uses_[id].max_concurrent = std::max(uses_[id].max_concurrent, lib_procs[id]);
        uses_[id].max_threads = std::max(uses_[id].max_threads, lib_threads[id]);
      }
    }
  }

  int samples() const { return samples_; }
  int max_threads() const { return max_threads_; }
  int max_processes() const { return max_procs_; }
  double mean_threads() const { return samples_ ? double(thread_sum_) / samples_ : 0; }
  const std::map<int, ThreadSample>& threads() const { return threads_; }
  std::vector<std::string> libraries() const { return paths(false); }
  std::vector<std::string> executables() const { return paths(true); }
  std::vector<LibraryUse> library_use() const {
    std::vector<LibraryUse> out = uses_;
    std::sort(out.begin(), out.end(), [](const LibraryUse& a, const LibraryUse& b) { return a.path < b.path; });
    return out;
  }

 private:
  struct Proc {
    std::string comm;
    int sweeps = 0;
    int threads = 0;     // on the last sweep
    std::set<int> libs;  // ids into lib_paths_ currently mapped (as last read)
    std::set<int> ever;  // every id it was seen with
  };

  // Finds descendants: processes in the child's process group, or whose parent is known.
  void rescan() {
    for (int pid : numeric_entries("/proc")) {
      if (procs_.count(pid)) continue;
      std::string comm;
      std::vector<std::string> f;
      if (!stat_fields(slurp("/proc/" + std::to_string(pid) + "/stat"), comm, f)) continue;
      int ppid = std::atoi(f[1].c_str()), pgrp = std::atoi(f[2].c_str());
      if (pgrp == pgid_ || procs_.count(ppid)) procs_[pid];
    }
  }

  std::vector<std::string> paths(bool executables) const {
    std::set<std::string> s;
    for (auto& u : uses_)
      if (u.executable == executables) s.insert(u.path);
    return {s.begin(), s.end()};
  }

  int object_id(const std::string& path, bool executable) {
    auto [it, fresh] = lib_ids_.emplace((executable ? "exe:" : "so:") + path, static_cast<int>(lib_paths_.size()));
    if (fresh) {
      lib_paths_.push_back(path);
      uses_.push_back({});
      uses_.back().path = path;
      uses_.back().executable = executable;
    }
    return it->second;
  }

  // The shared objects a process has mapped, and the program it runs: a library linked into
  // that program (Debian's zstd carries its own libzstd) maps no shared object of its own.
  void read_libraries(int pid, Proc& proc) {
    std::string maps = slurp("/proc/" + std::to_string(pid) + "/maps");
    if (maps.empty()) return;  // gone, or not readable: keep what was seen
    std::istringstream is(maps);
    std::set<int> now;
    for (std::string line; std::getline(is, line);) {
      auto slash = line.find('/');
      if (slash == std::string::npos) continue;
      std::string path = line.substr(slash);
      if (path.find(".so") == std::string::npos) continue;
      now.insert(object_id(path, false));
    }
    char exe[4096];
    ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), exe, sizeof exe - 1);
    if (n > 0) {
      std::string path(exe, static_cast<size_t>(n));
      const std::string deleted = " (deleted)";  // replaced on disk while it ran: nothing to read
      if (path.size() <= deleted.size() || path.compare(path.size() - deleted.size(), deleted.size(), deleted) != 0)
        now.insert(object_id(path, true));
    }
    for (int id : now) {
      if (proc.ever.insert(id).second) {
        ++uses_[id].processes;
        auto& pids = uses_[id].pids;  // kept ascending; a reused PID is one entry
        auto at = std::lower_bound(pids.begin(), pids.end(), pid);
        if (at == pids.end() || *at != pid) pids.insert(at, pid);
      }
      if (pid == root_) uses_[id].in_root = true;
    }
    proc.libs = std::move(now);
  }

  int root_, pgid_;
  std::map<int, Proc> procs_;
  std::map<int, ThreadSample> threads_;
  std::map<std::string, int> lib_ids_;
  std::vector<std::string> lib_paths_;
  std::vector<LibraryUse> uses_;  // by id
  int samples_ = 0, max_threads_ = 0, max_procs_ = 0;
  long thread_sum_ = 0;
};

struct PerfCounter {
  std::string name;
  uint32_t type;
  uint64_t config;
  int fd = -1;
};

long perf_open(perf_event_attr* attr, int pid) {
  return ::syscall(SYS_perf_event_open, attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

// Opens counters on the (stopped, not yet exec'd) child; they start at exec and follow
// every thread and process it creates.
std::vector<PerfCounter> open_counters(int pid, std::vector<std::string>& notes) {
  std::vector<PerfCounter> cs = {
      {"task_clock_ms", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
      {"context_switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
      {"cpu_migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
      {"page_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
      {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
      {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
      {"cache_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
  };
  for (auto& c : cs) {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = c.type;
    a.config = c.config;
    a.disabled = 1;
    a.enable_on_exec = 1;
    a.inherit = 1;
    c.fd = static_cast<int>(perf_open(&a, pid));
    if (c.fd < 0 && (errno == EACCES || errno == EPERM)) {
      a.exclude_kernel = 1;
      a.exclude_hv = 1;
      c.fd = static_cast<int>(perf_open(&a, pid));
    }
    if (c.fd < 0) {
      int e = errno;
      std::string why = (e == ENOENT || e == EOPNOTSUPP || e == ENODEV)
                            ? "not supported on this kernel/VM"
                        : (e == EACCES || e == EPERM)
                            ? "not permitted (kernel.perf_event_paranoid)"
                            : std::string("perf_event_open failed: ") + std::strerror(e);
      notes.push_back(c.name + ": " + why);
    }
  }
  return cs;
}

void read_counters(std::vector<PerfCounter>& cs, RunResult& r) {
  for (auto& c : cs) {
    if (c.fd < 0) continue;
    uint64_t v = 0;
    if (::read(c.fd, &v, sizeof v) == static_cast<ssize_t>(sizeof v))
      r.perf[c.name] = c.config == PERF_COUNT_SW_TASK_CLOCK && c.type == PERF_TYPE_SOFTWARE
                           ? v / 1e6
                           : static_cast<double>(v);
    else
      r.perf_notes.push_back(c.name + ": could not be read");
    ::close(c.fd);
    c.fd = -1;
  }
}

// The child's environment: inherited (unless not wanted), less env_unset, plus env_set.
std::map<std::string, std::string> child_env(const RunSpec& spec) {
  std::map<std::string, std::string> env;
  if (spec.inherit_env)
    for (char** e = environ; e && *e; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  for (auto& k : spec.env_unset) env.erase(k);
  for (auto& [k, v] : spec.env_set) env[k] = v;
  return env;
}

std::vector<std::string> build_env(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

bool placeholder_char(char c, bool first) {
  return (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

// Finds the placeholders of one argument: {start, end} of each `{...}` with its parts.
std::vector<std::pair<std::pair<size_t, size_t>, Placeholder>> scan_placeholders(const std::string& a) {
  std::vector<std::pair<std::pair<size_t, size_t>, Placeholder>> out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != '{' || (i > 0 && a[i - 1] == '$')) continue;
    size_t j = i + 1;
    while (j < a.size() && placeholder_char(a[j], j == i + 1)) ++j;
    if (j == i + 1 || j >= a.size()) continue;
    Placeholder p;
    p.name = a.substr(i + 1, j - i - 1);
    if (a[j] == '}') {
      out.push_back({{i, j + 1}, p});
      i = j;
      continue;
    }
    if (a.compare(j, 2, ":-") != 0) continue;
    size_t close = a.find('}', j + 2);
    if (close == std::string::npos) continue;
    p.fallback = a.substr(j + 2, close - j - 2);
    p.has_fallback = true;
    out.push_back({{i, close + 1}, p});
    i = close;
  }
  return out;
}

// One stream of the child's output within RunSpec::output_cap: the first half of the cap as it
// came, and the latest bytes in the other half, so that what a program prints last (its metric,
// its error) survives an output of any length. What falls between is counted, not kept.
class CappedOutput {
 public:
  explicit CappedOutput(size_t cap) : head_cap_(cap / 2), tail_cap_(cap - cap / 2) {}

  void add(const char* p, size_t n) {
    total_ += n;
    const size_t h = std::min(n, head_cap_ - head_.size());
    head_.append(p, h);
    if (n == h) return;
    tail_.append(p + h, n - h);
    // Trimmed now and then rather than on every read: each byte is moved a bounded number of times.
    if (tail_.size() > 2 * tail_cap_ + 65536) tail_.erase(0, tail_.size() - tail_cap_);
  }

  // The bytes kept; when some were dropped, the lines they cut are dropped whole too (a line cut in
  // two would read as another number) and one marker line stands where they were.
  std::string text(size_t& dropped) const {
    std::string head = head_;
    std::string tail = tail_.size() > tail_cap_ ? tail_.substr(tail_.size() - tail_cap_) : tail_;
    dropped = total_ - head.size() - tail.size();
    if (dropped == 0) return head + tail;
    if (auto nl = head.rfind('\n'); nl != std::string::npos) head.erase(nl + 1);
    if (auto nl = tail.find('\n'); nl != std::string::npos && nl + 1 < tail.size()) tail.erase(0, nl + 1);
    dropped = total_ - head.size() - tail.size();
    if (!head.empty() && head.back() != '\n') head += '\n';
    return head + "[syspilot: " + std::to_string(dropped) + " bytes of output dropped here]\n" + tail;
  }

 private:
  size_t head_cap_, tail_cap_;
  size_t total_ = 0;
  std::string head_, tail_;
};

// What the last run() on this thread dropped (last_output_dropped()).
thread_local OutputDropped last_dropped;

void drain(int& fd, CappedOutput& into) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.add(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      ::close(fd);
      fd = -1;
    }
    return;
  }
}

}  // namespace

// Text that quotes an application's output (a failure reason, a progress line), made safe to
// print on a terminal and to store as JSON: one line, control characters and bytes that are no UTF-8 written as \xNN (a
// terminal's escape sequences do nothing, the JSON stays valid), line breaks as spaces.
std::string printable(const std::string& s) {
  std::string out;
  auto hex = [&](unsigned char b) {
    static const char* digits = "0123456789abcdef";
    out += "\\x";
    out += digits[b >> 4];
    out += digits[b & 15];
  };
  for (size_t i = 0; i < s.size();) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    if (b == '\n' || b == '\r' || b == '\t') {
      out += ' ';
      ++i;
      continue;
    }
    if (b < 0x20 || b == 0x7f) {
      hex(b);
      ++i;
      continue;
    }
    if (b < 0x80) {
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    // A whole UTF-8 sequence (no overlong form, no surrogate, at most U+10FFFF) is kept.
    size_t n = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && n == 3) {
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(b == 0xe0 && c1 < 0xa0) && !(b == 0xed && c1 >= 0xa0);
    }
    if (ok && n == 4) {
      const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(b == 0xf0 && c1 < 0x90) && !(b == 0xf4 && c1 >= 0x90);
    }
    if (!ok) {
      hex(b);
      ++i;
      continue;
    }
    out.append(s, i, n);
    i += n;
  }
  return out;
}

std::string find_on_path(const std::string& name, const std::map<std::string, std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path;
  if (auto it = env.find("PATH"); it != env.end()) path = it->second;
  else if (const char* p = std::getenv("PATH")) path = p;
  else path = "/usr/bin:/bin";
  std::istringstream is(path);
  for (std::string dir; std::getline(is, dir, ':');) {
    std::filesystem::path cand = std::filesystem::path(dir.empty() ? "." : dir) / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(cand, ec) && ::access(cand.c_str(), X_OK) == 0) return cand.string();
  }
  return "";
}

std::uint64_t process_start_ticks(int pid) {
  std::string comm;
  std::vector<std::string> f;
  if (pid <= 0 || !stat_fields(slurp("/proc/" + std::to_string(pid) + "/stat"), comm, f) || f.size() <= 19) return 0;
  if (f[0] == "Z" || f[0] == "X") return 0;
  return std::strtoull(f[19].c_str(), nullptr, 10);
}

int online_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

OutputDropped last_output_dropped() { return last_dropped; }

std::string note_dropped_output(const std::string& failure) {
  const OutputDropped d = last_dropped;
  if (failure.rfind("no metric", 0) != 0 || (d.stdout_bytes == 0 && d.stderr_bytes == 0)) return failure;
  std::string where;
  if (d.stdout_bytes > 0) where = std::to_string(d.stdout_bytes) + " bytes in the middle of stdout";
  if (d.stderr_bytes > 0)
    where += (where.empty() ? "" : " and ") + std::to_string(d.stderr_bytes) + " bytes in the middle of stderr";
  return failure + " (the output was cut: " + where + " were not kept)";
}

RunResult run(const RunSpec& spec) {
  RunResult r;
  last_dropped = {};
  if (spec.argv.empty() || spec.argv[0].empty()) {
    r.failure = "exec failed: no command given";
    return r;
  }
  std::map<std::string, std::string> env_map = child_env(spec);
  std::vector<std::string> env = build_env(env_map);
  std::vector<std::string> args = spec.placeholders ? substitute_placeholders(spec.argv, env_map) : spec.argv;
  std::vector<char*> envp, argv;
  for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2], go_pipe[2], exec_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) || ::pipe2(err_pipe, O_CLOEXEC) || ::pipe2(go_pipe, O_CLOEXEC) ||
      ::pipe2(exec_pipe, O_CLOEXEC)) {
    r.failure = std::string("exec failed: pipe: ") + std::strerror(errno);
    return r;
  }

  pid_t pid = ::fork();
  if (pid < 0) {
    r.failure = std::string("exec failed: fork: ") + std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], go_pipe[0], go_pipe[1],
                   exec_pipe[0], exec_pipe[1]})
      ::close(fd);
    return r;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls from here to exec.
    ::setpgid(0, 0);
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    char go;
    while (::read(go_pipe[0], &go, 1) < 0 && errno == EINTR) {
    }
    int tagged[2] = {0, 0};  // {1 if the working directory failed, errno}
    if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) {
      tagged[0] = 1;
      tagged[1] = errno;
    } else {
      ::execvpe(argv[0], argv.data(), envp.data());
      tagged[1] = errno;
    }
    ssize_t ignored = ::write(exec_pipe[1], tagged, sizeof tagged);
    (void)ignored;
    ::_exit(127);
  }

  ::setpgid(pid, pid);  // also in the parent: no race with the kill on timeout
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(go_pipe[0]);
  ::close(exec_pipe[1]);

  std::vector<PerfCounter> counters;
  if (spec.perf) counters = open_counters(pid, r.perf_notes);

  auto t0 = Clock::now();
  double cpu0 = thread_cpu_s();
  {
    // The child may be gone before it is told to start (tune's Ctrl-C kills the runs it finds,
    // one that is starting included): the write then fails with EPIPE, and the SIGPIPE it raises
    // in this thread is taken here instead of ending the process.
    sigset_t pipe_sig, old_mask;
    sigemptyset(&pipe_sig);
    sigaddset(&pipe_sig, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_sig, &old_mask);
    if (::write(go_pipe[1], "g", 1) < 0 && errno == EPIPE) {
      timespec none{};
      ::sigtimedwait(&pipe_sig, nullptr, &none);
    }
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  }
  ::close(go_pipe[1]);

  int tagged[2] = {0, 0};
  ssize_t got;
  while ((got = ::read(exec_pipe[0], tagged, sizeof tagged)) < 0 && errno == EINTR) {
  }
  ::close(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof tagged)) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    for (auto& c : counters)
      if (c.fd >= 0) ::close(c.fd);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    r.failure = tagged[0] ? "exec failed: cannot enter working directory " + spec.cwd + ": " +
                                std::strerror(tagged[1])
                          : "exec failed: " + spec.argv[0] + ": " + std::strerror(tagged[1]);
    r.perf_notes.clear();
    return r;
  }
  r.started = true;

  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  ::fcntl(out_fd, F_SETFL, O_NONBLOCK);
  ::fcntl(err_fd, F_SETFL, O_NONBLOCK);

  // A pidfd becomes readable the moment the child exits, so the wall time is not rounded up
  // to the next poll timeout once its pipes are closed (that rounding, up to 50 ms, swamped
  // the differences between configurations of short runs).
  int pid_fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));

  CappedOutput out(spec.output_cap), err(spec.output_cap);
  TreeSampler sampler(pid, pid);
  const bool sampling = spec.sample_interval_s > 0;
  const int interval_ms = sampling ? std::max(1, int(spec.sample_interval_s * 1000)) : 50;
  auto next_sample = Clock::now();
  int sweep_no = 0;
  bool term_sent = false;
  Clock::time_point kill_at{};
  int status = 0;
  rusage ru{};
  bool reaped = false;

  while (!reaped) {
    // Has the child ended? Peek without reaping, so that its threads can be read once more.
    siginfo_t info{};
    info.si_pid = 0;
    if (::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      if (sampling) sampler.sweep(false, false);
      ::wait4(pid, &status, 0, &ru);
      reaped = true;
      break;
    }
    double elapsed = seconds_since(t0);
    if (spec.timeout_s > 0 && elapsed > spec.timeout_s && !term_sent) {
      r.timed_out = true;
      term_sent = true;
      ::kill(-pid, SIGTERM);
      kill_at = Clock::now() + std::chrono::milliseconds(500);
    }
    if (term_sent && Clock::now() >= kill_at) ::kill(-pid, SIGKILL);

    if (sampling && Clock::now() >= next_sample) {
      // Rescan for new processes on the first sweeps and then every tenth: a full /proc
      // walk costs far more than reading the known tasks.
      bool rescan = sweep_no < 3 || sweep_no % 10 == 0;
      bool maps = sweep_no == 2 || sweep_no % 25 == 0;
      sampler.sweep(rescan, maps);
      ++sweep_no;
      next_sample += std::chrono::milliseconds(interval_ms);
      if (next_sample < Clock::now()) next_sample = Clock::now() + std::chrono::milliseconds(interval_ms);
    }
    int wait_ms = interval_ms;
    if (sampling) {
      auto until = std::chrono::duration_cast<std::chrono::milliseconds>(next_sample - Clock::now()).count();
      wait_ms = std::clamp<int>(static_cast<int>(until), 1, interval_ms);
    }
    pollfd fds[3];
    int n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (pid_fd >= 0) fds[n++] = {pid_fd, POLLIN, 0};
    if (n == 0) {
      ::usleep(static_cast<useconds_t>(std::min(wait_ms, 2)) * 1000);
    } else if (::poll(fds, n, wait_ms) > 0) {
      if (out_fd >= 0) drain(out_fd, out);
      if (err_fd >= 0) drain(err_fd, err);
    }
  }
  r.wall_s = seconds_since(t0);
  if (pid_fd >= 0) ::close(pid_fd);

  // Anything the child left behind in its group goes too, so nothing holds our pipes.
  ::kill(-pid, SIGKILL);
  for (int fd : {out_fd, err_fd}) {
    if (fd < 0) continue;
    int f = fd;
    auto deadline = Clock::now() + std::chrono::milliseconds(200);
    while (f >= 0 && Clock::now() < deadline) {
      pollfd p{f, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      drain(f, fd == out_fd ? out : err);
    }
    if (f >= 0) ::close(f);
  }
  r.stdout_text = out.text(r.stdout_dropped);
  r.stderr_text = err.text(r.stderr_dropped);
  last_dropped = {r.stdout_dropped, r.stderr_dropped};
  r.sampler_cpu_s = thread_cpu_s() - cpu0;

  read_counters(counters, r);
  r.user_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6;
  r.sys_s = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
  r.voluntary_switches = ru.ru_nvcsw;
  r.involuntary_switches = ru.ru_nivcsw;
  r.max_rss_kb = ru.ru_maxrss;
  r.minor_faults = ru.ru_minflt;
  r.major_faults = ru.ru_majflt;

  r.samples = sampler.samples();
  r.max_threads = sampler.max_threads();
  r.mean_threads = sampler.mean_threads();
  // Threads confined to the same CPU set narrower than the child started with (it inherits
  // this process' mask), per CPU of that set: 2 or more is threads sharing pinned CPUs.
  std::map<std::string, std::pair<int, int>> narrow;  // mask -> {its CPUs, threads that ran}
  const int full_cpus = online_cpus();
  for (auto& [tid, t] : sampler.threads()) {
    r.threads.push_back(t);
    r.runq_wait_s += t.runq_wait_s;
    if (t.cpus_allowed <= 0 || t.cpus_allowed >= full_cpus || t.cpu_s <= 0) continue;
    if (t.tid == pid) r.main_pinned = true;
    auto& n = narrow[t.cpu_mask];
    n.first = t.cpus_allowed;
    ++n.second;
  }
  for (auto& [mask, n] : narrow) r.pinned_sharing = std::max(r.pinned_sharing, double(n.second) / n.first);
  r.libraries = sampler.libraries();
  r.executables = sampler.executables();
  r.max_processes = sampler.max_processes();
  r.library_use = sampler.library_use();

  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.term_signal = WTERMSIG(status);
  }
  if (r.timed_out)
    r.failure = "timeout after " + format_seconds(spec.timeout_s) + " s";
  else if (r.term_signal)
    r.failure = signal_name(r.term_signal);
  else if (r.exit_code != 0)
    r.failure = "exit " + std::to_string(r.exit_code);
  return r;
}

std::vector<Placeholder> placeholders(const std::vector<std::string>& argv) {
  std::vector<Placeholder> out;
  for (size_t i = 0; i < argv.size(); ++i)
    for (auto& [span, p] : scan_placeholders(argv[i])) {
      out.push_back(p);
      out.back().arg = i;
    }
  return out;
}

std::vector<std::string> substitute_placeholders(const std::vector<std::string>& argv,
                                                 const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (auto& a : argv) {
    auto found = scan_placeholders(a);
    if (found.empty()) {
      out.push_back(a);
      continue;
    }
    std::string s;
    size_t at = 0;
    for (auto& [span, p] : found) {
      s += a.substr(at, span.first - at);
      auto it = env.find(p.name);
      if (it != env.end() && !it->second.empty()) s += it->second;
      else if (p.has_fallback) s += p.fallback;
      else s += a.substr(span.first, span.second - span.first);
      at = span.second;
    }
    out.push_back(s + a.substr(at));
  }
  return out;
}

double machine_busy_seconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  long long user = 0, nice = 0, sys = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  in >> cpu >> user >> nice >> sys >> idle >> iowait >> irq >> softirq >> steal;
  return static_cast<double>(user + nice + sys + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace syspilot::tuner
