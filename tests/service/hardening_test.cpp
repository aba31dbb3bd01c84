// Attacks on `syspilot serve` over real loopback sockets: requests that used to crash, starve or
// mislead it (invalid UTF-8, deep JSON, unframed and oversized bodies, slow and idle sockets,
// header floods, forged log lines) must each get a clear status while the service stays up.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include "service/service.h"
#include "tests/service/fixture.h"
#include "tests/support/fake_llm.h"

extern char** environ;

namespace syspilot::service::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

int connect_to(int port, const char* from = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (from) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    inet_pton(AF_INET, from, &local.sin_addr);
    ::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local);
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads until the peer closes or `seconds` pass.
std::string read_all(int fd, double seconds) {
  std::string out;
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  char buf[4096];
  while (Clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
    if (::poll(&p, 1, std::max(ms, 1)) <= 0) break;
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  return out;
}

// One raw request on a fresh connection; returns what came back before close (or timeout).
// `half_close`: the client then ends its side, as one that has nothing more to send.
std::string raw(int port, const std::string& bytes, double seconds = 10, bool half_close = false) {
  int fd = connect_to(port);
  if (fd < 0) return "";
  ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (half_close) ::shutdown(fd, SHUT_WR);
  std::string r = read_all(fd, seconds);
  ::close(fd);
  return r;
}

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return -1;
  return std::stoi(response.substr(9, 3));
}

json body_of(const std::string& response) {
  size_t p = response.find("\r\n\r\n");
  return p == std::string::npos ? json() : json::parse(response.substr(p + 4), nullptr, false);
}

struct Hardening : ::testing::Test {
  TempDir tmp;
  std::unique_ptr<Service> svc;
  std::string write_token, read_token;

  void start(std::function<void(ServiceOptions&)> tweak = {}) {
    ServiceOptions o;
    o.db_path = tmp.str("db.sqlite");
    o.port = 0;
    o.work_dir = tmp.str("work");
    o.shutdown_grace_s = 1;
    if (tweak) tweak(o);
    Diagnostics d;
    svc = Service::create(o, d);
    ASSERT_TRUE(svc) << d.str();
    ASSERT_TRUE(svc->start(d)) << d.str();
    write_token = create_token(o.db_path, Scope::Write, "w");
    read_token = create_token(o.db_path, Scope::Read, "r");
  }
  void TearDown() override {
    if (svc) svc->stop();
  }
  int port() const { return svc->port(); }
  // /healthz answers, and how long it took.
  double healthz_seconds() {
    auto t0 = Clock::now();
    httplib::Client c("127.0.0.1", port());
    c.set_connection_timeout(5);
    c.set_read_timeout(5);
    auto r = c.Get("/healthz");
    if (!r || r->status != 200) return 1e9;
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }
  std::string post(const std::string& path, const std::string& body, const std::string& token) {
    return raw(port(), "POST " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
                           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\nConnection: close\r\n\r\n" + body);
  }
};

TEST_F(Hardening, InvalidUtf8InAnUnknownPathIsA404NotACrash) {
  start();
  std::string r = raw(port(), "GET /x%FF HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(r), 404) << r;
  EXPECT_TRUE(body_of(r).is_object()) << r;
  // 198 characters whose last one is cut in half by the message's truncation at 200 bytes.
  std::string path = "/" + std::string(195, 'a') + "%C3%A9";
  r = raw(port(), "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(r), 404) << r;
  ASSERT_TRUE(body_of(r).is_object()) << r;
  EXPECT_NE(body_of(r)["error"]["request_id"].get<std::string>(), "");
  EXPECT_LT(healthz_seconds(), 2);
}

TEST_F(Hardening, InvalidUtf8InAPathParameterOrBodyIsA400) {
  start();
  std::string r = raw(port(), "GET /v1/libraries/%FF%FE/contracts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                  read_token + "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(r), 400) << r;
  r = post("/v1/compose", "{\"libraries\": [\"\xff\xfe\"]}", read_token);
  EXPECT_EQ(status_of(r), 400) << r;
  EXPECT_TRUE(body_of(r).is_object()) << r;
}

TEST_F(Hardening, DeeplyNestedBodyIsRefusedBeforeAnyRecursion) {
  start();
  std::string deep = "{\"libraries\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  std::string r = post("/v1/compose", deep, read_token);
  EXPECT_EQ(status_of(r), 400) << r.substr(0, 300);
  EXPECT_EQ(body_of(r)["error"]["code"], "too-deep");
  EXPECT_LT(healthz_seconds(), 2);
}

TEST_F(Hardening, WrongJsonTypesAre400) {
  start();
  std::string body = R"({"library": "foo", "version": "1.0", "source": {"kind": "dir", "path": "/nonexistent"},
                        "force": "yes"})";
  std::string r = post("/v1/synthesize", body, write_token);
  EXPECT_EQ(status_of(r), 400) << r;
  r = post("/v1/synthesize",
           R"({"library": "foo", "version": "1.0", "source": {"kind": "git", "url": "https://example.org/x.git",
               "ref": "v1"}, "llm": {"url": "https://example.org/v1", "timeout_s": "soon"}})",
           write_token);
  EXPECT_EQ(status_of(r), 400) << r;
  r = post("/v1/compose", R"({"libraries": "libgomp"})", read_token);
  EXPECT_EQ(status_of(r), 400) << r;
}

TEST_F(Hardening, UnframedAndOversizedBodiesAreRefusedBeforeTheyAreRead) {
  start([](ServiceOptions& o) { o.limits.max_body_bytes = 1 << 20; });
  // Chunked, no token: refused on the head alone, while the client has sent no body at all.
  int fd = connect_to(port());
  std::string head = "POST /v1/synthesize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  std::string r = read_all(fd, 3);
  ::close(fd);
  EXPECT_EQ(status_of(r), 411) << r;
  // A 300 MiB Content-Length without a token: 401 on the head, before a byte of the body.
  fd = connect_to(port());
  head = "POST /v1/synthesize HTTP/1.1\r\nHost: x\r\nContent-Length: 314572800\r\n\r\n";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  r = read_all(fd, 3);
  ::close(fd);
  EXPECT_TRUE(status_of(r) == 401 || status_of(r) == 413) << r;
  // With a token, the documented 413.
  fd = connect_to(port());
  head = "POST /v1/synthesize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + write_token +
         "\r\nContent-Length: 314572800\r\n\r\n";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  r = read_all(fd, 3);
  ::close(fd);
  EXPECT_EQ(status_of(r), 413) << r;
  // A POST without Content-Length.
  r = raw(port(), "POST /v1/compose HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(r), 411) << r;
  EXPECT_LT(healthz_seconds(), 2);
}

// Responses in what came back: each status line (at a line start) of a pipelined exchange.
int responses_in(const std::string& r) {
  int n = 0;
  for (size_t p = r.find("HTTP/1.1 "); p != std::string::npos; p = r.find("HTTP/1.1 ", p + 1))
    n += p == 0 || r[p - 1] == '\n';
  return n;
}

// HEAD reaches the GET handlers: it needs the token GET needs, and gets no body.
TEST_F(Hardening, HeadNeedsWhatGetNeeds) {
  start();
  for (std::string path : {"/metrics", "/v1/libraries", "/v1/jobs"}) {
    std::string r = raw(port(), "HEAD " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(r), 401) << path << ": " << r.substr(0, 300);
    r = raw(port(), "HEAD " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + read_token +
                        "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(r), 200) << path << ": " << r.substr(0, 300);
    EXPECT_EQ(r.substr(r.find("\r\n\r\n") + 4), "") << path;
  }
}

// A body the server never reads must not be taken for the next request (request smuggling
// behind a proxy): a body-less method announcing one is refused, alone, and the connection
// closed; Content-Length: 0 is fine.
TEST_F(Hardening, BodiesOfBodylessMethodsAreRefusedNotServed) {
  start();
  std::string smuggled = "GET /v1/whoami HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string r = raw(port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                  std::to_string(smuggled.size()) + "\r\n\r\n" + smuggled, 3);
  EXPECT_EQ(status_of(r), 400) << r;
  EXPECT_EQ(responses_in(r), 1) << r;
  r = raw(port(), "HEAD /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 3);
  EXPECT_EQ(status_of(r), 400) << r;
  EXPECT_EQ(responses_in(r), 1) << r;
  // "Transfer-Encoding :" is no field name: a proxy could read it as chunked.
  r = raw(port(), "POST /v1/compose HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\nContent-Length: 2\r\n\r\n{}", 3);
  EXPECT_EQ(status_of(r), 400) << r;
  r = raw(port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(r), 200) << r;
  EXPECT_LT(healthz_seconds(), 2);
}

// A head that does not parse is answered once and the connection closed: the rest of it is
// not served as further requests.
TEST_F(Hardening, MalformedHeadsAreAnsweredOnceAndClosed) {
  start();
  const std::string heads[] = {
      "FOO / HTTP/1.1\r\nGET /v1/whoami HTTP/1.1\r\nHost: y\r\n\r\n",
      "get /healthz HTTP/1.1\r\nHost: y\r\n\r\nGET /healthz HTTP/1.1\r\nHost: y\r\n\r\n",
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
      "GET /healthz HTTP/1.1x\r\nHost: y\r\n\r\n",
      "GET /healthz\r\nHost: y\r\n\r\n",
      "GET /hea lthz HTTP/1.1\r\nHost: y\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: y\r\n folded: line\r\n\r\n",
      "GET /healthz HTTP/1.1\r\nHost: y\r\nX-A: a\x01b\r\n\r\n",
      std::string("GET /healthz HTTP/1.1\r\nHost: y\r\nX-A: a\0b\r\n\r\n", 44),
      "GET /healthz HTTP/1.1\nHost: y\n\r\n"};
  for (const auto& h : heads) {
    auto t0 = Clock::now();
    std::string r = raw(port(), h, 4);
    EXPECT_EQ(status_of(r), 400) << h << " -> " << r;
    EXPECT_EQ(responses_in(r), 1) << h << " -> " << r;
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 2) << "closed at once: " << h;
  }
  EXPECT_LT(healthz_seconds(), 2);
}

// The headers the server acts on are read as sent: cpp-httplib would percent-decode a value and
// cut it at a NUL, so the server and a proxy in front of it could read different lengths or
// tokens. A NUL in a field name is no token character. Each such head is one 400 and closed;
// the same requests written plainly are served.
// A compressed body is refused on its head: 64 MiB of JSON gzipped into about 64 KB would be
// unpacked whole before any limit applies (--max-body bounds the bytes sent). Any encoding
// but identity, in any case, is 415 and the server goes on; identity is the body as sent.
TEST_F(Hardening, CompressedBodiesAreRefusedBeforeTheyAreUnpacked) {
  start([](ServiceOptions& o) { o.public_read = true; });
  std::string plain = R"({"libraries": ["zz"], "pad": ")" + std::string(64u << 20, ' ') + "\"}";
  z_stream zs{};
  ASSERT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY), Z_OK);  // 31: a gzip member
  std::string gz(deflateBound(&zs, plain.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(plain.data());
  zs.avail_in = static_cast<uInt>(plain.size());
  zs.next_out = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_out = static_cast<uInt>(gz.size());
  ASSERT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  gz.resize(zs.total_out);
  deflateEnd(&zs);
  plain = std::string();
  ASSERT_LT(gz.size(), 1u << 20);  // within --max-body as sent
  for (const char* enc : {"gzip", "GZIP", "deflate", "br", "gzip, identity"}) {
    std::string r = raw(port(), std::string("POST /v1/compose HTTP/1.1\r\nHost: y\r\nContent-Type: application/json\r\n"
                                            "Content-Encoding: ") + enc + "\r\nContent-Length: " +
                                     std::to_string(gz.size()) + "\r\n\r\n" + gz, 10);
    EXPECT_EQ(status_of(r), 415) << enc << " -> " << r.substr(0, 300);
    EXPECT_NE(r.find("unsupported-media-type"), std::string::npos) << r.substr(0, 300);
  }
  std::string body = R"({"libraries": ["zz"]})";
  std::string r = raw(port(), "POST /v1/compose HTTP/1.1\r\nHost: y\r\nContent-Type: application/json\r\n"
                              "Content-Encoding: identity\r\nConnection: close\r\nContent-Length: " +
                                  std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(status_of(r), 404) << r;  // read and judged: no contract of that name
  EXPECT_NE(r.find("unknown-library"), std::string::npos) << r;
  EXPECT_LT(healthz_seconds(), 2);
}

TEST_F(Hardening, HeadersTheServerActsOnAreReadAsSent) {
  start();
  const std::string heads[] = {
      std::string("GET /healthz HTTP/1.1\r\nHost: y\r\nX\0: y\r\n\r\n", 41),
      "POST /v1/compose HTTP/1.1\r\nHost: y\r\nAuthorization: Bearer " + read_token +
          "\r\nContent-Type: application/json\r\nContent-Length: %32\r\n\r\n{}",
      "POST /v1/compose HTTP/1.1\r\nHost: y\r\nAuthorization: Bearer " + read_token +
          "\r\nContent-Type: application/json\r\nContent-Length: 2%00999\r\n\r\n{}",
      "GET /v1/whoami HTTP/1.1\r\nHost: y\r\nAuthorization: Bearer " + read_token + "%00anything\r\n\r\n",
      "GET /v1/whoami HTTP/1.1\r\nHost: y\r\nAuthorization: Bearer %" + [&] {
        char hex[3];
        std::snprintf(hex, sizeof hex, "%02X", static_cast<unsigned char>(read_token[0]));
        return std::string(hex) + read_token.substr(1);
      }() + "\r\n\r\n"};
  for (const auto& h : heads) {
    std::string r = raw(port(), h, 4);
    EXPECT_EQ(status_of(r), 400) << h << " -> " << r;
    EXPECT_EQ(responses_in(r), 1) << h << " -> " << r;
  }
  std::string ok = raw(port(), "GET /v1/whoami HTTP/1.1\r\nHost: y\r\nAuthorization: Bearer " + read_token +
                                   "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(ok), 200) << ok;
  EXPECT_EQ(status_of(post("/v1/compose", "{}", read_token)) / 100, 4);  // read, then judged: no libraries
  EXPECT_LT(healthz_seconds(), 2);
}

// A path served for other methods answers 405 with them in Allow, with or without a body; a
// path nothing serves is 404.
TEST_F(Hardening, AServedPathAnswersOtherMethodsWith405AndAllow) {
  start();
  std::string r = raw(port(), "GET /v1/compose HTTP/1.1\r\nHost: y\r\nAuthorization: Bearer " + read_token +
                                  "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(r), 405) << r;
  EXPECT_NE(r.find("Allow: POST"), std::string::npos) << r;
  EXPECT_EQ(body_of(r)["error"]["code"], "method-not-allowed") << r;
  r = raw(port(), "GET /v1/no-such-endpoint HTTP/1.1\r\nHost: y\r\nAuthorization: Bearer " + read_token +
                      "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(r), 404) << r;
}

// A body of more JSON values than any request needs is refused before it is parsed: its parsed
// form would be tens of times its size. A body within the bound is parsed and judged.
TEST_F(Hardening, ABodyOfTooManyJsonValuesIsRefusedBeforeItIsParsed) {
  start();
  std::string many = "{\"libraries\": [";
  for (int i = 0; i < 20000; ++i) many += "{},";
  many += "{}]}";
  std::string r = post("/v1/compose", many, read_token);
  EXPECT_EQ(status_of(r), 400) << r.substr(0, 300);
  EXPECT_EQ(body_of(r)["error"]["code"], "too-many-values") << r.substr(0, 300);
  std::string few = "{\"libraries\": [";
  for (int i = 0; i < 100; ++i) few += "\"lib\",";
  few += "\"lib\"]}";
  r = post("/v1/compose", few, read_token);
  EXPECT_NE(body_of(r)["error"]["code"], "too-many-values") << r.substr(0, 300);
  EXPECT_LT(healthz_seconds(), 2);
}

// A contract is written `contract NAME "VERSION"`, so a synthesis whose library name LPCL
// cannot read back (a package name with '-' or '+', one starting with a digit) is refused at
// once, not stored as a contract that does not parse.
TEST_F(Hardening, ALibraryNameLpclCannotReadIsRefused) {
  start();
  for (const char* lib : {"a-b", "x+y", "9lib", "gstreamer1.0"}) {
    std::string body = std::string(R"({"library": ")") + lib +
                       R"(", "version": "1.0", "source": {"kind": "dir", "path": "/nonexistent"}})";
    std::string r = post("/v1/synthesize", body, write_token);
    EXPECT_EQ(status_of(r), 400) << lib << " -> " << r;
    EXPECT_EQ(body_of(r)["error"]["code"], "bad-library") << lib << " -> " << r;
  }
}

// Range is ignored: a response is always whole, so thousands of ranges cannot make the server
// build thousands of copies of a body.
TEST_F(Hardening, RangesAreIgnored) {
  start();
  std::string whole = raw(port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string ranges = "bytes=0-";
  for (int i = 0; i < 1000; ++i) ranges += ",0-";
  for (std::string range : {ranges, std::string("bytes=2-5"), std::string("bytes=100000-200000")}) {
    std::string r = raw(port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nRange: " + range + "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(r), 200) << r.substr(0, 300);
    EXPECT_EQ(body_of(r), body_of(whole));
    EXPECT_EQ(r.find("Content-Range"), std::string::npos) << r.substr(0, 300);
  }
}

// Numbers beyond a double, a body that is not JSON by its type, and parameters that are not
// whole numbers are the client's error (400/415), never the server's (500).
TEST_F(Hardening, OutOfRangeNumbersAndLooseParametersAre4xx) {
  start();
  for (std::string body : {R"({"libraries":["x"],"n":1e309})", R"({"libraries":["x"],"n":-1E400})"}) {
    std::string r = post("/v1/compose", body, read_token);
    EXPECT_EQ(status_of(r), 400) << r;
    EXPECT_EQ(body_of(r)["error"]["code"], "malformed-json") << r;
  }
  std::string r = raw(port(), "POST /v1/compose HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + read_token +
                                  "\r\nContent-Type: text/notjson\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
  EXPECT_EQ(status_of(r), 415) << r;
  for (std::string target : {"/v1/libraries/x/contracts/1.0?revision=1abc", "/v1/jobs?limit=abc", "/v1/jobs?limit=-1",
                             "/v1/jobs?limit=1e3"}) {
    r = raw(port(), "GET " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + read_token +
                        "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(r), 400) << target << ": " << r;
  }
}

// `Expect: 100-continue`: the client is asked for its body only once its head passed the
// screening; unauthenticated it gets 401 and no 100.
TEST_F(Hardening, ContinueComesOnlyAfterAuthentication) {
  start();
  std::string head = "POST /v1/compose HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: "
                     "application/json\r\nContent-Length: 2\r\n";
  std::string r = raw(port(), head + "\r\n", 3);
  EXPECT_EQ(status_of(r), 401) << r;
  EXPECT_EQ(r.find("100 Continue"), std::string::npos) << r;
  int fd = connect_to(port());
  std::string authed = head + "Authorization: Bearer " + read_token + "\r\nConnection: close\r\n\r\n";
  ::send(fd, authed.data(), authed.size(), MSG_NOSIGNAL);
  std::string first = read_all(fd, 1);
  EXPECT_EQ(first.rfind("HTTP/1.1 100 Continue", 0), 0u) << first;
  ::send(fd, "{}", 2, MSG_NOSIGNAL);
  std::string rest = read_all(fd, 3);
  ::close(fd);
  EXPECT_NE((first + rest).find("HTTP/1.1 400"), std::string::npos) << first + rest;
}

// A body that no route takes is refused on its head, before a byte of it is read: the client
// announces 1 MB and sends none, and still gets its answer at once.
TEST_F(Hardening, BodiesNoRouteTakesAreRefusedBeforeTheyAreRead) {
  start();
  struct Case {
    std::string head;
    int status;
  };
  const Case cases[] = {
      {"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n", 404},
      {"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n", 405},
      {"PUT /v1/libraries HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n", 405},
      {"POST /nope HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1000000\r\n\r\n", 404},
      {"POST /v1/compose HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + read_token +
           "\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 1000000\r\n\r\n",
       415}};
  for (const auto& c : cases) {
    auto t0 = Clock::now();
    std::string r = raw(port(), c.head, 3);
    EXPECT_EQ(status_of(r), c.status) << c.head << " -> " << r;
    EXPECT_EQ(r.find("100 Continue"), std::string::npos) << r;
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.5) << "answered on the head: " << c.head;
  }
  std::string r = raw(port(), "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 3);
  EXPECT_NE(r.find("Allow: GET"), std::string::npos) << r;
  // Without a body, an unknown path is the usual 404 and the dashboard still answers.
  EXPECT_EQ(status_of(raw(port(), "GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")), 404);
  EXPECT_EQ(status_of(raw(port(), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")), 200);
}

// Lines ended by a bare LF or CR get 400 at once, not 408 after the head's deadline; two
// Authorization headers are refused, whichever comes first.
TEST_F(Hardening, BareLineEndsAndTwoTokensAre400AtOnce) {
  start();
  for (std::string h : {"GET /healthz HTTP/1.1\nHost: x\n\n", "GET /healthz HTTP/1.1\rHost: x\r\r",
                        "GET /healthz HTTP/1.1\r\nHost: x\n\r\n"}) {
    auto t0 = Clock::now();
    std::string r = raw(port(), h, 4);
    EXPECT_EQ(status_of(r), 400) << r;
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.5);
  }
  for (auto [first, second] : {std::pair{read_token, std::string("bogus")}, std::pair{std::string("bogus"), read_token}}) {
    std::string r = raw(port(), "GET /v1/libraries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + first +
                                    "\r\nAuthorization: Bearer " + second + "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(r), 400) << r;
  }
}

TEST_F(Hardening, LargeHeadersAre431AndLongRequestLines414) {
  start();
  std::string r = raw(port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(9000, 'a') + "\r\n\r\n");
  EXPECT_EQ(status_of(r), 431) << r.substr(0, 200);
  std::string many = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 80; ++i) many += "X-H" + std::to_string(i) + ": 1\r\n";
  r = raw(port(), many + "\r\n");
  EXPECT_EQ(status_of(r), 431) << r.substr(0, 200);
  r = raw(port(), "GET /" + std::string(10000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(status_of(r), 414) << r.substr(0, 200);
}

TEST_F(Hardening, BearerSchemeIsCaseInsensitive) {
  start();
  for (std::string scheme : {"bearer", "BEARER", "Bearer"}) {
    std::string r = raw(port(), "GET /v1/libraries HTTP/1.1\r\nHost: x\r\nAuthorization: " + scheme + " " +
                                    read_token + "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(r), 200) << scheme << ": " << r;
  }
  std::string r = raw(port(), "GET /v1/libraries HTTP/1.1\r\nHost: x\r\nAuthorization: Basic " + read_token +
                                  "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(r), 401) << r;
}

TEST_F(Hardening, SlowAndIdleSocketsDoNotStarveHealthz) {
  start([](ServiceOptions& o) { o.limits.header_timeout_s = 3; });
  // 500 connections: half trickle a request head one byte at a time, half send nothing.
  std::vector<int> fds;
  for (int i = 0; i < 500; ++i) {
    int fd = connect_to(port());
    ASSERT_GE(fd, 0) << "connection " << i;
    fds.push_back(fd);
  }
  for (size_t i = 0; i < fds.size(); i += 2) ::send(fds[i], "G", 1, MSG_NOSIGNAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (size_t i = 0; i < fds.size(); i += 2) ::send(fds[i], "E", 1, MSG_NOSIGNAL);
  double worst = 0;
  for (int i = 0; i < 5; ++i) worst = std::max(worst, healthz_seconds());
  EXPECT_LT(worst, 1.0) << "healthz while 500 slow or idle connections are held";
  // The head deadline ends the trickling ones with 408, the idle ones without a word.
  std::string r = read_all(fds[0], 6);
  EXPECT_EQ(status_of(r), 408) << r;
  r = read_all(fds[1], 6);
  EXPECT_EQ(r, "");
  for (int fd : fds) ::close(fd);
}

// A body that stops short of its Content-Length ends its connection: the bytes that arrive
// after the body deadline (here, a request of their own) are never read as a request.
TEST_F(Hardening, ABodyCutShortClosesItsConnection) {
  start([](ServiceOptions& o) { o.limits.body_timeout_s = 1; });
  const std::string inner = "GET /v1/whoami HTTP/1.1\r\nHost: x\r\n\r\n";
  int fd = connect_to(port());
  std::string head = "POST /v1/compose HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + read_token +
                     "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(inner.size() + 1) +
                     "\r\n\r\n{";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ::send(fd, inner.data(), inner.size(), MSG_NOSIGNAL);
  std::string r = read_all(fd, 3);
  ::close(fd);
  EXPECT_EQ(status_of(r), 408) << r;
  EXPECT_NE(r.find("\"code\":\"request-timeout\""), std::string::npos) << r;
  EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos) << r;
  EXPECT_EQ(r.find("HTTP/1.1 ", 1), std::string::npos) << "a second response: " << r;
  EXPECT_EQ(r.find("public_read"), std::string::npos) << r;
  // Cut short by the client: 400, and closed.
  r = raw(port(), head, 3, true);
  EXPECT_EQ(status_of(r), 400) << r;
  EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos) << r;
  EXPECT_LT(healthz_seconds(), 2);
}

// A body trickled slower than its deadline is told so (408), not that it was malformed: the
// deadline is never taken for a read error, however the last wait ends.
TEST_F(Hardening, ATrickledBodyGets408) {
  start([](ServiceOptions& o) { o.limits.body_timeout_s = 1; });
  std::string head = "POST /v1/compose HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + read_token +
                     "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{";
  std::vector<std::string> answers(16);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < answers.size(); ++i)
    clients.emplace_back([&, i] {
      int fd = connect_to(port());
      ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
      for (int k = 0; k < 8; ++k) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ::send(fd, " ", 1, MSG_NOSIGNAL);
      }
      answers[i] = read_all(fd, 3);
      ::close(fd);
    });
  for (auto& t : clients) t.join();
  for (auto& r : answers) EXPECT_EQ(status_of(r), 408) << r;
}

TEST_F(Hardening, IdleTlsSocketsDoNotStarveHealthz) {
  auto tls = testsupport::make_self_signed_cert(tmp.str());
  start([&](ServiceOptions& o) {
    o.tls_cert = tls.cert;
    o.tls_key = tls.key;
    o.limits.header_timeout_s = 3;
  });
  // 200 connections that never send a TLS hello, and 64 that send half of one.
  std::vector<int> fds;
  for (int i = 0; i < 264; ++i) {
    int fd = connect_to(port());
    ASSERT_GE(fd, 0);
    if (i >= 200) ::send(fd, "\x16\x03\x01\x02\x00", 5, MSG_NOSIGNAL);
    fds.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (int i = 0; i < 3; ++i) {
    auto t0 = Clock::now();
    httplib::SSLClient c("127.0.0.1", port());
    c.set_ca_cert_path(tls.cert.c_str());
    c.enable_server_certificate_verification(true);
    c.set_read_timeout(5);
    auto r = c.Get("/healthz");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 1.0);
  }
  // The handshake deadline closes the silent ones.
  EXPECT_EQ(read_all(fds[0], 6), "");
  pollfd p{fds[0], POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 1) << "closed by the server";
  for (int fd : fds) ::close(fd);
}

TEST_F(Hardening, ConnectionsPerClientAreCapped) {
  start([](ServiceOptions& o) {
    o.limits.max_per_client = 4;
    o.limits.uncapped_clients.clear();
  });
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) held.push_back(connect_to(port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string r = raw(port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 3);
  EXPECT_EQ(status_of(r), 503) << r;
  EXPECT_EQ(body_of(r)["error"]["code"], "too-many-connections");
  // Another address of the loopback network is another client.
  int other = connect_to(port(), "127.0.0.2");
  ASSERT_GE(other, 0);
  std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ::send(other, req.data(), req.size(), MSG_NOSIGNAL);
  EXPECT_EQ(status_of(read_all(other, 3)), 200);
  ::close(other);
  for (int fd : held) ::close(fd);
  EXPECT_TRUE(eventually([&] { return status_of(raw(port(), req, 3)) == 200; }, 5));
}

TEST_F(Hardening, EveryResponseCarriesARequestId) {
  start();
  httplib::Client c("127.0.0.1", port());
  auto r = c.Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("X-Request-Id").rfind("req_", 0), 0u);
  auto r2 = c.Get("/v1/libraries");
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 401);
  EXPECT_NE(r2->get_header_value("X-Request-Id"), r->get_header_value("X-Request-Id"));
}

TEST_F(Hardening, StoreIsCreatedReadableByItsOwnerOnly) {
  start();
  struct stat st {};
  ASSERT_EQ(::stat(tmp.str("db.sqlite").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  if (::stat(tmp.str("db.sqlite-wal").c_str(), &st) == 0) {
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
}

TEST_F(Hardening, FinishedJobsAreCounted) {
  start([&](ServiceOptions& o) { o.source_roots = {tmp.str("root")}; });
  write_foo_release(tmp.path() / "root" / "foo-1.0.0", "1.0.0");
  std::string r = post("/v1/synthesize",
                       json{{"library", "foo"}, {"version", "1.0.0"},
                            {"source", {{"kind", "dir"}, {"path", tmp.str("root/foo-1.0.0")}}}}
                           .dump(),
                       write_token);
  ASSERT_EQ(status_of(r), 202) << r;
  httplib::Client c("127.0.0.1", port());
  httplib::Headers h = {{"Authorization", "Bearer " + read_token}};
  EXPECT_TRUE(eventually([&] {
    auto m = c.Get("/metrics", h);
    return m && m->body.find("syspilot_jobs_finished_total{kind=\"synthesize\",state=\"succeeded\"} 1") !=
                    std::string::npos;
  }, 60));
}

TEST_F(Hardening, RawBytesAreServedWithoutASocket) {
  start();
  std::string out = svc->serve_bytes("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /x%FF HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(status_of(out), 200) << out;
  EXPECT_NE(out.find("HTTP/1.1 404"), std::string::npos) << out;
}

// A `syspilot serve` process with stdout and stderr in files; its port from the first line.
struct ServeChild {
  pid_t pid = 0;
  int port = 0;
  ServeChild(const TempDir& tmp, std::vector<std::string> extra) {
    std::vector<std::string> args = {SYSPILOT_BIN, "serve", "--db", tmp.str("db.sqlite"), "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string out = tmp.str("stdout.log"), err = tmp.str("stderr.log");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    EXPECT_EQ(posix_spawn(&pid, SYSPILOT_BIN, &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    EXPECT_TRUE(eventually([&] {
      std::string first = read_file(out);
      size_t colon = first.rfind(':');
      if (first.find("listening on") == std::string::npos || colon == std::string::npos) return false;
      port = std::stoi(first.substr(colon + 1));
      return true;
    }, 20));
  }
  // Resident memory in KiB, from /proc.
  long rss_kib() const {
    std::string status = read_file("/proc/" + std::to_string(pid) + "/status");
    size_t p = status.find("VmRSS:");
    return p == std::string::npos ? -1 : std::stol(status.substr(p + 6));
  }
  bool alive() const { return pid > 0 && ::kill(pid, 0) == 0 && waitpid(pid, nullptr, WNOHANG) == 0; }
  void stop() {
    if (pid <= 0) return;
    ::kill(pid, SIGTERM);
    if (!eventually([&] { return waitpid(pid, nullptr, WNOHANG) == pid; }, 20)) {
      ::kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    pid = 0;
  }
  ~ServeChild() { stop(); }
};

// The access log is read by people and programs: a request must not be able to write a line.
TEST(AccessLog, RequestBytesCannotForgeLines) {
  TempDir tmp;
  std::string log = tmp.str("stderr.log");
  ServeChild child(tmp, {"--access-log"});
  int port = child.port;
  ASSERT_GT(port, 0);
  std::string r = raw(port, "GET /a%0A127.0.0.1%20GET%20/v1/admin%20200%201us%0D%1B[2J HTTP/1.1\r\nHost: x\r\n"
                            "Connection: close\r\n\r\n");
  EXPECT_EQ(status_of(r), 404) << r;
  child.stop();
  std::string text = read_file(log);
  EXPECT_EQ(text.find("\n127.0.0.1 GET /v1/admin"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_NE(text.find("/a\\x0a127.0.0.1"), std::string::npos) << text;
}

// 60 s of valid traffic beside hostile bodies and slow sockets against the real process, on
// loopback, bounded in time and count. Valid requests never get a 5xx, /healthz keeps
// answering, memory stays within twice its start, and the store stays intact.
TEST(Soak, SixtySecondsOfMixedTraffic) {
  TempDir tmp;
  ProcessResult tok = run_process({SYSPILOT_BIN, "serve", "token", "create", "--scope", "read", "--db",
                                   tmp.str("db.sqlite")});
  ASSERT_TRUE(tok.ok()) << tok.err;
  std::string token = tok.out.substr(tok.out.find("spt_"), 52);
  ServeChild child(tmp, {"--header-timeout", "2"});
  ASSERT_GT(child.port, 0);
  const int port = child.port;
  const double seconds = std::getenv("SYSPILOT_SOAK_SECONDS") ? std::atof(std::getenv("SYSPILOT_SOAK_SECONDS")) : 60;
  httplib::Headers auth = {{"Authorization", "Bearer " + token}};
  auto valid_round = [&](httplib::Client& c, std::atomic<long>& ok, std::atomic<long>& bad, std::string& last_bad) {
    auto check = [&](const httplib::Result& r, const char* what) {
      if (r && r->status < 500) {
        ++ok;
      } else {
        ++bad;
        last_bad = std::string(what) + " -> " + (r ? std::to_string(r->status) + " " + r->body : "no answer");
      }
    };
    check(c.Get("/healthz"), "healthz");
    check(c.Get("/v1/libraries", auth), "libraries");
    check(c.Post("/v1/compose", auth, R"({"libraries": ["openblas_pthread", "libgomp"],
               "nesting": [{"outer": "libgomp", "inner": "openblas_pthread"}]})", "application/json"), "compose");
    check(c.Get("/v1/jobs", auth), "jobs");
    check(c.Get("/metrics", auth), "metrics");
  };
  std::atomic<long> ok{0}, bad{0};
  std::string last_bad;
  {
    httplib::Client warm("127.0.0.1", port);
    valid_round(warm, ok, bad, last_bad);
  }
  const long rss_start = child.rss_kib();
  ASSERT_GT(rss_start, 0);
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::atomic<long> hostile{0}, slow_held{0};
  long rss_peak = rss_start;
  std::thread valid([&] {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(10);
    c.set_keep_alive(true);
    while (Clock::now() < end) valid_round(c, ok, bad, last_bad);
  });
  std::thread attacks([&] {
    const std::vector<std::string> bodies = {
        "POST /v1/compose HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
            "\r\nContent-Length: 200012\r\n\r\n{\"libraries\": " + std::string(100000, '[') +
            std::string(100000, ']') + "}",
        "GET /x%FF HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST /v1/synthesize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /v1/synthesize HTTP/1.1\r\nHost: x\r\nContent-Length: 314572800\r\n\r\n" + std::string(65536, 'a'),
        "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(20000, 'b') + "\r\n\r\n",
        "POST /v1/compose HTTP/1.1\r\nHost: x\r\nAuthorization: bearer " + token +
            "\r\nContent-Length: 27\r\n\r\n{\"libraries\": [\"\xff\xfe\"]}  ",
        std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11),
    };
    for (size_t i = 0; Clock::now() < end && i < 200000; ++i) {
      raw(port, bodies[i % bodies.size()], 2, true);
      ++hostile;
    }
  });
  std::thread slow([&] {
    // Up to 200 sockets held at once, each sending a byte a second until the server gives up.
    std::vector<int> fds;
    while (Clock::now() < end) {
      while (fds.size() < 200) {
        int fd = connect_to(port);
        if (fd < 0) break;
        fds.push_back(fd);
        ++slow_held;
      }
      for (size_t i = 0; i < fds.size();) {
        if (::send(fds[i], "G", 1, MSG_NOSIGNAL) != 1) {
          ::close(fds[i]);
          fds[i] = fds.back();
          fds.pop_back();
        } else {
          ++i;
        }
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    for (int fd : fds) ::close(fd);
  });
  double worst_healthz = 0;
  while (Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    rss_peak = std::max(rss_peak, child.rss_kib());
    auto t0 = Clock::now();
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(5);
    auto r = c.Get("/healthz");
    double took = std::chrono::duration<double>(Clock::now() - t0).count();
    worst_healthz = std::max(worst_healthz, r && r->status == 200 ? took : 99.0);
  }
  valid.join();
  attacks.join();
  slow.join();
  long rss_end = child.rss_kib();
  std::printf("soak: %.0f s, %ld valid requests (%ld 5xx or unanswered), %ld hostile, %ld slow sockets; "
              "RSS %ld KiB at start, %ld peak, %ld at end; worst /healthz %.3f s\n",
              seconds, ok.load(), bad.load(), hostile.load(), slow_held.load(), rss_start, rss_peak, rss_end,
              worst_healthz);
  EXPECT_TRUE(child.alive());
  EXPECT_EQ(bad.load(), 0) << last_bad;
  EXPECT_GT(ok.load(), 100);
  EXPECT_LT(worst_healthz, 1.0);
  EXPECT_LT(rss_end, 2 * rss_start);
  child.stop();
  ProcessResult check = run_process({"sqlite3", tmp.str("db.sqlite"), "PRAGMA integrity_check;"});
  EXPECT_EQ(check.out, "ok\n") << check.err;
}

}  // namespace
}  // namespace syspilot::service::test
