// Loads the embedded knob rules once and classifies knob names by them.
#include "synth/rules.h"

#include <cctype>
#include <set>

#include "lpcl/lpcl.h"

#include <cstdlib>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace syspilot::synth {

extern const char* const kKnobRules;  // knob_rules.txt, embedded by CMake

namespace {

struct Rule {
  KnobRole role;
  std::regex pattern;
};

struct OptionRule {
  std::string carrier, item_sep, kv_sep, prefix;
  bool strip = false;
};

struct Rules {
  std::vector<Rule> roles;
  std::vector<OptionRule> options;
};

// "option CARRIER ITEM_SEP KV_SEP PREFIX strip|keep"
OptionRule parse_option(std::istringstream& ls, const std::string& line) {
  OptionRule o;
  std::string mode;
  if (!(ls >> o.carrier >> o.item_sep >> o.kv_sep >> o.prefix >> mode) || (mode != "strip" && mode != "keep"))
    throw std::logic_error("knob_rules.txt: bad option rule '" + line + "'");
  o.strip = mode == "strip";
  return o;
}

const Rules& all_rules() {
  static const Rules r = [] {
    Rules out;
    std::istringstream in(kKnobRules);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string role, resource, pattern;
      if (!(ls >> role) || role[0] == '#') continue;
      if (role == "option") {
        out.options.push_back(parse_option(ls, line));
        continue;
      }
      ls >> resource >> pattern;
      if (pattern.empty()) throw std::logic_error("knob_rules.txt: rule '" + role + "' has no pattern");
      out.roles.push_back({{role, resource == "-" ? "" : resource},
                           std::regex(pattern, std::regex::ECMAScript | std::regex::icase)});
    }
    return out;
  }();
  return r;
}

}  // namespace

std::optional<OptionKey> option_key(const std::string& name) {
  for (const auto& o : all_rules().options)
    if (name.size() > o.prefix.size() && name.rfind(o.prefix, 0) == 0)
      return OptionKey{o.carrier, o.item_sep, o.kv_sep, o.strip ? name.substr(o.prefix.size()) : name};
  return std::nullopt;
}

std::optional<KnobRole> classify_knob(const std::string& name, const std::string& category) {
  // No knob is named with hundreds of characters, and libstdc++'s regex recurses once per
  // character a repetition matches: a name of 60,000 letters from a hostile tree or model
  // overflowed a job thread's stack. Such a name is judged by its category alone.
  if (name.size() <= kMaxKnobNameForRules)
    for (const auto& r : all_rules().roles)
      if (std::regex_search(name, r.pattern)) return r.role;
  if (category == "threads" || category == "workers") return KnobRole{"threads", "cpu.threads"};
  if (category == "affinity") return KnobRole{"affinity", "cpu.cores"};
  if (category == "spin") return KnobRole{"spin", "cpu.spin"};
  if (category == "allocator") return KnobRole{"arena", "mem.arenas"};
  if (category == "device") return KnobRole{"device", "gpu.device"};
  return std::nullopt;
}

bool resource_relevant(const std::string& role) {
  return role == "threads" || role == "affinity" || role == "spin" || role == "arena" || role == "device";
}

std::optional<std::pair<long long, long long>> stated_range(const std::string& sentence, std::string* said) {
  auto number = [](const std::string& t) { return std::strtoll(t.c_str(), nullptr, 0); };
  static const std::regex res[] = {
      std::regex(R"(\bbetween\s+(-?\d+)\s+and\s+(-?\d+)\b)", std::regex::icase),
      std::regex(R"(\bfrom\s+(-?\d+)\s+to\s+(-?\d+)\b)", std::regex::icase),
      std::regex(R"((?:^|[^\w.])(-?\d+)\s+to\s+(-?\d+)\b)", std::regex::icase),
      std::regex(R"(\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\])"),
      std::regex(R"(\brange\s*(?:of|is|:)?\s*(-?\d+)\s*(?:-|\.\.)\s*(-?\d+)\b)", std::regex::icase),
      std::regex(R"(\bmin:?\s*(0x[0-9a-f]+|\d+)\s*,\s*max:?\s*(0x[0-9a-f]+|\d+))", std::regex::icase),
  };
  for (auto& re : res) {
    std::smatch m;
    if (!std::regex_search(sentence, m, re)) continue;
    long long lo = number(m[1].str()), hi = number(m[2].str());
    if (lo > hi) continue;
    if (said) *said = "\"" + m[0].str() + "\"";
    return std::make_pair(lo, hi);
  }
  return std::nullopt;
}

std::vector<size_t> standalone_at(const std::string& name, const std::string& sentence) {
  std::vector<size_t> out;
  for (size_t at = sentence.find(name); at != std::string::npos; at = sentence.find(name, at + 1))
    if (at == 0 || !(std::isalnum(static_cast<unsigned char>(sentence[at - 1])) || sentence[at - 1] == '_')) out.push_back(at);
  return out;
}

// The type a sentence declares for one of `names`: jemalloc's "opt.tcache (bool) r-", a C type
// in parentheses right after the name. Bool, Int, Float or String; nullopt when none.
std::optional<lpcl::Type::Kind> declared_type(const std::string& sentence, const std::vector<std::string>& names,
                                              std::string* said) {
  static const std::regex type_re(
      R"(^\s*\(\s*(bool|boolean|_Bool|const\s+char\s*\*|char\s*\*|string|unsigned(?:\s+int|\s+long)?|int|long|size_t|ssize_t|u?int(?:8|16|32|64)_t|double|float)\s*\))",
      std::regex::icase);
  for (auto& n : names) {
    if (n.empty()) continue;
    for (size_t p : standalone_at(n, sentence)) {
      std::smatch m;
      std::string rest = sentence.substr(p + n.size());
      if (!std::regex_search(rest, m, type_re)) continue;
      std::string t = m[1].str();
      for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (said) *said = "\"" + n + " " + m[0].str().substr(m[0].str().find('(')) + "\"";
      if (t == "bool" || t == "boolean" || t == "_bool") return lpcl::Type::Kind::Bool;
      if (t.find("char") != std::string::npos || t == "string") return lpcl::Type::Kind::String;
      if (t == "double" || t == "float") return lpcl::Type::Kind::Float;
      return lpcl::Type::Kind::Int;
    }
  }
  return std::nullopt;
}

}  // namespace syspilot::synth
