// Internal: the one walk over the input paths, and what kind of artifact each file is,
// decided by content as well as by name.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "lpcl/diagnostics.h"

namespace syspilot::extract::walk {

enum class Kind { Skip, C, Cpp, Python, Markdown, Rst, Man, ManGz, Texinfo, Html, Text, Elf };

struct Entry {
  std::string path;  // as opened
  std::string rel;   // relative to its root, for provenance
  uint64_t size = 0;
  Kind kind = Kind::Skip;
  uint64_t dev = 0, ino = 0;  // the file the walk saw; read_entry reads only that one
};

// Lists regular files under `roots` (files or directories), skipping dot-folders. Each root
// is resolved to its real path once; below it a symbolic link is read only when its real
// target is a regular file inside that root (the entry opens the target), links to folders
// are never descended, links leading out are skipped with a `walk-link-escape` warning, and
// FIFOs, sockets and devices are never opened. Loops, dangling links and unreadable folders
// are reported in `diags`.
std::vector<Entry> list_files(const std::vector<std::string>& roots, Diagnostics& diags);

// Reads at most `limit` bytes of the entry's file: opened without blocking and read only
// when it is still the regular file the walk listed (same device and inode), so a FIFO,
// device, folder or link to outside put in its place meanwhile is refused with `err`.
bool read_entry(const Entry& e, uint64_t limit, std::string& out, std::string& err);

// The kind by name; refine_kind looks at the first bytes (ELF, gzip, NUL bytes, shebang).
Kind kind_by_name(const std::string& rel);
Kind refine_kind(Kind by_name, const std::string& rel, const char* head, size_t n, std::string& why_skipped);

bool is_code(Kind k);
bool is_doc(Kind k);
const char* doc_format(Kind k);

}  // namespace syspilot::extract::walk
