// libFuzzer target for LPCL: parse + check on any bytes; for inputs that parse, the
// properties the language promises (fmt idempotent, JSON round trip, empty self-diff);
// and from_json on inputs that happen to be JSON. A broken property aborts with a message.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "lpcl/lpcl.h"

using namespace syspilot;

namespace {
[[noreturn]] void broken(const char* property, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "LPCL property broken: %s\n--- expected ---\n%s\n--- got ---\n%s\n", property, a.c_str(), b.c_str());
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Diagnostics d;
  lpcl::Document doc = lpcl::parse(text, "fuzz.lpcl", d);
  bool parsed = !d.has_errors();
  lpcl::check(doc, d);  // the checker must cope with partial documents too
  for (auto& x : d.items())
    if (x.message.empty() || x.str().empty()) broken("diagnostic has a message", "", x.str());

  if (parsed) {
    std::string f1 = lpcl::format(doc);
    Diagnostics d2;
    lpcl::Document doc2 = lpcl::parse(f1, "formatted.lpcl", d2);
    if (d2.has_errors()) broken("formatted text parses", f1, d2.str());
    std::string f2 = lpcl::format(doc2);
    if (f1 != f2) broken("fmt is idempotent", f1, f2);
    auto dd = lpcl::diff(doc, doc2);
    if (!dd.empty()) broken("diff(x, fmt(x)) is empty", f1, lpcl::to_text(dd));

    std::string js = lpcl::to_json(doc).dump();
    Diagnostics d3;
    lpcl::Document doc3 = lpcl::from_json(nlohmann::json::parse(js), "fuzz.json", d3);
    if (d3.has_errors()) broken("to_json output reads back", js, d3.str());
    std::string f3 = lpcl::format(doc3);
    if (f3 != f1) broken("JSON round trip", f1, f3);
  }

  // Inputs that are JSON exercise from_json's validation.
  if (size > 0 && (data[0] == '{' || data[0] == '[')) {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_discarded()) {
      Diagnostics d4;
      lpcl::Document doc4 = lpcl::from_json(j, "fuzz.json", d4);
      if (!d4.has_errors()) {
        lpcl::check(doc4, d4);
        (void)lpcl::format(doc4);
        (void)lpcl::to_json(doc4).dump();
      }
    }
  }
  return 0;
}
