// The dashboard served at `/` by `syspilot serve`: its files (service/dashboard/), built into
// the binary so that it needs nothing at run time, and the security headers of every response.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace syspilot::service {

struct Asset {
  std::string_view name;          // "index.html", "app.js", ...
  std::string_view body;
  const char* content_type;
  std::string_view digest;        // SHA-256 of the body, hex: the ETag
};

// An embedded file by name; nullptr when there is none.
const Asset* find_asset(const std::string& name);

// Headers every response carries: a Content-Security-Policy that allows scripts, styles and
// requests only from the server itself and no inline script, and what keeps a page from being
// framed, sniffed or leaking its address.
const std::vector<std::pair<std::string, std::string>>& security_headers();

}  // namespace syspilot::service
