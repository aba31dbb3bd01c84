// Canonical text of the pieces of a contract, shared by the formatter, the JSON form and
// the semantic diff. Internal to the lpcl library.
#pragma once
#include <string>
#include <vector>

#include "lpcl/ast.h"

namespace syspilot::lpcl {

// A statement as its head ("control X : env int") and its clauses ("default 4", "@ \"f:1\"").
struct StatementText {
  std::string head;
  std::vector<std::string> clauses;
};
StatementText statement_text(const Control& k);
StatementText statement_text(const Demand& d);
StatementText statement_text(const Assumption& a);
StatementText statement_text(const Behavior& b);
StatementText statement_text(const Provides& p);
StatementText statement_text(const Signal& s);
StatementText statement_text(const Binding& b);
std::string one_line(const StatementText& st);  // "head clause clause;"

std::string quote(const std::string& s);  // LPCL string literal
std::string origin_text(const Provenance& p);  // "extracted", "llm(\"m\")"
std::string type_text(const Type& t);
std::string kind_text(const ControlKind& k);
std::string domain_text(const Domain& d);  // "[1, ncpus]", "{a, b}", ""

}  // namespace syspilot::lpcl
