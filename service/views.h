// JSON views the dashboard reads beside the contract API: tuning sessions and analyses as
// `syspilot tune` and `syspilot analyze` stored them, and the provenance of a contract's
// statements in the facts it was drafted from.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "store/store.h"

namespace syspilot::service {

// GET /v1/sessions: newest first, at most `limit`: program, machine, budget, runs, state, best
// speedup (the re-measured one when tune wrote its result), verdict.
nlohmann::json sessions_view(store::Database& db, int limit);
// GET /v1/sessions/{id}: tuner::session_to_json() plus "chosen" (the configuration tune
// concluded on, or the best so far, with its `export` lines and speedup), "compared" (the other
// strategies of a `tune --compare`, their trials) and "analysis" (the id it started from).
std::optional<nlohmann::json> session_view(store::Database& db, std::int64_t id);
// GET /v1/analyses: newest first, at most `limit`, with their summaries.
nlohmann::json analyses_view(store::Database& db, int limit);
// GET /v1/analyses/{id}: the stored document (docs/analysis.md) and the sessions it started.
std::optional<nlohmann::json> analysis_view(store::Database& db, std::int64_t id);

// GET /v1/libraries/{lib}/contracts/{version}/provenance: who wrote the contract (drafter,
// review, source), the facts it was drafted from, and for each `@ "file:line"` reference and
// `doc` sentence of its statements the facts found there.
nlohmann::json contract_provenance(const store::Store& st, const store::ContractRecord& rec);

}  // namespace syspilot::service
