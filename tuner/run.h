// Running an application once as a measured trial: a fresh process in its own process
// group, a given environment, a timeout that kills the whole group, and the OS signals
// (run-queue wait, context switches, threads, RSS, faults, perf counters) collected meanwhile.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace syspilot::tuner {

struct RunSpec {
  std::vector<std::string> argv;                 // argv[0] is searched in PATH when it has no '/'
  std::map<std::string, std::string> env_set;    // applied after inheritance and env_unset
  std::vector<std::string> env_unset;
  bool inherit_env = true;
  double timeout_s = 60;                         // <= 0: no timeout
  std::string cwd;                               // empty: the caller's
  double sample_interval_s = 0.02;               // /proc sampling period; <= 0: no sampling
  bool perf = true;                              // perf_event_open software counters
  size_t output_cap = 1 << 20;                   // bytes kept of stdout and of stderr each: the
                                                 // first half of it and the last, when longer
  bool placeholders = true;                      // replace {NAME} in argv (substitute_placeholders);
                                                 // false for a command that passes them on (syspilot itself)
};

// A shared object as the process tree used it: how many processes mapped it, how many of
// them ran at once, and their threads at that moment (a batch script running `xargs -P 2`
// over an OpenMP program: libgomp in 2 processes at once, 2 x ncpus threads).
struct LibraryUse {
  std::string path;         // as mapped (/proc/PID/maps)
  int processes = 0;        // distinct processes of the tree seen with it mapped
  int max_concurrent = 0;   // most of them alive at once, as sampled
  int max_threads = 0;      // most threads alive at once in processes that had it mapped
  bool in_root = false;     // the started process itself mapped it (not only its children)
  std::vector<int> pids;    // the processes seen with it (ascending): two objects no process had
                            // both of never called one another
  bool executable = false;  // the program a process of the tree ran (/proc/PID/exe), not a
                            // shared object: a library linked into it statically is found there
};

// One thread's CPU use as last seen by the sampler.
struct ThreadSample {
  int pid = 0, tid = 0;
  std::string comm;
  double cpu_s = 0;         // user+sys (schedstat field 1)
  double runq_wait_s = 0;   // time runnable but waiting for a CPU (schedstat field 2)
  int cpus_allowed = 0;     // CPUs in its affinity mask (0: not read)
  std::string cpu_mask;     // the mask itself (raw cpu_set_t bytes), to group threads by it
};

struct RunResult {
  int exit_code = -1;       // -1 when killed by a signal or never started
  int term_signal = 0;      // the signal that ended the child, 0 if it exited
  bool timed_out = false;
  bool started = false;
  std::string failure;      // "" or why the run failed (exit 3, SIGSEGV, timeout after 5 s, exec failed: ...)
  double wall_s = 0, user_s = 0, sys_s = 0;
  long voluntary_switches = 0, involuntary_switches = 0;
  long max_rss_kb = 0, minor_faults = 0, major_faults = 0;
  int max_threads = 0;      // most threads alive at once across the process tree
  double mean_threads = 0;  // averaged over samples
  double runq_wait_s = 0;   // schedstat run-queue wait summed over every thread ever seen
  int samples = 0;          // how many /proc sweeps were taken
  double pinned_sharing = 0; // most threads that ran confined to one narrow CPU set, per CPU
                             // of the set (0: none narrower than the child started with)
  bool main_pinned = false;  // the child's initial thread ran confined to a narrower CPU set
                             // than it started with: every thread it starts inherits that set
  std::vector<ThreadSample> threads;             // every thread seen, last values
  std::vector<std::string> libraries;            // shared objects mapped by the tree (dlopen included)
  int max_processes = 0;                         // most processes of the tree alive at once
  std::vector<LibraryUse> library_use;           // per shared object: processes that mapped it;
                                                 // and per program the tree's processes ran
  std::vector<std::string> executables;          // programs the tree's processes ran (/proc/PID/exe)
  std::map<std::string, double> perf;            // perf_event_open counters that worked
  std::vector<std::string> perf_notes;           // "cycles: not supported on this kernel/VM"
  std::string stdout_text, stderr_text;          // capped at RunSpec::output_cap: an output longer
                                                 // keeps its first and last lines within it, and
                                                 // a line "[syspilot: N bytes of output dropped
                                                 // here]" stands for the lines between
  size_t stdout_dropped = 0, stderr_dropped = 0; // the N of each (0: kept whole)
  double sampler_cpu_s = 0;  // CPU the sampler itself spent (profiling overhead)

  bool ok() const { return started && !timed_out && term_signal == 0 && exit_code == 0; }
};

// Runs argv as described. Never throws for a failing child; `failure` says what happened.
// Placeholders in the arguments are replaced first (substitute_placeholders, with the child's
// environment) unless RunSpec::placeholders is false.
RunResult run(const RunSpec& spec);

// What the last run() on the calling thread dropped of its output (RunResult::stdout_dropped and
// stderr_dropped), for a caller that gets only what was read from it: the live objective's
// metric that "matched no number" in an output cut short.
struct OutputDropped {
  size_t stdout_bytes = 0, stderr_bytes = 0;
};
OutputDropped last_output_dropped();
// `failure` as it should read after the last run() on this thread: a metric that matched no
// number ("no metric: ...") in an output that was cut says how much was dropped, "no metric: /x/
// matched no number in the output (the output was cut: 2097152 bytes in the middle of stdout
// were not kept)"; any other failure, or an output kept whole, is returned as it is.
std::string note_dropped_output(const std::string& failure);

// `{NAME}` or `{NAME:-DEFAULT}` inside an argument (NAME: capitals, digits and '_', not
// starting with a digit; not preceded by '$', which is the shell's own `${NAME}`): a control
// given on the command line, `xargs -P {NPROC:-2}`. It is replaced by NAME's value in the
// child's environment (a trial's control, --env, or inherited), else by DEFAULT; with
// neither, it stays as written.
struct Placeholder {
  std::string name, fallback;  // fallback: DEFAULT ("" when none)
  bool has_fallback = false;
  size_t arg = 0;              // index in argv
};
std::vector<Placeholder> placeholders(const std::vector<std::string>& argv);
std::vector<std::string> substitute_placeholders(const std::vector<std::string>& argv,
                                                 const std::map<std::string, std::string>& env);

// Where execvp would find `name` for a child with environment `env`: `name` itself when it
// holds a '/', else the first executable regular file of that name in env's PATH (this
// process's PATH when env has none, /usr/bin:/bin without either; an empty entry is the
// current folder). "" when there is none.
// `s` as one printable line: control characters and bytes that are no UTF-8 as \xNN, line
// breaks as spaces. For text that quotes an application's output: a terminal's escape
// sequences in a failure reason do nothing, and the JSON that stores it stays valid.
std::string printable(const std::string& s);
std::string find_on_path(const std::string& name, const std::map<std::string, std::string>& env = {});

// When process `pid` started, in clock ticks after boot (/proc/PID/stat field 22): with the pid,
// it names one process, as a reused pid starts later. 0 when there is no such process or it has
// exited (a zombie).
std::uint64_t process_start_ticks(int pid);

// Number of CPUs this process may run on (sched_getaffinity), at least 1.
int online_cpus();

// CPU seconds the whole machine has spent busy since boot (/proc/stat; steal counts: another
// guest held the host CPU meanwhile). The difference over a run, less the run's own CPU time,
// per wall second, is the outside load it ran beside.
double machine_busy_seconds();

}  // namespace syspilot::tuner
