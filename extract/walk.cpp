// The tree walk: regular files under the roots, with loops, dangling links and unreadable
// folders reported instead of followed; and artifact kinds by name and by content.
#include "extract/walk.h"

#include <sys/stat.h>

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
    if (::stat(e.path().c_str(), &st) != 0) {
      struct stat lst {};
      bool link = ::lstat(e.path().c_str(), &lst) == 0 && S_ISLNK(lst.st_mode);
      diags.warning({e.path().string(), 0, 0},
                    link ? "dangling or looping symbolic link: " + std::string(std::strerror(errno))
                         : "cannot stat: " + std::string(std::strerror(errno)),
                    link ? "walk-bad-link" : "walk-unreadable");
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (!seen.insert({st.st_dev, st.st_ino}).second) {
        diags.warning({e.path().string(), 0, 0}, "symbolic link loop (folder already visited); not followed",
                      "walk-symlink-loop");
        continue;
      }
      walk_dir(e.path(), root, seen, out, diags, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      Entry en;
      en.path = e.path().string();
      en.rel = e.path().lexically_relative(root).string();
      en.size = static_cast<uint64_t>(st.st_size);
      en.kind = kind_by_name(en.rel);
      out.push_back(std::move(en));
    } else {
      diags.note({e.path().string(), 0, 0}, "skipped: not a regular file (FIFO, socket or device)",
                 "skip-not-source");
    }
  }
}

}  // namespace

std::vector<Entry> list_files(const std::vector<std::string>& roots, Diagnostics& diags) {
  std::vector<Entry> out;
  for (auto& r : roots) {
    struct stat st {};
    if (::stat(r.c_str(), &st) != 0) {
      diags.error({r, 0, 0}, "path does not exist or cannot be read: " + std::string(std::strerror(errno)),
                  "walk-missing", "pass a library source folder, a header, a doc file or a shared object");
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      std::set<std::pair<dev_t, ino_t>> seen{{st.st_dev, st.st_ino}};
      walk_dir(fs::path(r), fs::path(r), seen, out, diags, 0);
    } else {
      Entry en;
      en.path = r;
      en.rel = fs::path(r).filename().string();
      en.size = static_cast<uint64_t>(st.st_size);
      en.kind = kind_by_name(en.rel);
      out.push_back(std::move(en));
    }
  }
  return out;
}

Kind kind_by_name(const std::string& rel) {
  std::string name = lower(fs::path(rel).filename().string());
  std::string ext = lower(fs::path(name).extension().string());
  if (ext == ".c") return Kind::C;
  if (ext == ".h") return Kind::C;  // refined to C++ by content
  if (ext == ".cc" || ext == ".cpp" || ext == ".cxx" || ext == ".c++" || ext == ".hpp" || ext == ".hh" ||
      ext == ".hxx" || ext == ".ipp" || ext == ".inl" || ext == ".tcc" || ext == ".cu" || ext == ".cuh")
    return Kind::Cpp;
  if (ext == ".in" && (ends_with(name, ".h.in") || ends_with(name, ".c.in"))) return Kind::C;
  // DocBook manuals (jemalloc.xml.in): tags around prose, read like HTML.
  if ((ext == ".in" && ends_with(name, ".xml.in")) || ext == ".xml") return Kind::Html;
  if (ext == ".py") return Kind::Python;
  if (ext == ".md" || ext == ".markdown") return Kind::Markdown;
  if (ext == ".rst") return Kind::Rst;
  if (ext == ".texi" || ext == ".texinfo" || ext == ".txi") return Kind::Texinfo;
  if (ext == ".html" || ext == ".htm") return Kind::Html;
  if (ext == ".gz" && name.size() > 5) {
    std::string inner = fs::path(name.substr(0, name.size() - 3)).extension().string();
    if (inner.size() >= 2 && std::isdigit(static_cast<unsigned char>(inner[1]))) return Kind::ManGz;
    return Kind::Skip;
  }
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
