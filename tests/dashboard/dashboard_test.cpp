// The dashboard in Debian's headless Chromium against a live `syspilot serve` on loopback. The
// store is filled by real runs: `syspilot tune` and `syspilot analyze` of the example, a
// synthesis from the corpus' facts with its reviewed overlay, a regeneration of a small library
// with two releases whose README holds markup, and a library whose stored name is markup.
// Each page is checked in its DOM against what the commands printed; a screenshot of each is
// written to dashboard-screenshots/ (CI keeps it); any request outside the server, any script
// error and anything the Content-Security-Policy refuses fails the test.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "service/process.h"
#include "store/store.h"
#include "tests/service/fixture.h"
#include "tests/support/browser.h"
#include "tuner/session.h"

namespace syspilot::dashboard::test {
namespace {

using nlohmann::json;
using service::test::eventually;
using service::test::ServeProcess;
using service::test::TempDir;
using service::test::write_file;
namespace fs = std::filesystem;

// Markup where a library's name, a doc sentence and a model's name are shown: rendered as
// text it is harmless; interpreted, it marks the page.
const std::string kHostileName = "<img src=x onerror=\"document.body.dataset.pwned='name'\">";
const std::string kHostileModel = "<script>document.body.dataset.pwned='model'</script>";
const std::string kHostileDoc =
    "<img src=x onerror=\"document.body.dataset.pwned='img'\"><script>document.body.dataset.pwned='script'</script>";

struct World {
  TempDir tmp;
  std::string db, read_token, write_token, skip, error;
  json session;       // `tune --json`: the session as stored, with tune's result
  json analysis;      // `analyze --json`
  std::int64_t analysis_id = 0;
  std::unique_ptr<ServeProcess> open_server;    // --public-read
  std::unique_ptr<ServeProcess> closed_server;  // tokens only; synthesis jobs under a source root
  std::unique_ptr<testsupport::RecordingProxy> proxy;
  std::unique_ptr<testsupport::Browser> browser;
  std::string screenshots;
};
World* world = nullptr;

service::ProcessResult syspilot(std::vector<std::string> args, double timeout_s = 120) {
  args.insert(args.begin(), SYSPILOT_BIN);
  service::ProcessOptions o;
  o.timeout_s = timeout_s;
  // The offline drafter, whatever the machine running the tests has configured.
  o.env_extra = {{"SYSPILOT_LLM_URL", ""}, {"SYSPILOT_LLM_MODEL", ""}, {"SYSPILOT_LLM_API_KEY", ""}};
  return service::run_process(args, o);
}

// Fills the store as a user's runs would; the first failure is the suite's error.
std::string fill_store(World& w) {
  const std::string example = SYSPILOT_EXAMPLE;
  auto r = syspilot({"tune", "--db", w.db, "--budget", "8", "--verify", "2", "--json", "--", example}, 180);
  if (!r.ok()) return "syspilot tune failed: " + r.err;
  w.session = json::parse(r.out, nullptr, false);
  if (!w.session.is_object()) return "syspilot tune --json printed no JSON: " + r.out;
  r = syspilot({"analyze", "--db", w.db, "--json", "-q", "--", example}, 120);
  if (!r.ok()) return "syspilot analyze failed: " + r.err;
  w.analysis = json::parse(r.out, nullptr, false);
  if (!w.analysis.is_object()) return "syspilot analyze --json printed no JSON";
  // A contract with facts and a reviewer's statements, as scripts/regen-corpus.sh makes it.
  const std::string src = SYSPILOT_SOURCE_TREE;
  r = syspilot({"synth", src + "/corpus/facts/openblas_pthread.json", "--lib", "openblas_pthread", "--lib-version",
                "0.3.21", "--overlay", src + "/corpus/overlays/openblas_pthread.lpcl", "--db", w.db, "-q"});
  if (!r.ok()) return "syspilot synth failed: " + r.err;
  // Two releases of a small library, regenerated from a folder feed; the second adds a knob.
  fs::path rel = w.tmp.path() / "releases";
  for (std::string v : {"1.0", "1.1"}) {
    std::string c = "#include <stdlib.h>\n#include <pthread.h>\nstatic void* work(void* a) { return a; }\n"
                    "int evil_start(void) {\n  const char* s = getenv(\"EVIL_NUM_THREADS\");\n"
                    "  int n = s ? atoi(s) : 4;\n  pthread_t t[64];\n"
                    "  for (int i = 0; i < n && i < 64; ++i) pthread_create(&t[i], 0, work, 0);\n  return n;\n}\n";
    if (v == "1.1") c += "int evil_spin(void) { const char* s = getenv(\"EVIL_SPIN_US\"); return s ? atoi(s) : 100; }\n";
    write_file(rel / ("evillib-" + v) / "pool.c", c);
    write_file(rel / ("evillib-" + v) / "README.md",
               "# evillib\n\nSet EVIL_NUM_THREADS to " + kHostileDoc + " the number of worker threads.\n");
  }
  json cfg = {{"store", w.db},
              {"source_roots", {rel.string()}},
              {"libraries", {{{"name", "evillib"},
                              {"feeds", {{{"kind", "dir"}, {"path", rel.string()}, {"pattern", "^evillib-([0-9.]+)$"}}}}}}}};
  write_file(w.tmp.path() / "regen.json", cfg.dump());
  r = syspilot({"regen", "--config", w.tmp.str("regen.json")});
  if (!r.ok()) return "syspilot regen failed: " + r.out + r.err;
  // A name and a model no command would write, but the store accepts: the pages must show
  // them as text.
  {
    store::Store st(w.db);
    store::ContractRecord rec;
    rec.library = kHostileName;
    rec.version = "1.0";
    rec.lpcl = "contract hostile \"1.0\" {\n}\n";
    rec.drafter = store::Drafter::Llm;
    rec.model = kHostileModel;
    st.put_contract(rec);
  }
  for (auto [scope, out] : {std::pair{"read", &w.read_token}, std::pair{"write", &w.write_token}}) {
    r = syspilot({"serve", "token", "create", "--scope", scope, "--db", w.db});
    if (!r.ok()) return "token create failed: " + r.err;
    *out = r.out.substr(0, r.out.find('\n'));
  }
  return "";
}

// A successful trial of one run, as `syspilot tune` stores it.
void add_trial(tuner::SessionStore& sessions, std::int64_t id, int index, const std::string& strategy,
               const tuner::Config& config, double value) {
  tuner::Trial t;
  t.index = index;
  t.strategy = strategy;
  t.config = config;
  t.m.ok = true;
  t.m.value = value;
  t.m.repeats = 1;
  t.m.samples = {value};
  t.runs_before = index;
  sessions.add_trial(id, t);
}

class Dashboard : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    world = new World();
    World& w = *world;
    std::string chromium = testsupport::find_chromium();
    if (chromium.empty()) {
      w.skip = "chromium is not installed (scripts/setup.sh installs Debian's chromium)";
      return;
    }
    const char* dir = std::getenv("SYSPILOT_SCREENSHOT_DIR");
    w.screenshots = dir && *dir ? dir : SYSPILOT_SCREENSHOTS;
    fs::create_directories(w.screenshots);
    w.db = w.tmp.str("store.db");
    auto start = std::chrono::steady_clock::now();
    try {
      w.error = fill_store(w);
    } catch (const std::exception& e) {
      w.error = std::string("filling the store: ") + e.what();
    }
    if (!w.error.empty()) return;
    fs::create_directories(w.tmp.path() / "sources");
    w.open_server = std::make_unique<ServeProcess>(
        std::vector<std::string>{"--db", w.db, "--port", "0", "--public-read", "--grace", "1"});
    w.closed_server = std::make_unique<ServeProcess>(
        std::vector<std::string>{"--db", w.db, "--port", "0", "--grace", "1", "--source-root", w.tmp.str("sources"),
                                 "--work-dir", w.tmp.str("work")});
    if (w.open_server->port() <= 0 || w.closed_server->port() <= 0) {
      w.error = "syspilot serve did not start";
      return;
    }
    w.proxy = std::make_unique<testsupport::RecordingProxy>();
    w.browser = testsupport::Browser::launch(chromium, w.tmp.str("profile"), w.proxy->port(), w.error, 1280, 900);
    std::cerr << "dashboard: store filled and browser started in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
  }
  static void TearDownTestSuite() {
    // Chromium's own background checks (no page's request) went to the refusing proxy.
    if (world->proxy)
      for (const auto& line : world->proxy->seen()) std::cerr << "dashboard: the browser itself tried: " << line << "\n";
    delete world;
    world = nullptr;
  }

  void SetUp() override {
    if (!world->skip.empty()) GTEST_SKIP() << world->skip;
    ASSERT_TRUE(world->error.empty()) << world->error;
    ASSERT_TRUE(world->browser);
    world->browser->clear();
  }
  void TearDown() override {
    if (!world->skip.empty() || !world->browser) return;
    // The page asked for nothing but the server, and reported no error (an inline script or
    // an outside load the Content-Security-Policy refused included).
    for (const auto& url : world->browser->requests())
      EXPECT_TRUE(url.rfind(origin(*world->open_server), 0) == 0 || url.rfind(origin(*world->closed_server), 0) == 0 ||
                  url.rfind("about:", 0) == 0)
          << "a request outside the server: " << url;
    for (const auto& p : world->browser->problems()) {
      bool expected = false;
      for (const auto& e : expected_problems) expected |= p.find(e) != std::string::npos;
      EXPECT_TRUE(expected) << "the page reported: " << p;
    }
    EXPECT_TRUE(eval("document.body.dataset.pwned === undefined").get<bool>()) << "markup from the store ran";
  }

  static std::string origin(const ServeProcess& s) { return "http://127.0.0.1:" + std::to_string(s.port()) + "/"; }
  testsupport::Browser& b() { return *world->browser; }
  json eval(const std::string& js) { return b().eval(js); }
  static std::string q(const std::string& s) { return json(s).dump(); }  // a JS string literal

  // Opens `#/route` on a server and waits for the page it names to be rendered.
  void open(const std::string& route, const std::string& page, const ServeProcess* server = nullptr) {
    const ServeProcess& s = server ? *server : *world->open_server;
    ASSERT_TRUE(b().load(origin(s) + "#/" + route)) << route;
    ASSERT_TRUE(b().wait_for("document.body.dataset.state === 'ready' && document.body.dataset.page === " + q(page)))
        << route << ": page " << eval("document.body.dataset.page + ' ' + document.getElementById('main').textContent");
  }
  std::string text(const std::string& selector) {
    return eval("(document.querySelector(" + q(selector) + ") || {textContent: ''}).textContent").get<std::string>();
  }
  int count(const std::string& selector) {
    return eval("document.querySelectorAll(" + q(selector) + ").length").get<int>();
  }
  void screenshot(const std::string& name) {
    std::string path = world->screenshots + "/" + name + ".png";
    EXPECT_TRUE(b().screenshot(path)) << path;
  }
  // Keeps `token` (or none) for the server's origin, as the token form would.
  void use_token(const ServeProcess& server, const std::string& token) {
    ASSERT_TRUE(b().load(origin(server) + "assets/icon.svg"));
    eval(token.empty() ? "sessionStorage.removeItem('syspilot.token')"
                       : "sessionStorage.setItem('syspilot.token', " + q(token) + ")");
  }
  std::vector<std::string> expected_problems;
};

TEST_F(Dashboard, LibrariesShowVersionsDrafterAndDateAndAHostileNameAsText) {
  open("", "libraries");
  std::string t = text("table.libraries");
  for (const char* want : {"openblas_pthread", "0.3.21", "evillib", "1.0", "1.1", "offline", "converged", "UTC"})
    EXPECT_NE(t.find(want), std::string::npos) << want << " not in: " << t;
  EXPECT_NE(t.find(kHostileName), std::string::npos) << t;
  EXPECT_EQ(count("main img, main script"), 0);
  screenshot("libraries");
}

TEST_F(Dashboard, LibraryWithAHostileModelShowsItAsText) {
  // The model's name comes from an LLM endpoint's configuration: shown on the versions list.
  open("", "libraries");
  EXPECT_NE(text("table.libraries").find(kHostileModel), std::string::npos);
  EXPECT_EQ(count("main script"), 0);
}

TEST_F(Dashboard, ContractLinksEveryControlToItsProvenanceAndMarksManualStatements) {
  open("contract/openblas_pthread/0.3.21", "contract");
  EXPECT_GT(count(".lpcl .line"), 20);
  EXPECT_GT(count(".lpcl .line.manual"), 0) << "the overlay's statements are origin manual";
  EXPECT_GT(count(".lpcl .tok-kw"), 10);
  EXPECT_GT(count("table.controls tr.manual"), 0);
  // Every control of the contract has its provenance: references or a doc sentence.
  EXPECT_GT(count("table.controls tbody tr"), 5);
  EXPECT_EQ(eval("[...document.querySelectorAll('table.controls tbody tr')].filter(r => !r.querySelector('td.refs "
                 "button')).length")
                .get<int>(),
            0);
  // Choosing a reference shows the fact found there in the source snapshot.
  eval("[...document.querySelectorAll('.lpcl button.tok-ref')].find(b => b.textContent === '\"init.c:820\"').click()");
  std::string panel = text("#provenance");
  EXPECT_NE(panel.find("init.c:820"), std::string::npos) << panel;
  EXPECT_NE(panel.find("OPENBLAS_NUM_THREADS"), std::string::npos) << panel;
  EXPECT_NE(panel.find("env vars"), std::string::npos) << panel;
  screenshot("contract");
}

TEST_F(Dashboard, AHostileDocSentenceIsShownAsText) {
  open("contract/evillib/1.1", "contract");
  EXPECT_EQ(count("main img, main script"), 0);
  std::string lpcl = text(".lpcl");
  EXPECT_NE(lpcl.find("<script>document.body.dataset.pwned"), std::string::npos) << lpcl;
  eval("document.querySelector('.lpcl button.tok-doc').click()");
  std::string panel = text("#provenance");
  EXPECT_NE(panel.find(kHostileDoc), std::string::npos) << panel;
  EXPECT_NE(panel.find("README.md:3"), std::string::npos) << panel;
  EXPECT_EQ(count("main img, main script"), 0);
}

TEST_F(Dashboard, DiffShowsTheSemanticChangesThenTheText) {
  open("diff/evillib/1.0/1.1", "diff");
  std::string changes = text("table.changes");
  EXPECT_NE(changes.find("EVIL_SPIN_US"), std::string::npos) << changes;
  EXPECT_NE(changes.find("added"), std::string::npos) << changes;
  EXPECT_GT(count(".textdiff .add"), 0);
  // Meaning first: the table precedes the text diff.
  EXPECT_TRUE(eval("!!(document.querySelector('table.changes').compareDocumentPosition("
                   "document.querySelector('.textdiff')) & Node.DOCUMENT_POSITION_FOLLOWING)")
                  .get<bool>());
  screenshot("diff");
}

TEST_F(Dashboard, SessionListShowsProgramMachineBudgetSpeedupAndState) {
  open("sessions", "sessions");
  std::string t = text("table.sessions");
  const json& s = world->session;
  EXPECT_NE(t.find("nested_blas"), std::string::npos) << t;
  EXPECT_NE(t.find(s["machine"]["host"].get<std::string>()), std::string::npos) << t;
  EXPECT_NE(t.find("finished"), std::string::npos) << t;
  EXPECT_NE(t.find("×"), std::string::npos) << t;
  screenshot("sessions");
}

TEST_F(Dashboard, SessionShowsTheChosenConfigurationThePlotAndEveryTrial) {
  const json& s = world->session;
  open("session/" + std::to_string(s["id"].get<int>()), "session");
  // The configuration tune concluded on, as the lines `export` would set.
  const json& result = s["result"];
  ASSERT_TRUE(result.is_object()) << s.dump();
  std::string expected;
  for (auto& [k, v] : result["config"].items()) expected += (expected.empty() ? "" : "\n") + ("export " + k + "=" + v.get<std::string>());
  if (expected.empty()) expected = "# the defaults: nothing to set";
  EXPECT_EQ(text("#export"), expected);
  if (result["speedup"].is_number()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f×", result["speedup"].get<double>());
    EXPECT_EQ(text("#speedup").rfind(buf, 0), 0u) << text("#speedup") << " vs " << buf;
  }
  // Every trial is a row and a mark on the plot; failed and capped ones are marked.
  int ok = 0, failed = 0, capped = 0;
  for (const auto& t : s["trials"]) (t["ok"].get<bool>() ? ok : t["capped"].get<bool>() ? capped : failed)++;
  EXPECT_EQ(count("table.trials tbody tr"), static_cast<int>(s["trials"].size()));
  EXPECT_EQ(count("table.trials tbody tr.failed"), failed);
  EXPECT_EQ(count("table.trials tbody tr.capped"), capped);
  EXPECT_EQ(count("#plot svg.plot circle.trial"), ok);
  EXPECT_EQ(count("#plot svg.plot path.best"), 1);
  EXPECT_EQ(count("#plot svg.plot .failed"), failed);
  EXPECT_EQ(count("#plot svg.plot .capped"), capped);
  screenshot("session");
}

TEST_F(Dashboard, ARunningSessionUpdatesWhileWatched) {
  tuner::SessionStore sessions(world->db);
  tuner::SessionInfo info;
  info.argv = {"/usr/bin/true"};
  info.strategy = "random";
  info.budget = 5;
  info.space_json = R"({"params":[{"name":"OMP_NUM_THREADS","values":["1","2"],"default":"2","kind":"env"}]})";
  std::int64_t id = sessions.create(info);
  add_trial(sessions, id, 0, "random", {}, 1.0);
  open("session/" + std::to_string(id), "session");
  EXPECT_EQ(count("table.trials tbody tr"), 1);
  EXPECT_GT(count(".live"), 0);
  add_trial(sessions, id, 1, "random", {{"OMP_NUM_THREADS", "1"}}, 0.5);
  EXPECT_TRUE(b().wait_for("document.querySelectorAll('table.trials tbody tr').length === 2", 10))
      << "the page did not show the new trial";
  EXPECT_TRUE(b().wait_for("document.getElementById('export').textContent === 'export OMP_NUM_THREADS=1'", 10));
  sessions.finish(id, "finished");
  EXPECT_TRUE(b().wait_for("document.querySelectorAll('.live').length === 0 && document.querySelector('h1 .badge')"
                           ".textContent === 'finished'", 10));
}

TEST_F(Dashboard, ComparedStrategiesArePlottedSideBySide) {
  // The sessions of one `tune --compare` share a group in their options (cli/tune_cmd.cpp).
  tuner::SessionStore sessions(world->db);
  std::vector<std::int64_t> ids;
  for (std::string strategy : {"syspilot", "random", "optuna-tpe"}) {
    tuner::SessionInfo info;
    info.argv = {"/usr/bin/true"};
    info.strategy = strategy;
    info.budget = 4;
    info.space_json = R"({"params":[{"name":"OMP_NUM_THREADS","values":["1","2"],"default":"2","kind":"env"}]})";
    info.options_json = R"({"compare":{"group":"test-group","strategies":["syspilot","random","optuna-tpe"]}})";
    ids.push_back(sessions.create(info));
    for (int i = 0; i < 3; ++i)
      add_trial(sessions, ids.back(), i, strategy,
                i == 0 ? tuner::Config{} : tuner::Config{{"OMP_NUM_THREADS", i == 1 ? "1" : "2"}},
                1.0 - 0.1 * i - 0.01 * static_cast<double>(ids.size()));
    sessions.finish(ids.back(), "finished");
  }
  open("session/" + std::to_string(ids[1]), "session");
  EXPECT_EQ(count("#plot svg.plot path.best"), 3);
  EXPECT_EQ(count("#plot svg.plot circle.trial"), 9);
  std::string legend = text("#plot .legend");
  for (const char* s : {"random", "syspilot", "optuna-tpe"}) EXPECT_NE(legend.find(s), std::string::npos) << legend;
  open("sessions", "sessions");
  EXPECT_NE(text("table.sessions").find("(compared)"), std::string::npos);
}

TEST_F(Dashboard, AnalysisShowsEachVerdictAndTheNumbersThatDecidedIt) {
  // The analysis `syspilot analyze` stored (the newest; tune stored its own before).
  httplib::Client cli("127.0.0.1", world->open_server->port());
  auto r = cli.Get("/v1/analyses");
  ASSERT_TRUE(r && r->status == 200);
  json list = json::parse(r->body)["analyses"];
  ASSERT_GE(list.size(), 2u);
  EXPECT_EQ(list[0]["origin"], "analyze");
  EXPECT_EQ(list[1]["origin"], "tune");
  open("analysis/" + std::to_string(list[0]["id"].get<int>()), "analysis");
  json shown = eval("[...document.querySelectorAll('article.hypothesis')].map(a => [a.querySelector('p code')"
                    ".textContent, a.dataset.verdict])");
  json expected = json::array();
  for (const auto& h : world->analysis["hypotheses"]) expected.push_back({h["id"], h["verdict"]});
  // Confirmed first, then undecided, then refuted; the same set as the command printed.
  auto sorted = [](json a) {
    std::vector<std::string> v;
    for (auto& x : a) v.push_back(x[0].get<std::string>() + "=" + x[1].get<std::string>());
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted(shown), sorted(expected));
  ASSERT_FALSE(shown.empty());
  const auto& hs = world->analysis["hypotheses"];
  if (std::any_of(hs.begin(), hs.end(), [](const json& h) { return h["verdict"] == "confirmed"; }))
    EXPECT_EQ(shown[0][1], "confirmed");
  // Each decided hypothesis shows its signals, values and thresholds.
  for (const auto& h : world->analysis["hypotheses"]) {
    if (h["evidence"].empty()) continue;
    std::string card = eval("[...document.querySelectorAll('article.hypothesis')].find(a => a.querySelector('p code')"
                            ".textContent === " + q(h["id"].get<std::string>()) + ").textContent")
                           .get<std::string>();
    for (const auto& e : h["evidence"]) {
      EXPECT_NE(card.find(e["signal"].get<std::string>()), std::string::npos) << h["id"] << card;
      EXPECT_NE(card.find(e["op"].get<std::string>()), std::string::npos) << h["id"];
    }
    if (!h["reason"].get<std::string>().empty()) EXPECT_NE(card.find(h["reason"].get<std::string>()), std::string::npos);
  }
  screenshot("analysis");
}

TEST_F(Dashboard, WithoutPublicReadATokenIsAskedAndKeptForTheBrowserSessionOnly) {
  // A wrong token is refused by the server (its 401s are expected here).
  expected_problems = {"status of 401"};
  const ServeProcess& closed = *world->closed_server;
  use_token(closed, "");
  open("", "token", &closed);
  eval("document.getElementById('token').value = 'spt_0000000000000000000000000000000000000000000000000';"
       "document.getElementById('token-form').requestSubmit()");
  ASSERT_TRUE(b().wait_for("document.querySelector('#token-form .error')"));
  eval("document.getElementById('token').value = " + q(world->read_token) +
       "; document.getElementById('token-form').requestSubmit()");
  ASSERT_TRUE(b().wait_for("document.body.dataset.page === 'libraries' && document.body.dataset.state === 'ready'"));
  EXPECT_EQ(eval("sessionStorage.getItem('syspilot.token')"), world->read_token);
  EXPECT_EQ(eval("localStorage.length"), 0);
  EXPECT_EQ(eval("location.href").get<std::string>().find("spt_"), std::string::npos);
  // A read token sees jobs, not the form that starts one.
  open("jobs", "jobs", &closed);
  EXPECT_EQ(count("#job-form"), 0);
  EXPECT_EQ(count("#write-note"), 1);
  screenshot("token");
}

TEST_F(Dashboard, AWriteTokenStartsASynthesisAndWatchesItsJob) {
  const ServeProcess& closed = *world->closed_server;
  fs::path src = world->tmp.path() / "sources" / "tiny-1.0";
  write_file(src / "tiny.c", "#include <stdlib.h>\nint tiny(void) { return atoi(getenv(\"TINY_THREADS\")); }\n");
  use_token(closed, world->write_token);
  open("jobs", "jobs", &closed);
  ASSERT_EQ(count("#job-form"), 1);
  eval("const f = document.getElementById('job-form');"
       "f.elements.library.value = 'tiny'; f.elements.version.value = '1.0'; f.elements.kind.value = 'dir';"
       "f.elements.where.value = " + q(src.string()) + "; f.requestSubmit()");
  ASSERT_TRUE(b().wait_for("document.body.dataset.page === 'job'", 15)) << text("main");
  EXPECT_TRUE(b().wait_for("document.querySelector('h1 .badge') && document.querySelector('h1 .badge').textContent "
                           "=== 'succeeded'", 60))
      << text("main");
  EXPECT_GT(text("#log").size(), 0u);
  screenshot("job");
  EXPECT_EQ(eval("localStorage.length"), 0);
}

}  // namespace
}  // namespace syspilot::dashboard::test
