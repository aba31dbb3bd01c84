// Which contract composition takes for a library, in order of trust: reviewed contracts (the
// store's, then the contract folders': corpus/ is reviewed by definition) before drafts from
// the store that nobody has reviewed yet. compose.cpp's candidate list is built with these.
#pragma once
#include <string>
#include <vector>

#include "lpcl/diagnostics.h"
#include "tuner/analyze.h"

namespace syspilot::tuner {

// How a store draft's ContractUse::path ends: "DB#jemalloc@5.3.0 revision 2, unreviewed draft".
// A reviewed one ends in ", reviewed".
inline constexpr const char* kUnreviewedDraft = "unreviewed draft";

// Appends the store's contracts to `all` (source "store"): per library its reviewed contract
// (the newest reviewed revision of the highest version that has one), and its newest revision
// when that is an unreviewed draft. The path names the store, library, version, revision and
// review state. A store file that does not exist adds nothing; one that cannot be read adds a
// warning. A writable store of an older schema is upgraded (the review state is a migration).
void add_store_contracts(std::vector<ContractUse>& all, const std::string& store_path, Diagnostics& diags);

// Moves every unreviewed store draft behind every other contract, keeping the order within
// both parts. Call it once the folders' contracts are in `all`: lookups take the first match.
void prefer_reviewed(std::vector<ContractUse>& all);

// True for a ContractUse that add_store_contracts() marked an unreviewed draft.
bool unreviewed_draft(const ContractUse& u);

// False for a draft nobody reviewed (an unreviewed store draft, a contract synthesized on the
// fly): its claims steer the search but its introspection knobs are not switched on.
bool reviewed_contract(const ContractUse& u);

// Where a contract in use came from and whether a person reviewed it, for reports:
// "store, reviewed", "store, unreviewed draft", "corpus, reviewed", "synthesized, unreviewed
// draft", "file".
std::string contract_origin(const ContractUse& u);

}  // namespace syspilot::tuner
