// Random search: uniform over the cross product of the space's domains, seeded, without
// repeating a measured configuration. Like every baseline it knows nothing of constraints.
#include <random>
#include <set>

#include "tuner/search.h"

namespace syspilot::tuner {

std::unique_ptr<Strategy> make_random_strategy(const Space& space, const StrategyContext& ctx);

namespace {

class RandomSearch : public Strategy {
 public:
  RandomSearch(const Space& space, std::uint64_t seed) : space_(space), rng_(seed) {}
  std::string name() const override { return "random"; }

  std::optional<Config> next(const std::vector<Trial>& history) override {
    std::set<Config> seen;
    for (const auto& t : history) seen.insert(t.config);
    if (space_.params.empty()) return std::nullopt;
    // Give up once most draws land on measured points: the space is (nearly) exhausted.
    for (int attempt = 0; attempt < 200; ++attempt) {
      Config c;
      for (const auto& p : space_.params) {
        std::uniform_int_distribution<size_t> pick(0, p.values.size() - 1);
        c[p.name] = p.values[pick(rng_)];
      }
      if (!seen.count(c)) return c;
    }
    return std::nullopt;
  }

 private:
  Space space_;
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<Strategy> make_random_strategy(const Space& space, const StrategyContext& ctx) {
  return std::make_unique<RandomSearch>(space, ctx.seed);
}

}  // namespace syspilot::tuner
