// A library that says it rejected a setting: "<jemalloc>: Invalid conf value:
// max_background_threads:true", "libgomp: Invalid value for environment variable
// OMP_NUM_THREADS", "OMP: Warning #42: OMP_PROC_BIND: "x" is an invalid value; ignored.". A
// trial whose setting was ignored measured the default under another name, so it fails with
// the library's own words.
#pragma once
#include <string>

#include "tuner/search.h"

namespace syspilot::tuner {

// The first line of `output` that names a control set by `c` (or, for an option control, its
// key) together with words of refusal (invalid, unknown, unrecognised, unsupported, ignored,
// illegal, out of range, malformed, cannot parse); "" when none does. Lines that also appear in
// `reference_output` (what the run printed without any setting) are not counted. Only the
// first 64 KiB of `output` and lines of at most 1000 characters are read.
std::string rejected_setting(const std::string& output, const Config& c, const std::string& reference_output = {});

}  // namespace syspilot::tuner
