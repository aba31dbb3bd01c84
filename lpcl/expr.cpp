// Numeric meaning of expressions: literal values (sizes in bytes, durations in seconds) and
// evaluation against a name lookup, for the checker and for later stages (composition, tuner).
#include <cmath>
#include <cstdlib>

#include "lpcl/lpcl.h"

namespace syspilot::lpcl {

namespace {
double unit_scale(const std::string& unit) {
  if (unit == "B") return 1;
  if (unit == "KB") return 1e3;
  if (unit == "MB") return 1e6;
  if (unit == "GB") return 1e9;
  if (unit == "TB") return 1e12;
  if (unit == "KiB") return 1024.0;
  if (unit == "MiB") return 1024.0 * 1024;
  if (unit == "GiB") return 1024.0 * 1024 * 1024;
  if (unit == "TiB") return 1024.0 * 1024 * 1024 * 1024;
  if (unit == "ns") return 1e-9;
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1;
  if (unit == "min") return 60;
  if (unit == "h") return 3600;
  return NAN;
}
}  // namespace

std::optional<double> literal_value(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Bool: return e.text == "true" ? 1.0 : 0.0;
    case Expr::Kind::Int:
    case Expr::Kind::Float:
    case Expr::Kind::Size:
    case Expr::Kind::Duration: {
      const char* s = e.text.c_str();
      char* end = nullptr;
      double v;
      if (e.text.size() > 2 && e.text[0] == '0' && (e.text[1] == 'x' || e.text[1] == 'X')) {
        v = static_cast<double>(std::strtoull(s, &end, 16));
      } else {
        v = std::strtod(s, &end);
      }
      if (end == s) return std::nullopt;
      std::string unit(end);
      if (!unit.empty()) {
        double k = unit_scale(unit);
        if (std::isnan(k)) return std::nullopt;
        v *= k;
      }
      if (!std::isfinite(v)) return std::nullopt;
      return v;
    }
    default: return std::nullopt;
  }
}

std::optional<double> evaluate(const Expr& e, const NameLookup& lookup) {
  switch (e.kind) {
    case Expr::Kind::Name: return lookup ? lookup(e.text) : std::nullopt;
    case Expr::Kind::String: return std::nullopt;
    case Expr::Kind::Unary: {
      if (e.args.size() != 1) return std::nullopt;
      auto v = evaluate(e.args[0], lookup);
      if (!v) return std::nullopt;
      return e.op == "-" ? -*v : (*v == 0 ? 1.0 : 0.0);
    }
    case Expr::Kind::Binary: {
      if (e.args.size() != 2) return std::nullopt;
      if (e.op == "??") {
        auto a = evaluate(e.args[0], lookup);
        return a ? a : evaluate(e.args[1], lookup);
      }
      auto a = evaluate(e.args[0], lookup);
      if (!a) return std::nullopt;
      if (e.op == "&&" && *a == 0) return 0.0;
      if (e.op == "||" && *a != 0) return 1.0;
      auto b = evaluate(e.args[1], lookup);
      if (!b) return std::nullopt;
      double x = *a, y = *b;
      const std::string& o = e.op;
      if (o == "+") return x + y;
      if (o == "-") return x - y;
      if (o == "*") return x * y;
      if (o == "/") return y == 0 ? std::nullopt : std::optional<double>(x / y);
      if (o == "%") return y == 0 ? std::nullopt : std::optional<double>(std::fmod(x, y));
      if (o == "==") return x == y ? 1.0 : 0.0;
      if (o == "!=") return x != y ? 1.0 : 0.0;
      if (o == "<") return x < y ? 1.0 : 0.0;
      if (o == "<=") return x <= y ? 1.0 : 0.0;
      if (o == ">") return x > y ? 1.0 : 0.0;
      if (o == ">=") return x >= y ? 1.0 : 0.0;
      if (o == "&&" || o == "||") return (y != 0) ? 1.0 : 0.0;
      return std::nullopt;
    }
    case Expr::Kind::Call: {
      std::vector<double> v;
      for (auto& a : e.args) {
        auto x = evaluate(a, lookup);
        if (!x) return std::nullopt;
        v.push_back(*x);
      }
      const std::string& f = e.text;
      if ((f == "min" || f == "max") && !v.empty()) {
        double r = v[0];
        for (double x : v) r = f == "min" ? std::min(r, x) : std::max(r, x);
        return r;
      }
      if (f == "clamp" && v.size() == 3) return std::min(std::max(v[0], v[1]), v[2]);
      if (v.size() != 1) return std::nullopt;
      if (f == "ceil") return std::ceil(v[0]);
      if (f == "floor") return std::floor(v[0]);
      if (f == "round") return std::round(v[0]);
      if (f == "abs") return std::fabs(v[0]);
      if (f == "log2") return v[0] > 0 ? std::optional<double>(std::log2(v[0])) : std::nullopt;
      return std::nullopt;
    }
    default: return literal_value(e);
  }
}

}  // namespace syspilot::lpcl
