// Loads the embedded knob rules once and classifies knob names by them.
#include "synth/rules.h"

#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace syspilot::synth {

extern const char* const kKnobRules;  // knob_rules.txt, embedded by CMake

namespace {

struct Rule {
  KnobRole role;
  std::regex pattern;
};

const std::vector<Rule>& rules() {
  static const std::vector<Rule> r = [] {
    std::vector<Rule> out;
    std::istringstream in(kKnobRules);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string role, resource, pattern;
      if (!(ls >> role) || role[0] == '#') continue;
      ls >> resource >> pattern;
      if (pattern.empty()) throw std::logic_error("knob_rules.txt: rule '" + role + "' has no pattern");
      out.push_back({{role, resource == "-" ? "" : resource},
                     std::regex(pattern, std::regex::ECMAScript | std::regex::icase)});
    }
    return out;
  }();
  return r;
}

}  // namespace

std::optional<KnobRole> classify_knob(const std::string& name, const std::string& category) {
  for (const auto& r : rules())
    if (std::regex_search(name, r.pattern)) return r.role;
  if (category == "threads" || category == "workers") return KnobRole{"threads", "cpu.threads"};
  if (category == "affinity") return KnobRole{"affinity", "cpu.cores"};
  if (category == "spin") return KnobRole{"spin", "cpu.spin"};
  if (category == "allocator") return KnobRole{"arena", "mem.arenas"};
  if (category == "device") return KnobRole{"device", "gpu.device"};
  return std::nullopt;
}

bool resource_relevant(const std::string& role) {
  return role == "threads" || role == "affinity" || role == "spin" || role == "arena" || role == "device";
}

}  // namespace syspilot::synth
