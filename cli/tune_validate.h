// Checks `syspilot tune` makes before it runs anything: the --pin/--add/--drop names against
// the controls the composed contracts declare (with a "did you mean" for a typo), and pinned
// or added values against each control's type and domain.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "lpcl/ast.h"
#include "tuner/analyze.h"
#include "tuner/space.h"

namespace syspilot::cli {

// The known name nearest to `name` by edit distance (case-insensitive), when it is near enough
// to be a typo of it; "" otherwise.
std::string nearest_name(const std::string& name, const std::vector<std::string>& known);

// Why `value` is not a value of control `c` on machine `m` ("OMP_NUM_THREADS takes an int in
// [1, ncpus] (1..2 on this machine), not 'banana'"); nullopt when it is one. `in_domain`
// false checks the type only (an --add value may widen a contract's domain).
std::optional<std::string> outside_domain(const lpcl::Control& c, const std::string& value,
                                          const tuner::MachineFacts& m, bool in_domain = true);

// Throws UsageError for a pin or drop of a control that no composed contract declares, no
// --add adds and the command does not expose (a process count), and for a pinned value outside
// its control's type or domain or an added one outside its type.
void validate_edits(const tuner::SpaceEdits& edits, const tuner::Composition& composition,
                    const tuner::MachineFacts& m);

}  // namespace syspilot::cli
