// Building the search space from contracts and hypotheses: which controls, their domains
// discretised for search, their defaults and the constraints, and how a configuration becomes
// a child's environment (env vars, option carriers, the preload shim for API controls).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "lpcl/ast.h"
#include "lpcl/diagnostics.h"
#include "tuner/search.h"

namespace syspilot::tuner {

enum class SpaceScope {
  Hypotheses,  // controls named by the guides (confirmed hypotheses)
  All,         // every control of every contract given
};

// A user's changes to the space (CLI --pin/--add/--drop).
struct SpaceEdits {
  Config pin;                                         // control -> fixed value (one-value domain)
  std::map<std::string, std::vector<std::string>> add;  // control -> values (new env control or replaced domain)
  std::vector<std::string> drop;
};

// Thread counts for a machine: `lo`, then 1, 2, 4, ..., ncpus and 2 x ncpus above it up to
// `top` (ascending, no repeats). Oversubscription (2 x ncpus) is plausible to help only where
// threads wait, so it is the top of the ladder.
std::vector<double> thread_ladder(double lo, double top, const MachineFacts& m);

// Discretises one control's domain with the machine facts: small integer ranges whole, large
// ones as powers of two plus both ends and the default, sets and enums as written, bools both
// ways. Returns false (and says why in `why`) for a control that cannot be searched.
bool discretise(const lpcl::Control& c, const MachineFacts& m, Param& out, std::string* why = nullptr);

// The space over `contracts` for `scope`, with the guides' constraints and the user's edits.
// Problems (a pinned control that does not exist, a control without a domain) go to diags.
Space build_space(const std::vector<lpcl::Contract>& contracts, const std::vector<Guide>& guides,
                  SpaceScope scope, const SpaceEdits& edits, const MachineFacts& m, Diagnostics& diags);

// Applies user edits to an existing space (also used for spaces built without contracts).
void apply_edits(Space& space, const SpaceEdits& edits, Diagnostics& diags);

// The environment changes that apply `c`: env controls by name, option controls joined into
// their carrier (after what the inherited environment already holds there), API controls as
// SYSPILOT_SHIM_CALLS="setter=value;..." plus `shim_path` prepended to LD_PRELOAD.
std::map<std::string, std::string> environment_for(const Space& space, const Config& c, const std::string& shim_path,
                                                   const std::map<std::string, std::string>& inherited);

// Where the preload shim was built (SYSPILOT_SHIM env var overrides); "" when not found.
std::string shim_path();

// `v` as one POSIX shell word: unchanged when it holds only safe characters, else in single
// quotes (an embedded quote as '\''). For the lines a command prints to be pasted or sourced.
std::string shell_quote(const std::string& v);

// An environment (environment_for()) as the `export NAME=VALUE` lines a shell sources, in
// name order.
std::vector<std::string> export_lines(const std::map<std::string, std::string>& env);

}  // namespace syspilot::tuner
