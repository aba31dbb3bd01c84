// The connection layer of `syspilot serve`: admits, times and sizes every connection before
// cpp-httplib parses a request, so that no client can hold a thread, a buffer or the process.
#pragma once
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "service/service.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace syspilot::service {

using ConnectionLimits = Limits;

// A byte stream under a connection: a TCP socket, a TLS session over one, or memory (fuzzing).
class Transport {
 public:
  virtual ~Transport() = default;
  // Up to n bytes, waiting until `deadline`: >0 bytes read, 0 end of stream, -1 error or timeout.
  virtual long recv_some(char* buf, size_t n, std::chrono::steady_clock::time_point deadline) = 0;
  // All n bytes before `deadline`, or false.
  virtual bool send_all(const char* buf, size_t n, std::chrono::steady_clock::time_point deadline) = 0;
  // Whether bytes are already buffered (TLS) so that waiting on the socket would be wrong.
  virtual bool pending() const { return false; }
  virtual std::string peer() const = 0;
  virtual int peer_port() const { return 0; }
};

// A connection held in memory: reads `input` (then end of stream), collects what is sent.
class MemoryTransport : public Transport {
 public:
  explicit MemoryTransport(std::string input) : in_(std::move(input)) {}
  long recv_some(char* buf, size_t n, std::chrono::steady_clock::time_point) override;
  bool send_all(const char* buf, size_t n, std::chrono::steady_clock::time_point) override;
  std::string peer() const override { return "192.0.2.1"; }  // TEST-NET-1: never a real peer
  const std::string& output() const { return out_; }

 private:
  std::string in_, out_;
  size_t pos_ = 0;
};

// An httplib server whose connections are served by our loop (admission, deadlines, size
// limits, TLS) instead of httplib's, which waits on each read without an overall deadline
// and lets one slow client hold a worker thread for as long as it trickles bytes.
class GuardedServer : public httplib::Server {
 public:
  // tls: a context to serve HTTPS with (owned by the caller), or null for plain HTTP.
  GuardedServer(ConnectionLimits limits, SSL_CTX* tls);
  ~GuardedServer() override;

  // Serves one connection over `t` exactly as a socket would be served (used by the fuzzer).
  void serve(Transport& t);
  // Wakes every connection that waits, so that stop() does not wait for their timeouts.
  void interrupt();
  // Raises the listen backlog (httplib's compiled default is 5) once bound.
  void widen_backlog(int backlog);

  size_t open_connections() const { return open_.load(); }
  // Called for each connection refused by this layer (status 408, 414, 431 or 503).
  std::function<void(int status, const std::string& peer)> on_refused;
  // Set by a handler that answered without reading the request's body: the connection closes.
  static void close_after_response();
  // Whether the body of the request being answered ended before its Content-Length (the client
  // closed, or the body deadline passed: body_timed_out()). Such a connection closes after the
  // response: the rest of the body, arriving later, must never be read as a request.
  static bool body_cut_short();
  static bool body_timed_out();

 private:
  bool process_and_close_socket(socket_t sock) override;
  bool admit(const std::string& peer, std::string& why);
  void release(const std::string& peer);
  void refuse(Transport& t, int status, const std::string& why);

  ConnectionLimits limits_;
  SSL_CTX* tls_;
  int wake_[2] = {-1, -1};  // a pipe: readable once interrupt() was called
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> open_{0};
  std::mutex mu_;
  std::map<std::string, size_t> per_client_;
};

// A task queue with a thread per running connection, reused when idle and created on demand up
// to `max_threads`: a connection that waits costs a parked thread, never another client's turn.
class ElasticPool : public httplib::TaskQueue {
 public:
  explicit ElasticPool(size_t max_threads);
  ~ElasticPool() override;
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

 private:
  struct State;
  std::shared_ptr<State> s_;
};

// Loads a PEM certificate chain and key into a server context (TLS 1.2 and later).
// Returns null with `error` set when either cannot be used.
SSL_CTX* make_tls_context(const std::string& cert, const std::string& key, std::string& error);
void free_tls_context(SSL_CTX* ctx);

}  // namespace syspilot::service
