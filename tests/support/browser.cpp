// Headless Chromium over the DevTools pipe (--remote-debugging-pipe: commands on its fd 3,
// answers and events on its fd 4, each message JSON ended by a NUL byte), and the recording
// proxy that every non-loopback connection of the browser goes to.
#include "tests/support/browser.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "tuner/run.h"

extern char** environ;

namespace syspilot::testsupport {

using nlohmann::json;

std::string find_chromium() {
  if (const char* e = std::getenv("SYSPILOT_CHROMIUM"); e && *e) return access(e, X_OK) == 0 ? e : "";
  // Debian's binary, without the wrapper script that adds its extension and API-key settings.
  if (access("/usr/lib/chromium/chromium", X_OK) == 0) return "/usr/lib/chromium/chromium";
  for (const char* name : {"chromium", "chromium-browser"})
    if (std::string found = tuner::find_on_path(name); !found.empty()) return found;
  return "";
}

// --- the recording proxy -------------------------------------------------------------------

RecordingProxy::RecordingProxy() {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd_, 16) != 0 ||
      getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("the recording proxy cannot listen on loopback");
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { serve(); });
}

RecordingProxy::~RecordingProxy() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
}

std::vector<std::string> RecordingProxy::seen() const {
  std::lock_guard<std::mutex> g(mu_);
  return seen_;
}

void RecordingProxy::serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::string line;
    char ch;
    pollfd q{c, POLLIN, 0};
    while (line.size() < 1024 && poll(&q, 1, 1000) > 0 && read(c, &ch, 1) == 1 && ch != '\n') line += ch;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    {
      std::lock_guard<std::mutex> g(mu_);
      seen_.push_back(line.empty() ? "(a connection that sent nothing)" : line);
    }
    const char* refuse = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    (void)!write(c, refuse, strlen(refuse));
    close(c);
  }
}

// --- the browser ---------------------------------------------------------------------------

namespace {

// A pipe whose ends lie above the descriptors the child gets (3 and 4), close-on-exec.
bool high_pipe(int fds[2]) {
  int raw[2];
  if (pipe2(raw, O_CLOEXEC) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    fds[i] = fcntl(raw[i], F_DUPFD_CLOEXEC, 10);
    close(raw[i]);
  }
  return fds[0] >= 0 && fds[1] >= 0;
}

std::vector<unsigned char> base64_decode(const std::string& s) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<unsigned char> out;
  unsigned int acc = 0;
  int bits = 0;
  for (char c : s) {
    int v = value(c);
    if (v < 0) continue;
    acc = (acc << 6) | static_cast<unsigned int>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<unsigned char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

}  // namespace

std::unique_ptr<Browser> Browser::launch(const std::string& chromium, const std::string& profile_dir, int proxy_port,
                                         std::string& why, int width, int height) {
  std::unique_ptr<Browser> b(new Browser());
  b->width_ = width;
  b->height_ = height;
  int to[2], from[2];
  if (!high_pipe(to) || !high_pipe(from)) {
    why = "no pipe for the DevTools protocol";
    return nullptr;
  }
  std::vector<std::string> args = {
      chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
      "--user-data-dir=" + profile_dir, "--no-first-run", "--no-default-browser-check",
      "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
      "--disable-default-apps", "--no-pings", "--disable-domain-reliability", "--disable-breakpad",
      "--disable-client-side-phishing-detection", "--disable-field-trial-config", "--no-service-autorun",
      "--disable-features=NetworkTimeServiceQuerying,Translate,OptimizationHints,MediaRouter,"
      "AutofillServerCommunication,CertificateTransparencyComponentUpdater",
      "--disable-dev-shm-usage", "--metrics-recording-only", "--mute-audio", "--hide-scrollbars",
      "--force-color-profile=srgb",
      // Loopback goes direct (Chromium's implicit bypass); everything else to the recorder.
      "--proxy-server=http://127.0.0.1:" + std::to_string(proxy_port), "about:blank"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to[0], 3);
  posix_spawn_file_actions_adddup2(&fa, from[1], 4);
  const std::string log = profile_dir + ".log";
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // its helpers die with it
  posix_spawnattr_setpgroup(&attr, 0);
  int rc = posix_spawn(&b->pid_, chromium.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(to[0]);
  close(from[1]);
  b->to_browser_ = to[1];
  b->from_browser_ = from[0];
  if (rc != 0) {
    b->pid_ = -1;
    why = "cannot start " + chromium + ": " + strerror(rc);
    return nullptr;
  }
  b->reader_ = std::thread([p = b.get()] { p->read_loop(); });
  try {
    json target = b->call("Target.createTarget", {{"url", "about:blank"}}, 30, false);
    json attached = b->call("Target.attachToTarget", {{"targetId", target["targetId"]}, {"flatten", true}}, 10, false);
    b->session_ = attached["sessionId"].get<std::string>();
    for (const char* domain : {"Page.enable", "Runtime.enable", "Network.enable", "Log.enable"})
      b->call(domain, json::object(), 10);
    b->call("Emulation.setDeviceMetricsOverride",
            {{"width", width}, {"height", height}, {"deviceScaleFactor", 1}, {"mobile", false}}, 10);
  } catch (const std::exception& e) {
    why = std::string("Chromium did not answer over the DevTools pipe: ") + e.what() + " (its log: " + log + ")";
    return nullptr;
  }
  return b;
}

Browser::~Browser() {
  if (pid_ > 0) {
    try {
      call("Browser.close", json::object(), 5, false);
    } catch (...) {
    }
    int status = 0;
    for (int i = 0; i < 50 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(-pid_, SIGKILL);
    waitpid(pid_, &status, WNOHANG);
  }
  if (to_browser_ >= 0) close(to_browser_);
  if (reader_.joinable()) reader_.join();
  if (from_browser_ >= 0) close(from_browser_);
}

void Browser::read_loop() {
  std::string buf;
  char chunk[65536];
  for (;;) {
    ssize_t n = read(from_browser_, chunk, sizeof chunk);
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t end;
    while ((end = buf.find('\0')) != std::string::npos) {
      json m = json::parse(buf.substr(0, end), nullptr, false);
      buf.erase(0, end + 1);
      if (!m.is_object()) continue;
      std::lock_guard<std::mutex> g(mu_);
      try {
        if (m.contains("id") && m["id"].is_number_integer()) {
          const long long id = m["id"].get<long long>();  // before m is moved from
          answers_[id] = std::move(m);
        } else if (!m.contains("id")) {
          on_event(m);
        }
      } catch (const std::exception& e) {
        problems_.push_back(std::string("an unreadable DevTools message: ") + e.what());
      }
      cv_.notify_all();
    }
  }
  std::lock_guard<std::mutex> g(mu_);
  closed_ = true;
  cv_.notify_all();
}

// Called with mu_ held.
void Browser::on_event(const json& m) {
  const std::string method = m.value("method", "");
  const json& p = m.contains("params") ? m["params"] : json::object();
  if (method == "Page.loadEventFired") {
    ++loads_;
  } else if (method == "Network.requestWillBeSent") {
    requests_.push_back(p["request"].value("url", ""));
  } else if (method == "Runtime.exceptionThrown") {
    const json& d = p["exceptionDetails"];
    std::string what = d.contains("exception") ? d["exception"].value("description", "") : "";
    problems_.push_back("exception: " + d.value("text", "") + " " + what);
  } else if (method == "Runtime.consoleAPICalled" && p.value("type", "") == "error") {
    std::string text;
    for (const auto& a : p["args"]) text += (text.empty() ? "" : " ") + a.value("description", a.value("value", json("")).dump());
    problems_.push_back("console.error: " + text);
  } else if (method == "Log.entryAdded" && p["entry"].value("level", "") == "error") {
    problems_.push_back("log: " + p["entry"].value("text", "") + " " + p["entry"].value("url", ""));
  } else if (method == "Network.loadingFailed" &&
             (p.value("errorText", "") != "net::ERR_ABORTED" || p.contains("blockedReason"))) {
    // An aborted request is one the page left behind when it was navigated away from.
    problems_.push_back("request failed: " + p.value("errorText", "") +
                        (p.contains("blockedReason") ? " (blocked: " + p["blockedReason"].get<std::string>() + ")" : ""));
  }
}

json Browser::call(const std::string& method, const json& params, double timeout_s, bool on_page) {
  long long id;
  json msg = {{"method", method}, {"params", params}};
  {
    std::lock_guard<std::mutex> g(mu_);
    id = ++next_id_;
  }
  msg["id"] = id;
  if (on_page) msg["sessionId"] = session_;
  std::string text = msg.dump();
  text.push_back('\0');
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = write(to_browser_, text.data() + off, text.size() - off);
    if (n <= 0) throw std::runtime_error("the browser's pipe is closed");
    off += static_cast<size_t>(n);
  }
  std::unique_lock<std::mutex> g(mu_);
  bool got = cv_.wait_for(g, std::chrono::duration<double>(timeout_s),
                          [&] { return answers_.count(id) > 0 || closed_; });
  if (!got || !answers_.count(id)) throw std::runtime_error(method + ": no answer" + (closed_ ? " (browser gone)" : ""));
  json answer = std::move(answers_[id]);
  answers_.erase(id);
  if (answer.contains("error")) throw std::runtime_error(method + ": " + answer["error"].dump());
  return answer.value("result", json::object());
}

bool Browser::load(const std::string& url, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (const std::string& u : {std::string("about:blank"), url}) {
    long long before;
    {
      std::lock_guard<std::mutex> g(mu_);
      before = loads_;
    }
    try {
      call("Page.navigate", {{"url", u}}, timeout_s);
    } catch (const std::exception&) {
      return false;
    }
    std::unique_lock<std::mutex> g(mu_);
    if (!cv_.wait_until(g, deadline, [&] { return loads_ > before || closed_; }) || closed_) return false;
  }
  return true;
}

json Browser::eval(const std::string& expression, double timeout_s) {
  json r = call("Runtime.evaluate",
                {{"expression", expression}, {"awaitPromise", true}, {"returnByValue", true}}, timeout_s);
  if (r.contains("exceptionDetails"))
    throw std::runtime_error("script threw: " + r["exceptionDetails"].dump().substr(0, 500));
  return r["result"].value("value", json());
}

bool Browser::wait_for(const std::string& expression, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    json v = eval("!!(" + expression + ")");
    if (v.is_boolean() && v.get<bool>()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

bool Browser::screenshot(const std::string& path, int max_height) {
  try {
    json m = call("Page.getLayoutMetrics", json::object(), 10);
    int h = height_;
    if (m.contains("cssContentSize")) h = static_cast<int>(m["cssContentSize"].value("height", double(height_)));
    h = std::min(std::max(h, height_), max_height);
    call("Emulation.setDeviceMetricsOverride",
         {{"width", width_}, {"height", h}, {"deviceScaleFactor", 1}, {"mobile", false}}, 10);
    json shot = call("Page.captureScreenshot", {{"format", "png"}}, 30);
    call("Emulation.setDeviceMetricsOverride",
         {{"width", width_}, {"height", height_}, {"deviceScaleFactor", 1}, {"mobile", false}}, 10);
    auto bytes = base64_decode(shot.value("data", ""));
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return out.good() && !bytes.empty();
  } catch (const std::exception&) {
    return false;
  }
}

std::vector<std::string> Browser::requests() const {
  std::lock_guard<std::mutex> g(mu_);
  return requests_;
}

std::vector<std::string> Browser::problems() const {
  std::lock_guard<std::mutex> g(mu_);
  return problems_;
}

void Browser::clear() {
  std::lock_guard<std::mutex> g(mu_);
  requests_.clear();
  problems_.clear();
}

}  // namespace syspilot::testsupport
