// Knob roles (synth/knob_rules.txt): which resource a control acts on, recognised from its
// name. Shared by the offline drafter, the completeness validator and prompt ranking.
#pragma once
#include <optional>
#include <string>

namespace syspilot::synth {

struct KnobRole {
  std::string role;      // threads | affinity | spin | arena | allocator | device | streams | nesting | introspect
  std::string resource;  // cpu.threads, ...; empty for introspect
};

// The role of a knob named `name`; an API control's extractor category ("threads",
// "affinity", "allocator", "device", "workers", "spin") is used when the name says nothing.
std::optional<KnobRole> classify_knob(const std::string& name, const std::string& category = {});

// Roles completeness requires to be covered.
bool resource_relevant(const std::string& role);

}  // namespace syspilot::synth
