// JSON views for the dashboard: sessions and analyses read through tuner/session.h (the same
// forms `syspilot sessions show --json` prints), and a contract's provenance from its facts.
#include "service/views.h"

#include <set>

#include "tuner/session.h"
#include "tuner/space.h"

namespace syspilot::service {

using nlohmann::json;

namespace {

json parse_object(const std::string& text) {
  json j = json::parse(text.empty() ? "{}" : text, nullptr, false);
  return j.is_object() ? j : json::object();
}

// What tune concluded (its stored result), or while it has not: the best trial so far.
json chosen_configuration(const tuner::SessionInfo& s, const json& session) {
  const json& result = session["result"];
  json chosen = json::object();
  tuner::Config config;
  if (result.is_object() && !(result.contains("verdict") && result["verdict"] == "failed") && result.contains("config") &&
      result["config"].is_object()) {
    config = tuner::config_from_json(result["config"].dump());
    chosen["source"] = result.contains("minimise") && result["minimise"].is_object() ? "minimised" : "best";
    chosen["verdict"] = result["verdict"];
    chosen["speedup"] = result.value("speedup", json());
    chosen["speedup_spread"] = result.value("speedup_spread", json());
    chosen["speedup_basis"] = result.value("speedup_basis", json());
  } else if (session["best"].is_object()) {
    config = tuner::config_from_json(session["best"]["config"].dump());
    chosen["source"] = "best so far";
    chosen["verdict"] = result.is_object() ? result.value("verdict", json()) : json();
    chosen["speedup"] = session["speedup"];
    chosen["speedup_spread"] = session["speedup_spread"];
    chosen["speedup_basis"] = session["speedup_basis"];
  } else {
    return nullptr;
  }
  chosen["config"] = config;
  json lines = json::array();
  try {
    tuner::Space space = tuner::space_from_json(s.space_json);
    for (auto& l : tuner::export_lines(tuner::environment_for(space, config, tuner::shim_path(), {})))
      lines.push_back(l);
  } catch (const std::exception& e) {
    chosen["export_error"] = e.what();
  }
  chosen["export"] = lines;
  return chosen;
}

// The trials of a compared session, as much as a plot needs.
json plot_trials(const json& session) {
  json out = json::array();
  for (const auto& t : session["trials"])
    out.push_back({{"index", t["index"]}, {"runs_before", t["runs_before"]}, {"repeats", t["repeats"]},
                   {"ok", t["ok"]}, {"capped", t["capped"]}, {"value", t["value"]}});
  return out;
}

json analysis_id_of(const tuner::SessionInfo& s) {
  json o = parse_object(s.options_json);
  return o.contains("analysis") && o["analysis"].is_number_integer() ? o["analysis"] : json();
}

}  // namespace

json sessions_view(store::Database& db, int limit) {
  tuner::SessionStore sessions(db);
  json out = json::array();
  for (const auto& s : sessions.list()) {
    if (static_cast<int>(out.size()) >= limit) break;
    auto trials = sessions.trials(s.id);
    tuner::SessionOutcome o = tuner::session_outcome(s, trials);
    json options = parse_object(s.options_json);
    json result = parse_object(s.result_json);
    json item = {{"id", s.id},
                 {"program", s.argv.empty() ? "" : s.argv.front()},
                 {"args", json(s.argv.size() > 1 ? std::vector<std::string>(s.argv.begin() + 1, s.argv.end())
                                                 : std::vector<std::string>{})},
                 {"strategy", s.strategy},
                 {"status", s.status},
                 {"created_at", s.created_at},
                 {"finished_at", s.finished_at.empty() ? json() : json(s.finished_at)},
                 {"budget", s.budget},
                 {"runs", o.runs},
                 {"trials", trials.size()},
                 {"failed", o.failed},
                 {"capped", o.capped},
                 {"machine", options.value("machine", json())},
                 {"executor", options.value("executor", json("local"))},
                 {"verdict", result.value("verdict", json())},
                 {"analysis", analysis_id_of(s)},
                 {"compare", options.contains("compare") && options["compare"].is_object()
                                 ? options["compare"].value("strategies", json())
                                 : json()}};
    if (result.contains("speedup") && result["speedup"].is_number()) {
      item["speedup"] = result["speedup"];
      item["speedup_spread"] = result.value("speedup_spread", json());
      item["speedup_basis"] = result.value("speedup_basis", json());
    } else {
      item["speedup"] = o.speedup > 0 ? json(o.speedup) : json();
      item["speedup_spread"] = o.speedup > 0 ? json(o.speedup_spread) : json();
      item["speedup_basis"] = "trial medians";
    }
    out.push_back(std::move(item));
  }
  return out;
}

std::optional<json> session_view(store::Database& db, std::int64_t id) {
  tuner::SessionStore sessions(db);
  auto s = sessions.get(id);
  if (!s) return std::nullopt;
  json j = tuner::session_to_json(*s, sessions.trials(id));
  j["chosen"] = chosen_configuration(*s, j);
  j["analysis"] = analysis_id_of(*s);
  json compared = json::array();
  for (std::int64_t other : sessions.compared(id)) {
    if (other == id) continue;
    auto o = sessions.get(other);
    if (!o) continue;
    json oj = tuner::session_to_json(*o, sessions.trials(other));
    compared.push_back({{"id", other}, {"strategy", oj["strategy"]}, {"status", oj["status"]}, {"best", oj["best"]},
                        {"speedup", oj["speedup"]}, {"trials", plot_trials(oj)}});
  }
  j["compared"] = compared;
  return j;
}

json analyses_view(store::Database& db, int limit) {
  tuner::SessionStore sessions(db);
  json out = json::array();
  for (const auto& a : sessions.analyses()) {
    if (static_cast<int>(out.size()) >= limit) break;
    out.push_back({{"id", a.id}, {"argv", a.argv}, {"origin", a.origin}, {"created_at", a.created_at},
                   {"summary", parse_object(a.summary_json)}});
  }
  return out;
}

std::optional<json> analysis_view(store::Database& db, std::int64_t id) {
  tuner::SessionStore sessions(db);
  auto a = sessions.analysis(id);
  if (!a) return std::nullopt;
  json doc = json::parse(a->document_json, nullptr, false);
  if (doc.is_discarded()) doc = nullptr;
  return json{{"id", a->id},         {"argv", a->argv},
              {"origin", a->origin}, {"created_at", a->created_at},
              {"summary", parse_object(a->summary_json)}, {"document", doc},
              {"sessions", sessions.sessions_of(id)}};
}

json contract_provenance(const store::Store& st, const store::ContractRecord& rec) {
  // What the contract cites: every statement's references, and the controls' doc sentences.
  std::set<std::string> refs, docs;
  json contract = json::parse(rec.json, nullptr, false);
  if (contract.is_object())
    for (const char* section : {"controls", "demands", "assumptions", "behaviors", "provides", "signals"}) {
      if (!contract.contains(section) || !contract[section].is_array()) continue;
      for (const auto& s : contract[section]) {
        if (!s.is_object()) continue;
        if (s.contains("provenance") && s["provenance"].is_object() && s["provenance"].contains("refs") &&
            s["provenance"]["refs"].is_array())
          for (const auto& r : s["provenance"]["refs"])
            if (r.is_string()) refs.insert(r.get<std::string>());
        if (s.contains("doc") && s["doc"].is_string() && !s["doc"].get<std::string>().empty())
          docs.insert(s["doc"].get<std::string>());
      }
    }
  constexpr size_t kPerRef = 20;  // facts shown for one reference
  json by_ref = json::object(), by_doc = json::object(), sources = json::array();
  auto add = [](json& map, const std::string& key, json fact) {
    json& list = map[key];
    if (list.is_null()) list = json::array();
    if (list.size() < kPerRef) list.push_back(std::move(fact));
  };
  for (const auto& f : st.contract_facts(rec.id)) {
    sources.push_back({{"digest", f.digest}, {"source", f.source}});
    auto text = st.get_facts(f.digest);
    if (!text) continue;
    json facts = json::parse(*text, nullptr, false);
    if (!facts.is_object()) continue;
    // Every list of facts with a file and a line: env reads, API controls, threading, doc
    // mentions, and whatever kinds the extractors add.
    for (const auto& [kind, list] : facts.items()) {
      if (!list.is_array()) continue;
      for (const auto& fact : list) {
        if (!fact.is_object() || !fact.contains("file") || !fact["file"].is_string() || !fact.contains("line") ||
            !fact["line"].is_number_integer())
          continue;
        const std::string file = fact["file"].get<std::string>();
        const std::string line = std::to_string(fact["line"].get<long long>());
        json shown = {{"kind", kind}, {"file", file}, {"line", fact["line"]}, {"source", f.source}};
        for (const char* k : {"name", "function", "via", "detail", "signature", "sentence", "doc", "scope"})
          if (fact.contains(k) && fact[k].is_string() && !fact[k].get<std::string>().empty())
            shown[k] = fact[k].get<std::string>().substr(0, 2000);
        const std::string base = file.substr(file.rfind('/') == std::string::npos ? 0 : file.rfind('/') + 1);
        for (const std::string& key : {file + ":" + line, base + ":" + line})
          if (refs.count(key)) {
            add(by_ref, key, shown);
            break;
          }
        if (fact.contains("sentence") && fact["sentence"].is_string() && docs.count(fact["sentence"].get<std::string>()))
          add(by_doc, fact["sentence"].get<std::string>(), shown);
      }
    }
  }
  return {{"library", rec.library},
          {"version", rec.version},
          {"revision", rec.revision},
          {"drafter", store::to_string(rec.drafter)},
          {"model", rec.model},
          {"review", store::to_string(rec.review)},
          {"reviewed_at", rec.reviewed_at.empty() ? json() : json(rec.reviewed_at)},
          {"source", rec.source},
          {"facts", sources},
          {"refs", by_ref},
          {"docs", by_doc}};
}

}  // namespace syspilot::service
