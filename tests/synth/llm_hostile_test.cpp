// The LLM client against endpoints that misbehave on the wire, served by a raw loopback
// socket: a body without end, headers without end, a byte at a time; and against replies
// whose accounting or error text is hostile. Each ends in bounded time and memory with an
// LlmError that says why.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "synth/llm.h"
#include "synth/synth.h"
#include "tests/support/fake_llm.h"

namespace syspilot::synth {
namespace {

using Clock = std::chrono::steady_clock;
using testsupport::FakeLlmServer;
using testsupport::ScriptedReply;

// Accepts connections on loopback and runs `serve(fd, stop)` on each, one at a time, until
// destroyed. `serve` sends what it likes; a send that fails (the client closed) ends it.
class RawServer {
 public:
  explicit RawServer(std::function<void(int, const std::atomic<bool>&)> serve) : serve_(std::move(serve)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 8);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) continue;
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) continue;
        // read the request head (and what fits of the body) before answering
        char buf[65536];
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 2000) > 0) (void)::recv(c, buf, sizeof buf, 0);
        serve_(c, stop_);
        ::close(c);
      }
    });
  }
  ~RawServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::function<void(int, const std::atomic<bool>&)> serve_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

bool send_all(int fd, const std::string& s) { return ::send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size()); }

LlmConfig config(const std::string& url, double timeout_s = 5) {
  LlmConfig c;
  c.url = url;
  c.model = "m";
  c.timeout_s = timeout_s;
  c.max_retries = 0;
  c.max_reply_bytes = 64 * 1024;
  return c;
}

// Runs chat() and returns the LlmError's message ("" when it returned) and the seconds taken.
std::pair<std::string, double> chat_error(const LlmConfig& c) {
  auto t0 = Clock::now();
  std::string what;
  try {
    LlmClient(c).chat("s", "u");
  } catch (const LlmError& e) {
    what = e.what();
  }
  return {what, std::chrono::duration<double>(Clock::now() - t0).count()};
}

TEST(LlmHostile, ABodyWithoutEndIsCutAtTheReplyLimit) {
  for (bool chunked : {false, true}) {
    RawServer s([chunked](int fd, const std::atomic<bool>& stop) {
      send_all(fd, chunked ? "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                           : "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n");
      std::string block(16384, 'a');
      std::string chunk = "4000\r\n" + block + "\r\n";
      while (!stop && send_all(fd, chunked ? chunk : block)) {
      }
    });
    auto [what, secs] = chat_error(config(s.url()));
    EXPECT_NE(what.find("longer than 65536 bytes"), std::string::npos) << what;
    EXPECT_LT(secs, 5) << what;
  }
}

TEST(LlmHostile, HeadersWithoutEndAreCutByTheBytesReceived) {
  RawServer s([](int fd, const std::atomic<bool>& stop) {
    send_all(fd, "HTTP/1.1 200 OK\r\n");
    std::string line = "X-Filler: " + std::string(1000, 'h') + "\r\n";
    while (!stop && send_all(fd, line)) {
    }
  });
  auto [what, secs] = chat_error(config(s.url()));
  EXPECT_NE(what.find("longer than"), std::string::npos) << what;
  EXPECT_LT(secs, 5) << what;
}

TEST(LlmHostile, AReplyTrickledByteByByteMeetsTheWholeRequestDeadline) {
  RawServer s([](int fd, const std::atomic<bool>& stop) {
    std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + std::string(100000, 'x');
    for (char c : reply) {
      if (stop || !send_all(fd, std::string(1, c))) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  auto [what, secs] = chat_error(config(s.url(), 0.5));
  EXPECT_NE(what.find("in all (twice the timeout)"), std::string::npos) << what;
  EXPECT_GT(secs, 0.9);
  EXPECT_LT(secs, 3) << what;
}

TEST(LlmHostile, ServerAccountingAndErrorTextAreNotTrusted) {
  FakeLlmServer s;
  ScriptedReply strings = ScriptedReply::answer("x");
  strings.raw_body =
      R"({"choices":[{"message":{"content":"ok"}}],"usage":{"prompt_tokens":"lots","completion_tokens":-7}})";
  ScriptedReply huge = ScriptedReply::answer("x");
  huge.raw_body = R"({"choices":[{"message":{"content":"ok"}}],"usage":{"prompt_tokens":1e300,"completion_tokens":12}})";
  ScriptedReply escape = ScriptedReply::error(500, "\x1b]0;pwned\x07\x1b[2J\x1b[31mall good\x1b[0m \xff\xfe");
  s.script({strings, huge, escape});
  LlmConfig c = config(s.url());
  ChatReply a = LlmClient(c).chat("s", "u");
  EXPECT_EQ(a.content, "ok");
  EXPECT_EQ(a.prompt_tokens, 0);
  EXPECT_EQ(a.completion_tokens, 0);
  ChatReply b = LlmClient(c).chat("s", "u");
  EXPECT_EQ(b.prompt_tokens, 0);
  EXPECT_EQ(b.completion_tokens, 12);
  auto [what, secs] = chat_error(c);
  EXPECT_NE(what.find("HTTP 500"), std::string::npos) << what;
  for (char ch : what) {
    unsigned char u = static_cast<unsigned char>(ch);
    EXPECT_TRUE(u >= 0x20 && u < 0x7f) << "a byte " << int(u) << " of the server's reached the message: " << what;
  }
}

}  // namespace
}  // namespace syspilot::synth
