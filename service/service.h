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

// What a client may take of the service. Every field is a flag of `syspilot serve`; the
// security section of docs/service.md lists them with what each refuses.
struct Limits {
  size_t max_body_bytes = 1 << 20;   // larger request bodies get 413 before they are read
  size_t max_header_bytes = 8 << 10; // all request header lines together; more gets 431
  size_t max_headers = 64;           // more header fields get 431
  size_t max_uri_bytes = 4096;       // a longer request line gets 414
  size_t max_json_depth = 64;        // deeper nesting of arrays and objects in a body gets 400
  size_t max_json_values = 10000;    // more values (arrays, objects, commas) in a body gets 400
  double header_timeout_s = 5;       // first byte (or TLS hello) to the end of the head; else 408
  double idle_timeout_s = 5;         // keep-alive: waiting for the next request's first byte
  double body_timeout_s = 30;        // end of the head to the end of the body
  double write_timeout_s = 30;       // a response the client does not read
  size_t max_connections = 1024;     // open at once; more get 503 and are closed
  size_t max_per_client = 64;        // open at once from one address; more get 503 and are closed
  // Addresses the per-client cap does not apply to: reverse proxies on this host, through
  // which every client arrives from one address.
  std::vector<std::string> uncapped_clients = {"127.0.0.1", "::1"};
  size_t max_requests = 10000;       // on one keep-alive connection
};

struct ServiceOptions {
  std::string db_path;                 // the SQLite store (contracts, jobs, tokens)
  std::string host = "127.0.0.1";
  int port = 8080;                     // 0: any free port (see Service::port())
  std::string tls_cert, tls_key;       // both set: HTTPS only
  bool public_read = false;            // reads without a token
  Limits limits;
  std::vector<std::string> source_roots;  // "dir"/"tarball" paths and local git repos must lie inside
  // Internal addresses that git, tarball and LLM URLs may reach (CIDR, address or host name);
  // loopback, private and link-local ranges are refused otherwise (docs/service.md, Security).
  std::vector<std::string> allow_outbound;
  std::string work_dir;                // fetched sources and apt state; default: <db dir>/syspilot-work
  int workers = 2;                     // jobs running at once
  int queue_capacity = 16;             // jobs waiting; beyond it POST gets 429
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
  // Serves raw request bytes as one connection would be served, without a socket, and returns
  // what would have been sent back. Needs no start(); for the HTTP fuzzer and its seeds.
  std::string serve_bytes(const std::string& request);
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
