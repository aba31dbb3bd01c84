// Prometheus exposition (text format 0.0.4). One mutex: a few hundred nanoseconds per
// request, far below the cost of the request itself.
#include "service/metrics.h"

#include <sstream>

namespace syspilot::service {

void Metrics::observe_request(const std::string& method, const std::string& route, int status, double seconds) {
  std::lock_guard<std::mutex> g(mu_);
  requests_[{method, route, status}]++;
  auto& h = latency_[route];
  for (size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) h.counts[i]++;
  h.count++;
  h.sum += seconds;
}

void Metrics::add_llm(long long calls, long long cached, long long prompt_tokens, long long completion_tokens) {
  std::lock_guard<std::mutex> g(mu_);
  llm_calls_ += calls;
  llm_cached_ += cached;
  prompt_tokens_ += prompt_tokens;
  completion_tokens_ += completion_tokens;
  if (cached) cache_hits_["llm"] += cached;
}

void Metrics::add_cache_hit(const std::string& cache) {
  std::lock_guard<std::mutex> g(mu_);
  cache_hits_[cache]++;
}

void Metrics::add_job_outcome(const std::string& kind, const std::string& state) {
  std::lock_guard<std::mutex> g(mu_);
  jobs_[{kind, state}]++;
}

std::string Metrics::render(const std::map<std::string, double>& gauges) const {
  std::ostringstream o;
  std::lock_guard<std::mutex> g(mu_);
  o << "# HELP syspilot_http_requests_total HTTP requests by method, route and status.\n"
       "# TYPE syspilot_http_requests_total counter\n";
  for (auto& [k, n] : requests_)
    o << "syspilot_http_requests_total{method=\"" << std::get<0>(k) << "\",route=\"" << std::get<1>(k)
      << "\",code=\"" << std::get<2>(k) << "\"} " << n << "\n";
  o << "# HELP syspilot_http_request_duration_seconds Request latency by route.\n"
       "# TYPE syspilot_http_request_duration_seconds histogram\n";
  for (auto& [route, h] : latency_) {
    for (size_t i = 0; i < kBuckets.size(); ++i)
      o << "syspilot_http_request_duration_seconds_bucket{route=\"" << route << "\",le=\"" << kBuckets[i] << "\"} "
        << h.counts[i] << "\n";
    o << "syspilot_http_request_duration_seconds_bucket{route=\"" << route << "\",le=\"+Inf\"} " << h.count << "\n";
    o << "syspilot_http_request_duration_seconds_sum{route=\"" << route << "\"} " << h.sum << "\n";
    o << "syspilot_http_request_duration_seconds_count{route=\"" << route << "\"} " << h.count << "\n";
  }
  o << "# HELP syspilot_jobs_finished_total Jobs finished in this process by kind and final state.\n"
       "# TYPE syspilot_jobs_finished_total counter\n";
  for (auto& [k, n] : jobs_)
    o << "syspilot_jobs_finished_total{kind=\"" << k.first << "\",state=\"" << k.second << "\"} " << n << "\n";
  o << "# HELP syspilot_llm_calls_total LLM requests sent (cached answers not counted).\n"
       "# TYPE syspilot_llm_calls_total counter\n"
    << "syspilot_llm_calls_total " << llm_calls_ << "\n"
    << "# HELP syspilot_llm_tokens_total LLM tokens by kind.\n# TYPE syspilot_llm_tokens_total counter\n"
    << "syspilot_llm_tokens_total{kind=\"prompt\"} " << prompt_tokens_ << "\n"
    << "syspilot_llm_tokens_total{kind=\"completion\"} " << completion_tokens_ << "\n"
    << "# HELP syspilot_cache_hits_total Work avoided by content-addressed caches.\n"
       "# TYPE syspilot_cache_hits_total counter\n";
  for (const char* c : {"input", "facts", "llm"}) {
    auto it = cache_hits_.find(c);
    o << "syspilot_cache_hits_total{cache=\"" << c << "\"} " << (it == cache_hits_.end() ? 0 : it->second) << "\n";
  }
  std::string last;
  for (auto& [name, v] : gauges) {
    std::string base = name.substr(0, name.find('{'));
    if (base != last) o << "# TYPE " << base << " gauge\n";
    last = base;
    o << name << " " << v << "\n";
  }
  return o.str();
}

}  // namespace syspilot::service
