// The contract store: records round-trip whole, revisions keep history, versions order the
// way people read them, facts are content-addressed, and LLM calls serve as a cache.
#include "tests/store/fixture.h"

using namespace syspilot::store;
using syspilot::store::testing::make_record;
using syspilot::store::testing::TempDir;

TEST(Contracts, RoundTripEveryField) {
  TempDir dir;
  Store s(dir.file("s.db"));
  ContractRecord r = make_record(3);  // open diagnostics, offline, 4 rounds
  r.facts.push_back({"", "{\"other\": true}", "doc:/usr/share/doc/lib3"});
  PutResult put = s.put_contract(r);
  EXPECT_EQ(put.revision, 1);
  EXPECT_TRUE(put.changed);
  auto got = s.get_contract(r.library, r.version);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->id, put.id);
  EXPECT_EQ(got->lpcl, r.lpcl);
  EXPECT_EQ(got->json, "{\"i\":3,\"name\":\"lib3\",\"version\":\"1.0\"}");  // canonical
  EXPECT_EQ(got->digest, sha256_hex(r.lpcl));
  EXPECT_EQ(got->status, ContractStatus::OpenDiagnostics);
  EXPECT_EQ(got->diagnostics, r.diagnostics);
  EXPECT_EQ(got->drafter, Drafter::Llm);
  EXPECT_EQ(got->model, "test-model");
  EXPECT_EQ(got->prompt_id, "draft");
  EXPECT_EQ(got->prompt_version, 3);
  EXPECT_EQ(got->source, r.source);
  EXPECT_FALSE(got->created_at.empty());
  ASSERT_EQ(got->rounds.size(), 4u);
  EXPECT_EQ(got->rounds[3].round, 4);
  EXPECT_EQ(got->rounds[3].drafter, "repair");
  EXPECT_EQ(got->rounds[3].diagnostics, "[{\"round\": 4}]");
  ASSERT_EQ(got->facts.size(), 2u);
  EXPECT_EQ(got->facts[1].source, "doc:/usr/share/doc/lib3");
  EXPECT_EQ(s.get_facts(got->facts[1].digest), "{\"other\":true}");
  EXPECT_TRUE(syspilot::store::testing::is_whole(s, *got));
  EXPECT_FALSE(s.get_contract(r.library, "9.9"));
  EXPECT_FALSE(s.get_contract("nope", r.version));
}

TEST(Contracts, RestoringAVersionAddsARevisionAndKeepsHistory) {
  TempDir dir;
  Store s(dir.file("s.db"));
  ContractRecord r = make_record(0);
  EXPECT_EQ(s.put_contract(r).revision, 1);
  PutResult same = s.put_contract(r);
  EXPECT_EQ(same.revision, 2);
  EXPECT_FALSE(same.changed);
  r.lpcl += "# edited\n";
  r.drafter = Drafter::Manual;
  PutResult edited = s.put_contract(r);
  EXPECT_EQ(edited.revision, 3);
  EXPECT_TRUE(edited.changed);
  EXPECT_EQ(s.get_contract(r.library, r.version)->lpcl, r.lpcl);
  EXPECT_EQ(s.get_contract(r.library, r.version, 1)->lpcl, make_record(0).lpcl);
  EXPECT_EQ(s.get_contract(r.library, r.version, 1)->rounds.size(), make_record(0).rounds.size());
  auto revs = s.revisions(r.library, r.version);
  ASSERT_EQ(revs.size(), 3u);
  EXPECT_EQ(revs[2].drafter, Drafter::Manual);
  auto vs = s.versions(r.library);
  ASSERT_EQ(vs.size(), 1u);
  EXPECT_EQ(vs[0].revision, 3);
}

TEST(Contracts, VersionsSortAsPeopleReadThemAndLatestIsHighest) {
  TempDir dir;
  Store s(dir.file("s.db"));
  for (std::string v : {"0.3.29", "0.3.9", "0.3.21", "0.3.34"}) {
    ContractRecord r = make_record(0);
    r.library = "openblas";
    r.version = v;
    r.lpcl = "contract openblas \"" + v + "\" {}\n";
    s.put_contract(r);
  }
  ContractRecord z = make_record(1);
  z.library = "zstd";
  s.put_contract(z);
  auto vs = s.versions("openblas");
  ASSERT_EQ(vs.size(), 4u);
  EXPECT_EQ(vs[0].version, "0.3.9");
  EXPECT_EQ(vs[3].version, "0.3.34");
  EXPECT_EQ(s.latest_contract("openblas")->version, "0.3.34");
  auto libs = s.libraries();
  ASSERT_EQ(libs.size(), 2u);
  EXPECT_EQ(libs[0].name, "openblas");
  EXPECT_EQ(libs[0].versions, 4);
  EXPECT_EQ(libs[0].latest_version, "0.3.34");
  EXPECT_EQ(libs[1].name, "zstd");
  EXPECT_FALSE(s.latest_contract("absent"));
}

TEST(Contracts, RemoveDropsEveryRevisionButKeepsSharedFacts) {
  TempDir dir;
  Store s(dir.file("s.db"));
  ContractRecord a = make_record(0), b = make_record(5);  // lib0 1.0 and lib0 1.1
  s.put_contract(a);
  s.put_contract(a);
  s.put_contract(b);
  EXPECT_TRUE(s.remove_contract("lib0", "1.0"));
  EXPECT_FALSE(s.get_contract("lib0", "1.0"));
  EXPECT_TRUE(s.get_contract("lib0", "1.1"));
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM contracts"), 1);
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM validation_rounds"),
            static_cast<int64_t>(b.rounds.size()));
  EXPECT_FALSE(s.remove_contract("lib0", "1.0"));
  EXPECT_TRUE(s.remove_contract("lib0", "1.1"));
  EXPECT_TRUE(s.libraries().empty());
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM facts"), 2);
  EXPECT_EQ(s.db().integrity_check(), "ok");
  EXPECT_FALSE(s.db().query_int("PRAGMA foreign_key_check"));
}

TEST(Contracts, BadRecordsAreRefusedAndStoreNothing) {
  TempDir dir;
  Store s(dir.file("s.db"));
  auto refuses = [&](ContractRecord r, const std::string& needle) {
    try {
      s.put_contract(r);
    } catch (const StoreError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted a record that should fail with: " << needle;
  };
  ContractRecord r = make_record(1);
  r.library = "";
  refuses(r, "library name is empty");
  r = make_record(1);
  r.version = "1.0\n";
  refuses(r, "control character");
  r = make_record(1);
  r.lpcl = "";
  refuses(r, "LPCL text");
  r = make_record(1);
  r.json = "{not json";
  refuses(r, "not valid JSON");
  r = make_record(1);
  r.facts.push_back({"0000", "", "nowhere"});  // facts named but never stored
  refuses(r, "not stored");
  r = make_record(1);
  r.facts[0].json = "[1, 2";  // broken facts, after the contract row was written
  refuses(r, "not valid JSON");
  EXPECT_TRUE(s.libraries().empty());
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM contracts"), 0);
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM versions"), 0);
}

TEST(Facts, ContentAddressedAndDeduplicated) {
  TempDir dir;
  Store s(dir.file("s.db"));
  std::string a = s.put_facts("{\"b\": [1, 2, {\"y\": 1, \"x\": 2}], \"a\": \"\\u00e9\"}");
  std::string b = s.put_facts("{\n  \"a\": \"\xc3\xa9\",\n  \"b\": [1,2,{\"x\":2,\"y\":1}]\n}\n");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM facts"), 1);
  auto stored = s.get_facts(a);
  ASSERT_TRUE(stored);
  EXPECT_EQ(sha256_hex(*stored), a);
  EXPECT_EQ(*stored, "{\"a\":\"\xc3\xa9\",\"b\":[1,2,{\"x\":2,\"y\":1}]}");
  EXPECT_NE(s.put_facts("{\"a\": 1}"), a);
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM facts"), 2);
  EXPECT_FALSE(s.get_facts(std::string(64, '0')));

  // Two contracts from the same facts share one row.
  ContractRecord r1 = make_record(0), r2 = make_record(7);  // i % 7 equal: same facts
  s.put_contract(r1);
  s.put_contract(r2);
  EXPECT_EQ(s.get_contract(r1.library, r1.version)->facts[0].digest,
            s.get_contract(r2.library, r2.version)->facts[0].digest);
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM facts"), 3);
}

TEST(Facts, MalformedInputIsAClearErrorNotACrash) {
  TempDir dir;
  Store s(dir.file("s.db"));
  EXPECT_THROW(s.put_facts(""), StoreError);
  EXPECT_THROW(s.put_facts("{\"a\": }"), StoreError);
  EXPECT_THROW(s.put_facts(std::string(100000, '[')), StoreError);
  EXPECT_THROW(s.put_facts("\"\xff\xfe\""), StoreError);  // invalid UTF-8
  EXPECT_EQ(s.db().query_int("SELECT count(*) FROM facts"), 0);
}

namespace {
LlmCall call(const std::string& prompt, std::int64_t prompt_tokens, std::int64_t completion_tokens,
             double latency_ms, const std::string& status, const std::string& answer, bool cached) {
  LlmCall c;
  c.library = "openblas";
  c.version = "0.3.21";
  c.model = "m1";
  c.prompt_digest = prompt;
  c.prompt_tokens = prompt_tokens;
  c.completion_tokens = completion_tokens;
  c.latency_ms = latency_ms;
  c.status = status;
  c.answer = answer;
  c.cached = cached;
  return c;
}
}  // namespace

TEST(LlmCalls, CacheHitsMissesAndUsage) {
  TempDir dir;
  Store s(dir.file("s.db"));
  std::string prompt = sha256_hex("{\"messages\": [\"draft openblas\"]}");
  EXPECT_FALSE(s.cached_answer("m1", prompt));
  s.record_llm_call(call(prompt, 900, 0, 30000, "timeout", "", false));
  EXPECT_FALSE(s.cached_answer("m1", prompt)) << "a failed call must not be served from cache";
  LlmCall ok = call(prompt, 1000, 250, 1200.5, "ok", "contract openblas ...", false);
  s.record_llm_call(ok);
  EXPECT_EQ(s.cached_answer("m1", prompt), "contract openblas ...");
  EXPECT_FALSE(s.cached_answer("m2", prompt)) << "the cache is keyed by model";
  EXPECT_FALSE(s.cached_answer("m1", sha256_hex("other prompt")));
  LlmCall newer = ok;
  newer.answer = "contract openblas v2";
  s.record_llm_call(newer);
  EXPECT_EQ(s.cached_answer("m1", prompt), "contract openblas v2");
  s.record_llm_call(call(prompt, 0, 0, 0.1, "ok", "contract openblas v2", true));

  Usage u = s.usage("openblas", "0.3.21");
  EXPECT_EQ(u.calls, 3);
  EXPECT_EQ(u.cache_hits, 1);
  EXPECT_EQ(u.prompt_tokens, 2900);
  EXPECT_EQ(u.completion_tokens, 500);
  EXPECT_NEAR(u.latency_ms, 32401.1, 0.01);
  Usage none = s.usage("openblas", "0.3.29");
  EXPECT_EQ(none.calls, 0);
  EXPECT_EQ(none.prompt_tokens, 0);
  auto calls = s.llm_calls("openblas", "0.3.21");
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].status, "timeout");
  EXPECT_TRUE(calls[3].cached);
  EXPECT_THROW(s.record_llm_call(LlmCall{}), StoreError);
}
