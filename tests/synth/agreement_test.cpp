// The drafter's agreement with reviewed contracts: each field counted where it differs, and the
// benchmark command over the committed corpus.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lpcl/lpcl.h"
#include "synth/synth.h"

namespace syspilot::synth {
namespace {

lpcl::Contract parse_one(const std::string& text) {
  Diagnostics d;
  auto doc = lpcl::parse(text, "t.lpcl", d);
  EXPECT_FALSE(d.has_errors()) << d.str();
  return doc.contracts.at(0);
}

// What `syspilot synth-bench ARGS` prints (stdout and stderr).
std::string bench_output(const std::string& args) {
  const std::string cmd = std::string(SYSPILOT_BINARY_DIR) + "/syspilot synth-bench " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  if (!p) return out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p.get())) out.append(buf.data(), n);
  return out;
}

TEST(Agreement, CountsEachFieldWhereDraftAndReviewDiffer) {
  auto drafted = parse_one(
      "contract x \"1\" {\n"
      "  control A_THREADS : env int in [1, ncpus] default 4 sets cpu.threads;\n"
      "  control A_POLICY : env string sets cpu.spin;\n"
      "  control A_DEBUG : env bool;\n"
      "  demand cpu.threads = A_THREADS ?? ncpus;\n"
      "  provides region omp_parallel;\n"
      "}\n");
  auto reviewed = parse_one(
      "contract x \"1\" {\n"
      "  control A_THREADS : env int in [1, ncpus] default 1 sets cpu.threads;\n"
      "  control A_POLICY : env enum{active, passive} sets cpu.spin, cpu.cores;\n"
      "  control A_ARENAS : env int in [1, 64] sets mem.arenas;\n"
      "  demand cpu.threads = A_THREADS ?? 1;\n"
      "  provides region omp_parallel;\n"
      "}\n");
  Agreement a = agreement(drafted, reviewed);
  EXPECT_EQ(a.reviewed, 3);
  EXPECT_EQ(a.named, 2);          // A_ARENAS was not drafted
  EXPECT_EQ(a.type, 1);           // A_POLICY: string, reviewed as an enum
  EXPECT_EQ(a.domain, 2);         // the same range; no domain on either side of A_POLICY (an enum lists its values in the type)
  EXPECT_EQ(a.default_value, 1);  // A_THREADS: 4 against 1; A_POLICY: neither has one
  EXPECT_EQ(a.sets, 1);           // A_POLICY gained cpu.cores
  EXPECT_EQ(a.dropped, 1);        // A_DEBUG
  EXPECT_EQ(a.demands, 1);
  EXPECT_EQ(a.demands_same, 0);
  EXPECT_EQ(a.provides, 1);
  EXPECT_EQ(a.provides_same, 1);
  // A contract agrees with itself on everything.
  Agreement self = agreement(reviewed, reviewed);
  EXPECT_EQ(self.named, 3);
  EXPECT_EQ(self.type + self.domain + self.default_value + self.sets, 12);
  EXPECT_EQ(self.dropped, 0);
  EXPECT_EQ(self.demands_same, 1);
}

// Each difference is listed with both values, one line per control and field.
TEST(Agreement, ListsEachDifferenceWithBothValues) {
  auto drafted = parse_one(
      "contract x \"1\" {\n"
      "  control A_THREADS : env int in [1, ncpus] default 4 sets cpu.threads;\n"
      "  control A_POLICY : env string sets cpu.spin;\n"
      "  control A_ARENAS : env int sets mem.arenas;\n"
      "}\n");
  auto reviewed = parse_one(
      "contract x \"1\" {\n"
      "  control A_THREADS : env int in [1, ncpus] default 1 sets cpu.threads;\n"
      "  control A_POLICY : env enum{active, passive} sets cpu.spin, cpu.cores;\n"
      "  control A_ARENAS : env int in [1, 64] sets mem.arenas;\n"
      "}\n");
  Agreement a = agreement(drafted, reviewed);
  std::vector<std::string> want = {
      "A_THREADS default: drafted 4; reviewed 1",
      "A_POLICY type: drafted string; reviewed enum{active, passive}",
      "A_POLICY sets: drafted cpu.spin; reviewed cpu.cores, cpu.spin",
      "A_ARENAS domain: drafted none; reviewed in [1, 64]",
  };
  EXPECT_EQ(a.differences, want);
  EXPECT_EQ(static_cast<int>(a.differences.size()), 4 * a.named - a.type - a.domain - a.default_value - a.sets);
  EXPECT_TRUE(agreement(reviewed, reviewed).differences.empty());
  Agreement sum;
  sum += a;
  sum += a;
  EXPECT_EQ(sum.differences.size(), 8u);
}

// --differences lists, after the table, as many lines as the fields the table counts as differing.
TEST(Agreement, BenchmarkListsTheDifferencesItCounts) {
  const std::string out = bench_output("--agreement --differences");
  ASSERT_FALSE(out.empty());
  auto all = out.find("| all | ");
  ASSERT_NE(all, std::string::npos) << out;
  // | all | reviewed | named/x | type/named | domain/named | default/named | sets/named | ...
  std::istringstream row(out.substr(all, out.find('\n', all) - all));
  std::string cell;
  std::vector<int> firsts;
  while (std::getline(row, cell, '|'))
    if (!cell.empty() && std::isdigit(static_cast<unsigned char>(cell[cell.find_first_not_of(' ')]))) firsts.push_back(std::stoi(cell));
  ASSERT_GE(firsts.size(), 6u) << out;
  const int named = firsts[1], agreeing = firsts[2] + firsts[3] + firsts[4] + firsts[5];
  const std::string title = "Where a drafted control differs from the reviewed one (";
  auto head = out.find(title);
  ASSERT_NE(head, std::string::npos) << out;
  EXPECT_EQ(std::stoi(out.substr(head + title.size())), 4 * named - agreeing) << out;
  int lines = 0;
  std::istringstream rest(out.substr(head));
  std::string line;
  while (std::getline(rest, line)) lines += line.rfind("  ", 0) == 0 && line.find(": drafted ") != std::string::npos;
  EXPECT_EQ(lines, 4 * named - agreeing) << out;
}

// The benchmark prints one row per corpus library and a total whose counts add up.
TEST(Agreement, BenchmarkCoversEveryCorpusLibrary) {
  const std::string out = bench_output("--agreement");
  ASSERT_FALSE(out.empty());
  std::ifstream in(std::string(SYSPILOT_SOURCE_DIR) + "/corpus/sources.json");
  auto sources = nlohmann::json::parse(in);
  int reviewed = 0, rows = 0;
  for (auto& lib : sources["libraries"]) {
    const std::string row = "| " + lib["library"].get<std::string>() + " | ";
    auto at = out.find(row);
    ASSERT_NE(at, std::string::npos) << lib["library"] << "\n" << out;
    reviewed += std::stoi(out.substr(at + row.size()));
    ++rows;
  }
  EXPECT_GE(rows, 12);
  auto all = out.find("| all | ");
  ASSERT_NE(all, std::string::npos) << out;
  EXPECT_EQ(std::stoi(out.substr(all + 8)), reviewed) << out;
  // The share reviewers wrote, counted here from the corpus files themselves.
  int manual = 0, controls = 0, manual_demands = 0, demands = 0;
  for (auto& lib : sources["libraries"]) {
    Diagnostics d;
    auto doc = lpcl::parse_file(std::string(SYSPILOT_SOURCE_DIR) + "/corpus/" + lib["library"].get<std::string>() + ".lpcl", d);
    ASSERT_FALSE(d.has_errors()) << d.str();
    for (auto& c : doc.contracts.at(0).controls) controls += 1, manual += c.prov.origin == lpcl::Origin::Manual;
    for (auto& c : doc.contracts.at(0).demands) demands += 1, manual_demands += c.prov.origin == lpcl::Origin::Manual;
  }
  EXPECT_EQ(controls, reviewed);
  EXPECT_NE(out.find("Written by reviewers (origin manual) in the reviewed corpus: controls " + std::to_string(manual) +
                     "/" + std::to_string(controls) + " ("),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(", demands " + std::to_string(manual_demands) + "/" + std::to_string(demands) + " ("),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace syspilot::synth
