// The synthesis loop against a loopback OpenAI-compatible server with scripted replies:
// each case asserts the final contract and the recorded rounds and requests.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>
#include <unistd.h>

#include "lpcl/lpcl.h"
#include "store/store.h"
#include "synth/llm.h"
#include "synth/synth.h"
#include "tests/support/fake_llm.h"
#include "tests/synth/fixture.h"

namespace syspilot::synth {
namespace {

using testsupport::FakeLlmServer;
using testsupport::ScriptedReply;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

SynthOptions options(const FakeLlmServer& s) {
  SynthOptions o;
  o.library = "openblas";
  o.version = "0.3.21";
  LlmConfig c;
  c.url = s.url();
  c.model = "test-model";
  c.api_key = "sk-secret-test-key";
  c.timeout_s = 2;
  c.max_retries = 2;
  c.backoff_base_s = 0.01;
  c.max_tokens = 1234;
  o.llm = c;
  o.max_rounds = 2;
  return o;
}

bool has_control(const lpcl::Contract& c, const std::string& n) { return c.find_control(n) != nullptr; }

bool any_repair(const SynthResult& r, const std::string& needle) {
  for (auto& rd : r.rounds)
    for (auto& x : rd.repairs)
      if (x.find(needle) != std::string::npos) return true;
  return false;
}

void expect_checks(const SynthResult& r) {
  Diagnostics d;
  auto doc = lpcl::parse(r.text, "result", d);
  ASSERT_FALSE(d.has_errors()) << d.str() << "\n" << r.text;
  EXPECT_TRUE(lpcl::check(doc, d)) << d.str() << "\n" << r.text;
}

TEST(SynthLlm, GoodDraftConvergesInOneRound) {
  FakeLlmServer s;
  s.script({ScriptedReply::answer(std::string("```lpcl\n") + testing::kGoodDraft + "```\n")});
  auto r = synthesize(testing::openblas_facts(), options(s));
  EXPECT_TRUE(r.converged) << r.open.str();
  ASSERT_EQ(r.rounds.size(), 1u);
  EXPECT_TRUE(r.rounds[0].repairs.empty());
  EXPECT_EQ(r.drafter, "llm(test-model)");
  EXPECT_EQ(r.prompt_id, "draft-contract@1");
  EXPECT_EQ(r.prompt_tokens, 100);
  EXPECT_EQ(r.completion_tokens, 50);
  EXPECT_NE(r.text.find("origin llm(\"test-model\")"), std::string::npos) << r.text;
  EXPECT_TRUE(has_control(r.contract, "OPENBLAS_THREAD_TIMEOUT"));
  expect_checks(r);
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
  EXPECT_EQ(reqs[0].authorization, "Bearer sk-secret-test-key");
  EXPECT_EQ(reqs[0].model, "test-model");
  EXPECT_EQ(reqs[0].max_tokens, 1234);
  // The prompt carries the facts, ranked: the thread knobs before the unrelated HOME.
  EXPECT_NE(reqs[0].user.find("OPENBLAS_NUM_THREADS"), std::string::npos);
  EXPECT_LT(reqs[0].user.find("OPENBLAS_NUM_THREADS"), reqs[0].user.find("env HOME"));
  EXPECT_NE(reqs[0].system.find("LPCL"), std::string::npos);
}

TEST(SynthLlm, SyntaxErrorsAreSentBackWithDiagnostics) {
  FakeLlmServer s;
  s.script({ScriptedReply::answer(testing::kSyntaxError), ScriptedReply::answer(testing::kGoodDraft)});
  auto r = synthesize(testing::openblas_facts(), options(s));
  EXPECT_TRUE(r.converged) << r.open.str();
  ASSERT_EQ(r.rounds.size(), 2u);
  EXPECT_TRUE(r.rounds[0].diags.has_errors());
  EXPECT_FALSE(r.rounds[1].diags.has_errors()) << r.rounds[1].diags.str();
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 2u);
  // Round 2 is the repair prompt, quoting the draft and the parser's diagnostics.
  EXPECT_NE(reqs[1].system.find("repair"), std::string::npos);
  EXPECT_NE(reqs[1].user.find("draft#1:"), std::string::npos) << reqs[1].user;
  EXPECT_NE(reqs[1].user.find("in [1, ncpus default 4"), std::string::npos);
  EXPECT_EQ(r.prompt_tokens, 200);
}

TEST(SynthLlm, InventedKnobsAndPlacesAreDropped) {
  FakeLlmServer s;
  s.script({ScriptedReply::answer(testing::kInventedKnob)});
  auto r = synthesize(testing::openblas_facts(), options(s));
  EXPECT_TRUE(r.converged) << r.open.str();
  ASSERT_EQ(r.rounds.size(), 1u);
  EXPECT_EQ(s.request_count(), 1u);
  EXPECT_FALSE(has_control(r.contract, "OPENBLAS_TURBO_MODE"));
  EXPECT_EQ(r.text.find("TURBO"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("blas_server.c:9999"), std::string::npos) << r.text;
  EXPECT_TRUE(any_repair(r, "dropped invented control OPENBLAS_TURBO_MODE"));
  EXPECT_TRUE(any_repair(r, "blas_server.c:9999"));
  // The chain closes over the gap the invented knob left.
  EXPECT_NE(r.text.find("OPENBLAS_NUM_THREADS ?? GOTO_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus"), std::string::npos) << r.text;
  expect_checks(r);
}

TEST(SynthLlm, WrongTypesAndDefaultsFollowTheCode) {
  FakeLlmServer s;
  s.script({ScriptedReply::answer(testing::kWrongTypes)});
  auto r = synthesize(testing::openblas_facts(), options(s));
  EXPECT_TRUE(r.converged) << r.open.str();
  EXPECT_EQ(s.request_count(), 1u);
  auto* n = r.contract.find_control("OPENBLAS_NUM_THREADS");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->type.kind, lpcl::Type::Kind::Int);
  auto* t = r.contract.find_control("OPENBLAS_THREAD_TIMEOUT");
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->default_value.has_value());
  EXPECT_EQ(lpcl::format(*t->default_value), "28");
  EXPECT_TRUE(any_repair(r, "set the type of OPENBLAS_NUM_THREADS to int"));
  EXPECT_TRUE(any_repair(r, "set the default of OPENBLAS_THREAD_TIMEOUT to 28"));
  // The missing demand head was noticed too: the chain now starts at the library's own knob.
  bool mismatch_reported = false;
  for (auto& d : r.rounds[0].diags.items()) mismatch_reported |= d.code == "type-mismatch";
  EXPECT_TRUE(mismatch_reported);
  expect_checks(r);
}

TEST(SynthLlm, MissingKnobsAreAddedFromFacts) {
  FakeLlmServer s;
  s.script({ScriptedReply::answer(testing::kMissingKnobs)});
  auto r = synthesize(testing::openblas_facts(), options(s));
  EXPECT_TRUE(r.converged) << r.open.str();
  EXPECT_EQ(s.request_count(), 1u);
  for (auto* k : {"GOTO_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT", "openblas_set_num_threads"}) {
    EXPECT_TRUE(has_control(r.contract, k)) << k;
    EXPECT_TRUE(any_repair(r, std::string("added missing control ") + k)) << k;
  }
  // Statements added by repair are the offline rules' and say so.
  EXPECT_NE(r.text.find("origin llm(\"test-model\"), extracted"), std::string::npos) << r.text;
  expect_checks(r);
}

TEST(SynthLlm, FencedAndJsonWrappedAnswersWithChatter) {
  FakeLlmServer s;
  nlohmann::json wrapped = {{"lpcl", testing::kGoodDraft}};
  s.script({ScriptedReply::answer(std::string("Sure! Here is the contract:\n\n```lpcl\n") + testing::kGoodDraft +
                                  "```\nLet me know if you need changes."),
            ScriptedReply::answer(wrapped.dump())});
  auto a = synthesize(testing::openblas_facts(), options(s));
  auto b = synthesize(testing::openblas_facts(), options(s));
  EXPECT_TRUE(a.converged) << a.open.str();
  EXPECT_TRUE(b.converged) << b.open.str();
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.rounds.size(), 1u);
  EXPECT_EQ(b.rounds.size(), 1u);
  EXPECT_EQ(s.request_count(), 2u);
}

TEST(SynthLlm, TruncatedBodyIsRetried) {
  FakeLlmServer s;
  ScriptedReply cut = ScriptedReply::answer(testing::kGoodDraft);
  cut.truncate = true;
  ScriptedReply half_json = ScriptedReply::error(200, "{\"choices\": [{\"message\": {\"content\": \"contract open");
  s.script({cut, half_json, ScriptedReply::answer(testing::kGoodDraft)});
  std::vector<std::string> lines;
  auto o = options(s);
  o.progress = [&](const std::string& l) { lines.push_back(l); };
  auto r = synthesize(testing::openblas_facts(), o);
  EXPECT_TRUE(r.converged) << r.open.str();
  EXPECT_EQ(r.rounds.size(), 1u);
  EXPECT_EQ(s.request_count(), 3u);
  bool said_not_json = false;
  for (auto& l : lines) said_not_json |= l.find("is not JSON") != std::string::npos;
  EXPECT_TRUE(said_not_json);
}

// The answer cache serves only answers that held a contract that parses: after a garbage
// answer and a truncated one, the same prompt asks the model again; a good answer is then
// served from the cache with no call.
TEST(SynthLlm, OnlyAnswersThatParseAreCached) {
  auto dir = std::filesystem::temp_directory_path() / ("syspilot-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  store::Store st((dir / "s.db").string());
  FakeLlmServer s;
  ScriptedReply truncated = ScriptedReply::answer("x");
  nlohmann::json cut = {{"choices", {{{"message", {{"content", testing::kGoodDraft}}}, {"finish_reason", "length"}}}}};
  truncated.raw_body = cut.dump();
  s.script({ScriptedReply::answer("no contract here, sorry"), truncated, ScriptedReply::answer(testing::kGoodDraft)});
  auto o = options(s);
  o.max_rounds = 0;  // one round a run: each run asks the draft prompt once
  synthesize(testing::openblas_facts(), o, &st);
  EXPECT_EQ(s.request_count(), 1u);
  synthesize(testing::openblas_facts(), o, &st);
  EXPECT_EQ(s.request_count(), 2u) << "the garbage answer was served from the cache";
  synthesize(testing::openblas_facts(), o, &st);
  EXPECT_EQ(s.request_count(), 3u) << "the truncated answer was served from the cache";
  auto r = synthesize(testing::openblas_facts(), o, &st);
  EXPECT_EQ(s.request_count(), 3u) << "the good answer was not served from the cache";
  ASSERT_FALSE(r.rounds.empty());
  EXPECT_TRUE(r.rounds.front().cached);
  std::filesystem::remove_all(dir);
}

TEST(SynthLlm, RateLimitHonoursRetryAfter) {
  FakeLlmServer s;
  ScriptedReply limited = ScriptedReply::error(429, "{\"error\":{\"message\":\"slow down\"}}");
  limited.headers["Retry-After"] = "1";
  s.script({limited, ScriptedReply::answer(testing::kGoodDraft)});
  auto t0 = Clock::now();
  auto r = synthesize(testing::openblas_facts(), options(s));
  const double took = since(t0);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(s.request_count(), 2u);
  EXPECT_GE(took, 0.95);  // backoff alone would wait ~0.01 s
  EXPECT_LT(took, 10.0);
}

TEST(SynthLlm, ServerErrorsAreRetriedThenReported) {
  FakeLlmServer s;
  s.script({ScriptedReply::error(500), ScriptedReply::answer(testing::kGoodDraft)});
  auto r = synthesize(testing::openblas_facts(), options(s));
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(s.request_count(), 2u);

  FakeLlmServer down;  // every request fails: the error names the status, never the key
  down.fallback(ScriptedReply::error(503, "{\"error\": \"overloaded; your key sk-secret-test-key\"}"));
  try {
    synthesize(testing::openblas_facts(), options(down));
    FAIL() << "expected LlmError";
  } catch (const LlmError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("HTTP 503"), std::string::npos) << m;
    EXPECT_NE(m.find("gave up after 3 attempts"), std::string::npos) << m;
    EXPECT_EQ(m.find("sk-secret-test-key"), std::string::npos) << m;
  }
  EXPECT_EQ(down.request_count(), 3u);

  FakeLlmServer refuses;  // 400 is not retried
  refuses.fallback(ScriptedReply::error(400, "{\"error\": \"bad request\"}"));
  EXPECT_THROW(synthesize(testing::openblas_facts(), options(refuses)), LlmError);
  EXPECT_EQ(refuses.request_count(), 1u);
}

TEST(SynthLlm, HangPastTimeoutIsRetried) {
  FakeLlmServer s;
  ScriptedReply hang = ScriptedReply::answer(testing::kGoodDraft);
  hang.delay_s = 5;
  s.script({hang, ScriptedReply::answer(testing::kGoodDraft)});
  auto o = options(s);
  o.llm->timeout_s = 0.4;
  auto t0 = Clock::now();
  auto r = synthesize(testing::openblas_facts(), o);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(s.request_count(), 2u);
  EXPECT_LT(since(t0), 4.0);

  FakeLlmServer stuck;
  stuck.fallback(hang);
  o = options(stuck);
  o.llm->timeout_s = 0.3;
  o.llm->max_retries = 0;
  t0 = Clock::now();
  try {
    synthesize(testing::openblas_facts(), o);
    FAIL() << "expected LlmError";
  } catch (const LlmError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
  }
  EXPECT_LT(since(t0), 3.0);
}

TEST(SynthLlm, CancelStopsAWaitingRequest) {
  FakeLlmServer s;
  ScriptedReply hang = ScriptedReply::answer(testing::kGoodDraft);
  hang.delay_s = 10;
  s.fallback(hang);
  auto o = options(s);
  o.llm->timeout_s = 30;
  std::atomic<bool> stop{false};
  o.cancelled = [&] { return stop.load(); };
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
  });
  auto t0 = Clock::now();
  EXPECT_THROW(synthesize(testing::openblas_facts(), o), Cancelled);
  EXPECT_LT(since(t0), 3.0);
  t.join();
}

TEST(SynthLlm, HttpsWithPrivateCa) {
  const std::string dir = ::testing::TempDir() + "/synth-tls";
  auto tls = testsupport::make_self_signed_cert(dir);
  FakeLlmServer s(tls);
  s.fallback(ScriptedReply::answer(testing::kGoodDraft));
  auto o = options(s);
  ASSERT_EQ(s.url().rfind("https://127.0.0.1:", 0), 0u);
  o.llm->ca_file = tls.cert;
  auto r = synthesize(testing::openblas_facts(), o);
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(s.request_count(), 1u);

  o.llm->ca_file.clear();  // the system store does not know this certificate
  try {
    synthesize(testing::openblas_facts(), o);
    FAIL() << "expected LlmError";
  } catch (const LlmError& e) {
    EXPECT_NE(std::string(e.what()).find("--ca-file"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.request_count(), 1u);  // the handshake failed before any request
}

TEST(SynthLlm, NeverConvergingKeepsTheBestCheckedContract) {
  FakeLlmServer s;
  s.script({ScriptedReply::answer(testing::kSyntaxError), ScriptedReply::answer(testing::kOutOfDomain),
            ScriptedReply::answer(testing::kSyntaxError)});
  auto r = synthesize(testing::openblas_facts(), options(s));
  EXPECT_FALSE(r.converged);
  ASSERT_EQ(r.rounds.size(), 3u);  // the first draft and max_rounds = 2 re-prompts
  EXPECT_EQ(s.request_count(), 3u);
  EXPECT_TRUE(r.open.has_errors());
  // The best round was the one that parsed: its contract is returned, as LLM work.
  EXPECT_NE(r.text.find("default 0"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("llm(\"test-model\")"), std::string::npos) << r.text << r.open.str();

  FakeLlmServer junk;  // nothing parses in any round: the offline draft stands in
  junk.fallback(ScriptedReply::answer("I cannot help with that."));
  auto o = options(junk);
  o.max_rounds = 1;
  auto j = synthesize(testing::openblas_facts(), o);
  EXPECT_FALSE(j.converged);
  EXPECT_EQ(junk.request_count(), 2u);
  bool said = false;
  for (auto& d : j.open.items()) said |= d.code == "llm-no-contract";
  EXPECT_TRUE(said) << j.open.str();
  EXPECT_TRUE(has_control(j.contract, "OPENBLAS_NUM_THREADS"));
}

TEST(SynthLlm, StoreCachesAnswersAndRecordsCalls) {
  const std::string db = ::testing::TempDir() + "/synth-cache.db";
  std::filesystem::remove(db);
  FakeLlmServer s;
  s.fallback(ScriptedReply::answer(testing::kGoodDraft));
  store::Store st(db);
  auto first = synthesize(testing::openblas_facts(), options(s), &st);
  auto again = synthesize(testing::openblas_facts(), options(s), &st);
  EXPECT_EQ(s.request_count(), 1u);  // unchanged input costs no call
  ASSERT_EQ(again.rounds.size(), 1u);
  EXPECT_TRUE(again.rounds[0].cached);
  EXPECT_EQ(first.text, again.text);
  auto usage = st.usage("openblas", "0.3.21");
  EXPECT_EQ(usage.calls, 1);
  EXPECT_EQ(usage.cache_hits, 1);
  EXPECT_EQ(usage.prompt_tokens, 100);
  auto rec = st.get_contract("openblas", "0.3.21");
  ASSERT_TRUE(rec.has_value());
  EXPECT_EQ(rec->lpcl, again.text);
  EXPECT_EQ(rec->prompt_id, "draft-contract");
  EXPECT_EQ(rec->prompt_version, 1);
  EXPECT_EQ(rec->model, "test-model");
  // The key is never stored.
  for (auto& call : st.llm_calls("openblas", "0.3.21")) EXPECT_EQ(call.answer.find("sk-secret"), std::string::npos);
  auto raw = st.db().query_int("SELECT count(*) FROM llm_calls WHERE answer LIKE '%sk-secret%'");
  EXPECT_EQ(raw.value_or(0), 0);
}

TEST(LlmClient, AcceptsUrlsWithAndWithoutV1) {
  LlmConfig c;
  c.model = "m";
  c.url = "http://127.0.0.1:9";
  EXPECT_EQ(LlmClient(c).path(), "/v1/chat/completions");
  c.url = "https://api.example.com/v1/";
  EXPECT_EQ(LlmClient(c).path(), "/v1/chat/completions");
  EXPECT_EQ(LlmClient(c).origin(), "https://api.example.com");
  c.url = "http://gw.local:8080/openai/v1";
  EXPECT_EQ(LlmClient(c).path(), "/openai/v1/chat/completions");
  c.url = "ftp://x";
  EXPECT_THROW(LlmClient{c}, LlmError);
  c.url = "localhost:8080";
  EXPECT_THROW(LlmClient{c}, LlmError);
  c.url = "http://x";
  c.model.clear();
  EXPECT_THROW(LlmClient{c}, LlmError);
}

TEST(LlmClient, ConnectionRefusedIsRetriedThenReported) {
  int port;
  {
    FakeLlmServer s;  // a port that was just free and is closed again
    port = s.port();
  }
  LlmConfig c;
  c.url = "http://127.0.0.1:" + std::to_string(port);
  c.model = "m";
  c.api_key = "sk-never-shown";
  c.max_retries = 1;
  c.backoff_base_s = 0.01;
  try {
    LlmClient(c).chat("s", "u");
    FAIL();
  } catch (const LlmError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("Connection"), std::string::npos) << m;
    EXPECT_EQ(m.find("sk-never-shown"), std::string::npos);
  }
}

}  // namespace
}  // namespace syspilot::synth
