// The synthesis loop: draft (LLM or offline), extract, parse and check, validate, repair
// deterministically, re-prompt with what remains, keep the best checked contract, store it.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "lpcl/lpcl.h"
#include "store/store.h"
#include "synth/draft.h"
#include "synth/llm.h"
#include "synth/prompt.h"

namespace syspilot::synth {

std::optional<LlmConfig> llm_config_from_env() {
  auto get = [](const char* n) -> std::string {
    const char* v = std::getenv(n);
    return v ? v : "";
  };
  LlmConfig c;
  c.url = get("SYSPILOT_LLM_URL");
  if (c.url.empty()) return std::nullopt;
  c.model = get("SYSPILOT_LLM_MODEL");
  c.api_key = get("SYSPILOT_LLM_API_KEY");
  c.ca_file = get("SYSPILOT_LLM_CA_FILE");
  return c;
}

nlohmann::json diagnostics_json(const Diagnostics& d) {
  nlohmann::json a = nlohmann::json::array();
  for (auto& x : d.items())
    a.push_back({{"severity", to_string(x.severity)}, {"file", x.loc.file}, {"line", x.loc.line}, {"col", x.loc.col},
                 {"message", x.message}, {"code", x.code}, {"hint", x.hint}});
  return a;
}

namespace {

void mark_manual(lpcl::Provenance& p) {
  if (p.origin == lpcl::Origin::Unspecified) p.origin = lpcl::Origin::Manual;
}

bool has_origin(const lpcl::Contract& c, lpcl::Origin o) {
  return std::any_of(c.origins.begin(), c.origins.end(), [&](auto& p) { return p.origin == o; });
}

void add_origin(lpcl::Contract& c, lpcl::Origin o, const std::string& model = {}) {
  if (has_origin(c, o)) return;
  lpcl::Provenance p;
  p.origin = o;
  p.model = model;
  c.origins.push_back(p);
}

template <class V, class Same>
void merge(V& into, const V& from, Same same) {
  for (auto& m : from) {
    auto it = std::find_if(into.begin(), into.end(), [&](auto& x) { return same(x, m); });
    if (it != into.end()) *it = m;
    else into.push_back(m);
  }
}

// A statement's text without what says who wrote it (provenance, comments, place, doc).
template <class T>
std::string bare_text(T x, std::vector<T> lpcl::Contract::*member) {
  x.prov = {};
  x.comments.clear();
  x.loc = {};
  if constexpr (requires { x.doc; }) x.doc.clear();
  lpcl::Contract one;
  one.name = "x";
  one.version = "0";
  (one.*member).push_back(std::move(x));
  return lpcl::format(one);
}

// Reviewed statements (origin unspecified) equal to a drafted one take the drafted one's
// provenance.
template <class T, class Same>
void keep_confirmed(std::vector<T>& reviewed, const std::vector<T>& drafted, std::vector<T> lpcl::Contract::*member,
                    Same same) {
  for (auto& r : reviewed) {
    if (r.prov.origin != lpcl::Origin::Unspecified) continue;
    auto it = std::find_if(drafted.begin(), drafted.end(), [&](auto& d) { return same(d, r); });
    if (it == drafted.end() || bare_text(*it, member) != bare_text(r, member)) continue;
    r.prov = it->prov;
  }
}

// Reviewed corrections win over drafted statements of the same name.
void apply_overlay(lpcl::Contract& c, const std::string& path, Diagnostics& diags) {
  Diagnostics d;
  auto doc = lpcl::parse_file(path, d);
  if (d.has_errors() || doc.contracts.empty()) {
    diags.append(d);
    if (doc.contracts.empty()) diags.error({path, 0, 0}, "overlay holds no contract", "bad-overlay");
    return;
  }
  lpcl::Contract m = doc.contracts.front();
  // "# drop: control NAME" (or demand RESOURCE, behavior NAME, signal METRIC, assume PREDICATE)
  // removes a drafted statement a reviewer found wrong; the reason goes on the lines around it.
  std::ifstream in(path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::istringstream ls(line);
    std::string hash, verb, what, name;
    if (!(ls >> hash >> verb >> what >> name) || hash != "#" || verb != "drop:") continue;
    size_t before = c.controls.size() + c.demands.size() + c.behaviors.size() + c.signals.size() + c.assumptions.size();
    if (what == "control") {
      std::erase_if(c.controls, [&](auto& x) { return x.name == name; });
      for (auto& x : c.controls)
        if (x.fallback_for == name) x.fallback_for.clear();
    } else if (what == "demand") {
      std::erase_if(c.demands, [&](auto& x) { return x.resource == name; });
    } else if (what == "behavior") {
      std::erase_if(c.behaviors, [&](auto& x) { return x.name == name; });
    } else if (what == "signal") {
      std::erase_if(c.signals, [&](auto& x) { return x.metric == name; });
    } else if (what == "assume") {
      std::erase_if(c.assumptions, [&](auto& x) { return x.predicate == name; });
    }
    size_t after = c.controls.size() + c.demands.size() + c.behaviors.size() + c.signals.size() + c.assumptions.size();
    if (after == before)
      diags.warning({path, n, 1}, "`drop: " + what + " " + name + "` matches nothing in the draft", "overlay-unused",
                    "remove the line, or check the name against the draft");
  }
  // A reviewed statement that says what the draft already says confirms it: it keeps the
  // draft's provenance (extracted, with the facts it cites) and is no manual statement.
  keep_confirmed(m.controls, c.controls, &lpcl::Contract::controls, [](auto& a, auto& b) { return a.name == b.name; });
  keep_confirmed(m.demands, c.demands, &lpcl::Contract::demands, [](auto& a, auto& b) { return a.resource == b.resource; });
  keep_confirmed(m.assumptions, c.assumptions, &lpcl::Contract::assumptions,
                 [](auto& a, auto& b) { return a.predicate == b.predicate && a.args == b.args; });
  keep_confirmed(m.behaviors, c.behaviors, &lpcl::Contract::behaviors, [](auto& a, auto& b) { return a.name == b.name; });
  keep_confirmed(m.provides, c.provides, &lpcl::Contract::provides,
                 [](auto& a, auto& b) { return a.what == b.what && a.name == b.name; });
  keep_confirmed(m.signals, c.signals, &lpcl::Contract::signals,
                 [](auto& a, auto& b) { return a.kind == b.kind && a.metric == b.metric; });
  for (auto& x : m.controls) mark_manual(x.prov);
  for (auto& x : m.demands) mark_manual(x.prov);
  for (auto& x : m.assumptions) mark_manual(x.prov);
  for (auto& x : m.behaviors) mark_manual(x.prov);
  for (auto& x : m.provides) mark_manual(x.prov);
  for (auto& x : m.signals) mark_manual(x.prov);
  // A reviewed control without its own references keeps those of the drafted one.
  for (auto& mc : m.controls)
    if (mc.prov.refs.empty())
      if (const lpcl::Control* drafted = c.find_control(mc.name)) mc.prov.refs = drafted->prov.refs;
  merge(c.controls, m.controls, [](auto& a, auto& b) { return a.name == b.name; });
  merge(c.demands, m.demands, [](auto& a, auto& b) { return a.resource == b.resource; });
  merge(c.assumptions, m.assumptions, [](auto& a, auto& b) { return a.predicate == b.predicate && a.args == b.args; });
  merge(c.behaviors, m.behaviors, [](auto& a, auto& b) { return a.name == b.name; });
  if (!m.provides.empty()) c.provides = m.provides;
  merge(c.signals, m.signals, [](auto& a, auto& b) { return a.kind == b.kind && a.metric == b.metric; });
  merge(c.bindings, m.bindings, [](auto& a, auto& b) { return a.kind == b.kind && a.pattern == b.pattern; });
  if (!m.doc.empty()) c.doc = m.doc;
  add_origin(c, lpcl::Origin::Manual);
}

// Canonical text, parsed back and checked: what a reader of the contract would get.
Diagnostics recheck(const lpcl::Contract& c, std::string& text, const std::string& name) {
  Diagnostics d;
  text = lpcl::format(c);
  auto doc = lpcl::parse(text, name, d);
  if (!d.has_errors()) lpcl::check(doc, d);
  return d;
}

struct Loop {
  const extract::Facts& facts;
  const SynthOptions& opts;
  store::Store* store;
  SynthResult r;

  void progress(const std::string& s) {
    if (opts.progress) progress_line(s);
  }
  void progress_line(const std::string& s) { opts.progress(s); }
  void check_cancel() {
    if (opts.cancelled && opts.cancelled()) throw Cancelled();
  }

  void offline() {
    r.drafter = "offline";
    progress("drafting offline from " + std::to_string(facts.env_vars.size()) + " env reads, " +
             std::to_string(facts.api_controls.size()) + " API controls");
    Round rd;
    rd.n = 1;
    rd.drafter = r.drafter;
    lpcl::Contract c = draft_offline(facts, opts);
    rd.diags = validate(c, facts, true, &rd.repairs);
    r.rounds.push_back(rd);
    r.open = validate(c, facts, false);  // what the repairs could not settle
    r.contract = c;
  }

  std::int64_t last_call_id_ = 0;  // the llm_calls row of the last answer ask() gave

  std::string ask(LlmClient& client, const Prompt& p, Round& rd) {
    last_call_id_ = 0;
    const auto& cfg = client.config();
    const std::string digest = store::sha256_hex(client.request_body(p.system, p.user));
    store::LlmCall call;
    call.library = r.contract.name.empty() ? contract_name(facts, opts) : r.contract.name;
    call.version = contract_version(opts);
    call.model = cfg.model;
    call.prompt_digest = digest;
    if (store) {
      if (auto a = store->cached_answer(cfg.model, digest)) {
        progress("round " + std::to_string(rd.n) + ": cached answer for this prompt (no call)");
        rd.cached = true;
        call.cached = true;
        call.status = "ok";
        call.answer = *a;
        last_call_id_ = store->record_llm_call(call);
        return *a;
      }
    }
    progress("round " + std::to_string(rd.n) + ": asking " + cfg.model + " (" + std::to_string(p.tokens) + " prompt tokens)");
    try {
      ChatReply reply = client.chat(p.system, p.user);
      rd.prompt_tokens = reply.prompt_tokens;
      rd.completion_tokens = reply.completion_tokens;
      r.prompt_tokens += reply.prompt_tokens;
      r.completion_tokens += reply.completion_tokens;
      if (reply.finish_reason == "length")
        rd.diags.warning({"answer", 0, 0}, "the answer was cut at max_tokens (" + std::to_string(cfg.max_tokens) + ")",
                         "answer-truncated", "raise --max-tokens");
      call.prompt_tokens = reply.prompt_tokens;
      call.completion_tokens = reply.completion_tokens;
      call.latency_ms = reply.latency_s * 1000;
      // A truncated answer is kept for the record but never served again from the cache.
      call.status = reply.finish_reason == "length" ? "truncated" : "ok";
      call.answer = reply.content;
      if (store) last_call_id_ = store->record_llm_call(call);
      return reply.content;
    } catch (const LlmError& e) {
      call.status = std::string("error: ") + e.what();
      if (store) store->record_llm_call(call);
      throw;
    }
  }

  void llm() {
    LlmClient client(*opts.llm, opts.cancelled, opts.progress);
    const std::string model = opts.llm->model;
    r.drafter = "llm(" + model + ")";
    const std::string dir = prompts_dir(opts);
    const Template draft_t = load_template(dir, "draft-contract");
    const Template repair_t = load_template(dir, "repair-contract");
    Prompt p = render(draft_t, facts, opts);
    r.prompt_id = p.id;
    std::optional<lpcl::Contract> best;
    size_t best_errors = SIZE_MAX;
    const int rounds = 1 + std::max(0, opts.max_rounds);
    for (int n = 1; n <= rounds; ++n) {
      check_cancel();
      Round rd;
      rd.n = n;
      rd.drafter = r.drafter;
      std::string answer;
      try {
        answer = ask(client, p, rd);
      } catch (const LlmError& e) {
        if (!best) throw;
        r.open.error({"round " + std::to_string(n), 0, 0}, e.what(), "llm-failed",
                     "the best contract of the earlier rounds is given");
        r.rounds.push_back(rd);
        break;
      }
      const std::string file = "draft#" + std::to_string(n);
      std::string text = extract_lpcl(answer, rd.diags);
      Diagnostics remaining = rd.diags;
      bool answer_parsed = false;
      if (!text.empty()) {
        Diagnostics pd;
        auto doc = lpcl::parse(text, file, pd);
        const bool parsed = !pd.has_errors() && !doc.contracts.empty();
        answer_parsed = parsed;
        if (parsed) lpcl::check(doc.contracts.front(), pd);  // check errors still leave a candidate
        rd.diags.append(pd);
        if (parsed) {
          lpcl::Contract c = doc.contracts.front();
          c.name = contract_name(facts, opts);
          c.version = contract_version(opts);
          rd.diags.append(validate(c, facts, true, &rd.repairs));
          c.origins.clear();
          add_origin(c, lpcl::Origin::Llm, model);
          c.origins.back().model = model;
          if (!rd.repairs.empty()) add_origin(c, lpcl::Origin::Extracted);
          std::string canon;
          remaining = recheck(c, canon, file);
          lpcl::Contract probe = c;
          Diagnostics unsettled = validate(probe, facts, false);
          remaining.append(unsettled);
          if (remaining.error_count() < best_errors) {
            best = c;
            best_errors = remaining.error_count();
            r.open = unsettled;
          }
          text = canon;
        } else {
          remaining = pd;
        }
      }
      // An answer with no contract that parses is not served from the cache again: the same
      // prompt asks the model anew next time.
      if (store && last_call_id_ && !rd.cached && !answer_parsed) store->set_llm_call_status(last_call_id_, "unparsed");
      r.rounds.push_back(rd);
      if (best && best_errors == 0) break;
      if (n == rounds) break;
      progress("round " + std::to_string(n) + ": " + std::to_string(remaining.error_count()) + " errors remain; re-prompting");
      p = render(repair_t, facts, opts,
                 {{"draft", text.empty() ? answer.substr(0, 4000) : text}, {"diagnostics", remaining.str()}});
    }
    if (best) {
      r.contract = *best;
    } else {
      // No round gave a contract that parses: the offline draft stands in, marked as such.
      Diagnostics last = r.rounds.empty() ? Diagnostics{} : r.rounds.back().diags;
      r.contract = draft_offline(facts, opts);
      r.open = last;
      r.open.error({"synthesis", 0, 0}, "no LLM round produced a contract that parses; the offline draft is given instead",
                   "llm-no-contract", "inspect the rounds with --json, or run without --llm");
    }
  }

  void finish() {
    for (auto& path : opts.overlays) apply_overlay(r.contract, path, r.open);
    r.open.append(recheck(r.contract, r.text, r.contract.name + ".lpcl"));
    r.open.append(check_usable(r.contract));
    r.converged = !r.open.has_errors();
  }

  void put() {
    if (!store) return;
    auto put = store->put_contract(record_of(r, facts, opts));
    r.contract_id = std::to_string(put.id);
  }
};

}  // namespace

store::ContractRecord record_of(const SynthResult& r, const extract::Facts& facts, const SynthOptions& opts) {
  store::ContractRecord rec = store::ContractRecord::of(r.contract);
  rec.lpcl = r.text;
  rec.status = r.converged ? store::ContractStatus::Converged : store::ContractStatus::OpenDiagnostics;
  rec.diagnostics = diagnostics_json(r.open).dump();
  auto at = r.prompt_id.find('@');
  rec.prompt_id = r.prompt_id.substr(0, at);
  rec.prompt_version = at == std::string::npos ? 0 : std::atoi(r.prompt_id.c_str() + at + 1);
  rec.drafter = opts.llm ? store::Drafter::Llm : store::Drafter::Offline;
  rec.model = opts.llm ? opts.llm->model : "";
  store::FactsSource fs;
  fs.json = extract::to_json(facts).dump();
  for (auto& root : facts.roots) fs.source += (fs.source.empty() ? "" : " ") + ("path:" + root);
  rec.facts.push_back(fs);
  for (auto& rd : r.rounds) {
    store::ValidationRound v;
    v.round = rd.n;
    v.drafter = rd.drafter;
    v.diagnostics = diagnostics_json(rd.diags).dump();
    v.repairs = nlohmann::json(rd.repairs).dump();
    rec.rounds.push_back(v);
  }
  return rec;
}

void require_facts(const extract::Facts& facts, const SynthOptions& opts) {
  if (!facts.env_vars.empty() || !facts.api_controls.empty() || !facts.threading.empty() ||
      !facts.doc_mentions.empty() || !facts.binaries.empty())
    return;
  std::string where;
  for (auto& r : facts.roots) where += (where.empty() ? "" : ", ") + r;
  throw EmptyFacts("no facts about " + contract_name(facts, opts) + (where.empty() ? "" : " in " + where) + " (" +
                   std::to_string(facts.files_scanned) +
                   " files scanned): no environment read, API declaration, threading call, documentation "
                   "mention or shared object; nothing was drafted or stored");
}

SynthResult synthesize(const extract::Facts& facts, const SynthOptions& opts, store::Store* store) {
  require_facts(facts, opts);
  Loop loop{facts, opts, store, {}};
  loop.check_cancel();
  if (opts.llm) loop.llm();
  else loop.offline();
  loop.check_cancel();
  loop.finish();
  loop.put();
  return loop.r;
}

}  // namespace syspilot::synth
