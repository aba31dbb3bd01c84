// Formatting and bookkeeping for the shared diagnostics type.
#include "lpcl/diagnostics.h"

#include <ostream>
#include <sstream>

namespace syspilot {

const char* to_string(Severity s) {
  switch (s) {
    case Severity::Note: return "note";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "error";
}

std::string Diagnostic::str() const {
  std::ostringstream os;
  os << (loc.file.empty() ? "<input>" : loc.file);
  if (loc.line > 0) {
    os << ':' << loc.line;
    if (loc.col > 0) os << ':' << loc.col;
  }
  os << ": " << to_string(severity) << ": " << message;
  if (!code.empty()) os << " [" << code << ']';
  if (!hint.empty()) os << "\n  hint: " << hint;
  return os.str();
}

static Diagnostic make(Severity s, SourceLoc loc, std::string m, std::string c, std::string h) {
  Diagnostic d;
  d.severity = s;
  d.loc = std::move(loc);
  d.message = std::move(m);
  d.code = std::move(c);
  d.hint = std::move(h);
  return d;
}

Diagnostic& Diagnostics::error(SourceLoc loc, std::string m, std::string c, std::string h) {
  items_.push_back(make(Severity::Error, std::move(loc), std::move(m), std::move(c), std::move(h)));
  return items_.back();
}
Diagnostic& Diagnostics::warning(SourceLoc loc, std::string m, std::string c, std::string h) {
  items_.push_back(make(Severity::Warning, std::move(loc), std::move(m), std::move(c), std::move(h)));
  return items_.back();
}
Diagnostic& Diagnostics::note(SourceLoc loc, std::string m, std::string c, std::string h) {
  items_.push_back(make(Severity::Note, std::move(loc), std::move(m), std::move(c), std::move(h)));
  return items_.back();
}
void Diagnostics::add(Diagnostic d) { items_.push_back(std::move(d)); }
void Diagnostics::append(const Diagnostics& o) { items_.insert(items_.end(), o.items_.begin(), o.items_.end()); }

bool Diagnostics::has_errors() const { return error_count() > 0; }
void Diagnostics::tally() const {
  if (counted_ > items_.size()) counted_ = errors_ = warnings_ = 0;
  for (; counted_ < items_.size(); ++counted_) {
    errors_ += items_[counted_].severity == Severity::Error;
    warnings_ += items_[counted_].severity == Severity::Warning;
  }
}
size_t Diagnostics::error_count() const {
  tally();
  return errors_;
}
size_t Diagnostics::warning_count() const {
  tally();
  return warnings_;
}
void Diagnostics::print(std::ostream& os) const {
  for (auto& d : items_) os << d.str() << '\n';
}
std::string Diagnostics::str() const {
  std::ostringstream os;
  print(os);
  return os.str();
}

}  // namespace syspilot
