// `syspilot sessions list|show ID|export ID`: the tuning sessions kept in the store, read
// through tuner/session.h (the JSON form is session_to_json(), shared with the service).
// Exit codes: 0 ok; 1 `export` of a session with no successful trial; 2 an unknown id, a
// missing store or a file that is not one.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "store/store.h"
#include "tuner/measure.h"
#include "tuner/session.h"
#include "tuner/space.h"

namespace syspilot::cli {
namespace {

using namespace syspilot::tuner;

struct SessionsArgs {
  std::string db;
  std::int64_t id = 0;
  bool json = false;
};

std::string db_path(const std::string& db) { return db.empty() ? store::default_db_path() : db; }

bool store_exists(const std::string& db) {
  std::error_code ec;
  return std::filesystem::exists(db_path(db), ec);
}

// A file that is not a store is an input problem (exit 2), as for `syspilot contracts`.
std::unique_ptr<SessionStore> open_sessions(const std::string& db) {
  try {
    return std::make_unique<SessionStore>(db_path(db));
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
}

std::string known_ids(const SessionStore& s) {
  auto all = s.list();
  if (all.empty()) return "none are stored";
  std::string out;
  size_t n = 0;
  for (auto& x : all) {
    if (n++ == 10) {
      out += ", ...";
      break;
    }
    out += (out.empty() ? "" : ", ") + std::to_string(x.id);
  }
  return "stored: " + out + "; `syspilot sessions list` shows them";
}

// The session ID, or a usage error that says what is stored instead.
SessionInfo find_session(const SessionStore& s, std::int64_t id) {
  if (auto x = s.get(id)) return *x;
  throw UsageError("no tuning session " + std::to_string(id) + " in " + s.path() + " (" + known_ids(s) + ")");
}

std::unique_ptr<SessionStore> open_existing(const std::string& db, std::int64_t id) {
  if (!store_exists(db))
    throw UsageError("no tuning session " + std::to_string(id) + ": no store at " + db_path(db));
  return open_sessions(db);
}

std::string fixed(double v, int prec = 3) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

std::string pct(double v) { return std::to_string(static_cast<long>(v * 100 + (v >= 0 ? 0.5 : -0.5))) + "%"; }

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (auto& a : argv) out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

// "0.512 s", "1234 (metric)", with the unit the objective has.
std::string value_text(const nlohmann::json& j, double v) {
  if (j.value("objective", std::string()) == "wall time (s)") return fixed(v) + " s";
  return fixed(v) + " (" + j.value("objective", std::string()) + ")";
}

void print_list(const SessionStore& s, bool json) {
  auto all = s.list();
  if (json) {
    nlohmann::json a = nlohmann::json::array();
    for (auto& x : all) {
      auto j = session_to_json(x, s.trials(x.id));
      a.push_back({{"id", j["id"]},
                   {"program", j["program"]},
                   {"args", j["args"]},
                   {"strategy", j["strategy"]},
                   {"status", j["status"]},
                   {"created_at", j["created_at"]},
                   {"budget", j["budget"]},
                   {"runs", j["runs"]},
                   {"trials", j["trials"].size()},
                   {"best", j["best"]},
                   {"speedup", j["speedup"]}});
    }
    std::cout << a.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  if (all.empty()) {
    std::cerr << "no tuning sessions in " << s.path() << "\n";
    return;
  }
  std::cout << std::left << std::setw(6) << "ID" << std::setw(14) << "STRATEGY" << std::setw(13) << "STATUS"
            << std::setw(8) << "TRIALS" << std::setw(9) << "RUNS" << std::setw(10) << "SPEEDUP" << std::setw(22)
            << "CREATED" << "COMMAND\n";
  for (auto& x : all) {
    auto trials = s.trials(x.id);
    SessionOutcome o = session_outcome(x, trials);
    std::cout << std::setw(6) << x.id << std::setw(14) << x.strategy << std::setw(13) << x.status << std::setw(8)
              << trials.size() << std::setw(9) << (std::to_string(o.runs) + "/" + std::to_string(x.budget))
              << std::setw(10) << (o.speedup > 0 ? fixed(o.speedup, 2) + "x" : "-") << std::setw(22) << x.created_at
              << command_line(x.argv) << "\n";
  }
}

void print_show(const SessionInfo& x, const std::vector<Trial>& trials, bool json) {
  nlohmann::json j = session_to_json(x, trials);
  if (json) {
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  std::cout << "session " << x.id << ": " << x.status << ", strategy " << x.strategy << ", started " << x.created_at;
  if (!x.finished_at.empty()) std::cout << ", ended " << x.finished_at;
  std::cout << "\n";
  std::cout << "command:   " << command_line(x.argv) << "\n";
  std::cout << "objective: " << j["objective"].get<std::string>() << (j["maximize"].get<bool>() ? ", maximised" : "")
            << "; budget " << x.budget << " runs, " << j["runs"].get<int>() << " spent; seed " << x.seed << "\n";
  std::cout << "machine:   " << (j["machine"].is_null() ? "(not recorded)" : j["machine"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) << "\n";
  try {
    Space space = space_from_json(x.space_json);
    std::cout << "space:     " << space.params.size() << " controls, " << space.size() << " configurations\n";
    for (auto& p : space.params) {
      std::string values;
      for (auto& v : p.values) values += (values.empty() ? "" : ", ") + v;
      std::cout << "  " << p.name << " ("
                << (p.kind == Param::Kind::Api ? "api" : p.kind == Param::Kind::Option ? "option of " + p.carrier : "env")
                << (p.library.empty() ? "" : ", " + p.library)
                << (p.default_value.empty() ? "" : ", default " + p.default_value) << "): " << values << "\n";
    }
    for (auto& c : space.constraints) std::cout << "  constraint " << c << "\n";
  } catch (const std::exception& e) {
    std::cout << "space:     (" << e.what() << ")\n";
  }
  for (auto& g : j["guides"])
    if (g.is_object()) std::cout << "guided by: " << g.value("id", std::string()) << "\n";
  std::cout << "trials:\n";
  if (trials.empty()) std::cout << "  (none)\n";
  for (size_t i = 0; i < trials.size(); ++i) {
    const Trial& t = trials[i];
    const nlohmann::json& tj = j["trials"][i];
    std::cout << "  " << std::left << std::setw(4) << t.index + 1 << std::setw(8)
              << ("runs " + std::to_string(t.runs_before + t.m.repeats)) << std::setw(44) << to_string(t.config) << " ";
    if (t.m.ok)
      std::cout << value_text(j, tj["value"].get<double>()) << " (x" << t.m.repeats
                << (t.m.repeats > 1 ? ", +-" + pct(t.m.spread) : "") << ", " << t.strategy << ")";
    else if (tj["capped"].get<bool>())
      std::cout << t.m.failure;
    else
      std::cout << "FAILED: " << t.m.failure;
    if (!t.m.node.empty()) std::cout << "  on " << t.m.node;
    std::cout << "\n";
  }
  // A session on a cluster: each node's default, to which its trials were compared.
  if (j["result"].is_object() && j["result"].contains("nodes")) {
    const nlohmann::json& nodes = j["result"]["nodes"];
    const std::string ref = nodes.value("reference", std::string());
    for (const auto& [node, value] : nodes["defaults"].items())
      std::cout << "node:      " << node << ", default "
                << value_text(j, j["maximize"].get<bool>() ? -value.get<double>() : value.get<double>())
                << (node == ref ? " (reference: other nodes' values are scaled to it)" : "") << "\n";
  }
  if (j["best"].is_null()) {
    std::cout << "best:      none (no trial succeeded)\n";
    return;
  }
  const nlohmann::json& best = j["best"];
  std::cout << "best:      trial " << best["trial"].get<int>() + 1 << ", " << to_string(best["config"].get<Config>())
            << ": " << value_text(j, best["value"].get<double>()) << "\n";
  if (j["speedup"].is_null())
    std::cout << "speedup:   n/a (no successful default trial, or a value of 0)\n";
  else
    std::cout << "speedup:   " << fixed(j["speedup"].get<double>(), 2) << "x +-" << pct(j["speedup_spread"].get<double>())
              << " over the default (trial medians; tune's closing re-measurement is not stored)\n";
  std::cout << "export:    syspilot sessions export " << x.id << "\n";
}

int print_export(const SessionInfo& x, const std::vector<Trial>& trials, bool json) {
  SessionOutcome o = session_outcome(x, trials);
  if (o.best < 0) {
    std::cerr << "syspilot: session " << x.id << " has no best configuration: "
              << (trials.empty() ? "no trial ran" : "every trial failed") << "\n";
    return kFindings;
  }
  Space space;
  try {
    space = space_from_json(x.space_json);
  } catch (const std::exception& e) {
    throw std::runtime_error("session " + std::to_string(x.id) + ": " + e.what());
  }
  const Config& best = trials[o.best].config;
  const std::string shim = shim_path();
  auto env = environment_for(space, best, shim, inherited_environment());
  std::vector<std::string> api;
  for (auto& [name, value] : best)
    if (const Param* p = space.find(name); p && p->kind == Param::Kind::Api) api.push_back(name + "=" + value);
  if (json) {
    std::cout << nlohmann::json{{"session", x.id},
                                {"config", best},
                                {"env", env},
                                {"api_controls", api},
                                {"shim", shim.empty() ? nlohmann::json(nullptr) : nlohmann::json(shim)}}
                     .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    for (const auto& line : export_lines(env)) std::cout << line << "\n";
    if (env.empty()) std::cerr << "# the default configuration is the best found: nothing to set\n";
  }
  // The notes go to stderr, so that stdout stays what a shell can `eval`.
  if (!api.empty()) {
    std::string names;
    for (auto& a : api) names += (names.empty() ? "" : ", ") + a;
    std::cerr << "# API controls (" << names << ") are called by the preload shim: LD_PRELOAD and "
              << "SYSPILOT_SHIM_CALLS above apply them to the program started from this shell\n";
    if (shim.empty())
      std::cerr << "# warning: the shim (libsyspilot_shim.so) was not found: build or install syspilot, or set "
                   "SYSPILOT_SHIM to its path\n";
  }
  return kOk;
}

void add_db(CLI::App* cmd, SessionsArgs& a) {
  cmd->add_option("--db", a.db,
                  "Store holding the sessions (default: $SYSPILOT_DB, else $XDG_DATA_HOME/syspilot/syspilot.db, "
                  "else ~/.local/share/syspilot/syspilot.db)");
}

CommandRegistration reg(65, [](CLI::App& app, Context& ctx) {
  auto* sessions = app.add_subcommand("sessions", "Tuning sessions kept in the store: list, show, export");
  sessions->require_subcommand(1);

  auto l = std::make_shared<SessionsArgs>();
  auto* list = sessions->add_subcommand("list", "List tuning sessions, newest first");
  list->add_flag("--json", l->json, "Print JSON");
  add_db(list, *l);
  list->callback([l] {
    if (!store_exists(l->db)) {
      if (l->json) std::cout << "[]\n";
      else std::cerr << "no tuning sessions (no store at " << db_path(l->db) << ")\n";
      return;
    }
    print_list(*open_sessions(l->db), l->json);
  });

  auto s = std::make_shared<SessionsArgs>();
  auto* show = sessions->add_subcommand(
      "show", "Show a session: command, objective, budget, space, every trial with its configuration and value or "
              "failure, the best and its speedup");
  show->add_option("ID", s->id, "Session id (syspilot sessions list)")->required();
  show->add_flag("--json", s->json, "Print the session as JSON (the form the service serves)");
  add_db(show, *s);
  show->callback([s] {
    auto st = open_existing(s->db, s->id);
    SessionInfo x = find_session(*st, s->id);
    print_show(x, st->trials(x.id), s->json);
  });

  auto e = std::make_shared<SessionsArgs>();
  auto* exp = sessions->add_subcommand(
      "export", "Print a session's best configuration as `export NAME=VALUE` lines (exit 1 when no trial succeeded)");
  exp->add_option("ID", e->id, "Session id (syspilot sessions list)")->required();
  exp->add_flag("--json", e->json, "Print the configuration and its environment as JSON");
  add_db(exp, *e);
  exp->callback([e, &ctx] {
    auto st = open_existing(e->db, e->id);
    SessionInfo x = find_session(*st, e->id);
    ctx.exit_code = print_export(x, st->trials(x.id), e->json);
  });
});

}  // namespace
}  // namespace syspilot::cli
