// The checked vocabulary (resources, machine facts, predicates, behaviors, metrics,
// relations, functions, binding kinds), parsed once from the embedded lpcl/vocabulary.json.
// Internal to the lpcl library; the public lists are in lpcl/lpcl.h.
#pragma once
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace syspilot::lpcl {

struct Vocabulary {
  struct Predicate {
    std::vector<std::string> params;  // "resource" | "word"
  };
  struct Function {
    int min_args = 1, max_args = 1;
  };
  std::vector<std::string> resources, machine_facts, predicate_names, behaviors, metrics, relations, binding_kinds;
  std::unordered_map<std::string, std::string> fact_types;  // name -> "int" | "size"
  std::unordered_map<std::string, Predicate> predicates;
  std::unordered_map<std::string, Function> functions;
  std::unordered_set<std::string> resource_set, fact_set, behavior_set, metric_set;
};

const Vocabulary& vocabulary();

// The closest candidate within edit distance 2, or "".
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace syspilot::lpcl
