// The HTTP API over real loopback HTTP(S): every endpoint, authentication, limits, malformed
// input, traversal attempts, jobs (concurrency, back-pressure, cancellation), TLS.
#include <gtest/gtest.h>

#include <fstream>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <set>

#include "extract/extract.h"
#include "lpcl/lpcl.h"
#include "service/service.h"
#include "synth/synth.h"
#include "tests/service/fixture.h"
#include "tests/support/fake_llm.h"

namespace syspilot::service::test {
namespace {

using nlohmann::json;

struct Api : ::testing::Test {
  TempDir tmp;
  std::unique_ptr<Service> svc;
  std::string write_token, read_token;
  std::unique_ptr<httplib::Client> cli;

  void start(std::function<void(ServiceOptions&)> tweak = {}) {
    ServiceOptions o;
    o.db_path = tmp.str("db.sqlite");
    o.port = 0;
    o.source_roots = {tmp.str("root")};
    o.work_dir = tmp.str("work");
    o.workers = 2;
    o.queue_capacity = 8;
    o.allow_outbound = {"127.0.0.1"};  // the fake LLM and test servers listen on loopback
    o.limits.max_body_bytes = 64 << 10;
    o.shutdown_grace_s = 1;
    fs::create_directories(tmp.path() / "root");
    if (tweak) tweak(o);
    Diagnostics d;
    svc = Service::create(o, d);
    ASSERT_TRUE(svc) << d.str();
    ASSERT_TRUE(svc->start(d)) << d.str();
    write_token = create_token(o.db_path, Scope::Write, "test writer");
    read_token = create_token(o.db_path, Scope::Read, "test reader");
    cli = std::make_unique<httplib::Client>("127.0.0.1", svc->port());
    cli->set_read_timeout(30);
  }
  void TearDown() override {
    if (svc) svc->stop();
  }

  httplib::Headers auth(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

  json get_json(const std::string& path, int expect = 200, const std::string& token = "") {
    auto r = cli->Get(path.c_str(), auth(token.empty() ? read_token : token));
    EXPECT_TRUE(r);
    if (!r) return nullptr;
    EXPECT_EQ(r->status, expect) << path << " -> " << r->body;
    auto j = json::parse(r->body, nullptr, false);
    return j;
  }
  httplib::Result post(const std::string& path, const json& body, const std::string& token = "") {
    return cli->Post(path.c_str(), auth(token.empty() ? write_token : token), body.dump(), "application/json");
  }

  std::string dir_release(const std::string& name, const std::string& version) {
    fs::path d = tmp.path() / "root" / (name + "-" + version);
    write_foo_release(d, version);
    return d.string();
  }

  // Submits a dir synthesis; returns the job id.
  std::string submit(const std::string& lib, const std::string& version, json extra = json::object()) {
    json body = {{"library", lib}, {"version", version},
                 {"source", {{"kind", "dir"}, {"path", dir_release(lib, version)}}}};
    body.update(extra);
    auto r = post("/v1/synthesize", body);
    EXPECT_TRUE(r);
    if (!r) return "";
    EXPECT_EQ(r->status, 202) << r->body;
    EXPECT_EQ(r->get_header_value("Location").rfind("/v1/jobs/job_", 0), 0u);
    return json::parse(r->body)["job"]["id"];
  }

  json wait_job(const std::string& id, double seconds = 60) {
    json job;
    eventually(
        [&] {
          job = get_json("/v1/jobs/" + id)["job"];
          std::string s = job.value("state", "");
          return s == "succeeded" || s == "failed" || s == "cancelled";
        },
        seconds);
    return job;
  }

  std::string error_code(const httplib::Result& r) {
    if (!r) return "no response";
    auto j = json::parse(r->body, nullptr, false);
    if (j.is_discarded() || !j.contains("error")) return "not a JSON error: " + r->body;
    return j["error"].value("code", "");
  }
};

TEST_F(Api, HealthzNeedsNoToken) {
  start();
  auto r = cli->Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["status"], "ok");
}

TEST_F(Api, AuthenticationAndScopes) {
  start();
  auto r = cli->Get("/v1/libraries");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(error_code(r), "unauthorized");
  EXPECT_NE(r->get_header_value("WWW-Authenticate").find("Bearer"), std::string::npos);
  r = cli->Get("/v1/libraries", auth("spt_0000000000000000000000000000000000000000000000"));
  EXPECT_EQ(r->status, 401);
  r = cli->Get("/v1/libraries", {{"Authorization", "Basic dXNlcjpwYXNz"}});
  EXPECT_EQ(r->status, 401);
  r = cli->Get("/v1/libraries", auth(read_token));
  EXPECT_EQ(r->status, 200);
  // A read token cannot write.
  r = post("/v1/synthesize", {{"library", "foo"}, {"version", "1"}}, read_token);
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(error_code(r), "forbidden");
  r = cli->Delete("/v1/jobs/job_00", auth(read_token));
  EXPECT_EQ(r->status, 403);
  r = cli->Get("/metrics");
  EXPECT_EQ(r->status, 401);
  // Revoked tokens stop working at once.
  auto tokens = list_tokens(tmp.str("db.sqlite"));
  ASSERT_EQ(tokens.size(), 2u);
  EXPECT_EQ(tokens[1].prefix, read_token.substr(0, 10));
  EXPECT_TRUE(revoke_token(tmp.str("db.sqlite"), tokens[1].id));
  r = cli->Get("/v1/libraries", auth(read_token));
  EXPECT_EQ(r->status, 401);
  // The database holds digests, never the tokens.
  EXPECT_EQ(read_file(tmp.path() / "db.sqlite").find(write_token), std::string::npos);
}

TEST_F(Api, PublicReadAllowsReadsOnly) {
  start([](ServiceOptions& o) { o.public_read = true; });
  EXPECT_EQ(cli->Get("/v1/libraries")->status, 200);
  EXPECT_EQ(cli->Post("/v1/synthesize", "{}", "application/json")->status, 401);
}

TEST_F(Api, MalformedAndOversizedRequests) {
  start();
  auto r = cli->Post("/v1/synthesize", auth(write_token), "{\"library\": ", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(error_code(r), "malformed-json");
  r = cli->Post("/v1/synthesize", auth(write_token), "[1, 2]", "application/json");
  EXPECT_EQ(error_code(r), "malformed-json");
  r = post("/v1/synthesize", {{"library", 7}, {"version", "1"}});
  EXPECT_EQ(r->status, 400);
  r = post("/v1/synthesize", {{"library", "foo"}, {"version", "1"}});
  EXPECT_EQ(error_code(r), "bad-source");
  r = post("/v1/synthesize", {{"library", "../etc"}, {"version", "1"}, {"source", {{"kind", "dir"}}}});
  EXPECT_EQ(error_code(r), "bad-library");
  r = cli->Post("/v1/synthesize", auth(write_token), "library=foo", "application/x-www-form-urlencoded");
  EXPECT_EQ(r->status, 415);
  // Body over the limit: 413, and the service stays up.
  std::string big(100 << 10, 'x');
  r = cli->Post("/v1/synthesize", auth(write_token), "{\"pad\": \"" + big + "\"}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  // Headers over the limit: 431.
  httplib::Headers h = auth(read_token);
  for (int i = 0; i < 12; ++i) h.emplace("X-Pad-" + std::to_string(i), std::string(1000, 'a'));
  r = cli->Get("/v1/libraries", h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 431);
  EXPECT_EQ(error_code(r), "headers-too-large");
  // Unknown endpoints answer a JSON 404.
  r = cli->Get("/v2/anything", auth(read_token));
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(error_code(r), "not-found");
  EXPECT_EQ(cli->Get("/healthz")->status, 200);
}

TEST_F(Api, TraversalAttemptsAreRejected) {
  start();
  fs::create_directories(tmp.path() / "secret");
  write_file(tmp.path() / "secret" / "key.c", "const char* k = \"do not read\";\n");
  fs::create_directory_symlink(tmp.path() / "secret", tmp.path() / "root" / "link-out");
  auto try_source = [&](const json& src) {
    return error_code(post("/v1/synthesize", {{"library", "foo"}, {"version", "1.0"}, {"source", src}}));
  };
  EXPECT_EQ(try_source({{"kind", "dir"}, {"path", tmp.str("root/../secret")}}), "path-traversal");
  EXPECT_EQ(try_source({{"kind", "dir"}, {"path", tmp.str("secret")}}), "path-traversal");
  EXPECT_EQ(try_source({{"kind", "dir"}, {"path", tmp.str("root/link-out")}}), "path-traversal");
  EXPECT_EQ(try_source({{"kind", "dir"}, {"path", "/etc"}}), "path-traversal");
  EXPECT_EQ(try_source({{"kind", "tarball"}, {"path", "/etc/passwd"}}), "path-traversal");
  EXPECT_EQ(try_source({{"kind", "git"}, {"url", "--upload-pack=id"}, {"ref", "v1"}}), "option-injection");
  EXPECT_EQ(try_source({{"kind", "git"}, {"url", "ext::sh -c id"}, {"ref", "v1"}}), "url-scheme");
  EXPECT_EQ(try_source({{"kind", "debian-source"}, {"package", "-o"}, {"version", "1"}}), "option-injection");
  // Encoded traversal in the URL path never reaches a file.
  for (const char* path : {"/v1/libraries/..%2F..%2Fetc%2Fpasswd/contracts", "/v1/libraries/foo/contracts/..%2F..%2Fx",
                           "/v1/libraries/%2e%2e/contracts"}) {
    auto r = cli->Get(path, auth(read_token));
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->status == 400 || r->status == 404) << path << " -> " << r->status;
  }
  EXPECT_EQ(get_json("/v1/jobs")["jobs"].size(), 0u);  // nothing was queued
}

// A Debian suite becomes a deb-src line and a folder name: one that is not a suite name is a
// 400 on submission, not a job that fails later.
TEST_F(Api, BadDebianSuitesAre400BeforeAJobIsQueued) {
  start();
  for (const char* suite : {"-o", "../../etc", "sid main contrib", "Sid", ""}) {
    json src = {{"kind", "debian-source"}, {"package", "openblas"}, {"version", "0.3.21+ds-4"}, {"suites", {suite}}};
    auto r = post("/v1/synthesize", {{"library", "openblas"}, {"version", "0.3.21"}, {"source", src}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << suite << " -> " << r->body;
    EXPECT_EQ(error_code(r), "bad-source") << suite;
  }
  EXPECT_EQ(get_json("/v1/jobs")["jobs"].size(), 0u);  // nothing was queued
}

// A release whose tree holds a file of 65,535 unclosed brackets, which once crashed the parser
// and with it the whole service (and again when its job resumed): the build goes on without
// that file, the contract is stored from the rest, and the service keeps answering.
TEST_F(Api, ATreeWithAFileTheParserCannotTakeIsSynthesizedWithoutIt) {
  start();
  std::string dir = dir_release("foo", "1.0.0");
  std::ofstream(fs::path(dir) / "deep.c") << std::string(65535, '(');
  json body = {{"library", "foo"}, {"version", "1.0.0"}, {"source", {{"kind", "dir"}, {"path", dir}}}};
  auto r = post("/v1/synthesize", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  json job = wait_job(json::parse(r->body)["job"]["id"]);
  ASSERT_EQ(job["state"], "succeeded") << job.dump(2);
  EXPECT_EQ(job["result"]["status"], "stored");
  std::string lpcl = get_json("/v1/libraries/foo/contracts/1.0.0")["lpcl"];
  EXPECT_NE(lpcl.find("FOO_NUM_THREADS"), std::string::npos) << lpcl;
  auto h = cli->Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST_F(Api, SynthesizeThenReadContractsVersionsAndDiff) {
  start();
  json job = wait_job(submit("foo", "1.0.0"));
  ASSERT_EQ(job["state"], "succeeded") << job.dump(2);
  EXPECT_EQ(job["result"]["status"], "stored");
  EXPECT_EQ(job["progress"], 1.0);
  EXPECT_FALSE(job["log"].empty());
  job = wait_job(submit("foo", "1.1.0"));
  ASSERT_EQ(job["state"], "succeeded") << job.dump(2);
  EXPECT_EQ(job["result"]["previous_version"], "1.0.0");

  json libs = get_json("/v1/libraries")["libraries"];
  ASSERT_EQ(libs.size(), 1u);
  EXPECT_EQ(libs[0]["name"], "foo");
  EXPECT_EQ(libs[0]["latest_version"], "1.1.0");
  json versions = get_json("/v1/libraries/foo/contracts")["versions"];
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[0]["version"], "1.0.0");

  auto r = cli->Get("/v1/libraries/foo/contracts/1.1.0", auth(read_token));
  ASSERT_EQ(r->status, 200) << r->body;
  json c = json::parse(r->body);
  EXPECT_EQ(c["library"], "foo");
  EXPECT_NE(c["lpcl"].get<std::string>().find("FOO_NUM_THREADS"), std::string::npos);
  EXPECT_TRUE(c["contract"].is_object());
  std::string etag = r->get_header_value("ETag");
  ASSERT_FALSE(etag.empty());
  httplib::Headers h = auth(read_token);
  h.emplace("If-None-Match", etag);
  auto cached = cli->Get("/v1/libraries/foo/contracts/1.1.0", h);
  EXPECT_EQ(cached->status, 304);
  EXPECT_TRUE(cached->body.empty());

  httplib::Headers lp = auth(read_token);
  lp.emplace("Accept", "text/x-lpcl");
  auto text = cli->Get("/v1/libraries/foo/contracts/1.1.0", lp);
  ASSERT_EQ(text->status, 200);
  EXPECT_NE(text->get_header_value("Content-Type").find("text/x-lpcl"), std::string::npos);
  EXPECT_EQ(text->body, c["lpcl"].get<std::string>());
  EXPECT_NE(text->get_header_value("ETag"), etag);
  Diagnostics d;
  EXPECT_EQ(lpcl::parse(text->body, "served", d).contracts.size(), 1u) << d.str();

  json diff = get_json("/v1/libraries/foo/diff?from=1.0.0&to=1.1.0");
  EXPECT_NE(diff["text"].get<std::string>().find("FOO_SPIN_TIMEOUT"), std::string::npos) << diff.dump(2);
  EXPECT_FALSE(diff["changes"].empty());
  json none = get_json("/v1/libraries/foo/diff?from=1.1.0&to=1.1.0");
  EXPECT_TRUE(none["text"].get<std::string>().empty()) << none.dump();

  // Unknown things are 404 with a hint; missing parameters are 400.
  EXPECT_EQ(get_json("/v1/libraries/foo/contracts/9.9", 404)["error"]["code"], "unknown-version");
  EXPECT_NE(get_json("/v1/libraries/foo/contracts/9.9", 404)["error"]["hint"].get<std::string>().find("1.0.0"),
            std::string::npos);
  EXPECT_EQ(get_json("/v1/libraries/bar/contracts", 404)["error"]["code"], "unknown-library");
  EXPECT_EQ(get_json("/v1/libraries/foo/diff?from=1.0.0&to=2.0", 404)["error"]["code"], "unknown-version");
  EXPECT_EQ(get_json("/v1/libraries/foo/diff?from=1.0.0", 400)["error"]["code"], "missing-parameter");
  EXPECT_EQ(get_json("/v1/jobs/job_ffff", 404)["error"]["code"], "unknown-job");
  EXPECT_EQ(get_json("/v1/libraries/foo/contracts/1.0.0?revision=x", 400)["error"]["code"], "bad-revision");

  // Same input again: the job recognises it and redoes nothing.
  job = wait_job(submit("foo", "1.1.0"));
  EXPECT_EQ(job["result"]["status"], "unchanged") << job.dump(2);

  std::string metrics = cli->Get("/metrics", auth(read_token))->body;
  EXPECT_NE(metrics.find("syspilot_http_requests_total{method=\"GET\",route=\"/v1/libraries/{lib}/contracts/{version}\",code=\"304\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("syspilot_jobs{state=\"succeeded\"} 3"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("syspilot_cache_hits_total{cache=\"input\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("syspilot_http_request_duration_seconds_bucket"), std::string::npos);
}

TEST_F(Api, ConcurrentSynthesizeJobs) {
  start([](ServiceOptions& o) { o.workers = 2; });
  std::vector<std::string> ids(4);
  std::vector<std::thread> threads;
  const char* libs[] = {"alpha", "beta", "gamma", "delta"};
  for (int i = 0; i < 4; ++i) dir_release(libs[i], "1.0.0");
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", svc->port());
      json body = {{"library", libs[i]}, {"version", "1.0.0"},
                   {"source", {{"kind", "dir"}, {"path", tmp.str(std::string("root/") + libs[i] + "-1.0.0")}}}};
      auto r = c.Post("/v1/synthesize", auth(write_token), body.dump(), "application/json");
      if (r && r->status == 202) ids[i] = json::parse(r->body)["job"]["id"];
    });
  for (auto& t : threads) t.join();
  std::vector<json> done;
  for (int i = 0; i < 4; ++i) {
    ASSERT_FALSE(ids[i].empty());
    json job = wait_job(ids[i]);
    EXPECT_EQ(job["state"], "succeeded") << job.dump(2);
    EXPECT_EQ(job["library"], libs[i]);
    done.push_back(job);
  }
  EXPECT_EQ(get_json("/v1/libraries")["libraries"].size(), 4u);
  // The pool is bounded: when any job started, at most `workers` (2) were running.
  // (Timestamps are ISO 8601 with milliseconds, so they compare as strings.)
  for (auto& a : done) {
    int running = 0;
    for (auto& b : done)
      running += b["started_at"].get<std::string>() <= a["started_at"].get<std::string>() &&
                 a["started_at"].get<std::string>() < b["finished_at"].get<std::string>();
    EXPECT_LE(running, 2) << json(done).dump(2);
  }
}

struct SlowLlm : Api {
  testsupport::FakeLlmServer llm;
  std::string draft_for(const std::string& lib, const std::string& version) {
    extract::ExtractOptions eo;
    eo.paths = {dir_release(lib, version)};
    eo.library = lib;
    synth::SynthOptions so;
    so.library = lib;
    so.version = version;
    return lpcl::format(synth::draft_offline(extract::extract(eo), so));
  }
};

TEST_F(SlowLlm, QueueFullGives429AndDeleteCancels) {
  start([](ServiceOptions& o) {
    o.workers = 1;
    o.queue_capacity = 1;
  });
  auto slow = testsupport::ScriptedReply::answer(draft_for("foo", "1.0.0"));
  slow.delay_s = 20;
  llm.fallback(slow);
  json with_llm = {{"llm", {{"url", llm.url()}, {"model", "m"}, {"api_key", "sk-secret-4711"}}}};
  std::string running = submit("foo", "1.0.0", with_llm);
  // Running and waiting for the (slow) LLM answer.
  ASSERT_TRUE(eventually([&] { return llm.request_count() >= 1; }));
  std::string queued = submit("foo", "1.1.0", with_llm);
  auto r = post("/v1/synthesize", {{"library", "foo"}, {"version", "1.2.0"},
                                   {"source", {{"kind", "dir"}, {"path", dir_release("foo", "1.2.0")}}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429);
  EXPECT_EQ(r->get_header_value("Retry-After"), "5");
  EXPECT_EQ(error_code(r), "queue-full");

  // Cancel the queued job at once, the running one cooperatively.
  auto d = cli->Delete(("/v1/jobs/" + queued).c_str(), auth(write_token));
  EXPECT_EQ(d->status, 200);
  EXPECT_EQ(json::parse(d->body)["job"]["state"], "cancelled");
  d = cli->Delete(("/v1/jobs/" + running).c_str(), auth(write_token));
  EXPECT_EQ(d->status, 202);
  json job = wait_job(running, 30);
  EXPECT_EQ(job["state"], "cancelled");
  d = cli->Delete(("/v1/jobs/" + running).c_str(), auth(write_token));
  EXPECT_EQ(d->status, 409);
  EXPECT_EQ(cli->Delete("/v1/jobs/job_abc", auth(write_token))->status, 404);

  // The API key reached the endpoint but is never shown or stored.
  EXPECT_EQ(llm.requests()[0].authorization, "Bearer sk-secret-4711");
  EXPECT_EQ(cli->Get(("/v1/jobs/" + running).c_str(), auth(read_token))->body.find("sk-secret"), std::string::npos);
  EXPECT_EQ(cli->Get("/v1/jobs", auth(read_token))->body.find("sk-secret"), std::string::npos);
  EXPECT_EQ(read_file(tmp.path() / "db.sqlite").find("sk-secret"), std::string::npos);
  EXPECT_EQ(read_file(tmp.path() / "db.sqlite-wal").find("sk-secret"), std::string::npos);
}

// A DELETE that answers 200 "cancelled" is final: the job never runs, even when a worker
// picks it up at the same moment (it was set running after the DELETE had cancelled it).
TEST_F(Api, ACancelledJobNeverRuns) {
  start([](ServiceOptions& o) { o.workers = 2; });
  std::string path = dir_release("race", "1.0.0");
  cli->set_keep_alive(true);
  std::vector<std::string> cancelled;
  // Whether a DELETE comes before or after the worker's claim is up to timing: go on until
  // 20 of them were answered 200 (and 100 submissions at most).
  for (int i = 0; i < 100 && cancelled.size() < 20; ++i) {
    std::string version = "1.0." + std::to_string(i);
    auto r = post("/v1/synthesize", {{"library", "race"}, {"version", version},
                                     {"source", {{"kind", "dir"}, {"path", path}}}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 202) << r->body;
    std::string id = json::parse(r->body)["job"]["id"];
    // At once, while an idle worker takes the job.
    auto d = cli->Delete(("/v1/jobs/" + id).c_str(), auth(write_token));
    ASSERT_TRUE(d);
    if (d->status == 200) cancelled.push_back(id);
  }
  for (auto& id : cancelled) {
    json job = wait_job(id);
    EXPECT_EQ(job["state"], "cancelled") << job.dump(2);
    EXPECT_TRUE(job["started_at"].is_null()) << job.dump(2);
    get_json("/v1/libraries/race/contracts/" + job["version"].get<std::string>(), 404);
  }
}

// The same release asked for twice at once (a client's retry) is built once: both jobs run
// side by side, and the second finds the first's contract instead of storing it again as
// revision 2.
TEST_F(Api, TheSameReleaseSubmittedTwiceAtOnceIsStoredOnce) {
  start([](ServiceOptions& o) { o.workers = 2; });
  std::string path = dir_release("twice", "1.0.0");
  for (const char* version : {"1.0.0", "1.1.0", "1.2.0"}) {
    json body = {{"library", "twice"}, {"version", version}, {"source", {{"kind", "dir"}, {"path", path}}}};
    auto a = post("/v1/synthesize", body), b = post("/v1/synthesize", body);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->status, 202) << a->body;
    ASSERT_EQ(b->status, 202) << b->body;
    json ja = wait_job(json::parse(a->body)["job"]["id"]), jb = wait_job(json::parse(b->body)["job"]["id"]);
    ASSERT_EQ(ja["state"], "succeeded") << ja.dump(2);
    ASSERT_EQ(jb["state"], "succeeded") << jb.dump(2);
    std::multiset<std::string> statuses = {ja["result"]["status"], jb["result"]["status"]};
    EXPECT_EQ(statuses, (std::multiset<std::string>{"stored", "unchanged"})) << ja.dump(2) << jb.dump(2);
    EXPECT_EQ(ja["result"]["revision"], 1);
    EXPECT_EQ(jb["result"]["revision"], 1);
  }
  for (auto& v : get_json("/v1/libraries/twice/contracts")["versions"]) EXPECT_EQ(v["revision"], 1) << v.dump();
}

// /metrics counts the LLM calls and tokens a job spent, and a rebuild of the same input
// (force) is answered from the caches: facts reused, LLM answers from the response cache.
TEST_F(SlowLlm, MetricsCountLlmCallsTokensAndCacheHits) {
  start();
  llm.fallback(testsupport::ScriptedReply::answer(draft_for("foo", "1.0.0")));
  json with_llm = {{"llm", {{"url", llm.url()}, {"model", "m"}}}};
  json job = wait_job(submit("foo", "1.0.0", with_llm));
  ASSERT_EQ(job["state"], "succeeded") << job.dump(2);
  int calls = job["result"]["llm"]["calls"];
  ASSERT_GE(calls, 1) << job.dump(2);
  EXPECT_EQ(static_cast<int>(llm.request_count()), calls);
  std::string m = cli->Get("/metrics", auth(read_token))->body;
  EXPECT_NE(m.find("syspilot_llm_calls_total " + std::to_string(calls) + "\n"), std::string::npos) << m;
  EXPECT_NE(m.find("syspilot_llm_tokens_total{kind=\"prompt\"} " + std::to_string(100 * calls) + "\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("syspilot_llm_tokens_total{kind=\"completion\"} " + std::to_string(50 * calls) + "\n"),
            std::string::npos)
      << m;

  job = wait_job(submit("foo", "1.0.0", {{"llm", with_llm["llm"]}, {"force", true}}));
  ASSERT_EQ(job["state"], "succeeded") << job.dump(2);
  EXPECT_TRUE(job["result"]["facts_cached"].get<bool>()) << job.dump(2);
  EXPECT_EQ(job["result"]["llm"]["calls"], 0) << job.dump(2);
  EXPECT_EQ(job["result"]["llm"]["cached"], calls) << job.dump(2);
  EXPECT_EQ(static_cast<int>(llm.request_count()), calls);  // nothing new reached the endpoint
  m = cli->Get("/metrics", auth(read_token))->body;
  EXPECT_NE(m.find("syspilot_llm_calls_total " + std::to_string(calls) + "\n"), std::string::npos) << m;
  EXPECT_NE(m.find("syspilot_cache_hits_total{cache=\"facts\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("syspilot_cache_hits_total{cache=\"llm\"} " + std::to_string(calls) + "\n"), std::string::npos)
      << m;
}

// POST /v1/compose reads only: a read token suffices, and --public-read opens it like a GET.
TEST_F(Api, ComposeCorpusContractsYieldsHypotheses) {
  start();
  json body = {{"libraries", {"libgomp", "openblas_pthread"}},
               {"nesting", {{{"outer", "libgomp"}, {"inner", "openblas_pthread"}}}}};
  auto r = post("/v1/compose", body, read_token);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json out = json::parse(r->body);
  ASSERT_TRUE(out["hypotheses"].is_array());
  bool nested = false;
  for (auto& h : out["hypotheses"])
    if (h["kind"] == "nested_oversubscription") {
      nested = true;
      EXPECT_EQ(h["verdict"], "unknown");  // nothing was run: a hypothesis, not a finding
      EXPECT_FALSE(h["controls"].empty()) << h.dump(2);
    }
  EXPECT_TRUE(nested) << out["hypotheses"].dump(2);
  std::string comp = out["composition"].dump();
  EXPECT_NE(comp.find("libgomp"), std::string::npos) << comp;
  EXPECT_NE(comp.find("openblas_pthread"), std::string::npos) << comp;

  // The same libraries without a relation: no nested-oversubscription hypothesis.
  r = post("/v1/compose", {{"libraries", {"libgomp", "openblas_pthread"}}}, read_token);
  ASSERT_EQ(r->status, 200) << r->body;
  for (auto& h : json::parse(r->body)["hypotheses"]) EXPECT_NE(h["kind"], "nested_oversubscription") << h.dump(2);

  // A stored contract is found before the corpus.
  ASSERT_EQ(wait_job(submit("foo", "1.1.0"))["state"], "succeeded");
  r = post("/v1/compose", {{"libraries", {"foo", "libgomp"}}, {"nesting", json::array({json::array({"libgomp", "foo"})})}}, read_token);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_NE(json::parse(r->body)["composition"].dump().find("\"foo\""), std::string::npos) << r->body;
  // Where the server keeps its files is not in the answer: the store is "store", a corpus
  // contract "corpus/...".
  EXPECT_EQ(r->body.find(tmp.str("db.sqlite")), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("store#foo@1.1.0"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("\"corpus/"), std::string::npos) << r->body;
  EXPECT_EQ(r->body.find("/corpus/"), std::string::npos) << r->body;
}

TEST_F(Api, ComposeRejectsUnknownLibrariesAndBadBodies) {
  start();
  // Any unknown name fails the request, naming it; the error has the usual shape.
  auto r = post("/v1/compose", {{"libraries", {"libgomp", "no_such_lib"}}}, read_token);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404) << r->body;
  EXPECT_EQ(error_code(r), "unknown-library");
  json e = json::parse(r->body)["error"];
  EXPECT_NE(e["message"].get<std::string>().find("no_such_lib"), std::string::npos) << r->body;
  EXPECT_FALSE(e["hint"].get<std::string>().empty());
  r = post("/v1/compose", {{"libraries", {"no_such_lib"}}}, read_token);
  EXPECT_EQ(r->status, 404);

  r = cli->Post("/v1/compose", auth(read_token), "{\"libraries\": [", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(error_code(r), "malformed-json");
  for (const json& bad : {json{{"libraries", "libgomp"}}, json{{"libraries", json::array()}}, json::object(),
                          json{{"libraries", {"libgomp"}}, {"nesting", {{{"outer", "libgomp"}}}}},
                          json{{"libraries", {"libgomp"}}, {"nesting", "libgomp>openblas"}}}) {
    r = post("/v1/compose", bad, read_token);
    EXPECT_EQ(r->status, 400) << bad.dump() << " -> " << r->body;
    EXPECT_EQ(error_code(r), "bad-request") << bad.dump();
  }
  r = post("/v1/compose", {{"libraries", {"../../etc/passwd"}}}, read_token);
  EXPECT_EQ(error_code(r), "bad-library");
  // A relation must name listed libraries.
  r = post("/v1/compose", {{"libraries", {"libgomp"}}, {"nesting", json::array({json::array({"libgomp", "openblas_pthread"})})}}, read_token);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("not listed"), std::string::npos) << r->body;
  // Oversized: 413 here too.
  r = cli->Post("/v1/compose", auth(read_token), "{\"pad\": \"" + std::string(100 << 10, 'x') + "\"}",
                "application/json");
  EXPECT_EQ(r->status, 413);

  // Auth: no token 401, a bad token 401, a read or a write token both fine.
  json ok = {{"libraries", {"libgomp"}}};
  r = cli->Post("/v1/compose", ok.dump(), "application/json");
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(error_code(r), "unauthorized");
  EXPECT_EQ(post("/v1/compose", ok, "spt_0000000000000000000000000000000000000000000000")->status, 401);
  EXPECT_EQ(post("/v1/compose", ok, write_token)->status, 200);
  EXPECT_EQ(post("/v1/compose", ok, read_token)->status, 200);
}

TEST_F(Api, PublicReadOpensComposeButNotWrites) {
  start([](ServiceOptions& o) { o.public_read = true; });
  auto r = cli->Post("/v1/compose", json{{"libraries", {"libgomp"}}}.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(cli->Post("/v1/regenerate", "{}", "application/json")->status, 401);
  EXPECT_EQ(cli->Delete("/v1/jobs/job_00")->status, 401);
  EXPECT_EQ(cli->Get("/metrics")->status, 200);
}

TEST_F(Api, RegenerateEndpoint) {
  std::string repo = make_foo_repo(tmp.path() / "root" / "foo.git");
  write_file(tmp.path() / "regen.json",
             json{{"libraries", {{{"name", "foo"}, {"feeds", {{{"kind", "git"}, {"url", repo}}}}}}}}.dump());
  start([&](ServiceOptions& o) { o.regen_config = tmp.str("regen.json"); });
  EXPECT_EQ(error_code(post("/v1/regenerate", {{"library", "nope"}})), "not-tracked");
  EXPECT_EQ(post("/v1/regenerate", json::object(), read_token)->status, 403);  // starts jobs: write scope
  EXPECT_EQ(cli->Post("/v1/regenerate", "{}", "application/json")->status, 401);
  auto r = post("/v1/regenerate", json::object());
  ASSERT_EQ(r->status, 202) << r->body;
  json jobs = json::parse(r->body)["jobs"];
  ASSERT_EQ(jobs.size(), 1u);
  json job = wait_job(jobs[0]["id"]);
  ASSERT_EQ(job["state"], "succeeded") << job.dump(2);
  EXPECT_EQ(job["result"]["releases"].size(), 2u);
  EXPECT_NE(job["result"]["changelog"].get<std::string>().find("FOO_SPIN_TIMEOUT"), std::string::npos);
  EXPECT_EQ(get_json("/v1/libraries/foo/contracts")["versions"].size(), 2u);
}

TEST_F(Api, RegenerationRunsOnItsPeriod) {
  std::string repo = make_foo_repo(tmp.path() / "root" / "foo.git");
  write_file(tmp.path() / "regen.json",
             json{{"libraries", {{{"name", "foo"}, {"feeds", {{{"kind", "git"}, {"url", repo}}}}}}}}.dump());
  start([&](ServiceOptions& o) {
    o.regen_config = tmp.str("regen.json");
    o.regen_every = std::chrono::seconds(1);
  });
  // Nobody asks: the schedule alone builds both tagged releases.
  EXPECT_TRUE(eventually([&] { return get_json("/v1/libraries")["libraries"].size() == 1; }, 60));
  EXPECT_TRUE(eventually([&] { return get_json("/v1/libraries/foo/contracts")["versions"].size() == 2; }, 60));
  json jobs = get_json("/v1/jobs")["jobs"];
  ASSERT_FALSE(jobs.empty());
  EXPECT_EQ(jobs[0]["kind"], "regenerate") << jobs.dump(2);
  // Ticks while a regeneration is still queued or running add no job: at most one at a time,
  // so each release was built once.
  int unfinished = 0;
  for (auto& j : jobs) unfinished += j["state"] == "queued" || j["state"] == "running";
  EXPECT_LE(unfinished, 1) << jobs.dump(2);
  for (auto& v : get_json("/v1/libraries/foo/contracts")["versions"]) EXPECT_EQ(v["revision"], 1) << v.dump();
}

TEST_F(Api, RegenerateWithoutConfigIsAConflict) {
  start();
  EXPECT_EQ(error_code(post("/v1/regenerate", json::object())), "no-regen-config");
}

TEST_F(Api, ServesHttpsWithASelfSignedCertificate) {
  auto tls = testsupport::make_self_signed_cert(tmp.str());
  start([&](ServiceOptions& o) {
    o.tls_cert = tls.cert;
    o.tls_key = tls.key;
  });
  httplib::SSLClient c("127.0.0.1", svc->port());
  c.set_ca_cert_path(tls.cert.c_str());
  c.enable_server_certificate_verification(true);
  auto r = c.Get("/v1/libraries", auth(read_token));
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  // Plain HTTP to the TLS port gets no answer.
  httplib::Client plain("127.0.0.1", svc->port());
  plain.set_read_timeout(3);
  auto p = plain.Get("/healthz");
  EXPECT_TRUE(!p || p->status != 200);
  // A certificate the client does not trust is refused.
  httplib::SSLClient strict("127.0.0.1", svc->port());
  strict.enable_server_certificate_verification(true);
  EXPECT_FALSE(strict.Get("/healthz"));
}

TEST(ServiceOptionsCheck, BadTlsFilesAndPortsAreReported) {
  TempDir tmp;
  write_file(tmp.path() / "cert.pem", "not a certificate");
  ServiceOptions o;
  o.db_path = tmp.str("db.sqlite");
  o.port = 0;
  o.tls_cert = tmp.str("cert.pem");
  o.tls_key = tmp.str("cert.pem");
  Diagnostics d;
  auto svc = Service::create(o, d);
  ASSERT_TRUE(svc) << d.str();
  EXPECT_FALSE(svc->start(d));
  EXPECT_NE(d.str().find("TLS"), std::string::npos);
  o.tls_key.clear();
  Diagnostics d2;
  EXPECT_FALSE(Service::create(o, d2));
}

}  // namespace
}  // namespace syspilot::service::test
