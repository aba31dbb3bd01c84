// The compute kernel the scenarios' own (non-library) phases run: a dependent chain of sin()
// calls, so the work cannot be vectorised away and scales with `inner`.
#pragma once
#include <cmath>

inline double work(int i, int inner) {
  double x = i * 1e-3;
  for (int j = 0; j < inner; ++j) x = std::sin(x) + 1.0001;
  return x;
}
