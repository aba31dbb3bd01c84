// The drafter measured against reviewed contracts: per control, whether the draft says what the
// reviewer kept (type, domain, default, resources), not only whether it found the name.
#include <algorithm>
#include <string>

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

std::string type_text(const lpcl::Type& t) {
  static const char* names[] = {"int", "float", "bool", "string", "size", "duration", "enum"};
  std::string s = names[static_cast<int>(t.kind)];
  if (t.kind == lpcl::Type::Kind::Enum) {
    s += "{";
    for (size_t i = 0; i < t.enumerators.size(); ++i) s += (i ? ", " : "") + t.enumerators[i];
    s += "}";
  }
  return s;
}

std::string expr_text(const std::optional<lpcl::Expr>& e) { return e ? lpcl::format(*e) : "none"; }

std::string domain_text(const lpcl::Domain& d) {
  if (d.kind == lpcl::Domain::Kind::Range) return "in [" + expr_text(d.lo) + ", " + expr_text(d.hi) + "]";
  if (d.kind == lpcl::Domain::Kind::Set) {
    std::string s = "in {";
    for (size_t i = 0; i < d.values.size(); ++i) s += (i ? ", " : "") + lpcl::format(d.values[i]);
    return s + "}";
  }
  return "none";
}

std::string list_text(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : sorted(v)) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
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
  differences.insert(differences.end(), o.differences.begin(), o.differences.end());
  return *this;
}

Agreement agreement(const lpcl::Contract& drafted, const lpcl::Contract& reviewed) {
  Agreement a;
  for (auto& r : reviewed.controls) {
    ++a.reviewed;
    const lpcl::Control* d = drafted.find_control(r.name);
    if (!d) continue;
    ++a.named;
    auto differ = [&](bool same, const char* field, const std::string& drafted, const std::string& kept) {
      if (!same) a.differences.push_back(r.name + " " + field + ": drafted " + drafted + "; reviewed " + kept);
      return same ? 1 : 0;
    };
    a.type += differ(d->type.kind == r.type.kind && d->type.enumerators == r.type.enumerators, "type",
                     type_text(d->type), type_text(r.type));
    a.domain += differ(same_domain(d->domain, r.domain), "domain", domain_text(d->domain), domain_text(r.domain));
    a.default_value += differ(same_expr(d->default_value, r.default_value), "default", expr_text(d->default_value),
                              expr_text(r.default_value));
    a.sets += differ(sorted(d->sets) == sorted(r.sets), "sets", list_text(d->sets), list_text(r.sets));
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
