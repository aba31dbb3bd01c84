// Internal: the doc scanner (prose in Markdown, RST, man, texinfo, HTML, text) and the
// libclang pass over public headers. Called by extract(); not part of the public API.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "extract/facts.h"

namespace syspilot::extract {

namespace docs {
// Knob names in `text` with the sentence that names each; `format` selects the markup to strip.
std::vector<DocMention> scan_doc(const std::string& rel, std::string_view text, const std::string& format);
bool gunzip(std::string_view in, std::string& out, std::string& err);  // capped at 64 MB
}  // namespace docs

namespace api {
// A C or C++ header, or a configure template of one (foo.h.in, omp.h.var, foo.h.cmake).
bool is_header(const std::string& rel);
// Headers a library installs for its users: `installed` when its build files install it, else
// by its path (include/, api/, the top folder, lib/*.h). Never deprecated.* headers.
bool is_public_header(const std::string& rel, bool installed = false);
// (path, rel) pairs; rel is what the facts cite. `knobs`: the environment variables the library
// reads; a setter named after one (kmp_set_stacksize, KMP_STACKSIZE) is a control of it.
// `tree_headers`: the tree's other headers, where the public ones' includes are looked for
// (a configure template stands in for the header it would generate).
std::vector<ApiControl> scan_headers(const std::vector<std::pair<std::string, std::string>>& headers,
                                     const std::vector<std::string>& include_dirs,
                                     const std::vector<std::string>& knobs, Diagnostics& diags,
                                     const std::vector<std::pair<std::string, std::string>>& tree_headers = {});
// Category for a declaration by its name, parameters and doc: threads, affinity, allocator,
// device, workers, spin, limit; empty when it is not a resource control.
std::string control_category(const std::string& name, const std::string& signature, const std::string& doc);
}  // namespace api

}  // namespace syspilot::extract
