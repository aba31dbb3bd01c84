// `syspilot trial-run --spec SPEC.json --out RESULT.json` (hidden): what a Slurm job of
// `syspilot tune --executor slurm` runs on its node (tuner/slurm.h). One run of the spec's
// configuration by the live objective, as a local session runs it; the measurement and the
// node's name are written to RESULT atomically, so the submitter never reads half a result.
// A spec with an "analysis" object is the session's analysis job: RESULT is the analysis' JSON.
// A spec with a "regen" object is a release of `syspilot regen --executor slurm`: RESULT is the
// release fetched, extracted and drafted (service::run_regen_job), for the submitter to store.
// Exit codes: 0 the result was written (whether the run succeeded or not), 2 no spec or no result.
#include <CLI/CLI.hpp>

#include <fstream>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "tuner/slurm.h"
#ifdef SYSPILOT_HAVE_SERVICE_PIPELINE
#include "service/regen.h"
#endif

namespace syspilot::cli {
namespace {

CommandRegistration reg(95, [](CLI::App& app, Context& ctx) {
  auto spec = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("trial-run", "Run one trial's run as a Slurm job of `tune --executor slurm` does");
  cmd->group("");  // internal: the jobs of the Slurm executor start it, not people
  cmd->add_option("--spec", *spec, "The trial spec the submitter wrote")->required();
  cmd->add_option("--out", *out, "Where to write the result")->required();
  cmd->callback([spec, out, &ctx] {
    std::ifstream in(*spec, std::ios::binary);
    if (!in) throw UsageError("cannot read the trial spec '" + *spec + "': is --slurm-dir on a filesystem this node shares?");
    std::ostringstream text;
    text << in.rdbuf();
#ifdef SYSPILOT_HAVE_SERVICE_PIPELINE
    // A job of `regen --executor slurm`: one release fetched, extracted and drafted here.
    try {
      if (auto result = service::run_regen_job(text.str())) {
        write_file_atomically(*out, *result);
        ctx.exit_code = kOk;
        return;
      }
    } catch (const std::exception& e) {
      throw UsageError(*spec + ": " + e.what());
    }
#endif
    tuner::TrialSpec s;
    std::optional<tuner::AnalysisSpec> analysis;
    try {
      analysis = tuner::analysis_spec_from_json(text.str());
      if (!analysis) s = tuner::trial_spec_from_json(text.str());
    } catch (const std::exception& e) {
      throw UsageError(*spec + ": " + e.what());
    }
    // The analysis job of `tune --executor slurm`: the analysis' JSON is its result.
    if (analysis) write_file_atomically(*out, tuner::run_analysis(*analysis));
    else write_file_atomically(*out, tuner::trial_result_to_json(tuner::run_trial(s)));
    ctx.exit_code = kOk;
  });
});

}  // namespace
}  // namespace syspilot::cli
