// Job queue implementation. The database row is the truth; the in-memory deque only orders
// queued ids. Every state change is one UPDATE, so a kill -9 at any moment leaves each job
// either queued, running (recovered at the next start) or finished.
#include "service/jobs.h"

#include <openssl/rand.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "service/json_forms.h"
#include "service/schema.h"
#include "store/store.h"

using nlohmann::json;

namespace syspilot::service {

namespace {
const char* kNow = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

std::string new_job_id() {
  unsigned char raw[9];
  RAND_bytes(raw, sizeof raw);
  static const char* digits = "0123456789abcdef";
  std::string id = "job_";
  for (unsigned char c : raw) {
    id += digits[c >> 4];
    id += digits[c & 15];
  }
  return id;
}

json parse_or(const std::string& text, json fallback) {
  auto j = json::parse(text, nullptr, false);
  return j.is_discarded() ? fallback : j;
}

json row_to_json(const store::Stmt& s) {
  json j = {{"id", s.column_text(0)},         {"kind", s.column_text(1)},
            {"library", s.column_text(2)},    {"version", s.column_text(3)},
            {"state", s.column_text(4)},      {"stage", s.column_text(5)},
            {"progress", s.column_double(6)}, {"log", parse_or(s.column_text(7), json::array())},
            {"diagnostics", parse_or(s.column_text(8), json::array())},
            {"attempts", s.column_int(10)},   {"created_at", s.column_text(11)}};
  j["result"] = s.is_null(9) ? json(nullptr) : parse_or(s.column_text(9), json(nullptr));
  j["started_at"] = s.is_null(12) ? json(nullptr) : json(s.column_text(12));
  j["finished_at"] = s.is_null(13) ? json(nullptr) : json(s.column_text(13));
  j["request"] = parse_or(s.column_text(14), json::object());
  return j;
}

const char* kSelect =
    "SELECT id, kind, library, version, state, stage, progress, log, diagnostics, result, attempts, "
    "created_at, started_at, finished_at, request FROM service_jobs";
}  // namespace

struct JobQueue::Running {
  std::atomic<bool> cancel{false};
  std::atomic<bool> shutdown{false};
};

namespace {
class Context : public JobContext {
 public:
  Context(store::Store& st, std::string id, json request, json secrets, std::shared_ptr<std::atomic<bool>> c1,
          std::shared_ptr<std::atomic<bool>> c2)
      : st_(st), id_(std::move(id)), request_(std::move(request)), secrets_(std::move(secrets)),
        cancel_(std::move(c1)), shutdown_(std::move(c2)) {}
  const std::string& id() const override { return id_; }
  const json& request() const override { return request_; }
  const json& secrets() const override { return secrets_; }
  bool cancelled() const override { return *cancel_ || *shutdown_; }
  void progress(const std::string& stage, double fraction, const std::string& line) override {
    if (!line.empty()) {
      log_.push_back(line);
      if (log_.size() > 200) log_.erase(log_.begin());
    }
    st_.db()
        .prepare("UPDATE service_jobs SET stage = ?2, progress = ?3, log = ?4 WHERE id = ?1")
        .bind_all(id_, stage, fraction, json(log_).dump(-1, ' ', false, json::error_handler_t::replace))
        .run();
  }
  store::Store& store() override { return st_; }
  const std::vector<std::string>& log() const { return log_; }

 private:
  store::Store& st_;
  std::string id_;
  json request_, secrets_;
  std::shared_ptr<std::atomic<bool>> cancel_, shutdown_;
  std::vector<std::string> log_;
};
}  // namespace

JobQueue::JobQueue(Options opts, std::map<std::string, JobRunner> runners)
    : opts_(std::move(opts)), runners_(std::move(runners)) {}

JobQueue::~JobQueue() { shutdown(0); }

void JobQueue::start() {
  store::Store& st = thread_store(opts_.db_path);
  {
    store::Transaction tx(st.db());
    // Jobs that were running when the previous process died: resume, unless they keep dying.
    st.db()
        .prepare(std::string("UPDATE service_jobs SET state = 'failed', stage = 'interrupted', finished_at = ") +
                 kNow +
                 ", diagnostics = json_insert(diagnostics, '$[#]', json_object('severity', 'error', 'message', "
                 "'the job was interrupted ' || attempts || ' times (service restarts); giving up', 'code', "
                 "'interrupted', 'hint', 'submit it again'))"
                 " WHERE state = 'running' AND attempts >= ?1")
        .bind_all(opts_.max_attempts)
        .run();
    st.db()
        .prepare("UPDATE service_jobs SET state = 'queued', stage = 'resumed after restart', progress = 0 "
                 "WHERE state = 'running'")
        .run();
    tx.commit();
  }
  auto s = st.db().prepare("SELECT id FROM service_jobs WHERE state = 'queued' ORDER BY created_at, rowid");
  std::lock_guard<std::mutex> g(mu_);
  while (s.step()) queue_.push_back(s.column_text(0));
  started_ = true;
  for (int i = 0; i < std::max(1, opts_.workers); ++i) threads_.emplace_back([this, i] { worker_loop(i); });
}

JobQueue::Submit JobQueue::submit(const std::string& kind, const std::string& library, const std::string& version,
                                  const json& request, const json& secrets, std::string& id) {
  if (!runners_.count(kind)) return Submit::UnknownKind;
  std::unique_lock<std::mutex> g(mu_);
  if (stopping_) return Submit::Stopping;
  if (static_cast<int>(queue_.size()) >= opts_.capacity) return Submit::Full;
  id = new_job_id();
  // Persist first: a job the caller was told about survives a crash right after.
  thread_store(opts_.db_path)
      .db()
      .prepare("INSERT INTO service_jobs(id, kind, library, version, request, state) VALUES (?1, ?2, ?3, ?4, ?5, "
               "'queued')")
      .bind_all(id, kind, library, version, request.dump(-1, ' ', false, json::error_handler_t::replace))
      .run();
  if (!secrets.is_null() && !secrets.empty()) secrets_[id] = secrets;
  queue_.push_back(id);
  g.unlock();
  cv_.notify_one();
  return Submit::Accepted;
}

bool JobQueue::get(const std::string& id, json& out) const {
  auto s = thread_store(opts_.db_path).db().prepare(std::string(kSelect) + " WHERE id = ?1");
  s.bind_all(id);
  if (!s.step()) return false;
  out = row_to_json(s);
  return true;
}

json JobQueue::list(int limit) const {
  auto s = thread_store(opts_.db_path).db().prepare(std::string(kSelect) + " ORDER BY created_at DESC LIMIT ?1");
  s.bind_all(limit);
  json a = json::array();
  while (s.step()) {
    json j = row_to_json(s);
    j.erase("log");
    a.push_back(std::move(j));
  }
  return a;
}

JobQueue::Cancel JobQueue::cancel(const std::string& id) {
  std::lock_guard<std::mutex> g(mu_);
  auto& db = thread_store(opts_.db_path).db();
  // A queued job is cancelled only by an UPDATE that finds it still queued: a worker claims
  // a job with the same kind of UPDATE (run_one), so exactly one of the two wins, and a job
  // answered "cancelled" never runs.
  if (db.prepare(std::string("UPDATE service_jobs SET state = 'cancelled', stage = 'cancelled', finished_at = ") +
                 kNow + " WHERE id = ?1 AND state = 'queued'")
          .bind_all(id)
          .run() > 0) {
    for (auto it = queue_.begin(); it != queue_.end(); ++it)
      if (*it == id) {
        queue_.erase(it);
        break;
      }
    secrets_.erase(id);
    return Cancel::Cancelled;
  }
  auto state = db.query_text("SELECT state FROM service_jobs WHERE id = ?1", id);
  if (!state) return Cancel::NotFound;
  if (*state == "running") {
    // Claimed by a worker, which registered it in running_ before claiming it.
    auto it = running_.find(id);
    if (it != running_.end()) it->second->cancel = true;
    return Cancel::Requested;
  }
  return Cancel::AlreadyFinished;
}

void JobQueue::worker_loop(int) {
  store::Store& st = thread_store(opts_.db_path);
  for (;;) {
    std::string id;
    {
      std::unique_lock<std::mutex> g(mu_);
      cv_.wait(g, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      id = queue_.front();
      queue_.pop_front();
    }
    run_one(st, id);
  }
}

void JobQueue::run_one(store::Store& st, const std::string& id) {
  auto running = std::make_shared<Running>();
  json secrets;
  {
    std::lock_guard<std::mutex> g(mu_);
    running_[id] = running;
    if (auto it = secrets_.find(id); it != secrets_.end()) secrets = it->second;
  }
  busy_++;
  // Claimed only while still queued: a DELETE that cancelled it first wins (see cancel()).
  bool claimed = st.db()
                     .prepare(std::string("UPDATE service_jobs SET state = 'running', attempts = attempts + 1, "
                                          "started_at = ") +
                              kNow + ", stage = 'starting' WHERE id = ?1 AND state = 'queued'")
                     .bind_all(id)
                     .run() > 0;
  if (claimed) {
    std::string kind;
    json request;
    {
      auto s = st.db().prepare("SELECT kind, request FROM service_jobs WHERE id = ?1");
      s.bind_all(id);
      if (s.step()) {
        kind = s.column_text(0);
        request = parse_or(s.column_text(1), json::object());
      }
    }
    // Shared flags that the context reads; the Running entry is what cancel() flips.
    auto cancel_flag = std::shared_ptr<std::atomic<bool>>(running, &running->cancel);
    auto shutdown_flag = std::shared_ptr<std::atomic<bool>>(running, &running->shutdown);
    Context ctx(st, id, request, secrets, cancel_flag, shutdown_flag);
    Diagnostics diags;
    json result;
    std::string outcome;
    try {
      auto it = runners_.find(kind);
      if (it == runners_.end()) {
        diags.error(SourceLoc{"job", 0, 0}, "no runner for job kind '" + kind + "'", "unknown-kind");
      } else {
        result = it->second(ctx, diags);
      }
      outcome = diags.has_errors() ? "failed" : "succeeded";
    } catch (const JobCancelled&) {
      outcome = "cancelled";
    } catch (const std::exception& e) {
      diags.error(SourceLoc{"job", 0, 0}, e.what(), "job-failed");
      outcome = "failed";
    }
    if (outcome == "failed" && ctx.cancelled()) outcome = "cancelled";
    if (outcome == "cancelled" && running->shutdown && !running->cancel) {
      // Interrupted by a graceful shutdown: resume at the next start.
      st.db()
          .prepare("UPDATE service_jobs SET state = 'queued', stage = 'interrupted by shutdown; resumes at next "
                   "start', progress = 0, attempts = attempts - 1 WHERE id = ?1")
          .bind_all(id)
          .run();
    } else {
      st.db()
          .prepare(std::string("UPDATE service_jobs SET state = ?2, stage = ?2, progress = CASE WHEN ?2 = "
                               "'succeeded' THEN 1 ELSE progress END, diagnostics = ?3, result = ?4, "
                               "finished_at = ") +
                   kNow + " WHERE id = ?1")
          .bind_all(id, outcome, to_json(diags).dump(-1, ' ', false, json::error_handler_t::replace),
                    result.is_null() ? std::string("null") : result.dump(-1, ' ', false, json::error_handler_t::replace))
          .run();
      if (opts_.on_finished) opts_.on_finished(kind, outcome);
    }
  }
  busy_--;
  std::lock_guard<std::mutex> g(mu_);
  running_.erase(id);
  secrets_.erase(id);
}

void JobQueue::shutdown(double grace_s) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!started_ || threads_.empty()) {
      stopping_ = true;
      return;
    }
    stopping_ = true;
  }
  cv_.notify_all();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  while (busy_.load() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [id, r] : running_) r->shutdown = true;
  }
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

JobCounts JobQueue::counts() const {
  JobCounts c;
  auto s = thread_store(opts_.db_path).db().prepare("SELECT state, count(*) FROM service_jobs GROUP BY state");
  while (s.step()) {
    std::string st = s.column_text(0);
    long long n = s.column_int(1);
    if (st == "queued") c.queued = n;
    else if (st == "running") c.running = n;
    else if (st == "succeeded") c.succeeded = n;
    else if (st == "failed") c.failed = n;
    else if (st == "cancelled") c.cancelled = n;
  }
  return c;
}

bool JobQueue::pending(const std::string& kind, const std::string& library) const {
  auto s = thread_store(opts_.db_path)
               .db()
               .prepare("SELECT 1 FROM service_jobs WHERE kind = ?1 AND library = ?2 AND state IN ('queued', 'running')");
  s.bind(1, kind).bind(2, library);
  return s.step();
}

int JobQueue::queue_depth() const {
  std::lock_guard<std::mutex> g(mu_);
  return static_cast<int>(queue_.size());
}

}  // namespace syspilot::service
