// `syspilot synth PATH...`: facts -> a checked contract, drafted by an LLM endpoint or the
// offline drafter, validated, repaired and stored; `syspilot synth-bench`: corpus throughput.
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/checks.h"
#include "cli/command.h"
#include "extract/extract.h"
#include "lpcl/lpcl.h"
#include "store/store.h"
#include "synth/synth.h"

namespace syspilot::cli {
namespace {
namespace fs = std::filesystem;

struct SynthArgs {
  std::vector<std::string> paths, includes, overlays;
  std::string lib, version, version_deprecated, llm_url, model, ca_file, output, db, facts_out;
  std::string scope = "library";
  int max_rounds = 3, max_tokens = 4096, max_retries = 4;
  double timeout_s = 60;
  size_t budget = 6000;
  bool json = false, no_store = false, quiet = false;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void append(extract::Facts& into, extract::Facts&& f) {
  auto move_all = [](auto& to, auto& from) { to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end())); };
  move_all(into.roots, f.roots);
  move_all(into.env_vars, f.env_vars);
  move_all(into.api_controls, f.api_controls);
  move_all(into.threading, f.threading);
  move_all(into.doc_mentions, f.doc_mentions);
  move_all(into.binaries, f.binaries);
  into.diagnostics.append(f.diagnostics);
  into.files_scanned += f.files_scanned;
  into.bytes_scanned += f.bytes_scanned;
  if (into.library.empty()) into.library = f.library;
}

// Facts from PATHs: *.json files are facts documents (docs/facts.md); the rest are scanned.
// Only the facts of `scope` are kept, from either (a facts file may hold every scope).
extract::Facts facts_from_paths(const std::vector<std::string>& paths, const std::string& lib,
                                const std::vector<std::string>& includes, const std::string& scope = "library") {
  std::vector<std::string> keep;
  try {
    keep = extract::scopes(scope);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("synth: --scope: ") + e.what());
  }
  extract::Facts all;
  std::vector<std::string> scan;
  for (auto& p : paths) {
    if (!fs::exists(p)) throw UsageError("synth: no such file or folder: " + p);
    if (fs::is_regular_file(p) && fs::path(p).extension() == ".json") {
      auto j = nlohmann::json::parse(slurp(p), nullptr, false);
      if (j.is_discarded()) throw UsageError(p + ": not JSON; a facts file is what `syspilot extract --json` writes");
      try {
        append(all, extract::facts_from_json(j));
      } catch (const std::exception& e) {
        throw UsageError(p + ": " + e.what());
      }
      all.roots.push_back(p);
    } else {
      scan.push_back(p);
    }
  }
  if (!scan.empty()) {
    extract::ExtractOptions o;
    o.paths = scan;
    o.library = lib;
    o.include_dirs = includes;
    o.scope = scope;
    append(all, extract::extract(o));
  }
  extract::keep_scopes(all, keep);
  if (!lib.empty()) all.library = lib;
  return all;
}

nlohmann::json result_json(const synth::SynthResult& r) {
  nlohmann::json rounds = nlohmann::json::array();
  for (auto& rd : r.rounds)
    rounds.push_back({{"n", rd.n}, {"drafter", rd.drafter}, {"diagnostics", synth::diagnostics_json(rd.diags)}, {"repairs", rd.repairs},
                      {"cached", rd.cached}, {"prompt_tokens", rd.prompt_tokens}, {"completion_tokens", rd.completion_tokens}});
  return {{"library", r.contract.name}, {"version", r.contract.version}, {"drafter", r.drafter},
          {"converged", r.converged}, {"open", synth::diagnostics_json(r.open)}, {"rounds", rounds},
          {"prompt_id", r.prompt_id}, {"prompt_tokens", r.prompt_tokens}, {"completion_tokens", r.completion_tokens},
          {"contract_id", r.contract_id}, {"lpcl", r.text}, {"contract", lpcl::to_json(r.contract)}};
}

void run_synth(const SynthArgs& a, Context& ctx) {
  if (a.max_rounds < 0 || a.max_rounds > 20) throw UsageError("synth: --max-rounds must be within 0..20");
  synth::SynthOptions o;
  o.library = a.lib;
  o.version = a.version;
  o.max_rounds = a.max_rounds;
  o.prompt_token_budget = a.budget;
  o.overlays = a.overlays;
  for (auto& ov : a.overlays)
    if (!fs::is_regular_file(ov)) throw UsageError("synth: no such overlay file: " + ov);
  o.llm = synth::llm_config_from_env();
  if (!a.llm_url.empty()) {
    if (!o.llm) o.llm = synth::LlmConfig{};
    o.llm->url = a.llm_url;
  }
  if (o.llm) {
    if (!a.model.empty()) o.llm->model = a.model;
    if (!a.ca_file.empty()) o.llm->ca_file = a.ca_file;
    if (!o.llm->ca_file.empty() && !fs::is_regular_file(o.llm->ca_file))
      throw UsageError("synth: --ca-file " + o.llm->ca_file + " is not a readable file");
    if (o.llm->model.empty()) throw UsageError("synth: an LLM endpoint needs a model: pass --model or set SYSPILOT_LLM_MODEL");
    o.llm->timeout_s = a.timeout_s;
    o.llm->max_tokens = a.max_tokens;
    o.llm->max_retries = a.max_retries;
  }
  if (!a.quiet) o.progress = [](const std::string& s) { std::cerr << "synth: " << s << "\n"; };

  extract::Facts facts = facts_from_paths(a.paths, a.lib, a.includes, a.scope);
  if (!a.facts_out.empty()) {
    std::ofstream out(a.facts_out, std::ios::binary);
    out << extract::to_json(facts).dump(1) << "\n";
    if (!out) throw UsageError("synth: cannot write " + a.facts_out);
  }
  // Nothing to draft from: say so before a store is opened (or created).
  try {
    synth::require_facts(facts, o);
  } catch (const synth::EmptyFacts& e) {
    throw UsageError(std::string("synth: ") + e.what() +
                     ". Give the library's source tree, public headers, documentation or shared object");
  }
  std::optional<store::Store> st;
  if (!a.no_store) st.emplace(a.db.empty() ? store::default_db_path() : a.db);
  synth::SynthResult r;
  try {
    r = synth::synthesize(facts, o, st ? &*st : nullptr);
  } catch (const synth::LlmError& e) {
    std::cerr << "syspilot: error: " << e.what() << "\n";
    ctx.exit_code = kFindings;
    return;
  }

  if (!a.output.empty()) {
    std::ofstream out(a.output, std::ios::binary);
    out << r.text;
    if (!out) throw UsageError("synth: cannot write " + a.output);
  }
  if (a.json) std::cout << result_json(r).dump(2) << "\n";
  else if (a.output.empty()) std::cout << r.text;

  size_t repairs = 0;
  for (auto& rd : r.rounds) repairs += rd.repairs.size();
  std::cerr << "synth: " << r.contract.name << " \"" << r.contract.version << "\": drafter " << r.drafter
            << (r.drafter == "offline" ? " (deterministic rules, no LLM)" : "") << ", " << r.rounds.size()
            << (r.rounds.size() == 1 ? " round" : " rounds") << ", " << repairs << " repairs, "
            << r.contract.controls.size() << " controls";
  if (!r.prompt_id.empty())
    std::cerr << ", prompt " << r.prompt_id << ", " << r.prompt_tokens << " prompt + " << r.completion_tokens
              << " completion tokens";
  if (!r.contract_id.empty()) std::cerr << ", stored as #" << r.contract_id;
  std::cerr << (r.converged ? ", converged\n" : ", NOT converged\n");
  for (auto& rd : r.rounds)
    for (auto& rep : rd.repairs) std::cerr << "  round " << rd.n << " repair: " << rep << "\n";
  if (!r.open.empty()) r.open.print(std::cerr);
  ctx.exit_code = r.converged ? kOk : kFindings;
}

struct BenchArgs {
  std::string corpus = std::string(SYSPILOT_SOURCE_DIR) + "/corpus";
  int repeat = 20;
  bool agreement = false;
  bool differences = false;
};

nlohmann::json corpus_sources(const std::string& corpus) {
  const std::string sources = corpus + "/sources.json";
  auto j = nlohmann::json::parse(slurp(sources), nullptr, false);
  if (j.is_discarded() || !j.contains("libraries") || !j["libraries"].is_array())
    throw UsageError(sources + ": expected {\"libraries\": [...]}");
  return j;
}

// The offline drafter (no overlay) against each reviewed corpus contract.
void run_agreement(const BenchArgs& a, Context& ctx) {
  auto j = corpus_sources(a.corpus);
  auto pct = [](int n, int d) {
    std::ostringstream o;
    if (d == 0) o << "n/a";
    else o << n << "/" << d << " (" << std::fixed << std::setprecision(0) << 100.0 * n / d << "%)";
    return o.str();
  };
  std::cout << "| library | reviewed controls | drafted by name | type | domain | default | sets | drafted, dropped on review | demands | provides |\n"
            << "|---|---|---|---|---|---|---|---|---|---|\n";
  synth::Agreement total;
  // the reviewed corpus' share written by reviewers (origin manual), statement kind by kind
  std::map<std::string, std::pair<int, int>> manual;  // kind -> (manual, all)
  auto count = [&](const std::string& kind, const auto& statements) {
    for (const auto& s : statements) {
      auto& [m, n] = manual[kind];
      m += s.prov.origin == lpcl::Origin::Manual;
      ++n;
    }
  };
  for (auto& lib : j["libraries"]) {
    const std::string name = lib.value("library", "");
    const std::string facts_file = a.corpus + "/" + lib.value("facts", "facts/" + name + ".json");
    const std::string reviewed_file = a.corpus + "/" + name + ".lpcl";
    if (!fs::exists(facts_file) || !fs::exists(reviewed_file))
      throw UsageError(name + ": " + facts_file + " or " + reviewed_file + " missing; run scripts/regen-corpus.sh");
    synth::SynthOptions o;
    o.library = name;
    o.version = lib.value("version", "");
    auto drafted = synth::synthesize(facts_from_paths({facts_file}, name, {}), o, nullptr);
    Diagnostics d;
    auto doc = lpcl::parse_file(reviewed_file, d);
    if (d.has_errors() || doc.contracts.empty()) throw UsageError(reviewed_file + ": " + d.str());
    const auto& reviewed = doc.contracts.front();
    count("controls", reviewed.controls);
    count("demands", reviewed.demands);
    count("provides", reviewed.provides);
    count("behaviours", reviewed.behaviors);
    count("assumptions", reviewed.assumptions);
    count("signals", reviewed.signals);
    auto g = synth::agreement(drafted.contract, reviewed);
    for (auto& line : g.differences) line = name + " " + line;
    total += g;
    std::cout << "| " << name << " | " << g.reviewed << " | " << pct(g.named, g.reviewed) << " | " << pct(g.type, g.named)
              << " | " << pct(g.domain, g.named) << " | " << pct(g.default_value, g.named) << " | "
              << pct(g.sets, g.named) << " | " << g.dropped << " | " << pct(g.demands_same, g.demands) << " | "
              << pct(g.provides_same, g.provides) << " |\n";
  }
  const auto& g = total;
  std::cout << "| all | " << g.reviewed << " | " << pct(g.named, g.reviewed) << " | " << pct(g.type, g.named) << " | "
            << pct(g.domain, g.named) << " | " << pct(g.default_value, g.named) << " | " << pct(g.sets, g.named)
            << " | " << g.dropped << " | " << pct(g.demands_same, g.demands) << " | "
            << pct(g.provides_same, g.provides) << " |\n";
  std::cout << "\nWritten by reviewers (origin manual) in the reviewed corpus:";
  const char* sep = " ";
  for (const char* kind : {"controls", "demands", "provides", "behaviours", "assumptions", "signals"}) {
    std::cout << sep << kind << " " << pct(manual[kind].first, manual[kind].second);
    sep = ", ";
  }
  std::cout << "\n";
  if (a.differences) {
    std::cout << "\nWhere a drafted control differs from the reviewed one (" << g.differences.size() << "):\n";
    for (auto& line : g.differences) std::cout << "  " << line << "\n";
  }
  ctx.exit_code = kOk;
}

void run_bench(const BenchArgs& a, Context& ctx) {
  if (a.agreement) return run_agreement(a, ctx);
  auto j = corpus_sources(a.corpus);
  using Clock = std::chrono::steady_clock;
  std::cout << std::left << std::setw(16) << "library" << std::right << std::setw(8) << "facts" << std::setw(10)
            << "controls" << std::setw(12) << "ms/contract" << std::setw(14) << "prompt tokens" << std::setw(14)
            << "all facts tok" << "\n";
  double total_s = 0;
  size_t contracts = 0, tokens = 0, n = 0;
  for (auto& lib : j["libraries"]) {
    const std::string name = lib.value("library", "");
    const std::string facts_file = a.corpus + "/" + lib.value("facts", "facts/" + name + ".json");
    if (!fs::exists(facts_file)) throw UsageError(facts_file + ": missing; run scripts/regen-corpus.sh");
    extract::Facts facts = facts_from_paths({facts_file}, name, {});
    synth::SynthOptions o;
    o.library = name;
    o.version = lib.value("version", "");
    o.corpus_dir = a.corpus;
    const std::string overlay = a.corpus + "/overlays/" + name + ".lpcl";
    if (fs::exists(overlay)) o.overlays.push_back(overlay);
    synth::SynthResult r;
    auto t0 = Clock::now();
    for (int i = 0; i < a.repeat; ++i) r = synth::synthesize(facts, o, nullptr);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    total_s += s;
    contracts += a.repeat;
    synth::SynthOptions big = o;
    big.prompt_token_budget = SIZE_MAX / 8;
    auto p = synth::build_prompt(facts, o);
    auto full = synth::build_prompt(facts, big);
    tokens += p.tokens;
    ++n;
    size_t nfacts = facts.env_vars.size() + facts.api_controls.size() + facts.threading.size() + facts.doc_mentions.size();
    std::cout << std::left << std::setw(16) << name << std::right << std::setw(8) << nfacts << std::setw(10)
              << r.contract.controls.size() << std::setw(12) << std::fixed << std::setprecision(2) << 1000 * s / a.repeat
              << std::setw(14) << p.tokens << std::setw(14) << full.tokens << "\n";
  }
  std::cout << "\n" << n << " libraries, " << std::fixed << std::setprecision(1) << contracts / total_s
            << " contracts/s offline (validation, overlay and formatting included; " << a.repeat
            << " repeats each), " << (n ? tokens / n : 0) << " prompt tokens per contract (budget 6000)\n";
  ctx.exit_code = kOk;
}

CommandRegistration reg(30, [](CLI::App& app, Context& ctx) {
  auto a = std::make_shared<SynthArgs>();
  auto* cmd = app.add_subcommand("synth", "Draft, validate and repair the contract of a library from its facts");
  cmd->add_option("paths", a->paths, "Sources, headers, docs, shared objects, or facts files (*.json)")->required();
  cmd->add_option("--lib", a->lib, "Library (contract) name")->required();
  cmd->add_option("--lib-version", a->version, "Library version (required)");
  // Before --lib-version, `synth --version` named the library's version; it still does, with a
  // warning, so that scripts keep working. It is not `syspilot --version` (the command's own).
  cmd->add_option("--version", a->version_deprecated, "Deprecated: use --lib-version")->group("");
  cmd->add_option("--llm", a->llm_url, "OpenAI-compatible endpoint (default: $SYSPILOT_LLM_URL; none: offline drafter)");
  cmd->add_option("--model", a->model, "Model name (default: $SYSPILOT_LLM_MODEL)");
  cmd->add_option("--ca-file", a->ca_file, "PEM file of a private CA for an HTTPS endpoint");
  cmd->add_option("--max-rounds", a->max_rounds, "LLM re-prompts after deterministic repair")->capture_default_str();
  cmd->add_option("--max-tokens", a->max_tokens, "Completion token cap per request")->capture_default_str();
  cmd->add_option("--retries", a->max_retries, "Retries on 429, 5xx and connection errors")->capture_default_str();
  cmd->add_option("--timeout", a->timeout_s, "Seconds per request")
      ->capture_default_str()
      ->check(finite_number())
      ->check(CLI::PositiveNumber);
  cmd->add_option("--budget", a->budget, "Prompt token budget (tokens ~ bytes/4)")->capture_default_str();
  cmd->add_option("--overlay", a->overlays, "Reviewed corrections (LPCL, origin manual) applied after validation");
  cmd->add_option("-I,--include", a->includes, "Include folder for parsing headers");
  cmd->add_option("-o,--output", a->output, "Write the contract here instead of stdout");
  cmd->add_option("--db", a->db, "Contract store (default: $SYSPILOT_DB or the XDG data folder)");
  cmd->add_flag("--no-store", a->no_store, "Do not store the contract or cache answers");
  cmd->add_option("--scope", a->scope,
                  "Facts a contract may claim, by the code they come from: library (default), or a comma list "
                  "such as library,tool for a library whose command-line tool reads its own variables");
  cmd->add_option("--facts-out", a->facts_out, "Also write the facts used, as JSON");
  cmd->add_flag("--json", a->json, "Print the result (contract, rounds, diagnostics) as JSON");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress lines");
  cmd->callback([a, &ctx] {
    if (!a->version_deprecated.empty()) {
      std::cerr << "syspilot synth: warning: --version is deprecated here; use --lib-version\n";
      if (!a->version.empty() && a->version != a->version_deprecated)
        throw UsageError("synth: --lib-version " + a->version + " and --version " + a->version_deprecated +
                         " disagree; give --lib-version only");
      a->version = a->version_deprecated;
    }
    if (a->version.empty()) throw UsageError("synth: --lib-version V is required (the library's version)");
    run_synth(*a, ctx);
  });

  auto b = std::make_shared<BenchArgs>();
  auto* bench = app.add_subcommand("synth-bench", "Offline synthesis throughput and prompt sizes over the corpus");
  bench->add_option("--corpus", b->corpus, "Corpus folder (sources.json, facts/, overlays/)")->capture_default_str();
  bench->add_option("--repeat", b->repeat, "Syntheses per library")->capture_default_str();
  bench->add_flag("--agreement", b->agreement,
                  "Instead: the offline drafter's agreement with the reviewed contracts (type, domain, default, sets)");
  bench->add_flag("--differences", b->differences,
                  "With --agreement: list each field a drafted control gives otherwise than the reviewed one");
  bench->callback([b, &ctx] { run_bench(*b, ctx); });
});

}  // namespace
}  // namespace syspilot::cli
