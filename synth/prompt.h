// Prompt templates (prompts/*.txt: id and version header, system and user parts,
// {{placeholders}}) and the ranking and trimming of facts to a token budget.
#pragma once
#include <map>
#include <string>

#include "synth/synth.h"

namespace syspilot::synth {

struct Template {
  std::string id;
  int version = 0;
  std::string system, user;
  std::string path;
  std::string ref() const { return id + "@" + std::to_string(version); }
};

// Reads DIR/ID.txt; throws std::runtime_error naming the file and the problem.
Template load_template(const std::string& dir, const std::string& id);

std::string prompts_dir(const SynthOptions& o);
std::string corpus_dir(const SynthOptions& o);

// Approximate tokens of a text: bytes / 4, rounded up (see docs/synth.md).
size_t approx_tokens(const std::string& s);

// Fills a template: {{library}}, {{version}}, {{resources}}, {{budget}}, {{facts}} (ranked
// and trimmed so the whole prompt fits opts.prompt_token_budget), {{examples}} (checked
// corpus contracts, at most a third of the budget), plus `extra` ({{draft}}, {{diagnostics}}).
Prompt render(const Template& t, const extract::Facts& facts, const SynthOptions& opts,
              const std::map<std::string, std::string>& extra = {});

}  // namespace syspilot::synth
