// Tarball downloads over http(s) with cpp-httplib: redirects followed, size capped, written
// to a temporary file and renamed only when complete (a kill leaves no truncated tarball).
#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <regex>

#include "service/sources.h"

namespace syspilot::service {

bool http_download(const std::string& url, const std::string& to, double timeout_s, const Cancel& cancel,
                   Diagnostics& diags) {
  static const std::regex url_re("^(https?://[^/?#]+)([^#]*)$", std::regex::icase);
  std::smatch m;
  if (!std::regex_match(url, m, url_re)) {
    diags.error(SourceLoc{"source.url", 0, 0}, "not an http(s) URL: " + url, "url-scheme");
    return false;
  }
  std::string path = m[2].str().empty() ? "/" : m[2].str();
  httplib::Client cli(m[1].str());
  cli.set_follow_location(true);
  cli.set_connection_timeout(static_cast<time_t>(std::min(timeout_s, 30.0)));
  cli.set_read_timeout(static_cast<time_t>(timeout_s));
  const size_t kMax = size_t(2) << 30;  // 2 GiB: larger is not a library release
  std::string tmp = to + ".part";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  size_t got = 0;
  bool too_big = false, stopped = false;
  auto res = cli.Get(path.c_str(), [&](const char* data, size_t n) {
    got += n;
    if (got > kMax) {
      too_big = true;
      return false;
    }
    if (cancel && cancel()) {
      stopped = true;
      return false;
    }
    out.write(data, static_cast<std::streamsize>(n));
    return static_cast<bool>(out);
  });
  out.close();
  if (!res || res->status != 200 || too_big || stopped) {
    std::remove(tmp.c_str());
    std::string why = stopped ? "cancelled"
                      : too_big ? "larger than 2 GiB"
                      : !res    ? httplib::to_string(res.error())
                                : "HTTP " + std::to_string(res->status);
    diags.error(SourceLoc{"source.url", 0, 0}, "download of " + url + " failed: " + why,
                stopped ? "cancelled" : "fetch-failed", "check the URL from this machine");
    return false;
  }
  if (std::rename(tmp.c_str(), to.c_str()) != 0) {
    diags.error(SourceLoc{to, 0, 0}, "cannot move the download into place", "fetch-failed");
    return false;
  }
  return true;
}

}  // namespace syspilot::service
