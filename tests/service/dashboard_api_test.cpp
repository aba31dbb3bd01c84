// What the dashboard reads, over real loopback HTTP: the page and its embedded assets with their
// security headers, /v1/whoami, sessions and analyses as the tuner stores them, a contract's
// provenance; and that every parameter is checked (ids, limits) and nothing is open without a
// token that should not be.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "service/dashboard.h"
#include "service/schema.h"
#include "service/service.h"
#include "store/store.h"
#include "tests/service/fixture.h"
#include "tuner/session.h"

namespace syspilot::service::test {
namespace {

using nlohmann::json;

struct DashboardApi : ::testing::Test {
  TempDir tmp;
  std::unique_ptr<Service> svc;
  std::string read_token, write_token;
  std::unique_ptr<httplib::Client> cli;

  std::string db() const { return tmp.str("db.sqlite"); }

  void start(bool public_read = false) {
    ServiceOptions o;
    o.db_path = db();
    o.port = 0;
    o.public_read = public_read;
    o.work_dir = tmp.str("work");
    o.shutdown_grace_s = 1;
    Diagnostics d;
    svc = Service::create(o, d);
    ASSERT_TRUE(svc) << d.str();
    ASSERT_TRUE(svc->start(d)) << d.str();
    read_token = create_token(o.db_path, Scope::Read, "reader");
    write_token = create_token(o.db_path, Scope::Write, "writer");
    cli = std::make_unique<httplib::Client>("127.0.0.1", svc->port());
  }
  void TearDown() override {
    if (svc) svc->stop();
  }
  httplib::Result get(const std::string& path, const std::string& token = "") {
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    return cli->Get(path.c_str(), h);
  }
  json get_json(const std::string& path, int expect = 200) {
    auto r = get(path, read_token);
    EXPECT_TRUE(r);
    if (!r) return nullptr;
    EXPECT_EQ(r->status, expect) << path << " -> " << r->body;
    return json::parse(r->body, nullptr, false);
  }

  // A session as `syspilot tune` writes it: a default trial, a failed one, a capped one and
  // a better one, with tune's conclusion.
  std::int64_t store_session(tuner::SessionStore& s, const std::string& options, const std::string& strategy) {
    tuner::SessionInfo info;
    info.argv = {"/bin/app", "--size", "<b>big</b>"};
    info.strategy = strategy;
    info.budget = 8;
    info.space_json = R"({"params":[{"name":"OMP_NUM_THREADS","values":["1","2"],"default":"2","kind":"env"}]})";
    info.options_json = options;
    std::int64_t id = s.create(info);
    auto trial = [&](int i, tuner::Config c, bool ok, double v, std::string failure = "") {
      tuner::Trial t;
      t.index = i;
      t.strategy = strategy;
      t.config = std::move(c);
      t.m.ok = ok;
      t.m.value = v;
      t.m.repeats = 1;
      t.m.samples = {v};
      t.m.failure = std::move(failure);
      t.runs_before = i;
      s.add_trial(id, t);
    };
    trial(0, {}, true, 2.0);
    trial(1, {{"OMP_NUM_THREADS", "3"}}, false, 0, "exit status 1");
    trial(2, {{"OMP_NUM_THREADS", "1"}}, false, 4.5, "capped at 4.5 s");
    trial(3, {{"OMP_NUM_THREADS", "1"}}, true, 1.0);
    return id;
  }
};

TEST_F(DashboardApi, ThePageAndItsAssetsCarryTheSecurityHeaders) {
  start();
  for (std::string path : {"/", "/assets/app.js", "/assets/style.css", "/assets/dom.js", "/assets/icon.svg", "/favicon.ico"}) {
    auto r = get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
    std::string csp = r->get_header_value("Content-Security-Policy");
    EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("script-src 'self';"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
    EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(r->get_header_value("X-Frame-Options"), "DENY");
    EXPECT_FALSE(r->get_header_value("ETag").empty());
  }
  auto page = get("/");
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  // No inline script: every <script> names a file of ours.
  size_t pos = 0;
  int scripts = 0;
  while ((pos = page->body.find("<script", pos)) != std::string::npos) {
    size_t close = page->body.find('>', pos);
    EXPECT_NE(page->body.substr(pos, close - pos).find("src=\"/assets/"), std::string::npos);
    EXPECT_EQ(page->body.compare(close + 1, 9, "</script>"), 0);
    pos = close;
    ++scripts;
  }
  EXPECT_GE(scripts, 4);
  EXPECT_EQ(page->body.find("http://"), std::string::npos);
  EXPECT_EQ(page->body.find("https://"), std::string::npos);
  // The API's answers carry the policy too.
  EXPECT_FALSE(get("/healthz")->get_header_value("Content-Security-Policy").empty());
  // An ETag the client holds gives 304.
  httplib::Headers h = {{"If-None-Match", page->get_header_value("ETag")}};
  EXPECT_EQ(cli->Get("/", h)->status, 304);
}

TEST_F(DashboardApi, AssetsAreOnlyTheEmbeddedFiles) {
  start();
  for (std::string path : {"/assets/missing.js", "/assets/..%2Fserver.cpp", "/assets/%2e%2e", "/assets/app.js%00.png",
                           "/assets/", "/index.html", "/assets/app.js/x"}) {
    auto r = get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path << " -> " << r->body;
  }
  // Every embedded file is served with its own type; no asset refers to anything outside.
  for (std::string name : {"index.html", "app.js", "dom.js", "lpcl.js", "plot.js", "style.css", "icon.svg"}) {
    const Asset* a = find_asset(name);
    ASSERT_NE(a, nullptr) << name;
    EXPECT_FALSE(a->body.empty());
    // The SVG namespace is a name, not an address that is fetched.
    std::string body(a->body);
    for (size_t at; (at = body.find("http://www.w3.org/2000/svg")) != std::string::npos;) body.erase(at, 26);
    for (const char* outside : {"http://", "https://", "//cdn", "@import", "innerHTML", "outerHTML",
                                "insertAdjacentHTML", "document.write", "eval(", "localStorage"})
      EXPECT_EQ(body.find(outside), std::string::npos) << name << " holds " << outside;
  }
}

TEST_F(DashboardApi, WhoamiTellsTheScopeAndRefusesABadToken) {
  start();
  auto anon = json::parse(get("/v1/whoami")->body);
  EXPECT_EQ(anon["public_read"], false);
  EXPECT_TRUE(anon["scope"].is_null());
  EXPECT_EQ(json::parse(get("/v1/whoami", read_token)->body)["scope"], "read");
  EXPECT_EQ(json::parse(get("/v1/whoami", write_token)->body)["scope"], "write");
  auto bad = get("/v1/whoami", "spt_0000000000000000000000000000000000000000000000000");
  EXPECT_EQ(bad->status, 401);
  // Without --public-read the data needs a token; the page does not.
  EXPECT_EQ(get("/v1/sessions")->status, 401);
  EXPECT_EQ(get("/v1/analyses")->status, 401);
  EXPECT_EQ(get("/v1/sessions/1")->status, 401);
  EXPECT_EQ(get("/")->status, 200);
}

TEST_F(DashboardApi, PublicReadOpensReadsNotWrites) {
  start(true);
  EXPECT_EQ(json::parse(get("/v1/whoami")->body)["public_read"], true);
  EXPECT_EQ(get("/v1/sessions")->status, 200);
  EXPECT_EQ(cli->Post("/v1/synthesize", "{}", "application/json")->status, 401);
}

TEST_F(DashboardApi, SessionsAsTheTunerStoresThem) {
  tuner::SessionStore sessions(db());
  std::int64_t analysis = sessions.add_analysis(
      {"/bin/app"}, "tune",
      R"({"application":"/bin/app","contracts":[{"name":"libgomp"}],"relations":[],)"
      R"("hypotheses":[{"id":"h1","verdict":"confirmed"},{"id":"h2","verdict":"refuted"}],"profiled":true})");
  const std::string group = R"("compare":{"group":"g1","strategies":["syspilot","random"]})";
  std::int64_t a = store_session(sessions,
                                 R"({"machine":{"host":"node1","ncpus":16},"analysis":)" + std::to_string(analysis) +
                                     "," + group + "}",
                                 "syspilot");
  std::int64_t b = store_session(sessions, "{" + group + "}", "random");
  std::int64_t lone = store_session(sessions, "{}", "grid");
  sessions.finish(a, "finished");
  sessions.set_result(a, R"({"verdict":"configuration","config":{"OMP_NUM_THREADS":"1"},"speedup":1.9,)"
                         R"("speedup_spread":0.05,"speedup_basis":"fresh re-measurement","minimise":null})");
  start();

  json list = get_json("/v1/sessions")["sessions"];
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["id"], lone);  // newest first
  json first = list[2];
  EXPECT_EQ(first["id"], a);
  EXPECT_EQ(first["machine"]["host"], "node1");
  EXPECT_EQ(first["speedup"], 1.9);  // the re-measured one
  EXPECT_EQ(first["trials"], 4);
  EXPECT_EQ(first["failed"], 1);
  EXPECT_EQ(first["capped"], 1);
  EXPECT_EQ(first["status"], "finished");
  EXPECT_EQ(first["analysis"], analysis);
  EXPECT_EQ(list[1]["speedup"], 2.0);  // from the trials while tune has not concluded
  EXPECT_EQ(get_json("/v1/sessions?limit=1")["sessions"].size(), 1u);

  json s = get_json("/v1/sessions/" + std::to_string(a))["session"];
  EXPECT_EQ(s["args"][1], "<b>big</b>");
  EXPECT_EQ(s["chosen"]["config"]["OMP_NUM_THREADS"], "1");
  EXPECT_EQ(s["chosen"]["export"], json::array({"export OMP_NUM_THREADS=1"}));
  EXPECT_EQ(s["chosen"]["speedup"], 1.9);
  EXPECT_EQ(s["trials"][1]["ok"], false);
  EXPECT_EQ(s["trials"][2]["capped"], true);
  ASSERT_EQ(s["compared"].size(), 1u);
  EXPECT_EQ(s["compared"][0]["id"], b);
  EXPECT_EQ(s["compared"][0]["trials"].size(), 4u);
  EXPECT_TRUE(get_json("/v1/sessions/" + std::to_string(lone))["session"]["compared"].empty());

  json an = get_json("/v1/analyses")["analyses"];
  ASSERT_EQ(an.size(), 1u);
  EXPECT_EQ(an[0]["summary"]["confirmed"], 1);
  EXPECT_EQ(an[0]["summary"]["refuted"], 1);
  json one = get_json("/v1/analyses/" + std::to_string(analysis))["analysis"];
  EXPECT_EQ(one["document"]["hypotheses"][0]["verdict"], "confirmed");
  EXPECT_EQ(one["sessions"], json::array({a}));
}

TEST_F(DashboardApi, IdsAndLimitsAreChecked) {
  start();
  for (std::string id : {"0", "-1", "1e3", "01", "abc", "99999999999999999999", "%20", "1%00", "9223372036854775807"})
    for (std::string base : {"/v1/sessions/", "/v1/analyses/"}) {
      auto r = get(base + id, read_token);
      ASSERT_TRUE(r) << base << id;
      EXPECT_EQ(r->status, 404) << base << id << " -> " << r->body;
      EXPECT_NE(r->body.find("\"code\""), std::string::npos);
    }
  for (std::string limit : {"0", "-5", "abc", "1001", "99999999999999999999999"})
    EXPECT_EQ(get("/v1/sessions?limit=" + limit, read_token)->status, 400) << limit;
  EXPECT_EQ(get("/v1/analyses?limit=1000", read_token)->status, 200);
  EXPECT_EQ(get("/v1/libraries/-lib/contracts/1/provenance", read_token)->status, 400);
  EXPECT_EQ(get("/v1/libraries/nolib/contracts/1.0/provenance", read_token)->status, 404);
  // Still serving.
  EXPECT_EQ(get("/healthz")->status, 200);
}

TEST_F(DashboardApi, ProvenanceFindsTheFactsAtEachReference) {
  {
    store::Store st = open_store(db());
    store::ContractRecord rec;
    rec.library = "foo";
    rec.version = "1.0";
    rec.lpcl = "contract foo \"1.0\" {\n  control FOO_THREADS : env int doc \"Set FOO_THREADS <script>x</script>.\" "
               "@ \"foo.c:3\" origin extracted;\n}\n";
    rec.json = R"({"controls":[{"name":"FOO_THREADS","doc":"Set FOO_THREADS <script>x</script>.",)"
               R"("provenance":{"refs":["foo.c:3"],"origin":"extracted"}}]})";
    rec.facts.push_back({"", R"({"env_vars":[{"file":"src/foo.c","line":3,"name":"FOO_THREADS","function":"foo_init"},)"
                             R"({"file":"src/foo.c","line":9,"name":"OTHER"}],)"
                             R"("doc_mentions":[{"file":"README","line":2,"name":"FOO_THREADS",)"
                             R"("sentence":"Set FOO_THREADS <script>x</script>."}]})",
                         "dir:/src/foo"});
    st.put_contract(rec);
  }
  start();
  json p = get_json("/v1/libraries/foo/contracts/1.0/provenance");
  ASSERT_TRUE(p["refs"].contains("foo.c:3")) << p.dump();
  EXPECT_EQ(p["refs"]["foo.c:3"][0]["function"], "foo_init");
  EXPECT_EQ(p["refs"]["foo.c:3"][0]["source"], "dir:/src/foo");
  EXPECT_EQ(p["refs"].size(), 1u);  // line 9 is cited by nothing
  EXPECT_EQ(p["docs"]["Set FOO_THREADS <script>x</script>."][0]["file"], "README");
  EXPECT_EQ(p["review"], "unreviewed");
  json c = get_json("/v1/libraries/foo/contracts/1.0");
  EXPECT_EQ(c["review"], "unreviewed");
  EXPECT_EQ(get_json("/v1/libraries/foo/contracts")["versions"][0]["review"], "unreviewed");
}

}  // namespace
}  // namespace syspilot::service::test
