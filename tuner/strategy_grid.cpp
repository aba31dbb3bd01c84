// Exhaustive grid: the cross product of the space's domains in a fixed order (last control
// varies fastest), the baseline that eventually measures everything.
#include "tuner/search.h"

namespace syspilot::tuner {

std::unique_ptr<Strategy> make_grid_strategy(const Space& space, const StrategyContext& ctx);

namespace {

class GridSearch : public Strategy {
 public:
  explicit GridSearch(const Space& space) : space_(space), index_(space.params.size(), 0) {}
  std::string name() const override { return "grid"; }

  std::optional<Config> next(const std::vector<Trial>&) override {
    if (done_ || space_.params.empty()) return std::nullopt;
    Config c;
    for (size_t i = 0; i < space_.params.size(); ++i) c[space_.params[i].name] = space_.params[i].values[index_[i]];
    // Advance the mixed-radix counter.
    size_t i = index_.size();
    for (;;) {
      if (i == 0) {
        done_ = true;
        break;
      }
      --i;
      if (++index_[i] < space_.params[i].values.size()) break;
      index_[i] = 0;
    }
    return c;
  }

 private:
  Space space_;
  std::vector<size_t> index_;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<Strategy> make_grid_strategy(const Space& space, const StrategyContext&) {
  return std::make_unique<GridSearch>(space);
}

}  // namespace syspilot::tuner
