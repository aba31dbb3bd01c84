// Composition: the application's libraries (ELF or manifest), their contracts (store, corpus,
// or synthesized from the installed library), and how they meet (nesting and co-running from
// the source scan or the manifest).
#include "tuner/compose.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lpcl/lpcl.h"
#include "tuner/contract_lookup.h"
#ifdef HAVE_SYSPILOT_STORE
#include "store/store.h"
#endif
#if defined(HAVE_SYSPILOT_SYNTH) && defined(HAVE_SYSPILOT_EXTRACT)
#include "extract/extract.h"
#include "synth/synth.h"
#endif

namespace fs = std::filesystem;

namespace syspilot::tuner {

const ContractUse* Composition::find_contract(const std::string& name) const {
  for (auto& c : contracts)
    if (c.contract.name == name) return &c;
  return nullptr;
}

namespace {
using namespace compose_detail;

const char* kAppThreads = "app-threads";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, sep)) out.push_back(cur);
  return out;
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

bool any_glob(const std::string& alternatives, const std::string& text) {
  for (auto& g : split(alternatives, '|'))
    if (!g.empty() && glob_match(g, text)) return true;
  return false;
}

std::vector<std::string> default_contract_dirs() {
  if (const char* e = std::getenv("SYSPILOT_CORPUS_DIR"); e && *e) return {e};
  return {std::string(SYSPILOT_SOURCE_DIR) + "/corpus"};
}

// Every contract the composition may use, in lookup order: store first, then the folders.
struct Candidates {
  std::vector<ContractUse> all;

  void load_dirs(const std::vector<std::string>& dirs, Diagnostics& diags) {
    for (auto& d : dirs) {
      std::error_code ec;
      if (!fs::is_directory(d, ec)) {
        if (!fs::exists(d, ec))
          diags.warning({d, 0, 0}, "contract folder does not exist", "no-contract-dir",
                        "pass an existing folder of *.lpcl files");
        continue;
      }
      std::vector<fs::path> files;
      for (auto& e : fs::directory_iterator(d, ec))
        if (e.path().extension() == ".lpcl") files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (auto& f : files) load_file(f.string(), "corpus", diags);
    }
    prefer_reviewed(all);  // unreviewed store drafts go behind the folders' reviewed contracts
  }

  void load_file(const std::string& path, const std::string& source, Diagnostics& diags) {
    Diagnostics local;
    lpcl::Document doc = lpcl::parse_file(path, local);
    if (local.has_errors()) {
      diags.warning({path, 0, 0}, "contract file does not parse; skipped (" + std::to_string(local.error_count()) +
                                      " errors, first: " + local.items().front().message + ")",
                    "bad-contract", "run `syspilot lpcl check " + path + "`");
      return;
    }
    for (auto& c : doc.contracts) all.push_back({c, source, path, {}});
  }

  void load_store(const std::string& path, Diagnostics& diags) { add_store_contracts(all, path, diags); }

  const ContractUse* by_soname(const Library& lib) const {
    std::vector<std::string> names = {lib.soname};
    if (!lib.real_path.empty()) names.push_back(fs::path(lib.real_path).filename().string());
    if (!lib.path.empty()) names.push_back(fs::path(lib.path).filename().string());
    // Variants of one library share a soname (Debian's OpenBLAS pthreads and OpenMP builds):
    // among the matches, prefer the contract named after the build the path resolved to.
    std::string variant = lib.variant;
    std::replace(variant.begin(), variant.end(), '-', '_');
    const ContractUse* first = nullptr;
    for (auto& c : all) {
      bool match = false;
      for (auto& b : c.contract.bindings)
        if (b.kind == "soname")
          for (auto& n : names) match |= glob_match(b.pattern, n);
      if (!match) continue;
      if (!variant.empty() && c.contract.name == variant) return &c;
      if (!first) first = &c;
    }
    return first;
  }

  const ContractUse* by_name(const std::string& name) const {
    for (auto& c : all)
      if (c.contract.name == name) return &c;
    return nullptr;
  }

  const ContractUse* by_symbols(const std::set<std::string>& imports) const {
    for (auto& c : all)
      for (auto& b : c.contract.bindings)
        if (b.kind == "symbol")
          for (auto& s : imports)
            if (glob_match(b.pattern, s)) return &c;
    return nullptr;
  }
};

std::string library_stem(const std::string& soname) {
  std::string s = fs::path(soname).filename().string();
  if (s.rfind("lib", 0) == 0) s = s.substr(3);
  auto dot = s.find(".so");
  if (dot != std::string::npos) s = s.substr(0, dot);
  return s;
}

// Drafts a contract from the installed shared object when synthesis is built in.
bool synthesize_for(const Library& lib, ContractUse& out, Diagnostics& diags) {
#if defined(HAVE_SYSPILOT_SYNTH) && defined(HAVE_SYSPILOT_EXTRACT)
  if (lib.real_path.empty()) return false;
  try {
    extract::ExtractOptions eo;
    eo.paths = {lib.real_path};
    eo.library = library_stem(lib.soname);
    eo.api_controls = false;
    eo.threads = 1;
    extract::Facts facts = extract::extract(eo);
    synth::SynthOptions so;
    so.library = eo.library;
    synth::SynthResult r = synth::synthesize(facts, so, nullptr);
    // The drafter knows the soname from the binary; make sure the binding is there.
    bool bound = false;
    for (auto& b : r.contract.bindings) bound |= b.kind == "soname" && glob_match(b.pattern, lib.soname);
    if (!bound) {
      lpcl::Binding b;
      b.kind = "soname";
      b.pattern = lib.soname;
      r.contract.bindings.push_back(b);
    }
    out = {r.contract, "synthesized", lib.real_path, {lib.soname}};
    diags.note({lib.real_path, 0, 0},
               "no contract for " + lib.soname + ": drafted one from the shared object (" + r.drafter + ")",
               "contract-synthesized", "review it and add it to corpus/ or the store");
    return true;
  } catch (const std::exception& e) {
    diags.warning({lib.real_path, 0, 0}, "could not draft a contract for " + lib.soname + ": " + e.what(),
                  "synthesis-failed");
    return false;
  }
#else
  (void)lib;
  (void)out;
  (void)diags;
  return false;
#endif
}

void add_contract(Composition& comp, const ContractUse& use, const std::string& soname) {
  for (auto& c : comp.contracts)
    if (c.contract.name == use.contract.name) {
      if (!soname.empty() && std::find(c.libraries.begin(), c.libraries.end(), soname) == c.libraries.end())
        c.libraries.push_back(soname);
      return;
    }
  ContractUse u = use;
  u.libraries.clear();
  if (!soname.empty()) u.libraries.push_back(soname);
  comp.contracts.push_back(u);
}

// A contract whose library is linked into the executable binds it when one of these holds, in
// this order of evidence:
//   - a defined symbol of the executable matches one of its `binds symbol` globs (an unstripped
//     static link);
//   - the executable's file name matches one of its `binds executable` globs (the contract says
//     which programs carry it);
//   - the executable's read-only data holds, as whole strings, the names of at least two of its
//     environment controls that no other candidate contract declares (a stripped static link
//     still holds the names its getenv calls read; a name several libraries share, such as
//     OMP_NUM_THREADS, proves nothing).
// Only contracts not already composed are considered. The library is listed as found "embedded".
// Returns the contracts that joined. `child`: the executable is a program a child process ran.
std::vector<std::string> bind_embedded(Composition& comp, const Candidates& cands, const std::string& binary,
                                       const ElfInfo& app, Diagnostics& diags, bool child = false) {
  std::vector<std::string> added;
  // env control name -> the libraries (contract names: a library may have several versions or
  // sources among the candidates) whose contracts declare it
  std::map<std::string, std::set<std::string>> declared_by;
  for (const auto& c : cands.all)
    for (const auto& k : c.contract.controls)
      if (k.how.kind == lpcl::ControlKind::Kind::Env) declared_by[k.name].insert(c.contract.name);
  const std::string exe = fs::path(binary).filename().string();
  std::set<std::string> seen;
  for (const auto& c : cands.all) {
    const std::string& name = c.contract.name;
    if (comp.find_contract(name) || !seen.insert(name).second) continue;
    std::string how;
    for (const auto& b : c.contract.bindings) {
      if (b.kind == "symbol")
        for (const auto& s : app.defined)
          if (glob_match(b.pattern, s)) {
            how = "defines " + s;
            break;
          }
      if (how.empty() && b.kind == "executable" && glob_match(b.pattern, exe)) how = "executable " + exe;
      if (!how.empty()) break;
    }
    if (how.empty()) {
      std::vector<std::string> found;
      for (const auto& k : c.contract.controls)
        if (k.how.kind == lpcl::ControlKind::Kind::Env && declared_by[k.name].size() == 1 && app.env_strings.count(k.name) &&
            std::find(found.begin(), found.end(), k.name) == found.end())
          found.push_back(k.name);
      if (found.size() >= 2) how = "holds the names " + found[0] + ", " + found[1];
    }
    if (how.empty()) continue;
    Library l;
    l.soname = name + " (linked into " + exe + ")";
    l.path = binary;
    if (child) {
      std::error_code ec;
      l.real_path = fs::canonical(binary, ec).string();
    }
    l.found_by = std::string(child ? "child process, embedded: " : "embedded: ") + how;
    l.direct = !child;
    l.contract = name;
    comp.libraries.push_back(l);
    add_contract(comp, c, l.soname);
    added.push_back(name);
    diags.note({binary, 0, 0},
               "contract " + name + " binds " + (child ? "the program a child process ran" : "the executable itself") + " (" +
                   how + "): " + name + " is linked into it, not loaded as a shared library",
               "embedded-library");
  }
  return added;
}

void add_relation(Composition& comp, Relation r) {
  if (r.outer == r.inner) return;
  if (r.kind == Relation::Kind::CoRun && r.outer > r.inner) std::swap(r.outer, r.inner);
  for (auto& e : comp.relations)
    if (e.kind == r.kind && e.outer == r.outer && e.inner == r.inner) return;
  comp.relations.push_back(r);
}

// Contract name of the library `soname`, or the soname when it has none.
std::string library_name(const Composition& comp, const std::string& soname) {
  for (auto& l : comp.libraries)
    if (l.soname == soname && !l.contract.empty()) return l.contract;
  return soname;
}

// The composition's name for the runtime opening a region ("libgomp.so*|libomp.so*").
std::string runtime_name(const Composition& comp, const std::string& glob) {
  if (glob == kAppThreads) return kAppThreads;
  for (auto& l : comp.libraries)
    if (any_glob(glob, l.soname)) return library_name(comp, l.soname);
  for (auto& c : comp.contracts)
    for (auto& b : c.contract.bindings)
      if (b.kind == "soname")
        for (auto& g : split(glob, '|'))
          if (glob_match(g, b.pattern) || glob_match(b.pattern, g)) return c.contract.name;
  return library_stem(split(glob, '|').front());
}

void relations_from_scan(Composition& comp, const SourceScan& scan) {
  std::map<std::string, const Region*> by_tag;
  for (auto& r : scan.regions) by_tag[r.tag] = &r;
  struct Activity {
    std::string library;
    std::vector<std::string> regions;
    std::string where;
  };
  std::vector<Activity> acts;
  for (auto& cs : scan.calls) acts.push_back({cs.library, cs.regions, cs.file + ":" + std::to_string(cs.line)});
  for (auto& r : scan.regions)
    if (r.kind != "thread") acts.push_back({runtime_name(comp, r.runtime), r.enclosing, r.file + ":" + std::to_string(r.line)});
  // Nesting: an activity inside another runtime's parallel region.
  for (auto& a : acts)
    for (auto& tag : a.regions) {
      auto it = by_tag.find(tag);
      if (it == by_tag.end() || it->second->kind == "thread") continue;
      add_relation(comp, {Relation::Kind::Nested, runtime_name(comp, it->second->runtime), a.library,
                          it->second->kind, a.where});
    }
  // Alternating: two runtimes that each open top-level regions take turns, and the idle pool
  // of one (spinning, or just sized for the whole machine) is still there while the other works.
  for (auto& a : scan.regions)
    for (auto& b : scan.regions) {
      if (a.kind == "thread" || b.kind == "thread" || &a == &b) continue;
      std::string ra = runtime_name(comp, a.runtime), rb = runtime_name(comp, b.runtime);
      if (ra == rb) continue;
      bool nested = std::find(b.enclosing.begin(), b.enclosing.end(), a.tag) != b.enclosing.end() ||
                    std::find(a.enclosing.begin(), a.enclosing.end(), b.tag) != a.enclosing.end();
      if (!nested) add_relation(comp, {Relation::Kind::CoRun, ra, rb, "alternating", a.file + ":" + std::to_string(a.line)});
    }
  // Co-running: what a thread does runs beside what the rest of the program does.
  for (auto& r : scan.regions) {
    if (r.kind != "thread") continue;
    comp.app_threads = true;
    std::vector<const Activity*> inside, outside;
    for (auto& a : acts)
      (std::find(a.regions.begin(), a.regions.end(), r.tag) != a.regions.end() ? inside : outside).push_back(&a);
    std::vector<std::string> in_libs;
    for (auto* a : inside) in_libs.push_back(a->library);
    if (in_libs.empty()) in_libs.push_back(kAppThreads);
    for (auto& lib : in_libs)
      for (auto* b : outside)
        add_relation(comp, {Relation::Kind::CoRun, lib, b->library, "thread", r.file + ":" + std::to_string(r.line)});
  }
}

// Manifest: JSON ({"libraries": [...], "contracts": [...], "nested": [[outer, inner]],
// "co_run": [[a, b]], "drop": [...]}) or lines ("library X", "contract FILE",
// "nested OUTER > INNER", "corun A + B", "drop X"; # comments).
struct Manifest {
  std::vector<std::string> libraries, contracts, drop;
  std::vector<std::pair<std::string, std::string>> nested, co_run;
};

bool read_manifest(const std::string& path, Manifest& m, Diagnostics& diags) {
  std::ifstream in(path);
  if (!in) {
    diags.error({path, 0, 0}, "manifest cannot be read", "bad-manifest", "check the --manifest path");
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  std::string base = fs::path(path).parent_path().string();
  auto resolve = [&](const std::string& p) { return fs::path(p).is_absolute() || base.empty() ? p : base + "/" + p; };
  if (trim(text).rfind('{', 0) == 0) {
    try {
      auto j = nlohmann::json::parse(text);
      for (auto& x : j.value("libraries", nlohmann::json::array())) m.libraries.push_back(x.get<std::string>());
      for (auto& x : j.value("contracts", nlohmann::json::array())) m.contracts.push_back(resolve(x.get<std::string>()));
      for (auto& x : j.value("drop", nlohmann::json::array())) m.drop.push_back(x.get<std::string>());
      for (auto& x : j.value("nested", nlohmann::json::array()))
        m.nested.emplace_back(x.at(0).get<std::string>(), x.at(1).get<std::string>());
      for (auto& x : j.value("co_run", nlohmann::json::array()))
        m.co_run.emplace_back(x.at(0).get<std::string>(), x.at(1).get<std::string>());
      return true;
    } catch (const std::exception& e) {
      diags.error({path, 0, 0}, std::string("manifest is not valid: ") + e.what(), "bad-manifest",
                  "see docs/analysis.md for the manifest format");
      return false;
    }
  }
  std::istringstream is(text);
  int lineno = 0;
  bool ok = true;
  for (std::string line; std::getline(is, line);) {
    ++lineno;
    if (auto h = line.find('#'); h != std::string::npos) line = line.substr(0, h);
    line = trim(line);
    if (line.empty()) continue;
    auto sp = line.find_first_of(" \t");
    std::string word = line.substr(0, sp), rest = sp == std::string::npos ? "" : trim(line.substr(sp));
    auto pair = [&](const char* sep, std::vector<std::pair<std::string, std::string>>& into) {
      auto at = rest.find(sep);
      if (at == std::string::npos || trim(rest.substr(0, at)).empty() || trim(rest.substr(at + 1)).empty()) {
        diags.error({path, lineno, 1}, "`" + word + "` needs two names separated by '" + sep + "'", "bad-manifest",
                    std::string("write e.g. `") + word + " libgomp " + sep + " openblas`");
        ok = false;
        return;
      }
      into.emplace_back(trim(rest.substr(0, at)), trim(rest.substr(at + 1)));
    };
    if (rest.empty()) {
      diags.error({path, lineno, 1}, "`" + word + "` needs an argument", "bad-manifest");
      ok = false;
    } else if (word == "library") m.libraries.push_back(rest);
    else if (word == "contract") m.contracts.push_back(resolve(rest));
    else if (word == "drop") m.drop.push_back(rest);
    else if (word == "nested") pair(">", m.nested);
    else if (word == "corun" || word == "co_run") pair("+", m.co_run);
    else {
      diags.error({path, lineno, 1}, "unknown manifest statement `" + word + "`", "bad-manifest",
                  "use library, contract, nested, corun or drop");
      ok = false;
    }
  }
  return ok;
}

// Resolves a manifest or request name (a contract name or a soname) in the composition.
std::string resolve_name(const Composition& comp, const std::string& n) {
  if (n == kAppThreads) return n;
  for (auto& l : comp.libraries)
    if (l.soname == n || library_stem(l.soname) == n) return l.contract.empty() ? l.soname : l.contract;
  for (auto& c : comp.contracts)
    if (c.contract.name == n) return n;
  return n;
}

void bind_contracts(Composition& comp, const Candidates& cands, bool synthesize, Diagnostics& diags) {
  for (auto& lib : comp.libraries) {
    if (is_base_library(lib.soname)) continue;
    const ContractUse* use = cands.by_soname(lib);
    if (!use) use = cands.by_name(library_stem(lib.soname));
    if (use) {
      lib.contract = use->contract.name;
      add_contract(comp, *use, lib.soname);
      continue;
    }
    ContractUse drafted;
    if (lib.direct && synthesize && synthesize_for(lib, drafted, diags)) {
      lib.contract = drafted.contract.name;
      add_contract(comp, drafted, lib.soname);
    } else if (lib.direct) {
      diags.note({lib.path, 0, 0}, "no contract for " + lib.soname, "no-contract",
                 "add one to corpus/ or the store (syspilot synth)");
    }
  }
}

// The C runtime is nobody's to tune in a single-threaded program, but once the application
// runs threads its allocator's arenas are shared: a contract that binds a base library by
// soname (glibc_malloc binds libc.so.6) joins then. Never synthesized.
void bind_base_contracts(Composition& comp, const Candidates& cands) {
  if (!comp.app_threads) return;
  for (auto& lib : comp.libraries) {
    if (!lib.contract.empty() || !is_base_library(lib.soname)) continue;
    if (const ContractUse* use = cands.by_soname(lib)) {
      lib.contract = use->contract.name;
      add_contract(comp, *use, lib.soname);
    }
  }
}

// Process counts the command exposes to its launchers: in its arguments, in the script it is
// (scripts), and in any argument that names a text file (`bash batch.sh`).
void find_command_process_controls(Composition& comp, const ComposeOptions& opts,
                                   std::vector<std::pair<std::string, std::string>> scripts, Diagnostics& diags) {
  std::vector<std::string> args = opts.args.empty() && !opts.binary.empty() ? std::vector<std::string>{opts.binary} : opts.args;
  if (args.empty()) return;
  auto launchers = load_launchers({}, diags);
  for (size_t i = 1; i < args.size(); ++i) {
    std::error_code ec;
    if (!fs::is_regular_file(args[i], ec) || fs::file_size(args[i], ec) > (1u << 20)) continue;
    std::ifstream in(args[i], std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::string t = text.str();
    if (t.substr(0, 4096).find('\0') != std::string::npos) continue;  // not text
    if (std::none_of(scripts.begin(), scripts.end(), [&](auto& s) { return s.first == args[i]; }))
      scripts.emplace_back(args[i], t);
  }
  for (auto& p : placeholders(args))
    if (p.has_fallback && !p.fallback.empty()) comp.command_values.emplace(p.name, p.fallback);
  std::vector<std::string> fixed;
  comp.process_controls = find_process_controls(args, scripts, launchers, &fixed);
  for (auto& f : fixed)
    diags.note({comp.application, 0, 0}, "a process count is fixed in the command: " + f, "fixed-process-count",
               "write the count as ${NAME:-N} in a script or {NAME:-N} in the arguments, and tune it with --add NAME=...");
}

}  // namespace

namespace {

// A child's program larger than this is not read for linked-in libraries.
constexpr std::uintmax_t kMaxEmbeddedScan = std::uintmax_t(256) << 20;

// Adds what a run had mapped that the ELF walk did not find. `in_root`: the paths the started
// process itself mapped (null: all of them); the others only its children mapped.
bool add_runtime_libraries(Composition& comp, const std::vector<std::string>& mapped, const std::set<std::string>* in_root,
                           const std::vector<std::string>& programs, const ComposeOptions& opts, Diagnostics& diags) {
  Candidates cands;
  cands.load_store(opts.store_path, diags);
  cands.load_dirs(opts.contract_dirs.empty() ? default_contract_dirs() : opts.contract_dirs, diags);
  std::vector<std::string> added;       // contract names that joined
  std::set<std::string> from_children;  // of those, the ones only child processes loaded
  for (auto& path : mapped) {
    std::string name = fs::path(path).filename().string();
    std::error_code ec;
    std::string real = fs::canonical(path, ec).string();
    if (ec) real = path;
    bool known = false;
    for (auto& l : comp.libraries) known |= l.soname == name || l.path == path || l.real_path == real;
    // Nothing composed and no application (a manifest alone): nothing to add to.
    if (known || (comp.libraries.empty() && comp.application.empty())) continue;
    Library l;
    l.soname = name;
    l.path = path;
    l.real_path = real;
    l.variant = variant_of(real);
    l.found_by = in_root && !in_root->count(path) ? "child process" : "dlopen";
    ElfInfo info = read_elf(real, false);
    if (info.ok && !info.soname.empty()) l.soname = info.soname;
    if (!is_base_library(l.soname))
      if (const ContractUse* use = cands.by_soname(l)) {
        l.contract = use->contract.name;
        if (!comp.find_contract(use->contract.name)) {
          added.push_back(use->contract.name);
          if (l.found_by == "child process") from_children.insert(use->contract.name);
        }
        add_contract(comp, *use, l.soname);
      }
    comp.libraries.push_back(l);
  }
  // The programs child processes ran (a script's commands): a library linked into one (Debian's
  // zstd command carries its own libzstd) maps no shared object. Not the started program itself
  // nor its interpreter, which compose() looked at already (a script's interpreter's insides are
  // not the script's); not with nothing composed to add to.
  if (!comp.libraries.empty() || !comp.application.empty()) {
    std::set<std::string> skip;
    for (const std::string& p : {opts.binary, comp.interpreter}) {
      std::error_code ec;
      if (!p.empty()) skip.insert(fs::canonical(p, ec).string());
    }
    for (auto& program : programs) {
      std::error_code ec;
      std::string real = fs::canonical(program, ec).string();
      if (ec || skip.count(real) || !fs::is_regular_file(real, ec)) continue;
      if (fs::file_size(real, ec) > kMaxEmbeddedScan) {
        diags.note({program, 0, 0}, "not searched for linked-in libraries: larger than 256 MiB", "embedded-skipped");
        continue;
      }
      ElfInfo info = read_elf(real, false, true);
      if (!info.ok) continue;  // a script run by its interpreter: the interpreter is a program too
      for (auto& n : bind_embedded(comp, cands, program, info, diags, true)) {
        added.push_back(n);
        from_children.insert(n);
      }
    }
  }
  // Nothing in the source says where a plugin's code runs: it shares the process with every
  // runtime already composed, so it is taken to run beside each of them. A library only child
  // processes load runs beside the others too, in processes that share the CPUs.
  for (auto& n : added) {
    const char* how = from_children.count(n) ? "processes" : "dlopen";
    // Printed after " at ": "(dlopen at run time)".
    const char* where = from_children.count(n) ? "run time in a child process" : "run time";
    for (auto& c : comp.contracts)
      if (c.contract.name != n && std::find(added.begin(), added.end(), c.contract.name) == added.end())
        add_relation(comp, {Relation::Kind::CoRun, n, c.contract.name, how, where});
    if (comp.app_threads) add_relation(comp, {Relation::Kind::CoRun, n, kAppThreads, how, where});
  }
  return !added.empty();
}

}  // namespace

bool compose_runtime_libraries(Composition& comp, const std::vector<std::string>& mapped, const ComposeOptions& opts,
                               Diagnostics& diags) {
  return add_runtime_libraries(comp, mapped, nullptr, {}, opts, diags);
}

bool compose_runtime_libraries(Composition& comp, const RunResult& run, const ComposeOptions& opts, Diagnostics& diags) {
  std::set<std::string> in_root;
  for (auto& u : run.library_use)
    if (u.in_root) in_root.insert(u.path);
  bool added =
      add_runtime_libraries(comp, run.libraries, run.library_use.empty() ? nullptr : &in_root, run.executables, opts, diags);
  compose_processes(comp, run);
  return added;
}

Composition compose(const ComposeOptions& opts, Diagnostics& diags) {
  Composition comp;
  comp.env = opts.env;
  Candidates cands;
  cands.load_store(opts.store_path, diags);
  cands.load_dirs(opts.contract_dirs.empty() ? default_contract_dirs() : opts.contract_dirs, diags);

  Manifest m;
  if (!opts.manifest.empty()) {
    read_manifest(opts.manifest, m, diags);
    for (auto& f : m.contracts) {
      Candidates mine;
      mine.load_file(f, "file", diags);
      // A manifest's contracts take precedence over the store and corpus.
      cands.all.insert(cands.all.begin(), mine.all.begin(), mine.all.end());
    }
  }

  ElfInfo app;
  std::vector<std::pair<std::string, std::string>> scripts;  // (path, text) scanned for process counts
  if (!opts.binary.empty()) {
    comp.application = opts.binary;
    std::string elf = opts.binary;
    app = read_elf(elf, false, true);
    // A script: the kernel runs its #! interpreter (which may be a script itself, up to the
    // kernel's four levels). The interpreter is composed in its place; what the processes the
    // script starts load joins from the first run.
    std::string why;
    for (int depth = 0; !app.ok && app.error == "not an ELF file" && depth < 4; ++depth) {
      std::string interp = interpreter_of(elf, opts.env, why);
      if (interp.empty()) break;
      std::ifstream in(elf, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      if (text.str().size() < (1u << 20)) scripts.emplace_back(elf, text.str());
      comp.interpreter = interp;
      elf = interp;
      app = read_elf(elf, false);
    }
    if (!app.ok) {
      diags.error({opts.binary, 0, 0},
                  "cannot read the application binary: " + (why.empty() || app.error != "not an ELF file" ? app.error : why),
                  "bad-binary", "pass an ELF executable, or a script whose first line names its interpreter (#!/bin/sh)");
    } else {
      if (!comp.interpreter.empty())
        diags.note({opts.binary, 0, 0},
                   "a script: composed from its interpreter " + comp.interpreter +
                       "; the libraries of the processes it starts join from the first run",
                   "script");
      if (!app.error.empty()) diags.warning({opts.binary, 0, 0}, app.error, "static-binary");
      Loader loader(opts.env);
      comp.libraries = loader.resolve(elf, app, diags);
      static const char* relevant[] = {"pthread_create", "omp_*", "GOMP_*", "__kmpc_*", "cblas_*", "dgemm_*",
                                       "fftw_*", "ZSTD_*", "cuda*", "sched_setaffinity", "pthread_setaffinity_np",
                                       "mallctl", "mallopt", "fork", "dlopen"};
      for (auto& s : app.imports)
        for (auto* g : relevant)
          if (glob_match(g, s)) {
            comp.app_imports.push_back(s);
            break;
          }
      // Its own threads: pthread_create, or std::thread / std::jthread (started in libstdc++).
      for (auto& s : app.imports)
        comp.app_threads |= s == "pthread_create" || glob_match("_ZNSt6thread15_M_start_thread*", s);
    }
  }
  for (auto& name : m.libraries) {
    bool have = false;
    for (auto& l : comp.libraries) have |= l.soname == name;
    if (have) continue;
    Library l;
    l.soname = name;
    l.direct = true;
    l.found_by = "manifest";
    std::string how;
    Loader loader(opts.env);
    if (name.find(".so") != std::string::npos) {
      l.path = loader.find(name, {}, {}, "", how);
      std::error_code ec;
      if (!l.path.empty()) {
        l.real_path = fs::canonical(l.path, ec).string();
        l.variant = variant_of(l.real_path);
      }
    }
    comp.libraries.push_back(l);
  }
  for (auto& d : m.drop)
    comp.libraries.erase(std::remove_if(comp.libraries.begin(), comp.libraries.end(),
                                        [&](const Library& l) { return l.soname == d || library_stem(l.soname) == d; }),
                         comp.libraries.end());

  bind_contracts(comp, cands, opts.synthesize, diags);
  // A manifest library named by contract (not soname) binds by name.
  for (auto& l : comp.libraries)
    if (l.contract.empty() && l.found_by == "manifest")
      if (auto* use = cands.by_name(l.soname)) {
        l.contract = use->contract.name;
        add_contract(comp, *use, "");
      }
  // Symbol bindings cover BLAS behind generic sonames (libblas.so.3) and static linking.
  if (app.ok) {
    std::set<std::string> imports(app.imports.begin(), app.imports.end());
    for (auto& c : cands.all)
      for (auto& b : c.contract.bindings)
        if (b.kind == "symbol" && !comp.find_contract(c.contract.name))
          for (auto& s : imports)
            if (glob_match(b.pattern, s)) {
              // Only when no composed contract already covers the symbol.
              bool covered = false;
              for (auto& have : comp.contracts)
                for (auto& hb : have.contract.bindings) covered |= hb.kind == "symbol" && glob_match(hb.pattern, s);
              if (!covered) add_contract(comp, c, "");
              break;
            }
  }
  // Libraries linked into the executable itself (a static libzstd in Debian's zstd): no soname
  // and no import names them. Not for a script: its interpreter's insides are not the script's.
  if (app.ok && comp.interpreter.empty()) bind_embedded(comp, cands, opts.binary, app, diags);
  for (auto& d : m.drop)
    comp.contracts.erase(std::remove_if(comp.contracts.begin(), comp.contracts.end(),
                                        [&](const ContractUse& c) { return c.contract.name == d; }),
                         comp.contracts.end());

  if (!opts.source_dir.empty()) {
    auto rules = load_region_rules({}, diags);
    // Symbol owners: exports of each direct library with a contract, plus binds symbol globs.
    std::map<std::string, std::string> owner;
    std::vector<std::pair<std::string, std::string>> globs;
    for (auto& l : comp.libraries) {
      if (!l.direct || l.real_path.empty() || is_base_library(l.soname)) continue;
      ElfInfo li = read_elf(l.real_path, true);
      std::string name = library_name(comp, l.soname);
      for (auto& s : li.exports) owner.emplace(s, name);
    }
    for (auto& c : comp.contracts)
      for (auto& b : c.contract.bindings)
        if (b.kind == "symbol") globs.emplace_back(b.pattern, c.contract.name);
    SourceScan scan = scan_source(opts.source_dir, rules, owner, globs, diags);
    comp.source_scanned = scan.files > 0;
    if (scan.files == 0)
      diags.warning({opts.source_dir, 0, 0}, "no C/C++ source files found", "no-source-files",
                    "pass the folder holding the application's .c/.cpp files");
    comp.call_sites = scan.calls;
    relations_from_scan(comp, scan);
  }
  bind_base_contracts(comp, cands);
  for (auto& [o, i] : m.nested)
    add_relation(comp, {Relation::Kind::Nested, resolve_name(comp, o), resolve_name(comp, i), "manifest", "manifest"});
  for (auto& [a, b] : m.co_run)
    add_relation(comp, {Relation::Kind::CoRun, resolve_name(comp, a), resolve_name(comp, b), "manifest", "manifest"});
  if (!m.nested.empty() || !m.co_run.empty()) comp.source_scanned = true;  // the user stated the relations
  find_command_process_controls(comp, opts, scripts, diags);
  return comp;
}

Composition compose_contracts(const std::vector<lpcl::Contract>& contracts,
                              const std::vector<std::pair<std::string, std::string>>& nested,
                              const std::vector<std::pair<std::string, std::string>>& co_run) {
  Composition comp;
  for (auto& c : contracts) add_contract(comp, {c, "store", "", {}}, "");
  for (auto& [o, i] : nested) add_relation(comp, {Relation::Kind::Nested, o, i, "request", "request"});
  for (auto& [a, b] : co_run) add_relation(comp, {Relation::Kind::CoRun, a, b, "request", "request"});
  comp.source_scanned = !nested.empty() || !co_run.empty();
  for (auto& r : comp.relations) comp.app_threads |= r.outer == kAppThreads || r.inner == kAppThreads;
  return comp;
}

Composition compose_named(const NamedComposition& req, Diagnostics& diags) {
  Candidates cands;
  cands.load_store(req.store_path, diags);
  cands.load_dirs(req.contract_dirs.empty() ? default_contract_dirs() : req.contract_dirs, diags);
  std::vector<lpcl::Contract> found;
  std::map<std::string, std::string> alias;  // requested name -> contract name
  for (auto& n : req.libraries) {
    if (n == kAppThreads) continue;
    const ContractUse* use = cands.by_name(n);
    if (!use) {
      Library l;
      l.soname = n;
      use = cands.by_soname(l);
    }
    if (!use) use = cands.by_name(library_stem(n));
    if (!use) {
      diags.error({"<request>", 0, 0}, "no contract for library `" + n + "`", "unknown-library",
                  "name a library with a contract in the store or corpus/ (by contract name or soname)");
      continue;
    }
    alias[n] = use->contract.name;
    if (std::none_of(found.begin(), found.end(), [&](auto& c) { return c.name == use->contract.name; }))
      found.push_back(use->contract);
  }
  auto name = [&](const std::string& n) {
    auto it = alias.find(n);
    return it == alias.end() ? n : it->second;
  };
  std::vector<std::pair<std::string, std::string>> nested, co_run;
  for (auto& [o, i] : req.nested) nested.emplace_back(name(o), name(i));
  for (auto& [a, b] : req.co_run) co_run.emplace_back(name(a), name(b));
  Composition comp = compose_contracts(found, nested, co_run);
  for (auto& use : comp.contracts)
    if (auto* c = cands.by_name(use.contract.name)) {
      use.source = c->source;
      use.path = c->path;
    }
  return comp;
}

std::vector<lpcl::Contract> contracts_of(const Composition& c) {
  std::vector<lpcl::Contract> out;
  for (auto& u : c.contracts) out.push_back(u.contract);
  return out;
}

}  // namespace syspilot::tuner
