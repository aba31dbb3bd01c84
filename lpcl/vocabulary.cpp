// Loads the embedded vocabulary once and answers "is this a known resource / fact / ...".
#include "lpcl/vocabulary.h"

#include <nlohmann/json.hpp>

#include "lpcl/lpcl.h"
#include "lpcl/syntax.h"

namespace syspilot::lpcl {

extern const char* const kVocabularyJson;

namespace {
Vocabulary load() {
  Vocabulary v;
  auto j = nlohmann::json::parse(kVocabularyJson);
  auto names = [&](const char* key, std::vector<std::string>& out) {
    for (auto& e : j.at(key)) out.push_back(e.is_string() ? e.get<std::string>() : e.at("name").get<std::string>());
  };
  names("resources", v.resources);
  names("machine_facts", v.machine_facts);
  names("predicates", v.predicate_names);
  names("behaviors", v.behaviors);
  names("metrics", v.metrics);
  names("relations", v.relations);
  names("binding_kinds", v.binding_kinds);
  for (auto& e : j.at("machine_facts")) v.fact_types[e.at("name")] = e.value("type", "int");
  for (auto& e : j.at("predicates")) v.predicates[e.at("name")].params = e.value("params", std::vector<std::string>{});
  for (auto& e : j.at("functions")) v.functions[e.at("name")] = {e.value("min_args", 1), e.value("max_args", 1)};
  v.resource_set.insert(v.resources.begin(), v.resources.end());
  v.fact_set.insert(v.machine_facts.begin(), v.machine_facts.end());
  v.behavior_set.insert(v.behaviors.begin(), v.behaviors.end());
  v.metric_set.insert(v.metrics.begin(), v.metrics.end());
  return v;
}
}  // namespace

const Vocabulary& vocabulary() {
  static const Vocabulary v = load();
  return v;
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = 3;
  for (auto& c : candidates) {
    size_t d = edit_distance(word, c, 2);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

const std::vector<std::string>& resources() { return vocabulary().resources; }
const std::vector<std::string>& machine_facts() { return vocabulary().machine_facts; }
const std::vector<std::string>& predicates() { return vocabulary().predicate_names; }
const std::vector<std::string>& behaviors() { return vocabulary().behaviors; }
const std::vector<std::string>& metrics() { return vocabulary().metrics; }

}  // namespace syspilot::lpcl
