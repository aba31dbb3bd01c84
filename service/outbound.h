// Which hosts the service may connect to on a client's behalf: a URL is parsed without
// regular expressions, its host resolved, and refused unless every address is allowed (SSRF).
#pragma once
#include <string>
#include <vector>

#include "lpcl/diagnostics.h"

namespace syspilot::service {

// Addresses in the denied ranges (loopback, link-local and cloud metadata, private, CGNAT,
// unspecified, multicast, broadcast, reserved, and IPv6 forms that embed such an IPv4
// address) are refused unless an entry of `allow` matches. Others are always allowed.
struct OutboundPolicy {
  // A CIDR ("10.1.0.0/16", "fd00::/8"), one address ("127.0.0.1", "::1"), or a host name
  // ("llm.internal", compared case-insensitively with the URL's host, so every address it
  // resolves to is allowed). `syspilot serve --allow-outbound` fills it.
  std::vector<std::string> allow;
  // No check at all: for the CLI, where the person typing the URL is the one it runs for.
  bool allow_all = false;
};

// Longest URL accepted anywhere: longer ones are refused before any parsing or regex.
constexpr size_t kMaxUrlLength = 4096;

struct Url {
  std::string scheme;    // lowercase: "https"
  std::string userinfo;  // "user:password" as written (never echo it: see redact_url)
  std::string host;      // lowercase, IPv6 without brackets
  int port = 0;          // as written, else the scheme's default (0 when it has none)
  std::string target;    // path and query ("/" when empty); the fragment is dropped
  // "host", "host:8080" or "[::1]:8080": the port only when it is not the default.
  std::string authority() const;
};

// scheme "://" [userinfo "@"] host [":" port] [path] [?query] [#fragment]. Refuses control
// characters, spaces, backslashes and percent signs in the authority, so that this parser,
// curl and cpp-httplib cannot disagree about the host. False with `why`.
bool parse_url(const std::string& text, Url& out, std::string& why);

// For messages and logs: the userinfo replaced by "***" and the text cut to 200 characters.
std::string redact_url(const std::string& url);

// The denied range a numeric address falls in ("link-local 169.254.0.0/16"), or "" when
// the default policy allows it or `address` is not numeric.
std::string denied_range(const std::string& address);

// Checks the entries of OutboundPolicy::allow; reports each malformed one.
bool validate_allow_list(const std::vector<std::string>& allow, Diagnostics& diags);

// Adds the host of an operator-configured URL (an LLM endpoint, a regeneration feed) to the
// allow-list: what the operator wrote is trusted, what a client sends is checked.
void allow_host_of(OutboundPolicy& policy, const std::string& url);

// Without DNS, for request validation: length, syntax, scheme present, no credentials (with
// `user_allowed`, a user name without a password passes: ssh://git@host/...), and a host
// written as an address ("169.254.169.254", "127.1", "[::1]", "localhost") must be allowed.
bool validate_outbound_url(const std::string& url, const OutboundPolicy& policy, Diagnostics& diags,
                           const std::string& where, bool user_allowed = false);

// Right before connecting: resolves `host` and refuses ("outbound-denied") unless every
// address is allowed. `address` is the numeric address to connect to (the first resolved
// one), so that a second DNS answer cannot lead elsewhere; empty under allow_all.
bool check_outbound_host(const std::string& host, int port, const OutboundPolicy& policy, std::string& address,
                         Diagnostics& diags, const std::string& where);

// parse_url, then check_outbound_host.
bool check_outbound(const std::string& url, const OutboundPolicy& policy, Url& parsed, std::string& address,
                    Diagnostics& diags, const std::string& where);

}  // namespace syspilot::service
