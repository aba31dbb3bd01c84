// The checkout path, the one place it is compiled in (see lpcl/source_dir.h).
namespace syspilot {
const char* source_dir() { return SYSPILOT_SOURCE_DIR_VALUE; }
}  // namespace syspilot
