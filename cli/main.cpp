// The `syspilot` command: a thin layer over the stage libraries. Subcommands come from
// the cli/*_cmd.cpp files through CommandRegistration.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <vector>

#include "cli/command.h"

#ifndef SYSPILOT_VERSION
#define SYSPILOT_VERSION "unknown"  // cli/CMakeLists.txt defines it from project(VERSION)
#endif

namespace syspilot::cli {
namespace {
std::vector<std::pair<int, Register>>& registry() {
  static std::vector<std::pair<int, Register>> r;
  return r;
}
}  // namespace

CommandRegistration::CommandRegistration(int order, Register fn) {
  registry().emplace_back(order, std::move(fn));
}

}  // namespace syspilot::cli

int main(int argc, char** argv) {
  using namespace syspilot::cli;
  CLI::App app{"SysPilot: cross-library performance autotuning through Library Performance Contracts"};
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", std::string("syspilot ") + SYSPILOT_VERSION, "Print the version and exit");
  Context ctx;
  auto& reg = registry();
  std::stable_sort(reg.begin(), reg.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (auto& [order, fn] : reg) fn(app, ctx);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kUsage;
  } catch (const UsageError& e) {
    std::cerr << "syspilot: error: " << e.what() << "\n";
    return kUsage;
  } catch (const NothingToDo& e) {
    std::cerr << "syspilot: " << e.what() << "\n";
    return kNothingToDo;
  } catch (const AppFailed& e) {
    std::cerr << "syspilot: error: " << e.what() << "\n";
    return kAppFailed;
  } catch (const std::exception& e) {
    std::cerr << "syspilot: error: " << e.what() << "\n";
    return kFindings;
  }
  return ctx.exit_code;
}
