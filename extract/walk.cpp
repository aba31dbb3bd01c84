// The tree walk: regular files under the roots, never leaving a root through a symbolic link;
// loops, dangling links and unreadable folders reported instead of followed; and artifact kinds.
#include "extract/walk.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

namespace fs = std::filesystem;

namespace syspilot::extract::walk {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// `p` and `root` are real paths (no links, no dot segments): a string prefix test is exact.
bool inside(const fs::path& p, const fs::path& root) {
  const std::string& a = p.native();
  const std::string& r = root.native();
  if (r == "/") return !a.empty() && a[0] == '/';
  return a == r || (a.size() > r.size() && a.compare(0, r.size(), r) == 0 && a[r.size()] == '/');
}

Entry make_entry(const fs::path& opened, const fs::path& named, const fs::path& root, const struct stat& st) {
  Entry en;
  en.path = opened.string();
  en.rel = named.lexically_relative(root).string();
  en.size = static_cast<uint64_t>(st.st_size);
  en.kind = kind_by_name(en.rel);
  en.dev = static_cast<uint64_t>(st.st_dev);
  en.ino = static_cast<uint64_t>(st.st_ino);
  return en;
}

// A symbolic link is read only when its real target is a regular file inside the root; the
// entry then opens the target's real path, so no link is followed when the file is read. A
// link to a folder is not descended: inside the root that folder is walked under its own name.
void walk_link(const fs::path& link, const fs::path& root, std::vector<Entry>& out, Diagnostics& diags) {
  std::error_code ec;
  fs::path target = fs::canonical(link, ec);
  if (ec) {
    diags.warning({link.string(), 0, 0}, "dangling or looping symbolic link: " + ec.message(), "walk-bad-link");
    return;
  }
  if (!inside(target, root)) {
    std::string text = fs::read_symlink(link, ec).string();
    diags.warning({link.string(), 0, 0}, "symbolic link leads outside the tree (to '" + text + "'); not followed",
                  "walk-link-escape", "copy the file into the tree if it belongs to the library");
    return;
  }
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) {
    diags.warning({link.string(), 0, 0}, "cannot stat link target: " + std::string(std::strerror(errno)),
                  "walk-bad-link");
    return;
  }
  if (S_ISREG(st.st_mode)) {
    out.push_back(make_entry(target, link, root, st));
  } else if (S_ISDIR(st.st_mode)) {
    if (inside(link.parent_path(), target))
      diags.warning({link.string(), 0, 0}, "symbolic link loop (points to a folder above it); not followed",
                    "walk-symlink-loop");
    else
      diags.note({link.string(), 0, 0}, "symbolic link to a folder inside the tree; not followed (the folder is "
                 "scanned under its own name)", "walk-link-dir");
  } else {
    diags.note({link.string(), 0, 0}, "skipped: link to something that is not a regular file", "skip-not-source");
  }
}

// `dir` lies under the real root and is reached through real folders only, so every path
// built here is free of links; `seen` stops bind-mount loops.
void walk_dir(const fs::path& dir, const fs::path& root, std::set<std::pair<dev_t, ino_t>>& seen,
              std::vector<Entry>& out, Diagnostics& diags, int depth) {
  if (depth > 64) {
    diags.warning({dir.string(), 0, 0}, "folder nesting deeper than 64 levels; not descended", "walk-too-deep");
    return;
  }
  std::error_code ec;
  fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    diags.warning({dir.string(), 0, 0}, "cannot read folder: " + ec.message(), "walk-unreadable",
                  "check its permissions; the rest of the tree was scanned");
    return;
  }
  std::vector<fs::directory_entry> entries;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) {
      diags.warning({dir.string(), 0, 0}, "folder listing stopped: " + ec.message(), "walk-unreadable");
      break;
    }
    entries.push_back(*it);
  }
  std::sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.path() < b.path(); });
  for (auto& e : entries) {
    std::string name = e.path().filename().string();
    if (!name.empty() && name[0] == '.') continue;  // .git, .pc (quilt), .deps: not the library
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) != 0) {
      diags.warning({e.path().string(), 0, 0}, "cannot stat: " + std::string(std::strerror(errno)),
                    "walk-unreadable");
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      walk_link(e.path(), root, out, diags);
    } else if (S_ISDIR(st.st_mode)) {
      if (!seen.insert({st.st_dev, st.st_ino}).second) {
        diags.warning({e.path().string(), 0, 0}, "folder already visited (bind mount loop); not descended",
                      "walk-symlink-loop");
        continue;
      }
      walk_dir(e.path(), root, seen, out, diags, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      out.push_back(make_entry(e.path(), e.path(), root, st));
    } else {
      // never opened: opening a FIFO blocks, a device is not source
      diags.note({e.path().string(), 0, 0}, "skipped: not a regular file (FIFO, socket or device)",
                 "skip-not-source");
    }
  }
}

}  // namespace

std::vector<Entry> list_files(const std::vector<std::string>& roots, Diagnostics& diags) {
  std::vector<Entry> out;
  for (auto& r : roots) {
    // Resolved once: a root that is itself a link is walked at its real place, and every
    // link met below is judged against that real path.
    std::error_code ec;
    fs::path real = fs::canonical(r, ec);
    struct stat st {};
    if (ec || ::stat(real.c_str(), &st) != 0) {
      diags.error({r, 0, 0}, "path does not exist or cannot be read: " + (ec ? ec.message() : std::strerror(errno)),
                  "walk-missing", "pass a library source folder, a header, a doc file or a shared object");
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      std::set<std::pair<dev_t, ino_t>> seen{{st.st_dev, st.st_ino}};
      walk_dir(real, real, seen, out, diags, 0);
    } else if (S_ISREG(st.st_mode)) {
      // a file named on the command line is read even through a link: the caller chose it
      struct stat lst {};
      bool link = ::lstat(r.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
      Entry en;
      en.path = link ? real.string() : r;
      en.rel = fs::path(r).filename().string();
      en.size = static_cast<uint64_t>(st.st_size);
      en.kind = kind_by_name(en.rel);
      en.dev = static_cast<uint64_t>(st.st_dev);
      en.ino = static_cast<uint64_t>(st.st_ino);
      out.push_back(std::move(en));
    } else {
      diags.warning({r, 0, 0}, "skipped: not a regular file or folder (FIFO, socket or device)", "skip-not-source",
                    "pass a library source folder, a header, a doc file or a shared object");
    }
  }
  return out;
}

bool read_entry(const Entry& e, uint64_t limit, std::string& out, std::string& err) {
  int fd = ::open(e.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    err = std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    err = "not a regular file";
    return false;
  }
  if (e.ino != 0 && (static_cast<uint64_t>(st.st_dev) != e.dev || static_cast<uint64_t>(st.st_ino) != e.ino)) {
    ::close(fd);
    err = "replaced since the tree was listed (by another file or a link)";
    return false;
  }
  out.resize(limit);
  size_t got = 0;
  while (got < limit) {
    ssize_t r = ::read(fd, out.data() + got, limit - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      ::close(fd);
      err = "read error";
      return false;
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  out.resize(got);
  return true;
}

// libopenblas.so.0, libstdc++.so.6.0.30: ".so." and then only version numbers. A text file named
// after one ("ld-linux-x86-64.so.2_--list-tunables.txt") is no shared object.
static bool versioned_so(const std::string& name) {
  const size_t at = name.rfind(".so.");
  if (at == std::string::npos || at + 4 >= name.size()) return false;
  return name.find_first_not_of("0123456789.", at + 4) == std::string::npos;
}

Kind kind_by_name(const std::string& rel) {
  std::string name = lower(fs::path(rel).filename().string());
  std::string ext = lower(fs::path(name).extension().string());
  if (ext == ".c") return Kind::C;
  if (ext == ".h") return Kind::C;  // refined to C++ by content
  if (ext == ".cc" || ext == ".cpp" || ext == ".cxx" || ext == ".c++" || ext == ".hpp" || ext == ".hh" ||
      ext == ".hxx" || ext == ".ipp" || ext == ".inl" || ext == ".tcc" || ext == ".cu" || ext == ".cuh")
    return Kind::Cpp;
  // Objective-C++ and Objective-C (the platform glue of many C and C++ libraries): read with the
  // C++ and C grammars, whose error recovery keeps the C calls between the message sends. A .m
  // file is Objective-C only by its content (MATLAB and Octave use .m too).
  if (ext == ".mm") return Kind::Cpp;
  if (ext == ".m") return Kind::C;
  // configure templates of C and C++ sources: foo.h.in (autoconf, CMake), omp.h.var,
  // foo.h.cmake, kernel_list.cpp.in: what the build generates from them is compiled
  if (ext == ".in" || ext == ".var" || ext == ".cmake") {
    if (ends_with(name, ".h" + ext) || ends_with(name, ".c" + ext)) return Kind::C;
    for (const char* cxx : {".cpp", ".cc", ".cxx", ".hpp", ".hh", ".hxx"})
      if (ends_with(name, cxx + ext)) return Kind::Cpp;
  }
  // DocBook manuals (jemalloc.xml.in): tags around prose, read like HTML.
  if ((ext == ".in" && ends_with(name, ".xml.in")) || ext == ".xml") return Kind::Html;
  if (ext == ".py") return Kind::Python;
  // Cython sources (.pyx, .pxi): Python with C declarations, read with the Python grammar,
  // whose error recovery keeps the Python statements around a `cdef`
  if (ext == ".pyx" || ext == ".pxi") return Kind::Python;
  // Python by convention without the suffix: LLVM lit's test configurations (lit.cfg,
  // lit.local.cfg, lit.site.cfg.in) and SCons build scripts
  if (name == "lit.cfg" || name == "lit.local.cfg" || name == "lit.site.cfg" || name == "lit.site.cfg.in" ||
      name == "sconstruct" || name == "sconscript")
    return Kind::Python;
  if (ext == ".md" || ext == ".markdown") return Kind::Markdown;
  if (ext == ".rst") return Kind::Rst;
  if (ext == ".texi" || ext == ".texinfo" || ext == ".txi") return Kind::Texinfo;
  if (ext == ".html" || ext == ".htm") return Kind::Html;
  if (ext == ".gz" && name.size() > 5) {
    std::string inner = fs::path(name.substr(0, name.size() - 3)).extension().string();
    if (inner.size() >= 2 && std::isdigit(static_cast<unsigned char>(inner[1]))) return Kind::ManGz;
    return Kind::Skip;
  }
  // A versioned shared object (libopenblas.so.0) before a man page's section suffix (.3): the
  // size limits of docs must not turn away a large library unread.
  if (ends_with(name, ".so") || versioned_so(name)) return Kind::Elf;  // confirmed by magic
  if (ext.size() >= 2 && std::isdigit(static_cast<unsigned char>(ext[1])) && ext.size() <= 4) return Kind::Man;
  if (ext == ".man" || ext == ".pod") return ext == ".man" ? Kind::Man : Kind::Text;
  if (name.rfind("readme", 0) == 0 || name.rfind("install", 0) == 0 || name == "news" || name == "usage" ||
      ext == ".txt")
    return Kind::Text;
  if (name.find(".so") != std::string::npos) return Kind::Elf;  // confirmed by magic
  if (ext.empty()) return Kind::Elf;  // scripts and binaries without extension: decided by content
  return Kind::Skip;
}

Kind refine_kind(Kind k, const std::string& rel, const char* head, size_t n, std::string& why) {
  bool elf = n >= 4 && std::memcmp(head, "\x7f" "ELF", 4) == 0;
  if (elf) return Kind::Elf;
  if (k == Kind::Elf) {
    // no extension: a Python script by its shebang, otherwise not ours
    if (n > 2 && head[0] == '#' && head[1] == '!' && std::string(head, std::min<size_t>(n, 80)).find("python") != std::string::npos)
      return Kind::Python;
    return Kind::Skip;
  }
  if (k == Kind::ManGz) {
    if (n >= 2 && static_cast<unsigned char>(head[0]) == 0x1f && static_cast<unsigned char>(head[1]) == 0x8b) return k;
    why = "named like a gzipped man page but not gzip data";
    return Kind::Skip;
  }
  if (k == Kind::Skip) return k;
  if (std::memchr(head, '\0', n) != nullptr) {
    why = "binary content (NUL bytes) in a file named like source or text";
    return Kind::Skip;
  }
  if (k == Kind::C && ends_with(lower(rel), ".m")) {
    std::string_view h(head, n);
    bool objc = false;
    for (const char* w : {"#import", "#include", "@interface", "@implementation", "@protocol"})
      objc = objc || h.find(w) != std::string_view::npos;
    if (!objc) {
      why = "a .m file without #import, #include or an Objective-C declaration: not Objective-C";
      return Kind::Skip;
    }
  }
  if (k == Kind::C && ends_with(lower(rel), ".h")) {
    std::string_view h(head, n);
    for (const char* w : {"namespace ", "template <", "template<", "class ", "std::", "constexpr "})
      if (h.find(w) != std::string_view::npos) return Kind::Cpp;
  }
  return k;
}

bool is_code(Kind k) { return k == Kind::C || k == Kind::Cpp || k == Kind::Python; }
bool is_doc(Kind k) {
  return k == Kind::Markdown || k == Kind::Rst || k == Kind::Man || k == Kind::ManGz || k == Kind::Texinfo ||
         k == Kind::Html || k == Kind::Text;
}
const char* doc_format(Kind k) {
  switch (k) {
    case Kind::Markdown: return "markdown";
    case Kind::Rst: return "rst";
    case Kind::Man: case Kind::ManGz: return "man";
    case Kind::Texinfo: return "texinfo";
    case Kind::Html: return "html";
    default: return "text";
  }
}

}  // namespace syspilot::extract::walk
