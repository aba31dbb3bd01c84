// Lookups the analysis tests share: a relation between two parties, a hypothesis by id.
#pragma once
#include <string>
#include <vector>

#include "tuner/analyze.h"

namespace syspilot::tuner::testing_support {

inline bool has_relation(const Composition& c, Relation::Kind k, const std::string& a, const std::string& b) {
  for (auto& r : c.relations)
    if (r.kind == k && ((r.outer == a && r.inner == b) || (k == Relation::Kind::CoRun && r.outer == b && r.inner == a)))
      return true;
  return false;
}

inline const Hypothesis* find_h(const std::vector<Hypothesis>& hs, const std::string& id) {
  for (auto& h : hs)
    if (h.id == id) return &h;
  return nullptr;
}

}  // namespace syspilot::tuner::testing_support
