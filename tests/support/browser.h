// Headless Chromium driven over the DevTools protocol (a pipe, no port), for the dashboard's
// browser tests and its benchmark: load a page, evaluate script in it, take screenshots, and
// record every request the page makes and every error it reports. Every connection Chromium
// opens to anything but loopback goes to a recording proxy that refuses it, so that nothing
// leaves the machine: the page's requests are seen by the protocol, and the browser's own
// (its update and sign-in checks, which no page asks for) end at the proxy.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace syspilot::testsupport {

// The Chromium to run: $SYSPILOT_CHROMIUM, else Debian's /usr/lib/chromium/chromium, else
// chromium or chromium-browser on PATH; "" when none is installed.
std::string find_chromium();

// A loopback listener standing in for a proxy: it records the first line of each connection
// (a CONNECT or an absolute URL) and refuses it.
class RecordingProxy {
 public:
  RecordingProxy();
  ~RecordingProxy();
  int port() const { return port_; }
  std::vector<std::string> seen() const;

 private:
  void serve();
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<std::string> seen_;
  std::thread thread_;
};

class Browser {
 public:
  // Starts `chromium` headless with a fresh profile under `profile_dir`, a page of
  // width x height CSS pixels, and every non-loopback connection sent to `proxy_port`.
  // Returns nullptr with `why` set when it cannot be started.
  static std::unique_ptr<Browser> launch(const std::string& chromium, const std::string& profile_dir,
                                         int proxy_port, std::string& why, int width = 1280, int height = 900);
  ~Browser();
  Browser(const Browser&) = delete;
  Browser& operator=(const Browser&) = delete;

  // Loads `url` in the page (through about:blank, so that a change of fragment alone loads
  // it again) and waits for its load event. False on timeout.
  bool load(const std::string& url, double timeout_s = 20);
  // The value of a script expression in the page (promises awaited), as JSON; throws
  // std::runtime_error when it throws or the browser does not answer in time.
  nlohmann::json eval(const std::string& expression, double timeout_s = 10);
  // Evaluates `expression` until it is truthy; false on timeout.
  bool wait_for(const std::string& expression, double timeout_s = 15);
  // A PNG of the whole page (its full height, at most `max_height` pixels) at `path`.
  bool screenshot(const std::string& path, int max_height = 4000);

  // Every URL the page requested since launch (or the last clear()).
  std::vector<std::string> requests() const;
  // Errors the page reported: uncaught exceptions, console errors, refused loads (Content
  // Security Policy included).
  std::vector<std::string> problems() const;
  void clear();

 private:
  Browser() = default;
  nlohmann::json call(const std::string& method, const nlohmann::json& params, double timeout_s,
                      bool on_page = true);
  void read_loop();
  void on_event(const nlohmann::json& m);

  pid_t pid_ = -1;
  int to_browser_ = -1, from_browser_ = -1;
  int width_ = 1280, height_ = 900;
  std::string session_;  // the page's DevTools session
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  long long next_id_ = 0;
  std::map<long long, nlohmann::json> answers_;
  bool closed_ = false;
  long long loads_ = 0;  // Page.loadEventFired seen
  std::vector<std::string> requests_, problems_;
};

}  // namespace syspilot::testsupport
