// OpenAI-compatible chat completions over cpp-httplib (OpenSSL for HTTPS), with retries,
// backoff, Retry-After and cancellation. The API key goes only into the Authorization header.
#include "synth/llm.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

namespace syspilot::synth {

std::optional<std::uint64_t> tcp_bytes_received(int fd);  // tcp_bytes.cpp

namespace {

using Clock = std::chrono::steady_clock;

std::string trim_slashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// A short excerpt of a reply body for error messages, printable ASCII only: a server's bytes
// reach the user's terminal, where escape sequences could rewrite the screen.
std::string excerpt(const std::string& body) {
  std::string e = body.substr(0, 160);
  for (char& c : e) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    else if (u < 0x20 || u >= 0x7f) c = '?';
  }
  return body.size() > 160 ? e + "..." : e;
}

// A token count from a reply's usage: a whole number from 0 to 1e9, else 0 (a server's
// accounting is not trusted to be sane).
// What a reply may take beyond max_reply_bytes on the wire: its status line and headers.
constexpr std::uint64_t kHeaderAllowance = 1u << 20;

int token_count(const nlohmann::json& usage, const char* key) {
  if (!usage.contains(key)) return 0;
  const auto& v = usage[key];
  if (!v.is_number()) return 0;
  double d = v.get<double>();
  return std::isfinite(d) && d >= 0 && d <= 1e9 ? static_cast<int>(d) : 0;
}

bool retryable_status(int s) { return s == 429 || s == 408 || (s >= 500 && s <= 599); }

// Retry-After in seconds (the HTTP-date form is rare for APIs and falls back to backoff).
double retry_after_s(const httplib::Response& r) {
  if (!r.has_header("Retry-After")) return -1;
  const std::string v = r.get_header_value("Retry-After");
  try {
    size_t used = 0;
    double s = std::stod(v, &used);
    if (used == v.size() && s >= 0) return s;
  } catch (...) {
  }
  return -1;
}

}  // namespace

LlmClient::LlmClient(LlmConfig cfg, std::function<bool()> cancelled,
                     std::function<void(const std::string&)> progress)
    : cfg_(std::move(cfg)), cancelled_(std::move(cancelled)), progress_(std::move(progress)) {
  // Checked before any parsing: cpp-httplib's URL regex recurses once per character.
  if (cfg_.url.size() > 4096)
    throw LlmError("LLM endpoint URL is " + std::to_string(cfg_.url.size()) + " characters long; the limit is 4096");
  std::string url = trim_slashes(cfg_.url);
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos)
    throw LlmError("LLM endpoint '" + url + "' has no scheme: write http://HOST[:PORT] or https://HOST[:PORT]");
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https")
    throw LlmError("LLM endpoint '" + url + "' uses scheme '" + scheme + "': only http and https are supported");
  const auto host_start = scheme_end + 3;
  const auto path_start = url.find('/', host_start);
  origin_ = url.substr(0, path_start);
  if (origin_.size() <= host_start)
    throw LlmError("LLM endpoint '" + url + "' has no host");
  https_ = scheme == "https";
  // Host and port by hand, so that the client is built from them (no URL regex) and the
  // address an outbound policy checked can be pinned to exactly this host.
  const std::string authority = origin_.substr(host_start);
  if (authority.find('@') != std::string::npos)
    throw LlmError("LLM endpoint URL must not contain credentials: pass the key with SYSPILOT_LLM_API_KEY "
                   "or the request's api_key");
  std::string port;
  if (authority[0] == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos || (close + 1 < authority.size() && authority[close + 1] != ':'))
      throw LlmError("LLM endpoint '" + url + "' has a malformed IPv6 host");
    host_ = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) port = authority.substr(close + 2);
  } else {
    const auto colon = authority.find(':');
    host_ = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  const bool host_ok = !host_.empty() && std::all_of(host_.begin(), host_.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == ':';
  });
  if (!host_ok) throw LlmError("LLM endpoint '" + url + "' has an invalid host");
  port_ = https_ ? 443 : 80;
  if (!port.empty()) {
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) || std::stoi(port) < 1 ||
        std::stoi(port) > 65535)
      throw LlmError("LLM endpoint '" + url + "' has an invalid port");
    port_ = std::stoi(port);
  }
  std::string prefix = path_start == std::string::npos ? "" : url.substr(path_start);
  // Accept ".../v1", ".../v1/chat/completions" and a bare origin alike.
  const std::string full = "/chat/completions";
  if (prefix.size() >= full.size() && prefix.compare(prefix.size() - full.size(), full.size(), full) == 0)
    path_ = prefix;
  else if (prefix.size() >= 3 && prefix.compare(prefix.size() - 3, 3, "/v1") == 0)
    path_ = prefix + full;
  else
    path_ = prefix + "/v1" + full;
  if (cfg_.model.empty())
    throw LlmError("no model given for the LLM endpoint: pass --model or set SYSPILOT_LLM_MODEL");
  if (cfg_.max_retries < 0) cfg_.max_retries = 0;
}

std::string LlmClient::redact(std::string s) const {
  if (cfg_.api_key.empty()) return s;
  for (size_t p; (p = s.find(cfg_.api_key)) != std::string::npos;) s.replace(p, cfg_.api_key.size(), "***");
  return s;
}

void LlmClient::wait(double seconds) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < until) {
    if (cancelled_ && cancelled_()) throw Cancelled();
    Clock::duration left = until - Clock::now();
    std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(20), left));
  }
}

std::string LlmClient::request_body(const std::string& system, const std::string& user) const {
  nlohmann::json req = {
      {"model", cfg_.model},
      {"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}}},
      {"max_tokens", cfg_.max_tokens},
      {"temperature", 0},
  };
  return req.dump();
}

ChatReply LlmClient::chat(const std::string& system, const std::string& user) {
  const std::string body = request_body(system, user);
  httplib::Headers headers = {{"Accept", "application/json"}};
  if (!cfg_.api_key.empty()) headers.emplace("Authorization", "Bearer " + cfg_.api_key);

  std::mt19937_64 rng(std::random_device{}());
  std::string last_error;
  for (int attempt = 0; attempt <= cfg_.max_retries; ++attempt) {
    if (cancelled_ && cancelled_()) throw Cancelled();
    // Each attempt asks again: the check happens right before the connection it governs.
    const std::string address = cfg_.connect_to ? cfg_.connect_to(host_, port_) : std::string();
    std::unique_ptr<httplib::ClientImpl> client;
    if (https_) client = std::make_unique<httplib::SSLClient>(host_, port_);
    else client = std::make_unique<httplib::ClientImpl>(host_, port_);
    httplib::ClientImpl& cli = *client;
    if (!address.empty()) cli.set_hostname_addr_map({{host_, address}});
    cli.set_follow_location(false);
    const auto to = std::chrono::duration<double>(cfg_.timeout_s);
    cli.set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(to));
    cli.set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(to));
    cli.set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(to));
    if (https_) {
      cli.enable_server_certificate_verification(true);
      if (!cfg_.ca_file.empty()) cli.set_ca_cert_path(cfg_.ca_file);
    }

    // A watcher closes the socket when the run is cancelled mid-request, or when the request
    // has taken twice the timeout in all: a server that trickles a byte at a time, or sends
    // headers without end, resets the per-read timeout forever.
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::atomic<bool> stopped{false}, overdue{false}, flooded{false};
    std::atomic<int> sock{-1};
    cli.set_socket_options([&](socket_t s) { sock = s; });
    const auto t0 = Clock::now();
    const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(2 * cfg_.timeout_s));
    std::thread watcher([&] {
      std::unique_lock lk(mu);
      while (!done) {
        if (cv.wait_for(lk, std::chrono::milliseconds(20), [&] { return done; })) break;
        if (cancelled_ && cancelled_()) {
          stopped = true;
          cli.stop();
          break;
        }
        if (Clock::now() >= deadline) {
          overdue = true;
          cli.stop();
          break;
        }
        // Headers and body together past the reply limit (and room for the headers): httplib
        // keeps every header line it reads, so a server sending headers without end would fill
        // the memory before the deadline.
        if (auto got = tcp_bytes_received(sock); got && *got > cfg_.max_reply_bytes + kHeaderAllowance) {
          flooded = true;
          cli.stop();
          break;
        }
      }
    });
    // The body is kept up to max_reply_bytes; a longer one ends the request.
    httplib::Request req;
    req.method = "POST";
    req.path = path_;
    req.headers = headers;
    req.set_header("Content-Type", "application/json");
    req.body = body;
    std::string received;
    bool too_large = false;
    req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
      if (received.size() + len > cfg_.max_reply_bytes) {
        too_large = true;
        return false;
      }
      received.append(data, len);
      return true;
    };
    httplib::Result res = cli.send(req);
    if (res) res->body = std::move(received);
    const double latency = std::chrono::duration<double>(Clock::now() - t0).count();
    {
      std::lock_guard lk(mu);
      done = true;
    }
    cv.notify_all();
    watcher.join();
    if (stopped || (cancelled_ && cancelled_())) throw Cancelled();
    if (too_large || flooded)
      throw LlmError(redact("reply from " + origin_ + path_ + " is longer than " +
                            std::to_string(cfg_.max_reply_bytes) + " bytes; refused (a draft is a few KB)"));

    double delay = std::min(cfg_.backoff_max_s, cfg_.backoff_base_s * std::pow(2.0, attempt));
    delay *= std::uniform_real_distribution<double>(0.5, 1.0)(rng);  // jitter spreads retries
    bool retry = false;
    if (!res && overdue) {
      std::ostringstream os;
      os << "request to " << origin_ << path_ << " took more than " << 2 * cfg_.timeout_s
         << " s in all (twice the timeout): the server answers too slowly";
      last_error = os.str();
      retry = true;
    } else if (!res) {
      const auto err = res.error();
      last_error = "request to " + origin_ + path_ + " failed: " + httplib::to_string(err);
      if (err == httplib::Error::Read) last_error += " (connection closed or timed out after " +
                                                     std::to_string(cfg_.timeout_s) + " s)";
      if (err == httplib::Error::SSLServerVerification)
        last_error += ": the server certificate is not trusted; pass --ca-file with its CA";
      retry = err != httplib::Error::SSLServerVerification && err != httplib::Error::SSLLoadingCerts;
    } else if (res->status != 200) {
      last_error = origin_ + path_ + " answered HTTP " + std::to_string(res->status) + ": " + excerpt(res->body);
      retry = retryable_status(res->status);
      if (res->status == 401 || res->status == 403) last_error += " (check SYSPILOT_LLM_API_KEY)";
      if (res->status >= 300 && res->status < 400)
        last_error += " (redirects are not followed: give the endpoint's final URL)";
      const double ra = retry_after_s(*res);
      if (ra >= 0) delay = std::min(cfg_.backoff_max_s, ra);
    } else {
      nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
      if (j.is_discarded()) {
        last_error = "reply from " + origin_ + path_ + " is not JSON (" + std::to_string(res->body.size()) +
                     " bytes; truncated?): " + excerpt(res->body);
        retry = true;
      } else if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty() ||
                 !j["choices"][0].contains("message") || !j["choices"][0]["message"].contains("content") ||
                 !j["choices"][0]["message"]["content"].is_string()) {
        last_error = "reply from " + origin_ + path_ + " has no choices[0].message.content: " + excerpt(res->body);
        retry = true;
      } else {
        ChatReply r;
        r.content = j["choices"][0]["message"]["content"].get<std::string>();
        if (j["choices"][0].contains("finish_reason") && j["choices"][0]["finish_reason"].is_string())
          r.finish_reason = j["choices"][0]["finish_reason"].get<std::string>();
        if (j.contains("usage") && j["usage"].is_object()) {
          r.prompt_tokens = token_count(j["usage"], "prompt_tokens");
          r.completion_tokens = token_count(j["usage"], "completion_tokens");
        }
        r.attempts = attempt + 1;
        r.latency_s = latency;
        return r;
      }
    }
    last_error = redact(last_error);
    if (!retry) throw LlmError(last_error);
    if (attempt == cfg_.max_retries) break;
    if (progress_) {
      std::ostringstream os;
      os.precision(2);
      os << "retry " << attempt + 1 << "/" << cfg_.max_retries << " in " << std::fixed << delay
         << " s: " << last_error;
      progress_(os.str());
    }
    wait(delay);
  }
  throw LlmError(last_error + " (gave up after " + std::to_string(cfg_.max_retries + 1) + " attempts)");
}

}  // namespace syspilot::synth
