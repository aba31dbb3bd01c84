/* Where the data files (corpus/, prompts/, tuner/rules/, tuner/bridge/) are read at run time:
   $SYSPILOT_DATA_DIR, else PREFIX/share/syspilot beside an installed PREFIX/bin/syspilot, else
   the checkout the binary was built from. Force-included into every C++ translation unit, so
   the checkout path is compiled into one file only and ccache hits survive a move of it. */
#pragma once
#ifdef __cplusplus
namespace syspilot {
const char* source_dir();
// The checkout the binary was built from, for what only a build tree has (the eval's scenario
// programs and their tables).
const char* checkout_dir();
}
#define SYSPILOT_SOURCE_DIR (::syspilot::source_dir())
#endif
