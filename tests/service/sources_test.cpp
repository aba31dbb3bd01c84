// Source inputs: validation before anything runs (roots, traversal, symlinks, option
// injection, URL schemes), the process runner's limits, digests and version order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "service/regen.h"
#include "service/sources.h"
#include "tests/service/fixture.h"

namespace syspilot::service::test {
namespace {

struct Sources : ::testing::Test {
  TempDir tmp;
  SourcePolicy policy;
  void SetUp() override {
    fs::create_directories(tmp.path() / "root" / "lib");
    fs::create_directories(tmp.path() / "outside");
    policy.roots = {tmp.str("root")};
    policy.work_dir = tmp.str("work");
  }
  // The code of the first error, or "" when the source is valid.
  std::string check(const nlohmann::json& j) {
    SourceSpec s;
    Diagnostics d;
    if (!parse_source(j, s, d) || !validate_source(s, policy, d)) return d.items().front().code;
    return "";
  }
};

TEST_F(Sources, DirInsideRootIsAccepted) {
  EXPECT_EQ(check({{"kind", "dir"}, {"path", tmp.str("root/lib")}}), "");
}

TEST_F(Sources, DotDotIsRejectedEvenWhenItResolvesInside) {
  EXPECT_EQ(check({{"kind", "dir"}, {"path", tmp.str("root/lib/../lib")}}), "path-traversal");
  EXPECT_EQ(check({{"kind", "dir"}, {"path", tmp.str("root/../outside")}}), "path-traversal");
}

TEST_F(Sources, PathsOutsideEveryRootAreRejected) {
  EXPECT_EQ(check({{"kind", "dir"}, {"path", tmp.str("outside")}}), "path-traversal");
  EXPECT_EQ(check({{"kind", "dir"}, {"path", "/etc"}}), "path-traversal");
}

TEST_F(Sources, SymlinkLeadingOutIsRejected) {
  fs::create_directory_symlink(tmp.path() / "outside", tmp.path() / "root" / "escape");
  EXPECT_EQ(check({{"kind", "dir"}, {"path", tmp.str("root/escape")}}), "path-traversal");
  fs::create_directory_symlink(tmp.path() / "root" / "lib", tmp.path() / "root" / "inner");
  EXPECT_EQ(check({{"kind", "dir"}, {"path", tmp.str("root/inner")}}), "");
}

TEST_F(Sources, NoRootsMeansNoLocalSources) {
  policy.roots.clear();
  EXPECT_EQ(check({{"kind", "dir"}, {"path", tmp.str("root/lib")}}), "no-source-root");
}

TEST_F(Sources, GitOptionInjectionAndSchemesAreRejected) {
  EXPECT_EQ(check({{"kind", "git"}, {"url", "--upload-pack=touch /tmp/pwned"}, {"ref", "v1"}}), "option-injection");
  EXPECT_EQ(check({{"kind", "git"}, {"url", "https://example.org/r.git"}, {"ref", "--output=/tmp/x"}}),
            "option-injection");
  EXPECT_EQ(check({{"kind", "git"}, {"url", "ext::sh -c touch% /tmp/pwned"}, {"ref", "v1"}}), "url-scheme");
  EXPECT_EQ(check({{"kind", "git"}, {"url", "ftp://example.org/r.git"}, {"ref", "v1"}}), "url-scheme");
  EXPECT_EQ(check({{"kind", "git"}, {"url", "https://example.org/r.git"}, {"ref", "v1..v2"}}), "bad-source");
  EXPECT_EQ(check({{"kind", "git"}, {"url", "https://example.org/r.git"}, {"ref", "v1;rm -rf"}}), "bad-source");
  EXPECT_EQ(check({{"kind", "git"}, {"url", "https://example.org/r.git"}}), "bad-source");
  EXPECT_EQ(check({{"kind", "git"}, {"url", tmp.str("outside")}, {"ref", "v1"}}), "path-traversal");
  EXPECT_EQ(check({{"kind", "git"}, {"url", "https://example.org/r.git"}, {"ref", "v1.2.3"}}), "");
}

TEST_F(Sources, DebianInputsAreValidated) {
  EXPECT_EQ(check({{"kind", "debian-source"}, {"package", "-oDir::Etc=/tmp"}, {"version", "1.0-1"}}),
            "option-injection");
  EXPECT_EQ(check({{"kind", "debian-source"}, {"package", "openblas"}, {"version", "-s"}}), "option-injection");
  EXPECT_EQ(check({{"kind", "debian-source"}, {"package", "Open BLAS"}, {"version", "1.0-1"}}), "bad-source");
  EXPECT_EQ(check({{"kind", "debian-source"}, {"package", "openblas"}, {"version", "1.0 extra"}}), "bad-source");
  EXPECT_EQ(check({{"kind", "debian-source"}, {"package", "openblas"}, {"version", "0.3.21+ds-4"}}), "");
  // Fallback revisions reach apt-get too: the same checks apply to each.
  nlohmann::json deb = {{"kind", "debian-source"}, {"package", "jemalloc"}, {"version", "5.3.0-3"}};
  deb["fallback_versions"] = {"5.3.0-1", "-oAPT::Get::Foo=1"};
  EXPECT_EQ(check(deb), "option-injection");
  deb["fallback_versions"] = {"5.3.0 1"};
  EXPECT_EQ(check(deb), "bad-source");
  deb["fallback_versions"] = "5.3.0-1";
  EXPECT_EQ(check(deb), "bad-source");
  deb["fallback_versions"] = {"5.3.0-2", "5.3.0-1"};
  EXPECT_EQ(check(deb), "");
}

TEST_F(Sources, TarballsComeOverHttpOrFromRoots) {
  EXPECT_EQ(check({{"kind", "tarball"}, {"url", "file:///etc/passwd"}}), "url-scheme");
  EXPECT_EQ(check({{"kind", "tarball"}, {"path", "/etc/passwd"}}), "path-traversal");
  EXPECT_EQ(check({{"kind", "tarball"}, {"url", "https://example.org/foo-1.0.tar.gz"}}), "");
}

TEST_F(Sources, MalformedSpecsSayWhatIsWrong) {
  EXPECT_EQ(check("a string"), "bad-source");
  EXPECT_EQ(check({{"kind", "svn"}}), "bad-source");
  EXPECT_EQ(check({{"kind", "dir"}, {"path", 42}}), "bad-source");
}

TEST_F(Sources, NothingRunsForARejectedInput) {
  // A value that would create a file if it reached git as an option.
  fs::path marker = tmp.path() / "pwned";
  SourceSpec s;
  s.kind = SourceSpec::Kind::Git;
  s.url = "--upload-pack=touch " + marker.string();
  s.ref = "v1";
  FetchedSource out;
  Diagnostics d;
  EXPECT_FALSE(fetch_source(s, policy, out, d));
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_FALSE(fs::exists(tmp.path() / "work" / "git"));
}

TEST_F(Sources, GitTagIsFetchedByTreeAndCached) {
  std::string repo = make_foo_repo(tmp.path() / "root" / "foo.git");
  SourceSpec s;
  s.kind = SourceSpec::Kind::Git;
  s.url = repo;
  s.ref = "v1.1.0";
  FetchedSource a, b;
  Diagnostics d;
  ASSERT_TRUE(fetch_source(s, policy, a, d)) << d.str();
  EXPECT_TRUE(fs::exists(fs::path(a.dir) / "src" / "foo.c"));
  EXPECT_NE(read_file(fs::path(a.dir) / "src" / "foo.c").find("FOO_SPIN_TIMEOUT"), std::string::npos);
  EXPECT_EQ(a.digest.rfind("git-tree:", 0), 0u);
  ASSERT_TRUE(fetch_source(s, policy, b, d)) << d.str();
  EXPECT_EQ(a.digest, b.digest);
  s.ref = "v1.0.0";
  ASSERT_TRUE(fetch_source(s, policy, b, d)) << d.str();
  EXPECT_NE(a.digest, b.digest);
  s.ref = "v9.9.9";
  Diagnostics missing;
  EXPECT_FALSE(fetch_source(s, policy, b, missing));
  EXPECT_EQ(missing.items().back().code, "not-found");

  std::vector<std::string> tags;
  ASSERT_TRUE(list_git_tags(repo, policy, tags, d)) << d.str();
  EXPECT_EQ(tags, (std::vector<std::string>{"nightly-build", "v1.0.0", "v1.1.0"}));
}

TEST_F(Sources, TreeDigestFollowsContentNotTime) {
  write_foo_release(tmp.path() / "root" / "a", "1.0.0");
  std::string d1 = digest_tree(tmp.str("root/a"));
  fs::last_write_time(tmp.path() / "root" / "a" / "README.md", fs::file_time_type::clock::now());
  EXPECT_EQ(d1, digest_tree(tmp.str("root/a")));
  write_file(tmp.path() / "root" / "a" / "README.md", "changed\n");
  EXPECT_NE(d1, digest_tree(tmp.str("root/a")));
}

TEST(Process, TimeoutKillsTheWholeGroup) {
  ProcessOptions o;
  o.timeout_s = 0.5;
  auto start = std::chrono::steady_clock::now();
  // The grandchild (sleep) holds the pipes; only a group kill ends this quickly.
  ProcessResult r = run_process({"sh", "-c", "sleep 30 & sleep 30"}, o);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(s, 10);
}

TEST(Process, CancellationStopsARun) {
  ProcessOptions o;
  auto start = std::chrono::steady_clock::now();
  o.cancelled = [&] { return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(300); };
  ProcessResult r = run_process({"sleep", "30"}, o);
  EXPECT_TRUE(r.cancelled);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
}

TEST(Process, ArgumentsReachTheProgramVerbatim) {
  ProcessResult r = run_process({"printf", "%s|", "a b", "$(id)", "; rm -rf /"});
  ASSERT_TRUE(r.ok()) << r.err << r.start_error;
  EXPECT_EQ(r.out, "a b|$(id)|; rm -rf /|");
  EXPECT_FALSE(run_process({"/nonexistent/tool"}).start_error.empty());
}

TEST(Versions, DebianVersionsMapToUpstream) {
  EXPECT_EQ(upstream_version("0.3.21+ds-4"), "0.3.21");
  EXPECT_EQ(upstream_version("1.5.4+dfsg2-5"), "1.5.4");
  EXPECT_EQ(upstream_version("1.5.7+dfsg-4"), "1.5.7");
  EXPECT_EQ(upstream_version("5.3.0-1"), "5.3.0");
  EXPECT_EQ(upstream_version("2021.8.0-2+deb12u1"), "2021.8.0");
  EXPECT_EQ(upstream_version("1:2.5-1"), "2.5");
}

}  // namespace
}  // namespace syspilot::service::test
