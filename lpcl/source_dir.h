/* Where the checkout lives, for data files (corpus/, prompts/, rules) read at run time.
   Force-included into every C++ translation unit, so the path is compiled into one file only
   and ccache hits survive a move of the checkout. */
#pragma once
#ifdef __cplusplus
namespace syspilot {
const char* source_dir();
}
#define SYSPILOT_SOURCE_DIR (::syspilot::source_dir())
#endif
