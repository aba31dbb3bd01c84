// The Debian feed offline: real source packages built here with dpkg-source, served by an
// apt-get stand-in on PATH that fails like the mirror for revisions it no longer serves, so a
// release falls back to another revision of the same upstream version, newest first.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "service/regen.h"
#include "service/schema.h"
#include "store/store.h"
#include "tests/service/fixture.h"

namespace syspilot::service::test {
namespace {

using nlohmann::json;

struct DebianFeed : ::testing::Test {
  TempDir tmp;
  std::string saved_path;

  void SetUp() override { saved_path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"; }
  void TearDown() override { setenv("PATH", saved_path.c_str(), 1); }

  fs::path archive() const { return tmp.path() / "archive"; }
  fs::path log() const { return tmp.path() / "apt.log"; }

  // A real "3.0 (quilt)" source package foo_<upstream>-<revision>.dsc under archive/<version>/;
  // `signed_upstream`: with the upstream tarball's signature beside it (orig.tar.gz.asc), as
  // many Debian packages carry.
  void build_package(const std::string& upstream, const std::string& revision, bool signed_upstream = false) {
    std::string version = upstream + "-" + revision;
    fs::path work = tmp.path() / "pkg" / version;
    fs::path tree = work / ("foo-" + upstream);
    write_foo_release(tree, upstream);
    ASSERT_TRUE(sh({"tar", "-czf", "foo_" + upstream + ".orig.tar.gz", "foo-" + upstream}, work.string()).ok());
    if (signed_upstream)
      write_file(work / ("foo_" + upstream + ".orig.tar.gz.asc"),
                 "-----BEGIN PGP SIGNATURE-----\n\niQEzBAABCAAdFiEE\n=abcd\n-----END PGP SIGNATURE-----\n");
    write_file(tree / "debian" / "source" / "format", "3.0 (quilt)\n");
    write_file(tree / "debian" / "changelog", "foo (" + version +
                                                  ") unstable; urgency=medium\n\n  * Release.\n\n"
                                                  " -- T <t@example.org>  Mon, 01 Jan 2024 00:00:00 +0000\n");
    write_file(tree / "debian" / "control",
               "Source: foo\nMaintainer: T <t@example.org>\n\nPackage: foo\nArchitecture: any\n"
               "Description: test\n test\n");
    auto r = sh({"dpkg-source", "-b", "foo-" + upstream}, work.string());
    ASSERT_TRUE(r.ok()) << r.err;
    fs::create_directories(archive() / version);
    for (auto& e : fs::directory_iterator(work))
      if (e.is_regular_file()) fs::copy_file(e.path(), archive() / version / e.path().filename());
  }

  // apt-cache lists `listed`; apt-get serves what archive/ holds and answers like the
  // mirror (404, exit 100) for the rest. Both log their calls.
  void install_fake_apt(const std::vector<std::string>& listed) {
    fs::path bin = tmp.path() / "bin";
    std::string versions;
    for (auto& v : listed) versions += v + " ";
    write_file(bin / "apt-cache", "#!/bin/sh\nfor v in " + versions +
                                      "; do printf 'Package: foo\\nBinary: foo\\nVersion: %s\\n\\n' \"$v\"; done\n");
    write_file(bin / "apt-get",
               "#!/bin/sh\ncmd=''; last=''\n"
               "for a in \"$@\"; do case \"$a\" in update|source) cmd=$a;; esac; last=$a; done\n"
               "echo \"$cmd $last\" >> '" + log().string() + "'\n"
               "case \"$cmd\" in\n"
               "update) exit 0;;\n"
               "source) ver=${last#*=}\n"
               "  if [ -d '" + archive().string() + "'/\"$ver\" ]; then cp '" + archive().string() + "'/\"$ver\"/* .; exit 0; fi\n"
               "  echo \"E: Failed to fetch http://deb.debian.org/debian/pool/main/f/foo/foo_$ver.dsc  404  Not Found\" >&2\n"
               "  echo 'E: Failed to fetch some archives.' >&2; exit 100;;\n"
               "esac\nexit 1\n");
    chmod((bin / "apt-cache").c_str(), 0755);
    chmod((bin / "apt-get").c_str(), 0755);
    setenv("PATH", (bin.string() + ":" + saved_path).c_str(), 1);
  }

  RegenConfig config() {
    json j = {{"work_dir", tmp.str("work")},
              {"libraries", {{{"name", "foo"}, {"feeds", {{{"kind", "debian-source"}, {"package", "foo"}}}}}}}};
    RegenConfig cfg;
    Diagnostics d;
    EXPECT_TRUE(parse_regen_config(j, tmp.str("regen.json"), cfg, d)) << d.str();
    return cfg;
  }

  std::vector<std::string> source_calls() {
    std::vector<std::string> out;
    std::istringstream in(read_file(log()));
    for (std::string line; std::getline(in, line);)
      if (line.rfind("source ", 0) == 0) out.push_back(line.substr(7));
    return out;
  }
};

TEST_F(DebianFeed, ListsRevisionsNewestFirstAsFallbacks) {
  install_fake_apt({"1.0.0-1", "1.0.0-3", "1.0.0-2", "1.1.0-2"});
  RegenConfig cfg = config();
  std::vector<Release> releases;
  Diagnostics d;
  ASSERT_TRUE(list_releases(cfg.libraries[0], policy_of(cfg), releases, d)) << d.str();
  ASSERT_EQ(releases.size(), 2u);
  EXPECT_EQ(releases[0].version, "1.0.0");
  EXPECT_EQ(releases[0].source.version, "1.0.0-3");
  EXPECT_EQ(releases[0].source.fallback_versions, (std::vector<std::string>{"1.0.0-2", "1.0.0-1"}));
  EXPECT_EQ(releases[1].source.version, "1.1.0-2");
  EXPECT_TRUE(releases[1].source.fallback_versions.empty());
}

TEST_F(DebianFeed, UnservedRevisionFallsBackToAServedOne) {
  build_package("1.0.0", "1");
  build_package("1.1.0", "2");
  install_fake_apt({"1.0.0-1", "1.0.0-2", "1.0.0-3", "1.1.0-2"});  // 1.0.0-3 and -2: 404
  store::Store st = open_store(tmp.str("db.sqlite"));
  RegenReport r = regenerate(st, config());
  ASSERT_FALSE(r.failed()) << r.summary();
  ASSERT_EQ(r.outcomes.size(), 2u) << r.summary();
  EXPECT_EQ(r.outcomes[0].status, "stored") << r.summary();
  EXPECT_EQ(r.outcomes[1].status, "stored") << r.summary();
  // Newest revision first, then the others in order, and nothing after the one that worked.
  EXPECT_EQ(source_calls(), (std::vector<std::string>{"foo=1.0.0-3", "foo=1.0.0-2", "foo=1.0.0-1", "foo=1.1.0-2"}));
  // Provenance names the revision used and the ones that were not served.
  const std::string& src = r.outcomes[0].source;
  EXPECT_NE(src.find("foo=1.0.0-1"), std::string::npos) << src;
  EXPECT_NE(src.find("1.0.0-3"), std::string::npos) << src;
  EXPECT_NE(r.outcomes[0].diags.str().find("revision-fallback"), std::string::npos) << r.outcomes[0].diags.str();
  EXPECT_NE(r.changelog_markdown().find("debian-source foo=1.0.0-1"), std::string::npos) << r.changelog_markdown();
  EXPECT_NE(r.summary().find("fetched foo=1.0.0-1 instead of 1.0.0-3"), std::string::npos) << r.summary();
  EXPECT_EQ(r.outcomes[1].source, "debian-source foo=1.1.0-2");
  // The stored diff sees the spin knob 1.1.0 added.
  EXPECT_NE(lpcl::to_text(r.outcomes[1].diff).find("FOO_SPIN_TIMEOUT"), std::string::npos);
}

TEST_F(DebianFeed, ReleaseFailsOnlyWhenNoRevisionIsServed) {
  build_package("1.1.0", "2");
  install_fake_apt({"1.0.0-1", "1.0.0-3", "1.1.0-2"});  // neither 1.0.0 revision is served
  store::Store st = open_store(tmp.str("db.sqlite"));
  RegenReport r = regenerate(st, config());
  EXPECT_TRUE(r.failed());
  ASSERT_EQ(r.outcomes.size(), 2u) << r.summary();
  EXPECT_EQ(r.outcomes[0].status, "failed");
  std::string why = r.outcomes[0].diags.str();
  EXPECT_NE(why.find("no Debian revision of foo 1.0.0-3 or its other revisions could be downloaded"), std::string::npos)
      << why;
  EXPECT_NE(why.find("1.0.0-1 (apt-get source foo=1.0.0-1 failed (exit 100"), std::string::npos) << why;
  EXPECT_NE(why.find("apt-cache showsrc foo"), std::string::npos) << why;  // what to do
  EXPECT_EQ(r.outcomes[1].status, "stored") << r.summary();                 // the others go on
  EXPECT_EQ(st.versions("foo").size(), 1u);
}

// The upstream signature beside the tarball is part of the package, not an archive to list:
// the release is stored.
TEST_F(DebianFeed, AnUpstreamSignatureIsNotTakenForAnArchive) {
  build_package("1.0.0", "1", true);
  ASSERT_TRUE(fs::exists(archive() / "1.0.0-1" / "foo_1.0.0.orig.tar.gz.asc"));
  install_fake_apt({"1.0.0-1"});
  store::Store st = open_store(tmp.str("db.sqlite"));
  RegenReport r = regenerate(st, config());
  ASSERT_EQ(r.outcomes.size(), 1u) << r.summary();
  EXPECT_EQ(r.outcomes[0].status, "stored") << r.summary();
}

}  // namespace
}  // namespace syspilot::service::test
