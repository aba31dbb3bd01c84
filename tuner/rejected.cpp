// Detecting a setting the library refused, from what it printed (tuner/rejected.h).
#include "tuner/rejected.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

namespace syspilot::tuner {
namespace {

constexpr size_t kMaxRead = 64 * 1024;
constexpr size_t kMaxLine = 1000;

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

bool refuses(const std::string& line) {
  for (const char* w : {"invalid", "unknown", "unrecogni", "unsupported", "not supported", "ignored", "ignoring",
                        "illegal", "out of range", "malformed", "cannot parse", "could not parse", "bad value"})
    if (line.find(w) != std::string::npos) return true;
  return false;
}

// `name` occurs in `line` as a word of its own (not inside a longer identifier).
bool names(const std::string& line, const std::string& name) {
  if (name.empty()) return false;
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (size_t at = line.find(name); at != std::string::npos; at = line.find(name, at + 1)) {
    bool before = at == 0 || !ident(line[at - 1]);
    bool after = at + name.size() >= line.size() || !ident(line[at + name.size()]);
    if (before && after) return true;
  }
  return false;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  text = text.substr(0, std::min(text.size(), kMaxRead));
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (line.size() <= kMaxLine) out.push_back(line);
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string rejected_setting(const std::string& output, const Config& c, const std::string& reference_output) {
  if (c.empty() || output.empty()) return {};
  std::set<std::string_view> known;
  for (auto line : lines_of(reference_output)) known.insert(line);
  // Names as a library would print them: the control (OMP_NUM_THREADS), and for an option
  // control its key without a prefix (opt.narenas -> narenas, glibc.malloc.arena_max -> arena_max).
  std::vector<std::string> wanted;
  for (const auto& [name, value] : c) {
    wanted.push_back(lower(name));
    size_t cut = name.find_last_of(".:");
    if (cut != std::string::npos && cut + 1 < name.size()) wanted.push_back(lower(name.substr(cut + 1)));
  }
  for (auto line : lines_of(output)) {
    if (known.count(line)) continue;
    std::string l = lower(line);
    if (!refuses(l)) continue;
    for (const auto& n : wanted)
      if (names(l, n)) {
        std::string text(line);
        while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.pop_back();
        return text;
      }
  }
  return {};
}

}  // namespace syspilot::tuner
