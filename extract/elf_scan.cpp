// Shared objects without source, through elfutils' libelf: DT_SONAME and DT_NEEDED, the
// resource-relevant dynamic symbols it imports and exports, and knob-like read-only strings.
#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>

#include "extract/extract.h"

namespace syspilot::extract {

std::string parallel_region_entry(std::string_view s) {
  // The OpenMP ABIs: libgomp's GOMP_parallel* and GOMP_teams*, LLVM's __kmpc_fork_* (libomp
  // exports both).
  for (std::string_view p : {"GOMP_parallel", "GOMP_teams", "__kmpc_fork_call", "__kmpc_fork_teams"})
    if (s.substr(0, p.size()) == p) return "omp_parallel";
  // oneTBB's r1::execute(task_arena_base&, delegate_base&), classic TBB's
  // task_arena_base::internal_execute: work run inside an arena.
  if (s.substr(0, 7) == "_ZN3tbb" && s.find("task_arena_base") != std::string_view::npos &&
      s.find("execute") != std::string_view::npos)
    return "tbb_arena";
  return "";
}

namespace {

bool relevant_import(const std::string& s) {
  if (!parallel_region_entry(s).empty()) return true;
  static const char* exact[] = {"getenv", "secure_getenv", "__secure_getenv", "g_getenv", "g_environ_getenv",
                                "qgetenv", "PR_GetEnv", "SDL_getenv", "apr_env_get", "uv_os_getenv", "pthread_create", "clone", "fork",
                                "vfork", "sched_yield", "sched_setaffinity", "sched_getaffinity",
                                "pthread_setaffinity_np", "pthread_getaffinity_np", "pthread_attr_setaffinity_np",
                                "sysconf", "get_nprocs", "get_nprocs_conf", "sched_getcpu", "mmap", "madvise",
                                "posix_spawn", "pthread_yield"};
  for (auto* e : exact) if (s == e) return true;
  for (const char* p : {"omp_", "GOMP_", "__kmpc_", "kmp_", "cuda", "cu", "nccl", "hwloc_", "numa_"}) {
    size_t n = std::strlen(p);
    if (s.compare(0, n, p) == 0) {
      if ((std::strcmp(p, "cu") == 0 || std::strcmp(p, "cuda") == 0 || std::strcmp(p, "nccl") == 0) &&
          !(s.size() > n && std::isupper(static_cast<unsigned char>(s[n]))))
        continue;
      return true;
    }
  }
  return false;
}

bool relevant_export(const std::string& s) {
  // Where a runtime's parallel regions begin: what compilers call for `#pragma omp parallel`,
  // what TBB's task_arena::execute calls. A library that exports them runs those regions.
  if (!parallel_region_entry(s).empty()) return true;
  std::string low;
  for (char c : s) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* k : {"num_threads", "nthreads", "set_threads", "threads", "affinity", "mallctl", "malloc_conf",
                        "arena", "concurrency", "parallelism", "global_control", "nbworkers", "thread_pool",
                        "threadpool", "set_device", "num_procs", "blocktime"})
    if (low.find(k) != std::string::npos) return true;
  return false;
}

bool knob_string(std::string_view s) {
  if (s.size() < 5 || s.size() > 64) return false;
  if (!std::isupper(static_cast<unsigned char>(s[0]))) return false;
  bool underscore = false;
  for (char c : s) {
    if (c == '_') underscore = true;
    else if (!(std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)))) return false;
  }
  return underscore && s.back() != '_';
}

}  // namespace

BinaryFacts scan_binary(const std::string& path, Diagnostics& diags) {
  BinaryFacts b;
  b.path = path;
  if (elf_version(EV_CURRENT) == EV_NONE) {
    diags.error({path, 0, 0}, "libelf is too old for this ELF version", "elf-version");
    return b;
  }
  // without blocking, and only a regular file: a FIFO put in its place would block the open
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    diags.warning({path, 0, 0}, std::string("cannot open: ") + std::strerror(errno), "skip-unreadable");
    return b;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    diags.warning({path, 0, 0}, "cannot open: not a regular file", "skip-unreadable");
    ::close(fd);
    return b;
  }
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (!elf || elf_kind(elf) != ELF_K_ELF) {
    diags.warning({path, 0, 0}, std::string("not an ELF object: ") + elf_errmsg(-1), "elf-invalid");
    if (elf) elf_end(elf);
    ::close(fd);
    return b;
  }
  size_t shstrndx = 0;
  elf_getshdrstrndx(elf, &shstrndx);
  std::set<std::string> imports, exports, knobs;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char* sname = elf_strptr(elf, shstrndx, sh.sh_name);
    std::string name = sname ? sname : "";
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    if (sh.sh_type == SHT_DYNAMIC) {
      size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
      for (size_t i = 0; i < n; ++i) {
        GElf_Dyn dyn;
        if (!gelf_getdyn(data, static_cast<int>(i), &dyn)) break;
        if (dyn.d_tag == DT_NEEDED || dyn.d_tag == DT_SONAME) {
          const char* s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
          if (!s) continue;
          if (dyn.d_tag == DT_NEEDED) b.needed.push_back(s);
          else b.soname = s;
        }
      }
    } else if (sh.sh_type == SHT_DYNSYM) {
      size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
      for (size_t i = 0; i < n; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
        const char* s = elf_strptr(elf, sh.sh_link, sym.st_name);
        if (!s || !*s) continue;
        std::string sn = s;
        if (sym.st_shndx == SHN_UNDEF) {
          if (relevant_import(sn)) imports.insert(sn);
        } else if (GELF_ST_BIND(sym.st_info) != STB_LOCAL && relevant_export(sn)) {
          exports.insert(sn);
        }
      }
    } else if (name == ".rodata" && sh.sh_type == SHT_PROGBITS) {
      const char* p = static_cast<const char*>(data->d_buf);
      size_t n = data->d_size;
      size_t i = 0;
      while (i < n && p) {
        size_t j = i;
        while (j < n && p[j] >= 0x20 && p[j] < 0x7f) ++j;
        if (j < n && p[j] == '\0' && j > i) {
          std::string_view s(p + i, j - i);
          if (knob_string(s) && knobs.size() < 5000) knobs.emplace(s);
        }
        i = j + 1;
      }
    }
  }
  elf_end(elf);
  ::close(fd);
  b.imports.assign(imports.begin(), imports.end());
  b.exports.assign(exports.begin(), exports.end());
  b.knob_strings.assign(knobs.begin(), knobs.end());
  return b;
}

}  // namespace syspilot::extract
