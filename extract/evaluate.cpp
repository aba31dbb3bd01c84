// Expected-list parsing and precision/recall scoring for extraction results.
#include "extract/evaluate.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace syspilot::extract {

ExpectedList load_expected(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the expected list");
  ExpectedList out;
  std::set<std::string>* section = nullptr;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    auto a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos || line[a] == '#') continue;
    std::istringstream ls(line.substr(a));
    std::string name;
    ls >> name;
    if (name == "[env]") { section = &out.env; continue; }
    if (name == "[api]") { section = &out.api; out.has_api = true; continue; }
    if (!section)
      throw std::runtime_error(path + ":" + std::to_string(n) + ": entry before any [env] or [api] section");
    section->insert(name);
  }
  return out;
}

Score score(const std::set<std::string>& expected, const std::set<std::string>& found) {
  Score s;
  s.expected = expected.size();
  s.found = found.size();
  for (auto& e : expected) {
    if (found.count(e)) ++s.matched;
    else s.missed.push_back(e);
  }
  for (auto& f : found)
    if (!expected.count(f)) s.extra.push_back(f);
  return s;
}

std::string Score::str() const {
  char buf[160];
  if (expected == 0 && found == 0)
    std::snprintf(buf, sizeof buf, "P n/a R n/a (0 expected, 0 found)");
  else
    std::snprintf(buf, sizeof buf, "P %.1f%% R %.1f%% (%zu/%zu expected, %zu found)", 100 * precision(),
                  100 * recall(), matched, expected, found);
  return buf;
}

std::set<std::string> env_names(const Facts& f) {
  std::set<std::string> s;
  for (auto& e : f.env_vars) s.insert(e.name);
  return s;
}

std::set<std::string> api_names(const Facts& f) {
  std::set<std::string> s;
  for (auto& a : f.api_controls) s.insert(a.name);
  return s;
}

}  // namespace syspilot::extract
