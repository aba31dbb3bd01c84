// Internal: the hypothesis rules engine. Rules are JSON files in tuner/rules/ (one per kind,
// schema in docs/analysis.md); this turns them plus a composition into Hypothesis values.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "lpcl/ast.h"
#include "tuner/analyze.h"

namespace syspilot::tuner::rules {

struct Role {
  std::string name;
  std::vector<std::string> all, any;  // feature predicates: provides:region, demand:R, controls:R,
                                      // assume:P, assume:P(arg), behavior:B, self:app-threads
};

struct CheckSpec {
  std::string signal, op, value, why;  // value: a number or a machine fact (ncpus, ncores)
  std::string or_signal, or_op, or_value;  // "or": {signal, op, value}; empty when none
};

struct Rule {
  std::string file;
  std::string kind, title, relation;  // relation: nested | co_run | pair | single
  bool symmetric = false;             // one hypothesis per unordered pair
  std::vector<Role> roles;
  std::string symptom, constraint;
  std::vector<std::string> controls;  // "role:resource"
  std::vector<std::map<std::string, std::string>> remedies, probes;  // "role:resource" -> value
  std::vector<CheckSpec> checks;
};

std::vector<Rule> load(const std::string& dir, Diagnostics& diags);

// The control of `c` that acts on `resource`, preferring what its demand reads first, env over
// option over api. `accepting` (non-empty): only a control whose domain admits that value.
// `env_only`: skip API controls (a probe sets the environment). "" when none.
std::string control_for(const lpcl::Contract& c, const std::string& resource, const std::string& accepting = {},
                        bool env_only = false);
// Every control acting on `resource`, in preference order.
std::vector<std::string> controls_for(const lpcl::Contract& c, const std::string& resource);

// Whether a value lies in a control's declared domain (unknown domains admit what the type admits).
bool admits(const lpcl::Control& c, const std::string& value);

}  // namespace syspilot::tuner::rules
