// The service's own tables in the store's SQLite file (component "service"): tokens, jobs,
// and the content-addressed input caches of synthesis and regeneration.
#pragma once
#include <optional>
#include <string>

#include "service/service.h"
#include "store/store.h"

namespace syspilot::service {

// Registers the "service" migrations (idempotent); call before opening a Database or Store.
void register_schema();

// Opens the store with the service's tables migrated.
store::Store open_store(const std::string& path);

// The scope of a valid, unrevoked token; nullopt otherwise.
std::optional<Scope> verify_token(const store::Database& db, const std::string& token);

}  // namespace syspilot::service

namespace syspilot::service {
// This thread's own connection to `path` (SQLite connections are not shared between threads).
store::Store& thread_store(const std::string& path);
}  // namespace syspilot::service
