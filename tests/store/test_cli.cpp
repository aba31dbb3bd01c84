// `syspilot contracts ...` over a real store file: import, list, show, diff, export, review,
// remove, and the errors a user meets (bad LPCL, unknown names, a file that is not a store).
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lpcl/lpcl.h"
#include "tests/store/fixture.h"

using namespace syspilot;
using store::testing::TempDir;

namespace {

struct CliRun {
  int exit = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Runs the real executable with `args` (already shell-quoted where needed) and `env` prefix.
CliRun run_cli(const TempDir& dir, const std::string& args, const std::string& env = "") {
  CliRun r;
  std::string out = dir.file("cli.out"), err = dir.file("cli.err");
  std::string cmd = "env -u SYSPILOT_DB " + env + " " + SYSPILOT_BINARY + " " + args + " >" + out + " 2>" + err;
  int st = std::system(cmd.c_str());
  r.exit = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

const char* kOpenblas21 = R"(# OpenBLAS, pthreads build.
contract openblas "0.3.21" {
  origin extracted, manual;
  binds soname "libopenblas*.so*";
  control OPENBLAS_NUM_THREADS : env int in [1, ncpus] default ncpus read_at init
      @ "driver/others/openblas_env.c:52";
  control OMP_NUM_THREADS : env int fallback_for OPENBLAS_NUM_THREADS;
  control OPENBLAS_THREAD_TIMEOUT : env int in [4, 30] default 28 read_at init;
  demand cpu.threads = OPENBLAS_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus;
  assume exclusive(cpu.cores);
  behavior spin_wait idle_timeout OPENBLAS_THREAD_TIMEOUT;
}
)";

// 0.3.29: the timeout default changed and a knob appeared; reordered to show that text order
// is no semantic change.
const char* kOpenblas29 = R"(contract openblas "0.3.29" {
  origin extracted, manual;
  binds soname "libopenblas*.so*";
  control OMP_NUM_THREADS : env int fallback_for OPENBLAS_NUM_THREADS;
  control OPENBLAS_NUM_THREADS : env int in [1, ncpus] default ncpus read_at init
      @ "driver/others/openblas_env.c:52";
  control OPENBLAS_THREAD_TIMEOUT : env int in [4, 30] default 24 read_at init;
  control OPENBLAS_DEFAULT_NUM_THREADS : env int in [1, ncpus] read_at init;
  demand cpu.threads = OPENBLAS_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus;
  assume exclusive(cpu.cores);
  behavior spin_wait idle_timeout OPENBLAS_THREAD_TIMEOUT;
}
)";

std::string canonical(const std::string& text) {
  Diagnostics d;
  auto doc = lpcl::parse(text, "x.lpcl", d);
  EXPECT_FALSE(d.has_errors()) << d.str();
  return lpcl::format(doc.contracts.at(0));
}

class ContractsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(SYSPILOT_BINARY))
        << SYSPILOT_BINARY << " is missing: build the syspilot target before running these tests";
    db = dir.file("store/s.db");
    spit(dir.file("a.lpcl"), kOpenblas21);
    spit(dir.file("b.lpcl"), kOpenblas29);
    CliRun r = run_cli(dir, "contracts import --db " + db + " " + dir.file("a.lpcl") + " " + dir.file("b.lpcl"));
    ASSERT_EQ(r.exit, 0) << r.err;
    EXPECT_NE(r.out.find("stored openblas 0.3.21 revision 1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("stored openblas 0.3.29 revision 1"), std::string::npos) << r.out;
  }
  int stored_contracts() {
    store::Store s(db);
    return static_cast<int>(*s.db().query_int("SELECT count(*) FROM contracts"));
  }
  TempDir dir;
  std::string db;
};

}  // namespace

TEST_F(ContractsCli, ListShowAndExportReadWhatImportStored) {
  CliRun r = run_cli(dir, "contracts list --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("openblas"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0.3.29"), std::string::npos) << r.out;

  r = run_cli(dir, "contracts list openblas --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_LT(r.out.find("0.3.21"), r.out.find("0.3.29")) << r.out;
  EXPECT_NE(r.out.find("manual"), std::string::npos) << r.out;

  r = run_cli(dir, "contracts show openblas 0.3.21 --lpcl --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(r.out, canonical(kOpenblas21));

  // The default show is still LPCL: provenance goes into comments.
  r = run_cli(dir, "contracts show openblas --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("# openblas 0.3.29, revision 1 of 1, converged"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# source import:" + dir.file("b.lpcl")), std::string::npos) << r.out;
  const std::string text = canonical(kOpenblas29);
  ASSERT_GE(r.out.size(), text.size());
  EXPECT_EQ(r.out.substr(r.out.size() - text.size()), text);
  canonical(r.out);  // parses without errors

  r = run_cli(dir, "contracts show openblas 0.3.21 --json --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["library"], "openblas");
  EXPECT_EQ(j["version"], "0.3.21");
  EXPECT_EQ(j["drafter"], "manual");
  EXPECT_EQ(j["revision"], 1);
  EXPECT_EQ(j["digest"], store::sha256_hex(canonical(kOpenblas21)));
  EXPECT_EQ(j["contract"]["name"], "openblas");

  // export, then import the exported file: same digest, a new revision, "unchanged".
  r = run_cli(dir, "contracts export openblas 0.3.21 -o " + dir.file("out.lpcl") + " --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(slurp(dir.file("out.lpcl")), canonical(kOpenblas21));
  r = run_cli(dir, "contracts import " + dir.file("out.lpcl") + " --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("revision 2 (unchanged)"), std::string::npos) << r.out;
  r = run_cli(dir, "contracts export openblas --db " + db);
  EXPECT_EQ(r.out, canonical(kOpenblas29));
}

TEST_F(ContractsCli, DiffShowsWhatChangedBetweenVersionsAndRevisions) {
  CliRun r = run_cli(dir, "contracts diff openblas 0.3.21 0.3.29 --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("OPENBLAS_THREAD_TIMEOUT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OPENBLAS_DEFAULT_NUM_THREADS"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("OMP_NUM_THREADS"), std::string::npos) << "reordering is no change:\n" << r.out;

  r = run_cli(dir, "contracts diff openblas 0.3.21 0.3.29 --json --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["from"]["version"], "0.3.21");
  ASSERT_FALSE(j["changes"].empty()) << r.out;

  run_cli(dir, "contracts import " + dir.file("a.lpcl") + " --db " + db);
  r = run_cli(dir, "contracts diff openblas 0.3.21@1 0.3.21@2 --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no semantic change"), std::string::npos) << r.err;
  r = run_cli(dir, "contracts diff openblas 0.3.21@7 0.3.29 --db " + db);
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find("no revision 7"), std::string::npos) << r.err;
}

TEST_F(ContractsCli, ImportRefusesFilesWithErrorsAndStoresNothing) {
  spit(dir.file("bad.lpcl"), "contract broken \"1.0\" {\n  control X : env int default;\n}\n");
  spit(dir.file("unknown.lpcl"),
       "contract wrong \"1.0\" {\n  demand cpu.nonsense = 2;\n}\n");
  int before = stored_contracts();
  // A good file beside a bad one: all or nothing.
  CliRun r = run_cli(dir, "contracts import " + dir.file("a.lpcl") + " " + dir.file("bad.lpcl") + " --db " + db);
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find(dir.file("bad.lpcl") + ":2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was stored"), std::string::npos) << r.err;
  r = run_cli(dir, "contracts import " + dir.file("unknown.lpcl") + " --db " + db);
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find("cpu.nonsense"), std::string::npos) << r.err;
  r = run_cli(dir, "contracts import " + dir.file("missing.lpcl") + " --db " + db);
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(stored_contracts(), before);
}

TEST_F(ContractsCli, UnknownNamesAndBadStoresAreInputErrors) {
  CliRun r = run_cli(dir, "contracts show zstd --db " + db);
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find("stored libraries: openblas"), std::string::npos) << r.err;
  r = run_cli(dir, "contracts show openblas 9.9 --db " + db);
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find("stored versions: 0.3.21, 0.3.29"), std::string::npos) << r.err;
  r = run_cli(dir, "contracts show openblas 0.3.21 --json --lpcl --db " + db);
  EXPECT_EQ(r.exit, 2);

  spit(dir.file("notes.db"), std::string(5000, 'n'));
  r = run_cli(dir, "contracts list --db " + dir.file("notes.db"));
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find("not a database"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(dir.file("notes.db")), std::string(5000, 'n'));

  // Reading a store that does not exist says so and creates nothing.
  r = run_cli(dir, "contracts list --db " + dir.file("none/absent.db"));
  EXPECT_EQ(r.exit, 0);
  EXPECT_NE(r.err.find("no contracts stored yet"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("none")));
  r = run_cli(dir, "contracts show openblas --db " + dir.file("absent.db"));
  EXPECT_EQ(r.exit, 2);
}

TEST_F(ContractsCli, SyspilotDbEnvironmentAndRemove) {
  CliRun r = run_cli(dir, "contracts list openblas", "SYSPILOT_DB=" + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("0.3.21"), std::string::npos) << r.out;
  r = run_cli(dir, "contracts remove openblas 0.3.21", "SYSPILOT_DB=" + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  r = run_cli(dir, "contracts remove openblas 0.3.21", "SYSPILOT_DB=" + db);
  EXPECT_EQ(r.exit, 2);
  r = run_cli(dir, "contracts list openblas --json --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["version"], "0.3.29");
}

// Imports (the corpus, files a person wrote) are reviewed; a draft is not until someone says so
// with `contracts review`, and list/show say which is which.
TEST_F(ContractsCli, ReviewStateOfImportsAndDraftsAndTheReviewCommand) {
  CliRun r = run_cli(dir, "contracts show openblas 0.3.21 --json --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["review"], "reviewed");

  // A draft, as `syspilot synth` stores it.
  {
    store::Store s(db);
    store::ContractRecord d;
    d.library = "openblas";
    d.version = "0.3.30";
    d.lpcl = "contract openblas \"0.3.30\" {\n  binds soname \"libopenblas.so.0\";\n"
             "  control OPENBLAS_NUM_THREADS : env int in [1, ncpus];\n}\n";
    d.drafter = store::Drafter::Offline;
    s.put_contract(d);
  }
  r = run_cli(dir, "contracts list openblas --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("REVIEW"), std::string::npos) << r.out;
  auto line_of = [](const std::string& text, const std::string& key) {
    auto p = text.find(key);
    return p == std::string::npos ? std::string() : text.substr(p, text.find('\n', p) - p);
  };
  EXPECT_NE(line_of(r.out, "0.3.30").find("unreviewed"), std::string::npos) << r.out;
  EXPECT_NE(line_of(r.out, "0.3.29").find("reviewed"), std::string::npos) << r.out;
  EXPECT_EQ(line_of(r.out, "0.3.29").find("unreviewed"), std::string::npos) << r.out;
  r = run_cli(dir, "contracts list --db " + db);
  EXPECT_NE(line_of(r.out, "openblas").find("0.3.29"), std::string::npos) << "the highest reviewed version\n" << r.out;

  r = run_cli(dir, "contracts show openblas 0.3.30 --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("# openblas 0.3.30, revision 1 of 1, converged, unreviewed draft"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("syspilot contracts review openblas 0.3.30"), std::string::npos) << r.out;
  canonical(r.out);  // still LPCL

  r = run_cli(dir, "contracts review openblas 0.3.30 --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("marked openblas 0.3.30 revision 1 reviewed"), std::string::npos) << r.out;
  r = run_cli(dir, "contracts show openblas 0.3.30 --json --db " + db);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["review"], "reviewed");
  EXPECT_TRUE(j["reviewed_at"].is_string());
  r = run_cli(dir, "contracts list openblas --json --db " + db);
  j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[2]["version"], "0.3.30");
  EXPECT_EQ(j[2]["review"], "reviewed");
  EXPECT_EQ(j[2]["reviewed_revision"], 1);

  r = run_cli(dir, "contracts review openblas 0.3.30 --revoke --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  {
    store::Store s(db);
    EXPECT_EQ(s.get_contract("openblas", "0.3.30")->review, store::Review::Unreviewed);
    EXPECT_EQ(s.get_contract("openblas", "0.3.21")->review, store::Review::Reviewed);
  }

  // Unknown names and revisions are input errors; so is vouching for a contract with open errors.
  r = run_cli(dir, "contracts review openblas 9.9 --db " + db);
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find("stored versions"), std::string::npos) << r.err;
  r = run_cli(dir, "contracts review openblas 0.3.30 --revision 4 --db " + db);
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find("no revision 4"), std::string::npos) << r.err;
  {
    store::Store s(db);
    store::ContractRecord d;
    d.library = "zstd";
    d.version = "1.5.4";
    d.lpcl = "contract zstd \"1.5.4\" {\n}\n";
    d.status = store::ContractStatus::OpenDiagnostics;
    d.diagnostics = R"([{"severity": "error", "message": "contract zstd has no control", "code": "no-controls"}])";
    s.put_contract(d);
  }
  r = run_cli(dir, "contracts review zstd 1.5.4 --db " + db);
  EXPECT_EQ(r.exit, 2);
  EXPECT_NE(r.err.find("open error"), std::string::npos) << r.err;
  EXPECT_EQ(store::Store(db).get_contract("zstd", "1.5.4")->review, store::Review::Unreviewed);

  // A file nobody has checked against the documentation can be imported as a draft.
  r = run_cli(dir, "contracts import --unreviewed " + dir.file("a.lpcl") + " --db " + db);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_NE(r.out.find("revision 2 (unchanged) in " + db + " (unreviewed draft)"), std::string::npos) << r.out;
  EXPECT_EQ(store::Store(db).get_contract("openblas", "0.3.21")->review, store::Review::Unreviewed);
}

TEST(ContractsCliHelp, EverySubcommandHasHelp) {
  TempDir dir;
  for (const char* sub : {"list", "show", "diff", "import", "export", "review", "remove"}) {
    CliRun r = run_cli(dir, std::string("contracts ") + sub + " --help");
    EXPECT_EQ(r.exit, 0) << sub;
    EXPECT_NE(r.out.find("--db"), std::string::npos) << sub << ": " << r.out;
  }
  CliRun r = run_cli(dir, "contracts");
  EXPECT_EQ(r.exit, 2);
}
