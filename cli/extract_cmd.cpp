// `syspilot extract PATH...`: facts from a library's sources, headers, docs and binaries,
// as a human-readable summary or as JSON (--json, schema in docs/facts.md).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "cli/command.h"
#include "extract/evaluate.h"
#include "extract/extract.h"

namespace syspilot::cli {
namespace {

struct ExtractArgs {
  std::vector<std::string> paths;
  std::string lib;
  std::vector<std::string> includes;
  unsigned threads = 0;
  bool json = false, progress = false, stats = false, no_api = false, all_notes = false;
  size_t max_file_mb = 256;
  std::string output;
  std::string expected;
  std::string scope = "library";
};

void print_summary(const extract::Facts& f, std::ostream& os) {
  os << "library " << f.library << ": " << f.files_scanned << " files, " << f.bytes_scanned / 1000000.0 << " MB scanned\n";
  os << "\nenvironment variables (" << f.env_vars.size() << " reads):\n";
  std::map<std::string, std::vector<const extract::EnvRead*>> by_name;
  for (auto& e : f.env_vars) by_name[e.name].push_back(&e);
  for (auto& [name, reads] : by_name) {
    auto* e = reads.front();
    os << "  " << name << "  type=" << e->type;
    if (!e->default_value.empty()) os << " default=" << e->default_value;
    os << "  " << e->file << ":" << e->line;
    if (!e->function.empty()) os << " in " << e->function;
    os << " via " << e->via;
    if (reads.size() > 1) os << " (+" << reads.size() - 1 << " more)";
    os << "\n";
  }
  os << "\nAPI controls (" << f.api_controls.size() << "):\n";
  for (auto& a : f.api_controls) os << "  [" << a.category << "] " << a.signature << "  " << a.file << ":" << a.line << "\n";
  std::map<std::string, int> kinds;
  for (auto& t : f.threading) ++kinds[t.kind];
  os << "\nthreading (" << f.threading.size() << "):";
  for (auto& [k, n] : kinds) os << " " << k << "=" << n;
  os << "\n";
  for (auto& t : f.threading)
    if (t.kind == "pool_init") os << "  pool start: " << t.function << " at " << t.file << ":" << t.line << "\n";
  std::set<std::string> doc_names;
  for (auto& d : f.doc_mentions) doc_names.insert(d.name);
  os << "\ndoc mentions: " << f.doc_mentions.size() << " of " << doc_names.size() << " names\n";
  for (auto& b : f.binaries) {
    os << "\nbinary " << b.path << " (soname " << b.soname << ")\n  needs:";
    for (auto& n : b.needed) os << " " << n;
    os << "\n  imports:";
    for (auto& n : b.imports) os << " " << n;
    os << "\n  exports:";
    for (auto& n : b.exports) os << " " << n;
    os << "\n  knob strings:";
    for (auto& n : b.knob_strings) os << " " << n;
    os << "\n";
  }
}

void run(const ExtractArgs& a, Context& ctx) {
  for (auto& p : a.paths)
    if (!std::filesystem::exists(p)) throw UsageError("extract: no such file or folder: " + p);
  extract::ExtractOptions opt;
  opt.paths = a.paths;
  opt.library = a.lib;
  opt.include_dirs = a.includes;
  opt.threads = a.threads;
  opt.progress = a.progress;
  opt.api_controls = !a.no_api;
  opt.max_file_bytes = a.max_file_mb << 20;
  try {
    extract::scopes(a.scope);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("extract: --scope: ") + e.what());
  }
  opt.scope = a.scope;
  extract::ExtractStats stats;
  opt.stats = &stats;
  extract::Facts f = extract::extract(opt);

  size_t notes = 0;
  for (auto& d : f.diagnostics.items()) {
    if (d.severity == Severity::Note && !a.all_notes) { ++notes; continue; }
    std::cerr << d.str() << "\n";
  }
  if (notes) std::cerr << "extract: " << notes << " note(s) not shown (skipped non-source files, invalid UTF-8, ...); --notes shows them\n";

  std::ofstream file;
  if (!a.output.empty()) {
    file.open(a.output);
    if (!file) throw UsageError("extract: cannot write " + a.output);
  }
  std::ostream& os = a.output.empty() ? std::cout : file;
  if (a.stats) {
    double scan = stats.walk_scan_s > 0 ? stats.walk_scan_s : 1e-9;
    double total = stats.walk_scan_s + stats.resolve_s + stats.api_s;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "files %zu (listed %zu), %.1f MB, threads %u\n"
                  "walk+scan %.2f s: %.0f files/s, %.1f MB/s\n"
                  "wrapper analysis %.2f s, libclang headers %.2f s, total %.2f s: %.0f files/s, %.1f MB/s\n",
                  f.files_scanned, stats.files_listed, f.bytes_scanned / 1e6, stats.threads, stats.walk_scan_s,
                  f.files_scanned / scan, f.bytes_scanned / 1e6 / scan, stats.resolve_s, stats.api_s, total,
                  f.files_scanned / (total > 0 ? total : 1e-9), f.bytes_scanned / 1e6 / (total > 0 ? total : 1e-9));
    std::cerr << buf;
  }
  if (!a.expected.empty()) {
    extract::ExpectedList want;
    try {
      want = extract::load_expected(a.expected);
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
    auto env = extract::score(want.env, extract::env_names(f));
    std::cerr << "score " << f.library << " env: " << env.str() << "\n";
    for (auto& m : env.missed) std::cerr << "  missed env " << m << "\n";
    for (auto& x : env.extra) std::cerr << "  extra env " << x << "\n";
    if (want.has_api) {
      auto api = extract::score(want.api, extract::api_names(f));
      std::cerr << "score " << f.library << " api: " << api.str() << "\n";
      for (auto& m : api.missed) std::cerr << "  missed api " << m << "\n";
      for (auto& x : api.extra) std::cerr << "  extra api " << x << "\n";
    }
  }
  if (a.json) os << extract::to_json(f).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  else print_summary(f, os);
  ctx.exit_code = f.files_scanned == 0 && f.diagnostics.has_errors() ? kUsage : kOk;
}

CommandRegistration reg(20, [](CLI::App& app, Context& ctx) {
  auto args = std::make_shared<ExtractArgs>();
  auto* cmd = app.add_subcommand("extract", "Facts from a library's sources, headers, docs and shared objects");
  cmd->add_option("paths", args->paths, "Source folders, headers, doc files or .so files")->required();
  cmd->add_option("--lib", args->lib, "Library name (default: from the first path)");
  cmd->add_flag("--json", args->json, "Print facts as JSON (schema: docs/facts.md)");
  cmd->add_option("-I,--include", args->includes, "Extra include folder for parsing public headers");
  cmd->add_option("--threads", args->threads, "Scanner threads (default: all cores)");
  cmd->add_flag("--progress", args->progress, "Progress on stderr");
  cmd->add_flag("--stats", args->stats, "Benchmark figures on stderr: files/s and MB/s per phase");
  cmd->add_flag("--no-api", args->no_api, "Skip the libclang pass over public headers");
  cmd->add_flag("--notes", args->all_notes, "Show every note diagnostic, not only their count");
  cmd->add_option("--max-file-mb", args->max_file_mb, "Skip files larger than this (default 256)");
  cmd->add_option("-o,--output", args->output, "Write the facts to this file instead of stdout");
  cmd->add_option("--scope", args->scope,
                  "Facts kept, by the code they come from: library (default), all, or a comma list of "
                  "library, tool, test, example, bench, build");
  cmd->add_option("--expected", args->expected,
                  "Score against an expected list (tests/extract/expected/*.txt): precision and recall on stderr");
  cmd->callback([args, &ctx] { run(*args, ctx); });
});

}  // namespace
}  // namespace syspilot::cli
