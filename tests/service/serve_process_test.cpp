// The real `syspilot serve` process: kill -9 in the middle of a job and a restart that
// resumes it, SIGTERM that shuts down gracefully, token and regen subcommands.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "extract/extract.h"
#include "lpcl/lpcl.h"
#include "store/store.h"
#include "synth/synth.h"
#include "tests/service/fixture.h"
#include "tests/support/fake_llm.h"

extern char** environ;

namespace syspilot::service::test {
namespace {

using nlohmann::json;

struct Serve : ::testing::Test {
  TempDir tmp;
  testsupport::FakeLlmServer llm;
  std::string db, token;

  void SetUp() override {
    db = tmp.str("db.sqlite");
    write_foo_release(tmp.path() / "root" / "foo-1.0.0", "1.0.0");
    ProcessResult r = run_process({SYSPILOT_BIN, "serve", "token", "create", "--scope", "write", "--db", db});
    ASSERT_TRUE(r.ok()) << r.err;
    token = r.out.substr(0, r.out.find('\n'));
    ASSERT_EQ(token.rfind("spt_", 0), 0u) << r.out;
  }
  std::vector<std::string> args() {
    return {"--db", db, "--port", "0", "--source-root", tmp.str("root"), "--work-dir", tmp.str("work"), "--grace", "1",
            "--allow-outbound", "127.0.0.1"};
  }
  std::string draft() {
    extract::ExtractOptions eo;
    eo.paths = {tmp.str("root/foo-1.0.0")};
    eo.library = "foo";
    synth::SynthOptions so;
    so.library = "foo";
    so.version = "1.0.0";
    return lpcl::format(synth::draft_offline(extract::extract(eo), so));
  }
  json job(httplib::Client& c, const std::string& id) {
    auto r = c.Get(("/v1/jobs/" + id).c_str(), {{"Authorization", "Bearer " + token}});
    return r && r->status == 200 ? json::parse(r->body)["job"] : json();
  }
  std::string submit(httplib::Client& c) {
    json body = {{"library", "foo"},
                 {"version", "1.0.0"},
                 {"source", {{"kind", "dir"}, {"path", tmp.str("root/foo-1.0.0")}}},
                 {"llm", {{"url", llm.url()}, {"model", "m"}}}};
    auto r = c.Post("/v1/synthesize", {{"Authorization", "Bearer " + token}}, body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 202) << (r ? r->body : "no response");
    return r && r->status == 202 ? json::parse(r->body)["job"]["id"].get<std::string>() : "";
  }
};

TEST_F(Serve, Kill9DuringAJobThenRestartResumesIt) {
  std::string answer = draft();
  auto slow = testsupport::ScriptedReply::answer(answer);
  slow.delay_s = 30;  // the first attempt hangs in the LLM call
  llm.script({slow});
  llm.fallback(testsupport::ScriptedReply::answer(answer));
  std::string id;
  {
    ServeProcess p(args());
    ASSERT_GT(p.port(), 0);
    httplib::Client c("127.0.0.1", p.port());
    id = submit(c);
    ASSERT_FALSE(id.empty());
    ASSERT_TRUE(eventually([&] { return job(c, id)["state"] == "running" && llm.request_count() >= 1; }, 60));
    p.kill9();
  }
  {
    store::Store st(db);
    EXPECT_TRUE(st.versions("foo").empty());  // nothing half-written
  }
  ServeProcess p(args());
  ASSERT_GT(p.port(), 0);
  httplib::Client c("127.0.0.1", p.port());
  json j;
  ASSERT_TRUE(eventually([&] {
    j = job(c, id);
    return j["state"] == "succeeded" || j["state"] == "failed";
  }, 60));
  EXPECT_EQ(j["state"], "succeeded") << j.dump(2);
  EXPECT_EQ(j["attempts"], 2);
  EXPECT_GE(llm.request_count(), 2u);
  store::Store st(db);
  ASSERT_EQ(st.versions("foo").size(), 1u);
  EXPECT_EQ(st.revisions("foo", "1.0.0").size(), 1u);
  EXPECT_EQ(p.terminate(20), 0);
}

TEST_F(Serve, SigtermStopsGracefullyAndRequeuesTheRunningJob) {
  auto slow = testsupport::ScriptedReply::answer(draft());
  slow.delay_s = 30;
  llm.fallback(slow);
  ServeProcess p(args());
  ASSERT_GT(p.port(), 0);
  httplib::Client c("127.0.0.1", p.port());
  std::string id = submit(c);
  ASSERT_TRUE(eventually([&] { return job(c, id)["state"] == "running"; }, 60));
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(p.terminate(30), 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 25);
  store::Store st(db);
  EXPECT_EQ(st.db().query_text("SELECT state FROM service_jobs WHERE id = ?1", id).value_or(""), "queued");
}

TEST_F(Serve, RegenCommandExitStatusAndChangelog) {
  std::string repo = make_foo_repo(tmp.path() / "root" / "foo.git");
  write_file(tmp.path() / "regen.json",
             json{{"store", "db.sqlite"},
                  {"source_roots", {"root"}},
                  {"changelog", "CHANGES.md"},
                  {"libraries", {{{"name", "foo"}, {"feeds", {{{"kind", "git"}, {"url", repo}}}}}}}}
                 .dump());
  ProcessResult r = run_process({SYSPILOT_BIN, "regen", "--config", tmp.str("regen.json")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 new release(s)"), std::string::npos) << r.out;
  std::string md = read_file(tmp.path() / "CHANGES.md");
  EXPECT_NE(md.find("### 1.1.0 (changes since 1.0.0)"), std::string::npos) << md;
  r = run_process({SYSPILOT_BIN, "regen", "--config", tmp.str("regen.json")});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("0 new release(s)"), std::string::npos) << r.out;
  write_file(tmp.path() / "bad.json", "{\"libraries\": [");
  r = run_process({SYSPILOT_BIN, "regen", "--config", tmp.str("bad.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
}

TEST_F(Serve, UsageErrorsExitWith2) {
  ProcessResult r = run_process({SYSPILOT_BIN, "serve", "--db", db, "--regen-every", "soon"});
  EXPECT_EQ(r.exit_code, 2);
  r = run_process({SYSPILOT_BIN, "serve", "token", "create", "--scope", "admin", "--db", db});
  EXPECT_EQ(r.exit_code, 2);
  r = run_process({SYSPILOT_BIN, "serve", "token", "list", "--db", db});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("write"), std::string::npos);
  EXPECT_EQ(r.out.find(token), std::string::npos);  // only prefixes are listed
}

}  // namespace
}  // namespace syspilot::service::test
