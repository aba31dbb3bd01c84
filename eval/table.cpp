// Measured tables: JSON form, lookups, noise, the machine description and the digest of the
// contracts the tables were measured against.
#include <openssl/evp.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "eval/eval.h"
#include "tuner/measure.h"

extern char** environ;

namespace syspilot::eval {

namespace fs = std::filesystem;

double Entry::median() const { return tuner::median(samples); }

const Entry* Table::find(const Config& c) const {
  for (const auto& e : entries)
    if (e.config == c) return &e;
  return nullptr;
}
Entry* Table::find(const Config& c) {
  return const_cast<Entry*>(static_cast<const Table*>(this)->find(c));
}

const Entry* Table::best_entry() const {
  const Entry* best = nullptr;
  for (const auto& e : entries)
    if (!e.samples.empty() && (!best || e.median() < best->median())) best = &e;
  return best;
}
double Table::best() const {
  const Entry* b = best_entry();
  return b ? b->median() : 0;
}

double Table::noise() const {
  std::vector<double> s;
  for (const auto& e : entries)
    if (e.samples.size() >= 2) s.push_back(tuner::relative_spread(e.samples));
  return tuner::median(s);
}

bool Table::complete() const {
  return !entries.empty() && std::all_of(entries.begin(), entries.end(), [&](const Entry& e) {
    return e.failed() || static_cast<int>(e.samples.size()) >= repeats;
  });
}

namespace {
nlohmann::json to_json(const Table& t) {
  nlohmann::json j;
  j["scenario"] = t.scenario;
  j["machine"] = t.machine;
  j["contracts_digest"] = t.contracts_digest;
  j["contracts"] = t.contracts;
  j["measured_at"] = t.measured_at;
  j["args"] = t.args;
  j["repeats"] = t.repeats;
  j["max_load"] = t.max_load;
  j["noise"] = t.noise();
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& e : t.entries) {
    nlohmann::json x;
    x["config"] = e.config;
    x["samples"] = e.samples;
    x["outside_load"] = e.outside_load;
    x["median"] = e.median();
    x["failures"] = e.failures;
    if (!e.failure.empty()) x["failure"] = e.failure;
    x["discarded"] = e.discarded;
    entries.push_back(std::move(x));
  }
  j["entries"] = std::move(entries);
  return j;
}
}  // namespace

bool load_table(const std::string& path, Table& t, Diagnostics& diags) {
  std::ifstream in(path);
  if (!in) {
    diags.error({path, 0, 0}, "no measured table here", "eval-no-table",
                "run scripts/eval-measure.sh (or `syspilot eval --measure`) to measure it");
    return false;
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    diags.error({path, 0, 0}, "the table is not valid JSON", "eval-bad-table",
                "restore it from git or measure it again");
    return false;
  }
  try {
    Table x;
    x.scenario = j.at("scenario");
    x.machine = j.value("machine", std::map<std::string, std::string>{});
    x.contracts_digest = j.value("contracts_digest", "");
    x.contracts = j.value("contracts", std::vector<std::string>{});
    x.measured_at = j.value("measured_at", "");
    x.args = j.value("args", std::vector<std::string>{});
    x.repeats = j.value("repeats", 0);
    x.max_load = j.value("max_load", 0.3);
    for (const auto& e : j.at("entries")) {
      Entry y;
      y.config = e.at("config").get<Config>();
      y.samples = e.at("samples").get<std::vector<double>>();
      y.outside_load = e.value("outside_load", std::vector<double>{});
      y.failures = e.value("failures", 0);
      y.failure = e.value("failure", "");
      y.discarded = e.value("discarded", 0);
      x.entries.push_back(std::move(y));
    }
    t = std::move(x);
    return true;
  } catch (const std::exception& e) {
    diags.error({path, 0, 0}, std::string("the table lacks a field: ") + e.what(), "eval-bad-table",
                "restore it from git or measure it again");
    return false;
  }
}

void write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  fs::rename(tmp, path);
}

void save_table(const std::string& path, const Table& t) { write_atomically(path, to_json(t).dump(1) + "\n"); }

std::map<std::string, std::string> describe_machine() {
  std::map<std::string, std::string> m;
  m["nproc"] = std::to_string(sysconf(_SC_NPROCESSORS_ONLN));
  // The CPUs this process may run on: what the scenario's space was built for.
  m["ncpus"] = std::to_string(tuner::MachineFacts::detect().ncpus);
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      m["model name"] = line.substr(line.find(':') + 2);
      break;
    }
  utsname u{};
  if (uname(&u) == 0) m["kernel"] = std::string(u.sysname) + " " + u.release;
  std::ifstream os("/etc/debian_version");
  if (std::getline(os, line)) m["debian"] = line;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("OPENBLAS_", 0) == 0 || kv.rfind("OMP_", 0) == 0 || kv.rfind("GOMP_", 0) == 0 ||
        kv.rfind("KMP_", 0) == 0 || kv.rfind("MALLOC_", 0) == 0 || kv.rfind("BLIS_", 0) == 0)
      m["env " + kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
  }
  return m;
}

std::string contracts_digest(const std::string& dir, std::vector<std::string>* files) {
  std::vector<fs::path> paths;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".lpcl") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (const auto& p : paths) {
    std::string rel = fs::relative(p, dir).string();
    if (files) files->push_back(rel);
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string body = rel + "\n" + ss.str() + "\n";
    EVP_DigestUpdate(ctx, body.data(), body.size());
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  std::string hex;
  char buf[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    hex += buf;
  }
  return hex;
}

}  // namespace syspilot::eval
