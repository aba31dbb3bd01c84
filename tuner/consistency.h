// One value per resource: controls of one library that set the same resource, an API setter
// among them (openblas_set_num_threads and OPENBLAS_NUM_THREADS, goto_set_num_threads and
// GOTO_NUM_THREADS), never take different values in one configuration, whichever strategy
// proposed it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "lpcl/ast.h"
#include "tuner/search.h"

namespace syspilot::tuner {

// The groups of `space`'s controls that must agree, from the contracts' `sets`: per contract
// and resource an API control of it sets, that contract's API controls and env controls setting
// the resource. An env control the contract only borrows as a fallback (`OMP_NUM_THREADS
// fallback_for GOTO_NUM_THREADS` in OpenBLAS's contract) while another composed contract
// declares it (libgomp's) serves that library too and is left out. Only controls of the space
// count; a group needs an API control and one more.
std::vector<std::vector<std::string>> one_value_groups(const std::vector<lpcl::Contract>& contracts, const Space& space);

// `c` with every group of space.one_value agreeing: where it sets an API control of a group, the
// group's other controls it sets take that value (the setter runs last, so it is what the
// library uses); the first API control of the group wins over a second one.
Config consistent(const Space& space, const Config& c);

// True when `c` is its own consistent() form: no control a group's set API control shares a
// group with takes another value.
bool is_consistent(const Space& space, const Config& c);

// `inner` with every proposal made consistent. The inner strategy sees its own proposals
// answered: a trial of a configuration it proposed in another form carries that form.
std::unique_ptr<Strategy> consistent_strategy(std::unique_ptr<Strategy> inner, const Space& space);

}  // namespace syspilot::tuner
