// Service metrics in the Prometheus text format: requests by route and status, latency
// histograms, jobs, LLM calls and tokens, cache hits.
#pragma once
#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace syspilot::service {

class Metrics {
 public:
  // route: the route pattern ("/v1/libraries/{lib}"), never the raw path (bounded labels).
  void observe_request(const std::string& method, const std::string& route, int status, double seconds);
  void add_llm(long long calls, long long cached, long long prompt_tokens, long long completion_tokens);
  void add_cache_hit(const std::string& cache);  // "facts" | "input" | "llm"
  void add_job_outcome(const std::string& kind, const std::string& state);

  // Everything above plus the gauges passed in (name -> value), as Prometheus text.
  std::string render(const std::map<std::string, double>& gauges) const;

 private:
  static constexpr std::array<double, 12> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,   0.1,   0.25,   0.5,   1,     5};
  struct Histogram {
    std::array<long long, kBuckets.size()> counts{};
    long long count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, long long> requests_;
  std::map<std::string, Histogram> latency_;
  std::map<std::string, long long> cache_hits_;
  std::map<std::pair<std::string, std::string>, long long> jobs_;
  long long llm_calls_ = 0, llm_cached_ = 0, prompt_tokens_ = 0, completion_tokens_ = 0;
};

}  // namespace syspilot::service
