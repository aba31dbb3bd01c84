// Outbound requests (SSRF): the default-denied ranges, the allow-list, URL parsing without
// regex, redirects checked hop by hop for tarballs and refused by git, the LLM endpoint,
// overlong values and credentials in URLs, over real loopback sockets and the real service.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "service/outbound.h"
#include "service/regen.h"
#include "service/schema.h"
#include "service/service.h"
#include "service/sources.h"
#include "store/store.h"
#include "tests/service/fixture.h"
#include "tests/support/fake_llm.h"

namespace syspilot::service::test {
namespace {

using nlohmann::json;

std::string first_code(const Diagnostics& d) { return d.items().empty() ? "" : d.items().front().code; }

// A TCP listener that never accepts: whether anything connected to it is visible as a
// connection waiting in its backlog.
class Listener {
 public:
  explicit Listener(const std::string& address) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, address.c_str(), &a.sin_addr);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << "bind " << address;
    EXPECT_EQ(listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    fcntl(fd_, F_SETFL, O_NONBLOCK);
  }
  ~Listener() { close(fd_); }
  int port() const { return port_; }
  bool connected() {
    int c = accept(fd_, nullptr, nullptr);
    if (c < 0) return false;
    close(c);
    return true;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// An httplib server on 127.0.0.1 in its own thread.
class LoopbackServer {
 public:
  explicit LoopbackServer(std::function<void(httplib::Server&)> routes) {
    routes(server_);
    port_ = server_.bind_to_any_port("127.0.0.1");
    // Bound and listening already: connections wait in the backlog until the loop runs.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // so stop() stops it
  }
  ~LoopbackServer() {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

// --- the policy -------------------------------------------------------------------------

TEST(Outbound, DefaultDeniesInternalRanges) {
  for (const char* a : {"169.254.169.254", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1",
                        "127.0.0.1", "127.8.9.10", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1",
                        "fc00::1", "fd12:3456::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
                        "::ffff:10.0.0.1", "::127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:a00:1::1"})
    EXPECT_NE(denied_range(a), "") << a;
  EXPECT_NE(denied_range("169.254.169.254").find("link-local"), std::string::npos);
  EXPECT_NE(denied_range("::ffff:127.0.0.1").find("loopback"), std::string::npos);
  for (const char* a : {"8.8.8.8", "172.32.0.1", "172.15.255.255", "100.128.0.1", "192.169.0.1", "2606:4700::1111",
                        "::ffff:8.8.8.8"})
    EXPECT_EQ(denied_range(a), "") << a;
}

TEST(Outbound, EveryResolvedAddressIsCheckedBeforeConnecting) {
  OutboundPolicy deny;
  for (const char* host : {"169.254.169.254", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "::1", "fe80::1",
                           "::ffff:127.0.0.1", "localhost", "127.1", "2130706433", "0"}) {
    std::string address = "unset";
    Diagnostics d;
    EXPECT_FALSE(check_outbound_host(host, 80, deny, address, d, "source.url")) << host;
    ASSERT_EQ(first_code(d), "outbound-denied") << host << ": " << d.str();
    EXPECT_TRUE(address.empty()) << host;
    const Diagnostic& e = d.items().front();
    EXPECT_NE(e.message.find(host), std::string::npos) << e.message;
    EXPECT_NE(e.hint.find("--allow-outbound"), std::string::npos) << e.hint;
  }
  Diagnostics d;
  std::string address;
  EXPECT_FALSE(check_outbound_host("localhost", 80, deny, address, d, "llm.url"));
  const std::string& m = d.items().front().message;  // names the address, not only the host
  EXPECT_TRUE(m.find("(127.0.0.1)") != std::string::npos || m.find("(::1)") != std::string::npos) << m;
  EXPECT_EQ(d.items().front().loc.file, "llm.url");
}

TEST(Outbound, AllowListOverridesTheDefault) {
  auto allowed = [](std::vector<std::string> allow, const std::string& host, std::string* address = nullptr) {
    OutboundPolicy p;
    p.allow = std::move(allow);
    std::string a;
    Diagnostics d;
    bool ok = check_outbound_host(host, 80, p, a, d, "url");
    if (address) *address = a;
    return ok;
  };
  std::string address;
  EXPECT_TRUE(allowed({"169.254.169.254"}, "169.254.169.254", &address));
  EXPECT_EQ(address, "169.254.169.254");  // the address to connect to is the checked one
  EXPECT_TRUE(allowed({"10.0.0.0/8"}, "10.200.1.1"));
  EXPECT_FALSE(allowed({"10.0.0.0/16"}, "10.200.1.1"));
  EXPECT_FALSE(allowed({"127.0.0.1"}, "127.0.0.2"));
  EXPECT_TRUE(allowed({"127.0.0.1"}, "::ffff:127.0.0.1", &address));
  EXPECT_EQ(address, "127.0.0.1");
  EXPECT_TRUE(allowed({"::1"}, "::1"));
  EXPECT_TRUE(allowed({"fe80::/10"}, "fe80::1"));
  EXPECT_TRUE(allowed({"localhost"}, "localhost"));  // a host name: whatever it resolves to
  EXPECT_TRUE(allowed({"LocalHost"}, "LOCALHOST"));
  EXPECT_TRUE(allowed({"127.0.0.0/8", "::1"}, "localhost"));
  EXPECT_FALSE(allowed({"other.example"}, "localhost"));
  OutboundPolicy all;
  all.allow_all = true;
  Diagnostics d;
  EXPECT_TRUE(check_outbound_host("169.254.169.254", 80, all, address, d, "url"));
  EXPECT_TRUE(address.empty());

  Diagnostics bad;
  EXPECT_TRUE(validate_allow_list({"10.0.0.0/8", "127.0.0.1", "::1", "fd00::/8", "llm.internal"}, bad)) << bad.str();
  EXPECT_FALSE(validate_allow_list({"10.0.0.0/33", "a b", ""}, bad));
  EXPECT_EQ(bad.error_count(), 3u);
}

TEST(Outbound, UrlsAreParsedWithoutRegex) {
  Url u;
  std::string why;
  ASSERT_TRUE(parse_url("HTTPS://User:pw@Example.ORG:8443/a/b?x=1#frag", u, why)) << why;
  EXPECT_EQ(u.scheme, "https");
  EXPECT_EQ(u.userinfo, "User:pw");
  EXPECT_EQ(u.host, "example.org");
  EXPECT_EQ(u.port, 8443);
  EXPECT_EQ(u.target, "/a/b?x=1");
  ASSERT_TRUE(parse_url("http://[::1]/x", u, why)) << why;
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 80);
  EXPECT_EQ(u.authority(), "[::1]");
  ASSERT_TRUE(parse_url("git://h", u, why));
  EXPECT_EQ(u.port, 9418);
  EXPECT_EQ(u.target, "/");
  for (const char* bad : {"http://", "http://a b/", "http://h:0/", "http://h:99999/", "http://h%2e/", "http://[::1/",
                          "http://evil\\@good/", "no-scheme", "http://h:x/", "http://[1.2.3.4]/"})
    EXPECT_FALSE(parse_url(bad, u, why)) << bad;
  // 100 KB of host name: refused by length, quickly, without recursion.
  EXPECT_FALSE(parse_url("http://" + std::string(100000, 'a') + "/", u, why));
  EXPECT_NE(why.find("limit"), std::string::npos) << why;

  EXPECT_EQ(redact_url("https://user:hunter2@example.org/r.git"), "https://***@example.org/r.git");
  EXPECT_EQ(redact_url("https://example.org/a@b"), "https://example.org/a@b");
  EXPECT_LE(redact_url("https://example.org/" + std::string(100000, 'x')).size(), 210u);
}

TEST(Outbound, ValidationRefusesAddressesAndCredentialsWithoutDns) {
  OutboundPolicy deny;
  auto code = [&](const std::string& url, bool user_allowed = false) {
    Diagnostics d;
    validate_outbound_url(url, deny, d, "source.url", user_allowed);
    return first_code(d);
  };
  EXPECT_EQ(code("http://169.254.169.254/latest/meta-data/"), "outbound-denied");
  EXPECT_EQ(code("http://[::ffff:a9fe:a9fe]/"), "outbound-denied");
  EXPECT_EQ(code("http://0x7f.1/"), "outbound-denied");
  EXPECT_EQ(code("http://localhost:8080/v1"), "outbound-denied");
  EXPECT_EQ(code("http://db.localhost/"), "outbound-denied");
  EXPECT_EQ(code("https://example.org/r.git"), "");  // names are resolved when connecting
  EXPECT_EQ(code("https://user:pw@example.org/r.git"), "url-credentials");
  EXPECT_EQ(code("https://token@example.org/r.git"), "url-credentials");
  EXPECT_EQ(code("ssh://git@example.org/r.git", true), "");
  EXPECT_EQ(code("ssh://git:pw@example.org/r.git", true), "url-credentials");
  EXPECT_EQ(code("http://" + std::string(200000, 'a')), "bad-url");
  OutboundPolicy allow;
  allow.allow = {"169.254.169.254"};
  Diagnostics d;
  EXPECT_TRUE(validate_outbound_url("http://169.254.169.254/", allow, d, "url")) << d.str();

  OutboundPolicy configured;
  allow_host_of(configured, "http://llm.internal:8000/v1");
  allow_host_of(configured, "/srv/git/foo.git");  // not a network URL: nothing added
  EXPECT_EQ(configured.allow, std::vector<std::string>{"llm.internal"});
}

// --- sources ------------------------------------------------------------------------------

struct OutboundSources : ::testing::Test {
  TempDir tmp;
  SourcePolicy policy;
  void SetUp() override {
    fs::create_directories(tmp.path() / "root");
    policy.roots = {tmp.str("root")};
    policy.work_dir = tmp.str("work");
    policy.fetch_timeout_s = 20;
  }
  Diagnostics validate(const json& j) {
    SourceSpec s;
    Diagnostics d;
    if (parse_source(j, s, d)) validate_source(s, policy, d);
    return d;
  }
};

// Each of these crashed the process (std::regex recursion on 100 KB) before the limits.
TEST_F(OutboundSources, HundredKilobyteValuesAreRefusedNotACrash) {
  std::string big(100000, '1');
  std::string big_ref = "v" + std::string(100000, 'a');
  for (const json& j : {json{{"kind", "git"}, {"url", "https://example.org/r.git"}, {"ref", big_ref}},
                        json{{"kind", "git"}, {"url", "https://example.org/" + big + ".git"}, {"ref", "v1"}},
                        json{{"kind", "git"}, {"url", "https://" + big}, {"ref", "v1"}},
                        json{{"kind", "debian-source"}, {"package", std::string(100000, 'a')}, {"version", "1.0-1"}},
                        json{{"kind", "debian-source"}, {"package", "zlib"}, {"version", big}},
                        json{{"kind", "debian-source"}, {"package", "zlib"}, {"version", "1.0-1"},
                             {"suites", {std::string(100000, 'a')}}},
                        json{{"kind", "debian-source"}, {"package", "zlib"}, {"version", "1.0-1"},
                             {"fallback_versions", {big}}},
                        json{{"kind", "tarball"}, {"url", "https://example.org/" + std::string(200000, 'x')}},
                        json{{"kind", "dir"}, {"path", tmp.str("root/") + std::string(100000, 'd')}}}) {
    Diagnostics d = validate(j);
    ASSERT_TRUE(d.has_errors()) << j.dump().substr(0, 120);
    EXPECT_EQ(first_code(d), "too-long") << d.str().substr(0, 300);
    EXPECT_LT(d.str().size(), 2000u);  // the value is not echoed back
  }
  // Just below the limits still validates by the character rules.
  EXPECT_EQ(first_code(validate({{"kind", "git"}, {"url", "https://example.org/r.git"}, {"ref", "v" + std::string(254, 'a')}})), "");
  EXPECT_EQ(first_code(validate({{"kind", "debian-source"}, {"package", std::string(128, 'a')}, {"version", "1:2.5-1"}})), "");
  EXPECT_EQ(first_code(validate({{"kind", "debian-source"}, {"package", "zlib"}, {"version", "1:x"}})), "bad-source");
  EXPECT_EQ(first_code(validate({{"kind", "debian-source"}, {"package", "Zlib"}, {"version", "1"}})), "bad-source");
  EXPECT_EQ(first_code(validate({{"kind", "git"}, {"url", "https://example.org/r.git"}, {"ref", "v1/"}})), "bad-source");
}

TEST_F(OutboundSources, CredentialedUrlsAreRefusedAndNeverStored) {
  Diagnostics d = validate({{"kind", "git"}, {"url", "https://alice:hunter2@example.org/r.git"}, {"ref", "v1"}});
  EXPECT_EQ(first_code(d), "url-credentials");
  EXPECT_EQ(d.str().find("hunter2"), std::string::npos) << d.str();
  EXPECT_NE(d.items().front().hint.find("credential helper"), std::string::npos);
  EXPECT_EQ(first_code(validate({{"kind", "tarball"}, {"url", "https://alice:hunter2@example.org/a.tgz"}})),
            "url-credentials");
  EXPECT_EQ(first_code(validate({{"kind", "git"}, {"url", "ssh://git@example.org/r.git"}, {"ref", "v1"}})), "");
  // Should one reach a job unvalidated, its stored form carries no secret.
  SourceSpec s;
  s.kind = SourceSpec::Kind::Git;
  s.url = "https://alice:hunter2@example.org/r.git";
  s.ref = "v1";
  std::string stored = to_json(s).dump();
  EXPECT_EQ(stored.find("hunter2"), std::string::npos) << stored;
  EXPECT_EQ(stored.find("alice"), std::string::npos) << stored;
  s.url = "ssh://git@example.org/r.git";
  EXPECT_EQ(to_json(s)["url"], "ssh://git@example.org/r.git");
}

TEST_F(OutboundSources, InternalAddressesAreRefusedBeforeAnythingRuns) {
  EXPECT_EQ(first_code(validate({{"kind", "git"}, {"url", "http://169.254.169.254/r.git"}, {"ref", "v1"}})),
            "outbound-denied");
  EXPECT_EQ(first_code(validate({{"kind", "git"}, {"url", "git://[::1]/r.git"}, {"ref", "v1"}})), "outbound-denied");
  EXPECT_EQ(first_code(validate({{"kind", "git"}, {"url", "ssh://git@10.0.0.1/r.git"}, {"ref", "v1"}})),
            "outbound-denied");
  EXPECT_EQ(first_code(validate({{"kind", "tarball"}, {"url", "http://192.168.1.1/a.tgz"}})), "outbound-denied");
  EXPECT_EQ(first_code(validate({{"kind", "tarball"}, {"url", "https://localhost/a.tgz"}})), "outbound-denied");
  policy.outbound.allow = {"192.168.0.0/16"};
  EXPECT_EQ(first_code(validate({{"kind", "tarball"}, {"url", "http://192.168.1.1/a.tgz"}})), "");
  // Local repositories stay governed by the source roots, not by the address policy.
  std::string repo = make_foo_repo(tmp.path() / "root" / "foo.git");
  EXPECT_EQ(first_code(validate({{"kind", "git"}, {"url", "file://" + repo}, {"ref", "v1.0.0"}})), "");
}

// A tarball server on loopback, allowed explicitly, whose redirects lead to the cloud
// metadata address or to a loopback address the policy does not allow: neither is reached.
TEST_F(OutboundSources, TarballRedirectsAreCheckedBeforeEachConnection) {
  Listener inner("127.0.0.2");  // loopback, but not 127.0.0.1: denied
  std::atomic<int> hits{0};
  LoopbackServer server([&](httplib::Server& s) {
    s.Get("/release.tar", [&](const httplib::Request&, httplib::Response& r) {
      ++hits;
      r.set_content("tarball bytes", "application/x-tar");
    });
    auto redirect = [&](std::string to) {
      return [&hits, to](const httplib::Request&, httplib::Response& r) {
        ++hits;
        r.status = 302;
        r.set_header("Location", to);
      };
    };
    s.Get("/hop", redirect("/release.tar"));
    s.Get("/metadata", redirect("http://169.254.169.254/latest/meta-data/"));
    s.Get("/inner", redirect("http://127.0.0.2:" + std::to_string(inner.port()) + "/x.tar"));
    s.Get("/loop", redirect("/loop"));
    s.Get("/ftp", redirect("ftp://example.org/x.tar"));
  });
  OutboundPolicy loopback;
  loopback.allow = {"127.0.0.1"};
  std::string to = tmp.str("download");

  Diagnostics d;
  ASSERT_TRUE(http_download(server.url("/hop"), to, 20, {}, d, loopback)) << d.str();
  EXPECT_EQ(read_file(to), "tarball bytes");

  d.clear();
  EXPECT_FALSE(http_download(server.url("/metadata"), to + "2", 20, {}, d, loopback));
  EXPECT_EQ(first_code(d), "outbound-denied") << d.str();
  EXPECT_NE(d.str().find("169.254.169.254"), std::string::npos) << d.str();
  EXPECT_NE(d.str().find("redirected from"), std::string::npos) << d.str();

  d.clear();
  EXPECT_FALSE(http_download(server.url("/inner"), to + "3", 20, {}, d, loopback));
  EXPECT_EQ(first_code(d), "outbound-denied") << d.str();
  EXPECT_FALSE(inner.connected()) << "the denied redirect target got a connection";

  d.clear();
  EXPECT_FALSE(http_download(server.url("/loop"), to + "4", 20, {}, d, loopback));
  EXPECT_NE(d.str().find("more than 5 redirects"), std::string::npos) << d.str();

  d.clear();
  EXPECT_FALSE(http_download(server.url("/ftp"), to + "5", 20, {}, d, loopback));
  EXPECT_EQ(first_code(d), "url-scheme") << d.str();

  // Without the allow-list, loopback itself is refused before any connection.
  int before = hits;
  d.clear();
  EXPECT_FALSE(http_download(server.url("/release.tar"), to + "6", 20, {}, d, OutboundPolicy{}));
  EXPECT_EQ(first_code(d), "outbound-denied") << d.str();
  EXPECT_EQ(hits, before);
  EXPECT_FALSE(fs::exists(to + "2") || fs::exists(to + "3") || fs::exists(to + "6"));

  // Through fetch_source, the policy comes from SourcePolicy::outbound.
  SourceSpec s;
  s.kind = SourceSpec::Kind::Tarball;
  s.url = server.url("/metadata");
  FetchedSource out;
  policy.outbound = loopback;
  d.clear();
  EXPECT_FALSE(fetch_source(s, policy, out, d));
  EXPECT_EQ(first_code(d), "outbound-denied") << d.str();
}

// git follows a redirect of its first request by default (http.followRedirects=initial),
// which is the request a hostile server would redirect: it must not be followed.
TEST_F(OutboundSources, GitDoesNotFollowRedirects) {
  Listener inner("127.0.0.2");
  std::string target = "http://127.0.0.2:" + std::to_string(inner.port());
  LoopbackServer server([&](httplib::Server& s) {
    s.Get(".*", [&](const httplib::Request& req, httplib::Response& r) {
      r.status = 302;
      r.set_header("Location", target + req.path + "?service=git-upload-pack");
    });
  });
  policy.outbound.allow = {"127.0.0.1"};
  policy.fetch_timeout_s = 10;  // before the fix git waited on the silent listener
  SourceSpec s;
  s.kind = SourceSpec::Kind::Git;
  s.url = server.url("/foo.git");
  s.ref = "v1.0.0";
  FetchedSource out;
  Diagnostics d;
  EXPECT_FALSE(fetch_source(s, policy, out, d));
  EXPECT_FALSE(inner.connected()) << "git followed the redirect: " << d.str();
  std::vector<std::string> tags;
  d.clear();
  EXPECT_FALSE(list_git_tags(s.url, policy, tags, d));
  EXPECT_FALSE(inner.connected()) << "git ls-remote followed the redirect: " << d.str();

  // And a remote whose host is denied is never contacted.
  policy.outbound.allow.clear();
  d.clear();
  EXPECT_FALSE(list_git_tags(s.url, policy, tags, d));
  EXPECT_EQ(first_code(d), "outbound-denied") << d.str();
}

// Tags a remote lists are untrusted input to the feed's regex: overlong ones are skipped.
TEST_F(OutboundSources, OverlongRemoteTagsAreSkipped) {
  std::string repo = make_foo_repo(tmp.path() / "root" / "foo.git");
  std::string long_tag = "v1.2.3/" + std::string(200, 'a') + "/" + std::string(200, 'b');
  ASSERT_TRUE(sh({"git", "tag", long_tag}, repo).ok());
  std::vector<std::string> tags;
  Diagnostics d;
  ASSERT_TRUE(list_git_tags(repo, policy, tags, d)) << d.str();
  EXPECT_EQ(tags, (std::vector<std::string>{"nightly-build", "v1.0.0", "v1.1.0"}));
}

// --- the LLM endpoint through build_release ----------------------------------------------

TEST_F(OutboundSources, LlmEndpointOnADeniedAddressIsNeverContacted) {
  testsupport::FakeLlmServer llm;
  llm.fallback(testsupport::ScriptedReply::answer("```lpcl\n```"));
  fs::path dir = tmp.path() / "root" / "foo-1.0.0";
  write_foo_release(dir, "1.0.0");
  store::Store st = open_store(tmp.str("db.sqlite"));
  ReleaseRequest req;
  req.library = "foo";
  req.version = "1.0.0";
  req.source.kind = SourceSpec::Kind::Dir;
  req.source.path = dir.string();
  req.llm = synth::LlmConfig{};
  req.llm->model = "m";
  req.llm->max_retries = 0;
  for (const std::string& url : std::vector<std::string>{llm.url(), "http://localhost:" + std::to_string(llm.port()),
                          "http://169.254.169.254/v1"}) {
    req.llm->url = url;
    ReleaseOutcome o = build_release(st, policy, req);
    EXPECT_EQ(o.status, "failed") << url;
    EXPECT_EQ(first_code(o.diags), "outbound-denied") << url << ": " << o.diags.str();
  }
  EXPECT_EQ(llm.request_count(), 0u);

  // A regeneration config's own endpoint is the operator's: its host is allowed.
  RegenConfig cfg;
  cfg.llm = synth::LlmConfig{};
  cfg.llm->url = llm.url();
  SourcePolicy configured = policy_of(cfg);
  EXPECT_EQ(configured.outbound.allow, std::vector<std::string>{"127.0.0.1"});
}

// --- the service ----------------------------------------------------------------------------

struct OutboundApi : ::testing::Test {
  TempDir tmp;
  std::unique_ptr<Service> svc;
  std::string token;
  std::unique_ptr<httplib::Client> cli;
  void SetUp() override {
    ServiceOptions o;
    o.db_path = tmp.str("db.sqlite");
    o.port = 0;
    o.source_roots = {tmp.str("root")};
    o.work_dir = tmp.str("work");
    o.workers = 1;
    o.shutdown_grace_s = 1;
    fs::create_directories(tmp.path() / "root");
    Diagnostics d;
    svc = Service::create(o, d);
    ASSERT_TRUE(svc) << d.str();
    ASSERT_TRUE(svc->start(d)) << d.str();
    token = create_token(o.db_path, Scope::Write, "test");
    cli = std::make_unique<httplib::Client>("127.0.0.1", svc->port());
    cli->set_read_timeout(30);
  }
  void TearDown() override {
    if (svc) svc->stop();
  }
  httplib::Result synthesize(const json& source) {
    json body = {{"library", "foo"}, {"version", "1.0.0"}, {"source", source}};
    return cli->Post("/v1/synthesize", {{"Authorization", "Bearer " + token}}, body.dump(), "application/json");
  }
  static std::string code(const httplib::Result& r) {
    auto j = json::parse(r->body, nullptr, false);
    return j.is_discarded() ? r->body : j["error"].value("code", "");
  }
};

TEST_F(OutboundApi, HostileSourcesGet400AndTheServiceStaysUp) {
  std::string big(100000, 'a');
  struct Case {
    json source;
    std::string code;
  };
  for (const Case& c : std::vector<Case>{
           {{{"kind", "git"}, {"url", "https://example.org/r.git"}, {"ref", "v" + big}}, "too-long"},
           {{{"kind", "git"}, {"url", "https://example.org/" + big}, {"ref", "v1"}}, "too-long"},
           {{{"kind", "debian-source"}, {"package", big}, {"version", "1.0-1"}}, "too-long"},
           {{{"kind", "tarball"}, {"url", "https://example.org/" + big + big}}, "too-long"},
           {{{"kind", "git"}, {"url", "http://169.254.169.254/r.git"}, {"ref", "v1"}}, "outbound-denied"},
           {{{"kind", "tarball"}, {"url", "http://10.0.0.1/a.tgz"}}, "outbound-denied"},
           {{{"kind", "git"}, {"url", "https://alice:hunter2@example.org/r.git"}, {"ref", "v1"}}, "url-credentials"},
       }) {
    auto r = synthesize(c.source);
    ASSERT_TRUE(r) << "the service went down on " << c.source.dump().substr(0, 100);
    EXPECT_EQ(r->status, 400) << r->body.substr(0, 300);
    EXPECT_EQ(code(r), c.code) << r->body.substr(0, 300);
    EXPECT_LT(r->body.size(), 4000u);
    EXPECT_EQ(r->body.find("hunter2"), std::string::npos) << r->body;
  }
  auto jobs = cli->Get("/v1/jobs", {{"Authorization", "Bearer " + token}});
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->status, 200);
  EXPECT_EQ(jobs->body.find("hunter2"), std::string::npos) << jobs->body;
  EXPECT_EQ(json::parse(jobs->body)["jobs"].size(), 0u);  // nothing was queued
}

}  // namespace
}  // namespace syspilot::service::test
