// The loopback OpenAI-compatible server behind tests/support/fake_llm.h.
#include "tests/support/fake_llm.h"

#include <httplib.h>

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

namespace syspilot::testsupport {

ScriptedReply ScriptedReply::answer(std::string content) {
  ScriptedReply r;
  r.content = std::move(content);
  return r;
}

ScriptedReply ScriptedReply::error(int status, std::string body) {
  ScriptedReply r;
  r.status = status;
  r.raw_body = std::move(body);
  return r;
}

TlsFiles make_self_signed_cert(const std::string& dir) {
  std::filesystem::create_directories(dir);
  TlsFiles f{dir + "/cert.pem", dir + "/key.pem"};
  const std::string cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
      " -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout '" + f.key + "' -out '" + f.cert +
      "' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("openssl could not make a test certificate");
  return f;
}

struct FakeLlmServer::Impl {
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
  mutable std::mutex mu;
  std::condition_variable cv;  // wakes delayed replies on shutdown
  bool stopping = false;
  std::deque<ScriptedReply> script;
  ScriptedReply fallback = ScriptedReply::error(500, "{\"error\":{\"message\":\"script exhausted\"}}");
  std::vector<RecordedRequest> requests;

  void handle(const httplib::Request& req, httplib::Response& res) {
    RecordedRequest rec;
    rec.method = req.method;
    rec.path = req.path;
    rec.body = req.body;
    rec.authorization = req.get_header_value("Authorization");
    auto j = nlohmann::json::parse(req.body, nullptr, false);
    if (j.is_object()) {
      rec.model = j.value("model", "");
      rec.max_tokens = j.value("max_tokens", 0);
      if (j.contains("messages") && j["messages"].is_array())
        for (auto& m : j["messages"]) {
          if (!m.is_object()) continue;
          if (m.value("role", "") == "system") rec.system = m.value("content", "");
          if (m.value("role", "") == "user") rec.user = m.value("content", "");
        }
    }
    ScriptedReply r;
    {
      std::unique_lock lk(mu);
      requests.push_back(rec);
      if (!script.empty()) {
        r = script.front();
        script.pop_front();
      } else {
        r = fallback;
      }
      if (r.delay_s > 0)
        cv.wait_for(lk, std::chrono::duration<double>(r.delay_s), [&] { return stopping; });
    }
    res.status = r.status;
    for (auto& [k, v] : r.headers) res.set_header(k, v);
    std::string body = r.raw_body;
    if (body.empty()) {
      nlohmann::json reply = {
          {"id", "chatcmpl-test"},
          {"object", "chat.completion"},
          {"model", rec.model},
          {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", r.content}}},
                        {"finish_reason", "stop"}}}},
          {"usage", {{"prompt_tokens", r.prompt_tokens}, {"completion_tokens", r.completion_tokens},
                     {"total_tokens", r.prompt_tokens + r.completion_tokens}}},
      };
      body = reply.dump();
    }
    if (r.truncate) {
      // Announce the whole body, send half of it, then fail the write so the socket closes.
      auto shared = std::make_shared<std::string>(body);
      res.set_content_provider(shared->size(), "application/json",
                               [shared](size_t offset, size_t, httplib::DataSink& sink) {
                                 if (offset > 0) return false;
                                 sink.write(shared->data(), shared->size() / 2);
                                 return false;
                               });
      return;
    }
    res.set_content(body, "application/json");
  }
};

FakeLlmServer::FakeLlmServer() : impl_(std::make_unique<Impl>()) {
  impl_->server = std::make_unique<httplib::Server>();
  start();
}

FakeLlmServer::FakeLlmServer(const TlsFiles& tls) : impl_(std::make_unique<Impl>()), tls_(true) {
  auto s = std::make_unique<httplib::SSLServer>(tls.cert.c_str(), tls.key.c_str());
  if (!s->is_valid()) throw std::runtime_error("cannot start the HTTPS test server with " + tls.cert);
  impl_->server = std::move(s);
  start();
}

void FakeLlmServer::start() {
  auto& s = *impl_->server;
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  auto handler = [this](const httplib::Request& req, httplib::Response& res) { impl_->handle(req, res); };
  s.Post(R"(/.*)", handler);
  s.Get(R"(/.*)", handler);
  port_ = s.bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("the test server cannot bind a loopback port");
  impl_->thread = std::thread([&s] { s.listen_after_bind(); });
  for (int i = 0; i < 500 && !s.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

FakeLlmServer::~FakeLlmServer() {
  {
    std::lock_guard lk(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void FakeLlmServer::script(std::vector<ScriptedReply> replies) {
  std::lock_guard lk(impl_->mu);
  impl_->script.assign(replies.begin(), replies.end());
}

void FakeLlmServer::fallback(ScriptedReply r) {
  std::lock_guard lk(impl_->mu);
  impl_->fallback = std::move(r);
}

std::string FakeLlmServer::url() const {
  return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

std::vector<RecordedRequest> FakeLlmServer::requests() const {
  std::lock_guard lk(impl_->mu);
  return impl_->requests;
}

size_t FakeLlmServer::request_count() const {
  std::lock_guard lk(impl_->mu);
  return impl_->requests.size();
}

}  // namespace syspilot::testsupport
