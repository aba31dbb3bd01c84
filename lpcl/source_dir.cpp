// Where the data files live, the one place the checkout path is compiled in (see lpcl/source_dir.h).
#include <cstdlib>
#include <filesystem>
#include <string>

namespace syspilot {

namespace {

// An installed syspilot (`cmake --install`) keeps its data in PREFIX/share/syspilot beside
// PREFIX/bin/syspilot; it is preferred to the checkout it was built from, which may have moved
// on or gone.
std::string find_data_dir() {
  if (const char* e = std::getenv("SYSPILOT_DATA_DIR"); e && *e) return e;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto installed = self.parent_path().parent_path() / "share" / "syspilot";
    if (std::filesystem::is_directory(installed / "corpus", ec)) return installed.string();
  }
  return SYSPILOT_SOURCE_DIR_VALUE;
}

}  // namespace

const char* checkout_dir() { return SYSPILOT_SOURCE_DIR_VALUE; }

const char* source_dir() {
  static const std::string dir = find_data_dir();
  return dir.c_str();
}

}  // namespace syspilot
