// Source inputs: validation before anything runs (roots, traversal, symlinks, option
// injection, URL schemes), archives (links leading out, bombs, entry caps), the process
// runner's limits, digests and version order.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "extract/extract.h"
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

// A relative path is taken inside the roots, never under the service's working directory: the
// client cannot know that directory, and what lies there is no source it was given.
TEST_F(Sources, RelativePathsAreTakenInsideTheRoots) {
  EXPECT_EQ(check({{"kind", "dir"}, {"path", "lib"}}), "");
  SourceSpec s;
  Diagnostics d;
  ASSERT_TRUE(parse_source({{"kind", "dir"}, {"path", "lib"}}, s, d));
  EXPECT_EQ(confine_path(s.path, policy.roots, "path", d), fs::canonical(tmp.path() / "root" / "lib").string());
  // Present under the working directory, absent from the roots: not found.
  auto cwd = fs::current_path();
  fs::current_path(tmp.path());
  EXPECT_EQ(check({{"kind", "dir"}, {"path", "outside"}}), "not-found");
  fs::current_path(cwd);
  EXPECT_EQ(check({{"kind", "dir"}, {"path", "lib/../lib"}}), "path-traversal");
  fs::create_directory_symlink(tmp.path() / "outside", tmp.path() / "root" / "away");
  EXPECT_EQ(check({{"kind", "dir"}, {"path", "away"}}), "path-traversal");
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

// ---- Archives: links that lead out, bombs, entry caps ----

// A ustar archive written by hand, so a test can hold members no honest tar creates.
struct TarBuilder {
  std::string data;
  // type: '0' file, '1' hard link, '2' symbolic link, '5' folder, '6' FIFO
  TarBuilder& add(const std::string& name, char type, const std::string& content = {}, const std::string& link = {},
                  int mode = -1) {
    char h[512] = {};
    std::snprintf(h, 100, "%s", name.c_str());
    std::snprintf(h + 100, 8, "%07o", mode >= 0 ? mode : type == '5' ? 0755 : 0644);
    std::snprintf(h + 108, 8, "%07o", 0);
    std::snprintf(h + 116, 8, "%07o", 0);
    std::snprintf(h + 124, 12, "%011o", static_cast<unsigned>(content.size()));
    std::snprintf(h + 136, 12, "%011o", 1700000000u);
    std::memset(h + 148, ' ', 8);
    h[156] = type;
    std::snprintf(h + 157, 100, "%s", link.c_str());
    std::memcpy(h + 257, "ustar", 6);
    std::memcpy(h + 263, "00", 2);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    std::snprintf(h + 148, 7, "%06o", sum);
    h[155] = ' ';
    data.append(h, 512);
    data += content;
    data.append((512 - content.size() % 512) % 512, '\0');
    return *this;
  }
  void write(const fs::path& p) const {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << data << std::string(1024, '\0');
  }
};

bool has_diag(const Diagnostics& d, const std::string& code) {
  for (auto& x : d.items())
    if (x.code == code) return true;
  return false;
}

struct Archives : Sources {
  const std::string marker = "SECRET_MARKER_VAR";
  void SetUp() override {
    Sources::SetUp();
    write_file(tmp.path() / "outside" / "secret.c",
               "/* outside-marker-91c2 */\nchar* s(void) { return getenv(\"" + marker + "\"); }\n");
  }
  bool fetch_tarball(const fs::path& file, FetchedSource& out, Diagnostics& d) {
    SourceSpec s;
    s.kind = SourceSpec::Kind::Tarball;
    s.path = file.string();
    return fetch_source(s, policy, out, d);
  }
  // What unpacking left under the work folder (a refused archive leaves nothing).
  size_t unpacked_left() {
    size_t n = 0;
    std::error_code ec;
    for (auto& e : fs::directory_iterator(tmp.path() / "work" / "tarballs", ec)) {
      (void)e;
      ++n;
    }
    return n;
  }
  std::set<std::string> env_names(const std::string& dir) {
    extract::ExtractOptions o;
    o.paths = {dir};
    o.api_controls = false;
    o.threads = 1;
    std::set<std::string> names;
    for (auto& e : extract::extract(o).env_vars) names.insert(e.name);
    return names;
  }
};

TEST_F(Archives, SymlinksLeadingOutAreDroppedAndNothingOutsideIsRead) {
  fs::path tarball = tmp.path() / "root" / "links.tar";
  TarBuilder()
      .add("pkg/", '5')
      .add("pkg/src/", '5')
      .add("pkg/src/good.c", '0', "char* g(void) { return getenv(\"GOOD_THREADS\"); }\n")
      .add("pkg/src/etc", '2', {}, "/etc")
      .add("pkg/src/abs.c", '2', {}, tmp.str("outside/secret.c"))
      // from work/tarballs/<digest>.tmp/src/pkg/src, six levels up is the test's folder
      .add("pkg/src/up.c", '2', {}, "../../../../../../outside/secret.c")
      .add("pkg/src/alias.c", '2', {}, "good.c")
      .write(tarball);
  FetchedSource out;
  Diagnostics d;
  ASSERT_TRUE(fetch_tarball(tarball, out, d)) << d.str();
  EXPECT_TRUE(has_diag(d, "archive-link-dropped")) << d.str();
  fs::path src = fs::path(out.dir) / "src";
  EXPECT_TRUE(fs::exists(src / "good.c"));
  for (auto* name : {"etc", "abs.c", "up.c"})
    EXPECT_FALSE(fs::exists(fs::symlink_status(src / name))) << name << " should have been removed";
  EXPECT_TRUE(fs::is_symlink(src / "alias.c")) << "a link inside the tree is kept";
  auto names = env_names(out.dir);
  EXPECT_TRUE(names.count("GOOD_THREADS"));
  EXPECT_FALSE(names.count(marker));
}

TEST_F(Archives, HardLinksLeadingOutRefuseTheArchive) {
  for (std::string target : {std::string("/etc/passwd"), std::string("../outside/secret.c"),
                             std::string("/pkg/a.c")}) {
    fs::path tarball = tmp.path() / "root" / "hard.tar";
    TarBuilder()
        .add("pkg/", '5')
        .add("pkg/a.c", '0', "int a;\n")
        .add("pkg/hl.c", '1', {}, target)
        .write(tarball);
    FetchedSource out;
    Diagnostics d;
    EXPECT_FALSE(fetch_tarball(tarball, out, d)) << target;
    EXPECT_TRUE(has_diag(d, "archive-link-escape")) << target << ": " << d.str();
    EXPECT_EQ(unpacked_left(), 0u) << target;
  }
  fs::path fifo = tmp.path() / "root" / "fifo.tar";
  TarBuilder().add("pkg/", '5').add("pkg/pipe.c", '6').write(fifo);
  FetchedSource out;
  Diagnostics d;
  EXPECT_FALSE(fetch_tarball(fifo, out, d));
  EXPECT_TRUE(has_diag(d, "archive-special-file")) << d.str();
  EXPECT_EQ(unpacked_left(), 0u);
}

// A small gzip tarball whose one member is 64 MiB of zeros (about 1000:1).
TEST_F(Archives, TarBombIsRefusedBeforeUnpacking) {
  fs::path stage = tmp.path() / "stage";
  fs::create_directories(stage);
  {
    int fd = ::open((stage / "zeros.bin").c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 64LL << 20), 0);
    ::close(fd);
  }
  fs::path bomb = tmp.path() / "root" / "bomb.tar.gz";
  ASSERT_TRUE(sh({"tar", "-czf", bomb.string(), "-C", stage.string(), "zeros.bin"}).ok());
  ASSERT_LT(fs::file_size(bomb), 1u << 20);

  FetchedSource out;
  Diagnostics d;  // default caps: the ratio refuses it
  EXPECT_FALSE(fetch_tarball(bomb, out, d));
  EXPECT_TRUE(has_diag(d, "archive-ratio")) << d.str();
  EXPECT_EQ(unpacked_left(), 0u);

  policy.archive_max_ratio = 1e9;  // the size cap alone
  policy.archive_max_bytes = 16u << 20;
  Diagnostics big;
  EXPECT_FALSE(fetch_tarball(bomb, out, big));
  EXPECT_TRUE(has_diag(big, "archive-too-large")) << big.str();
  EXPECT_NE(big.str().find("64 MiB"), std::string::npos) << big.str();
  EXPECT_EQ(unpacked_left(), 0u);

  policy.archive_max_bytes = 128u << 20;  // under both caps it unpacks
  Diagnostics fine;
  ASSERT_TRUE(fetch_tarball(bomb, out, fine)) << fine.str();
  EXPECT_EQ(fs::file_size(fs::path(out.dir) / "zeros.bin"), 64u << 20);
}

TEST_F(Archives, TooManyEntriesAreRefused) {
  fs::path stage = tmp.path() / "stage" / "many";
  for (int i = 0; i < 50; ++i) write_file(stage / ("f" + std::to_string(i) + ".c"), "int x;\n");
  fs::path tarball = tmp.path() / "root" / "many.tar.gz";
  ASSERT_TRUE(sh({"tar", "-czf", tarball.string(), "-C", (tmp.path() / "stage").string(), "many"}).ok());
  policy.archive_max_entries = 20;
  FetchedSource out;
  Diagnostics d;
  EXPECT_FALSE(fetch_tarball(tarball, out, d));
  EXPECT_TRUE(has_diag(d, "archive-too-many-entries")) << d.str();
  EXPECT_EQ(unpacked_left(), 0u);
  policy.archive_max_entries = 100;
  Diagnostics ok;
  ASSERT_TRUE(fetch_tarball(tarball, out, ok)) << ok.str();
  EXPECT_TRUE(fs::exists(fs::path(out.dir) / "f49.c"));
}

TEST_F(Archives, NotATarballIsAClearError) {
  write_file(tmp.path() / "root" / "junk.tar.gz", "this is not an archive\n");
  FetchedSource out;
  Diagnostics d;
  EXPECT_FALSE(fetch_tarball(tmp.path() / "root" / "junk.tar.gz", out, d));
  EXPECT_TRUE(has_diag(d, "archive-unreadable")) << d.str();
  EXPECT_EQ(unpacked_left(), 0u);
}

// Folders and files whose members say mode 000 or 0555: unpacked as they say, the service
// could not walk or empty them (a refused or replaced tree stayed in the cache). They are
// made the owner's to read, write and enter, so the tree is read whole.
TEST_F(Archives, MembersWithoutPermissionsAreMadeTheOwners) {
  fs::path tarball = tmp.path() / "root" / "modes.tar";
  TarBuilder()
      .add("pkg/", '5')
      .add("pkg/locked/", '5', {}, {}, 0)
      .add("pkg/locked/x.c", '0', "char* x(void) { return getenv(\"LOCKED_THREADS\"); }\n", {}, 0)
      .add("pkg/ro/", '5', {}, {}, 0555)
      .add("pkg/ro/y.c", '0', "int y;\n", {}, 0444)
      .write(tarball);
  FetchedSource out;
  Diagnostics d;
  ASSERT_TRUE(fetch_tarball(tarball, out, d)) << d.str();
  auto perms = [](const fs::path& p) { return fs::symlink_status(p).permissions(); };
  fs::path pkg(out.dir);
  for (auto* dir : {"locked", "ro"})
    EXPECT_EQ(perms(pkg / dir) & fs::perms::owner_all, fs::perms::owner_all) << dir;
  for (auto* file : {"locked/x.c", "ro/y.c"}) {
    auto want = fs::perms::owner_read | fs::perms::owner_write;
    EXPECT_EQ(perms(pkg / file) & want, want) << file;
  }
  EXPECT_TRUE(env_names(out.dir).count("LOCKED_THREADS"));
}

// A member tar cannot write (a name of 300 bytes, given in a pax header): the refusal says
// what failed, not tar's closing line "Exiting with failure status due to previous errors".
TEST_F(Archives, AMemberTarCannotWriteIsNamedInTheError) {
  std::string name = "pkg/" + std::string(300, 'a') + ".c";
  std::string record = " path=" + name + "\n";
  size_t len = record.size() + 3;  // three digits of length, counted in the length
  fs::path tarball = tmp.path() / "root" / "long.tar";
  TarBuilder()
      .add("pkg/", '5')
      .add("pkg/PaxHeader", 'x', std::to_string(len) + record)
      .add("pkg/long.c", '0', "int x;\n")
      .write(tarball);
  FetchedSource out;
  Diagnostics d;
  EXPECT_FALSE(fetch_tarball(tarball, out, d));
  EXPECT_NE(d.str().find("File name too long"), std::string::npos) << d.str();
  EXPECT_EQ(d.str().find("Exiting with failure status"), std::string::npos) << d.str();
  EXPECT_EQ(unpacked_left(), 0u);
}

// The reason survives a member name of 3000 bytes (its start and end are kept) and tar's
// notices after it: a member named with '..' is not written, then tar notes that it removed
// the leading '/' of an absolute member.
TEST_F(Archives, TheReasonTarGivesSurvivesLongNamesAndLaterNotices) {
  std::string record = " path=pkg/" + std::string(3000, 'a') + ".c\n";
  fs::path longname = tmp.path() / "root" / "longer.tar";
  TarBuilder()
      .add("pkg/", '5')
      .add("pkg/PaxHeader", 'x', std::to_string(record.size() + 4) + record)  // four digits of length
      .add("pkg/long.c", '0', "int x;\n")
      .write(longname);
  fs::path dotdot = tmp.path() / "root" / "dotdot.tar";
  TarBuilder()
      .add("pkg/", '5')
      .add("pkg/../../up.c", '0', "int up;\n")
      .add("/abs.c", '0', "int abs;\n")
      .write(dotdot);
  for (auto& [tarball, reason] : {std::pair{longname, std::string("File name too long")},
                                  std::pair{dotdot, std::string("Member name contains '..'")}}) {
    FetchedSource out;
    Diagnostics d;
    EXPECT_FALSE(fetch_tarball(tarball, out, d));
    ASSERT_FALSE(d.items().empty());
    const std::string& message = d.items().back().message;
    EXPECT_NE(message.find(reason), std::string::npos) << message;
    EXPECT_EQ(message.find("Removing leading"), std::string::npos) << message;
    EXPECT_LT(message.size(), 1000u);
    EXPECT_EQ(unpacked_left(), 0u);
  }
}

// A git repository may hold links to /etc and outside files: they never reach the tree;
// and a git tree is capped like any archive.
TEST_F(Archives, GitTreesAreCheckedLikeArchives) {
  fs::path repo = tmp.path() / "root" / "evil.git";
  write_file(repo / "src" / "good.c", "char* g(void) { return getenv(\"GOOD_THREADS\"); }\n");
  ASSERT_TRUE(sh({"git", "init", "-q", "-b", "main", repo.string()}).ok());
  fs::create_symlink(tmp.path() / "outside" / "secret.c", repo / "src" / "leak.c");
  fs::create_symlink("/etc", repo / "etc");
  fs::create_symlink("good.c", repo / "src" / "alias.c");
  ASSERT_TRUE(sh({"git", "add", "-A"}, repo.string()).ok());
  ASSERT_TRUE(sh({"git", "commit", "-q", "-m", "links"}, repo.string()).ok());
  ASSERT_TRUE(sh({"git", "tag", "v1"}, repo.string()).ok());
  SourceSpec s;
  s.kind = SourceSpec::Kind::Git;
  s.url = repo.string();
  s.ref = "v1";
  FetchedSource out;
  Diagnostics d;
  ASSERT_TRUE(fetch_source(s, policy, out, d)) << d.str();
  EXPECT_TRUE(has_diag(d, "archive-link-dropped")) << d.str();
  EXPECT_FALSE(fs::exists(fs::symlink_status(fs::path(out.dir) / "src" / "leak.c")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(fs::path(out.dir) / "etc")));
  EXPECT_TRUE(fs::is_symlink(fs::path(out.dir) / "src" / "alias.c"));
  EXPECT_FALSE(env_names(out.dir).count(marker));

  for (int i = 0; i < 30; ++i) write_file(repo / "gen" / ("g" + std::to_string(i) + ".c"), "int g;\n");
  ASSERT_TRUE(sh({"git", "add", "-A"}, repo.string()).ok());
  ASSERT_TRUE(sh({"git", "commit", "-q", "-m", "many"}, repo.string()).ok());
  ASSERT_TRUE(sh({"git", "tag", "v2"}, repo.string()).ok());
  policy.archive_max_entries = 20;
  s.ref = "v2";
  Diagnostics many;
  EXPECT_FALSE(fetch_source(s, policy, out, many));
  EXPECT_TRUE(has_diag(many, "archive-too-many-entries")) << many.str();
  EXPECT_FALSE(fs::exists(tmp.path() / "work" / "trees" / (out.digest.substr(9) + ".tmp")));
}

// A local repository inside a root is read where git reads it: one whose .git file names a
// git dir outside every root, and a bare one that borrows objects from outside
// (objects/info/alternates), are refused before git runs, and nothing of the outside
// repository reaches a tree; a repository of its own inside the root is fetched.
TEST_F(Archives, LocalRepositoriesMayNotReachOutsideTheRoots) {
  fs::path outside = tmp.path() / "outside" / "orepo";
  write_file(outside / "secret.c", "char* s(void) { return getenv(\"OUTSIDE_SECRET\"); }\n");
  ASSERT_TRUE(sh({"git", "init", "-q", "-b", "main", outside.string()}).ok());
  ASSERT_TRUE(sh({"git", "add", "-A"}, outside.string()).ok());
  ASSERT_TRUE(sh({"git", "commit", "-q", "-m", "secret"}, outside.string()).ok());
  ASSERT_TRUE(sh({"git", "tag", "v1"}, outside.string()).ok());
  ProcessResult head = sh({"git", "rev-parse", "v1^{commit}"}, outside.string());
  ASSERT_TRUE(head.ok());
  std::string commit = head.out.substr(0, head.out.find('\n'));

  fs::path pointer = tmp.path() / "root" / "pointer";
  write_file(pointer / ".git", "gitdir: " + (outside / ".git").string() + "\n");
  fs::path borrower = tmp.path() / "root" / "borrower.git";
  ASSERT_TRUE(sh({"git", "init", "-q", "--bare", borrower.string()}).ok());
  write_file(borrower / "objects" / "info" / "alternates", (outside / ".git" / "objects").string() + "\n");
  ASSERT_TRUE(sh({"git", "update-ref", "refs/tags/v1", commit}, borrower.string()).ok());
  for (const fs::path& repo : {pointer, borrower})
    for (const std::string& url : {repo.string(), "file://" + repo.string()}) {
      SourceSpec s;
      s.kind = SourceSpec::Kind::Git;
      s.url = url;
      s.ref = "v1";
      FetchedSource out;
      Diagnostics d;
      EXPECT_FALSE(fetch_source(s, policy, out, d)) << url << ": fetched " << out.dir;
      EXPECT_TRUE(has_diag(d, "path-traversal")) << url << ": " << d.str();
      EXPECT_TRUE(out.dir.empty() || !env_names(out.dir).count("OUTSIDE_SECRET")) << url;
    }
  EXPECT_FALSE(fs::exists(tmp.path() / "work" / "trees")) << "nothing was checked out";

  fs::path own = tmp.path() / "root" / "own";
  write_file(own / "src" / "good.c", "char* g(void) { return getenv(\"GOOD_THREADS\"); }\n");
  ASSERT_TRUE(sh({"git", "init", "-q", "-b", "main", own.string()}).ok());
  ASSERT_TRUE(sh({"git", "add", "-A"}, own.string()).ok());
  ASSERT_TRUE(sh({"git", "commit", "-q", "-m", "own"}, own.string()).ok());
  ASSERT_TRUE(sh({"git", "tag", "v1"}, own.string()).ok());
  SourceSpec s;
  s.kind = SourceSpec::Kind::Git;
  s.url = own.string();
  s.ref = "v1";
  FetchedSource out;
  Diagnostics d;
  ASSERT_TRUE(fetch_source(s, policy, out, d)) << d.str();
  EXPECT_TRUE(env_names(out.dir).count("GOOD_THREADS"));
}

// A folder nested deeper than any path the system can name (3,000 levels, 6,000 characters)
// is fetched without an exception out of the job: what cannot be looked at is left out.
TEST_F(Sources, TreesDeeperThanAPathCanNameAreFetched) {
  int fd = ::open(tmp.str("root/deep").c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    fs::create_directories(tmp.path() / "root" / "deep");
    fd = ::open(tmp.str("root/deep").c_str(), O_RDONLY | O_DIRECTORY);
  }
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 3000; ++i) {
    ASSERT_EQ(::mkdirat(fd, "d", 0755), 0);
    int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY);
    ::close(fd);
    ASSERT_GE(next, 0);
    fd = next;
  }
  ::close(fd);
  fs::create_directories(tmp.path() / "root" / "deep" / "src");
  std::ofstream(tmp.path() / "root" / "deep" / "src" / "a.c") << "char* a(void) { return getenv(\"SHALLOW_A\"); }\n";
  SourceSpec s;
  s.kind = SourceSpec::Kind::Dir;
  s.path = tmp.str("root/deep");
  FetchedSource out;
  Diagnostics d;
  EXPECT_NO_THROW(EXPECT_TRUE(fetch_source(s, policy, out, d)) << d.str());
  EXPECT_EQ(out.digest.rfind("tree:", 0), 0u) << out.digest;
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
