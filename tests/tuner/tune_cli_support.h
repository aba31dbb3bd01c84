// The tuning tests that start `syspilot tune` as a process: one way to run it.
#pragma once
#include <string>
#include <vector>

#include "tuner/run.h"

#ifdef SYSPILOT_CLI
namespace syspilot::tuner::testing_support {

// Runs `syspilot tune ARGS` as a process (no sampling, no perf), with the variables in `unset`
// removed from its environment. Placeholders such as {NPROC:-2} in ARGS reach syspilot as
// written: they are for the runs it starts, not for starting it.
inline RunResult tune_cli(std::vector<std::string> args, double timeout_s = 120,
                          std::vector<std::string> unset = {}) {
  RunSpec rs;
  rs.argv = {SYSPILOT_CLI, "tune"};
  rs.argv.insert(rs.argv.end(), args.begin(), args.end());
  rs.timeout_s = timeout_s;
  rs.sample_interval_s = 0;
  rs.perf = false;
  rs.placeholders = false;
  rs.env_unset = std::move(unset);
  return run(rs);
}

}  // namespace syspilot::tuner::testing_support
#endif
