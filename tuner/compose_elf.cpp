// Finding an application's shared objects as the dynamic loader would: DT_NEEDED, DT_RPATH,
// DT_RUNPATH with $ORIGIN, LD_LIBRARY_PATH, ld.so.cache and the default directories, then
// through symlinks to the real variant (Debian's alternatives).
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tuner/compose.h"

namespace fs = std::filesystem;

namespace syspilot::tuner::compose_detail {
namespace {

std::vector<std::string> split_paths(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == ':' || ch == ';') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string expand_origin(std::string dir, const std::string& origin) {
  for (const char* tok : {"${ORIGIN}", "$ORIGIN"}) {
    size_t pos;
    while ((pos = dir.find(tok)) != std::string::npos) dir.replace(pos, std::strlen(tok), origin);
  }
  return dir;
}

bool is_file(const std::string& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// x86-64 entries of `ldconfig -p`; the cache file itself is read by ldconfig.
std::map<std::string, std::string> read_ld_cache() {
  std::map<std::string, std::string> cache;
  for (const char* cmd : {"/sbin/ldconfig -p 2>/dev/null", "ldconfig -p 2>/dev/null"}) {
    FILE* p = ::popen(cmd, "r");
    if (!p) continue;
    char line[4096];
    while (std::fgets(line, sizeof line, p)) {
      std::string l = line;
      auto arrow = l.find(" => ");
      auto paren = l.find(" (");
      if (arrow == std::string::npos || paren == std::string::npos) continue;
      std::string name = l.substr(0, paren);
      name.erase(0, name.find_first_not_of(" \t"));
      std::string flags = l.substr(paren, arrow - paren);
      std::string path = l.substr(arrow + 4);
      while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
      if (flags.find("x86-64") == std::string::npos) continue;
      cache.emplace(name, path);  // first entry wins, as in the loader
    }
    int rc = ::pclose(p);
    if (rc == 0 && !cache.empty()) break;
  }
  return cache;
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& text) {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

namespace {

// Bounds for what one executable may add (hostile binaries): symbols and strings kept.
constexpr size_t kMaxDefined = 1u << 20;
constexpr size_t kMaxEnvStrings = 1u << 16;

bool env_shaped(const char* s, size_t n) {
  if (n < 3 || n > 64 || !(s[0] >= 'A' && s[0] <= 'Z')) return false;
  bool underscore = false;
  for (size_t i = 0; i < n; ++i) {
    char c = s[i];
    if (c == '_') underscore = true;
    else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) return false;
  }
  return underscore;
}

// The env-shaped strings of one read-only section: each run of bytes between NULs.
void scan_env_strings(const Elf_Data* data, std::set<std::string>& out) {
  const char* p = static_cast<const char*>(data->d_buf);
  if (!p) return;
  size_t n = data->d_size, start = 0;
  for (size_t i = 0; i < n && out.size() < kMaxEnvStrings; ++i)
    if (p[i] == '\0') {
      if (i > start && env_shaped(p + start, i - start)) out.emplace(p + start, i - start);
      start = i + 1;
    }
}

}  // namespace

ElfInfo read_elf(const std::string& path, bool want_exports, bool want_embedded) {
  ElfInfo info;
  if (elf_version(EV_CURRENT) == EV_NONE) {
    info.error = "libelf cannot be initialised";
    return info;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    info.error = std::string("cannot open: ") + std::strerror(errno);
    return info;
  }
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    info.error = "not an ELF file";
    if (elf) elf_end(elf);
    ::close(fd);
    return info;
  }
  Elf_Scn* scn = nullptr;
  bool saw_dynamic = false;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    if (sh.sh_type == SHT_DYNAMIC) {
      saw_dynamic = true;
      size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
      for (size_t i = 0; i < n; ++i) {
        GElf_Dyn dyn;
        if (!gelf_getdyn(data, static_cast<int>(i), &dyn)) break;
        const char* s = nullptr;
        if (dyn.d_tag == DT_NEEDED || dyn.d_tag == DT_SONAME || dyn.d_tag == DT_RPATH || dyn.d_tag == DT_RUNPATH)
          s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
        if (!s) continue;
        if (dyn.d_tag == DT_NEEDED) info.needed.push_back(s);
        else if (dyn.d_tag == DT_SONAME) info.soname = s;
        else if (dyn.d_tag == DT_RPATH) info.rpath = split_paths(s);
        else if (dyn.d_tag == DT_RUNPATH) info.runpath = split_paths(s);
      }
    } else if (sh.sh_type == SHT_DYNSYM) {
      size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
      for (size_t i = 1; i < n; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
        const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
        if (!name || !*name) continue;
        int type = GELF_ST_TYPE(sym.st_info);
        if (type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE && type != STT_GNU_IFUNC) continue;
        if (sym.st_shndx == SHN_UNDEF) info.imports.insert(name);
        else if (want_exports && GELF_ST_BIND(sym.st_info) != STB_LOCAL) info.exports.insert(name);
        if (want_embedded && sym.st_shndx != SHN_UNDEF && GELF_ST_BIND(sym.st_info) != STB_LOCAL &&
            info.defined.size() < kMaxDefined)
          info.defined.insert(name);
      }
    } else if (want_embedded && sh.sh_type == SHT_SYMTAB) {
      size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
      for (size_t i = 1; i < n && info.defined.size() < kMaxDefined; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
        int type = GELF_ST_TYPE(sym.st_info);
        if (sym.st_shndx == SHN_UNDEF || GELF_ST_BIND(sym.st_info) == STB_LOCAL) continue;
        if (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC) continue;
        const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
        if (name && *name) info.defined.insert(name);
      }
    } else if (want_embedded && sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_ALLOC) &&
               !(sh.sh_flags & (SHF_WRITE | SHF_EXECINSTR))) {
      scan_env_strings(data, info.env_strings);
    }
  }
  elf_end(elf);
  ::close(fd);
  info.ok = true;
  if (!saw_dynamic) info.error = "statically linked (no dynamic section)";
  return info;
}

Loader::Loader(const std::map<std::string, std::string>& env) : cache_(read_ld_cache()) {
  auto it = env.find("LD_LIBRARY_PATH");
  const char* own = std::getenv("LD_LIBRARY_PATH");
  if (it != env.end()) ld_library_path_ = split_paths(it->second);
  else if (own) ld_library_path_ = split_paths(own);
}

std::string Loader::find(const std::string& soname, const std::vector<std::string>& rpath,
                         const std::vector<std::string>& runpath, const std::string& origin_dir,
                         std::string& found_by) {
  if (soname.find('/') != std::string::npos) {
    found_by = "path";
    return is_file(soname) ? soname : "";
  }
  auto try_dirs = [&](const std::vector<std::string>& dirs, const char* how) -> std::string {
    for (auto& d : dirs) {
      std::string p = expand_origin(d, origin_dir) + "/" + soname;
      if (is_file(p)) {
        found_by = how;
        return p;
      }
    }
    return "";
  };
  // DT_RPATH only counts when there is no DT_RUNPATH (ld.so(8)).
  if (runpath.empty())
    if (auto p = try_dirs(rpath, "rpath"); !p.empty()) return p;
  if (auto p = try_dirs(ld_library_path_, "LD_LIBRARY_PATH"); !p.empty()) return p;
  if (auto p = try_dirs(runpath, "runpath"); !p.empty()) return p;
  if (auto it = cache_.find(soname); it != cache_.end() && is_file(it->second)) {
    found_by = "ld.so.cache";
    return it->second;
  }
  static const std::vector<std::string> defaults = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                                                    "/usr/lib64", "/lib", "/usr/lib"};
  if (auto p = try_dirs(defaults, "default"); !p.empty()) return p;
  found_by.clear();
  return "";
}

std::vector<Library> Loader::resolve(const std::string& binary, const ElfInfo& app, Diagnostics& diags) {
  std::vector<Library> out;
  std::set<std::string> seen;
  struct Pending {
    std::string soname, needed_by;
    std::vector<std::string> rpath, runpath;
    std::string origin;
    bool direct;
  };
  std::string app_origin = fs::path(fs::absolute(binary)).parent_path().string();
  // The executable's DT_RPATH also applies to every library's search (when it has no RUNPATH).
  std::vector<std::string> app_rpath;
  for (auto& d : app.runpath.empty() ? app.rpath : std::vector<std::string>{})
    app_rpath.push_back(expand_origin(d, app_origin));
  std::deque<Pending> queue;
  for (auto& n : app.needed) queue.push_back({n, "", app.rpath, app.runpath, app_origin, true});
  while (!queue.empty()) {
    Pending p = queue.front();
    queue.pop_front();
    if (!seen.insert(p.soname).second) continue;
    Library lib;
    lib.soname = p.soname;
    lib.needed_by = p.needed_by;
    lib.direct = p.direct;
    std::vector<std::string> rpath = p.rpath;
    if (!p.direct && p.runpath.empty()) rpath.insert(rpath.end(), app_rpath.begin(), app_rpath.end());
    lib.path = find(p.soname, rpath, p.runpath, p.origin, lib.found_by);
    if (lib.path.empty()) {
      diags.warning({binary, 0, 0}, "shared object " + p.soname + " (needed by " +
                                        (p.needed_by.empty() ? std::string("the application") : p.needed_by) +
                                        ") is not found where the loader looks",
                    "library-not-found", "install it, or set LD_LIBRARY_PATH for the run");
      out.push_back(lib);
      continue;
    }
    std::error_code ec;
    lib.real_path = fs::canonical(lib.path, ec).string();
    if (ec) lib.real_path = lib.path;
    lib.variant = variant_of(lib.real_path);
    ElfInfo li = read_elf(lib.real_path, false);
    out.push_back(lib);
    if (!li.ok) continue;
    std::string origin = fs::path(lib.path).parent_path().string();
    for (auto& n : li.needed)
      if (!seen.count(n)) queue.push_back({n, p.soname, li.rpath, li.runpath, origin, false});
  }
  return out;
}

std::string variant_of(const std::string& real_path) {
  fs::path p(real_path);
  std::string dir = p.parent_path().filename().string();
  static const std::set<std::string> plain = {"x86_64-linux-gnu", "lib", "lib64", "usr", "local"};
  if (!dir.empty() && !plain.count(dir) && dir.find("lib") == std::string::npos) return dir;
  if (dir.rfind("openblas", 0) == 0 || dir.rfind("blis", 0) == 0 || dir.rfind("atlas", 0) == 0) return dir;
  return p.filename().string();
}

bool is_base_library(const std::string& soname) {
  static const char* base[] = {"libc.so*",     "libm.so*",      "libpthread.so*", "libdl.so*",
                               "librt.so*",    "ld-linux*",     "libstdc++.so*",  "libgcc_s.so*",
                               "libgfortran*", "libquadmath*",  "linux-vdso*",    "libutil.so*",
                               "libresolv*",   "libatomic.so*", "libz.so*",       "libelf.so*"};
  for (auto* g : base)
    if (glob_match(g, soname)) return true;
  return false;
}

std::string rules_dir_or_default(const std::string& dir) {
  if (!dir.empty()) return dir;
  if (const char* e = std::getenv("SYSPILOT_RULES_DIR"); e && *e) return e;
  return std::string(SYSPILOT_SOURCE_DIR) + "/tuner/rules";
}

}  // namespace syspilot::tuner::compose_detail
