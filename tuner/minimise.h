// Minimising a result: the controls of the best configuration whose removal keeps its speed
// within the noise are dropped, so that what a user applies sets only what matters.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tuner/search.h"

namespace syspilot::tuner {

struct MinimiseOptions {
  int max_runs = 16;      // runs the minimisation may spend; a check that would pass it is not started
  int pairs = 2;          // interleaved current/candidate pairs per check (verify(), no warm-up)
  double noise = 0.05;    // relative run-to-run noise of the search: a loss within it is no loss
  // Controls hypotheses name: tried last (controls nothing names, then API controls, which need
  // the preload shim, go first).
  std::vector<std::string> named;
  MachineFacts machine;   // a candidate the space's constraints reject is not tried
  std::function<void(const std::string& line)> progress;  // one line per check
};

struct Minimised {
  Config config;                      // the minimised configuration
  int controls = 0;                   // controls the full best set
  std::vector<std::string> dropped;   // in the order they were dropped
  int runs = 0;                       // runs spent, failed ones too
  int checks = 0;
  bool capped = false;                // stopped at max_runs with controls left to try
};

// Greedy, one check at a time against the configuration kept so far: first every control no
// hypothesis names at once (when some are named and two or more are not), then the controls
// still set, least important first, in chunks of half of them, then of a quarter, ..., then
// each alone (delta debugging: one check clears a chunk of controls that make no difference). A control is dropped when the configuration without it
// re-measures (interleaved pairs against the full best, so that small losses do not add up) at
// no less than 1 - max(noise, the pairs' spread, 5%) of the full best's speed. The default configuration (every control dropped) is never a
// candidate: the verdict already measured the best against it.
Minimised minimise(Objective& objective, const Space& space, const Config& best, const MinimiseOptions& options);

}  // namespace syspilot::tuner
