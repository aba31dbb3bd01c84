// `syspilot contracts list|show|diff|import|export|review|remove`: the contract store from the
// command line. Thin layer over store/store.h and lpcl/lpcl.h.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "lpcl/lpcl.h"
#include "store/store.h"

namespace syspilot::cli {
namespace {

using store::ContractRecord;
using store::Store;

// Adds --db to a contracts subcommand; the default follows store::default_db_path().
void add_db_option(CLI::App* cmd, std::string& db) {
  cmd->add_option("--db", db,
                  "Contract store (default: $SYSPILOT_DB, else $XDG_DATA_HOME/syspilot/syspilot.db, "
                  "else ~/.local/share/syspilot/syspilot.db)");
}

// A store that cannot be opened is an input problem (exit 2): the user named a bad file.
Store open_store(const std::string& db, bool create) {
  std::string path = db.empty() ? store::default_db_path() : db;
  try {
    return Store(path, store::OpenOptions{.read_only = false, .create = create});
  } catch (const store::StoreError& e) {
    throw UsageError(e.what());
  }
}

// Reading commands on a store that does not exist yet: say so instead of creating a file.
bool store_exists(const std::string& db) {
  std::error_code ec;
  return std::filesystem::exists(db.empty() ? store::default_db_path() : db, ec);
}

// The store a reading command needs about `lib`: a missing file is "no contract", not a new file.
Store open_existing(const std::string& db, const std::string& lib) {
  if (!store_exists(db))
    throw UsageError("no contract for library '" + lib + "': no store at " +
                     (db.empty() ? store::default_db_path() : db));
  return open_store(db, false);
}

std::string known_libraries(const Store& s) {
  std::string out;
  for (auto& l : s.libraries()) out += (out.empty() ? "" : ", ") + l.name;
  return out.empty() ? "none" : out;
}

// The highest version of `lib` with a reviewed revision ("" when none): what analysis takes.
std::string reviewed_version(const Store& s, const std::string& lib) {
  auto vs = s.versions(lib);
  for (auto v = vs.rbegin(); v != vs.rend(); ++v)
    if (v->reviewed_revision > 0) return v->version;
  return "";
}

// "VERSION" or "VERSION@REVISION".
std::pair<std::string, int> split_revision(const std::string& spec) {
  auto at = spec.rfind('@');
  if (at == std::string::npos) return {spec, 0};
  std::string rev = spec.substr(at + 1);
  if (rev.empty() || rev.find_first_not_of("0123456789") != std::string::npos || rev.size() > 9)
    throw UsageError("'" + spec + "': the revision after '@' must be a positive number");
  return {spec.substr(0, at), std::stoi(rev)};
}

// The named contract, or a usage error saying what is stored instead.
ContractRecord find_contract(const Store& s, const std::string& lib, const std::string& version_spec) {
  if (version_spec.empty()) {
    if (auto c = s.latest_contract(lib)) return *c;
    throw UsageError("no contract for library '" + lib + "' in " + s.path() +
                     " (stored libraries: " + known_libraries(s) + ")");
  }
  auto [version, revision] = split_revision(version_spec);
  if (auto c = s.get_contract(lib, version, revision)) return *c;
  auto versions = s.versions(lib);
  if (versions.empty())
    throw UsageError("no contract for library '" + lib + "' in " + s.path() +
                     " (stored libraries: " + known_libraries(s) + ")");
  std::string known;
  for (auto& v : versions) known += (known.empty() ? "" : ", ") + v.version;
  if (revision && s.get_contract(lib, version))
    throw UsageError(lib + " " + version + " has no revision " + std::to_string(revision) + " (newest: " +
                     std::to_string(s.get_contract(lib, version)->revision) + ")");
  throw UsageError("no contract for " + lib + " " + version + " in " + s.path() +
                   " (stored versions: " + known + ")");
}

// The stored LPCL text as a contract: the store keeps canonical text, which parses back.
lpcl::Contract parse_stored(const ContractRecord& r) {
  Diagnostics d;
  lpcl::Document doc = lpcl::parse(r.lpcl, r.library + "@" + r.version, d);
  if (d.has_errors() || doc.contracts.size() != 1) {
    d.print(std::cerr);
    throw std::runtime_error("the stored contract " + r.library + " " + r.version + " revision " +
                             std::to_string(r.revision) + " does not parse; re-import or re-synthesize it");
  }
  return doc.contracts.front();
}

std::string drafter_text(const ContractRecord& r) {
  std::string d = store::to_string(r.drafter);
  if (!r.model.empty()) d += " (model " + r.model;
  if (!r.prompt_id.empty())
    d += (r.model.empty() ? " (" : ", ") + std::string("prompt ") + r.prompt_id + " v" +
         std::to_string(r.prompt_version);
  if (!r.model.empty() || !r.prompt_id.empty()) d += ")";
  return d;
}

nlohmann::json parse_or_text(const std::string& s) {
  nlohmann::json j = nlohmann::json::parse(s, nullptr, false);
  return j.is_discarded() ? nlohmann::json(s) : j;
}

// "reviewed 2026-01-02T10:00:00Z", or "unreviewed draft" with what to do about it.
std::string review_text(const ContractRecord& r) {
  if (r.review == store::Review::Reviewed) return "reviewed " + r.reviewed_at;
  return std::string("unreviewed draft (after reading it: syspilot contracts review ") + r.library + " " +
         r.version + " --revision " + std::to_string(r.revision) + ")";
}

// The list's REVIEW column: the newest revision's state, and an older reviewed one.
std::string review_column(const store::VersionInfo& v) {
  if (v.review == store::Review::Reviewed) return "reviewed";
  if (v.reviewed_revision > 0) return "draft (r" + std::to_string(v.reviewed_revision) + " reviewed)";
  return "unreviewed";
}

nlohmann::json record_json(const Store& s, const ContractRecord& r) {
  nlohmann::json j = {
      {"library", r.library},       {"version", r.version},
      {"revision", r.revision},     {"digest", r.digest},
      {"status", store::to_string(r.status)},
      {"review", store::to_string(r.review)},
      {"reviewed_at", r.reviewed_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.reviewed_at)},
      {"diagnostics", parse_or_text(r.diagnostics)},
      {"drafter", store::to_string(r.drafter)},
      {"model", r.model},           {"prompt", {{"id", r.prompt_id}, {"version", r.prompt_version}}},
      {"source", r.source},         {"created_at", r.created_at},
  };
  j["facts"] = nlohmann::json::array();
  for (auto& f : r.facts) j["facts"].push_back({{"digest", f.digest}, {"source", f.source}});
  j["rounds"] = nlohmann::json::array();
  for (auto& x : r.rounds)
    j["rounds"].push_back({{"round", x.round},
                           {"drafter", x.drafter},
                           {"diagnostics", parse_or_text(x.diagnostics)},
                           {"repairs", parse_or_text(x.repairs)}});
  store::Usage u = s.usage(r.library, r.version);
  j["usage"] = {{"calls", u.calls},
                {"cache_hits", u.cache_hits},
                {"prompt_tokens", u.prompt_tokens},
                {"completion_tokens", u.completion_tokens}};
  j["contract"] = parse_or_text(r.json);
  j["lpcl"] = r.lpcl;
  return j;
}

nlohmann::json diagnostics_json(const Diagnostics& d) {
  nlohmann::json a = nlohmann::json::array();
  for (auto& x : d.items())
    a.push_back({{"severity", to_string(x.severity)},
                 {"file", x.loc.file},
                 {"line", x.loc.line},
                 {"col", x.loc.col},
                 {"message", x.message},
                 {"hint", x.hint},
                 {"code", x.code}});
  return a;
}

struct Args {
  std::string db, lib, version, v1, v2, output;
  std::vector<std::string> files;
  bool json = false, lpcl = false, unreviewed = false, revoke = false;
  int revision = 0;
};

void register_list(CLI::App* parent) {
  auto a = std::make_shared<Args>();
  auto* cmd = parent->add_subcommand("list", "List stored libraries, or the versions of LIB");
  cmd->add_option("LIB", a->lib, "Library name: list its versions");
  cmd->add_flag("--json", a->json, "Print JSON");
  add_db_option(cmd, a->db);
  cmd->callback([a] {
    if (!store_exists(a->db)) {
      if (!a->lib.empty()) open_existing(a->db, a->lib);  // throws: no store
      if (a->json) std::cout << "[]\n";
      else std::cerr << "no contracts stored yet (no store at "
                     << (a->db.empty() ? store::default_db_path() : a->db) << ")\n";
      return;
    }
    Store s = open_store(a->db, false);
    if (a->lib.empty()) {
      auto libs = s.libraries();
      if (a->json) {
        nlohmann::json j = nlohmann::json::array();
        for (auto& l : libs)
          j.push_back({{"library", l.name},
                       {"versions", l.versions},
                       {"latest", l.latest_version},
                       {"reviewed", reviewed_version(s, l.name).empty() ? nlohmann::json(nullptr)
                                                                        : nlohmann::json(reviewed_version(s, l.name))}});
        std::cout << j.dump(2) << "\n";
        return;
      }
      if (libs.empty()) {
        std::cerr << "no contracts stored yet in " << s.path() << "\n";
        return;
      }
      std::cout << std::left << std::setw(20) << "LIBRARY" << std::setw(10) << "VERSIONS" << std::setw(18)
                << "LATEST" << "REVIEWED\n";
      for (auto& l : libs) {
        std::string reviewed = reviewed_version(s, l.name);
        std::cout << std::setw(20) << l.name << std::setw(10) << l.versions << std::setw(18) << l.latest_version
                  << (reviewed.empty() ? "none" : reviewed) << "\n";
      }
      return;
    }
    auto versions = s.versions(a->lib);
    if (versions.empty())
      throw UsageError("no contract for library '" + a->lib + "' in " + s.path() +
                       " (stored libraries: " + known_libraries(s) + ")");
    if (a->json) {
      nlohmann::json j = nlohmann::json::array();
      for (auto& v : versions)
        j.push_back({{"version", v.version},
                     {"revision", v.revision},
                     {"status", store::to_string(v.status)},
                     {"review", store::to_string(v.review)},
                     {"reviewed_revision", v.reviewed_revision},
                     {"drafter", store::to_string(v.drafter)},
                     {"model", v.model},
                     {"digest", v.digest},
                     {"created_at", v.created_at}});
      std::cout << j.dump(2) << "\n";
      return;
    }
    std::cout << std::left << std::setw(18) << "VERSION" << std::setw(5) << "REV" << std::setw(18)
              << "STATUS" << std::setw(22) << "REVIEW" << std::setw(10) << "DRAFTER" << std::setw(26) << "STORED"
              << "DIGEST\n";
    for (auto& v : versions)
      std::cout << std::setw(18) << v.version << std::setw(5) << v.revision << std::setw(18)
                << store::to_string(v.status) << std::setw(22) << review_column(v) << std::setw(10)
                << store::to_string(v.drafter) << std::setw(26) << v.created_at << v.digest.substr(0, 12) << "\n";
  });
}

void register_show(CLI::App* parent) {
  auto a = std::make_shared<Args>();
  auto* cmd = parent->add_subcommand(
      "show", "Show a stored contract with its provenance (VERSION defaults to the highest; "
              "VERSION@N picks revision N)");
  cmd->add_option("LIB", a->lib, "Library name")->required();
  cmd->add_option("VERSION", a->version, "Version, or VERSION@REVISION");
  auto* json = cmd->add_flag("--json", a->json, "Print the record as JSON (contract, provenance, rounds, usage)");
  cmd->add_flag("--lpcl", a->lpcl, "Print only the LPCL text")->excludes(json);
  add_db_option(cmd, a->db);
  cmd->callback([a] {
    Store s = open_existing(a->db, a->lib);
    ContractRecord r = find_contract(s, a->lib, a->version);
    if (a->json) {
      std::cout << record_json(s, r).dump(2) << "\n";
      return;
    }
    if (a->lpcl) {
      std::cout << r.lpcl;
      return;
    }
    // Provenance as LPCL comments, so that the output is still a valid LPCL file.
    auto revisions = s.revisions(r.library, r.version);
    std::cout << "# " << r.library << " " << r.version << ", revision " << r.revision << " of "
              << revisions.size() << ", " << store::to_string(r.status) << ", " << review_text(r) << "\n";
    std::cout << "# drafter " << drafter_text(r) << ", stored " << r.created_at << "\n";
    std::cout << "# digest " << r.digest << "\n";
    if (!r.source.empty()) std::cout << "# source " << r.source << "\n";
    for (auto& f : r.facts) std::cout << "# facts " << f.digest.substr(0, 16) << " " << f.source << "\n";
    if (!r.rounds.empty()) {
      std::cout << "# rounds " << r.rounds.size() << ":";
      for (auto& x : r.rounds) std::cout << " " << x.round << "=" << x.drafter;
      std::cout << "\n";
    }
    store::Usage u = s.usage(r.library, r.version);
    if (u.calls || u.cache_hits)
      std::cout << "# llm " << u.calls << " call(s), " << u.cache_hits << " cache hit(s), "
                << u.prompt_tokens << " prompt + " << u.completion_tokens << " completion tokens\n";
    if (r.status == store::ContractStatus::OpenDiagnostics) {
      nlohmann::json d = parse_or_text(r.diagnostics);
      if (d.is_array())
        for (auto& x : d)
          std::cout << "# open: " << (x.is_object() && x.contains("message") ? x["message"].dump() : x.dump())
                    << "\n";
    }
    std::cout << r.lpcl;
  });
}

void register_diff(CLI::App* parent) {
  auto a = std::make_shared<Args>();
  auto* cmd = parent->add_subcommand(
      "diff", "Semantic difference between two stored versions of LIB (VERSION@N for a revision; "
              "exit 0 either way)");
  cmd->add_option("LIB", a->lib, "Library name")->required();
  cmd->add_option("V1", a->v1, "The older version")->required();
  cmd->add_option("V2", a->v2, "The newer version")->required();
  cmd->add_flag("--json", a->json, "Print the changes as JSON");
  add_db_option(cmd, a->db);
  cmd->callback([a] {
    Store s = open_existing(a->db, a->lib);
    ContractRecord before = find_contract(s, a->lib, a->v1);
    ContractRecord after = find_contract(s, a->lib, a->v2);
    lpcl::ContractDiff d = lpcl::diff(parse_stored(before), parse_stored(after));
    if (a->json) {
      std::cout << nlohmann::json{{"library", a->lib},
                                  {"from", {{"version", before.version}, {"revision", before.revision}}},
                                  {"to", {{"version", after.version}, {"revision", after.revision}}},
                                  {"changes", lpcl::to_json(d)}}
                       .dump(2)
                << "\n";
      return;
    }
    if (d.empty())
      std::cerr << "no semantic change between " << a->lib << " " << a->v1 << " and " << a->v2 << "\n";
    std::cout << lpcl::to_text(d);
  });
}

void register_import(CLI::App* parent) {
  auto a = std::make_shared<Args>();
  auto* cmd = parent->add_subcommand(
      "import", "Check LPCL files and store their contracts (origin manual, reviewed); files with errors "
                "are refused and nothing is stored");
  cmd->add_option("FILE", a->files, "LPCL files")->required();
  cmd->add_flag("--unreviewed", a->unreviewed,
                "Store them as unreviewed drafts (a file nobody has read against the library's documentation)");
  add_db_option(cmd, a->db);
  cmd->callback([a] {
    struct Item {
      lpcl::Contract contract;
      Diagnostics warnings;
      std::string source;
    };
    std::vector<Item> items;
    size_t errors = 0;
    for (auto& f : a->files) {
      Diagnostics d;
      lpcl::Document doc = lpcl::parse_file(f, d);
      if (!d.has_errors()) lpcl::check(doc, d);
      if (d.has_errors()) {
        print_diagnostics(f, d);
        errors += d.error_count();
        continue;
      }
      if (doc.contracts.empty()) {
        std::cerr << f << ": error: no contract in this file\n";
        ++errors;
        continue;
      }
      std::error_code ec;
      std::string abs = std::filesystem::absolute(f, ec).string();
      for (auto& c : doc.contracts) {
        Item it{c, {}, "import:" + (ec ? f : abs)};
        for (auto& x : d.items())
          if (x.severity != Severity::Error) it.warnings.add(x);
        items.push_back(std::move(it));
      }
    }
    if (errors)
      throw UsageError(std::to_string(errors) + " error(s) in the input; nothing was stored. "
                       "Fix them (syspilot check FILE shows them) and import again");
    Store s = open_store(a->db, true);
    std::vector<std::pair<const Item*, store::PutResult>> done;
    {
      // All files or none: one transaction around every contract.
      store::Transaction tx(s.db());
      for (auto& it : items) {
        ContractRecord r = ContractRecord::of(it.contract);
        r.drafter = store::Drafter::Manual;
        r.status = store::ContractStatus::Converged;
        r.review = a->unreviewed ? store::Review::Unreviewed : store::Review::Reviewed;
        r.diagnostics = diagnostics_json(it.warnings).dump();
        r.source = it.source;
        done.emplace_back(&it, s.put_contract(r));
      }
      tx.commit();
    }
    for (auto& [it, put] : done)
      std::cout << "stored " << it->contract.name << " " << it->contract.version << " revision "
                << put.revision << (put.changed ? "" : " (unchanged)") << " in " << s.path()
                << (a->unreviewed ? " (unreviewed draft)" : " (reviewed)") << "\n";
  });
}

void register_export(CLI::App* parent) {
  auto a = std::make_shared<Args>();
  auto* cmd = parent->add_subcommand(
      "export", "Print a stored contract as canonical LPCL (VERSION defaults to the highest)");
  cmd->add_option("LIB", a->lib, "Library name")->required();
  cmd->add_option("VERSION", a->version, "Version, or VERSION@REVISION");
  cmd->add_option("-o,--output", a->output, "Write to FILE instead of stdout");
  add_db_option(cmd, a->db);
  cmd->callback([a] {
    Store s = open_existing(a->db, a->lib);
    ContractRecord r = find_contract(s, a->lib, a->version);
    if (a->output.empty()) std::cout << r.lpcl;
    else write_file_atomically(a->output, r.lpcl);
  });
}

void register_review(CLI::App* parent) {
  auto a = std::make_shared<Args>();
  auto* cmd = parent->add_subcommand(
      "review", "Mark a stored contract reviewed, once a person has read it against the library's documentation "
                "(analysis then prefers it to the corpus); --revoke marks it unreviewed again");
  cmd->add_option("LIB", a->lib, "Library name")->required();
  cmd->add_option("VERSION", a->version, "Version (VERSION@N names a revision)")->required();
  cmd->add_option("--revision", a->revision, "Revision to mark (default: the newest)")->check(CLI::PositiveNumber);
  cmd->add_flag("--revoke", a->revoke, "Mark it unreviewed");
  add_db_option(cmd, a->db);
  cmd->callback([a] {
    Store s = open_existing(a->db, a->lib);
    auto [version, at_revision] = split_revision(a->version);
    if (at_revision && a->revision && at_revision != a->revision)
      throw UsageError("'" + a->version + "' and --revision " + std::to_string(a->revision) +
                       " name different revisions; give one");
    int revision = a->revision ? a->revision : at_revision;
    ContractRecord r = find_contract(s, a->lib, revision ? version + "@" + std::to_string(revision) : version);
    // A contract with open errors is no reviewed contract: fix it, then import it (reviewed).
    if (!a->revoke && r.status == store::ContractStatus::OpenDiagnostics) {
      nlohmann::json d = parse_or_text(r.diagnostics);
      size_t errors = 0;
      if (d.is_array())
        for (auto& x : d) errors += x.is_object() && x.value("severity", "") == "error";
      if (errors)
        throw UsageError(r.library + " " + r.version + " revision " + std::to_string(r.revision) + " has " +
                         std::to_string(errors) + " open error(s) (syspilot contracts show " + r.library + " " +
                         r.version + " lists them); export it, fix it and import the fixed file instead");
    }
    auto marked = s.set_review(r.library, r.version, r.revision,
                               a->revoke ? store::Review::Unreviewed : store::Review::Reviewed);
    if (!marked) throw UsageError("no contract for " + r.library + " " + r.version + " in " + s.path());
    std::cout << "marked " << r.library << " " << r.version << " revision " << *marked << " "
              << (a->revoke ? "unreviewed" : "reviewed") << " in " << s.path() << "\n";
  });
}

void register_remove(CLI::App* parent) {
  auto a = std::make_shared<Args>();
  auto* cmd = parent->add_subcommand(
      "remove", "Remove every revision of LIB VERSION (facts and LLM calls are kept)");
  cmd->add_option("LIB", a->lib, "Library name")->required();
  cmd->add_option("VERSION", a->version, "Version")->required();
  add_db_option(cmd, a->db);
  cmd->callback([a] {
    Store s = open_existing(a->db, a->lib);
    size_t revisions = s.revisions(a->lib, a->version).size();
    if (!s.remove_contract(a->lib, a->version))
      throw UsageError("no contract for " + a->lib + " " + a->version + " in " + s.path());
    std::cout << "removed " << a->lib << " " << a->version << " (" << revisions << " revision(s))\n";
  });
}

CommandRegistration reg(30, [](CLI::App& app, Context&) {
  auto* contracts =
      app.add_subcommand("contracts", "The contract store: list, show, diff, import, export, review, remove");
  contracts->require_subcommand(1);
  register_list(contracts);
  register_show(contracts);
  register_diff(contracts);
  register_import(contracts);
  register_export(contracts);
  register_review(contracts);
  register_remove(contracts);
});

}  // namespace
}  // namespace syspilot::cli
