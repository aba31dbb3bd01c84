// The corpus: every contract checks, binds a soname, is what the pipeline regenerates from
// its committed facts and overlay, grounds every knob, and covers the expected knob lists.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "extract/facts.h"
#include "lpcl/lpcl.h"
#include "synth/synth.h"

namespace syspilot::synth {
namespace {
namespace fs = std::filesystem;

const std::string kCorpus = std::string(SYSPILOT_SOURCE_DIR) + "/corpus";
const std::string kExpected = std::string(SYSPILOT_SOURCE_DIR) + "/tests/synth/expected";

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> libraries() {
  auto j = nlohmann::json::parse(slurp(kCorpus + "/sources.json"));
  std::vector<std::string> out;
  for (auto& l : j["libraries"]) out.push_back(l["library"]);
  return out;
}

extract::Facts facts_of(const std::string& lib) {
  return extract::facts_from_json(nlohmann::json::parse(slurp(kCorpus + "/facts/" + lib + ".json")));
}

SynthOptions options_of(const std::string& lib) {
  auto j = nlohmann::json::parse(slurp(kCorpus + "/sources.json"));
  SynthOptions o;
  o.library = lib;
  for (auto& l : j["libraries"])
    if (l["library"] == lib) o.version = l["version"];
  const std::string overlay = kCorpus + "/overlays/" + lib + ".lpcl";
  if (fs::exists(overlay)) o.overlays.push_back(overlay);
  return o;
}

std::vector<std::string> expected_knobs(const std::string& lib) {
  std::vector<std::string> out;
  std::ifstream in(kExpected + "/" + lib + ".txt");
  std::string line;
  while (std::getline(in, line)) {
    auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream ls(line);
    std::string k;
    if (ls >> k) out.push_back(k);
  }
  return out;
}

TEST(Corpus, AtLeastTwelveLibrariesEachChecksAndBindsASoname) {
  auto libs = libraries();
  EXPECT_GE(libs.size(), 12u);
  for (auto& lib : libs) {
    SCOPED_TRACE(lib);
    Diagnostics d;
    auto doc = lpcl::parse_file(kCorpus + "/" + lib + ".lpcl", d);
    ASSERT_FALSE(d.has_errors()) << d.str();
    ASSERT_EQ(doc.contracts.size(), 1u);
    EXPECT_TRUE(lpcl::check(doc, d)) << d.str();
    EXPECT_EQ(d.warning_count(), 0u) << d.str();
    const auto& c = doc.contracts[0];
    EXPECT_EQ(c.name, lib);
    bool soname = false;
    for (auto& b : c.bindings) soname |= b.kind == "soname";
    EXPECT_TRUE(soname) << "no `binds soname`";
    EXPECT_FALSE(c.controls.empty());
  }
}

TEST(Corpus, RegeneratesFromCommittedFactsAndOverlays) {
  for (auto& lib : libraries()) {
    SCOPED_TRACE(lib);
    auto r = synthesize(facts_of(lib), options_of(lib), nullptr);
    EXPECT_TRUE(r.converged) << r.open.str();
    EXPECT_EQ(r.text, slurp(kCorpus + "/" + lib + ".lpcl")) << "run scripts/regen-corpus.sh";
  }
}

// Every knob in a corpus contract is in its facts, or was added by a reviewer (origin manual).
TEST(Corpus, NoInventedKnob) {
  for (auto& lib : libraries()) {
    SCOPED_TRACE(lib);
    Diagnostics d;
    auto doc = lpcl::parse_file(kCorpus + "/" + lib + ".lpcl", d);
    ASSERT_EQ(doc.contracts.size(), 1u);
    auto c = doc.contracts[0];
    std::erase_if(c.controls, [](auto& x) { return x.prov.origin == lpcl::Origin::Manual; });
    for (auto& x : validate(c, facts_of(lib), false).items())
      EXPECT_NE(x.code.rfind("invented", 0), 0u) << x.str();
  }
}

TEST(Corpus, CoversTheExpectedThreadAffinityAndSpinKnobs) {
  size_t want = 0, have = 0, drafted = 0;
  std::vector<std::string> undrafted;
  for (auto& lib : libraries()) {
    auto knobs = expected_knobs(lib);
    ASSERT_FALSE(knobs.empty()) << "tests/synth/expected/" << lib << ".txt";
    Diagnostics d;
    auto doc = lpcl::parse_file(kCorpus + "/" + lib + ".lpcl", d);
    ASSERT_EQ(doc.contracts.size(), 1u) << lib;
    SynthOptions bare = options_of(lib);
    bare.overlays.clear();
    auto draft = draft_offline(facts_of(lib), bare);
    for (auto& k : knobs) {
      ++want;
      if (doc.contracts[0].find_control(k)) ++have;
      else ADD_FAILURE() << lib << ": expected knob " << k << " is missing";
      if (draft.find_control(k)) ++drafted;
      else undrafted.push_back(lib + ":" + k);
    }
    // The drafter alone invents nothing: every control it writes is in the facts.
    for (auto& x : validate(draft, facts_of(lib), false).items())
      EXPECT_NE(x.code.rfind("invented", 0), 0u) << lib << " (drafter alone): " << x.str();
  }
  const double coverage = double(have) / want;
  std::cout << "corpus coverage of expected knobs: " << have << "/" << want << " = " << coverage * 100
            << "%; by the offline drafter alone (no overlay): " << drafted << "/" << want << " = "
            << 100.0 * drafted / want << "%\n";
  for (auto& u : undrafted) std::cout << "  not drafted: " << u << "\n";
  EXPECT_GE(coverage, 0.95);
  EXPECT_GE(double(drafted) / want, 0.95) << "the offline drafter alone must cover the expected knobs";
}

}  // namespace
}  // namespace syspilot::synth
