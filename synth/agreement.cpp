// The drafter measured against reviewed contracts: per control, whether the draft says what the
// reviewer kept (type, domain, default, resources), not only whether it found the name.
#include <algorithm>

#include "lpcl/lpcl.h"
#include "synth/synth.h"

namespace syspilot::synth {
namespace {

bool same_expr(const std::optional<lpcl::Expr>& a, const std::optional<lpcl::Expr>& b) {
  if (!a || !b) return !a && !b;
  return lpcl::format(*a) == lpcl::format(*b);
}

bool same_domain(const lpcl::Domain& a, const lpcl::Domain& b) {
  if (a.kind != b.kind || !same_expr(a.lo, b.lo) || !same_expr(a.hi, b.hi) || a.values.size() != b.values.size())
    return false;
  for (size_t i = 0; i < a.values.size(); ++i)
    if (lpcl::format(a.values[i]) != lpcl::format(b.values[i])) return false;
  return true;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

Agreement& Agreement::operator+=(const Agreement& o) {
  reviewed += o.reviewed;
  named += o.named;
  type += o.type;
  domain += o.domain;
  default_value += o.default_value;
  sets += o.sets;
  dropped += o.dropped;
  demands += o.demands;
  demands_same += o.demands_same;
  provides += o.provides;
  provides_same += o.provides_same;
  return *this;
}

Agreement agreement(const lpcl::Contract& drafted, const lpcl::Contract& reviewed) {
  Agreement a;
  for (auto& r : reviewed.controls) {
    ++a.reviewed;
    const lpcl::Control* d = drafted.find_control(r.name);
    if (!d) continue;
    ++a.named;
    a.type += d->type.kind == r.type.kind && d->type.enumerators == r.type.enumerators;
    a.domain += same_domain(d->domain, r.domain);
    a.default_value += same_expr(d->default_value, r.default_value);
    a.sets += sorted(d->sets) == sorted(r.sets);
  }
  for (auto& d : drafted.controls) a.dropped += reviewed.find_control(d.name) == nullptr;
  for (auto& r : reviewed.demands) {
    ++a.demands;
    a.demands_same += std::any_of(drafted.demands.begin(), drafted.demands.end(), [&](auto& d) {
      return d.resource == r.resource && lpcl::format(d.value) == lpcl::format(r.value);
    });
  }
  for (auto& r : reviewed.provides) {
    ++a.provides;
    a.provides_same += std::any_of(drafted.provides.begin(), drafted.provides.end(),
                                   [&](auto& d) { return d.what == r.what && d.name == r.name; });
  }
  return a;
}

}  // namespace syspilot::synth
