// Public interface of `syspilot serve`: an authenticated HTTP API over the contract store,
// a persisted job queue for synthesis and regeneration, and bearer-token administration.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lpcl/diagnostics.h"

namespace syspilot::service {

struct Limits {
  size_t max_body_bytes = 1 << 20;   // larger request bodies get 413
  size_t max_header_bytes = 8 << 10; // all request headers together; more gets 431
  size_t max_headers = 64;           // more header fields get 431
};

struct ServiceOptions {
  std::string db_path;                 // the SQLite store (contracts, jobs, tokens)
  std::string host = "127.0.0.1";
  int port = 8080;                     // 0: any free port (see Service::port())
  std::string tls_cert, tls_key;       // both set: HTTPS only
  bool public_read = false;            // reads without a token
  Limits limits;
  std::vector<std::string> source_roots;  // "dir"/"tarball" paths and local git repos must lie inside
  std::string work_dir;                // fetched sources and apt state; default: <db dir>/syspilot-work
  int workers = 2;                     // jobs running at once
  int queue_capacity = 16;             // jobs waiting; beyond it POST gets 429
  int http_threads = 64;               // connections served at once (keep-alive holds one each)
  std::string regen_config;            // tracked libraries (see docs/service.md); empty: no regeneration
  std::chrono::seconds regen_every{0}; // >0: run regeneration on this period
  double shutdown_grace_s = 10;        // SIGTERM: how long running jobs may finish
  bool access_log = false;             // one line per request on stderr (never the Authorization header)
};

class Service {
 public:
  // Opens the store (creating and migrating it). Errors: diagnostics, nullptr.
  static std::unique_ptr<Service> create(ServiceOptions opts, Diagnostics& diags);
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // Binds and starts serving; returns once the listener accepts connections.
  bool start(Diagnostics& diags);
  int port() const;
  const ServiceOptions& options() const;
  // Blocks until stop() (from another thread or a signal handler thread).
  void wait();
  // Graceful: stops accepting connections and jobs, lets running jobs finish within the
  // grace period, then cancels the rest back to "queued" so that the next start resumes them.
  void stop();

 private:
  struct Impl;
  explicit Service(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Runs a service until SIGTERM or SIGINT, then shuts it down gracefully. Returns the exit code.
int serve_until_signalled(ServiceOptions opts, std::function<void(int port)> on_ready = {});

// Bearer tokens: the plain token is shown once, only its SHA-256 is stored.
enum class Scope { Read, Write };
const char* to_string(Scope s);
std::optional<Scope> scope_from_string(const std::string& s);

struct TokenInfo {
  long long id = 0;
  std::string prefix;  // first characters, to recognise a token without storing it
  Scope scope = Scope::Read;
  std::string label;
  std::string created_at;
  std::string revoked_at;  // empty while valid
};

// Returns the new plain token ("spt_" + 48 hex digits). Throws store::StoreError on a bad store.
std::string create_token(const std::string& db_path, Scope scope, const std::string& label);
std::vector<TokenInfo> list_tokens(const std::string& db_path);
bool revoke_token(const std::string& db_path, long long id);

}  // namespace syspilot::service
