// `syspilot analyze -- APP ARGS...`: compose the application's libraries and contracts, derive
// hypotheses, profile to confirm or refute them; report text or --json (docs/analysis.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/checks.h"
#include "cli/command.h"
#include "tuner/analyze.h"
#include "tuner/run.h"
#include "tuner/session.h"
#ifdef HAVE_SYSPILOT_STORE
#include "store/store.h"
#endif

namespace syspilot::cli {
namespace {

struct AnalyzeArgs {
  std::vector<std::string> app;
  std::string source, manifest, db, rules;
  std::vector<std::string> contracts, env;
  bool json = false, quiet = false, no_probe = false, no_profile = false, no_synth = false, no_store = false;
  double timeout = 60;
  int repeats = 1;
  int overhead = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The profiling-overhead benchmark: the application with and without sampling, interleaved.
int measure_overhead(const AnalyzeArgs& a, const std::map<std::string, std::string>& env) {
  std::vector<double> plain, sampled, sampler_cpu;
  for (int i = 0; i < a.overhead; ++i) {
    for (bool with : {false, true}) {
      tuner::RunSpec s;
      s.argv = a.app;
      s.env_set = env;
      s.timeout_s = a.timeout;
      s.perf = with;
      s.sample_interval_s = with ? 0.02 : 0;
      auto r = tuner::run(s);
      if (!r.ok()) {
        std::cerr << "syspilot analyze: the application failed during the overhead benchmark: " << r.failure << "\n";
        return kFindings;
      }
      (with ? sampled : plain).push_back(r.wall_s);
      if (with) sampler_cpu.push_back(r.sampler_cpu_s / std::max(1e-6, r.wall_s));
    }
  }
  double p = median(plain), s = median(sampled);
  std::printf("runs: %d interleaved pairs\n", a.overhead);
  std::printf("median wall without profiling: %.4f s\n", p);
  std::printf("median wall with profiling:    %.4f s\n", s);
  std::printf("wall overhead: %+.2f%%\n", (s / p - 1) * 100);
  std::printf("profiler CPU / wall: %.2f%% of one CPU\n", median(sampler_cpu) * 100);
  return kOk;
}

std::string default_db() {
#ifdef HAVE_SYSPILOT_STORE
  std::string p = store::default_db_path();
  std::error_code ec;
  return std::filesystem::exists(p, ec) ? p : "";
#else
  return "";
#endif
}

// Keeps the analysis in the store, where `syspilot serve` (and its dashboard) reads it: the
// --db store, else the default one. A store that cannot be written costs a warning, not the
// analysis.
void keep_analysis(const AnalyzeArgs& a, const tuner::Analysis& an) {
#ifdef HAVE_SYSPILOT_STORE
  std::string db = a.db.empty() ? store::default_db_path() : a.db;
  try {
    tuner::SessionStore sessions(db);
    auto id = sessions.add_analysis(a.app, "analyze", tuner::to_json(an).dump(-1, ' ', false,
                                                                               nlohmann::json::error_handler_t::replace));
    if (!a.quiet) std::cerr << "analyze: analysis " << id << " kept in " << db << "\n";
  } catch (const std::exception& e) {
    std::cerr << "analyze: warning: the analysis was not kept in " << db << ": " << e.what() << "\n";
  }
#endif
}

void register_analyze(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<AnalyzeArgs>();
  auto* cmd = app.add_subcommand(
      "analyze",
      "Find which of an application's libraries will fight, why, and confirm or refute it by measurement.\n"
      "Usage: syspilot analyze [OPTIONS] -- APP [ARGS...]. Exit 0: analysed (confirmed hypotheses are in the\n"
      "report, not the exit status); 1: the application failed (crashed, hung) or the analysis could not be\n"
      "done; 2: bad input.");
  cmd->add_option("app", a->app, "The application and its arguments (put them after --)")->required();
  cmd->add_option("--source", a->source, "Application source folder, scanned for library calls inside parallel regions");
  cmd->add_option("--manifest", a->manifest, "Libraries and nesting stated by hand (format: docs/analysis.md)");
  cmd->add_option("--contracts", a->contracts, "Folder of *.lpcl contracts (repeatable; default: corpus/)");
  cmd->add_option("--db", a->db, "Contract store searched before the folders (default: the store, when it exists)");
  cmd->add_option("--rules", a->rules, "Folder of hypothesis rules (default: tuner/rules/)");
  cmd->add_option("--env", a->env, "NAME=VALUE set for every run of the application (repeatable)");
  cmd->add_option("--timeout", a->timeout, "Seconds before a run is killed with its whole process group")
      ->check(finite_number())
      ->check(CLI::PositiveNumber);
  cmd->add_option("--repeats", a->repeats, "Interleaved default/probe rounds; medians decide")->check(CLI::Range(1, 20));
  cmd->add_flag("--json", a->json, "Print the analysis as JSON (schema: docs/analysis.md)");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress lines on standard error");
  cmd->add_flag("--no-probe", a->no_probe, "Only the default run; verdicts needing a probe stay unknown");
  cmd->add_flag("--no-profile", a->no_profile, "Compose and derive hypotheses without running the application");
  cmd->add_flag("--no-synth", a->no_synth, "Do not draft contracts for libraries that have none");
  cmd->add_flag("--no-store", a->no_store,
                "Do not keep the analysis in the store (--db, else the default store), where `syspilot serve` shows it");
  cmd->add_option("--overhead", a->overhead,
                  "Benchmark: N interleaved runs with and without profiling; print the overhead")
      ->check(CLI::Range(1, 100));
  cmd->callback([a, &ctx] {
    std::map<std::string, std::string> env;
    for (auto& kv : a->env) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) throw UsageError("--env expects NAME=VALUE, got '" + kv + "'");
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    if (a->overhead > 0) {
      ctx.exit_code = measure_overhead(*a, env);
      return;
    }
    tuner::AnalyzeOptions o;
    o.compose.binary = a->app.front();
    // Resolve a bare name through PATH, as the run will.
    if (std::string found = tuner::find_on_path(o.compose.binary); !found.empty()) o.compose.binary = found;
    std::error_code ec;
    if (std::string why = application_problem(a->app.front(), o.compose.binary); !why.empty()) throw UsageError(why);
    if (!a->source.empty() && !std::filesystem::is_directory(a->source, ec))
      throw UsageError("--source '" + a->source + "' is not a folder");
    if (!a->manifest.empty() && !std::filesystem::is_regular_file(a->manifest, ec))
      throw UsageError("--manifest '" + a->manifest + "' cannot be read");
    o.compose.args = a->app;  // a script, or process counts in the arguments (docs/analysis.md, Processes)
    o.compose.source_dir = a->source;
    o.compose.manifest = a->manifest;
    o.compose.contract_dirs = a->contracts;
    o.compose.store_path = a->db.empty() ? default_db() : a->db;
    o.compose.synthesize = !a->no_synth;
    o.compose.env = env;
    o.rules_dir = a->rules;
    if (!a->no_profile) {
      o.profile.run.argv = a->app;
      o.profile.run.env_set = env;
      o.profile.run.timeout_s = a->timeout;
      o.profile.probes = !a->no_probe;
      o.profile.repeats = a->repeats;
      if (!a->quiet) o.profile.progress = [](const std::string& line) { std::cerr << "analyze: " << line << "\n"; };
    }
    tuner::Analysis an = tuner::analyze(o);
    for (auto& d : an.diagnostics.items())
      if (d.code == "bad-manifest" || d.code == "bad-binary" || d.code == "no-rules" || d.code == "bad-rule" ||
          d.code == "bad-region-rules" || d.code == "bad-source-dir") {
        an.diagnostics.print(std::cerr);
        ctx.exit_code = kUsage;
        return;
      }
    if (!a->no_store) keep_analysis(*a, an);
    if (a->json) {
      std::cout << tuner::to_json(an).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      std::cout << tuner::to_text(an);
      if (!an.diagnostics.empty()) {
        std::cerr << "\n";
        an.diagnostics.print(std::cerr);
      }
    }
    // Confirmed hypotheses are the report's findings, not a failure: a script reads them from
    // --json. Exit 1 says the application itself failed (or the analysis could not be done).
    ctx.exit_code = an.diagnostics.has_errors() ? kAppFailed : kOk;
  });
}

CommandRegistration reg(50, register_analyze);

}  // namespace
}  // namespace syspilot::cli
