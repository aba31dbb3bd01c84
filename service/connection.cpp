// The connection layer of `syspilot serve` (see connection.h): admission per server and per
// client address, a deadline for every phase of a request, head size limits answered with
// 408/414/431 before httplib parses anything, TLS with a handshake deadline, and a thread pool
// that grows with the connections it holds.
#include "service/connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <optional>
#include <string_view>
#include <thread>

namespace syspilot::service {

namespace {

using Clock = std::chrono::steady_clock;
thread_local bool t_close_after = false;
enum class BodyEnd { Whole, Closed, TimedOut };
thread_local BodyEnd t_body_end = BodyEnd::Whole;

// Rounded up: a poll that ends before the deadline would make a timeout look like an error.
int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<long long>((left + 999) / 1000, 60 * 60 * 1000));
}

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::microseconds(static_cast<long long>(seconds * 1e6));
}

// Waits until `fd` is ready for `events` or the wake pipe fires or the deadline passes.
bool wait_fd(int fd, short events, int wake, Clock::time_point deadline) {
  for (;;) {
    pollfd p[2] = {{fd, events, 0}, {wake, POLLIN, 0}};
    int n = ::poll(p, wake >= 0 ? 2 : 1, ms_until(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (wake >= 0 && (p[1].revents & POLLIN)) return false;
    return true;
  }
}

std::string address_of(const sockaddr_storage& ss, int& port) {
  char buf[INET6_ADDRSTRLEN] = {0};
  port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    // An IPv4 client of a dual-stack socket is the same client as over IPv4.
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
      inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], buf, sizeof buf);
    } else {
      inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    }
    port = ntohs(a->sin6_port);
  }
  return buf;
}

class SocketTransport : public Transport {
 public:
  SocketTransport(int fd, int wake, std::string peer, int port)
      : fd_(fd), wake_(wake), peer_(std::move(peer)), port_(port) {}
  long recv_some(char* buf, size_t n, Clock::time_point deadline) override {
    for (;;) {
      ssize_t r = ::recv(fd_, buf, n, MSG_DONTWAIT);
      if (r >= 0) return static_cast<long>(r);
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (!wait_fd(fd_, POLLIN, wake_, deadline)) return -1;
    }
  }
  bool send_all(const char* buf, size_t n, Clock::time_point deadline) override {
    while (n > 0) {
      ssize_t r = ::send(fd_, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (r > 0) {
        buf += r;
        n -= static_cast<size_t>(r);
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
      // Waking for shutdown must not cut a response short: only the deadline counts here.
      if (!wait_fd(fd_, POLLOUT, -1, deadline)) return false;
    }
    return true;
  }
  std::string peer() const override { return peer_; }
  int peer_port() const override { return port_; }

 protected:
  int fd_, wake_;
  std::string peer_;
  int port_;
};

class TlsTransport : public SocketTransport {
 public:
  TlsTransport(SSL_CTX* ctx, int fd, int wake, std::string peer, int port)
      : SocketTransport(fd, wake, std::move(peer), port), ssl_(SSL_new(ctx)) {
    if (ssl_) SSL_set_fd(ssl_, fd);
  }
  ~TlsTransport() override {
    if (!ssl_) return;
    if (handshaken_) SSL_shutdown(ssl_);  // one non-blocking attempt; the socket closes anyway
    SSL_free(ssl_);
  }
  bool handshake(Clock::time_point deadline) {
    if (!ssl_) return false;
    for (;;) {
      ERR_clear_error();
      int r = SSL_accept(ssl_);
      if (r == 1) return handshaken_ = true;
      if (!wait_for(SSL_get_error(ssl_, r), deadline, wake_)) return false;
    }
  }
  long recv_some(char* buf, size_t n, Clock::time_point deadline) override {
    for (;;) {
      ERR_clear_error();
      int r = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(n, 1 << 30)));
      if (r > 0) return r;
      int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_ZERO_RETURN) return 0;
      if (!wait_for(e, deadline, wake_)) return -1;
    }
  }
  bool send_all(const char* buf, size_t n, Clock::time_point deadline) override {
    while (n > 0) {
      ERR_clear_error();
      int chunk = static_cast<int>(std::min<size_t>(n, 1 << 20));
      int r = SSL_write(ssl_, buf, chunk);
      if (r > 0) {
        buf += r;
        n -= static_cast<size_t>(r);
        continue;
      }
      if (!wait_for(SSL_get_error(ssl_, r), deadline, -1)) return false;
    }
    return true;
  }
  bool pending() const override { return SSL_pending(ssl_) > 0; }

 private:
  bool wait_for(int ssl_error, Clock::time_point deadline, int wake) {
    if (ssl_error == SSL_ERROR_WANT_READ) return wait_fd(fd_, POLLIN, wake, deadline);
    if (ssl_error == SSL_ERROR_WANT_WRITE) return wait_fd(fd_, POLLOUT, wake, deadline);
    return false;
  }
  SSL* ssl_;
  bool handshaken_ = false;
};

// httplib's view of a connection: the head already read by us, then the transport under the
// body's deadline. httplib reads the head byte by byte and bodies by their length, so what it
// leaves unread in `buf_` is the next pipelined request.
class ConnStream : public httplib::Stream {
 public:
  ConnStream(Transport& t, std::string& buf, Clock::time_point read_deadline, double write_timeout_s)
      : t_(t), buf_(buf), read_deadline_(read_deadline), write_timeout_s_(write_timeout_s) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    if (pos_ < buf_.size()) {
      size_t n = std::min(size, buf_.size() - pos_);
      std::memcpy(ptr, buf_.data() + pos_, n);
      pos_ += n;
      return static_cast<ssize_t>(n);
    }
    long r = t_.recv_some(ptr, size, read_deadline_);
    if (r <= 0) t_body_end = r < 0 && Clock::now() >= read_deadline_ ? BodyEnd::TimedOut : BodyEnd::Closed;
    return r;
  }
  ssize_t write(const char* ptr, size_t size) override {
    return t_.send_all(ptr, size, after(write_timeout_s_)) ? static_cast<ssize_t>(size) : -1;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = t_.peer();
    port = t_.peer_port();
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip.clear();
    port = 0;
  }
  // httplib compares this with FD_SETSIZE (it was built for select()) and answers 500 above
  // it; our reads never select(), so it gets no descriptor to compare.
  socket_t socket() const override { return INVALID_SOCKET; }
  std::string unread() const { return buf_.substr(std::min(pos_, buf_.size())); }

 private:
  Transport& t_;
  std::string& buf_;
  size_t pos_ = 0;
  Clock::time_point read_deadline_;
  double write_timeout_s_;
};

enum class Head { Complete, Closed, TimedOut, UriTooLong, HeadersTooLarge, Malformed };

// Reads until the blank line that ends a request head. The first byte may take until
// `first_byte`; the whole head then has `limits.header_timeout_s`.
Head read_head(Transport& t, std::string& buf, Clock::time_point first_byte, const ConnectionLimits& limits) {
  Clock::time_point deadline = first_byte;
  bool started = !buf.empty();
  if (started) deadline = after(limits.header_timeout_s);
  size_t scanned = 0;
  char chunk[4096];
  for (;;) {
    // A line ended by a bare LF or a bare CR ends no head that HTTP/1.1 frames: answered at
    // once, not after the head's deadline. Only the head is looked at (a body may hold both).
    size_t head_end = buf.find("\r\n\r\n");
    std::string_view head = std::string_view(buf).substr(0, head_end == std::string::npos ? buf.size() : head_end + 2);
    for (size_t i = 0; i < head.size(); ++i)
      if ((head[i] == '\r' && i + 1 < head.size() && head[i + 1] != '\n') || (head[i] == '\n' && (i == 0 || head[i - 1] != '\r')))
        return Head::Malformed;
    // The head ends at a line that is exactly CRLF (how httplib reads it).
    size_t line_end = buf.find('\n');
    if (line_end != std::string::npos && line_end > limits.max_uri_bytes + 16) return Head::UriTooLong;
    if (line_end == std::string::npos && buf.size() > limits.max_uri_bytes + 16) return Head::UriTooLong;
    if (line_end != std::string::npos) {
      size_t end = buf.find("\n\r\n", std::max(line_end, scanned > 2 ? scanned - 2 : 0));
      size_t head_bytes = (end == std::string::npos ? buf.size() : end + 1) - (line_end + 1);
      size_t fields = 0, longest = 0, from = line_end + 1;
      size_t stop = end == std::string::npos ? buf.size() : end + 1;
      while (from < stop) {
        size_t nl = buf.find('\n', from);
        if (nl == std::string::npos || nl >= stop) nl = stop;
        longest = std::max(longest, nl - from);
        ++fields;
        from = nl + 1;
      }
      if (head_bytes > limits.max_header_bytes || fields > limits.max_headers || longest > 8192)
        return Head::HeadersTooLarge;
      if (end != std::string::npos) return Head::Complete;
    }
    scanned = buf.size();
    long r = t.recv_some(chunk, sizeof chunk, deadline);
    if (r == 0) return Head::Closed;
    if (r < 0) return started ? Head::TimedOut : Head::Closed;
    if (!started) {
      started = true;
      deadline = after(limits.header_timeout_s);
    }
    buf.append(chunk, static_cast<size_t>(r));
  }
}

bool tchar(unsigned char c) {
  // strchr finds the terminating NUL too: a NUL is no token character
  return c != 0 && (std::isalnum(c) || std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}


bool equals_nocase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The header fields the server acts on: framing, authentication, content negotiation.
bool acted_on(std::string_view name) {
  for (std::string_view h : {"Content-Length", "Transfer-Encoding", "Content-Encoding", "Authorization", "Content-Type",
                             "Host", "Connection", "Expect"})
    if (equals_nocase(name, h)) return true;
  return false;
}

// Checks the request head at the start of `buf` (read_head found its end) as RFC 9112 frames
// it, before httplib parses it, and removes what the server ignores. Returns "" when the head
// may be served, else why it is refused (400, and the connection is closed: a head that does
// not parse leaves no way to tell where the next request begins).
// - Request line: METHOD SP target SP HTTP/1.0|1.1 CRLF; the method one of HTTP's (what
//   httplib parses: anything else it answers without reading the head), the target visible
//   ASCII.
// - Fields: name ":" value CRLF; the name a token (no space before the colon), no folded
//   lines, no control characters in the value but tab. A field the server acts on
//   (Content-Length, Transfer-Encoding, Authorization, Content-Type, Host, Connection, Expect)
//   holds no '%': httplib percent-decodes values, and the server must read what a proxy in
//   front of it reads (`Content-Length: %32` is not 2, `Bearer TOKEN%00x` is not TOKEN).
//   Content-Length is digits.
// - Framing: a method whose body the server never reads (anything but POST, PUT, PATCH and
//   DELETE) may announce none: a Content-Length other than 0, or a Transfer-Encoding, would
//   leave the body in the stream to be read as the next request.
// - Range and If-Range are removed: every response is whole (a server may ignore Range),
//   so no request can make the server build many copies of a body.
std::string check_head(std::string& buf) {
  size_t line_end = buf.find('\n');
  size_t end = buf.find("\n\r\n", line_end);
  if (line_end == std::string::npos || end == std::string::npos) return "the request head is incomplete";
  size_t head_end = end + 3;
  auto line_at = [&](size_t from, size_t nl) -> std::optional<std::string_view> {
    if (nl == from || buf[nl - 1] != '\r') return std::nullopt;
    return std::string_view(buf).substr(from, nl - 1 - from);
  };
  auto first = line_at(0, line_end);
  if (!first) return "the request line does not end with CRLF";
  size_t sp1 = first->find(' '), sp2 = sp1 == std::string::npos ? sp1 : first->find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos || first->find(' ', sp2 + 1) != std::string::npos)
    return "the request line is not METHOD TARGET HTTP-VERSION";
  std::string_view method = first->substr(0, sp1), target = first->substr(sp1 + 1, sp2 - sp1 - 1),
                   version = first->substr(sp2 + 1);
  static const std::string_view kMethods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"};
  if (std::find(std::begin(kMethods), std::end(kMethods), method) == std::end(kMethods))
    return "the request method is not one of HTTP's (methods are case-sensitive)";
  if (target.empty() || !std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
    return "the request target is empty or holds characters other than visible ASCII";
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return "the HTTP version is not HTTP/1.1 or HTTP/1.0";
  bool body_method = method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
  std::string kept = buf.substr(0, line_end + 1);
  for (size_t from = line_end + 1; from < end + 1;) {
    size_t nl = buf.find('\n', from);
    auto field = line_at(from, nl);
    if (!field) return "a header line does not end with CRLF";
    if (field->empty() || (*field)[0] == ' ' || (*field)[0] == '\t') return "a header line is folded or empty";
    size_t colon = field->find(':');
    if (colon == std::string::npos || colon == 0) return "a header line has no field name";
    std::string_view name = field->substr(0, colon), value = field->substr(colon + 1);
    if (!std::all_of(name.begin(), name.end(), [](char c) { return tchar(static_cast<unsigned char>(c)); }))
      return "a header field name is not a token (a space before the colon?)";
    if (std::any_of(value.begin(), value.end(), [](char c) {
          unsigned char u = static_cast<unsigned char>(c);
          return (u < 0x20 && u != '\t') || u == 0x7f;
        }))
      return "a header field value holds a control character";
    size_t b = value.find_first_not_of(" \t"), e = value.find_last_not_of(" \t");
    std::string_view v = b == std::string::npos ? std::string_view{} : value.substr(b, e - b + 1);
    if (acted_on(name) && v.find('%') != std::string_view::npos)
      return "the " + std::string(name) + " field holds '%' (values are read as sent, not percent-decoded)";
    if (equals_nocase(name, "Content-Length") &&
        (v.empty() || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })))
      return "Content-Length is not a number";
    if (!body_method && equals_nocase(name, "Transfer-Encoding"))
      return std::string(method) + " carries no body: Transfer-Encoding is not accepted";
    if (!body_method && equals_nocase(name, "Content-Length") && v != "0")
      return std::string(method) + " carries no body: Content-Length must be 0 or absent";
    if (!equals_nocase(name, "Range") && !equals_nocase(name, "If-Range")) kept.append(buf, from, nl + 1 - from);
    from = nl + 1;
  }
  kept += "\r\n";
  buf = kept + buf.substr(head_end);
  return "";
}

std::string canned(int status, const char* reason, const std::string& code, const std::string& message) {
  std::string text;
  for (char c : message) {
    if (c == '"' || c == '\\') text += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) text += c;
  }
  std::string body = "{\"error\":{\"code\":\"" + code + "\",\"message\":\"" + text + "\"}}";
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                     "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n";
  if (status == 503) head += "Retry-After: 1\r\n";
  return head + "\r\n" + body;
}

}  // namespace

GuardedServer::GuardedServer(ConnectionLimits limits, SSL_CTX* tls) : limits_(std::move(limits)), tls_(tls) {
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
}

GuardedServer::~GuardedServer() {
  for (int fd : wake_)
    if (fd >= 0) ::close(fd);
}

void GuardedServer::interrupt() {
  stopping_ = true;
  if (wake_[1] >= 0) {
    char c = 1;
    (void)!::write(wake_[1], &c, 1);  // never drained: every later poll sees it too
  }
}

void GuardedServer::widen_backlog(int backlog) {
  socket_t s = svr_sock_;
  if (s != INVALID_SOCKET) ::listen(s, backlog);  // Linux applies a new backlog to a listening socket
}

void GuardedServer::close_after_response() { t_close_after = true; }
bool GuardedServer::body_cut_short() { return t_body_end != BodyEnd::Whole; }
bool GuardedServer::body_timed_out() { return t_body_end == BodyEnd::TimedOut; }

bool GuardedServer::admit(const std::string& peer, std::string& why) {
  std::lock_guard<std::mutex> g(mu_);
  if (open_.load() >= limits_.max_connections) {
    why = "the server holds its maximum of " + std::to_string(limits_.max_connections) + " connections";
    return false;
  }
  bool capped = std::find(limits_.uncapped_clients.begin(), limits_.uncapped_clients.end(), peer) ==
                limits_.uncapped_clients.end();
  size_t& n = per_client_[peer];
  if (capped && n >= limits_.max_per_client) {
    why = "this address holds its maximum of " + std::to_string(limits_.max_per_client) + " connections";
    if (n == 0) per_client_.erase(peer);
    return false;
  }
  ++n;
  ++open_;
  return true;
}

void GuardedServer::release(const std::string& peer) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = per_client_.find(peer);
  if (it != per_client_.end() && --it->second == 0) per_client_.erase(it);
  --open_;
}

void GuardedServer::refuse(Transport& t, int status, const std::string& why) {
  static const std::map<int, std::pair<const char*, const char*>> kinds = {
      {400, {"Bad Request", "bad-request"}},
      {408, {"Request Timeout", "request-timeout"}},
      {414, {"URI Too Long", "uri-too-long"}},
      {431, {"Request Header Fields Too Large", "headers-too-large"}},
      {503, {"Service Unavailable", "too-many-connections"}}};
  auto k = kinds.at(status);
  std::string response = canned(status, k.first, k.second, why);
  t.send_all(response.data(), response.size(), after(1));
  if (on_refused) on_refused(status, t.peer());
}

void GuardedServer::serve(Transport& t) {
  std::string buf;
  for (size_t n = 0; n < limits_.max_requests && !stopping_; ++n) {
    Head h = read_head(t, buf, after(n == 0 ? limits_.header_timeout_s : limits_.idle_timeout_s), limits_);
    switch (h) {
      case Head::Complete: break;
      case Head::Closed: return;
      case Head::TimedOut:
        refuse(t, 408, "the request head did not arrive within " + std::to_string(int(limits_.header_timeout_s)) + " s");
        return;
      case Head::UriTooLong:
        refuse(t, 414, "the request line exceeds " + std::to_string(limits_.max_uri_bytes) + " bytes");
        return;
      case Head::Malformed:
        refuse(t, 400, "a line of the request head does not end with CRLF");
        return;
      case Head::HeadersTooLarge:
        refuse(t, 431, "request headers exceed the limit (" + std::to_string(limits_.max_headers) + " fields, " +
                           std::to_string(limits_.max_header_bytes) + " bytes)");
        return;
    }
    if (std::string why = check_head(buf); !why.empty()) {
      refuse(t, 400, why);
      return;
    }
    ConnStream s(t, buf, after(limits_.body_timeout_s), limits_.write_timeout_s);
    t_close_after = false;
    t_body_end = BodyEnd::Whole;
    bool last = n + 1 == limits_.max_requests || stopping_;
    bool closed = false;
    bool ok = false;
    try {
      ok = process_request(s, last, closed, nullptr);
    } catch (...) {
      ok = false;  // the handlers catch their own; anything here ends only this connection
    }
    buf = s.unread();
    if (!ok || closed || last || t_close_after || t_body_end != BodyEnd::Whole) return;
  }
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  int port = 0;
  std::string peer = ::getpeername(sock, reinterpret_cast<sockaddr*>(&ss), &len) == 0 ? address_of(ss, port) : "";
  int flags = ::fcntl(sock, F_GETFL, 0);
  if (flags >= 0) ::fcntl(sock, F_SETFL, flags | O_NONBLOCK);
  std::string why;
  bool admitted = admit(peer, why);
  try {
    if (tls_) {
      TlsTransport t(tls_, sock, wake_[0], peer, port);
      if (admitted && t.handshake(after(limits_.header_timeout_s))) serve(t);
      if (!admitted && on_refused) on_refused(503, peer);
    } else {
      SocketTransport t(sock, wake_[0], peer, port);
      if (admitted) serve(t);
      else refuse(t, 503, why);
    }
  } catch (...) {
  }
  if (admitted) release(peer);
  // A response answered before its request was read must not be lost to a reset: stop
  // sending, then read what the client still sends for a moment (bounded), then close.
  ::shutdown(sock, SHUT_WR);
  char drain[16384];
  size_t drained = 0;
  auto until = after(0.5);
  while (drained < (1u << 20) && wait_fd(sock, POLLIN, -1, until)) {
    ssize_t r = ::recv(sock, drain, sizeof drain, MSG_DONTWAIT);
    if (r <= 0) break;
    drained += static_cast<size_t>(r);
  }
  ::close(sock);
  return true;
}

long MemoryTransport::recv_some(char* buf, size_t n, std::chrono::steady_clock::time_point) {
  size_t k = std::min(n, in_.size() - pos_);
  std::memcpy(buf, in_.data() + pos_, k);
  pos_ += k;
  return static_cast<long>(k);
}

bool MemoryTransport::send_all(const char* buf, size_t n, std::chrono::steady_clock::time_point) {
  out_.append(buf, n);
  return true;
}

// --- ElasticPool ------------------------------------------------------------------------

struct ElasticPool::State {
  std::mutex mu;
  std::condition_variable work, done;
  std::deque<std::function<void()>> jobs;
  size_t threads = 0, idle = 0, max_threads = 1;
  bool stop = false;
};

ElasticPool::ElasticPool(size_t max_threads) : s_(std::make_shared<State>()) {
  s_->max_threads = std::max<size_t>(1, max_threads);
}

ElasticPool::~ElasticPool() { shutdown(); }

void ElasticPool::enqueue(std::function<void()> fn) {
  std::unique_lock<std::mutex> g(s_->mu);
  s_->jobs.push_back(std::move(fn));
  // An idle thread that was notified but has not yet woken still counts as idle: spawn while
  // the queue holds more jobs than there are idle threads to take them.
  if (s_->jobs.size() > s_->idle && s_->threads < s_->max_threads) {
    ++s_->threads;
    std::shared_ptr<State> s = s_;
    try {
      std::thread([s] {
        std::unique_lock<std::mutex> g(s->mu);
        for (;;) {
          if (!s->jobs.empty()) {
            auto job = std::move(s->jobs.front());
            s->jobs.pop_front();
            g.unlock();
            try {
              job();
            } catch (...) {
            }
            g.lock();
            continue;
          }
          if (s->stop) break;
          ++s->idle;
          // An idle thread waits a while for the next connection, then ends.
          bool woke = s->work.wait_for(g, std::chrono::seconds(30), [&] { return s->stop || !s->jobs.empty(); });
          --s->idle;
          if (!woke) break;
        }
        --s->threads;
        s->done.notify_all();
      }).detach();
    } catch (const std::system_error&) {
      --s_->threads;  // no thread to be had now: the job waits for a running one
    }
  }
  s_->work.notify_one();
}

void ElasticPool::shutdown() {
  std::unique_lock<std::mutex> g(s_->mu);
  s_->stop = true;
  s_->work.notify_all();
  s_->done.wait(g, [&] { return s_->threads == 0; });
}

// --- TLS --------------------------------------------------------------------------------

SSL_CTX* make_tls_context(const std::string& cert, const std::string& key, std::string& error) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) {
    error = "cannot create a TLS context";
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1) {
    error = "cannot load the TLS certificate " + cert;
  } else if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    error = "cannot load the TLS key " + key;
  } else if (SSL_CTX_check_private_key(ctx) != 1) {
    error = "the TLS key does not match the certificate";
  } else {
    return ctx;
  }
  ERR_clear_error();
  SSL_CTX_free(ctx);
  return nullptr;
}

void free_tls_context(SSL_CTX* ctx) {
  if (ctx) SSL_CTX_free(ctx);
}

}  // namespace syspilot::service
