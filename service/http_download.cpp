// Tarball downloads over http(s) with cpp-httplib: redirects followed by hand so that every
// hop passes the outbound policy before a connection is made, size capped, written to a
// temporary file and renamed only when complete (a kill leaves no truncated tarball).
#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "service/sources.h"

namespace syspilot::service {
namespace {

constexpr int kMaxRedirects = 5;

// Location may be absolute, scheme-relative ("//host/p"), absolute-path or relative.
std::string resolve_location(const Url& base, const std::string& location) {
  if (location.find("://") != std::string::npos && location.find("://") < location.find_first_of("/?#"))
    return location;
  std::string origin = base.scheme + "://" + base.authority();
  if (location.rfind("//", 0) == 0) return base.scheme + ":" + location;
  if (!location.empty() && location[0] == '/') return origin + location;
  std::string dir = base.target.substr(0, base.target.find('?'));
  dir = dir.substr(0, dir.rfind('/') + 1);
  return origin + dir + location;
}

}  // namespace

bool http_download(const std::string& url, const std::string& to, double timeout_s, const Cancel& cancel,
                   Diagnostics& diags, const OutboundPolicy& outbound) {
  const SourceLoc where{"source.url", 0, 0};
  const size_t kMax = size_t(2) << 30;  // 2 GiB: larger is not a library release
  std::string current = url;
  std::string tmp = to + ".part";
  for (int hop = 0;; ++hop) {
    Url u;
    std::string address, why;
    if (!parse_url(current, u, why)) {
      diags.error(where, "cannot download " + redact_url(current) + ": " + why, "bad-url", "use an http(s) URL");
      return false;
    }
    if (u.scheme != "http" && u.scheme != "https") {
      diags.error(where,
                  (hop == 0 ? "not an http(s) URL: " : "redirected to a URL that is not http(s): ") + redact_url(current),
                  "url-scheme", "tarballs are fetched over http or https only");
      return false;
    }
    if (!u.userinfo.empty()) {
      diags.error(where, "URLs with credentials are not followed: " + redact_url(current), "url-credentials",
                  "give the server access with ~/.netrc instead");
      return false;
    }
    // The check and the connection use the same address: a second DNS answer cannot differ.
    if (!check_outbound_host(u.host, u.port, outbound, address, diags, "source.url")) {
      if (hop > 0) diags.items().back().message += " (redirected from " + redact_url(url) + ")";
      return false;
    }
    std::unique_ptr<httplib::ClientImpl> cli;
    if (u.scheme == "https") cli = std::make_unique<httplib::SSLClient>(u.host, u.port);
    else cli = std::make_unique<httplib::ClientImpl>(u.host, u.port);
    if (!address.empty()) cli->set_hostname_addr_map({{u.host, address}});
    cli->set_follow_location(false);
    cli->set_connection_timeout(static_cast<time_t>(std::min(timeout_s, 30.0)));
    cli->set_read_timeout(static_cast<time_t>(timeout_s));

    std::ofstream out;
    size_t got = 0;
    bool too_big = false, stopped = false;
    int status = 0;
    std::string location;
    auto res = cli->Get(
        u.target,
        [&](const httplib::Response& r) {
          status = r.status;
          if (status >= 300 && status < 400 && r.has_header("Location")) {
            location = r.get_header_value("Location");
            return false;  // the body of a redirect is not wanted
          }
          if (status != 200) return false;
          out.open(tmp, std::ios::binary | std::ios::trunc);
          return static_cast<bool>(out);
        },
        [&](const char* data, size_t n) {
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
    if (out.is_open()) out.close();
    if (!location.empty()) {
      if (hop == kMaxRedirects) {
        diags.error(where, "download of " + redact_url(url) + " failed: more than " + std::to_string(kMaxRedirects) +
                               " redirects",
                    "fetch-failed", "give the final URL");
        return false;
      }
      if (location.size() > kMaxUrlLength) {
        diags.error(where, "download of " + redact_url(url) + " redirected to a URL longer than " +
                               std::to_string(kMaxUrlLength) + " characters",
                    "fetch-failed");
        return false;
      }
      current = resolve_location(u, location);
      continue;
    }
    if (!res || status != 200 || too_big || stopped) {
      std::remove(tmp.c_str());
      std::string why = stopped ? "cancelled"
                        : too_big ? "larger than 2 GiB"
                        : status != 0 && status != 200 ? "HTTP " + std::to_string(status)
                        : !res ? httplib::to_string(res.error())
                               : "HTTP " + std::to_string(status);
      diags.error(where, "download of " + redact_url(current) + " failed: " + why,
                  stopped ? "cancelled" : "fetch-failed", "check the URL from this machine");
      return false;
    }
    if (std::rename(tmp.c_str(), to.c_str()) != 0) {
      diags.error(SourceLoc{to, 0, 0}, "cannot move the download into place", "fetch-failed");
      return false;
    }
    return true;
  }
}

}  // namespace syspilot::service
