// ContractRecord::of: the stored forms (canonical LPCL text and JSON) of an in-memory contract.
// Kept apart from store.cpp so that code storing only text does not link the LPCL formatter.
#include <nlohmann/json.hpp>

#include "lpcl/lpcl.h"
#include "store/store.h"

namespace syspilot::store {

ContractRecord ContractRecord::of(const lpcl::Contract& c) {
  ContractRecord r;
  r.library = c.name;
  r.version = c.version;
  r.lpcl = lpcl::format(c);
  r.json = lpcl::to_json(c).dump();
  return r;
}

}  // namespace syspilot::store
