// The job queue: jobs persisted in the store's SQLite file, a bounded worker pool, a bounded
// queue (back-pressure), cancellation, and recovery after a restart or a kill -9.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <thread>
#include <vector>

#include "lpcl/diagnostics.h"

namespace syspilot::store { class Store; }

namespace syspilot::service {

// What a running job sees: its request, cancellation, and a way to report progress.
class JobContext {
 public:
  virtual ~JobContext() = default;
  virtual const std::string& id() const = 0;
  virtual const nlohmann::json& request() const = 0;
  // Secrets given with the request (an LLM API key): kept in memory only, never persisted.
  virtual const nlohmann::json& secrets() const = 0;
  virtual bool cancelled() const = 0;
  // stage: short label ("fetch", "extract", "synthesize"); fraction 0..1; line goes to the log.
  virtual void progress(const std::string& stage, double fraction, const std::string& line) = 0;
  virtual store::Store& store() = 0;  // this worker's own connection
};

// Thrown by a runner when it stops because JobContext::cancelled() turned true.
struct JobCancelled : std::runtime_error {
  JobCancelled() : std::runtime_error("job cancelled") {}
};

// Runs a job; returns its result object. Errors in `diags` (or an exception) fail the job.
using JobRunner = std::function<nlohmann::json(JobContext& ctx, Diagnostics& diags)>;

struct JobCounts {
  long long queued = 0, running = 0, succeeded = 0, failed = 0, cancelled = 0;
};

class JobQueue {
 public:
  struct Options {
    std::string db_path;
    int workers = 2;
    int capacity = 16;
    int max_attempts = 3;  // a job interrupted this many times (crashes) fails instead of resuming
    // Called once per job that reaches a final state (not for one put back by a shutdown).
    std::function<void(const std::string& kind, const std::string& state)> on_finished;
  };
  JobQueue(Options opts, std::map<std::string, JobRunner> runners);
  ~JobQueue();

  // Recovers persisted jobs (running ones were interrupted: back to queued, or failed after
  // max_attempts) and starts the workers.
  void start();

  enum class Submit { Accepted, Full, Stopping, UnknownKind };
  // `request` is persisted; `secrets` is not. Sets id on success.
  Submit submit(const std::string& kind, const std::string& library, const std::string& version,
                const nlohmann::json& request, const nlohmann::json& secrets, std::string& id);

  // The job as the API shows it; false when unknown.
  bool get(const std::string& id, nlohmann::json& out) const;
  nlohmann::json list(int limit) const;

  enum class Cancel { Cancelled, Requested, AlreadyFinished, NotFound };
  Cancel cancel(const std::string& id);

  // Stops intake; waits up to grace_s for running jobs, then cancels them back to queued.
  void shutdown(double grace_s);

  JobCounts counts() const;
  // A job of this kind for this library is queued or running (the scheduler skips it then).
  bool pending(const std::string& kind, const std::string& library) const;
  int queue_depth() const;
  int busy_workers() const { return busy_.load(); }

 private:
  struct Running;
  void worker_loop(int n);
  void run_one(store::Store& st, const std::string& id);

  Options opts_;
  std::map<std::string, JobRunner> runners_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::map<std::string, nlohmann::json> secrets_;
  std::map<std::string, std::shared_ptr<Running>> running_;
  std::vector<std::thread> threads_;
  std::atomic<int> busy_{0};
  bool stopping_ = false;
  bool started_ = false;
};

}  // namespace syspilot::service
