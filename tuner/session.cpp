// Sessions and trials in the SQLite store: the "tuner" migrations, reads and writes, and the
// JSON forms of spaces, guides and configurations kept with a session.
#include "tuner/session.h"
#include "tuner/run.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "store/store.h"

namespace syspilot::tuner {

namespace {

const char* kSchemaV1 = R"SQL(
CREATE TABLE tune_sessions(
  id INTEGER PRIMARY KEY,
  argv TEXT NOT NULL,
  strategy TEXT NOT NULL,
  budget INTEGER NOT NULL,
  seed INTEGER NOT NULL,
  space TEXT NOT NULL,
  guides TEXT NOT NULL DEFAULT '[]',
  options TEXT NOT NULL DEFAULT '{}',
  status TEXT NOT NULL DEFAULT 'running',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),
  finished_at TEXT
);
CREATE TABLE tune_trials(
  session_id INTEGER NOT NULL REFERENCES tune_sessions(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  strategy TEXT NOT NULL,
  config TEXT NOT NULL,
  ok INTEGER NOT NULL,
  failure TEXT NOT NULL DEFAULT '',
  value REAL NOT NULL,
  spread REAL NOT NULL,
  repeats INTEGER NOT NULL,
  samples TEXT NOT NULL,
  runs_before INTEGER NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),
  PRIMARY KEY(session_id, idx)
);
)SQL";

std::vector<std::string> argv_from_json(const std::string& text);

SessionInfo read_session(const store::Stmt& s) {
  SessionInfo i;
  i.id = s.column_int(0);
  i.argv = argv_from_json(s.column_text(1));
  i.strategy = s.column_text(2);
  i.budget = static_cast<int>(s.column_int(3));
  i.seed = static_cast<std::uint64_t>(s.column_int(4));
  i.space_json = s.column_text(5);
  i.guides_json = s.column_text(6);
  i.options_json = s.column_text(7);
  i.status = s.column_text(8);
  i.created_at = s.column_text(9);
  i.finished_at = s.column_text(10);
  i.result_json = s.column_text(11);
  return i;
}

const char* kSessionColumns =
    "SELECT id, argv, strategy, budget, seed, space, guides, options, status, created_at, finished_at, result "
    "FROM tune_sessions";

// What tune concluded once the search ended (the verdict, the closing re-measurement, the
// minimised configuration): JSON, '{}' until then.
const char* kSchemaV2 = "ALTER TABLE tune_sessions ADD COLUMN result TEXT NOT NULL DEFAULT '{}';";

// Runs spread over a cluster: the node of each trial, and the jobs submitted (tuner/slurm.h),
// so that a session resumed after its submitter died repeats no finished run.
const char* kSchemaV3 = R"SQL(
ALTER TABLE tune_trials ADD COLUMN node TEXT NOT NULL DEFAULT '';
CREATE TABLE tune_jobs(
  session_id INTEGER NOT NULL REFERENCES tune_sessions(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  job_id TEXT NOT NULL,
  trial INTEGER NOT NULL,
  runs_before INTEGER NOT NULL,
  strategy TEXT NOT NULL,
  kind TEXT NOT NULL,
  config TEXT NOT NULL,
  spec_path TEXT NOT NULL,
  result_path TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'submitted',
  node TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),
  PRIMARY KEY(session_id, seq)
);
)SQL";

// Analyses, kept so that the service (and its dashboard) shows what `analyze` and `tune`
// concluded: the document whole, and the summary a list needs without parsing each document.
const char* kSchemaV4 = R"SQL(
CREATE TABLE tune_analyses(
  id INTEGER PRIMARY KEY,
  argv TEXT NOT NULL,
  origin TEXT NOT NULL,
  summary TEXT NOT NULL DEFAULT '{}',
  document TEXT NOT NULL,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now'))
);
)SQL";

// The process that owns each session while it runs (SessionOwner): claimed when a session is
// created or resumed, released when the process ends; a row left by a killed process is taken
// over once its process is seen to be gone.
const char* kSchemaV5 = R"SQL(
CREATE TABLE tune_owners(
  session_id INTEGER PRIMARY KEY REFERENCES tune_sessions(id) ON DELETE CASCADE,
  pid INTEGER NOT NULL,
  start INTEGER NOT NULL,
  host TEXT NOT NULL,
  boot TEXT NOT NULL,
  since TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now'))
);
)SQL";

bool same_process(const SessionOwner& a, const SessionOwner& b) {
  return a.pid == b.pid && a.start == b.start && a.host == b.host && a.boot == b.boot;
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::vector<std::string> argv_from_json(const std::string& text) {
  std::vector<std::string> out;
  auto argv = nlohmann::json::parse(text, nullptr, false);
  if (argv.is_array())
    for (const auto& a : argv)
      if (a.is_string()) out.push_back(a.get<std::string>());
  return out;
}

}  // namespace

void register_session_schema() {
  store::register_migration("tuner", 1, kSchemaV1);
  store::register_migration("tuner", 2, kSchemaV2);
  store::register_migration("tuner", 3, kSchemaV3);
  store::register_migration("tuner", 4, kSchemaV4);
  store::register_migration("tuner", 5, kSchemaV5);
}

SessionStore::SessionStore(const std::string& db_path) {
  register_session_schema();
  owned_ = std::make_unique<store::Database>(db_path);
  owned_->migrate();
  db_ = owned_.get();
}

SessionStore::SessionStore(store::Database& db) : db_(&db) {}

SessionStore::~SessionStore() = default;

const std::string& SessionStore::path() const { return db_->path(); }

std::int64_t SessionStore::create(const SessionInfo& s) {
  nlohmann::json argv = s.argv;
  auto st = db_->prepare(
      "INSERT INTO tune_sessions(argv, strategy, budget, seed, space, guides, options, status) VALUES(?,?,?,?,?,?,?,?)");
  st.bind_all(argv.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), s.strategy, s.budget, static_cast<std::int64_t>(s.seed), s.space_json,
              s.guides_json.empty() ? std::string("[]") : s.guides_json,
              s.options_json.empty() ? std::string("{}") : s.options_json,
              s.status.empty() ? std::string("running") : s.status);
  st.run();
  return db_->last_insert_rowid();
}

SessionOwner this_process() {
  SessionOwner o;
  o.pid = ::getpid();
  o.start = process_start_ticks(::getpid());
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  o.host = host;
  o.boot = first_line("/proc/sys/kernel/random/boot_id");
  return o;
}

bool owner_alive(const SessionOwner& o) {
  const SessionOwner me = this_process();
  if (o.host != me.host) return true;
  if (o.boot != me.boot || o.pid <= 0) return false;
  return o.start != 0 && process_start_ticks(static_cast<int>(o.pid)) == o.start;
}

std::int64_t SessionStore::create_owned(const SessionInfo& s) {
  store::Transaction tx(*db_);
  const std::int64_t id = create(s);
  claim(id);
  tx.commit();
  return id;
}

std::optional<SessionOwner> SessionStore::owner(std::int64_t id) const {
  auto st = db_->prepare("SELECT pid, start, host, boot, since FROM tune_owners WHERE session_id = ?");
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  SessionOwner o;
  o.pid = st.column_int(0);
  o.start = static_cast<std::uint64_t>(st.column_int(1));
  o.host = st.column_text(2);
  o.boot = st.column_text(3);
  o.since = st.column_text(4);
  return o;
}

std::optional<SessionOwner> SessionStore::claim(std::int64_t id) {
  const SessionOwner me = this_process();
  // Under the write lock, so that of two processes claiming at once one sees the other's claim.
  store::Transaction tx(*db_);
  if (auto o = owner(id); o && !same_process(*o, me) && owner_alive(*o)) return o;
  auto st = db_->prepare("INSERT OR REPLACE INTO tune_owners(session_id, pid, start, host, boot) VALUES(?,?,?,?,?)");
  st.bind_all(id, me.pid, static_cast<std::int64_t>(me.start), me.host, me.boot);
  st.run();
  tx.commit();
  return std::nullopt;
}

void SessionStore::release_owned() {
  const SessionOwner me = this_process();
  auto st = db_->prepare("DELETE FROM tune_owners WHERE pid = ? AND start = ? AND host = ? AND boot = ?");
  st.bind_all(me.pid, static_cast<std::int64_t>(me.start), me.host, me.boot);
  st.run();
}

std::optional<SessionInfo> SessionStore::get(std::int64_t id) const {
  auto st = db_->prepare(std::string(kSessionColumns) + " WHERE id = ?");
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return read_session(st);
}

std::vector<SessionInfo> SessionStore::list() const {
  std::vector<SessionInfo> out;
  auto st = db_->prepare(std::string(kSessionColumns) + " ORDER BY id DESC");
  while (st.step()) out.push_back(read_session(st));
  return out;
}

std::vector<Trial> SessionStore::trials(std::int64_t id) const {
  std::vector<Trial> out;
  auto st = db_->prepare(
      "SELECT idx, strategy, config, ok, failure, value, spread, repeats, samples, runs_before, node "
      "FROM tune_trials WHERE session_id = ? ORDER BY idx");
  st.bind(1, id);
  while (st.step()) {
    Trial t;
    t.index = static_cast<int>(st.column_int(0));
    t.strategy = st.column_text(1);
    t.config = config_from_json(st.column_text(2));
    t.m.ok = st.column_int(3) != 0;
    t.m.failure = st.column_text(4);
    t.m.value = st.column_double(5);
    t.m.spread = st.column_double(6);
    t.m.repeats = static_cast<int>(st.column_int(7));
    auto samples = nlohmann::json::parse(st.column_text(8), nullptr, false);
    if (samples.is_array())
      for (const auto& v : samples) t.m.samples.push_back(v.get<double>());
    t.runs_before = static_cast<int>(st.column_int(9));
    t.m.node = st.column_text(10);
    out.push_back(std::move(t));
  }
  return out;
}

void SessionStore::add_trial(std::int64_t id, const Trial& t) {
  nlohmann::json samples = t.m.samples;
  auto st = db_->prepare(
      "INSERT OR REPLACE INTO tune_trials(session_id, idx, strategy, config, ok, failure, value, spread, repeats, "
      "samples, runs_before, node) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
  // A failure reason quotes the application's output: kept as printable UTF-8 text.
  st.bind_all(id, t.index, t.strategy, config_to_json(t.config), t.m.ok ? 1 : 0, printable(t.m.failure), t.m.value, t.m.spread,
              t.m.repeats, samples.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), t.runs_before, t.m.node);
  st.run();
}

void SessionStore::add_job(std::int64_t id, const ClusterJob& j) {
  auto st = db_->prepare(
      "INSERT INTO tune_jobs(session_id, seq, job_id, trial, runs_before, strategy, kind, config, spec_path, "
      "result_path, state, node) VALUES(?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM tune_jobs WHERE session_id = ?1), "
      "?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)");
  st.bind_all(id, j.id, j.trial, j.runs_before, j.strategy, j.kind, config_to_json(j.config), j.spec_path,
              j.result_path, j.state, j.node);
  st.run();
}

void SessionStore::end_job(std::int64_t id, const std::string& job_id, const std::string& node) {
  auto st = db_->prepare("UPDATE tune_jobs SET state = 'ended', node = ? WHERE session_id = ? AND job_id = ?");
  st.bind_all(node, id, job_id);
  st.run();
}

std::vector<ClusterJob> SessionStore::jobs(std::int64_t id) const {
  std::vector<ClusterJob> out;
  auto st = db_->prepare(
      "SELECT job_id, trial, runs_before, strategy, kind, config, spec_path, result_path, state, node "
      "FROM tune_jobs WHERE session_id = ? ORDER BY seq");
  st.bind(1, id);
  while (st.step()) {
    ClusterJob j;
    j.id = st.column_text(0);
    j.trial = static_cast<int>(st.column_int(1));
    j.runs_before = static_cast<int>(st.column_int(2));
    j.strategy = st.column_text(3);
    j.kind = st.column_text(4);
    j.config = config_from_json(st.column_text(5));
    j.spec_path = st.column_text(6);
    j.result_path = st.column_text(7);
    j.state = st.column_text(8);
    j.node = st.column_text(9);
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<std::int64_t> SessionStore::compared(std::int64_t id) const {
  auto st = db_->prepare(
      "SELECT b.id FROM tune_sessions a JOIN tune_sessions b ON json_valid(a.options) AND json_valid(b.options) "
      "AND json_extract(a.options, '$.compare.group') = json_extract(b.options, '$.compare.group') "
      "WHERE a.id = ? ORDER BY b.id");
  st.bind(1, id);
  std::vector<std::int64_t> out;
  while (st.step()) out.push_back(st.column_int(0));
  if (out.empty()) out.push_back(id);
  return out;
}

std::int64_t SessionStore::add_analysis(const std::vector<std::string>& argv, const std::string& origin,
                                        const std::string& document_json) {
  auto doc = nlohmann::json::parse(document_json, nullptr, false);
  nlohmann::json summary = doc.is_object() ? analysis_summary(doc) : nlohmann::json::object();
  auto st = db_->prepare("INSERT INTO tune_analyses(argv, origin, summary, document) VALUES(?,?,?,?)");
  st.bind_all(nlohmann::json(argv).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), origin,
              summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), document_json);
  st.run();
  return db_->last_insert_rowid();
}

std::optional<AnalysisRecord> SessionStore::analysis(std::int64_t id) const {
  auto st = db_->prepare("SELECT id, argv, origin, summary, document, created_at FROM tune_analyses WHERE id = ?");
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  AnalysisRecord r;
  r.id = st.column_int(0);
  r.argv = argv_from_json(st.column_text(1));
  r.origin = st.column_text(2);
  r.summary_json = st.column_text(3);
  r.document_json = st.column_text(4);
  r.created_at = st.column_text(5);
  return r;
}

std::vector<AnalysisRecord> SessionStore::analyses() const {
  auto st = db_->prepare("SELECT id, argv, origin, summary, created_at FROM tune_analyses ORDER BY id DESC");
  std::vector<AnalysisRecord> out;
  while (st.step()) {
    AnalysisRecord r;
    r.id = st.column_int(0);
    r.argv = argv_from_json(st.column_text(1));
    r.origin = st.column_text(2);
    r.summary_json = st.column_text(3);
    r.created_at = st.column_text(4);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::int64_t> SessionStore::sessions_of(std::int64_t analysis_id) const {
  auto st = db_->prepare(
      "SELECT id FROM tune_sessions WHERE json_valid(options) AND json_extract(options, '$.analysis') = ? ORDER BY id");
  st.bind(1, analysis_id);
  std::vector<std::int64_t> out;
  while (st.step()) out.push_back(st.column_int(0));
  return out;
}

nlohmann::json analysis_summary(const nlohmann::json& doc) {
  using nlohmann::json;
  json contracts = json::array();
  if (doc.contains("contracts") && doc["contracts"].is_array())
    for (const auto& c : doc["contracts"])
      if (c.is_object() && c.contains("name") && c["name"].is_string()) contracts.push_back(c["name"]);
  int confirmed = 0, refuted = 0, unknown = 0;
  if (doc.contains("hypotheses") && doc["hypotheses"].is_array())
    for (const auto& h : doc["hypotheses"]) {
      std::string v = h.is_object() ? h.value("verdict", std::string()) : std::string();
      (v == "confirmed" ? confirmed : v == "refuted" ? refuted : unknown)++;
    }
  return {{"application", doc.value("application", std::string())},
          {"contracts", contracts},
          {"relations", doc.contains("relations") && doc["relations"].is_array() ? doc["relations"].size() : 0},
          {"profiled", doc.value("profiled", false)},
          {"hypotheses", confirmed + refuted + unknown},
          {"confirmed", confirmed},
          {"refuted", refuted},
          {"unknown", unknown}};
}

void SessionStore::set_result(std::int64_t id, const std::string& result_json) {
  auto st = db_->prepare("UPDATE tune_sessions SET result = ? WHERE id = ?");
  st.bind_all(result_json, id);
  st.run();
}

void SessionStore::set_budget(std::int64_t id, int budget) {
  auto st = db_->prepare("UPDATE tune_sessions SET budget = ? WHERE id = ?");
  st.bind_all(budget, id);
  st.run();
}

void SessionStore::finish(std::int64_t id, const std::string& status) {
  auto st = db_->prepare(
      "UPDATE tune_sessions SET status = ?, finished_at = strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id = ?");
  st.bind_all(status, id);
  st.run();
}

// ---- JSON forms -------------------------------------------------------------------------------

namespace {

const char* kind_name(Param::Kind k) {
  switch (k) {
    case Param::Kind::Env: return "env";
    case Param::Kind::Api: return "api";
    case Param::Kind::Option: return "option";
  }
  return "env";
}

}  // namespace

std::string space_to_json(const Space& s) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : s.params)
    params.push_back({{"name", p.name}, {"values", p.values}, {"default", p.default_value}, {"kind", kind_name(p.kind)},
                      {"library", p.library}, {"carrier", p.carrier}, {"item_sep", p.item_sep},
                      {"kv_sep", p.kv_sep}, {"numeric", p.numeric}});
  return nlohmann::json{{"params", params}, {"constraints", s.constraints}, {"one_value", s.one_value}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Space space_from_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw std::runtime_error("stored search space is not valid JSON");
  Space s;
  try {
    for (const auto& p : j.at("params")) {
      Param q;
      q.name = p.at("name").get<std::string>();
      q.values = p.at("values").get<std::vector<std::string>>();
      q.default_value = p.value("default", "");
      std::string k = p.value("kind", "env");
      q.kind = k == "api" ? Param::Kind::Api : k == "option" ? Param::Kind::Option : Param::Kind::Env;
      q.library = p.value("library", "");
      q.carrier = p.value("carrier", "");
      q.item_sep = p.value("item_sep", ",");
      q.kv_sep = p.value("kv_sep", ":");
      q.numeric = p.value("numeric", false);
      if (q.values.empty()) throw std::runtime_error("control " + q.name + " has no values");
      s.params.push_back(std::move(q));
    }
    s.constraints = j.value("constraints", std::vector<std::string>{});
    s.one_value = j.value("one_value", std::vector<std::vector<std::string>>{});
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("stored search space is malformed: ") + e.what());
  }
  return s;
}

std::string guides_to_json(const std::vector<Guide>& gs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& g : gs) {
    nlohmann::json rem = nlohmann::json::array();
    for (const auto& r : g.remedies) rem.push_back(r);
    a.push_back({{"id", g.id}, {"kind", g.kind}, {"controls", g.controls}, {"constraint", g.constraint},
                 {"remedies", rem}, {"weight", g.weight}});
  }
  return a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<Guide> guides_from_json(const std::string& text) {
  std::vector<Guide> out;
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return out;
  for (const auto& g : j) {
    if (!g.is_object()) continue;
    Guide x;
    x.id = g.value("id", "");
    x.kind = g.value("kind", "");
    x.controls = g.value("controls", std::vector<std::string>{});
    x.constraint = g.value("constraint", "");
    if (g.contains("remedies") && g["remedies"].is_array())
      for (const auto& r : g["remedies"]) x.remedies.push_back(r.get<Config>());
    x.weight = g.value("weight", 1.0);
    out.push_back(std::move(x));
  }
  return out;
}

std::string config_to_json(const Config& c) { return nlohmann::json(c).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

Config config_from_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return {};
  Config c;
  for (auto& [k, v] : j.items())
    if (v.is_string()) c[k] = v.get<std::string>();
  return c;
}

// ---- Reading a stored session ----------------------------------------------------------------

bool capped_trial(const Trial& t) { return t.m.capped || (!t.m.ok && t.m.failure.rfind("capped at ", 0) == 0); }

SessionOutcome session_outcome(const SessionInfo& s, const std::vector<Trial>& trials) {
  SessionOutcome o;
  for (size_t i = 0; i < trials.size(); ++i) {
    const Trial& t = trials[i];
    o.runs += t.m.repeats;
    if (t.m.ok) {
      if (o.best < 0 || t.m.value < trials[o.best].m.value) o.best = static_cast<int>(i);
      if (t.config.empty() && o.reference < 0) o.reference = static_cast<int>(i);
    } else if (capped_trial(t)) {
      ++o.capped;
    } else {
      ++o.failed;
    }
  }
  auto opts = nlohmann::json::parse(s.options_json, nullptr, false);
  if (opts.is_object() && opts.contains("analysis_spent") && opts["analysis_spent"].is_number_integer())
    o.runs += std::max(0, opts["analysis_spent"].get<int>());
  if (o.best >= 0 && o.reference >= 0) {
    double r = trials[o.reference].m.value, b = trials[o.best].m.value;
    // As tune(): negated (maximised) metrics give how much larger the best metric is.
    if (r != 0 && b != 0) o.speedup = r > 0 ? r / b : b / r;
    o.speedup_spread = trials[o.reference].m.spread + trials[o.best].m.spread;
  }
  return o;
}

nlohmann::json session_to_json(const SessionInfo& s, const std::vector<Trial>& trials) {
  using nlohmann::json;
  json options = json::parse(s.options_json, nullptr, false);
  if (!options.is_object()) options = json::object();
  const bool maximize = options.value("maximize", false);
  std::string objective = "wall time (s)";
  if (!options.value("score_cmd", std::string()).empty()) objective = "score";
  else if (!options.value("metric", std::string()).empty()) objective = "metric /" + options.value("metric", std::string()) + "/";

  json space = json::parse(s.space_json, nullptr, false);
  if (!space.is_object()) space = nullptr;
  json guides = json::parse(s.guides_json, nullptr, false);
  if (!guides.is_array()) guides = json::array();
  json result = json::parse(s.result_json.empty() ? "{}" : s.result_json, nullptr, false);
  if (!result.is_object() || result.empty()) result = nullptr;

  // Values as measured: maximised metrics are stored negated; a capped trial's value is the
  // wall seconds it had run (its lower bound) whatever the objective.
  auto measured = [&](const Trial& t) { return maximize && !capped_trial(t) ? -t.m.value : t.m.value; };
  json ts = json::array();
  for (const Trial& t : trials) {
    json samples = json::array();
    for (double v : t.m.samples) samples.push_back(maximize ? -v : v);
    ts.push_back({{"index", t.index},
                  {"strategy", t.strategy},
                  {"config", t.config},
                  {"ok", t.m.ok},
                  {"capped", capped_trial(t)},
                  {"failure", t.m.failure},
                  {"value", t.m.ok || capped_trial(t) ? json(measured(t)) : json(nullptr)},
                  {"spread", t.m.spread},
                  {"repeats", t.m.repeats},
                  {"samples", samples},
                  {"runs_before", t.runs_before},
                  {"node", t.m.node.empty() ? json(nullptr) : json(t.m.node)}});
  }
  SessionOutcome o = session_outcome(s, trials);
  auto pick = [&](int i) -> json {
    if (i < 0) return nullptr;
    const Trial& t = trials[i];
    return {{"trial", i}, {"config", t.config}, {"value", measured(t)}, {"spread", t.m.spread}};
  };
  json args = json::array();
  for (size_t i = 1; i < s.argv.size(); ++i) args.push_back(s.argv[i]);
  return {{"id", s.id},
          {"program", s.argv.empty() ? "" : s.argv.front()},
          {"args", args},
          {"strategy", s.strategy},
          {"status", s.status},
          {"created_at", s.created_at},
          {"finished_at", s.finished_at.empty() ? json(nullptr) : json(s.finished_at)},
          {"budget", s.budget},
          {"runs", o.runs},
          {"seed", s.seed},
          {"objective", objective},
          {"maximize", maximize},
          {"options", options},
          {"machine", options.contains("machine") ? options["machine"] : json(nullptr)},
          {"space", space},
          {"guides", guides},
          {"trials", ts},
          {"capped", o.capped},
          {"failed", o.failed},
          {"best", pick(o.best)},
          {"reference", pick(o.reference)},
          {"speedup", o.speedup > 0 ? json(o.speedup) : json(nullptr)},
          {"speedup_spread", o.speedup > 0 ? json(o.speedup_spread) : json(nullptr)},
          {"speedup_basis", "trial medians"},
          {"result", result}};
}

}  // namespace syspilot::tuner
