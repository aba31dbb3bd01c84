// The contract model: what an LPCL file means, independent of its text.
// Every later stage (synthesis, store, composition, tuning, service) works on these types.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "lpcl/diagnostics.h"

namespace syspilot::lpcl {

// Who produced a statement (or, at contract level, the contract).
enum class Origin { Unspecified, Extracted, Llm, Manual };

// Where a statement came from: source references, producer, confidence.
//   ... @ "driver/others/openblas_env.c:52" origin extracted confidence 0.9;
struct Provenance {
  std::vector<std::string> refs;     // "file:line" strings, in the order written
  Origin origin = Origin::Unspecified;
  std::string model;                  // for Origin::Llm: llm("model") when given
  std::optional<double> confidence;   // 0..1
};

// Expressions: literals, names (controls, machine facts, resources), operators.
//   OPENBLAS_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus
//   min(ncores, 8) * 2
struct Expr {
  enum class Kind {
    Int,      // text holds the literal as written ("8", "0x10")
    Float,    // "0.5"
    Size,     // "64KiB", "2GiB": bytes with a unit suffix
    Duration, // "200ms", "1s", "5us"
    String,   // text holds the unescaped value
    Bool,     // "true" / "false"
    Name,     // identifier or dotted path: control, machine fact, resource ("cpu.threads")
    Unary,    // op in {"-", "!"}; args[0]
    Binary,   // op in {"+","-","*","/","%","??","==","!=","<","<=",">",">=","&&","||"}; args[0], args[1]
    Call,     // text = function name (min, max, ceil, floor, clamp, ...); args
  };
  Kind kind = Kind::Int;
  std::string text;
  std::string op;
  std::vector<Expr> args;
  SourceLoc loc;
};

// Value types of controls.
struct Type {
  enum class Kind { Int, Float, Bool, String, Size, Duration, Enum };
  Kind kind = Kind::Int;
  std::vector<std::string> enumerators;  // for Enum: enum{passive, active}
};

// A control's domain: a closed range or an explicit set.
struct Domain {
  enum class Kind { None, Range, Set };
  Kind kind = Kind::None;
  std::optional<Expr> lo, hi;  // Range: in [lo, hi]
  std::vector<Expr> values;    // Set:   in {a, b, c}
};

// How a control is set.
//   env:    an environment variable named like the control
//   api:    a function call; params is the declared parameter list text ("int n")
//   option: a key inside a carrier variable: option("MALLOC_CONF", ",", ":")
//           (carrier env var, item separator, key/value separator)
struct ControlKind {
  enum class Kind { Env, Api, Option };
  Kind kind = Kind::Env;
  std::string params;     // Api
  std::string carrier;    // Option
  std::string item_sep;   // Option
  std::string kv_sep;     // Option
};

// When the library reads a control.
enum class ReadAt { Unspecified, Init, Call, Region };

// control NAME : KIND TYPE [in DOMAIN] [default EXPR] [fallback_for NAME]
//                [read_at init|call|region] [sets RESOURCE, ...] [doc "..."] [PROVENANCE] ;
struct Control {
  std::string name;
  ControlKind how;
  Type type;
  Domain domain;
  std::optional<Expr> default_value;
  std::string fallback_for;           // empty if none
  ReadAt read_at = ReadAt::Unspecified;
  std::vector<std::string> sets;      // resources this control acts on
  std::string doc;
  Provenance prov;
  SourceLoc loc;
  std::vector<std::string> comments;  // comment lines directly before the statement
};

// demand RESOURCE = EXPR [when EXPR] [PROVENANCE];
struct Demand {
  std::string resource;
  Expr value;
  std::optional<Expr> when;
  Provenance prov;
  SourceLoc loc;
  std::vector<std::string> comments;
};

// assume PREDICATE(ARG, ...) [PROVENANCE];   e.g. exclusive(cpu.cores), no_nesting(parallel_region)
struct Assumption {
  std::string predicate;
  std::vector<std::string> args;
  Provenance prov;
  SourceLoc loc;
  std::vector<std::string> comments;
};

// behavior NAME [KEY EXPR]... [PROVENANCE];  e.g. behavior spin_wait idle_timeout OPENBLAS_THREAD_TIMEOUT;
struct Behavior {
  std::string name;
  std::vector<std::pair<std::string, Expr>> params;  // in written order
  Provenance prov;
  SourceLoc loc;
  std::vector<std::string> comments;
};

// provides region NAME|none;   the kind of parallel region the library opens (omp_parallel, tbb_arena, ...)
struct Provides {
  std::string what = "region";
  std::string name;  // "none" allowed
  Provenance prov;
  SourceLoc loc;
  std::vector<std::string> comments;
};

// signal METRIC RELATION [EXPR|WORD];   e.g. signal os.threads expect cpu.threads + 1;
//                                           signal os.involuntary_switches rises_with oversubscription;
// signal introspect env NAME = EXPR;     a knob that makes the library report itself
struct Signal {
  enum class Kind { Metric, Introspect };
  Kind kind = Kind::Metric;
  std::string metric;     // Metric: "os.threads"; Introspect: the control/env name
  std::string relation;   // expect | rises_with | falls_with | above | below   (Metric)
  std::optional<Expr> value;  // Metric: expectation or condition word as Name; Introspect: value
  Provenance prov;
  SourceLoc loc;
  std::vector<std::string> comments;
};

// binds soname "libopenblas.so.0"; binds symbol "cblas_dgemm"; binds header "cblas.h";
// How composition recognises that an application uses this library.
struct Binding {
  std::string kind;     // soname | symbol | header | module (Python)
  std::string pattern;  // glob allowed: "libopenblas*.so*", "cblas_*"
  SourceLoc loc;
  std::vector<std::string> comments;
};

// contract NAME "VERSION" { ... }
struct Contract {
  std::string name;
  std::string version;
  std::string doc;                         // doc "..." at contract level
  std::vector<Provenance> origins;         // origin extracted, llm("m"), manual;  (one entry per item)
  std::vector<Binding> bindings;
  std::vector<Control> controls;
  std::vector<Demand> demands;
  std::vector<Assumption> assumptions;
  std::vector<Behavior> behaviors;
  std::vector<Provides> provides;
  std::vector<Signal> signals;
  SourceLoc loc;
  std::vector<std::string> comments;           // before `contract`
  std::vector<std::string> trailing_comments;  // before the closing brace
  std::vector<std::string> origin_comments;    // before the `origin` statement
  std::vector<std::string> doc_comments;       // before the contract-level `doc` statement

  const Control* find_control(const std::string& name) const;
};

// A parsed file: usually one contract, possibly several.
struct Document {
  std::vector<Contract> contracts;
  std::vector<std::string> trailing_comments;  // at end of file
};

}  // namespace syspilot::lpcl
