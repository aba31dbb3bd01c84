// A loopback OpenAI-compatible server for tests: scripted replies per request (good
// drafts, malformed answers, 429/500, truncated bodies, hangs), HTTP or HTTPS, and a
// record of every request so tests can assert prompts and rounds.
#pragma once
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace syspilot::testsupport {

struct ScriptedReply {
  int status = 200;
  std::string content;        // wrapped as a chat completion (choices[0].message.content)
  std::string raw_body;       // when non-empty, sent as-is instead of a completion
  std::map<std::string, std::string> headers;  // e.g. {"Retry-After", "1"}
  double delay_s = 0;         // sleep before answering (past the client's timeout: a hang)
  bool truncate = false;      // announce the full length, send half, then close
  int prompt_tokens = 100, completion_tokens = 50;

  static ScriptedReply answer(std::string content);
  static ScriptedReply error(int status, std::string body = "{\"error\":{\"message\":\"scripted\"}}");
};

struct RecordedRequest {
  std::string method, path, body;
  std::string authorization;  // the Authorization header as received
  std::string model;
  std::string system, user;   // the messages, when the body parses
  int max_tokens = 0;
};

struct TlsFiles {
  std::string cert, key;  // PEM paths
};

// Writes a self-signed certificate for 127.0.0.1 (subjectAltName=IP:127.0.0.1) into dir.
TlsFiles make_self_signed_cert(const std::string& dir);

class FakeLlmServer {
 public:
  FakeLlmServer();                         // HTTP
  explicit FakeLlmServer(const TlsFiles&);  // HTTPS
  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  // Replies in order, one per request; after the script, `fallback` (default: HTTP 500).
  void script(std::vector<ScriptedReply> replies);
  void fallback(ScriptedReply r);

  std::string url() const;  // "http://127.0.0.1:PORT" or "https://..."
  int port() const { return port_; }
  std::vector<RecordedRequest> requests() const;
  size_t request_count() const;

 private:
  struct Impl;
  void start();
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  bool tls_ = false;
};

}  // namespace syspilot::testsupport
