// Public interface of synthesis: facts -> a checked, grounded LPCL contract, drafted by an
// LLM endpoint or by the deterministic offline drafter, then validated and repaired.
#pragma once
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "extract/facts.h"
#include "lpcl/ast.h"
#include "lpcl/diagnostics.h"

namespace syspilot::store {
class Store;
struct ContractRecord;
}  // namespace syspilot::store

namespace syspilot::synth {

// An OpenAI-compatible endpoint. `url` may end in /v1 or not ("http://127.0.0.1:8080",
// "https://api.example.com/v1"). `api_key` is sent as a bearer token and never logged,
// stored or printed. `ca_file` adds a private CA; empty means the system CA store.
struct LlmConfig {
  std::string url;
  std::string model;
  std::string api_key;
  std::string ca_file;
  double timeout_s = 60;   // per connect, read and write; a whole request gets twice this at most
  size_t max_reply_bytes = 8u << 20;  // a longer reply body is refused (a draft is a few KB)
  int max_retries = 4;     // on 429, 5xx and connection errors
  int max_tokens = 4096;   // completion cap sent with every request
  double backoff_base_s = 0.5;  // first retry delay; doubles each retry, with jitter
  double backoff_max_s = 30;    // cap on one delay (Retry-After included)
  // Asked before each connection with the endpoint's host and port: returns the numeric
  // address to connect to (the one an outbound policy checked, so that a second DNS answer
  // cannot differ) or throws LlmError to refuse. Empty: the host is resolved as usual (the
  // CLI). The service sets it from its SourcePolicy::outbound. Redirects are never followed.
  std::function<std::string(const std::string& host, int port)> connect_to;
};

// SYSPILOT_LLM_URL, SYSPILOT_LLM_MODEL, SYSPILOT_LLM_API_KEY, SYSPILOT_LLM_CA_FILE.
// nullopt when SYSPILOT_LLM_URL is unset or empty (the offline drafter is then used).
std::optional<LlmConfig> llm_config_from_env();

struct SynthOptions {
  std::string library;  // contract name; facts.library when empty
  std::string version;  // contract version; "unknown" when empty
  std::optional<LlmConfig> llm;  // nullopt: offline drafter
  int max_rounds = 3;            // LLM re-prompts after deterministic repair
  size_t prompt_token_budget = 6000;  // facts are ranked and trimmed to fit (tokens ~ bytes/4)
  std::string prompts_dir;  // templates; empty: $SYSPILOT_PROMPTS_DIR or the source tree's prompts/
  std::string corpus_dir;   // few-shot examples; empty: $SYSPILOT_CORPUS_DIR or the source tree's corpus/
  // Reviewed corrections: LPCL files whose statements (origin manual) replace the draft's
  // statements of the same name or add to them, after validation (see docs/synth.md).
  std::vector<std::string> overlays;
  // Polled between steps and while waiting for a reply or a retry delay; true stops the
  // run with synth::Cancelled.
  std::function<bool()> cancelled;
  // One line per step ("round 1: llm draft", "retry 2 after 429 in 1.2 s").
  std::function<void(const std::string&)> progress;
};

// One validation/repair round.
struct Round {
  int n = 0;                           // 1: first draft; 2..: re-prompts
  std::string drafter;                 // "offline" or "llm(MODEL)"
  Diagnostics diags;                   // what the validators found in this round's draft
  std::vector<std::string> repairs;    // deterministic repairs applied ("dropped invented env FOO")
  bool cached = false;                 // the answer came from the store's response cache
  int prompt_tokens = 0, completion_tokens = 0;
};

struct SynthResult {
  lpcl::Contract contract;   // the best checked contract
  std::string text;          // its canonical LPCL text
  bool converged = false;    // no open error after validation and repair
  Diagnostics open;          // what remains (errors make the CLI exit non-zero)
  std::vector<Round> rounds;
  int prompt_tokens = 0, completion_tokens = 0;  // summed over rounds (from the endpoint's usage)
  std::string drafter;       // "offline" or "llm(MODEL)"
  std::string prompt_id;     // "draft-contract@3"; empty for offline
  std::string contract_id;   // the store's id when a store was given and the contract was stored
};

// Thrown by synthesize() for facts with nothing in them (no environment read, API control,
// threading fact, documentation mention or shared object): an empty folder, or files none of
// the extractors understand. Nothing is drafted and nothing is stored.
struct EmptyFacts : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The store record synthesize() keeps for `r` (with a store): the contract, its status and open
// diagnostics, the drafter, the facts and every round. Also for a contract drafted where there
// is no store (a Slurm job of `syspilot regen`), for the submitter to store.
store::ContractRecord record_of(const SynthResult& r, const extract::Facts& facts, const SynthOptions& opts);

// Throws EmptyFacts (naming the roots) when `facts` hold nothing; synthesize() calls it first.
void require_facts(const extract::Facts& facts, const SynthOptions& opts);

// Thrown when SynthOptions::cancelled returned true.
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("synthesis cancelled") {}
};

// Thrown for an endpoint that cannot be used at all (bad URL, exhausted retries, TLS
// failure, malformed reply after retries). The message never contains the API key.
struct LlmError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The whole pipeline. `store` may be null (no cache, nothing stored). With a store, LLM
// answers are cached by model + prompt digest and the final contract is stored (converged, or
// with its open diagnostics). Throws EmptyFacts when the facts hold nothing. A final contract
// without a control or without a binding is not converged (no-controls, no-binding).
SynthResult synthesize(const extract::Facts& facts, const SynthOptions& opts,
                       store::Store* store = nullptr);

// The offline drafter alone: deterministic rules from facts to a contract (origin extracted).
lpcl::Contract draft_offline(const extract::Facts& facts, const SynthOptions& opts);

// Validators 3-5 (grounding, completeness, consistency) on a parsed contract, with the
// deterministic repairs applied in place when `repair` is true; `repairs` lists them.
Diagnostics validate(lpcl::Contract& c, const extract::Facts& facts, bool repair,
                     std::vector<std::string>* repairs = nullptr);

// Validator 1: the LPCL text inside an answer (plain, ```lpcl fenced, {"lpcl": "..."},
// an LPCL-JSON object, chatter around any of them). Empty with an error when none is found.
std::string extract_lpcl(const std::string& answer, Diagnostics& diags);

// Diagnostics as a JSON array of {severity, file, line, col, message, code, hint}.
nlohmann::json diagnostics_json(const Diagnostics& d);

// The prompt that would be sent for these facts (system + user), and its size estimate.
struct Prompt {
  std::string id;       // template id@version
  std::string system;
  std::string user;
  size_t tokens = 0;    // approximate: bytes / 4
  size_t facts_kept = 0, facts_dropped = 0;
};
Prompt build_prompt(const extract::Facts& facts, const SynthOptions& opts);

// How far a draft agrees with the reviewed contract of the same library, statement by statement:
// of the reviewed controls, how many the draft has by name, and of those how many it gives the
// same type, domain, default and resources (`sets`); how many drafted controls the review
// dropped; and the same for demands (resource and expression) and provided regions.
struct Agreement {
  int reviewed = 0, named = 0, type = 0, domain = 0, default_value = 0, sets = 0;
  int dropped = 0;  // drafted controls the reviewed contract does not keep
  int demands = 0, demands_same = 0;
  int provides = 0, provides_same = 0;
  // One line per field a drafted control gives otherwise than the reviewed one:
  // "CONTROL domain: drafted in [1, 64]; reviewed in [1, ncpus]".
  std::vector<std::string> differences;
  Agreement& operator+=(const Agreement& o);
};
Agreement agreement(const lpcl::Contract& drafted, const lpcl::Contract& reviewed);

}  // namespace syspilot::synth
