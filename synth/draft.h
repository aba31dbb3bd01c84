// Internal pieces shared by the drafter, validators and the synthesis loop.
#pragma once
#include <map>
#include <set>
#include <string>

#include "extract/facts.h"
#include "lpcl/ast.h"
#include "synth/synth.h"

namespace syspilot::synth {

// What the facts say, indexed for grounding: the names and places a draft may mention.
struct FactIndex {
  std::set<std::string> env;   // env reads, doc mentions, knob strings in binaries
  std::set<std::string> api;   // API controls and resource-relevant exports
  std::set<std::string> refs;  // "file:line" of every fact, and "file" for line-less docs
  std::set<std::string> sonames;
  explicit FactIndex(const extract::Facts& f);
};

// An API name as an LPCL name ("tbb::global_control" -> "tbb.global_control"); empty when
// it has no such form (operators, template arguments).
std::string lpcl_name(const std::string& n);

// "file:line", or "file" when the line is unknown (documentation URLs).
std::string fact_ref(const std::string& file, int line);
// "libgomp.so.1#GOMP_parallel": a dynamic symbol of a shared object the facts list, by its
// soname (its file name when it has none).
std::string symbol_ref(const extract::BinaryFacts& object, const std::string& symbol);

// Expression builders.
lpcl::Expr name_expr(const std::string& n);
lpcl::Expr int_expr(long long v);
lpcl::Expr literal_expr(const std::string& text, const lpcl::Type& t);  // nullopt-free: may fall back to String
bool expr_mentions(const lpcl::Expr& e, const std::string& name);

// Why `name` is a flag passed per call rather than a setting the library reads: a
// function-like macro of its headers (MALLOCX_ARENA(a): no symbol, a value for one call's
// argument), or a name its documentation writes as a call, as a bare flag, in a "flags"
// argument or beside such a macro of its own family ("Unless MALLOCX_TCACHE(tc) or
// MALLOCX_TCACHE_NONE is specified"); "" when it is none. A name the library's code or binary
// reads is never a per-call flag.
std::string per_call_flag(const std::string& name, const extract::Facts& facts);

// Validators run on the final contract (after overlays): one with no control or no binding is
// no usable contract (no-controls, no-binding errors).
Diagnostics check_usable(const lpcl::Contract& c);

// The contract's name and version from the options and facts.
std::string contract_name(const extract::Facts& f, const SynthOptions& o);
std::string contract_version(const SynthOptions& o);

}  // namespace syspilot::synth
