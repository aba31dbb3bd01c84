// JSON forms shared by the API, the job records and the regeneration report.
#pragma once
#include <nlohmann/json.hpp>

#include "lpcl/diagnostics.h"

namespace syspilot::service {

nlohmann::json to_json(const Diagnostic& d);
nlohmann::json to_json(const Diagnostics& d);
Diagnostics diagnostics_from_json(const nlohmann::json& j);

}  // namespace syspilot::service
