// The HTTP API: routes, authentication, limits, errors, metrics, and the lifecycle of the
// service (listener, job workers, the regeneration timer, graceful shutdown).
#include <httplib.h>
#include <signal.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <random>
#include <filesystem>
#include <iostream>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>

#include "lpcl/lexer.h"
#include "lpcl/lpcl.h"
#include "service/compose.h"
#include "service/connection.h"
#include "service/dashboard.h"
#include "service/jobs.h"
#include "service/json_forms.h"
#include "service/metrics.h"
#include "service/outbound.h"
#include "service/regen.h"
#include "service/schema.h"
#include "service/service.h"
#include "service/sources.h"
#include "service/views.h"
#include "store/store.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace syspilot::service {

namespace {

thread_local std::string t_route;  // set by the matched route, read by the logger
thread_local std::string t_request_id;
thread_local std::chrono::steady_clock::time_point t_start;

// Every response is dumped with invalid UTF-8 replaced: messages quote what clients sent.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// At most `n` bytes of `s`, cut before a character rather than inside one.
std::string truncate_utf8(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n) + "...";
}

// A field of the access log: printable ASCII as is, everything else escaped, so that a
// request cannot write a line of its own.
// Writes one line of the log whole: concurrent requests' lines never interleave (a chain of
// `std::cerr <<` is one write per piece).
void log_line(const std::string& line) {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  std::cerr.write(line.data(), static_cast<std::streamsize>(line.size()));
  std::cerr.flush();
}

std::string log_field(const std::string& s, size_t max = 512) {
  static const char* hex = "0123456789abcdef";
  std::string o;
  for (size_t i = 0; i < s.size() && o.size() < max; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x21 && c < 0x7f && c != '\\' && c != '"') {
      o += static_cast<char>(c);
    } else {
      o += "\\x";
      o += hex[c >> 4];
      o += hex[c & 15];
    }
  }
  return o;
}

// Nesting depth of a JSON text (outside strings), counted before parsing, so that no deep
// value reaches a recursive walk. Stops counting past `limit`.
// How deep a JSON text nests arrays and objects, and how many values it holds (each array,
// object and comma outside strings), stopping once either passes its limit. Checked before
// parsing: the parsed form of a compact body is tens of times its size (a 1 MiB body of `{},`
// took 29 MB), so the count bounds what one request can make the server hold.
struct JsonShape {
  size_t depth = 0, values = 0;
};
JsonShape json_shape(const std::string& text, size_t depth_limit, size_t values_limit) {
  JsonShape out;
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      out.depth = std::max(out.depth, ++depth);
      ++out.values;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',') {
      ++out.values;
    }
    if (out.depth > depth_limit || out.values > values_limit) return out;
  }
  return out;
}

std::string new_request_id() {
  static std::atomic<unsigned long long> counter{0};
  static const unsigned long long salt = std::random_device{}();
  char buf[40];
  std::snprintf(buf, sizeof buf, "req_%06llx%08llx", salt & 0xffffff, ++counter);
  return buf;
}

bool iequals_prefix(const std::string& s, const std::string& prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

// A route pattern of literal segments and "{name}" segments that match one non-empty segment;
// matched without regular expressions, before anything else looks at the request.
bool path_matches(const std::string& pattern, const std::string& path) {
  size_t p = 0, q = 0;
  while (p < pattern.size() && q < path.size()) {
    if (pattern[p] == '{') {
      size_t close = pattern.find('}', p);
      size_t seg = path.find('/', q);
      if (seg == q) return false;
      p = close + 1;
      q = seg == std::string::npos ? path.size() : seg;
      continue;
    }
    if (pattern[p] != path[q]) return false;
    ++p;
    ++q;
  }
  return p == pattern.size() && q == path.size();
}

const std::regex kNameRe("^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$");
const std::regex kVersionRe(lpcl::kVersionPattern);
const std::regex kJobRe("^job_[0-9a-f]{1,64}$");

// A header value as a token: spaces and tabs around it trimmed, lower case.
std::string header_token(const std::string& v) {
  size_t b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t");
  if (b == std::string::npos) return {};
  std::string t = v.substr(b, e - b + 1);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return t;
}

// application/json or a +json type (application/problem+json), parameters aside.
bool json_media_type(const std::string& content_type) {
  std::string t = header_token(content_type.substr(0, content_type.find(';')));
  if (t == "application/json") return true;
  return t.rfind("application/", 0) == 0 && t.size() > 17 && t.compare(t.size() - 5, 5, "+json") == 0;
}

// A stored row's id: 1 to 18 decimal digits, no sign, no leading zero.
std::optional<std::int64_t> parse_id(const std::string& s) {
  if (s.empty() || s.size() > 18 || s[0] == '0' ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(s);
}

void send_error(httplib::Response& res, int status, const std::string& code, const std::string& message,
                const std::string& hint = {}, const json& diagnostics = nullptr) {
  json e = {{"code", code}, {"message", message}};
  if (!hint.empty()) e["hint"] = hint;
  if (!diagnostics.is_null()) e["diagnostics"] = diagnostics;
  if (!t_request_id.empty()) e["request_id"] = t_request_id;
  res.status = status;
  res.set_content(dump(json{{"error", e}}), "application/json");
}

void set_security_headers(httplib::Response& res) {
  for (const auto& [k, v] : security_headers()) res.set_header(k, v);
}

void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(dump(j), "application/json");
}

const char* default_code(int status) {
  switch (status) {
    case 400: return "bad-request";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "not-found";
    case 405: return "method-not-allowed";
    case 408: return "request-timeout";
    case 411: return "length-required";
    case 413: return "payload-too-large";
    case 414: return "uri-too-long";
    case 429: return "too-many-requests";
    case 431: return "headers-too-large";
    case 503: return "unavailable";
    default: return status >= 500 ? "internal" : "error";
  }
}

bool etag_matches(const std::string& header, const std::string& etag) {
  if (header.empty()) return false;
  if (header == "*") return true;
  size_t pos = 0;
  while (pos <= header.size()) {
    size_t comma = header.find(',', pos);
    std::string item = header.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.rfind("W/", 0) == 0) item = item.substr(2);
    if (item == etag) return true;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return false;
}

std::string version_list(const store::Store& st, const std::string& lib) {
  std::string s;
  for (auto& v : st.versions(lib)) s += (s.empty() ? "" : ", ") + v.version;
  return s.empty() ? "none" : s;
}

}  // namespace

struct Service::Impl {
  ServiceOptions opts;
  SourcePolicy policy;
  std::optional<RegenConfig> regen;
  std::optional<synth::LlmConfig> default_llm;
  Metrics metrics;
  std::unique_ptr<JobQueue> jobs;
  std::unique_ptr<GuardedServer> http;
  SSL_CTX* tls = nullptr;
  std::thread listener;
  std::thread regen_timer;
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false;
  bool started = false;
  int port = 0;

  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  struct RouteInfo {
    std::string method, label;  // label: the pattern, "/v1/jobs/{id}"
    std::optional<Scope> need;
  };
  std::vector<RouteInfo> route_table;  // what the pre-routing handler authorizes against

  // --- auth -----------------------------------------------------------------------------
  bool authorize(const httplib::Request& req, httplib::Response& res, Scope need) {
    if (need == Scope::Read && opts.public_read) return true;
    Scope scope;
    if (!token_scope(req, res, scope)) return false;
    if (need == Scope::Write && scope != Scope::Write) {
      send_error(res, 403, "forbidden", "this token has scope 'read'; this request needs 'write'",
                 "use a token created with --scope write");
      return false;
    }
    return true;
  }

  // The scope of the request's bearer token; false, with 401 answered, when the header is
  // missing or not a bearer token, or the token unknown or revoked.
  bool token_scope(const httplib::Request& req, httplib::Response& res, Scope& out) {
    std::string h = req.get_header_value("Authorization");
    // The scheme is case-insensitive (RFC 9110 11.1); the token follows after spaces.
    if (iequals_prefix(h, "Bearer ")) {
      size_t t = 7;
      while (t < h.size() && h[t] == ' ') ++t;
      h = "Bearer " + h.substr(t);
    }
    if (h.empty()) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"syspilot\"");
      send_error(res, 401, "unauthorized", "this endpoint needs a bearer token",
                 "send 'Authorization: Bearer TOKEN'; create one with: syspilot serve token create --scope read");
      return false;
    }
    if (h.rfind("Bearer ", 0) != 0) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"syspilot\", error=\"invalid_request\"");
      send_error(res, 401, "unauthorized", "the Authorization header is not a bearer token",
                 "send 'Authorization: Bearer TOKEN'");
      return false;
    }
    auto scope = verify_token(thread_store(opts.db_path).db(), h.substr(7));
    if (!scope) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"syspilot\", error=\"invalid_token\"");
      send_error(res, 401, "unauthorized", "unknown or revoked token", "create a new one with syspilot serve token create");
      return false;
    }
    out = *scope;
    return true;
  }

  void route(const std::string& method, const std::string& pattern, const std::string& label,
             std::optional<Scope> need, Handler h) {
    route_table.push_back({method, label, need});
    // Authorization happened in the pre-routing handler, before the body was read.
    auto wrapped = [this, label, h](const httplib::Request& req, httplib::Response& res) {
      t_route = label;
      try {
        h(req, res);
      } catch (const store::StoreError& e) {
        send_error(res, 503, "store-unavailable", e.what(), "check the database file and retry");
      } catch (const std::exception& e) {
        internal_error(req, res, e.what());
      } catch (...) {
        internal_error(req, res, "unknown exception");
      }
    };
    if (method == "GET") http->Get(pattern, wrapped);
    else if (method == "POST") http->Post(pattern, wrapped);
    else if (method == "DELETE") http->Delete(pattern, wrapped);
  }

  // The methods the routes serve `path` with ("GET, HEAD"), or "" where no route serves it.
  std::string allowed_methods(const std::string& path) const {
    std::string allowed;
    for (auto& r : route_table)
      if (path_matches(r.label, path) && allowed.find(r.method) == std::string::npos)
        allowed += (allowed.empty() ? "" : ", ") + r.method;
    return allowed;
  }

  // Answers 500 with the request id and logs what happened under that id; the client learns
  // nothing of the server's internals.
  void internal_error(const httplib::Request& req, httplib::Response& res, const std::string& what) {
    res.headers.erase("Content-Length");
    log_line("syspilot serve: " + t_request_id + " " + log_field(req.method) + " " + log_field(req.path) +
             ": internal error: " + log_field(what, 2000) + "\n");
    send_error(res, 500, "internal", "internal error while serving this request",
               "report the request id " + t_request_id + "; the server's log has the details");
  }

  // Checks a request before its body is read: the route, length framing and the token.
  // Returns false with the response set (and the connection marked to close).
  bool screen(const httplib::Request& req, httplib::Response& res) {
    const RouteInfo* info = nullptr;
    // HEAD is answered by the GET handler (httplib's doing): it needs what GET needs.
    const std::string method = req.method == "HEAD" ? "GET" : req.method;
    for (auto& r : route_table)
      if (r.method == method && path_matches(r.label, req.path)) {
        info = &r;
        break;
      }
    t_route = info ? info->label : "unmatched";
    bool has_body_method = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
    if (req.has_header("Transfer-Encoding")) {
      send_error(res, 411, "length-required", "chunked or otherwise encoded request bodies are not accepted",
                 "send the body with a Content-Length of at most " + std::to_string(opts.limits.max_body_bytes) +
                     " bytes");
      return false;
    }
    // A compressed body (gzip, deflate, br) would be unpacked whole before any limit applies:
    // 6 KB of brotli unpack to 8 GB. --max-body bounds what the server holds, so bodies come
    // as they are.
    if (req.has_header("Content-Encoding")) {
      if (header_token(req.get_header_value("Content-Encoding")) != "identity" ||
          req.get_header_value_count("Content-Encoding") != 1) {
        send_error(res, 415, "unsupported-media-type", "compressed request bodies are not accepted",
                   "send the body uncompressed (no Content-Encoding), at most " +
                       std::to_string(opts.limits.max_body_bytes) + " bytes");
        return false;
      }
    }
    size_t length = 0;
    if (req.has_header("Content-Length")) {
      const std::string v = req.get_header_value("Content-Length");
      bool digits = !v.empty() && v.size() <= 19 &&
                    std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!digits || req.get_header_value_count("Content-Length") != 1) {
        send_error(res, 400, "bad-request", "the Content-Length header is not one decimal number");
        return false;
      }
      length = std::stoull(v);
    } else if (has_body_method) {
      send_error(res, 411, "length-required", req.method + " needs a Content-Length header",
                 "send Content-Length (0 for an empty body)");
      return false;
    }
    if (!info && (has_body_method || length > 0)) {
      // No route takes this body: refused on the head, so that nobody can make the server
      // read a body only to answer 404.
      std::string allowed = allowed_methods(req.path);
      if (!allowed.empty()) {
        res.set_header("Allow", allowed);
        send_error(res, 405, "method-not-allowed", req.method + " is not allowed here", "allowed: " + allowed);
      } else {
        send_error(res, 404, "not-found", "no such endpoint: " + req.method + " " + truncate_utf8(req.path, 200),
                   "see docs/service.md for the API");
      }
      return false;
    }
    if (req.get_header_value_count("Authorization") > 1) {
      send_error(res, 400, "bad-request", "the request has more than one Authorization header",
                 "send one Authorization: Bearer TOKEN");
      return false;
    }
    if (length > 0 && req.has_header("Content-Type") && !json_media_type(req.get_header_value("Content-Type"))) {
      send_error(res, 415, "unsupported-media-type", "the body must be JSON",
                 "send Content-Type: application/json");
      return false;
    }
    if (length > opts.limits.max_body_bytes) {
      send_error(res, 413, "payload-too-large",
                 "the body has " + std::to_string(length) + " bytes; the limit is " +
                     std::to_string(opts.limits.max_body_bytes),
                 "send a smaller body (the server's --max-body)");
      return false;
    }
    if (info && info->need && !authorize(req, res, *info->need)) return false;
    return true;
  }

  // Parses a JSON object body; on failure answers 400 and returns false.
  bool body_json(const httplib::Request& req, httplib::Response& res, json& out) {
    if (std::string ct = req.get_header_value("Content-Type"); !ct.empty() && !json_media_type(ct)) {
      send_error(res, 415, "unsupported-media-type", "the body must be JSON, not " + ct,
                 "send Content-Type: application/json");
      return false;
    }
    if (req.body.empty()) {
      out = json::object();
      return true;
    }
    JsonShape shape = json_shape(req.body, opts.limits.max_json_depth, opts.limits.max_json_values);
    if (shape.depth > opts.limits.max_json_depth) {
      send_error(res, 400, "too-deep",
                 "the body nests arrays and objects deeper than " + std::to_string(opts.limits.max_json_depth),
                 "send a flatter JSON object");
      return false;
    }
    if (shape.values > opts.limits.max_json_values) {
      send_error(res, 400, "too-many-values",
                 "the body holds more than " + std::to_string(opts.limits.max_json_values) + " JSON values",
                 "send fewer values: no request of this API needs more");
      return false;
    }
    try {
      out = json::parse(req.body);
    } catch (const json::exception& e) {
      // parse_error, and out_of_range for a number beyond a double (1e309)
      send_error(res, 400, "malformed-json", std::string("the body is not valid JSON: ") + e.what(),
                 "send a JSON object");
      return false;
    }
    if (!out.is_object()) {
      send_error(res, 400, "malformed-json", "the body must be a JSON object", "send {\"...\": ...}");
      return false;
    }
    return true;
  }

  // --- handlers -------------------------------------------------------------------------
  void healthz(const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"status", stopped ? "stopping" : "ok"}, {"version", "0.1.0"}});
  }

  void metrics_text(const httplib::Request&, httplib::Response& res) {
    JobCounts c = jobs->counts();
    std::map<std::string, double> g = {
        {"syspilot_jobs{state=\"queued\"}", double(c.queued)},
        {"syspilot_jobs{state=\"running\"}", double(c.running)},
        {"syspilot_jobs{state=\"succeeded\"}", double(c.succeeded)},
        {"syspilot_jobs{state=\"failed\"}", double(c.failed)},
        {"syspilot_jobs{state=\"cancelled\"}", double(c.cancelled)},
        {"syspilot_job_queue_depth", double(jobs->queue_depth())},
        {"syspilot_job_queue_capacity", double(opts.queue_capacity)},
        {"syspilot_job_workers_busy", double(jobs->busy_workers())},
        {"syspilot_job_workers", double(opts.workers)},
    };
    res.set_content(metrics.render(g), "text/plain; version=0.0.4");
  }

  static json version_json(const store::VersionInfo& v) {
    return {{"version", v.version},
            {"revision", v.revision},
            {"digest", v.digest},
            {"status", store::to_string(v.status)},
            {"drafter", store::to_string(v.drafter)},
            {"model", v.model},
            {"created_at", v.created_at},
            {"review", store::to_string(v.review)},
            {"reviewed_revision", v.reviewed_revision}};
  }

  // Each library with its stored versions, so that a list of them all takes one request.
  void libraries(const httplib::Request&, httplib::Response& res) {
    auto& st = thread_store(opts.db_path);
    json a = json::array();
    for (auto& l : st.libraries()) {
      json stored = json::array();
      for (auto& v : st.versions(l.name)) stored.push_back(version_json(v));
      a.push_back({{"name", l.name}, {"versions", l.versions}, {"latest_version", l.latest_version}, {"stored", stored}});
    }
    send_json(res, 200, {{"libraries", a}});
  }

  bool check_name(httplib::Response& res, const std::string& v, const std::regex& re, const std::string& what) {
    if (std::regex_match(v, re)) return true;
    send_error(res, 400, "bad-" + what, "invalid " + what + " '" + v.substr(0, 200) + "'",
               "letters, digits and . _ + - (at most 128 characters)");
    return false;
  }

  void versions(const httplib::Request& req, httplib::Response& res) {
    std::string lib = req.matches[1];
    if (!check_name(res, lib, kNameRe, "library")) return;
    auto& st = thread_store(opts.db_path);
    auto vs = st.versions(lib);
    if (vs.empty()) {
      send_error(res, 404, "unknown-library", "no contract for library '" + lib + "' in the store",
                 "list libraries with GET /v1/libraries");
      return;
    }
    json a = json::array();
    for (auto& v : vs) a.push_back(version_json(v));
    send_json(res, 200, {{"library", lib}, {"versions", a}});
  }

  void contract(const httplib::Request& req, httplib::Response& res) {
    std::string lib = req.matches[1], ver = req.matches[2];
    if (!check_name(res, lib, kNameRe, "library") || !check_name(res, ver, kVersionRe, "version")) return;
    int revision = 0;
    if (req.has_param("revision")) {
      auto n = parse_id(req.get_param_value("revision"));
      if (!n || *n > std::numeric_limits<int>::max()) {
        send_error(res, 400, "bad-revision", "revision must be a positive integer");
        return;
      }
      revision = static_cast<int>(*n);
    }
    auto& st = thread_store(opts.db_path);
    auto rec = st.get_contract(lib, ver, revision);
    if (!rec) {
      send_error(res, 404, "unknown-version",
                 "no contract for " + lib + " " + ver + (revision ? " revision " + std::to_string(revision) : ""),
                 "stored versions of " + lib + ": " + version_list(st, lib));
      return;
    }
    bool want_lpcl = req.get_param_value("format") == "lpcl" ||
                     req.get_header_value("Accept").find("text/x-lpcl") != std::string::npos;
    // The JSON also says whether the revision is reviewed, which changes without its text.
    std::string etag = "\"" + rec->digest +
                       (want_lpcl ? "-lpcl" : std::string("-json-") + store::to_string(rec->review)) + "\"";
    res.set_header("ETag", etag);
    res.set_header("Vary", "Accept");
    res.set_header("Cache-Control", "no-cache");
    if (etag_matches(req.get_header_value("If-None-Match"), etag)) {
      res.status = 304;
      return;
    }
    if (want_lpcl) {
      res.status = 200;
      res.set_content(rec->lpcl, "text/x-lpcl; charset=utf-8");
      return;
    }
    json body = {{"library", rec->library},   {"version", rec->version},
                 {"revision", rec->revision}, {"digest", rec->digest},
                 {"status", store::to_string(rec->status)}, {"drafter", store::to_string(rec->drafter)},
                 {"model", rec->model},       {"created_at", rec->created_at},
                 {"review", store::to_string(rec->review)},
                 {"reviewed_at", rec->reviewed_at.empty() ? json() : json(rec->reviewed_at)},
                 {"source", rec->source},     {"lpcl", rec->lpcl}};
    body["contract"] = json::parse(rec->json, nullptr, false);
    if (body["contract"].is_discarded()) body["contract"] = nullptr;
    body["diagnostics"] = json::parse(rec->diagnostics.empty() ? "[]" : rec->diagnostics, nullptr, false);
    if (body["diagnostics"].is_discarded()) body["diagnostics"] = json::array();
    send_json(res, 200, body);
  }

  void diff(const httplib::Request& req, httplib::Response& res) {
    std::string lib = req.matches[1];
    if (!check_name(res, lib, kNameRe, "library")) return;
    if (!req.has_param("from") || !req.has_param("to")) {
      send_error(res, 400, "missing-parameter", "diff needs both 'from' and 'to'",
                 "GET /v1/libraries/" + lib + "/diff?from=V1&to=V2");
      return;
    }
    std::string from = req.get_param_value("from"), to = req.get_param_value("to");
    if (!check_name(res, from, kVersionRe, "version") || !check_name(res, to, kVersionRe, "version")) return;
    auto& st = thread_store(opts.db_path);
    lpcl::Contract contracts[2];
    const std::string* names[2] = {&from, &to};
    for (int i = 0; i < 2; ++i) {
      auto rec = st.get_contract(lib, *names[i]);
      if (!rec) {
        send_error(res, 404, "unknown-version", "no contract for " + lib + " " + *names[i],
                   "stored versions of " + lib + ": " + version_list(st, lib));
        return;
      }
      Diagnostics d;
      auto doc = lpcl::parse(rec->lpcl, lib + "@" + *names[i], d);
      if (doc.contracts.empty()) {
        send_error(res, 500, "unreadable-contract", "the stored contract " + lib + " " + *names[i] + " does not parse",
                   "", to_json(d));
        return;
      }
      contracts[i] = std::move(doc.contracts.front());
    }
    auto d = lpcl::diff(contracts[0], contracts[1]);
    send_json(res, 200, {{"library", lib}, {"from", from}, {"to", to}, {"changes", lpcl::to_json(d)},
                         {"text", lpcl::to_text(d)}});
  }

  void synthesize(const httplib::Request& req, httplib::Response& res) {
    json body;
    if (!body_json(req, res, body)) return;
    for (const char* k : {"library", "version"})
      if (!body.contains(k) || !body[k].is_string()) {
        send_error(res, 400, "bad-request", std::string("'") + k + "' is required and must be a string",
                   "send {\"library\", \"version\", \"source\": {\"kind\", ...}}");
        return;
      }
    std::string lib = body["library"], ver = body["version"];
    if (!check_name(res, lib, kNameRe, "library") || !check_name(res, ver, kVersionRe, "version")) return;
    if (!lpcl::is_identifier(lib)) {
      // the contract is written `contract NAME "VERSION"`: LPCL must read the name back
      send_error(res, 400, "bad-library", "invalid library '" + lib + "': a contract's name is an LPCL identifier",
                 "letters, digits and _, not starting with a digit (c_blosc for c-blosc)");
      return;
    }
    if (!body.contains("source")) {
      send_error(res, 400, "bad-source", "'source' is required",
                 "for example {\"kind\": \"git\", \"url\": \"https://...\", \"ref\": \"v1.0\"}");
      return;
    }
    SourceSpec src;
    Diagnostics d;
    if (!parse_source(body["source"], src, d) || !validate_source(src, policy, d)) {
      std::string code = d.items().empty() || d.items().front().code.empty() ? "bad-source" : d.items().front().code;
      send_error(res, 400, code, d.items().empty() ? "invalid source" : d.items().front().message,
                 d.items().empty() ? "" : d.items().front().hint, to_json(d));
      return;
    }
    if (body.contains("force") && !body["force"].is_boolean()) {
      send_error(res, 400, "bad-request", "'force' must be true or false");
      return;
    }
    json request = {{"library", lib}, {"version", ver}, {"source", to_json(src)},
                    {"force", body.value("force", false)}};
    json secrets = json::object();
    if (body.contains("llm") && !body["llm"].is_null()) {
      const json& l = body["llm"];
      if (!l.is_object() || !l.contains("url") || !l["url"].is_string()) {
        send_error(res, 400, "bad-llm", "'llm' must be an object with a string 'url' (and 'model', 'api_key')");
        return;
      }
      Diagnostics ld;
      if (!validate_outbound_url(l["url"].get<std::string>(), policy.outbound, ld, "llm.url")) {
        const auto& first = ld.items().front();
        send_error(res, 400, first.code.empty() ? "bad-llm" : first.code, first.message, first.hint, to_json(ld));
        return;
      }
      for (const char* k : {"model", "api_key"})
        if (l.contains(k) && !l[k].is_string()) {
          send_error(res, 400, "bad-llm", std::string("'llm.") + k + "' must be a string");
          return;
        }
      if (l.contains("timeout_s") &&
          (!l["timeout_s"].is_number() || l["timeout_s"].get<double>() <= 0 || l["timeout_s"].get<double>() > 3600)) {
        send_error(res, 400, "bad-llm", "'llm.timeout_s' must be a number of seconds in (0, 3600]");
        return;
      }
      json llm = {{"url", l["url"]}, {"model", l.value("model", "")}};
      if (l.contains("timeout_s")) llm["timeout_s"] = l["timeout_s"];
      if (l.contains("api_key")) {
        secrets["llm_api_key"] = l["api_key"];  // memory only: never persisted, logged or returned
        llm["api_key_given"] = true;
      }
      request["llm"] = llm;
    }
    submit(res, "synthesize", lib, ver, request, secrets);
  }

  void submit(httplib::Response& res, const std::string& kind, const std::string& lib, const std::string& ver,
              const json& request, const json& secrets) {
    std::string id;
    switch (jobs->submit(kind, lib, ver, request, secrets, id)) {
      case JobQueue::Submit::Accepted: {
        json job;
        jobs->get(id, job);
        res.set_header("Location", "/v1/jobs/" + id);
        send_json(res, 202, {{"job", job}});
        return;
      }
      case JobQueue::Submit::Full:
        res.set_header("Retry-After", "5");
        send_error(res, 429, "queue-full",
                   "the job queue is full (" + std::to_string(opts.queue_capacity) + " waiting)",
                   "retry after a few seconds");
        return;
      case JobQueue::Submit::Stopping:
        send_error(res, 503, "stopping", "the service is shutting down", "retry against the restarted service");
        return;
      case JobQueue::Submit::UnknownKind:
        send_error(res, 500, "internal", "no runner for job kind " + kind);
        return;
    }
  }

  void job_get(const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    json job;
    if (!std::regex_match(id, kJobRe) || !jobs->get(id, job)) {
      send_error(res, 404, "unknown-job", "no job '" + id.substr(0, 80) + "'", "job ids come from POST /v1/synthesize");
      return;
    }
    send_json(res, 200, {{"job", job}});
  }

  void job_cancel(const httplib::Request& req, httplib::Response& res) {
    std::string id = req.matches[1];
    if (!std::regex_match(id, kJobRe)) {
      send_error(res, 404, "unknown-job", "no job '" + id.substr(0, 80) + "'");
      return;
    }
    auto r = jobs->cancel(id);
    json job;
    jobs->get(id, job);
    switch (r) {
      case JobQueue::Cancel::NotFound: send_error(res, 404, "unknown-job", "no job '" + id + "'"); return;
      case JobQueue::Cancel::AlreadyFinished:
        send_error(res, 409, "job-finished", "job " + id + " already finished (" + job.value("state", "") + ")");
        return;
      case JobQueue::Cancel::Cancelled: send_json(res, 200, {{"job", job}, {"cancel", "cancelled"}}); return;
      case JobQueue::Cancel::Requested: send_json(res, 202, {{"job", job}, {"cancel", "requested"}}); return;
    }
  }

  void jobs_list(const httplib::Request& req, httplib::Response& res) {
    int limit = 0;
    if (!limit_param(req, res, 50, 1000, limit)) return;
    send_json(res, 200, {{"jobs", jobs->list(limit)}});
  }

  void regenerate_post(const httplib::Request& req, httplib::Response& res) {
    json body;
    if (!body_json(req, res, body)) return;
    if (!regen) {
      send_error(res, 409, "no-regen-config", "this service tracks no libraries",
                 "start it with --regen-config FILE (see docs/service.md)");
      return;
    }
    std::string only;
    if (body.contains("library")) {
      if (!body["library"].is_string()) {
        send_error(res, 400, "bad-request", "'library' must be a string");
        return;
      }
      only = body["library"];
    }
    json accepted = json::array();
    bool found = false;
    for (auto& lib : regen->libraries) {
      if (!only.empty() && lib.name != only) continue;
      found = true;
      std::string id;
      auto r = jobs->submit("regenerate", lib.name, "", {{"library", lib.name}}, json::object(), id);
      if (r != JobQueue::Submit::Accepted) {
        res.set_header("Retry-After", "5");
        send_error(res, r == JobQueue::Submit::Full ? 429 : 503, r == JobQueue::Submit::Full ? "queue-full" : "stopping",
                   "accepted " + std::to_string(accepted.size()) + " regeneration job(s) before the queue filled",
                   "retry for the rest", json{{"accepted", accepted}});
        return;
      }
      json job;
      jobs->get(id, job);
      accepted.push_back(job);
    }
    if (!found) {
      send_error(res, 404, "not-tracked", "library '" + only + "' is not tracked",
                 "tracked libraries are listed in the regeneration config");
      return;
    }
    send_json(res, 202, {{"jobs", accepted}});
  }

  void compose(const httplib::Request& req, httplib::Response& res);

  // --- the dashboard and what it reads ---------------------------------------------------
  // The page and its assets hold no data: they are served without a token, and every call
  // they make goes through the API's own authorization.
  void dashboard_page(const httplib::Request& req, httplib::Response& res) { asset(req, res, "index.html"); }
  void dashboard_asset(const httplib::Request& req, httplib::Response& res) { asset(req, res, req.matches[1]); }

  void asset(const httplib::Request& req, httplib::Response& res, const std::string& name) {
    const Asset* a = find_asset(name);
    if (!a) {
      send_error(res, 404, "not-found", "no dashboard asset '" + truncate_utf8(name, 80) + "'");
      return;
    }
    const std::string etag = "\"" + std::string(a->digest) + "\"";
    res.set_header("ETag", etag);
    res.set_header("Cache-Control", "no-cache");
    if (etag_matches(req.get_header_value("If-None-Match"), etag)) {
      res.status = 304;
      return;
    }
    res.status = 200;
    res.set_content(std::string(a->body), a->content_type);
  }

  // Who the dashboard is talking as: whether reads are open, and the token's scope (null
  // without a token). A token that is sent must be valid.
  void whoami(const httplib::Request& req, httplib::Response& res) {
    json out = {{"public_read", opts.public_read}, {"scope", nullptr}, {"regenerate", regen.has_value()},
                {"version", "0.1.0"}};
    if (req.has_header("Authorization")) {
      Scope scope;
      if (!token_scope(req, res, scope)) return;
      out["scope"] = to_string(scope);
    }
    send_json(res, 200, out);
  }

  // ?limit=N within [1, max]; `def` without it. False with 400 answered otherwise.
  bool limit_param(const httplib::Request& req, httplib::Response& res, int def, int max, int& out) {
    out = def;
    if (!req.has_param("limit")) return true;
    auto n = parse_id(req.get_param_value("limit"));
    if (!n || *n > max) {
      send_error(res, 400, "bad-limit", "limit must be a whole number from 1 to " + std::to_string(max));
      return false;
    }
    out = static_cast<int>(*n);
    return true;
  }

  void sessions_list(const httplib::Request& req, httplib::Response& res) {
    int limit = 0;
    if (!limit_param(req, res, 200, 1000, limit)) return;
    send_json(res, 200, {{"sessions", sessions_view(thread_store(opts.db_path).db(), limit)}});
  }

  void session_get(const httplib::Request& req, httplib::Response& res) {
    auto id = parse_id(req.matches[1]);
    auto j = id ? session_view(thread_store(opts.db_path).db(), *id) : std::nullopt;
    if (!j) {
      send_error(res, 404, "unknown-session", "no tuning session '" + truncate_utf8(req.matches[1], 40) + "'",
                 "list them with GET /v1/sessions");
      return;
    }
    send_json(res, 200, {{"session", *j}});
  }

  void analyses_list(const httplib::Request& req, httplib::Response& res) {
    int limit = 0;
    if (!limit_param(req, res, 200, 1000, limit)) return;
    send_json(res, 200, {{"analyses", analyses_view(thread_store(opts.db_path).db(), limit)}});
  }

  void analysis_get(const httplib::Request& req, httplib::Response& res) {
    auto id = parse_id(req.matches[1]);
    auto j = id ? analysis_view(thread_store(opts.db_path).db(), *id) : std::nullopt;
    if (!j) {
      send_error(res, 404, "unknown-analysis", "no analysis '" + truncate_utf8(req.matches[1], 40) + "'",
                 "list them with GET /v1/analyses");
      return;
    }
    send_json(res, 200, {{"analysis", *j}});
  }

  void provenance(const httplib::Request& req, httplib::Response& res) {
    std::string lib = req.matches[1], ver = req.matches[2];
    if (!check_name(res, lib, kNameRe, "library") || !check_name(res, ver, kVersionRe, "version")) return;
    auto& st = thread_store(opts.db_path);
    auto rec = st.get_contract(lib, ver);
    if (!rec) {
      send_error(res, 404, "unknown-version", "no contract for " + lib + " " + ver,
                 "stored versions of " + lib + ": " + version_list(st, lib));
      return;
    }
    send_json(res, 200, contract_provenance(st, *rec));
  }

  void build_http() {
    // Each held connection takes a descriptor: ask for as many as the hard limit allows.
    rlimit nofile{};
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
      nofile.rlim_cur = nofile.rlim_max;
      setrlimit(RLIMIT_NOFILE, &nofile);
    }
    http = std::make_unique<GuardedServer>(opts.limits, tls);
    // Room for every admitted connection plus the ones being refused.
    size_t threads = opts.limits.max_connections + 64;
    http->new_task_queue = [threads] { return new ElasticPool(threads); };
    http->set_payload_max_length(opts.limits.max_body_bytes);
    http->set_tcp_nodelay(true);
    install_routes();
  }

  // --- jobs -----------------------------------------------------------------------------
  std::optional<synth::LlmConfig> llm_for(JobContext& ctx, Diagnostics& diags) {
    const json& r = ctx.request();
    if (!r.contains("llm")) return default_llm;
    synth::LlmConfig c = default_llm.value_or(synth::LlmConfig{});
    c.url = r["llm"].value("url", "");
    c.model = r["llm"].value("model", "");
    if (r["llm"].contains("timeout_s")) c.timeout_s = r["llm"]["timeout_s"];
    c.api_key.clear();
    if (ctx.secrets().contains("llm_api_key")) {
      c.api_key = ctx.secrets()["llm_api_key"];
    } else if (r["llm"].value("api_key_given", false)) {
      diags.error(SourceLoc{"job", 0, 0}, "the API key given with this job was not kept across a restart",
                  "key-lost", "submit the job again");
      return std::nullopt;
    }
    return c;
  }

  json run_synthesize(JobContext& ctx, Diagnostics& diags) {
    const json& r = ctx.request();
    ReleaseRequest req;
    req.library = r.value("library", "");
    req.version = r.value("version", "");
    req.force = r.value("force", false);
    if (!parse_source(r["source"], req.source, diags)) return nullptr;
    req.llm = llm_for(ctx, diags);
    if (diags.has_errors()) return nullptr;
    ReleaseOutcome o = build_release(
        ctx.store(), policy, req, [&] { return ctx.cancelled(); },
        [&](const std::string& stage, double f, const std::string& line) { ctx.progress(stage, f, line); });
    account(o);
    if (o.status == "cancelled") throw JobCancelled();
    diags.append(o.diags);
    if (o.status == "failed" && !diags.has_errors())
      diags.error(SourceLoc{"job", 0, 0}, "synthesis failed", "job-failed");
    return to_json(o);
  }

  json run_regenerate(JobContext& ctx, Diagnostics& diags) {
    if (!regen) {
      diags.error(SourceLoc{"job", 0, 0}, "the service has no regeneration config", "no-regen-config");
      return nullptr;
    }
    RegenReport rep = regenerate(
        ctx.store(), *regen, ctx.request().value("library", ""), [&] { return ctx.cancelled(); },
        [&](const std::string& stage, double f, const std::string& line) { ctx.progress(stage, f, line); });
    for (auto& o : rep.outcomes) account(o);
    if (ctx.cancelled()) throw JobCancelled();
    for (auto& o : rep.outcomes)
      if (o.status == "failed")
        diags.error(SourceLoc{o.library + "@" + o.version, 0, 0}, "release failed", "release-failed",
                    "see the release's diagnostics in the result");
    diags.append(rep.diags);
    json j = to_json(rep);
    j["changelog"] = rep.changelog_markdown();
    return j;
  }

  void account(const ReleaseOutcome& o) {
    metrics.add_llm(o.llm_calls, o.llm_cached, o.prompt_tokens, o.completion_tokens);
    if (o.input_cached) metrics.add_cache_hit("input");
    if (o.facts_cached) metrics.add_cache_hit("facts");
  }

  void regen_loop() {
    std::unique_lock<std::mutex> g(mu);
    while (!stopped) {
      if (cv.wait_for(g, opts.regen_every, [&] { return stopped; })) break;
      g.unlock();
      for (auto& lib : regen->libraries) {
        // A period shorter than one regeneration must not pile up jobs that build the
        // same releases at once.
        if (jobs->pending("regenerate", lib.name)) continue;
        std::string id;
        jobs->submit("regenerate", lib.name, "", {{"library", lib.name}, {"scheduled", true}}, json::object(), id);
      }
      g.lock();
    }
  }

  // The start of every request: its id and security headers, then screen(). False with the
  // response set (and the connection to close) when it is answered before its body is read.
  bool admit(const httplib::Request& req, httplib::Response& res) {
    t_start = std::chrono::steady_clock::now();
    t_request_id = new_request_id();
    res.set_header("X-Request-Id", t_request_id);
    set_security_headers(res);
    try {
      if (screen(req, res)) return true;
    } catch (const store::StoreError& e) {
      send_error(res, 503, "store-unavailable", e.what(), "check the database file and retry");
    } catch (...) {
      internal_error(req, res, "while screening the request");
    }
    // Answered before the body was read: what the client still sends is not a request.
    if (!res.has_header("Connection")) res.set_header("Connection", "close");
    GuardedServer::close_after_response();
    return false;
  }

  void install_routes() {
    http->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return admit(req, res) ? httplib::Server::HandlerResponse::Unhandled : httplib::Server::HandlerResponse::Handled;
    });
    // `Expect: 100-continue` is answered after the same screening: a client is told to send
    // its body only when the route, the framing and the token allow it; else it gets the
    // refusal instead of 100.
    http->set_expect_100_continue_handler([this](const httplib::Request& req, httplib::Response& res) {
      return admit(req, res) ? 100 : res.status;
    });
    http->set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "unknown exception";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      internal_error(req, res, what);
    });
    // Runs outside httplib's exception guard: it must not throw.
    http->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      // A body that ended before its Content-Length: its deadline passed (408) or the client
      // closed. The connection closes after this answer (GuardedServer::serve).
      if (GuardedServer::body_cut_short()) {
        if (GuardedServer::body_timed_out()) res.status = 408;
        res.set_header("Connection", "close");
      }
      if (!res.body.empty()) return;
      try {
        // a path served for other methods: 405 with them in Allow, not 404
        if (res.status == 404)
          if (std::string allowed = allowed_methods(req.path); !allowed.empty()) {
            res.set_header("Allow", allowed);
            send_error(res, 405, "method-not-allowed", req.method + " is not allowed here", "allowed: " + allowed);
            return;
          }
        std::string msg = res.status == 404   ? "no such endpoint: " + req.method + " " + truncate_utf8(req.path, 200)
                          : res.status == 413 ? "request body too large"
                          : res.status == 408 ? "the request body did not arrive within " +
                                                    std::to_string(int(opts.limits.body_timeout_s)) + " s"
                          : GuardedServer::body_cut_short() ? "the request body ended before its Content-Length"
                                              : std::string("request failed with status ") + std::to_string(res.status);
        std::string hint = res.status == 404 ? "see docs/service.md for the API" : "";
        send_error(res, res.status, default_code(res.status), msg, hint);
      } catch (...) {
        res.set_content("{\"error\":{\"code\":\"internal\",\"message\":\"internal error\"}}", "application/json");
      }
    });
    http->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
      std::string route = t_route.empty() ? "unmatched" : t_route;
      if (t_start.time_since_epoch().count() == 0) secs = 0;
      metrics.observe_request(req.method, route, res.status, secs);
      if (opts.access_log)
        log_line(log_field(req.remote_addr) + " " + log_field(req.method, 16) + " " + log_field(req.path) + " " +
                 std::to_string(res.status) + " " + std::to_string(static_cast<int>(secs * 1e6)) + "us " +
                 t_request_id + "\n");
      t_route.clear();
      t_request_id.clear();
    });
    http->on_refused = [this](int status, const std::string& peer) {
      metrics.observe_request("-", "refused", status, 0);
      if (opts.access_log) log_line(log_field(peer) + " - - " + std::to_string(status) + " refused\n");
    };
    auto bind = [this](void (Impl::*m)(const httplib::Request&, httplib::Response&)) {
      return [this, m](const httplib::Request& q, httplib::Response& s) { (this->*m)(q, s); };
    };
    route("GET", "/healthz", "/healthz", std::nullopt, bind(&Impl::healthz));
    route("GET", "/metrics", "/metrics", Scope::Read, bind(&Impl::metrics_text));
    route("GET", "/v1/libraries", "/v1/libraries", Scope::Read, bind(&Impl::libraries));
    route("GET", R"(/v1/libraries/([^/]+)/contracts)", "/v1/libraries/{lib}/contracts", Scope::Read,
          bind(&Impl::versions));
    route("GET", R"(/v1/libraries/([^/]+)/contracts/([^/]+))", "/v1/libraries/{lib}/contracts/{version}",
          Scope::Read, bind(&Impl::contract));
    route("GET", R"(/v1/libraries/([^/]+)/diff)", "/v1/libraries/{lib}/diff", Scope::Read, bind(&Impl::diff));
    route("POST", "/v1/synthesize", "/v1/synthesize", Scope::Write, bind(&Impl::synthesize));
    route("GET", "/v1/jobs", "/v1/jobs", Scope::Read, bind(&Impl::jobs_list));
    route("GET", R"(/v1/jobs/([^/]+))", "/v1/jobs/{id}", Scope::Read, bind(&Impl::job_get));
    route("DELETE", R"(/v1/jobs/([^/]+))", "/v1/jobs/{id}", Scope::Write, bind(&Impl::job_cancel));
    route("POST", "/v1/compose", "/v1/compose", Scope::Read, bind(&Impl::compose));
    route("POST", "/v1/regenerate", "/v1/regenerate", Scope::Write, bind(&Impl::regenerate_post));
    route("GET", R"(/v1/libraries/([^/]+)/contracts/([^/]+)/provenance)",
          "/v1/libraries/{lib}/contracts/{version}/provenance", Scope::Read, bind(&Impl::provenance));
    route("GET", "/v1/sessions", "/v1/sessions", Scope::Read, bind(&Impl::sessions_list));
    route("GET", R"(/v1/sessions/([^/]+))", "/v1/sessions/{id}", Scope::Read, bind(&Impl::session_get));
    route("GET", "/v1/analyses", "/v1/analyses", Scope::Read, bind(&Impl::analyses_list));
    route("GET", R"(/v1/analyses/([^/]+))", "/v1/analyses/{id}", Scope::Read, bind(&Impl::analysis_get));
    route("GET", "/v1/whoami", "/v1/whoami", std::nullopt, bind(&Impl::whoami));
    route("GET", "/", "/", std::nullopt, bind(&Impl::dashboard_page));
    route("GET", R"(/assets/([^/]+))", "/assets/{name}", std::nullopt, bind(&Impl::dashboard_asset));
    // Browsers ask for it on any page without an icon of its own (an asset opened alone).
    route("GET", "/favicon.ico", "/favicon.ico", std::nullopt,
          [this](const httplib::Request& q, httplib::Response& s) { asset(q, s, "icon.svg"); });
  }
};

void Service::Impl::compose(const httplib::Request& req, httplib::Response& res) {
  json body;
  if (!body_json(req, res, body)) return;
  json out;
  ComposeAnswer a = compose_hypotheses(body, opts.db_path, out);
  if (a.status != 200) {
    send_error(res, a.status, a.error_code, a.message, a.hint);
    return;
  }
  send_json(res, 200, out);
}

// ---------------------------------------------------------------------------------------

Service::Service(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Service::~Service() {
  stop();
  free_tls_context(impl_->tls);
}

std::unique_ptr<Service> Service::create(ServiceOptions opts, Diagnostics& diags) {
  auto impl = std::make_unique<Impl>();
  if (opts.db_path.empty()) opts.db_path = store::default_db_path();
  if ((opts.tls_cert.empty()) != (opts.tls_key.empty())) {
    diags.error(SourceLoc{"--tls-cert", 0, 0}, "TLS needs both --tls-cert and --tls-key", "usage");
    return nullptr;
  }
  if (opts.workers < 1 || opts.queue_capacity < 1 || opts.limits.max_connections < 1 ||
      opts.limits.max_per_client < 1) {
    diags.error(SourceLoc{"options", 0, 0}, "workers, queue capacity and connection limits must be at least 1",
                "usage");
    return nullptr;
  }
  try {
    thread_store(opts.db_path);  // creates and migrates; reports a bad file now, not per request
  } catch (const std::exception& e) {
    diags.error(SourceLoc{opts.db_path, 0, 0}, e.what(), "store-unavailable", "pass --db with a writable file");
    return nullptr;
  }
  std::error_code ec;
  if (opts.work_dir.empty())
    opts.work_dir = (fs::absolute(opts.db_path).parent_path() / "syspilot-work").string();
  fs::create_directories(opts.work_dir, ec);
  if (!opts.regen_config.empty()) {
    RegenConfig cfg;
    if (!load_regen_config(opts.regen_config, cfg, diags)) return nullptr;
    impl->regen = std::move(cfg);
  }
  if (!validate_allow_list(opts.allow_outbound, diags)) return nullptr;
  impl->policy.roots = opts.source_roots;
  impl->policy.work_dir = opts.work_dir;
  impl->policy.outbound.allow = opts.allow_outbound;
  if (impl->regen) {
    // Tracked feeds may name their own roots; the service serves both.
    for (auto& r : impl->regen->source_roots) impl->policy.roots.push_back(r);
    impl->regen->work_dir = opts.work_dir;
    impl->regen->source_roots = impl->policy.roots;
    impl->regen->allow_outbound = opts.allow_outbound;
  }
  impl->default_llm = synth::llm_config_from_env();
  // The operator's own endpoint stays reachable even on an internal address.
  if (impl->default_llm) allow_host_of(impl->policy.outbound, impl->default_llm->url);
  impl->opts = std::move(opts);
  Impl* p = impl.get();
  JobQueue::Options jo{p->opts.db_path, p->opts.workers, p->opts.queue_capacity, 3,
                      [p](const std::string& kind, const std::string& state) { p->metrics.add_job_outcome(kind, state); }};
  impl->jobs = std::make_unique<JobQueue>(
      jo, std::map<std::string, JobRunner>{
              {"synthesize", [p](JobContext& c, Diagnostics& d) { return p->run_synthesize(c, d); }},
              {"regenerate", [p](JobContext& c, Diagnostics& d) { return p->run_regenerate(c, d); }}});
  return std::unique_ptr<Service>(new Service(std::move(impl)));
}

bool Service::start(Diagnostics& diags) {
  Impl& m = *impl_;
  if (!m.opts.tls_cert.empty()) {
    std::string why;
    m.tls = make_tls_context(m.opts.tls_cert, m.opts.tls_key, why);
    if (!m.tls) {
      diags.error(SourceLoc{m.opts.tls_cert, 0, 0}, why, "tls",
                  "give PEM files: --tls-cert CERT.pem --tls-key KEY.pem (the key must match the certificate)");
      return false;
    }
  }
  if (!m.http) m.build_http();
  if (m.opts.port == 0) {
    m.port = m.http->bind_to_any_port(m.opts.host);
  } else {
    m.port = m.http->bind_to_port(m.opts.host, m.opts.port) ? m.opts.port : -1;
  }
  if (m.port > 0) m.http->widen_backlog(1024);
  if (m.port <= 0) {
    diags.error(SourceLoc{m.opts.host + ":" + std::to_string(m.opts.port), 0, 0}, "cannot listen on this address",
                "bind-failed", "choose another --port or stop what is using it");
    return false;
  }
  m.jobs->start();
  m.listener = std::thread([&m] { m.http->listen_after_bind(); });
  for (int i = 0; i < 500 && !m.http->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (m.regen && m.opts.regen_every.count() > 0) m.regen_timer = std::thread([&m] { m.regen_loop(); });
  m.started = true;
  return m.http->is_running();
}

int Service::port() const { return impl_->port; }

std::string Service::serve_bytes(const std::string& request) {
  if (!impl_->http) impl_->build_http();
  MemoryTransport t(request);
  impl_->http->serve(t);
  return t.output();
}
const ServiceOptions& Service::options() const { return impl_->opts; }

void Service::wait() {
  std::unique_lock<std::mutex> g(impl_->mu);
  impl_->cv.wait(g, [&] { return impl_->stopped; });
}

void Service::stop() {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> g(m.mu);
    if (m.stopped) return;
    m.stopped = true;
  }
  m.cv.notify_all();
  if (m.http) {
    m.http->interrupt();
    m.http->stop();
  }
  if (m.listener.joinable()) m.listener.join();
  if (m.regen_timer.joinable()) m.regen_timer.join();
  if (m.jobs) m.jobs->shutdown(m.started ? m.opts.shutdown_grace_s : 0);
}

int serve_until_signalled(ServiceOptions opts, std::function<void(int)> on_ready) {
  // Block the signals in every thread; this one waits for them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  Diagnostics diags;
  auto svc = Service::create(std::move(opts), diags);
  if (!svc || !svc->start(diags)) {
    diags.print(std::cerr);
    return 2;
  }
  if (on_ready) on_ready(svc->port());
  int sig = 0;
  sigwait(&set, &sig);
  std::cerr << "syspilot serve: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
            << ": stopping (running jobs get " << svc->options().shutdown_grace_s << " s)\n";
  svc->stop();
  std::cerr << "syspilot serve: stopped\n";
  return 0;
}

}  // namespace syspilot::service
