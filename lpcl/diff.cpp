// Semantic diff of contracts: statements matched by meaning (control name, demanded resource
// and condition, predicate and arguments, ...), compared field by field on canonical text.
// Order, layout, comments, source locations and provenance are not meaning.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "lpcl/format_internal.h"
#include "lpcl/lpcl.h"
#include "lpcl/syntax.h"

namespace syspilot::lpcl {

namespace {

// A statement without its provenance: the text that carries its meaning.
template <class T>
std::string meaning(const T& s) {
  T copy = s;
  copy.prov = Provenance{};
  return one_line(statement_text(copy));
}
std::string meaning(const Binding& b) { return one_line(statement_text(b)); }

using Fields = std::vector<std::pair<std::string, std::string>>;  // field -> canonical text

Fields fields(const Control& k) {
  std::string sets = "";
  std::vector<std::string> s = k.sets;
  std::sort(s.begin(), s.end());
  for (size_t i = 0; i < s.size(); ++i) sets += (i ? ", " : "") + s[i];
  return {{"kind", kind_text(k.how)},
          {"type", type_text(k.type)},
          {"domain", domain_text(k.domain)},
          {"default", k.default_value ? format(*k.default_value) : ""},
          {"fallback_for", k.fallback_for},
          {"read_at", to_string(k.read_at)},
          {"sets", sets},
          {"doc", k.doc}};
}
Fields fields(const Demand& d) { return {{"value", format(d.value)}}; }
Fields fields(const Behavior& b) {
  std::string p;
  for (auto& [k, v] : b.params) p += (p.empty() ? "" : " ") + k + " " + format(v);
  return {{"params", p}};
}
Fields fields(const Signal& s) { return {{"value", s.value ? format(*s.value) : ""}}; }
Fields fields(const Assumption&) { return {}; }
Fields fields(const Provides&) { return {}; }
Fields fields(const Binding&) { return {}; }

std::string key(const Control& k) { return k.name; }
std::string key(const Demand& d) { return d.resource + (d.when ? " when " + format(*d.when) : ""); }
std::string key(const Assumption& a) {
  std::string s = a.predicate + "(";
  for (size_t i = 0; i < a.args.size(); ++i) s += (i ? ", " : "") + a.args[i];
  return s + ")";
}
std::string key(const Behavior& b) { return b.name; }
std::string key(const Provides& p) { return p.what + " " + p.name; }
std::string key(const Signal& s) { return s.kind == Signal::Kind::Introspect ? "introspect " + s.metric : s.metric + " " + s.relation; }
std::string key(const Binding& b) { return b.kind + " " + b.pattern; }

template <class T>
void compare(const char* entity, const std::vector<T>& before, const std::vector<T>& after, std::vector<Change>& out) {
  std::map<std::string, std::vector<const T*>> a, b;
  for (auto& x : before) a[key(x)].push_back(&x);
  for (auto& x : after) b[key(x)].push_back(&x);
  std::vector<std::string> keys;
  for (auto& [k, v] : a) keys.push_back(k);
  for (auto& [k, v] : b)
    if (!a.count(k)) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  for (auto& k : keys) {
    auto& xs = a[k];
    auto& ys = b[k];
    if (xs.size() == 1 && ys.size() == 1) {
      Fields f1 = fields(*xs[0]), f2 = fields(*ys[0]);
      for (size_t i = 0; i < f1.size(); ++i)
        if (f1[i].second != f2[i].second) out.push_back({Change::Kind::Changed, entity, k, f1[i].first, f1[i].second, f2[i].second});
      continue;
    }
    // Several statements share a key: compare them as multisets of their meaning.
    std::vector<std::string> m1, m2;
    for (auto* x : xs) m1.push_back(meaning(*x));
    for (auto* y : ys) m2.push_back(meaning(*y));
    std::sort(m1.begin(), m1.end());
    std::sort(m2.begin(), m2.end());
    std::vector<std::string> gone, added;
    std::set_difference(m1.begin(), m1.end(), m2.begin(), m2.end(), std::back_inserter(gone));
    std::set_difference(m2.begin(), m2.end(), m1.begin(), m1.end(), std::back_inserter(added));
    for (auto& s : gone) out.push_back({Change::Kind::Removed, entity, k, "", s, ""});
    for (auto& s : added) out.push_back({Change::Kind::Added, entity, k, "", "", s});
  }
}

std::string contract_header(const Contract& c) { return "contract " + c.name + " " + quote(c.version); }

}  // namespace

ContractDiff diff(const Contract& before, const Contract& after) {
  ContractDiff d;
  auto& out = d.changes;
  const std::string& n = after.name;
  if (before.name != after.name) out.push_back({Change::Kind::Changed, "contract", n, "name", before.name, after.name});
  if (before.version != after.version) out.push_back({Change::Kind::Changed, "contract", n, "version", before.version, after.version});
  if (before.doc != after.doc) out.push_back({Change::Kind::Changed, "contract", n, "doc", before.doc, after.doc});
  compare("binding", before.bindings, after.bindings, out);
  compare("control", before.controls, after.controls, out);
  compare("demand", before.demands, after.demands, out);
  compare("assumption", before.assumptions, after.assumptions, out);
  compare("behavior", before.behaviors, after.behaviors, out);
  compare("provides", before.provides, after.provides, out);
  compare("signal", before.signals, after.signals, out);
  return d;
}

ContractDiff diff(const Document& before, const Document& after) {
  if (before.contracts.size() == 1 && after.contracts.size() == 1) return diff(before.contracts[0], after.contracts[0]);
  ContractDiff d;
  std::map<std::string, const Contract*> a, b;
  for (auto& c : before.contracts) a.emplace(c.name, &c);
  for (auto& c : after.contracts) b.emplace(c.name, &c);
  for (auto& [name, c] : a) {
    auto it = b.find(name);
    if (it == b.end()) {
      d.changes.push_back({Change::Kind::Removed, "contract", name, "", contract_header(*c), ""});
      continue;
    }
    auto sub = diff(*c, *it->second);
    d.changes.insert(d.changes.end(), sub.changes.begin(), sub.changes.end());
  }
  for (auto& [name, c] : b)
    if (!a.count(name)) d.changes.push_back({Change::Kind::Added, "contract", name, "", "", contract_header(*c)});
  return d;
}

std::string to_text(const ContractDiff& d) {
  std::string out;
  for (auto& c : d.changes) {
    switch (c.kind) {
      case Change::Kind::Added: out += "+ " + c.entity + " " + c.name + ": " + c.after + "\n"; break;
      case Change::Kind::Removed: out += "- " + c.entity + " " + c.name + ": " + c.before + "\n"; break;
      case Change::Kind::Changed: {
        auto show = [](const std::string& s) { return s.empty() ? std::string("(none)") : s; };
        out += "~ " + c.entity + " " + c.name + " " + c.field + ": " + show(c.before) + " -> " + show(c.after) + "\n";
        break;
      }
    }
  }
  return out;
}

nlohmann::json to_json(const ContractDiff& d) {
  nlohmann::json changes = nlohmann::json::array();
  for (auto& c : d.changes) {
    const char* kind = c.kind == Change::Kind::Added ? "added" : c.kind == Change::Kind::Removed ? "removed" : "changed";
    changes.push_back({{"kind", kind}, {"entity", c.entity}, {"name", c.name}, {"field", c.field}, {"before", c.before}, {"after", c.after}});
  }
  return nlohmann::json{{"changes", std::move(changes)}, {"empty", d.changes.empty()}};
}

}  // namespace syspilot::lpcl
