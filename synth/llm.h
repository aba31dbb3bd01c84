// The OpenAI-compatible chat client synthesis drafts with: HTTP and HTTPS, timeouts,
// retries with backoff and jitter, Retry-After, usage accounting. Internal to synth/.
#pragma once
#include <functional>
#include <string>

#include "synth/synth.h"

namespace syspilot::synth {

struct ChatReply {
  std::string content;        // choices[0].message.content
  std::string finish_reason;  // "stop", "length", ... (empty when absent)
  int prompt_tokens = 0;      // from the reply's usage (0 when absent)
  int completion_tokens = 0;
  int attempts = 0;           // requests sent, retries included
  double latency_s = 0;       // of the successful request
};

class LlmClient {
 public:
  // Throws LlmError for a URL that cannot be used (bad scheme, missing or malformed host,
  // credentials in the URL, longer than 4096 characters, no model).
  explicit LlmClient(LlmConfig cfg, std::function<bool()> cancelled = {},
                     std::function<void(const std::string&)> progress = {});

  // One chat completion; retries 429, 5xx, connection errors and malformed replies up to
  // max_retries times. Redirects are not followed (a 3xx is an error): a redirect could
  // lead past the outbound policy. Throws LlmError (no API key in the message) or Cancelled.
  ChatReply chat(const std::string& system, const std::string& user);

  // The exact request body chat() sends; its SHA-256 keys the response cache.
  std::string request_body(const std::string& system, const std::string& user) const;
  const LlmConfig& config() const { return cfg_; }

  // "http://host:port" and the path prefix ("/v1/chat/completions").
  const std::string& origin() const { return origin_; }
  const std::string& path() const { return path_; }

 private:
  void wait(double seconds);  // sleeps, polling cancellation
  std::string redact(std::string s) const;

  LlmConfig cfg_;
  std::function<bool()> cancelled_;
  std::function<void(const std::string&)> progress_;
  std::string origin_, path_;
  std::string host_;  // without brackets; the key of the pinned address
  int port_ = 0;
  bool https_ = false;
};

}  // namespace syspilot::synth
