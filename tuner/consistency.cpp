// One value per resource: the groups of controls that must agree, derived from the contracts,
// and the strategy wrapper that makes every proposal agree (tuner/consistency.h).
#include "tuner/consistency.h"

#include <algorithm>
#include <map>
#include <set>

namespace syspilot::tuner {

namespace {

bool is_api(const lpcl::Control& c) { return c.how.kind == lpcl::ControlKind::Kind::Api; }

bool sets(const lpcl::Control& c, const std::string& resource) {
  return std::find(c.sets.begin(), c.sets.end(), resource) != c.sets.end();
}

bool api_param(const Space& space, const std::string& name) {
  const Param* p = space.find(name);
  return p && p->kind == Param::Kind::Api;
}

}  // namespace

std::vector<std::vector<std::string>> one_value_groups(const std::vector<lpcl::Contract>& contracts, const Space& space) {
  std::map<std::string, int> declared_by;  // control -> how many contracts declare it
  for (const auto& k : contracts) {
    std::set<std::string> names;
    for (const auto& c : k.controls) names.insert(c.name);
    for (const auto& n : names) ++declared_by[n];
  }
  std::vector<std::vector<std::string>> groups;
  for (const auto& k : contracts) {
    std::set<std::string> resources;
    for (const auto& c : k.controls)
      if (is_api(c) && space.find(c.name)) resources.insert(c.sets.begin(), c.sets.end());
    for (const auto& r : resources) {
      std::vector<std::string> api, env;
      for (const auto& c : k.controls) {
        if (!sets(c, r) || !space.find(c.name)) continue;
        if (is_api(c)) {
          api.push_back(c.name);
        } else if (c.fallback_for.empty() || declared_by[c.name] < 2) {
          env.push_back(c.name);
        }
      }
      std::vector<std::string> g = api;
      g.insert(g.end(), env.begin(), env.end());
      g.erase(std::unique(g.begin(), g.end()), g.end());
      if (api.empty() || g.size() < 2) continue;
      if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(std::move(g));
    }
  }
  return groups;
}

Config consistent(const Space& space, const Config& c) {
  Config out = c;
  for (const auto& g : space.one_value) {
    auto setter = std::find_if(g.begin(), g.end(), [&](const std::string& n) { return out.count(n) && api_param(space, n); });
    if (setter == g.end()) continue;
    const std::string value = out.at(*setter);
    for (const auto& n : g)
      if (out.count(n)) out[n] = value;
  }
  return out;
}

bool is_consistent(const Space& space, const Config& c) { return consistent(space, c) == c; }

namespace {

class ConsistentStrategy final : public Strategy {
 public:
  ConsistentStrategy(std::unique_ptr<Strategy> inner, const Space& space) : inner_(std::move(inner)), space_(space) {}
  std::string name() const override { return inner_->name(); }
  std::optional<Config> next(const std::vector<Trial>& history) override {
    std::optional<Config> c;
    if (asked_.empty()) {
      c = inner_->next(history);
    } else {
      std::vector<Trial> seen = history;  // as the inner strategy proposed them
      for (auto& t : seen)
        if (auto it = asked_.find(t.config); it != asked_.end()) t.config = it->second;
      c = inner_->next(seen);
    }
    if (!c) return c;
    Config made = consistent(space_, *c);
    if (made != *c) asked_[made] = *c;
    return made;
  }

 private:
  std::unique_ptr<Strategy> inner_;
  Space space_;
  std::map<Config, Config> asked_;  // consistent form -> the inner strategy's proposal
};

}  // namespace

std::unique_ptr<Strategy> consistent_strategy(std::unique_ptr<Strategy> inner, const Space& space) {
  if (space.one_value.empty()) return inner;
  return std::make_unique<ConsistentStrategy>(std::move(inner), space);
}

}  // namespace syspilot::tuner
