// Regeneration over a git repository with tagged releases made here: new releases are built
// in version order and diffed, a second run does nothing, unchanged inputs cost no
// extraction and no LLM call, and the configuration rejects what it cannot use.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "extract/extract.h"
#include "lpcl/lpcl.h"
#include "service/regen.h"
#include "service/schema.h"
#include "store/store.h"
#include "synth/synth.h"
#include "tests/service/fixture.h"
#include "tests/support/fake_llm.h"

namespace syspilot::service::test {
namespace {

using nlohmann::json;

struct Regen : ::testing::Test {
  TempDir tmp;
  std::string repo;
  void SetUp() override { repo = make_foo_repo(tmp.path() / "root" / "foo.git"); }

  RegenConfig config(const json& extra = json::object()) {
    json j = {{"source_roots", {tmp.str("root")}},
              {"work_dir", tmp.str("work")},
              {"libraries", {{{"name", "foo"}, {"feeds", {{{"kind", "git"}, {"url", repo}}}}}}}};
    j.update(extra);
    RegenConfig cfg;
    Diagnostics d;
    EXPECT_TRUE(parse_regen_config(j, tmp.str("regen.json"), cfg, d)) << d.str();
    return cfg;
  }
};

TEST_F(Regen, BuildsNewReleasesInOrderAndDiffsThem) {
  store::Store st = open_store(tmp.str("db.sqlite"));
  RegenReport r = regenerate(st, config());
  ASSERT_FALSE(r.failed()) << r.summary();
  ASSERT_EQ(r.outcomes.size(), 2u) << r.summary();  // nightly-build does not match the tag pattern
  EXPECT_EQ(r.outcomes[0].version, "1.0.0");
  EXPECT_EQ(r.outcomes[0].status, "stored");
  EXPECT_TRUE(r.outcomes[0].previous_version.empty());
  EXPECT_EQ(r.outcomes[1].version, "1.1.0");
  EXPECT_EQ(r.outcomes[1].previous_version, "1.0.0");
  // 1.1.0 added a getenv of FOO_SPIN_TIMEOUT: the semantic diff must say so.
  std::string text = lpcl::to_text(r.outcomes[1].diff);
  EXPECT_NE(text.find("FOO_SPIN_TIMEOUT"), std::string::npos) << text;
  EXPECT_EQ(st.versions("foo").size(), 2u);

  std::string md = r.changelog_markdown();
  EXPECT_NE(md.find("## foo"), std::string::npos);
  EXPECT_NE(md.find("### 1.1.0 (changes since 1.0.0)"), std::string::npos) << md;
  EXPECT_NE(md.find("FOO_SPIN_TIMEOUT"), std::string::npos) << md;

  // Nothing new: nothing done.
  RegenReport again = regenerate(st, config());
  EXPECT_TRUE(again.outcomes.empty());
  EXPECT_EQ(again.up_to_date, std::vector<std::string>{"foo"});
}

TEST_F(Regen, UnchangedInputCostsNoExtractionAndNoLlmCall) {
  testsupport::FakeLlmServer llm;
  // Answer every prompt with the offline draft of the facts, as a good model would.
  SourcePolicy policy = policy_of(config());
  policy.outbound.allow = {"127.0.0.1"};  // the fake endpoint is on loopback, denied by default
  FetchedSource src;
  Diagnostics d;
  SourceSpec spec;
  spec.kind = SourceSpec::Kind::Git;
  spec.url = repo;
  spec.ref = "v1.0.0";
  ASSERT_TRUE(fetch_source(spec, policy, src, d)) << d.str();
  extract::ExtractOptions eo;
  eo.paths = {src.dir};
  eo.library = "foo";
  synth::SynthOptions so;
  so.library = "foo";
  so.version = "1.0.0";
  std::string draft = lpcl::format(synth::draft_offline(extract::extract(eo), so));
  llm.fallback(testsupport::ScriptedReply::answer("```lpcl\n" + draft + "\n```"));

  store::Store st = open_store(tmp.str("db.sqlite"));
  ReleaseRequest req{"foo", "1.0.0", spec, synth::LlmConfig{}, false, {}};
  req.llm->url = llm.url();
  req.llm->model = "test-model";
  ReleaseOutcome first = build_release(st, policy, req);
  ASSERT_EQ(first.status, "stored") << first.diags.str();
  EXPECT_FALSE(first.facts_cached);
  size_t calls = llm.request_count();
  EXPECT_GE(calls, 1u);
  EXPECT_GE(first.llm_calls, 1);

  // Same input again: recognised by its git tree, nothing redone.
  ReleaseOutcome second = build_release(st, policy, req);
  EXPECT_EQ(second.status, "unchanged");
  EXPECT_TRUE(second.input_cached);
  EXPECT_EQ(second.contract_digest, first.contract_digest);
  EXPECT_EQ(llm.request_count(), calls);

  // Forced rebuild of the same input: facts from the cache, the answer from the store's cache.
  req.force = true;
  ReleaseOutcome forced = build_release(st, policy, req);
  ASSERT_EQ(forced.status, "stored") << forced.diags.str();
  EXPECT_TRUE(forced.facts_cached);
  EXPECT_EQ(forced.llm_calls, 0);
  EXPECT_GE(forced.llm_cached, 1);
  EXPECT_EQ(llm.request_count(), calls);
}

TEST_F(Regen, OnlyNamedVersionsAndLibrariesAreBuilt) {
  store::Store st = open_store(tmp.str("db.sqlite"));
  json lib = {{"name", "foo"}, {"feeds", {{{"kind", "git"}, {"url", repo}, {"versions", {"1.1.0"}}}}}};
  RegenReport r = regenerate(st, config({{"libraries", {lib}}}));
  ASSERT_EQ(r.outcomes.size(), 1u) << r.summary();
  EXPECT_EQ(r.outcomes[0].version, "1.1.0");
  RegenReport unknown = regenerate(st, config(), "bar");
  EXPECT_TRUE(unknown.failed());
  EXPECT_EQ(unknown.diags.items().front().code, "not-tracked");
}

TEST_F(Regen, DirFeedFindsReleaseFolders) {
  write_foo_release(tmp.path() / "root" / "releases" / "foo-1.0.0", "1.0.0");
  write_foo_release(tmp.path() / "root" / "releases" / "foo-1.2.0", "1.2.0");
  fs::create_directories(tmp.path() / "root" / "releases" / "notes");
  json lib = {{"name", "foo"}, {"feeds", {{{"kind", "dir"}, {"path", tmp.str("root/releases")}}}}};
  std::vector<Release> rel;
  Diagnostics d;
  RegenConfig cfg = config({{"libraries", {lib}}});
  ASSERT_TRUE(list_releases(cfg.libraries[0], policy_of(cfg), rel, d)) << d.str();
  ASSERT_EQ(rel.size(), 2u);
  EXPECT_EQ(rel[0].version, "1.0.0");
  EXPECT_EQ(rel[1].version, "1.2.0");
}

TEST_F(Regen, FailedFetchIsReportedAndOthersGoOn) {
  store::Store st = open_store(tmp.str("db.sqlite"));
  json libs = {{{"name", "gone"}, {"feeds", {{{"kind", "git"}, {"url", tmp.str("root/missing.git")}}}}},
               {{"name", "foo"}, {"feeds", {{{"kind", "git"}, {"url", repo}}}}}};
  RegenReport r = regenerate(st, config({{"libraries", libs}}));
  EXPECT_TRUE(r.failed());
  EXPECT_TRUE(r.diags.has_errors());
  EXPECT_EQ(r.outcomes.size(), 2u) << r.summary();
}

// A library's reviewed overlay is applied to every release it builds; the overlay is part of
// the input, so editing it rebuilds the contract (from the cached facts) where an unchanged
// input would be skipped.
TEST_F(Regen, OverlaysAreAppliedAndAnEditedOverlayRebuilds) {
  std::string overlay = tmp.str("foo.lpcl");
  auto write_overlay = [&](int max_threads) {
    std::ofstream(overlay) << "# Reviewed against foo's README.\n"
                              "contract foo \"1.0.0\" {\n"
                              "  control FOO_NUM_THREADS : env int in [1, "
                           << max_threads
                           << "] default 4 read_at init sets cpu.threads;\n"
                              "}\n"
                              "# drop: control FOO_SPIN_TIMEOUT\n"
                              "# drop: behavior spin_wait\n";
  };
  write_overlay(64);
  RegenConfig cfg = config({{"libraries", {{{"name", "foo"},
                                            {"overlays", {"foo.lpcl"}},
                                            {"feeds", {{{"kind", "git"}, {"url", repo}}}}}}}});
  ASSERT_EQ(cfg.libraries.at(0).overlays, std::vector<std::string>{overlay});
  store::Store st = open_store(tmp.str("db.sqlite"));
  RegenReport r = regenerate(st, cfg);
  ASSERT_FALSE(r.failed()) << r.summary();
  ASSERT_EQ(r.outcomes.size(), 2u) << r.summary();
  EXPECT_TRUE(r.outcomes[1].converged) << r.outcomes[1].diags.str();
  for (const char* v : {"1.0.0", "1.1.0"}) {
    auto rec = st.get_contract("foo", v);
    ASSERT_TRUE(rec) << v;
    EXPECT_NE(rec->lpcl.find("in [1, 64]"), std::string::npos) << rec->lpcl;
    EXPECT_EQ(rec->lpcl.find("FOO_SPIN_TIMEOUT"), std::string::npos) << rec->lpcl;
  }
  // The dropped control is no change between the releases.
  EXPECT_EQ(lpcl::to_text(r.outcomes[1].diff).find("FOO_SPIN_TIMEOUT"), std::string::npos);

  SourcePolicy policy = policy_of(cfg);
  SourceSpec spec;
  spec.kind = SourceSpec::Kind::Git;
  spec.url = repo;
  spec.ref = "v1.1.0";
  ReleaseRequest req{"foo", "1.1.0", spec, std::nullopt, false, cfg.libraries[0].overlays};
  ReleaseOutcome same = build_release(st, policy, req);
  EXPECT_EQ(same.status, "unchanged") << same.diags.str();
  write_overlay(32);
  ReleaseOutcome edited = build_release(st, policy, req);
  ASSERT_EQ(edited.status, "stored") << edited.diags.str();
  EXPECT_TRUE(edited.facts_cached);
  EXPECT_NE(edited.input_digest, same.input_digest);
  EXPECT_NE(edited.contract_digest, same.contract_digest);
  EXPECT_NE(st.get_contract("foo", "1.1.0")->lpcl.find("in [1, 32]"), std::string::npos);
}

TEST(RegenConfig, RejectsWhatItCannotUse) {
  auto errors = [](const json& j) {
    RegenConfig cfg;
    Diagnostics d;
    parse_regen_config(j, "/etc/syspilot/regen.json", cfg, d);
    return d.str();
  };
  EXPECT_NE(errors(json::array()).find("must be an object"), std::string::npos);
  EXPECT_NE(errors({{"libraries", 3}}).find("libraries"), std::string::npos);
  EXPECT_NE(errors({{"librarys", json::array()}}).find("unknown key"), std::string::npos);
  EXPECT_NE(errors({{"libraries", {{{"name", "x"}, {"feeds", {{{"kind", "svn"}}}}}}}}).find("unknown feed kind"),
            std::string::npos);
  EXPECT_NE(errors({{"llm", {{"url", "http://x"}, {"api_key", "sk-1"}}}, {"libraries", json::array()}})
                .find("API keys do not belong"),
            std::string::npos);
  EXPECT_NE(errors({{"libraries", {{{"name", "x"}, {"feeds", {{{"kind", "git"}, {"url", "u"}, {"tag_pattern", "("}}}}}}}})
                .find("invalid regular expression"),
            std::string::npos);
  EXPECT_NE(errors({{"libraries", {{{"name", "x"}, {"overlays", {"overlays/x.lpcl"}}, {"feeds", {{{"kind", "git"}, {"url", "u"}}}}}}}})
                .find("no such overlay file: /etc/syspilot/overlays/x.lpcl"),
            std::string::npos);
  // Relative paths resolve against the config file.
  RegenConfig cfg;
  Diagnostics d;
  ASSERT_TRUE(parse_regen_config({{"store", "db.sqlite"}, {"libraries", json::array()}}, "/srv/cfg/regen.json", cfg, d));
  EXPECT_EQ(cfg.db_path, "/srv/cfg/db.sqlite");
  EXPECT_EQ(cfg.work_dir, "/srv/cfg/.syspilot-work");
}

}  // namespace
}  // namespace syspilot::service::test
