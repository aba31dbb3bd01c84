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
// Headers a library installs for its users (include/, api/, the top folder, lib/*.h).
bool is_public_header(const std::string& rel);
// (path, rel) pairs; rel is what the facts cite. `knobs`: the environment variables the library
// reads; a setter named after one (kmp_set_stacksize, KMP_STACKSIZE) is a control of it.
std::vector<ApiControl> scan_headers(const std::vector<std::pair<std::string, std::string>>& headers,
                                     const std::vector<std::string>& include_dirs,
                                     const std::vector<std::string>& knobs, Diagnostics& diags);
// Category for a declaration by its name, parameters and doc: threads, affinity, allocator,
// device, workers, spin; empty when it is not a resource control.
std::string control_category(const std::string& name, const std::string& signature, const std::string& doc);
}  // namespace api

}  // namespace syspilot::extract
