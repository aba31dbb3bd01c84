// The LLM client's outbound side against loopback fake endpoints: redirects are never
// followed, connect_to is asked before each connection and its address is the one used,
// and hostile endpoint URLs (overlong, with credentials) are refused without a crash.
#include <gtest/gtest.h>

#include <string>

#include "synth/llm.h"
#include "synth/synth.h"
#include "tests/support/fake_llm.h"

namespace syspilot::synth {
namespace {

using testsupport::FakeLlmServer;
using testsupport::ScriptedReply;

LlmConfig config(const std::string& url) {
  LlmConfig c;
  c.url = url;
  c.model = "m";
  c.timeout_s = 5;
  c.max_retries = 0;
  return c;
}

TEST(LlmOutbound, RedirectsAreNotFollowed) {
  FakeLlmServer inner;  // stands for an internal address the redirect points at
  inner.fallback(ScriptedReply::answer("secret"));
  FakeLlmServer outer;
  ScriptedReply redirect = ScriptedReply::error(302, "");
  redirect.headers = {{"Location", inner.url() + "/v1/chat/completions"}};
  outer.fallback(redirect);
  try {
    LlmClient(config(outer.url())).chat("s", "u");
    FAIL() << "a redirect was followed";
  } catch (const LlmError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("HTTP 302"), std::string::npos) << m;
    EXPECT_NE(m.find("redirects are not followed"), std::string::npos) << m;
  }
  EXPECT_EQ(outer.request_count(), 1u);
  EXPECT_EQ(inner.request_count(), 0u);
}

TEST(LlmOutbound, ConnectsToTheAddressConnectToReturns) {
  FakeLlmServer s;
  s.fallback(ScriptedReply::answer("ok"));
  // A name that does not resolve: only the pinned address can reach the server.
  LlmConfig c = config("http://llm.invalid:" + std::to_string(s.port()) + "/v1");
  std::vector<std::pair<std::string, int>> asked;
  c.connect_to = [&](const std::string& host, int port) {
    asked.emplace_back(host, port);
    return std::string("127.0.0.1");
  };
  ChatReply r = LlmClient(c).chat("s", "u");
  EXPECT_EQ(r.content, "ok");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].first, "llm.invalid");
  EXPECT_EQ(asked[0].second, s.port());
}

TEST(LlmOutbound, ARefusalFromConnectToMeansNoConnection) {
  FakeLlmServer s;
  s.fallback(ScriptedReply::answer("ok"));
  LlmConfig c = config(s.url());
  c.max_retries = 2;
  c.connect_to = [](const std::string& host, int) -> std::string {
    throw LlmError("outbound connection to " + host + " refused");
  };
  try {
    LlmClient(c).chat("s", "u");
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos);
  }
  EXPECT_EQ(s.request_count(), 0u);
}

TEST(LlmOutbound, HostileEndpointUrlsAreRefused) {
  // 100 KB: cpp-httplib's URL regex recursed per character and crashed the job worker.
  EXPECT_THROW(LlmClient{config("http://" + std::string(100000, 'a'))}, LlmError);
  EXPECT_THROW(LlmClient{config("http://127.0.0.1:8080/" + std::string(100000, 'v'))}, LlmError);
  try {
    LlmClient{config("https://alice:hunter2@api.example.com/v1")};
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(LlmClient{config("http://[::1/v1")}, LlmError);
  EXPECT_THROW(LlmClient{config("http://h:99999/v1")}, LlmError);
  EXPECT_THROW(LlmClient{config("http://h x/v1")}, LlmError);
  EXPECT_EQ(LlmClient{config("http://[::1]:8080/v1")}.origin(), "http://[::1]:8080");
}

}  // namespace
}  // namespace syspilot::synth
