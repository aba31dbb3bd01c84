// `syspilot serve` (the HTTP API, with `serve token create|list|revoke`) and `syspilot regen`
// (one regeneration run for cron: exit status, summary, Markdown changelog).
// Registered only when synthesis is part of the build (see service/CMakeLists.txt).
#ifdef SYSPILOT_HAVE_SERVICE_PIPELINE
#include <algorithm>
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli/command.h"
#include "service/regen.h"
#include "tuner/slurm.h"
#include "service/schema.h"
#include "service/service.h"
#include "store/store.h"

namespace syspilot::cli {
namespace {

// "24h", "30m", "90s", "2d" or plain seconds.
std::chrono::seconds parse_period(const std::string& text) {
  static const std::regex re("^([0-9]+)([smhd]?)$");
  std::smatch m;
  if (!std::regex_match(text, m, re) || std::stoll(m[1]) == 0)
    throw UsageError("--regen-every: '" + text + "' is not a period; use e.g. 24h, 30m, 3600s");
  long long n = std::stoll(m[1]);
  char unit = m[2].str().empty() ? 's' : m[2].str()[0];
  long long mult = unit == 'd' ? 86400 : unit == 'h' ? 3600 : unit == 'm' ? 60 : 1;
  return std::chrono::seconds(n * mult);
}

std::string db_or_default(const std::string& db) { return db.empty() ? store::default_db_path() : db; }

struct ServeArgs {
  service::ServiceOptions o;
  std::string regen_every;
  std::string token_scope = "read", token_label;
  long long revoke_id = 0;
};

const CommandRegistration serve_registration(80, [](CLI::App& app, Context& ctx) {
  auto args = std::make_shared<ServeArgs>();
  auto& o = args->o;
  CLI::App* serve = app.add_subcommand("serve", "Serve the contract store over HTTP(S) with bearer-token auth");
  serve->add_option("--db", o.db_path, "SQLite store (default: $SYSPILOT_DB or the XDG data folder)");
  serve->add_option("--host", o.host, "address to listen on")->capture_default_str();
  serve->add_option("--port", o.port, "port (0: any free port, printed on start)")->capture_default_str();
  serve->add_option("--tls-cert", o.tls_cert, "PEM certificate: serve HTTPS only")->check(CLI::ExistingFile);
  serve->add_option("--tls-key", o.tls_key, "PEM private key for --tls-cert")->check(CLI::ExistingFile);
  serve->add_flag("--public-read", o.public_read, "allow GET requests without a token");
  serve->add_option("--source-root", o.source_roots, "directory that dir/tarball/local git sources must lie in (repeatable)")
      ->check(CLI::ExistingDirectory);
  serve->add_option("--allow-outbound", o.allow_outbound,
                    "internal address, CIDR or host name that git, tarball and LLM URLs may reach (repeatable; "
                    "loopback, private and link-local ranges are refused otherwise)");
  serve->add_option("--work-dir", o.work_dir, "where fetched sources are cached (default: beside the store)");
  serve->add_option("--workers", o.workers, "jobs running at once")->capture_default_str();
  serve->add_option("--queue", o.queue_capacity, "jobs waiting before POST answers 429")->capture_default_str();
  serve->add_option("--max-connections,--http-threads", o.limits.max_connections,
                    "connections open at once (503 beyond)")
      ->capture_default_str();
  serve->add_option("--max-client-connections", o.limits.max_per_client,
                    "connections open at once from one address (503 beyond)")
      ->capture_default_str();
  serve->add_option("--proxy-addr", o.limits.uncapped_clients,
                    "address of a reverse proxy on this host, exempt from --max-client-connections (repeatable; "
                    "'none': cap every address)")
      ->capture_default_str();
  serve->add_option("--header-timeout", o.limits.header_timeout_s,
                    "seconds from a request's first byte (or TLS hello) to the end of its head (408 beyond)")
      ->capture_default_str();
  serve->add_option("--idle-timeout", o.limits.idle_timeout_s, "seconds a keep-alive connection may wait idle")
      ->capture_default_str();
  serve->add_option("--body-timeout", o.limits.body_timeout_s, "seconds from the end of a head to the end of its body")
      ->capture_default_str();
  serve->add_option("--max-body", o.limits.max_body_bytes, "largest request body in bytes (413 beyond)")
      ->capture_default_str();
  serve->add_option("--max-header-bytes", o.limits.max_header_bytes, "all request headers together (431 beyond)")
      ->capture_default_str();
  serve->add_option("--regen-config", o.regen_config, "tracked libraries and feeds (JSON, see docs/service.md)")
      ->check(CLI::ExistingFile);
  serve->add_option("--regen-every", args->regen_every, "run regeneration on this period (24h, 30m, ...)");
  serve->add_option("--grace", o.shutdown_grace_s, "seconds running jobs get on SIGTERM")->capture_default_str();
  serve->add_flag("--access-log", o.access_log, "one line per request on stderr");
  serve->require_subcommand(0, 1);

  CLI::App* token = serve->add_subcommand("token", "Create, list and revoke bearer tokens");
  token->require_subcommand(1);
  CLI::App* create = token->add_subcommand("create", "Create a token and print it once");
  create->add_option("--scope", args->token_scope, "read or write")->check(CLI::IsMember({"read", "write"}))
      ->capture_default_str();
  create->add_option("--label", args->token_label, "who or what the token is for");
  create->add_option("--db", o.db_path, "SQLite store");
  CLI::App* list = token->add_subcommand("list", "List tokens (prefixes only; tokens are stored hashed)");
  list->add_option("--db", o.db_path, "SQLite store");
  CLI::App* revoke = token->add_subcommand("revoke", "Revoke a token by id");
  revoke->add_option("id", args->revoke_id, "token id from `token list`")->required();
  revoke->add_option("--db", o.db_path, "SQLite store");

  create->callback([args, &ctx] {
    std::string t = service::create_token(db_or_default(args->o.db_path),
                                          *service::scope_from_string(args->token_scope), args->token_label);
    std::cout << t << "\n";
    std::cerr << "syspilot: token created with scope " << args->token_scope
              << "; it is shown only now (the store keeps its SHA-256)\n";
    ctx.exit_code = kOk;
  });
  list->callback([args, &ctx] {
    for (auto& t : service::list_tokens(db_or_default(args->o.db_path)))
      std::cout << t.id << "\t" << t.prefix << "...\t" << service::to_string(t.scope) << "\t" << t.created_at
                << "\t" << (t.revoked_at.empty() ? "valid" : "revoked " + t.revoked_at) << "\t" << t.label << "\n";
    ctx.exit_code = kOk;
  });
  revoke->callback([args, &ctx] {
    if (!service::revoke_token(db_or_default(args->o.db_path), args->revoke_id)) {
      std::cerr << "syspilot: no valid token with id " << args->revoke_id << " (see: syspilot serve token list)\n";
      ctx.exit_code = kFindings;
      return;
    }
    std::cerr << "syspilot: token " << args->revoke_id << " revoked\n";
    ctx.exit_code = kOk;
  });

  serve->callback([serve, token, args, &ctx] {
    if (token->parsed()) return;
    if (!args->regen_every.empty()) {
      args->o.regen_every = parse_period(args->regen_every);
      if (args->o.regen_config.empty()) throw UsageError("--regen-every needs --regen-config FILE");
    }
    args->o.db_path = db_or_default(args->o.db_path);
    auto& proxies = args->o.limits.uncapped_clients;
    proxies.erase(std::remove(proxies.begin(), proxies.end(), std::string("none")), proxies.end());
    bool tls = !args->o.tls_cert.empty();
    std::string host = args->o.host;
    ctx.exit_code = service::serve_until_signalled(args->o, [tls, host](int port) {
      std::cout << "syspilot serve: listening on " << (tls ? "https" : "http") << "://" << host << ":" << port
                << std::endl;
    });
  });
});

struct RegenArgs {
  std::string config, db, library, changelog;
  bool json = false;
  std::string executor = "local";  // local | slurm (docs/cluster.md)
  std::string partition, slurm_dir;
  std::vector<std::string> slurm_args;
};

const CommandRegistration regen_registration(81, [](CLI::App& app, Context& ctx) {
  auto a = std::make_shared<RegenArgs>();
  CLI::App* cmd = app.add_subcommand(
      "regen", "Build contracts for every new upstream release of the tracked libraries (once, for cron)");
  cmd->add_option("--config", a->config, "tracked libraries and feeds (JSON, see docs/service.md)")->required();
  cmd->add_option("--db", a->db, "SQLite store (default: the config's \"store\", then $SYSPILOT_DB)");
  cmd->add_option("--library", a->library, "only this tracked library");
  cmd->add_option("--changelog", a->changelog, "write the Markdown changelog here (default: the config's)");
  cmd->add_flag("--json", a->json, "print the report as JSON instead of the summary");
  cmd->add_option("--executor", a->executor,
                  "where releases are built: local (default), or slurm: one Slurm job per release, stored here "
                  "(docs/cluster.md)")
      ->check(CLI::IsMember({"local", "slurm"}));
  cmd->add_option("--partition", a->partition, "Slurm partition of the jobs (--executor slurm)");
  cmd->add_option("--slurm-arg", a->slurm_args,
                  "one more sbatch argument for every job, e.g. --slurm-arg=--account=A (repeatable; --executor slurm)")
      ->allow_extra_args(false);
  cmd->add_option("--slurm-dir", a->slurm_dir,
                  "folder of the jobs' specs, results, output and fetched sources, on a filesystem the nodes share "
                  "(default: beside the store, DB.slurm/regen)");
  cmd->callback([a, &ctx] {
    Diagnostics diags;
    service::RegenConfig cfg;
    if (!service::load_regen_config(a->config, cfg, diags)) {
      diags.print(std::cerr);
      ctx.exit_code = kUsage;
      return;
    }
    std::string db = !a->db.empty() ? a->db : !cfg.db_path.empty() ? cfg.db_path : store::default_db_path();
    store::Store st = service::open_store(db);
    if (a->executor != "slurm" && (!a->partition.empty() || !a->slurm_args.empty() || !a->slurm_dir.empty()))
      throw UsageError("--partition, --slurm-arg and --slurm-dir need --executor slurm");
    service::RegenReport report;
    if (a->executor == "slurm") {
      tuner::SlurmOptions so;
      so.partition = a->partition;
      so.args = a->slurm_args;
      std::error_code ec;
      so.dir = std::filesystem::absolute(a->slurm_dir.empty() ? db + ".slurm/regen" : a->slurm_dir, ec).string();
      so.syspilot = std::filesystem::read_symlink("/proc/self/exe", ec).string();
      std::unique_ptr<tuner::SlurmCluster> cluster;
      try {
        cluster = std::make_unique<tuner::SlurmCluster>(so);
      } catch (const std::runtime_error& e) {
        throw UsageError(e.what());
      }
      service::ClusterRegen how;
      how.cluster = cluster.get();
      how.dir = so.dir;
      how.config_path = a->config;
      how.note = [](const std::string& line) { std::cerr << "  [slurm] " << line << "\n"; };
      report = service::regenerate_on_cluster(st, cfg, how, a->library);
    } else {
      report = service::regenerate(st, cfg, a->library, {}, [](const std::string& stage, double, const std::string& line) {
        if (!line.empty()) std::cerr << "  [" << stage << "] " << line << "\n";
      });
    }
    std::string md = report.changelog_markdown();
    std::string path = a->changelog.empty() ? cfg.changelog : a->changelog;
    if (!path.empty()) {
      std::ofstream out(path, std::ios::trunc);
      out << md;
      if (!out) std::cerr << "syspilot: cannot write the changelog to " << path << "\n";
    }
    if (a->json) std::cout << to_json(report).dump(2) << "\n";
    else std::cout << report.summary() << (path.empty() ? "\n" + md : "changelog: " + path + "\n");
    ctx.exit_code = report.failed() ? kFindings : kOk;
  });
});

}  // namespace
}  // namespace syspilot::cli
#endif  // SYSPILOT_HAVE_SERVICE_PIPELINE
