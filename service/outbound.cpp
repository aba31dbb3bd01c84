// The outbound policy: a plain URL parser (long hostile input cannot exhaust a regex's
// recursion), address ranges denied by default, the operator's allow-list, resolution.
#include "service/outbound.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>

namespace syspilot::service {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A message quotes at most this much of a value a client sent.
std::string shown(const std::string& s) { return s.size() <= 200 ? s : s.substr(0, 200) + "..."; }

int default_port(const std::string& scheme) {
  if (scheme == "http") return 80;
  if (scheme == "https") return 443;
  if (scheme == "git") return 9418;
  if (scheme == "ssh") return 22;
  return 0;
}

bool host_name_char(unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_'; }

bool valid_host_name(const std::string& h) {
  return !h.empty() && h.size() <= 253 && std::all_of(h.begin(), h.end(), [](unsigned char c) { return host_name_char(c); });
}

// "Example.ORG." and "example.org" name the same host.
std::string canonical_name(std::string h) {
  h = lower(std::move(h));
  while (!h.empty() && h.back() == '.') h.pop_back();
  return h;
}

// An address in network order; IPv4 in the first four bytes.
struct Ip {
  bool v4 = false;
  std::array<uint8_t, 16> b{};
};

// IPv4-mapped IPv6 (::ffff:a.b.c.d) is the IPv4 address on the wire: treat it as one.
Ip unmap(Ip ip) {
  if (ip.v4) return ip;
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(ip.b.data(), prefix, 12) != 0) return ip;
  Ip v;
  v.v4 = true;
  std::copy(ip.b.begin() + 12, ip.b.end(), v.b.begin());
  return v;
}

bool parse_numeric(const std::string& text, Ip& out) {
  Ip ip;
  if (inet_pton(AF_INET, text.c_str(), ip.b.data()) == 1) ip.v4 = true;
  else if (inet_pton(AF_INET6, text.c_str(), ip.b.data()) != 1) return false;
  out = unmap(ip);
  return true;
}

std::string to_text(const Ip& ip) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(ip.v4 ? AF_INET : AF_INET6, ip.b.data(), buf, sizeof buf);
  return buf;
}

// Other IPv6 forms that carry an IPv4 address a gateway may deliver to: IPv4-compatible
// (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
std::optional<Ip> embedded_v4(const Ip& ip) {
  if (ip.v4) return std::nullopt;
  Ip v;
  v.v4 = true;
  static const uint8_t zero[12] = {};
  static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(ip.b.data(), zero, 12) == 0) {
    bool unspecified_or_loopback = ip.b[12] == 0 && ip.b[13] == 0 && ip.b[14] == 0 && ip.b[15] <= 1;
    if (unspecified_or_loopback) return std::nullopt;  // ::, ::1 have their own ranges
    std::copy(ip.b.begin() + 12, ip.b.end(), v.b.begin());
    return v;
  }
  if (std::memcmp(ip.b.data(), nat64, 12) == 0) {
    std::copy(ip.b.begin() + 12, ip.b.end(), v.b.begin());
    return v;
  }
  if (ip.b[0] == 0x20 && ip.b[1] == 0x02) {
    std::copy(ip.b.begin() + 2, ip.b.begin() + 6, v.b.begin());
    return v;
  }
  return std::nullopt;
}

struct Cidr {
  Ip net;
  int bits = 0;
  bool contains(const Ip& ip) const {
    if (ip.v4 != net.v4) return false;
    int full = bits / 8, rest = bits % 8;
    if (std::memcmp(ip.b.data(), net.b.data(), full) != 0) return false;
    if (rest == 0) return true;
    uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
    return (ip.b[full] & mask) == (net.b[full] & mask);
  }
};

// "10.0.0.0/8", "::1", "[fd00::]/8". False for anything else.
bool parse_cidr(std::string text, Cidr& out) {
  std::string len;
  bool has_len = false;
  if (auto slash = text.find('/'); slash != std::string::npos) {
    has_len = true;
    len = text.substr(slash + 1);
    text.resize(slash);
  }
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  Ip ip;
  if (!parse_numeric(text, ip)) return false;
  int max = ip.v4 ? 32 : 128;
  int bits = max;
  if (has_len) {
    if (len.empty() || len.size() > 3 || !std::all_of(len.begin(), len.end(), ::isdigit)) return false;
    bits = std::stoi(len);
    // "::ffff:10.0.0.0/104" is 10.0.0.0/8 once unmapped.
    bool was_mapped = ip.v4 && text.find(':') != std::string::npos;
    if (was_mapped) bits -= 96;
    if (bits < 0 || bits > max) return false;
  }
  out = Cidr{ip, bits};
  return true;
}

struct Range {
  Cidr cidr;
  std::string what;  // "link-local 169.254.0.0/16"
};

const std::vector<Range>& denied_ranges() {
  static const std::vector<Range> ranges = [] {
    const std::pair<const char*, const char*> table[] = {
        {"0.0.0.0/8", "unspecified (\"this network\")"},
        {"10.0.0.0/8", "private"},
        {"100.64.0.0/10", "carrier-grade NAT"},
        {"127.0.0.0/8", "loopback"},
        {"169.254.0.0/16", "link-local (cloud metadata)"},
        {"172.16.0.0/12", "private"},
        {"192.0.0.0/24", "IETF protocol assignments"},
        {"192.168.0.0/16", "private"},
        {"198.18.0.0/15", "benchmarking"},
        {"224.0.0.0/4", "multicast"},
        {"240.0.0.0/4", "reserved and broadcast"},
        {"::/128", "unspecified"},
        {"::1/128", "loopback"},
        {"fe80::/10", "link-local"},
        {"fec0::/10", "site-local"},
        {"fc00::/7", "unique local (private)"},
        {"ff00::/8", "multicast"},
    };
    std::vector<Range> out;
    for (auto& [cidr, what] : table) {
      Range r;
      parse_cidr(cidr, r.cidr);
      r.what = std::string(what) + " " + cidr;
      out.push_back(r);
    }
    return out;
  }();
  return ranges;
}

std::string range_of(const Ip& ip) {
  for (auto& r : denied_ranges())
    if (r.cidr.contains(ip)) return r.what;
  return {};
}

struct AllowList {
  std::vector<Cidr> cidrs;
  std::vector<std::string> names;
};

AllowList parse_allow(const std::vector<std::string>& entries) {
  AllowList a;
  for (auto& e : entries) {
    Cidr c;
    if (parse_cidr(e, c)) a.cidrs.push_back(c);
    else if (valid_host_name(e)) a.names.push_back(canonical_name(e));
  }
  return a;
}

bool name_allowed(const AllowList& a, const std::string& host) {
  std::string h = canonical_name(host);
  return std::find(a.names.begin(), a.names.end(), h) != a.names.end();
}

// "" when `ip` may be reached, else why not ("link-local 169.254.0.0/16").
std::string refusal(const AllowList& a, const Ip& ip) {
  std::vector<Ip> forms = {ip};
  if (auto v4 = embedded_v4(ip)) forms.push_back(*v4);
  for (auto& f : forms)
    for (auto& c : a.cidrs)
      if (c.contains(f)) return {};
  for (size_t i = 0; i < forms.size(); ++i) {
    std::string r = range_of(forms[i]);
    if (!r.empty()) return i == 0 ? r : r + " (embedded " + to_text(forms[i]) + ")";
  }
  return {};
}

void deny(Diagnostics& diags, const std::string& where, const std::string& host, const std::string& address,
          const std::string& range) {
  std::string subject = host == address ? address : shown(host) + " (" + address + ")";
  diags.error(SourceLoc{where, 0, 0},
              "outbound connection to " + subject + " refused: " + address + " is in the " + range + " range",
              "outbound-denied",
              "the service does not reach internal addresses for a client; if this host is meant to be "
              "reachable, an operator can allow it with: syspilot serve --allow-outbound " +
                  (host == address ? address : shown(host)) + " (or a CIDR)");
}

}  // namespace

std::string Url::authority() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return port == 0 || port == default_port(scheme) ? h : h + ":" + std::to_string(port);
}

bool parse_url(const std::string& text, Url& out, std::string& why) {
  out = Url{};
  if (text.size() > kMaxUrlLength) {
    why = "the URL is " + std::to_string(text.size()) + " characters long; the limit is " +
          std::to_string(kMaxUrlLength);
    return false;
  }
  for (unsigned char c : text)
    if (c <= 0x20 || c == 0x7f || c == '\\') {
      why = "the URL contains a space, a backslash or a control character";
      return false;
    }
  size_t i = 0;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '+' ||
                             text[i] == '.' || text[i] == '-'))
    ++i;
  if (i == 0 || !std::isalpha(static_cast<unsigned char>(text[0])) || text.compare(i, 3, "://") != 0) {
    why = "not an absolute URL (scheme://host/...)";
    return false;
  }
  out.scheme = lower(text.substr(0, i));
  size_t auth_begin = i + 3;
  size_t auth_end = text.find_first_of("/?#", auth_begin);
  if (auth_end == std::string::npos) auth_end = text.size();
  std::string authority = text.substr(auth_begin, auth_end - auth_begin);
  if (auto at = authority.rfind('@'); at != std::string::npos) {
    out.userinfo = authority.substr(0, at);
    authority = authority.substr(at + 1);
  }
  if (authority.find('%') != std::string::npos) {
    why = "percent-encoding in the host is not accepted";
    return false;
  }
  std::string port;
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string::npos) {
      why = "unterminated '[' in the host";
      return false;
    }
    out.host = lower(authority.substr(1, close - 1));
    std::string after = authority.substr(close + 1);
    if (!after.empty() && after[0] != ':') {
      why = "unexpected text after ']' in the host";
      return false;
    }
    if (!after.empty()) port = after.substr(1);
    Ip ip;
    if (!parse_numeric(out.host, ip) || out.host.find(':') == std::string::npos) {
      why = "'[" + shown(out.host) + "]' is not an IPv6 address";
      return false;
    }
  } else {
    auto colon = authority.find(':');
    out.host = lower(authority.substr(0, colon));
    if (colon != std::string::npos) port = authority.substr(colon + 1);
    if (!valid_host_name(out.host)) {
      why = out.host.empty() ? "the URL has no host" : "the host '" + shown(out.host) + "' is not a host name";
      return false;
    }
  }
  if (!port.empty()) {
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit) || std::stoi(port) == 0 ||
        std::stoi(port) > 65535) {
      why = "the port '" + shown(port) + "' is not a number from 1 to 65535";
      return false;
    }
    out.port = std::stoi(port);
  } else {
    out.port = default_port(out.scheme);
  }
  size_t frag = text.find('#', auth_end);
  out.target = text.substr(auth_end, frag == std::string::npos ? std::string::npos : frag - auth_end);
  if (out.target.empty() || out.target[0] != '/') out.target = "/" + out.target;
  return true;
}

std::string redact_url(const std::string& url) {
  std::string s = url;
  auto scheme_end = s.find("://");
  if (scheme_end != std::string::npos) {
    size_t begin = scheme_end + 3;
    size_t end = s.find_first_of("/?#", begin);
    if (end == std::string::npos) end = s.size();
    auto at = s.rfind('@', end - 1);
    if (at != std::string::npos && at >= begin && end > begin) s.replace(begin, at - begin, "***");
  }
  return shown(s);
}

std::string denied_range(const std::string& address) {
  Ip ip;
  if (!parse_numeric(address, ip)) return {};
  return refusal(AllowList{}, ip);
}

bool validate_allow_list(const std::vector<std::string>& allow, Diagnostics& diags) {
  bool ok = true;
  for (auto& e : allow) {
    Cidr c;
    if (parse_cidr(e, c) || valid_host_name(e)) continue;
    diags.error(SourceLoc{"allow-outbound", 0, 0}, "'" + shown(e) + "' is neither an address, a CIDR nor a host name",
                "bad-option", "for example 10.1.0.0/16, 127.0.0.1, fd00::/8 or llm.internal");
    ok = false;
  }
  return ok;
}

void allow_host_of(OutboundPolicy& policy, const std::string& url) {
  Url u;
  std::string why;
  if (!parse_url(url, u, why)) return;  // not a network URL (a path, file://): nothing to allow
  if (std::find(policy.allow.begin(), policy.allow.end(), u.host) == policy.allow.end()) policy.allow.push_back(u.host);
}

bool validate_outbound_url(const std::string& url, const OutboundPolicy& policy, Diagnostics& diags,
                           const std::string& where, bool user_allowed) {
  Url u;
  std::string why;
  if (!parse_url(url, u, why)) {
    diags.error(SourceLoc{where, 0, 0}, "invalid URL " + redact_url(url) + ": " + why, "bad-url",
                "use scheme://host[:port]/path");
    return false;
  }
  if (!u.userinfo.empty() && (!user_allowed || u.userinfo.find(':') != std::string::npos)) {
    diags.error(SourceLoc{where, 0, 0}, "URLs with credentials are not accepted: " + redact_url(url), "url-credentials",
                "remove the user name and password from the URL; give the server access with a git credential "
                "helper, ~/.netrc or an ssh key on the server instead");
    return false;
  }
  if (policy.allow_all) return true;
  AllowList a = parse_allow(policy.allow);
  if (name_allowed(a, u.host)) return true;
  // An address written as a number in any form getaddrinfo reads ("127.1", "2130706433").
  std::string numeric;
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(u.host.c_str(), nullptr, &hints, &res) == 0 && res) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (res->ai_family == AF_INET)
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof buf);
    else if (res->ai_family == AF_INET6)
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(res->ai_addr)->sin6_addr, buf, sizeof buf);
    numeric = buf;
    freeaddrinfo(res);
  } else {
    std::string name = canonical_name(u.host);
    const std::string tld = ".localhost";
    bool local = name == "localhost" ||
                 (name.size() > tld.size() && name.compare(name.size() - tld.size(), tld.size(), tld) == 0);
    if (local) numeric = "127.0.0.1";  // RFC 6761: always loopback, whatever DNS says
  }
  if (numeric.empty()) return true;  // a name: resolved and checked right before connecting
  Ip ip;
  if (!parse_numeric(numeric, ip)) return true;
  std::string r = refusal(a, ip);
  if (r.empty()) return true;
  deny(diags, where, u.host, to_text(ip), r);
  return false;
}

bool check_outbound_host(const std::string& host, int port, const OutboundPolicy& policy, std::string& address,
                         Diagnostics& diags, const std::string& where) {
  address.clear();
  if (policy.allow_all) return true;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = port > 0 ? std::to_string(port) : std::string();
  int rc = getaddrinfo(host.c_str(), service.empty() ? nullptr : service.c_str(), &hints, &res);
  if (rc != 0 || !res) {
    diags.error(SourceLoc{where, 0, 0}, "cannot resolve host " + shown(host) + ": " + gai_strerror(rc),
                "fetch-failed", "check the host name from this machine");
    return false;
  }
  AllowList a = parse_allow(policy.allow);
  bool by_name = name_allowed(a, host);
  std::vector<Ip> addrs;
  for (addrinfo* p = res; p; p = p->ai_next) {
    Ip ip;
    if (p->ai_family == AF_INET) {
      ip.v4 = true;
      std::memcpy(ip.b.data(), &reinterpret_cast<sockaddr_in*>(p->ai_addr)->sin_addr, 4);
    } else if (p->ai_family == AF_INET6) {
      std::memcpy(ip.b.data(), &reinterpret_cast<sockaddr_in6*>(p->ai_addr)->sin6_addr, 16);
      ip = unmap(ip);
    } else {
      continue;
    }
    addrs.push_back(ip);
  }
  freeaddrinfo(res);
  if (addrs.empty()) {
    diags.error(SourceLoc{where, 0, 0}, "host " + shown(host) + " has no IPv4 or IPv6 address", "fetch-failed");
    return false;
  }
  // Every address, not only the first: a name that also resolves to 127.0.0.1 is refused,
  // whichever address a client library would have tried.
  if (!by_name)
    for (auto& ip : addrs) {
      std::string r = refusal(a, ip);
      if (!r.empty()) {
        deny(diags, where, host, to_text(ip), r);
        return false;
      }
    }
  address = to_text(addrs.front());
  return true;
}

bool check_outbound(const std::string& url, const OutboundPolicy& policy, Url& parsed, std::string& address,
                    Diagnostics& diags, const std::string& where) {
  std::string why;
  if (!parse_url(url, parsed, why)) {
    diags.error(SourceLoc{where, 0, 0}, "invalid URL " + redact_url(url) + ": " + why, "bad-url",
                "use scheme://host[:port]/path");
    return false;
  }
  return check_outbound_host(parsed.host, parsed.port, policy, address, diags, where);
}

}  // namespace syspilot::service
