// One diagnostics type for every stage: parser, checker, validators, extractors,
// tuner and service all report `file:line:col: severity: message` with an optional hint.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace syspilot {

struct SourceLoc {
  std::string file;  // path or logical name ("<stdin>", "draft#2")
  int line = 0;      // 1-based; 0 when unknown
  int col = 0;       // 1-based; 0 when unknown
};

enum class Severity { Note, Warning, Error };
const char* to_string(Severity s);

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
  std::string hint;  // what to do about it; may be empty
  std::string code;  // stable machine-readable id, e.g. "unknown-resource"

  // "file:line:col: error: message [code]" and, when present, "\n  hint: ..."
  std::string str() const;
};

// An ordered collection of diagnostics; the one way stages report problems.
class Diagnostics {
 public:
  Diagnostic& error(SourceLoc loc, std::string message, std::string code = {}, std::string hint = {});
  Diagnostic& warning(SourceLoc loc, std::string message, std::string code = {}, std::string hint = {});
  Diagnostic& note(SourceLoc loc, std::string message, std::string code = {}, std::string hint = {});
  void add(Diagnostic d);
  void append(const Diagnostics& other);

  bool has_errors() const;
  size_t error_count() const;
  size_t warning_count() const;
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const std::vector<Diagnostic>& items() const { return items_; }
  // Editable items: the counts are taken afresh after (an edit may change a severity).
  std::vector<Diagnostic>& items() {
    counted_ = errors_ = warnings_ = 0;
    return items_;
  }
  void clear() {
    items_.clear();
    counted_ = errors_ = warnings_ = 0;
  }

  void print(std::ostream& os) const;  // one str() per line
  std::string str() const;

 private:
  void tally() const;
  std::vector<Diagnostic> items_;
  // error_count() and warning_count() are asked once per contract checked: counted as items
  // arrive, not from the start each time (100000 duplicate contracts took minutes).
  mutable size_t counted_ = 0, errors_ = 0, warnings_ = 0;
};

}  // namespace syspilot
