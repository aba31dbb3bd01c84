// Internal: the scope of a fact (library, tool, test, example, bench, build), from what the
// build files say each source is compiled into, and from paths where they say nothing.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace syspilot::extract::scope {

// Build files this reads: CMakeLists.txt and *.cmake, meson.build, Makefiles (*.mk, .am, .in).
bool is_build_file(const std::string& rel);

// What a tree's build files say about its sources, file by file.
class BuildMap {
 public:
  // `rel`: the build file's path relative to its root; `text`: its content (clipped by the caller).
  void add(const std::string& rel, std::string_view text);
  // Reads a file of the tree by its relative path, for a Makefile's `include FILE` (Automake's
  // Makefile.inc lists); false when there is none. Unset: includes are not followed.
  std::function<bool(const std::string& rel, std::string& text)> read_include;
  // library | tool | test | example | bench | build for `rel`, a path relative to the root;
  // `defines_main`: the file has a main() (a program when nothing else says what it is).
  std::string scope_of(const std::string& rel, bool defines_main) const;
  size_t size() const { return by_file_.size() + by_stem_.size(); }
  // Whether the build files install `rel` as a header for the library's users (Automake's
  // include_HEADERS and every other WHERE_HEADERS but noinst_ and check_, CMake's
  // install(FILES ... DESTINATION .../include...) and PUBLIC_HEADER, meson's install_headers).
  bool installs_header(const std::string& rel) const;
  // Whether the build files install some header of the folder `rel` is in: then a header there
  // that they do not install is the library's own (libvips/include/vips/internal.h beside the
  // installed vips.h), whatever its path says.
  bool installs_beside(const std::string& rel) const;

 private:
  // Code linked into a library ships in it, whatever its target's name or folder says (meson's
  // `static_library('check', ...)` linked by an installed library through `link_with`; CMake's
  // target_link_libraries of a library): `key` names a target across build files ("meson:VAR",
  // "cmake:NAME"). Either may be seen first, so both are kept and applied when they meet.
  void target_built(const std::string& key, std::vector<std::string> paths);
  void linked_into_library(const std::string& key);
  std::unordered_map<std::string, std::vector<std::string>> target_paths_;  // key -> its sources
  std::unordered_set<std::string> linked_;                                 // keys linked into a library

  void installed_header(const std::string& path);
  std::unordered_set<std::string> headers_;  // installed headers, relative to the root
  std::unordered_set<std::string> header_dirs_;  // their folders

  // `convenience`: built into a library that is not installed (Automake's noinst_): a program
  // or a folder that says otherwise wins over it.
  void record(const std::string& path, const std::string& scope, bool by_stem, bool convenience = false);
  std::unordered_map<std::string, std::string> by_file_;  // source path -> scope
  std::unordered_set<std::string> convenience_;          // paths whose library scope is a convenience library's
  std::unordered_map<std::string, std::string> by_stem_;  // Makefile objects: path without extension
};

// The scope a path implies on its own (tests/, tools/, examples/, bench*/, cmake/, setup.py...);
// empty when it says nothing.
std::string by_path(const std::string& rel);

}  // namespace syspilot::extract::scope
