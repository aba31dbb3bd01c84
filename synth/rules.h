// Knob roles (synth/knob_rules.txt): which resource a control acts on, recognised from its
// name. Shared by the offline drafter, the completeness validator and prompt ranking.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lpcl/lpcl.h"

namespace syspilot::synth {

struct KnobRole {
  std::string role;      // threads | affinity | spin | arena | allocator | device | streams | nesting | introspect
  std::string resource;  // cpu.threads, ...; empty for introspect
};

// Names longer than this are matched against no naming rule (see classify_knob).
inline constexpr size_t kMaxKnobNameForRules = 256;

// The role of a knob named `name`; an API control's extractor category ("threads",
// "affinity", "allocator", "device", "workers", "spin") is used when the name says nothing.
std::optional<KnobRole> classify_knob(const std::string& name, const std::string& category = {});

// A key inside a carrier variable (MALLOC_CONF="narenas:4", GLIBC_TUNABLES=glibc.malloc.arena_max=2),
// recognised from the prefix the library's documentation gives its option names.
struct OptionKey {
  std::string carrier, item_sep, kv_sep;
  std::string key;  // the control's name: the documented name, less the prefix when the rule strips it
};

// The carrier option a documented name is a key of, by the `option` lines of knob_rules.txt.
std::optional<OptionKey> option_key(const std::string& documented_name);

// Roles completeness requires to be covered.
bool resource_relevant(const std::string& role);

// A range a sentence gives: "between 1 and 64", "from 1 to 64", "1 to 64", "[1, 64]",
// "range 1-64", "(min: 0x1, max: 0xff)"; `said` gets the words that gave it.
std::optional<std::pair<long long, long long>> stated_range(const std::string& sentence, std::string* said = nullptr);

// Where `name` stands in `sentence` as a word of its own (not the tail of a longer identifier).
std::vector<size_t> standalone_at(const std::string& name, const std::string& sentence);

// The type a sentence declares for one of `names`: jemalloc's "opt.tcache (bool) r-", a C type
// in parentheses right after the name. Bool, Int, Float or String; nullopt when none; `said`
// gets the words that gave it.
std::optional<lpcl::Type::Kind> declared_type(const std::string& sentence, const std::vector<std::string>& names,
                                              std::string* said = nullptr);

}  // namespace syspilot::synth
