// The store's part of contract lookup for composition: reviewed contracts, then unreviewed
// drafts placed behind the contract folders (docs/store.md, "Review").
#include "tuner/contract_lookup.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "lpcl/lpcl.h"
#ifdef HAVE_SYSPILOT_STORE
#include "store/store.h"
#endif

namespace syspilot::tuner {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

void add_store_contracts(std::vector<ContractUse>& all, const std::string& path, Diagnostics& diags) {
#ifdef HAVE_SYSPILOT_STORE
  if (path.empty()) return;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  try {
    store::OpenOptions o;
    o.create = false;
    // Reading needs a current schema: a store written before the review state is upgraded
    // when we may write it; a read-only one must already be current.
    o.read_only = ::access(path.c_str(), W_OK) != 0;
    store::Store st(path, o);
    for (const store::ContractRecord& rec : st.lookup_contracts()) {
      Diagnostics local;
      auto doc = lpcl::parse(rec.lpcl, path + "#" + rec.library, local);
      if (local.has_errors()) {
        diags.warning({path, 0, 0},
                      "stored contract " + rec.library + " " + rec.version + " revision " +
                          std::to_string(rec.revision) + " does not parse; skipped",
                      "bad-contract", "re-import or re-synthesize it");
        continue;
      }
      const bool reviewed = rec.review == store::Review::Reviewed;
      const std::string where = path + "#" + rec.library + "@" + rec.version + " revision " +
                                std::to_string(rec.revision) + ", " + (reviewed ? "reviewed" : kUnreviewedDraft);
      for (auto& c : doc.contracts) all.push_back({c, "store", where, {}});
    }
  } catch (const std::exception& e) {
    diags.warning({path, 0, 0}, std::string("contract store not usable: ") + e.what(), "store-unavailable",
                  "pass a valid --db, or none to use corpus/ alone");
  }
#else
  (void)all;
  (void)path;
  (void)diags;
#endif
}

bool unreviewed_draft(const ContractUse& u) {
  return u.source == "store" && ends_with(u.path, std::string(", ") + kUnreviewedDraft);
}

bool reviewed_contract(const ContractUse& u) { return !unreviewed_draft(u) && u.source != "synthesized"; }

void prefer_reviewed(std::vector<ContractUse>& all) {
  std::stable_partition(all.begin(), all.end(), [](const ContractUse& u) { return !unreviewed_draft(u); });
}

std::string contract_origin(const ContractUse& u) {
  if (u.source == "store") return unreviewed_draft(u) ? std::string("store, ") + kUnreviewedDraft : "store, reviewed";
  if (u.source == "corpus") return "corpus, reviewed";
  if (u.source == "synthesized") return std::string("synthesized, ") + kUnreviewedDraft;
  return u.source;
}

}  // namespace syspilot::tuner
