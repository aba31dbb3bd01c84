// The dashboard's embedded files (generated into dashboard_assets.cpp by embed_assets.cmake)
// and the security headers of every response.
#include "service/dashboard.h"

namespace syspilot::service {

// Generated: the files of service/dashboard/, sorted by name.
extern const Asset kDashboardAssets[];
extern const size_t kDashboardAssetCount;

const Asset* find_asset(const std::string& name) {
  for (size_t i = 0; i < kDashboardAssetCount; ++i)
    if (kDashboardAssets[i].name == name) return &kDashboardAssets[i];
  return nullptr;
}

const std::vector<std::pair<std::string, std::string>>& security_headers() {
  // No inline script or style, nothing from elsewhere; Trusted Types make an assignment of a
  // string to innerHTML (or any other HTML sink) an error in the browser.
  static const std::vector<std::pair<std::string, std::string>> headers = {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; "
       "trusted-types 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},
      {"Cross-Origin-Opener-Policy", "same-origin"},
      {"Cross-Origin-Resource-Policy", "same-origin"},
      {"Permissions-Policy", "camera=(), microphone=(), geolocation=(), interest-cohort=()"},
  };
  return headers;
}

}  // namespace syspilot::service
