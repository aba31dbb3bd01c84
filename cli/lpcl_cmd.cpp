// LPCL subcommands: check, fmt, to-json, from-json, diff. Thin wrappers over lpcl/lpcl.h.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "lpcl/lpcl.h"
#include "lpcl/syntax.h"

namespace syspilot::cli {
namespace {

// A diagnostic about reading the file (missing, too large) rather than its content.
bool input_problem(const Diagnostics& d) {
  for (auto& x : d.items())
    if (x.code == "io-error" || x.code == "file-too-large") return true;
  return false;
}

// The whole input, at most 64 MiB (standard input, a FIFO or a device has no size to check first).
std::string read_all(const std::string& path) {
  std::string text;
  bool whole = true;
  if (path == "-") {
    whole = lpcl::read_bounded(std::cin, lpcl::kMaxFileBytes, text);
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UsageError("cannot read '" + path + "'");
    whole = lpcl::read_bounded(in, lpcl::kMaxFileBytes, text);
  }
  if (!whole)
    throw UsageError("'" + (path == "-" ? std::string("<stdin>") : path) + "' is larger than 64 MiB; LPCL files are limited to 64 MiB");
  return text;
}

// Parses FILE; on a syntax or input error prints the diagnostics and throws exit 2.
// `text`, when given, receives the input (stdin can be read only once).
lpcl::Document parse_or_fail(const std::string& path, std::string* text = nullptr) {
  Diagnostics d;
  lpcl::Document doc;
  if (text) {
    std::error_code ec;
    if (path != "-" && std::filesystem::file_size(path, ec) > (64u << 20) && !ec)
      throw UsageError("'" + path + "' is larger than 64 MiB; LPCL files are limited to 64 MiB");
    *text = read_all(path);
    doc = lpcl::parse(*text, path == "-" ? "<stdin>" : path, d);
  } else {
    doc = lpcl::parse_file(path, d);
  }
  if (d.has_errors()) {
    d.print(std::cerr);
    throw UsageError("'" + path + "' has errors; nothing was done");
  }
  return doc;
}

void register_check(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("check", "Parse and check LPCL files; print diagnostics (exit 1 on errors)");
  auto files = std::make_shared<std::vector<std::string>>();
  auto quiet = std::make_shared<bool>(false);
  cmd->add_option("FILE", *files, "LPCL files ('-' for stdin)")->required();
  cmd->add_flag("-q,--quiet", *quiet, "Print errors only, no warnings or summary");
  cmd->callback([files, quiet, &ctx] {
    size_t errors = 0, warnings = 0;
    bool unreadable = false;
    for (auto& f : *files) {
      Diagnostics d;
      lpcl::Document doc = lpcl::parse_file(f, d);
      if (input_problem(d)) unreadable = true;
      if (!d.has_errors()) lpcl::check(doc, d);
      print_diagnostics(f, d, *quiet);
      errors += d.error_count();
      warnings += d.warning_count();
    }
    if (!*quiet)
      std::cerr << files->size() << " file(s) checked: " << errors << " error(s), " << warnings << " warning(s)\n";
    ctx.exit_code = unreadable ? kUsage : errors ? kFindings : kOk;
  });
}

void register_fmt(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("fmt", "Print LPCL files in canonical form (or check / rewrite them)");
  auto files = std::make_shared<std::vector<std::string>>();
  auto check = std::make_shared<bool>(false);
  auto write = std::make_shared<bool>(false);
  cmd->add_option("FILE", *files, "LPCL files ('-' for stdin)")->required();
  cmd->add_flag("--check", *check, "Print nothing; exit 1 if a file is not in canonical form");
  cmd->add_flag("-w,--write", *write, "Rewrite the files in place");
  cmd->callback([files, check, write, &ctx] {
    for (auto& f : *files) {
      if (*write && f == "-") throw UsageError("-w cannot rewrite stdin");
      std::string original;
      std::string formatted = lpcl::format(parse_or_fail(f, &original));
      if (*check) {
        if (formatted != original) {
          std::cerr << f << ": not in canonical form (run: syspilot fmt -w " << f << ")\n";
          ctx.exit_code = kFindings;
        }
      } else if (*write) {
        if (formatted != original) write_file_atomically(f, formatted);
      } else {
        std::cout << formatted;
      }
    }
  });
}

void register_json(CLI::App& app, Context& ctx) {
  auto* to = app.add_subcommand("to-json", "Print the JSON form of an LPCL file (schema: docs/lpcl.md)");
  auto file = std::make_shared<std::string>();
  auto compact = std::make_shared<bool>(false);
  to->add_option("FILE", *file, "LPCL file ('-' for stdin)")->required();
  to->add_flag("--compact", *compact, "One line instead of indented JSON");
  to->callback([file, compact] {
    auto j = lpcl::to_json(parse_or_fail(*file));
    std::cout << j.dump(*compact ? -1 : 2) << '\n';
  });

  auto* from = app.add_subcommand("from-json", "Print the LPCL text of a JSON contract file");
  auto jfile = std::make_shared<std::string>();
  from->add_option("FILE", *jfile, "JSON file ('-' for stdin)")->required();
  from->callback([jfile] {
    std::string text = read_all(*jfile);
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) throw UsageError("'" + *jfile + "' is not valid JSON");
    Diagnostics d;
    lpcl::Document doc = lpcl::from_json(j, *jfile == "-" ? "<stdin>" : *jfile, d);
    if (d.has_errors()) {
      d.print(std::cerr);
      throw UsageError("'" + *jfile + "' is not an LPCL JSON document; nothing was done");
    }
    std::cout << lpcl::format(doc);
  });
  (void)ctx;
}

void register_diff(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand("diff", "Semantic difference between two LPCL files (exit 0 either way)");
  auto old_file = std::make_shared<std::string>();
  auto new_file = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  cmd->add_option("OLD", *old_file, "the older LPCL file")->required();
  cmd->add_option("NEW", *new_file, "the newer LPCL file")->required();
  cmd->add_flag("--json", *as_json, "Print the changes as JSON");
  cmd->callback([old_file, new_file, as_json] {
    if (*old_file == "-" && *new_file == "-") throw UsageError("only one of OLD and NEW can be stdin");
    auto d = lpcl::diff(parse_or_fail(*old_file), parse_or_fail(*new_file));
    if (*as_json) std::cout << lpcl::to_json(d).dump(2) << '\n';
    else std::cout << lpcl::to_text(d);
  });
  (void)ctx;
}

CommandRegistration reg(10, [](CLI::App& app, Context& ctx) {
  register_check(app, ctx);
  register_fmt(app, ctx);
  register_json(app, ctx);
  register_diff(app, ctx);
});

}  // namespace
}  // namespace syspilot::cli
