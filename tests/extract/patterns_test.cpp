// Env-read patterns of real libraries, each on a small tree written by the test: names built by
// literal concatenation inside macros, getters behind function pointers and plugin structs,
// settings tables walked in a loop, and the scope (library, tool, test, ...) of every fact.
// Each test asserts the exact set of `NAME file:line scope` found, so extras fail as misses do.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "extract/code_scan.h"
#include "extract/extract.h"
#include "tests/extract/temp_tree.h"

namespace fs = std::filesystem;
using namespace syspilot::extract;

namespace {

using syspilot::extract::testing::TempTree;

Facts run(const TempTree& t, const std::string& scope = "all", bool api_controls = false) {
  ExtractOptions o;
  o.paths = {t.root.string()};
  o.threads = 2;
  o.api_controls = api_controls;
  o.scope = scope;
  return extract(o);
}

// "NAME file:line scope" for every env read, read through the JSON form (the format readers see).
std::set<std::string> reads(const Facts& f) {
  std::set<std::string> out;
  nlohmann::json j = to_json(f);
  for (auto& e : j["env_vars"])
    out.insert(e["name"].get<std::string>() + " " + e["file"].get<std::string>() + ":" +
               std::to_string(e["line"].get<int>()) + " " + e.value("scope", std::string("?")));
  return out;
}

// A C source that reads `var` on line 2, in main() (a program) or in a function of its own.
std::string reader(const std::string& var, bool main) {
  return std::string("#include <stdlib.h>\n") + (main ? "int main(void)" : "int f_" + var + "(void)") +
         " { return getenv(\"" + var + "\") != 0; }\n";
}

std::string dump(const std::set<std::string>& s) {
  std::string o;
  for (auto& x : s) o += "  " + x + "\n";
  return o;
}

// "NAME CATEGORY FILE:LINE" of each API control.
std::set<std::string> api_lines(const Facts& f) {
  std::set<std::string> got;
  for (auto& a : f.api_controls) got.insert(a.name + " " + a.category + " " + a.file + ":" + std::to_string(a.line));
  return got;
}


}  // namespace

// 1. NCCL_PARAM-style knobs: "LIB_" env inside a macro body, the suffix at each use site,
// including literal concatenation in the argument, a missing semicolon, a nested macro that
// stringizes its argument, a prefix macro, a name-building macro (LIB_ENV(env)) used inside
// another macro and directly, uses in C++ namespaces and extern "C", and a use in a tool.
TEST(ExtractPatterns, MacroLiteralConcatenation) {
  TempTree t;
  t.write("include/lib_param.h",
          "/* Knobs declared by macro: the variable name is \"LIB_\" pasted to the given suffix. */\n"  // 1
          "#ifndef LIB_PARAM_H\n"                                                                     // 2
          "#define LIB_PARAM_H\n"                                                                     // 3
          "#define LIB_ENV_PREFIX \"LIB_\"\n"                                                         // 4
          "void lib_load_param(const char* env, long def, long* cache);\n"                            // 5
          "#define LIB_PARAM(name, env, def) \\\n"                                                    // 6
          "  long lib_param_##name(void) { \\\n"                                                      // 7
          "    static long cache = -1; \\\n"                                                          // 8
          "    if (cache == -1) lib_load_param(\"LIB_\" env, def, &cache); \\\n"                      // 9
          "    return cache; \\\n"                                                                    // 10
          "  }\n"                                                                                     // 11
          "#define LIB_KNOB(name, def) LIB_PARAM(name, #name, def)\n"                                 // 12
          "#define LIB_FLAG(env) lib_load_param(LIB_ENV_PREFIX env \"_ENABLE\", 0, &lib_flag_cache)\n"  // 13
          "#define LIB_LOOP(env) LIB_LOOP(\"X\" env)\n"                                              // 14
          "#define LIB_ENV(s) LIB_ENV_PREFIX s\n"                                                    // 15
          "#define LIB_SIZE_PARAM(name, env, def) \\\n"                                            // 16
          "  static long name = lib_load_size(LIB_ENV(env), def)\n"                                  // 17
          "#endif\n");
  t.write("src/param.c",
          "/* The reader behind LIB_PARAM. */\n"                 // 1
          "#include <stdlib.h>\n"                                // 2
          "#include \"lib_param.h\"\n"                           // 3
          "static const char* lib_getenv(const char* name) {\n"  // 4
          "  const char* v = getenv(name);\n"                    // 5
          "  return v && *v ? v : NULL;\n"                       // 6
          "}\n"                                                  // 7
          "void lib_load_param(const char* env, long def, long* cache) {\n"
          "  const char* s = lib_getenv(env);\n"
          "  *cache = s ? strtol(s, NULL, 0) : def;\n"
          "}\n");
  t.write("src/buffers.c",
          "#include \"lib_param.h\"\n"                   // 1
          "\n"                                           // 2
          "LIB_PARAM(BuffSize, \"BUFFSIZE\", -2);\n"     // 3
          "LIB_PARAM(ChunkSize,\n"                       // 4
          "          \"CHUNK\" \"_SIZE\", 64);\n"        // 5
          "LIB_PARAM(NoSemi, \"NO_SEMI\", 1)\n"          // 6
          "LIB_PARAM(AfterNoSemi, \"AFTER\", 2)\n"       // 7
          "LIB_KNOB(THREADS, 4);\n"                      // 8
          "LIB_PARAM(Computed, some_runtime_name, 1);\n"  // 9: not a constant: no name
          "static long lib_flag_cache;\n"                // 10
          "void lib_spin_init(void) { LIB_FLAG(\"SPIN\"); }\n"  // 11
          "void lib_loop(void) { LIB_LOOP(\"Y\"); }\n"   // 12: a self-referencing macro
          "long lib_bufsize(void) { return lib_param_BuffSize(); }\n");
  t.write("src/size.cpp",
          "#include \"lib_param.h\"\n"                                       // 1
          "#include <cstdlib>\n"                                               // 2
          "long lib_load_size(const char* env, long def) {\n"                  // 3
          "  const char* s = std::getenv(env);\n"                              // 4
          "  return s ? std::atol(s) : def;\n"                                 // 5
          "}\n"                                                                // 6
          "namespace lib {\n"                                                  // 7
          "LIB_SIZE_PARAM(arena, \"ARENA_SIZE\", 1 << 20);\n"                // 8
          "extern \"C\" {\n"                                                 // 9
          "LIB_SIZE_PARAM(stack, \"STACK\" \"_SIZE\", 4096);\n"            // 10
          "}\n"                                                                // 11
          "long direct() { return lib_load_size(LIB_ENV(\"DIRECT\"), 0); }\n"  // 12
          "}  // namespace lib\n");
  t.write("tools/bench_cli.c",
          "#include \"../include/lib_param.h\"\n"
          "LIB_PARAM(CliColor, \"CLI_COLOR\", 0);\n");
  Facts f = run(t);
  std::set<std::string> want = {
      "LIB_BUFFSIZE src/buffers.c:3 library",  "LIB_CHUNK_SIZE src/buffers.c:4 library",
      "LIB_NO_SEMI src/buffers.c:6 library",   "LIB_AFTER src/buffers.c:7 library",
      "LIB_THREADS src/buffers.c:8 library",   "LIB_SPIN_ENABLE src/buffers.c:11 library",
      "LIB_ARENA_SIZE src/size.cpp:8 library", "LIB_STACK_SIZE src/size.cpp:10 library",
      "LIB_DIRECT src/size.cpp:12 library",    "LIB_CLI_COLOR tools/bench_cli.c:2 tool"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
  for (auto& e : f.env_vars)
    if (e.name == "LIB_BUFFSIZE") { EXPECT_EQ(e.default_value, "-2"); }
}

// 2. Getters behind function pointers: a plugin struct whose field is set by a designated
// initializer, a positional initializer and an assignment; a file-scope pointer set in an init
// function and called as (*fp)(name); a pointer copied from another. A field bound to a
// function that reads nothing stays silent.
TEST(ExtractPatterns, FunctionPointersAndPlugins) {
  TempTree t;
  t.write("src/plugin.h",
          "typedef const char* (*lib_getenv_fn)(const char*);\n"
          "struct lib_plugin { const char* name; lib_getenv_fn get_var; int (*init)(void); };\n"
          "extern struct lib_plugin* lib_active_plugin;\n"
          "const char* lib_get_env(const char* name);\n");
  t.write("src/plugin.c",
          "#include <stdlib.h>\n"                                                     // 1
          "#include \"plugin.h\"\n"                                                   // 2
          "static const char* default_get_var(const char* name) { return getenv(name); }\n"
          "static const char* secure_get_var(const char* n) { return secure_getenv(n); }\n"
          "static int default_init(void) { return 0; }\n"
          "static struct lib_plugin default_plugin = { .name = \"default\", .get_var = default_get_var,\n"
          "                                            .init = default_init };\n"
          "struct lib_plugin* lib_active_plugin = &default_plugin;\n"
          "void lib_plugin_harden(struct lib_plugin* p) { p->get_var = &secure_get_var; }\n"
          "const char* lib_get_env(const char* name) { return lib_active_plugin->get_var(name); }\n");
  t.write("src/legacy.c",
          "#include <stdlib.h>\n"
          "#include \"plugin.h\"\n"
          "struct legacy_ops { int version; const char* (*lookup)(const char*); };\n"
          "static const char* legacy_lookup(const char* k) { return getenv(k); }\n"
          "static struct legacy_ops legacy = { 1, legacy_lookup };\n"
          "const char* legacy_env(const char* k) { return legacy.lookup(k); }\n");
  t.write("src/hook.c",
          "#include <stdlib.h>\n"                                                       // 1
          "static const char* (*env_hook)(const char*) = 0;\n"                          // 2
          "static const char* (*env_hook_copy)(const char*) = 0;\n"                     // 3
          "static const char* hook_default(const char* key) { return getenv(key); }\n"  // 4
          "void lib_hook_init(void) { env_hook = hook_default; env_hook_copy = env_hook; }\n"
          "const char* lib_hook_env(const char* key) { return (*env_hook)(key); }\n"    // 6
          "const char* lib_hook_env2(const char* key) { return env_hook_copy(key); }\n");
  t.write("src/use.c",
          "#include <stdlib.h>\n"                                                   // 1
          "#include \"plugin.h\"\n"                                                 // 2
          "const char* lib_hook_env(const char* key);\n"                            // 3
          "const char* lib_hook_env2(const char* key);\n"                           // 4
          "const char* legacy_env(const char* k);\n"                                // 5
          "int lib_threads(void) { return atoi(lib_get_env(\"LIB_THREADS\")); }\n"  // 6
          "int lib_spin(void) { return lib_hook_env(\"LIB_SPIN\") != 0; }\n"        // 7
          "int lib_yield(void) { return lib_hook_env2(\"LIB_YIELD\") != 0; }\n"     // 8
          "int lib_old(void) { return legacy_env(\"LIB_LEGACY\") != 0; }\n"         // 9
          "struct file_ops { int (*open)(const char*); };\n"                        // 10
          "static int real_open(const char* path) { return path != 0; }\n"          // 11
          "static struct file_ops ops = { .open = real_open };\n"                   // 12
          "int lib_open(void) { return ops.open(\"NOT_AN_ENV\"); }\n");             // 13
  t.write("test/plugin_test.c",
          "const char* lib_get_env(const char* name);\n"
          "int main(void) { return lib_get_env(\"LIB_TEST_ONLY\") != 0; }\n");
  Facts f = run(t);
  std::set<std::string> want = {
      "LIB_THREADS src/use.c:6 library", "LIB_SPIN src/use.c:7 library", "LIB_YIELD src/use.c:8 library",
      "LIB_LEGACY src/use.c:9 library", "LIB_TEST_ONLY test/plugin_test.c:2 test"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
  for (auto& e : f.env_vars)
    if (e.name == "LIB_THREADS") {
      EXPECT_EQ(e.via, "lib_get_env");
      EXPECT_EQ(e.type, "int");
    }
}

// 3. Settings tables (LLVM OpenMP's kmp_settings.cpp shape): rows of records whose name field
// is read in a loop, by index and by range-for, through getenv or a wrapper. Each name is
// reported at its row; strings of other fields are not names, even when they look like one.
TEST(ExtractPatterns, SettingsTables) {
  TempTree t;
  t.write("src/settings.h",
          "typedef void (*parse_fn)(const char* name, const char* value, void* data);\n"
          "struct setting { char const* name; parse_fn parse; void (*print)(void); void* data; int set; };\n"
          "typedef struct setting setting_t;\n");
  t.write("src/settings.cpp",
          "#include <cstdlib>\n"                                                              // 1
          "#include \"settings.h\"\n"                                                         // 2
          "#define ENV_LIBRARY \"LIB_LIBRARY\"\n"                                             // 3
          "static void parse_blocktime(const char*, const char*, void*) {}\n"                 // 4
          "static void parse_library(const char*, const char*, void*) {}\n"                   // 5
          "static void print_blocktime(void) {}\n"                                            // 6
          "static setting_t settings_table[] = {\n"                                           // 7
          "    {\"LIB_BLOCKTIME\", parse_blocktime, print_blocktime, NULL, 0},\n"             // 8
          "    {ENV_LIBRARY, parse_library, NULL, NULL, 0},\n"                                // 9
          "    {\"LIB_\" \"AFFINITY\", parse_library, NULL, NULL, 0},\n"                      // 10
          "    {\"not a name\", parse_library, NULL, NULL, 0},\n"                             // 11
          "    {NULL, NULL, NULL, NULL, 0}};\n"                                               // 12
          "static const int settings_count = sizeof(settings_table) / sizeof(settings_table[0]);\n"
          "struct alias { int id; const char* desc; const char* env; };\n"                    // 14
          "static const struct alias aliases[] = {\n"                                         // 15
          "    {1, \"LIB_NOT_THIS\", \"LIB_NUM_THREADS\"},\n"                                 // 16
          "    {.id = 2, .env = \"LIB_STACKSIZE\", .desc = \"DESC_NOT_THIS\"},\n"             // 17
          "};\n"                                                                              // 18
          "static const char* lib_getenv(const char* n) { return std::getenv(n); }\n"         // 19
          "void read_settings() {\n"                                                          // 20
          "  for (int i = 0; i < settings_count; ++i) {\n"                                    // 21
          "    const char* v = getenv(settings_table[i].name);\n"                             // 22
          "    if (v) settings_table[i].parse(settings_table[i].name, v, settings_table[i].data);\n"
          "  }\n"                                                                             // 24
          "  for (auto& a : aliases) { const char* v = lib_getenv(a.env); (void)v; }\n"       // 25
          "}\n");
  t.write("tests/table_test.c",
          "#include <stdlib.h>\n"                                 // 1
          "struct knob { const char* var; int expect; };\n"       // 2
          "static struct knob knobs[] = {\n"                      // 3
          "  {\"LIB_TEST_KNOB\", 1},\n"                           // 4
          "};\n"                                                  // 5
          "int main(void) {\n"                                    // 6
          "  for (struct knob* k = knobs; k < knobs + 1; ++k)\n"  // 7
          "    if (getenv(k->var)) return 1;\n"                   // 8
          "  return 0;\n"
          "}\n");
  Facts f = run(t);
  std::set<std::string> want = {
      "LIB_BLOCKTIME src/settings.cpp:8 library",   "LIB_LIBRARY src/settings.cpp:9 library",
      "LIB_AFFINITY src/settings.cpp:10 library",   "LIB_NUM_THREADS src/settings.cpp:16 library",
      "LIB_STACKSIZE src/settings.cpp:17 library", "LIB_TEST_KNOB tests/table_test.c:4 test"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
  for (auto& e : f.env_vars)
    if (e.name == "LIB_NUM_THREADS") {
      EXPECT_EQ(e.via, "lib_getenv");
      EXPECT_EQ(e.function, "read_settings");
    }
}

// 3b. Tables of plain strings (GraphicsMagick's tempfile.c shape): each row is a name, read by
// index or through a pointer walking the table, through getenv or a wrapper; each name at its
// row, every preprocessor branch taken. A table inside a function is that function's (another
// function's table of the same name is not read); a subscript of anything but a table
// (argv[1], a parameter) names nothing.
TEST(ExtractPatterns, TablesOfStrings) {
  TempTree t;
  t.write("src/tmp.c",
          "#include <stdlib.h>\n"                                                   // 1
          "#define ENV_TMP \"LIB_TMPDIR\"\n"                                          // 2
          "const char* tmpdir(void) {\n"                                            // 3
          "  static const char env_strings[][14] =\n"                               // 4
          "    {\n"                                                                 // 5
          "      ENV_TMP\n"                                                         // 6
          "#if defined(POSIX)\n"                                                    // 7
          "      ,\"TMPDIR\"\n"                                                     // 8
          "#endif\n"                                                                // 9
          "#if defined(_WIN32)\n"                                                   // 10
          "      ,\"LIB_\" \"TEMP\"\n"                                                // 11
          "#endif\n"                                                                // 12
          "    };\n"                                                                // 13
          "  for (unsigned i = 0; i < sizeof(env_strings) / sizeof(env_strings[0]); ++i)\n"
          "    if (getenv(env_strings[i])) return getenv(env_strings[i]);\n"        // 15
          "  return 0;\n"                                                           // 16
          "}\n"                                                                     // 17
          "static const char* const paths[] = { \"LIB_PATH\", \"LIB_HOME\", 0 };\n"  // 18
          "static const char* lib_env(const char* n) { return getenv(n); }\n"       // 19
          "int homes(void) {\n"                                                     // 20
          "  int n = 0;\n"                                                          // 21
          "  for (const char* const* p = paths; *p; ++p) n += lib_env(*p) != 0;\n"  // 22
          "  return n;\n"                                                           // 23
          "}\n"                                                                     // 24
          "int args(int argc, char** argv, const char** names) {\n"                 // 25
          "  static const char env_strings[][8] = { \"NOT_READ\" };\n"              // 26
          "  return argc > 1 && getenv(argv[1]) && getenv(names[0]) && env_strings[0][0];\n"
          "}\n");
  Facts f = run(t);
  std::set<std::string> want = {"LIB_TMPDIR src/tmp.c:6 library", "TMPDIR src/tmp.c:8 library",
                                "LIB_TEMP src/tmp.c:11 library", "LIB_PATH src/tmp.c:18 library",
                                "LIB_HOME src/tmp.c:18 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
  for (auto& e : f.env_vars)
    if (e.name == "LIB_HOME") EXPECT_EQ(e.via, "lib_env");
}

// 4b. Automake: each WHERE_PRIMARY target's CANON_SOURCES take its scope: installed or
// internal libraries are the library's, check_* targets tests, programs tools, whether or not
// the file defines main() and whatever its folder.
TEST(ExtractPatterns, AutomakeTargetsGiveTheirSourcesAScope) {
  TempTree t;
  t.write("core/Makefile.am",
          "lib_LTLIBRARIES = libfoo.la\n"
          "libfoo_la_SOURCES = core.c \\\n"
          "    shared.c\n"
          "check_LTLIBRARIES = foo_fake.la\n"
          "foo_fake_la_SOURCES = fake.c\n"
          "if HAVE_TOOLS\n"
          "bin_PROGRAMS = foo-tool\n"
          "endif\n"
          "bin_PROGRAMS += foo-info\n"
          "foo_tool_SOURCES = main.c helper.c shared.c\n"
          "foo_info_SOURCES = info.c\n"
          "check_PROGRAMS = test-thing\n"
          "test_thing_SOURCES = thing.c\n");
  t.write("core/core.c", reader("FOO_CORE", false));
  t.write("core/shared.c", reader("FOO_SHARED", false));
  t.write("core/fake.c", reader("FOO_FAKE", false));
  t.write("core/main.c", reader("FOO_TOOL_COLOR", true));
  t.write("core/helper.c", reader("FOO_TOOL_WIDTH", false));
  t.write("core/info.c", reader("FOO_INFO", true));
  t.write("core/thing.c", reader("FOO_THING", true));
  Facts f = run(t);
  std::set<std::string> want = {
      "FOO_CORE core/core.c:2 library",       "FOO_SHARED core/shared.c:2 library",
      "FOO_FAKE core/fake.c:2 test",          "FOO_TOOL_COLOR core/main.c:2 tool",
      "FOO_TOOL_WIDTH core/helper.c:2 tool",  "FOO_INFO core/info.c:2 tool",
      "FOO_THING core/thing.c:2 test"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// 4. Scope: build files say which sources make the library (CMake with a variable, meson,
// a Makefile's object list), paths decide the rest; the default keeps library facts only,
// and facts without a scope read back as library.
TEST(ExtractPatterns, ScopeFromBuildFilesAndPaths) {
  TempTree t;
  t.write("CMakeLists.txt",
          "cmake_minimum_required(VERSION 3.20)\n"
          "set(CORE_SOURCES src/core.c\n"
          "    contrib/extra/extra.c)\n"
          "add_library(mylib STATIC ${CORE_SOURCES} src/util.c)\n"
          "add_executable(mytool app/main.c)\n"
          "add_executable(mylib_tests check/run.c)\n"
          "add_executable(speed perf/speed.c)  # run by add_test below: a test\n"
          "add_test(NAME speed COMMAND speed)\n");
  t.write("src/core.c", "#include <stdlib.h>\nint t(void) { return atoi(getenv(\"MY_THREADS\")); }\n");
  t.write("src/util.c", "#include <stdlib.h>\nint u(void) { return getenv(\"MY_UTIL\") != 0; }\n");
  t.write("contrib/extra/extra.c", "#include <stdlib.h>\nint x(void) { return getenv(\"MY_EXTRA\") != 0; }\n");
  t.write("contrib/gen/gen.c", "#include <stdlib.h>\nint g(void) { return getenv(\"MY_GEN\") != 0; }\n");
  t.write("app/main.c", "#include <stdlib.h>\nint main(void) { return getenv(\"MYTOOL_COLOR\") != 0; }\n");
  t.write("check/run.c", "#include <stdlib.h>\nint main(void) { return getenv(\"MY_TEST_SEED\") != 0; }\n");
  t.write("perf/speed.c", "#include <stdlib.h>\nint main(void) { return getenv(\"MY_SPEED_ITERS\") != 0; }\n");
  t.write("programs/cli.c", "#include <stdlib.h>\nint main(void) { return getenv(\"MY_CLI_LEVEL\") != 0; }\n");
  t.write("tests/t.c", "#include <stdlib.h>\nint main(void) { return getenv(\"MY_T\") != 0; }\n");
  t.write("src/test_alloc.c", "#include <stdlib.h>\nint main(void) { return getenv(\"MY_TALLOC\") != 0; }\n");
  t.write("examples/demo.c", "#include <stdlib.h>\nint main(void) { return getenv(\"MY_DEMO\") != 0; }\n");
  t.write("benchmarks/b.c", "#include <stdlib.h>\nint main(void) { return getenv(\"MY_BENCH\") != 0; }\n");
  t.write("setup.py", "import os\njobs = os.environ.get(\"MY_BUILD_JOBS\", \"2\")\n");
  t.write("cmake/probe.py", "import os\ncc = os.getenv(\"MY_PROBE_CC\")\n");
  t.write("sub/meson.build",
          "project('sub', 'c')\n"
          "sub_sources = files('sub_core.c', 'sub_more.c')\n"
          "libsub = library('sub', sub_sources)\n"
          "executable('subtool', 'sub_main.c', link_with : libsub)\n");
  t.write("sub/sub_core.c", "#include <stdlib.h>\nint s(void) { return getenv(\"SUB_CORE\") != 0; }\n");
  t.write("sub/sub_more.c", "#include <stdlib.h>\nint m(void) { return getenv(\"SUB_MORE\") != 0; }\n");
  t.write("sub/sub_main.c", "#include <stdlib.h>\nint main(void) { return getenv(\"SUB_MAIN\") != 0; }\n");
  t.write("old/Makefile",
          "LIBOBJS = old_core.o \\\n"
          "          old_more.o\n"
          "oldtool: oldtool.o $(LIBOBJS)\n"
          "\t$(CC) -o $@ $^\n");
  t.write("old/old_core.c", "#include <stdlib.h>\nint o(void) { return getenv(\"OLD_CORE\") != 0; }\n");
  t.write("old/old_more.c", "#include <stdlib.h>\nint p(void) { return getenv(\"OLD_MORE\") != 0; }\n");
  t.write("old/oldtool.c", "#include <stdlib.h>\nint main(void) { return getenv(\"OLD_TOOL\") != 0; }\n");
  Facts f = run(t);
  std::set<std::string> want = {
      "MY_THREADS src/core.c:2 library",          "MY_UTIL src/util.c:2 library",
      "MY_EXTRA contrib/extra/extra.c:2 library",  "MY_GEN contrib/gen/gen.c:2 tool",
      "MYTOOL_COLOR app/main.c:2 tool",            "MY_TEST_SEED check/run.c:2 test",
      "MY_SPEED_ITERS perf/speed.c:2 test",        "MY_CLI_LEVEL programs/cli.c:2 tool",
      "MY_T tests/t.c:2 test",                     "MY_TALLOC src/test_alloc.c:2 test",
      "MY_DEMO examples/demo.c:2 example",         "MY_BENCH benchmarks/b.c:2 bench",
      "MY_BUILD_JOBS setup.py:2 build",            "MY_PROBE_CC cmake/probe.py:2 build",
      "SUB_CORE sub/sub_core.c:2 library",         "SUB_MORE sub/sub_more.c:2 library",
      "SUB_MAIN sub/sub_main.c:2 tool",            "OLD_CORE old/old_core.c:2 library",
      "OLD_MORE old/old_more.c:2 library",         "OLD_TOOL old/oldtool.c:2 tool"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
  nlohmann::json j = to_json(f);
  for (auto& th : j["threading"]) EXPECT_TRUE(th.contains("scope"));

  // the default is what a contract may claim: library facts only
  std::set<std::string> lib;
  for (auto& r : want)
    if (r.size() > 8 && r.compare(r.size() - 8, 8, " library") == 0) lib.insert(r);
  Facts def = run(t, ExtractOptions().scope);
  EXPECT_EQ(reads(def), lib) << "found:\n" << dump(reads(def));
  EXPECT_EQ(reads(run(t, "library,tool")).size(), lib.size() + 5);
  EXPECT_THROW(run(t, "libary"), std::invalid_argument);

  // backwards compatible: a fact without a scope is a library fact
  Facts old = facts_from_json(nlohmann::json::parse(R"({"env_vars": [{"name": "X_Y", "file": "a.c", "line": 1}]})"));
  ASSERT_EQ(old.env_vars.size(), 1u);
  EXPECT_EQ(reads(old), std::set<std::string>{"X_Y a.c:1 library"});
  Facts back = facts_from_json(to_json(f));
  EXPECT_EQ(reads(back), want);
}

// A target's name speaks by whole words: samplerate, fastest and contest are libraries
// like any other, pool_test, PoolTests, bench2 and unittest are not.
TEST(ExtractPatterns, TargetNamesSpeakByWholeWords) {
  TempTree t;
  t.write("CMakeLists.txt",
          "add_library(samplerate src/a.c)\nadd_library(fastest src/b.c)\nadd_library(contest src/c.c)\n"
          "add_executable(pool_test src/d.c)\nadd_executable(PoolTests src/e.c)\n"
          "add_executable(bench2 src/f.c)\nadd_executable(unittest src/g.c)\nadd_executable(demo-cli src/h.c)\n");
  const char* vars[] = {"A", "B", "C", "D", "E", "F", "G", "H"};
  for (int i = 0; i < 8; ++i)
    t.write(std::string("src/") + static_cast<char>('a' + i) + ".c",
            std::string("#include <stdlib.h>\nint ") + (i < 3 ? "f" : "main") + "(void) { return getenv(\"LIB_" +
                vars[i] + "\") != 0; }\n");
  std::set<std::string> want = {"LIB_A src/a.c:2 library", "LIB_B src/b.c:2 library", "LIB_C src/c.c:2 library",
                                "LIB_D src/d.c:2 test",    "LIB_E src/e.c:2 test",    "LIB_F src/f.c:2 bench",
                                "LIB_G src/g.c:2 test",    "LIB_H src/h.c:2 example"};
  Facts f = run(t);
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f));
}

// Code linked into a library ships in it: a target whose name says test (meson's
// static_library('check'), CMake's checkutil) is the library's once a library links it, in
// another build file, before or after the target is made; linked only into a test program or
// into a library whose name says test, it stays a test's.
TEST(ExtractPatterns, CodeLinkedIntoALibraryIsTheLibrarys) {
  TempTree t;
  // meson: the link is read (top folder) before the target is (libcheck/) and after (later/)
  t.write("meson.build",
          "project('m', 'c')\n"
          "subdir('libcheck')\n"
          "subdir('later')\n"
          "gst_check = library('gstcheck-@0@'.format(v), 'gstcheck.c', link_with : [libcheck], install : true)\n"
          "only_tests = static_library('check2', 'libcheck2/c2.c')\n"
          "runner = executable('runner', 'runner.c', link_with : only_tests)\n"
          "test('t', runner)\n"
          "helpers = static_library('test-helpers', 'helpers/h.c', link_whole : libcheck3)\n");
  t.write("libcheck/meson.build", "libcheck = static_library('check', 'check.c', 'check_run.c')\n");
  t.write("later/meson.build", "libcheck3 = static_library('check3', 'c3.c')\n");
  t.write("gstcheck.c", "#include <stdlib.h>\nint g(void) { return getenv(\"GST_CHECKS\") != 0; }\n");
  t.write("libcheck/check.c", "#include <stdlib.h>\nint c(void) { return getenv(\"CK_FORK\") != 0; }\n");
  t.write("libcheck/check_run.c", "#include <stdlib.h>\nint r(void) { return getenv(\"CK_VERBOSITY\") != 0; }\n");
  t.write("libcheck2/c2.c", "#include <stdlib.h>\nint c2(void) { return getenv(\"CK2_ONLY_TESTS\") != 0; }\n");
  t.write("runner.c", "#include <stdlib.h>\nint main(void) { return getenv(\"RUNNER_SEED\") != 0; }\n");
  t.write("helpers/h.c", "#include <stdlib.h>\nint h(void) { return getenv(\"HELPER_X\") != 0; }\n");
  t.write("later/c3.c", "#include <stdlib.h>\nint c3(void) { return getenv(\"CK3_IN_TEST_HELPERS\") != 0; }\n");
  // CMake: target_link_libraries of a library, and of a program
  t.write("cm/CMakeLists.txt",
          "add_library(check_util STATIC util/check_util.c)\n"
          "add_library(test_support STATIC util/support.c)\n"
          "add_library(engine SHARED engine.c)\n"
          "target_link_libraries(engine PRIVATE check_util)\n"
          "add_executable(engine_tests engine_tests.c)\n"
          "target_link_libraries(engine_tests test_support engine)\n");
  t.write("cm/util/check_util.c", "#include <stdlib.h>\nint u(void) { return getenv(\"ENGINE_CHECKS\") != 0; }\n");
  t.write("cm/util/support.c", "#include <stdlib.h>\nint s(void) { return getenv(\"SUPPORT_SEED\") != 0; }\n");
  t.write("cm/engine.c", "#include <stdlib.h>\nint e(void) { return getenv(\"ENGINE_THREADS\") != 0; }\n");
  t.write("cm/engine_tests.c", "#include <stdlib.h>\nint main(void) { return getenv(\"ENGINE_TEST_N\") != 0; }\n");
  std::set<std::string> want = {
      "GST_CHECKS gstcheck.c:2 library",          "CK_FORK libcheck/check.c:2 library",
      "CK_VERBOSITY libcheck/check_run.c:2 library", "CK2_ONLY_TESTS libcheck2/c2.c:2 test",
      "RUNNER_SEED runner.c:2 test",               "HELPER_X helpers/h.c:2 test",
      "CK3_IN_TEST_HELPERS later/c3.c:2 test",     "ENGINE_CHECKS cm/util/check_util.c:2 library",
      "SUPPORT_SEED cm/util/support.c:2 test",     "ENGINE_THREADS cm/engine.c:2 library",
      "ENGINE_TEST_N cm/engine_tests.c:2 test"};
  Facts f = run(t);
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// 3c. Settings tables found by name in a copy of the environment (LLVM OpenMP's shape): the
// environment is parsed into records (`vars[i].name`), and each variable's row is looked up
// with strcmp against the table's name field. Every row is a read, cited at the row; rows
// between #if and #endif (after `#if A || B` and `#if !A` too), in C and in C++, count. A table compared with names that do not come
// from the environment (a literal passed down, a getenv value) names nothing.
TEST(ExtractPatterns, TablesComparedWithTheEnvironment) {
  TempTree t;
  t.write("src/env_block.c",
          "#include <string.h>\n"
          "extern char **environ;\n"
          "struct var { const char *name; const char *value; };\n"
          "struct block { struct var *vars; int count; };\n"
          "static void parse(struct block *b, char **env) {\n"
          "  int i = 0;\n"
          "  for (; env[i]; ++i) { b->vars[i].name = env[i]; b->vars[i].value = strchr(env[i], '='); }\n"
          "  b->count = i;\n"
          "}\n"
          "void block_init(struct block *b) { parse(b, environ); }\n");
  t.write("src/settings.cpp",
          "#include <string.h>\n"                                                        // 1
          "struct setting { const char *name; void (*parse)(const char *); int set; };\n"  // 2
          "typedef struct setting setting_t;\n"                                          // 3
          "static void p(const char *) {}\n"                                             // 4
          "static setting_t table[] = {\n"                                               // 5
          "    {\"LIB_BLOCKTIME\", p, 0},\n"                                             // 6
          "#if LIB_DEBUG\n"                                                              // 7
          "    {\"LIB_A_DEBUG\", p, 0},\n"                                               // 8
          "#endif\n"                                                                     // 9
          "    {\"LIB_STACKSIZE\", p,\n"                                                 // 10
          "     0},\n"                                                                   // 11
          "#if LIB_X86 || LIB_X86_64\n"                                                  // 12
          "    {\"LIB_FP_CONTROL\", p, 0},\n"                                            // 13
          "#endif\n"                                                                     // 14
          "#if !LIB_NO_WAIT\n"                                                           // 15
          "    {\"LIB_WAIT\", p, 0},\n"                                                  // 16
          "#endif\n"                                                                     // 17
          "    {\"\", 0, 0}};\n"                                                         // 18
          "struct mode { const char *name; int value; };\n"                              // 19
          "static struct mode modes[] = {{\"FAST_NOT_A_VAR\", 1}, {\"SLOW_NOT_A_VAR\", 2}};\n"
          "static setting_t *find(const char *name) {\n"                                 // 21
          "  for (int i = 0; table[i].name[0]; ++i)\n"                                   // 22
          "    if (strcmp(table[i].name, name) == 0) return &table[i];\n"                // 23
          "  return 0;\n"                                                                // 24
          "}\n"                                                                          // 25
          "static int mode_of(const char *m) {\n"                                        // 26
          "  for (int i = 0; i < 2; ++i)\n"                                              // 27
          "    if (!strcmp(modes[i].name, m)) return modes[i].value;\n"                  // 28
          "  return 0;\n"                                                                // 29
          "}\n"                                                                          // 30
          "void settings_init(struct block *b) {\n"                                      // 31
          "  block_init(b);\n"                                                           // 32
          "  for (int i = 0; i < b->count; ++i)\n"                                       // 33
          "    if (setting_t *s = find(b->vars[i].name)) s->parse(b->vars[i].value);\n"  // 34
          "  mode_of(\"FAST_NOT_A_VAR\");\n"                                             // 35
          "}\n");
  t.write("src/plain.c",
          "#include <string.h>\n"
          "#include <stdlib.h>\n"
          "struct level { const char *name; int n; };\n"
          "static struct level levels[] = {{\"LOW_NOT_A_VAR\", 1}};\n"
          "int level(void) {\n"
          "  const char *v = getenv(\"LIB_LEVEL\");\n"
          "  for (int i = 0; v && i < 1; ++i) if (!strcmp(levels[i].name, v)) return levels[i].n;\n"
          "  return 0;\n"
          "}\n");
  Facts f = run(t);
  std::set<std::string> want = {"LIB_BLOCKTIME src/settings.cpp:6 library",  "LIB_A_DEBUG src/settings.cpp:8 library",
                                "LIB_STACKSIZE src/settings.cpp:10 library", "LIB_FP_CONTROL src/settings.cpp:13 library",
                                "LIB_WAIT src/settings.cpp:16 library",      "LIB_LEVEL src/plain.c:6 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
  // the same table in C: the rows under #if are there too
  TempTree c;
  c.write("src/env_block.c", "extern char **environ;\nstruct var { const char *name; };\n"
                             "void fill(struct var *v, char **env) { v[0].name = env[0]; }\n"
                             "void init(struct var *v) { fill(v, environ); }\n");
  c.write("src/settings.c",
          "#include <string.h>\n"                                          // 1
          "struct setting { const char *name; int set; };\n"               // 2
          "static struct setting table[] = {\n"                            // 3
          "#ifdef LIB_X\n"                                                 // 4
          "  {\"LIB_X_ONLY\", 0},\n"                                       // 5
          "#else\n"                                                        // 6
          "  {\"LIB_NOT_X\", 0},\n"                                        // 7
          "#endif\n"                                                       // 8
          "  {\"LIB_ALWAYS\", 0}};\n"                                      // 9
          "int known(struct var *v) {\n"                                   // 10
          "  for (int i = 0; i < 2; ++i)\n"                                // 11
          "    if (!strcmp(v[0].name, table[i].name)) return 1;\n"         // 12
          "  return 0;\n"
          "}\n");
  Facts g = run(c);
  std::set<std::string> want_c = {"LIB_X_ONLY src/settings.c:5 library", "LIB_NOT_X src/settings.c:7 library",
                                  "LIB_ALWAYS src/settings.c:9 library"};
  EXPECT_EQ(reads(g), want_c) << "found:\n" << dump(reads(g)) << "wanted:\n" << dump(want_c);
}

// 2b. Classes whose constructor reads the environment (libomptarget's Envar<T>): the
// constructor is a reader through `Name.data()`, and each construction is a call: a local
// `T x("NAME", d)`, a temporary `T("NAME")`, a template `Envar<float>(...)`, through aliases
// (`using`, `typedef`), and a member initialised in a constructor's list, whose class comes
// from the member's declaration in another file. A class that does not read, built the same
// ways, names nothing.
TEST(ExtractPatterns, ConstructorsThatReadTheEnvironment) {
  TempTree t;
  t.write("include/envar.h",
          "#include <cstdlib>\n"
          "#include <string>\n"
          "template <typename Ty> class Envar {\n"
          "  Ty Data;\n"
          " public:\n"
          "  Envar() : Data(Ty()) {}\n"
          "  Envar(const std::string &Name, Ty Default = Ty()) : Data(Default) {\n"
          "    if (const char *S = std::getenv(Name.data())) Data = Ty(std::atoi(S));\n"
          "  }\n"
          "};\n"
          "using IntEnvar = Envar<int>;\n"
          "typedef Envar<bool> BoolEnvar;\n"
          "class Label {\n"
          " public:\n"
          "  Label(const std::string &Text, int N = 0) : T(Text) {}\n"
          "  std::string T;\n"
          "};\n"
          "struct Device {\n"
          "  Device();\n"
          "  IntEnvar NumQueues;\n"
          "  Label Title;\n"
          "};\n");
  t.write("src/device.cpp",
          "#include \"envar.h\"\n"                                            // 1
          "Device::Device()\n"                                                // 2
          "    : NumQueues(\"LIB_NUM_QUEUES\", 4),\n"                         // 3
          "      Title(\"TITLE_NOT_A_VAR\") {}\n"                               // 4
          "int setup() {\n"                                                   // 5
          "  BoolEnvar Verbose(\"LIB_VERBOSE\", false);\n"                    // 6
          "  IntEnvar Depth = IntEnvar(\"LIB_DEPTH\", 2);\n"                  // 7
          "  auto Factor = Envar<float>(\"LIB_FACTOR\", 0.5f);\n"             // 8
          "  Label L(\"LABEL_NOT_A_VAR\", 1);\n"                                // 9
          "  return 0;\n"                                                     // 10
          "}\n");
  Facts f = run(t);
  std::set<std::string> want = {"LIB_NUM_QUEUES src/device.cpp:3 library", "LIB_VERBOSE src/device.cpp:6 library",
                                "LIB_DEPTH src/device.cpp:7 library", "LIB_FACTOR src/device.cpp:8 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
  for (auto& e : f.env_vars)
    if (e.name == "LIB_NUM_QUEUES") EXPECT_EQ(e.default_value, "4");
}

// 5. API controls beyond the category words: a configure template (`omp.h.var`, `.h.cmake`) is
// a public header; a setter named after a variable the library reads (lib_set_stacksize for
// LIB_STACKSIZE, lib_set_library_serial for LIB_LIBRARY) is a control of it, and so is a setter
// of nothing read that takes values alone (the library's own state: lib_set_colour), but not
// one named with another prefix; binding calls (cpubind, membind) are affinity controls, the flags named
// after them and calls that only mention a CPU set are not; private/ and deprecated headers
// offer none.
TEST(ExtractPatterns, ApiSettersOfReadVariablesAndBindingCalls) {
  TempTree t;
  t.write("src/env.c",
          "#include <stdlib.h>\n"
          "void init(void) { getenv(\"LIB_STACKSIZE\"); getenv(\"LIB_LIBRARY\"); getenv(\"LIB_SCHEDULE\"); }\n");
  t.write("src/include/lib.h.var",
          "#define LIB_VERSION @LIB_VERSION@\n"                                         // 1
          "extern void lib_set_stacksize(int size);\n"                                  // 2
          "extern void lib_set_stacksize_s(unsigned long size);\n"                      // 3
          "extern void lib_set_library_serial(void);\n"                                 // 4
          "extern void lib_set_schedule(int kind, int chunk);\n"                        // 5
          "extern void lib_set_colour(int c);\n"                                        // 6
          "extern void other_set_stacksize(int size);\n");                              // 7
  t.write("include/bind.h",
          "typedef enum { LIB_CPUBIND_PROCESS = 1, LIB_MEMBIND_STRICT = 2 } lib_bind_flags_t;\n"  // 1
          "typedef struct lib_set* lib_cpuset_t;\n"                                             // 2
          "int lib_set_cpubind(lib_cpuset_t set, int flags);\n"                                 // 3
          "int lib_get_membind(lib_cpuset_t set, int* policy, int flags);\n"                    // 4
          "int lib_cpuset_to_nodeset(lib_cpuset_t set, lib_cpuset_t nodes);\n");                // 5
  t.write("include/private/internal.h", "int lib_set_internal_cpubind(int set);\n");
  t.write("include/deprecated.h", "int lib_set_membind_nodeset(int set, int flags);\n");
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"lib_set_stacksize setting src/include/lib.h.var:2",
                                "lib_set_stacksize_s setting src/include/lib.h.var:3",
                                "lib_set_library_serial setting src/include/lib.h.var:4",
                                "lib_set_schedule setting src/include/lib.h.var:5",
                                "lib_set_colour setting src/include/lib.h.var:6",
                                "lib_set_cpubind affinity include/bind.h:3"};  // lib_get_membind reads: a query
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// A query is no API control, whatever words its name shares with one: a getter by its name, a
// call that takes nothing and returns a count, one whose documentation says it reports; a call
// whose name says it acts stays a control whatever it returns.
TEST(ExtractPatterns, ApiQueriesAreNoControls) {
  TempTree t;
  t.write("include/pool.h",
          "void pool_set_num_threads(int n);\n"                                       // 1
          "int pool_get_num_threads(void);\n"                                         // 2
          "int pool_getaffinity(int idx, void* mask);\n"                              // 3
          "int pool_planner_nthreads(void);\n"                                        // 4
          "/** Reports how many worker threads are busy. */\n"                        // 5
          "int pool_busy_threads(int pool);\n"                                        // 6
          "/** Returns 0 on failure. */\n"                                            // 7
          "int pool_init_threads(void);\n"                                            // 8
          "int pool_setaffinity(int idx, void* mask);\n");                            // 9
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"pool_set_num_threads threads include/pool.h:1",
                                "pool_init_threads threads include/pool.h:8",
                                "pool_setaffinity affinity include/pool.h:9"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// Where the build installs headers of a folder, one it leaves out is private; a compatibility
// header's `#define` of an older name does not rename the control; a setter of a variable the
// library reads with the verb last (GObject's order), a setter of the cache's limit, a switch of
// the cache's tracing (the library's own state) and a switch of the vector code are controls;
// a call that runs work on a pool is none.
TEST(ExtractPatterns, ApiBesideInstalledHeadersCompatNamesVerbLastCacheAndRun) {
  TempTree t;
  t.write("libvl/include/vl/meson.build", "install_headers('vl.h', 'vl7compat.h')\n");
  t.write("libvl/include/vl/vl.h",
          "void vl_concurrency_set(int n);\n"                                         // 1
          "void vl_leak_set(int on);\n"                                               // 2
          "void vl_cache_set_max_mem(unsigned long bytes);\n"                         // 3
          "void vl_cache_set_trace(int on);\n"                                        // 4
          "void vl_vector_set_enabled(int on);\n"                                     // 5
          "int vl_threadpool_run(void* work);\n"                                      // 6
          "void vl_image_draw(void* image);\n");                                      // 7
  t.write("libvl/include/vl/vl7compat.h", "#define im_concurrency_set vl_concurrency_set\n");
  t.write("libvl/include/vl/internal.h", "extern int vl__concurrency;\nvoid vl__set_num_threads(int n);\n");
  t.write("libvl/iofuncs/init.c",
          "#include <stdlib.h>\n"
          "void vl_init(void) { if (getenv(\"VL_LEAK\")) {} }\n");
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"vl_concurrency_set threads libvl/include/vl/vl.h:1",
                                "vl_leak_set setting libvl/include/vl/vl.h:2",
                                "vl_cache_set_max_mem limit libvl/include/vl/vl.h:3",
                                "vl_cache_set_trace setting libvl/include/vl/vl.h:4",
                                "vl_vector_set_enabled setting libvl/include/vl/vl.h:5"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// An options entry point (`X_opts(int option, ...)`) is a control, and so is each value of the
// enum named after it that sets an option (SET, ENABLE, DISABLE); values that read (GET) are not,
// nor is an options entry point without such an enum.
TEST(ExtractPatterns, ApiOptionsEntryPointAndItsKeys) {
  TempTree t;
  t.write("include/gx/common.h",
          "typedef enum {\n"                                                           // 1
          "  GX_OPT_GET_WINDOW_SIZE,\n"                                                // 2
          "  GX_OPT_SET_WINDOW_SIZE,\n"                                                // 3
          "  GX_OPT_ENABLE_CACHING,\n"                                                 // 4
          "  GX_OPT_DISABLE_FSYNC\n"                                                   // 5
          "} gx_lib_opt_t;\n"                                                          // 6
          "int gx_lib_opts(int option, ...);\n"                                        // 7
          "int gx_log_opts(int option, ...);\n");                                      // 8
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"gx_lib_opts setting include/gx/common.h:7",
                                "GX_OPT_SET_WINDOW_SIZE setting include/gx/common.h:3",
                                "GX_OPT_ENABLE_CACHING setting include/gx/common.h:4",
                                "GX_OPT_DISABLE_FSYNC setting include/gx/common.h:5"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// A configuring call may take the object it configures before its key: it is a control, and
// so is every value of its key's enum (it only sets); a variadic call of another name that
// takes an object first is no entry point of options.
TEST(ExtractPatterns, ApiConfiguringCallAndItsKeys) {
  TempTree t;
  t.write("include/ev.h",
          "typedef struct ev_loop_s ev_loop_t;\n"                                      // 1
          "typedef enum {\n"                                                           // 2
          "  EV_LOOP_BLOCK_SIGNAL = 0,\n"                                              // 3
          "  EV_METRICS_IDLE_TIME\n"                                                   // 4
          "} ev_loop_option;\n"                                                        // 5
          "int ev_loop_configure(ev_loop_t* loop, ev_loop_option option, ...);\n"      // 6
          "typedef enum { EV_LOG_LEVEL, EV_LOG_FILE } ev_log_key;\n"                   // 7
          "int ev_log_write(ev_loop_t* loop, ev_log_key key, ...);\n");                // 8
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"ev_loop_configure setting include/ev.h:6",
                                "EV_LOOP_BLOCK_SIGNAL setting include/ev.h:3",
                                "EV_METRICS_IDLE_TIME setting include/ev.h:4"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// The OS scheduling priority of a process or thread is a control; a priority of something else
// (a task context) is not by that rule. The title or name a process or thread shows is no
// setting of the library's own state, whatever values its setter takes.
TEST(ExtractPatterns, ApiProcessPriorityAndNoProcessTitle) {
  TempTree t;
  t.write("src/init.c", "#include <stdlib.h>\nvoid ev_init(void) { getenv(\"EV_THREADPOOL_SIZE\"); }\n");
  t.write("include/ev.h",
          "typedef int ev_pid_t;\n"                                                    // 1
          "int ev_os_setpriority(ev_pid_t pid, int priority);\n"                       // 2
          "int ev_ctx_set_priority(unsigned ctx_id, unsigned priority);\n"             // 3
          "int ev_set_process_title(const char* title);\n"                             // 4
          "int ev_set_thread_name(const char* name);\n"                                // 5
          "int ev_set_log_level(int level);\n");                                       // 6
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"ev_os_setpriority setting include/ev.h:2", "ev_set_log_level setting include/ev.h:6"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// A configure template's `#undef` of a type of the library's own stands for a type, so the call
// its `#ifdef` guards is read; the C library's types stay undefined. `set_dynamic` is the
// runtime's switch only right after its prefix.
TEST(ExtractPatterns, ApiGuardedByAConfiguredTypeAndTheRuntimesOwnSwitch) {
  TempTree t;
  t.write("include/cfg/config.h.in", "/* Define this to the thread ID type */\n#undef cfg_thread_t\n#undef size_t\n");
  t.write("include/cfg/cfg.h",
          "#include \"cfg/config.h\"\n"                                              // 1
          "#ifdef cfg_thread_t\n"                                                    // 2
          "int cfg_set_thread_cpubind(cfg_thread_t thread, int cpu);\n"              // 3
          "#endif\n"                                                                 // 4
          "#ifdef size_t\n"                                                          // 5
          "int cfg_set_num_threads(int n);\n"                                        // 6
          "#endif\n"                                                                 // 7
          "void cfg_set_dynamic(int on);\n"                                          // 8
          "void cfg_buf_set_dynamic(void* buf, int max);\n");                        // 9
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"cfg_set_thread_cpubind affinity include/cfg/cfg.h:3",
                                "cfg_set_dynamic threads include/cfg/cfg.h:8"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// Calls that report (display, capture) and the making or unmaking of a value of the library's
// own type are no controls, whatever words their names share with one; a pool of threads is no
// such value. An enumerator is a control only as a value some public function takes. Setters
// of an allocator, of the settings as a whole, and a call that pauses the runtime's resources
// are controls.
TEST(ExtractPatterns, ApiReportsLifecyclesAndUntakenEnumeratorsAreNoControls) {
  TempTree t;
  t.write("include/rt.h",
          "typedef struct rt_mask rt_mask_t;\n"                                       // 1
          "typedef struct rt_thread_pool rt_thread_pool_t;\n"                         // 2
          "void rt_display_affinity(const char* format);\n"                           // 3
          "unsigned long rt_capture_affinity(char* buf, unsigned long n, const char* format);\n"  // 4
          "void rt_create_affinity_mask(rt_mask_t* mask);\n"                          // 5
          "void rt_destroy_affinity_mask(rt_mask_t* mask);\n"                         // 6
          "int rt_set_affinity_mask_proc(int proc, rt_mask_t* mask);\n"               // 7
          "void rt_free_thread_pool(rt_thread_pool_t* pool);\n"                       // 8
          "typedef enum { rt_lock_spin = 1, rt_lock_queue = 2 } rt_lock_kind_t;\n"    // 9
          "typedef enum { rt_spin_off = 0, rt_spin_on = 1 } rt_spin_mode_t;\n"        // 10
          "void rt_set_mode(rt_spin_mode_t mode);\n"                                  // 11
          "typedef void (*rt_lock_cb)(int);\n"                                        // 12
          "void rt_set_default_allocator(void* allocator);\n"                         // 13
          "void rt_set_defaults(const char* settings);\n"                             // 14
          "int rt_pause_resource(int kind, int device);\n"                            // 15
          "void rt_set_num_threads(int n);\n");                                       // 16
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"rt_set_affinity_mask_proc affinity include/rt.h:7",
                                "rt_free_thread_pool workers include/rt.h:8",
                                "rt_spin_off spin include/rt.h:10",
                                "rt_spin_on spin include/rt.h:10",
                                "rt_set_default_allocator allocator include/rt.h:13",
                                "rt_set_defaults setting include/rt.h:14",
                                "rt_pause_resource threads include/rt.h:15",
                                "rt_set_num_threads threads include/rt.h:16"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// A documentation group titled as configuration, settings or options makes its setters settings
// (set, allow, enable, disable), not its user pointers nor what takes a callback; the same
// setters in any other group, and queries in the settings group, are no controls. An unclosed
// group runs to the end of the header.
TEST(ExtractPatterns, ApiSettersInADocumentedConfigurationGroup) {
  TempTree t;
  t.write("include/topo.h",
          "typedef struct topo_s* topo_t;\n"                                           // 1
          "typedef void (*topo_log_fn)(const char* msg);\n"                            // 2
          "/** \\defgroup topo_conf Detection Configuration and Query\n"             // 3
          " * @{ */\n"                                                                 // 4
          "int topo_set_flags(topo_t t, unsigned long flags);\n"                       // 5
          "int topo_allow_kinds(topo_t t, int kinds);\n"                               // 6
          "unsigned long topo_get_flags(topo_t t);\n"                                  // 7
          "void topo_set_userdata(topo_t t, void* data);\n"                            // 8
          "int topo_set_logger(topo_t t, topo_log_fn fn);\n"                           // 9
          "/** @} */\n"                                                                // 10
          "/** @defgroup topo_edit Editing a loaded topology\n"                         // 11
          " * @{ */\n"                                                                 // 12
          "int topo_set_name(topo_t t, const char* name);\n"                           // 13
          "/** @} */\n"                                                                // 14
          "/** @defgroup topo_opts Runtime options\n"                                  // 15
          " * @{ */\n"                                                                 // 16
          "int topo_enable_cache(topo_t t, int on);\n");                               // 17
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"topo_set_flags setting include/topo.h:5", "topo_allow_kinds setting include/topo.h:6",
                                "topo_enable_cache setting include/topo.h:17"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// A documentation group whose introduction names an environment variable the library reads is
// a group of settings whatever its title: its setters change what that variable changes. One
// that names a variable the library never reads is not.
TEST(ExtractPatterns, ApiSettersInAGroupThatNamesAVariableTheLibraryReads) {
  TempTree t;
  t.write("src/topology.c",
          "#include <stdlib.h>\n"
          "void discover(void) { getenv(\"TOPO_XMLFILE\"); }\n");
  t.write("include/topo.h",
          "typedef struct topo_s* topo_t;\n"                                           // 1
          "/** \\defgroup topo_source Changing the Source of Discovery\n"             // 2
          " * Setting TOPO_XMLFILE in the environment enforces the discovery\n"       // 3
          " * from a file as if topo_set_xml() had been called.\n"                    // 4
          " * @{ */\n"                                                                 // 5
          "int topo_set_xml(topo_t t, const char* path);\n"                           // 6
          "int topo_set_pid(topo_t t, int pid);\n"                                    // 7
          "void topo_set_userdata(topo_t t, void* data);\n"                           // 8
          "/** @} */\n"                                                                // 9
          "/** \\defgroup topo_edit Editing a loaded topology\n"                     // 10
          " * TOPO_UNREAD_VARIABLE is not read by this library.\n"                    // 11
          " * @{ */\n"                                                                 // 12
          "int topo_set_name(topo_t t, const char* name);\n"                          // 13
          "/** @} */\n");                                                              // 14
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"topo_set_xml setting include/topo.h:6", "topo_set_pid setting include/topo.h:7"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// A variable is a control only where a program can assign it: an extern declaration of a value.
// An object the header defines itself (a C++ inline variable), a static, and one of a struct
// type are not. The values of an enum are controls only where a call that sets takes the enum:
// not the keys of a lookup.
TEST(ExtractPatterns, ApiVariablesProgramsAssignAndEnumsASetterTakes) {
  TempTree t;
  t.write("include/dev/state.h",
          "namespace dev {\n"                                                          // 1
          "enum ValueKind { VK_NThreads, VK_Level };\n"                                // 2
          "unsigned& lookup32(ValueKind kind, bool readonly);\n"                       // 3
          "template <ValueKind K> struct Value { unsigned v; };\n"                    // 4
          "inline Value<VK_NThreads> NThreads;\n"                                      // 5
          "enum PoolKnob { PK_num_threads, PK_stack };\n"                              // 6
          "void set_pool_knob(PoolKnob knob, long value);\n"                          // 7
          "extern int default_num_threads;\n"                                          // 8
          "static int max_threads_seen = 0;\n"                                         // 9
          "struct ThreadConfig { int n; };\n"                                          // 10
          "extern ThreadConfig num_threads_config;\n"                                  // 11
          "}\n");                                                                      // 12
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"PK_num_threads threads include/dev/state.h:6",
                                "default_num_threads threads include/dev/state.h:8"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// A setter of the library's own state is a control: named with the library's prefix (that of
// the variables it reads), `set` among its words, taking values only (numbers, flags, strings).
// One that takes an object sets that object's; one named with another prefix is not the
// library's, nor one that takes a number named as an object's identifier or handle (the
// object's); setting an error is reporting; a callback is plumbing. A call that takes nothing
// and empties the library's cache is a control; one that empties an object's cache is not.
TEST(ExtractPatterns, ApiSettersOfTheLibrarysOwnStateAndItsCacheDrop) {
  TempTree t;
  t.write("src/init.c",
          "#include <stdlib.h>\n"
          "void vl_init(void) { getenv(\"VL_TRACE\"); }\n");
  t.write("include/vl.h",
          "typedef struct vl_image VlImage;\n"                                        // 1
          "typedef void (*vl_log_fn)(const char* msg);\n"                             // 2
          "void vl_cache_set_dump(int dump);\n"                                       // 3
          "void vl_operation_block_set(const char* name, int state);\n"              // 4
          "void vl_image_set_progress(VlImage* image, int progress);\n"              // 5
          "void vl_error_set(int code, const char* message);\n"                      // 6
          "void vl_set_logger(vl_log_fn fn);\n"                                       // 7
          "void other_set_dump(int dump);\n"                                          // 8
          "void vl_cache_drop_all(void);\n"                                           // 9
          "void vl_image_drop_cache(VlImage* image);\n"                               // 10
          "void vl_pool_set_priority(unsigned pool_id, int priority);\n"              // 11
          "void vl_stream_set_level(int stream_handle, int level);\n"                 // 12
          "void vl_sched_set_min_priority(int min_prio);\n");                         // 13
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"vl_cache_set_dump setting include/vl.h:3",
                                "vl_operation_block_set setting include/vl.h:4",
                                "vl_cache_drop_all limit include/vl.h:9",
                                "vl_sched_set_min_priority setting include/vl.h:13"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// meson's `var += other` adds the list `other` holds, inside `if get_option(...)` too (the tree
// is read as the build that enables everything): a header it installs that way is public, one
// beside it the build never installs stays private.
TEST(ExtractPatterns, ApiHeadersAMesonListAddsUnderAnOptionAreInstalled) {
  TempTree t;
  t.write("libvl/include/vl/meson.build",
          "public_headers = files('vl.h')\n"
          "old_headers = files('almostold.h')\n"
          "if get_option('deprecated')\n"
          "    public_headers += old_headers\n"
          "endif\n"
          "install_headers(public_headers, subdir: 'vl')\n");
  t.write("libvl/include/vl/vl.h", "void vl_concurrency_set(int n);\n");
  t.write("libvl/include/vl/almostold.h", "void vl_old_concurrency_set(int n);\n");
  t.write("libvl/include/vl/internal.h", "void vl_internal_concurrency_set(int n);\n");
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"vl_concurrency_set threads libvl/include/vl/vl.h:1",
                                "vl_old_concurrency_set threads libvl/include/vl/almostold.h:1"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// A string constant of a source file is that file's: another file's static of the same name
// (a test's `static const char* name = "localhost"`) is not what `name` holds here. A name its
// own file does not define is any file's: a header's macro, another file's global.
TEST(ExtractPatterns, AConstantOfASourceFileIsThatFilesOwn) {
  TempTree t;
  t.write("include/keys.h", "#define KEY \"LIB_KEY\"\n");
  t.write("test/a.c",
          "static const char* name = \"localhost\";\n"        // 1
          "void resolve(const char*);\n"                     // 2
          "void a(void) { resolve(name); }\n");              // 3
  t.write("test/b.c",
          "#include <stdlib.h>\n"                            // 1
          "static const char* name = \"LIB_TEST_FOO\";\n"    // 2
          "void b(void) { getenv(name); }\n");               // 3
  t.write("src/c.c",
          "#include <stdlib.h>\n"                            // 1
          "#include \"keys.h\"\n"                            // 2
          "void c(void) { getenv(KEY); }\n");                // 3
  t.write("src/d.c", "const char* other_name = \"LIB_D\";\n");
  t.write("src/e.c",
          "#include <stdlib.h>\n"                            // 1
          "extern const char* other_name;\n"                 // 2
          "void e(void) { getenv(other_name); }\n");         // 3
  Facts f = run(t);
  std::set<std::string> want = {"LIB_TEST_FOO test/b.c:3 test", "LIB_KEY src/c.c:3 library",
                                "LIB_D src/e.c:3 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// A table's rows may be calls of a macro of the file whose body is a braced initializer
// (`E_V("NAME")` with `#define E_V(str) { L##str, L##str L"=", sizeof(str) }`): each row is that
// initializer with the call's arguments in place, so `required_vars[i].wide` reads every row's
// name; a wide literal pasted onto the parameter (L##str) is the same name.
TEST(ExtractPatterns, TableRowsBuiltByAMacro) {
  TempTree t;
  t.write("src/win/process.c",
          "#include <windows.h>\n"                                                      // 1
          "typedef struct { const WCHAR* wide; const WCHAR* wide_eq; size_t len; } env_var_t;\n"
          "#define E_V(str) { L##str, L##str L\"=\", sizeof(str) }\n"                   // 3
          "static const env_var_t required_vars[] = {\n"                                // 4
          "  E_V(\"LIB_HOMEDRIVE\"),\n"                                                 // 5
          "  E_V(\"LIB_SYSTEMROOT\"),\n"                                                // 6
          "};\n"                                                                        // 7
          "void make_env(void) {\n"                                                     // 8
          "  for (int i = 0; i < 2; i++) GetEnvironmentVariableW(required_vars[i].wide, 0, 0);\n"
          "}\n");
  Facts f = run(t);
  std::set<std::string> want = {"LIB_HOMEDRIVE src/win/process.c:5 library", "LIB_SYSTEMROOT src/win/process.c:6 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// The allocator the library allocates with may be replaced or installed, not only set; the
// runtime's resources as a whole may be freed as well as paused or released.
TEST(ExtractPatterns, ApiAllocatorReplacedAndResourcesFreed) {
  TempTree t;
  t.write("include/ev.h",
          "typedef void* (*ev_malloc_fn)(unsigned long size);\n"                    // 1
          "typedef void (*ev_free_fn)(void* p);\n"                                   // 2
          "int ev_replace_allocator(ev_malloc_fn m, ev_free_fn f);\n"                // 3
          "void ev_free_resources(void);\n"                                          // 4
          "void ev_free_buffer(void* buffer);\n");                                   // 5
  Facts f = run(t, "all", true);
  std::set<std::string> got = api_lines(f);
  std::set<std::string> want = {"ev_replace_allocator allocator include/ev.h:3", "ev_free_resources threads include/ev.h:4"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// 6. Python without the suffix: LLVM lit's test configurations are read, as test code wherever
// they sit, their @NAME@ templates too; SCons scripts are build code. An INI-style setup.cfg
// is not Python and names nothing.
TEST(ExtractPatterns, LitConfigurationsAndSconsScriptsArePython) {
  TempTree t;
  t.write("lit.cfg",
          "import os\n"                                                         // 1
          "if 'LIB_TEST_DEVICES' in os.environ:\n"                              // 2
          "    config.environment['LIB_TEST_DEVICES'] = os.environ['LIB_TEST_DEVICES']\n"
          "config.name = os.environ.get('LIB_SUITE_NAME', 'lib')\n");           // 4
  t.write("runtime/test/lit.site.cfg.in",
          "config.test_compiler = '@CMAKE_C_COMPILER@'\n"                       // 1
          "config.has_gpu = os.getenv('LIB_HAS_GPU') == '1'\n");                // 2
  t.write("runtime/test/affinity/lit.local.cfg", "if os.getenv('LIB_AFFINITY_TESTS'): config.unsupported = False\n");
  t.write("SConstruct", "import os\nenv = Environment(CC=os.environ.get('LIB_SCONS_CC', 'cc'))\n");
  t.write("setup.cfg", "[metadata]\nname = os.getenv('NOT_PYTHON')\n");
  Facts f = run(t);
  std::set<std::string> want = {"LIB_TEST_DEVICES lit.cfg:2 test",  "LIB_TEST_DEVICES lit.cfg:3 test",
                                "LIB_SUITE_NAME lit.cfg:4 test",    "LIB_HAS_GPU runtime/test/lit.site.cfg.in:2 test",
                                "LIB_AFFINITY_TESTS runtime/test/affinity/lit.local.cfg:1 test",
                                "LIB_SCONS_CC SConstruct:2 build"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// 7. Readers declared outside the tree (GLib, Qt, NSPR, APR, SDL, libuv) and their wrappers,
// and names chosen by a conditional expression: each branch is a read at the call. A branch
// that is no name (a variable of unknown value) reads nothing; a conditional that is not an
// argument of a reader names nothing.
TEST(ExtractPatterns, FrameworkReadersAndChoicesOfNames) {
  TempTree t;
  t.write("libfoo/init.c",
          "#include <glib.h>\n"                                                               // 1
          "#include <stdlib.h>\n"                                                             // 2
          "static const char *guess(const char *argv0, const char *env) {\n"                  // 3
          "  const char *p = g_getenv(env);\n"                                                // 4
          "  return p ? p : argv0;\n"                                                         // 5
          "}\n"                                                                               // 6
          "int foo_init(const char *argv0, int ssl, int up, const char *other) {\n"           // 7
          "  if (g_getenv(\"FOO_INFO\")) return 1;\n"                                         // 8
          "  guess(argv0, \"FOOHOME\");\n"                                                    // 9
          "  const char *x = getenv(ssl ? \"https_proxy\" : \"http_proxy\");\n"               // 10
          "  const char *y = guess(argv0, up ? (ssl ? \"FOO_UP_SSL\" : \"FOO_UP\") : other);\n"  // 11
          "  const char *z = g_environ_getenv(NULL, \"FOO_ENVP\");\n"                         // 12
          "  puts(ssl ? \"NOT_A_READ\" : \"NOR_THIS\");\n"                                    // 13
          "  return x && y && z;\n"                                                           // 14
          "}\n");                                                                             // 15
  t.write("libfoo/qt.cpp",
          "#include <QtGlobal>\n"                                                             // 1
          "int threads() { return qEnvironmentVariableIntValue(\"FOO_QT_THREADS\"); }\n"      // 2
          "bool verbose() { return !qgetenv(\"FOO_QT_VERBOSE\").isEmpty(); }\n"               // 3
          "const char *nspr() { return PR_GetEnv(\"FOO_NSPR\"); }\n");                        // 4
  t.write("tools/run.py",
          "import os\n"
          "mode = os.environ.get(\"FOO_WIN\" if os.name == \"nt\" else \"FOO_POSIX\", \"1\")\n");
  Facts f = run(t);
  std::set<std::string> want = {
      "FOO_INFO libfoo/init.c:8 library",      "FOOHOME libfoo/init.c:9 library",
      "https_proxy libfoo/init.c:10 library",  "http_proxy libfoo/init.c:10 library",
      "FOO_UP_SSL libfoo/init.c:11 library",   "FOO_UP libfoo/init.c:11 library",
      "FOO_ENVP libfoo/init.c:12 library",     "FOO_QT_THREADS libfoo/qt.cpp:2 library",
      "FOO_QT_VERBOSE libfoo/qt.cpp:3 library", "FOO_NSPR libfoo/qt.cpp:4 library",
      "FOO_WIN tools/run.py:2 tool",           "FOO_POSIX tools/run.py:2 tool"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
  for (auto& e : f.env_vars)
    if (e.name == "FOO_QT_THREADS") EXPECT_EQ(e.type, "int");
}

// 8. Expanders read every variable their text refers to (%NAME% for ExpandEnvironmentStrings,
// $NAME and ${NAME:-d} for wordexp and os.path.expandvars); a table passed to a helper that
// walks it is read row by row at each caller that passes a table, a function's own static
// table included; a settings table passed to a loader that reads s[i].env is one read per row.
TEST(ExtractPatterns, ExpandersAndTablesPassedToHelpers) {
  TempTree t;
  t.write("src/dirs.c",
          "#include <windows.h>\n"                                                                    // 1
          "#include <wordexp.h>\n"                                                                    // 2
          "static int expand(wchar_t *dest, const wchar_t *src) {\n"                                  // 3
          "  return ExpandEnvironmentStringsW(src, dest, 260) > 0;\n"                                 // 4
          "}\n"                                                                                       // 5
          "static int find_dirs(wchar_t *out, const wchar_t *tmpl[]) {\n"                             // 6
          "  for (; *tmpl != NULL; tmpl++) expand(out, *tmpl);\n"                                     // 7
          "  return 0;\n"                                                                             // 8
          "}\n"                                                                                       // 9
          "int global_dirs(wchar_t *out) {\n"                                                         // 10
          "  static const wchar_t *tmpls[3] = {\n"                                                    // 11
          "    L\"%FOO_HOME%\\\\\", L\"%HOMEDRIVE%%HOMEPATH%\\\\\", NULL };\n"                         // 12
          "  return find_dirs(out, tmpls);\n"                                                         // 13
          "}\n"                                                                                       // 14
          "int data_dir(wchar_t *out) { return expand(out, L\"%PROGRAMDATA%\\\\Foo 100%\"); }\n"       // 15
          "int conf(void) { wordexp_t w; return wordexp(\"$FOO_CONF ${FOO_ALT:-/etc} $5\", &w, 0); }\n"  // 16
          "struct setting { const char *env; int *target; };\n"                                       // 17
          "static int a, b;\n"                                                                        // 18
          "static const struct setting settings[] = {\n"                                              // 19
          "  {\"FOO_KNOB_A\", &a},\n"                                                                  // 20
          "  {\"FOO_KNOB_B\", &b}};\n"                                                                 // 21
          "static void load(const struct setting *s, int n) {\n"                                      // 22
          "  for (int i = 0; i < n; ++i) if (getenv(s[i].env)) *s[i].target = 1;\n"                  // 23
          "}\n"                                                                                       // 24
          "void init(const char *label) { load(settings, 2); expand(0, label); }\n");                // 25
  t.write("tools/paths.py", "import os\nroot = os.path.expandvars('$FOO_ROOT/bin')\n");
  Facts f = run(t);
  std::set<std::string> want = {
      "FOO_HOME src/dirs.c:12 library",     "HOMEDRIVE src/dirs.c:12 library", "HOMEPATH src/dirs.c:12 library",
      "PROGRAMDATA src/dirs.c:15 library",  "FOO_CONF src/dirs.c:16 library",  "FOO_ALT src/dirs.c:16 library",
      "FOO_KNOB_A src/dirs.c:20 library",   "FOO_KNOB_B src/dirs.c:21 library", "FOO_ROOT tools/paths.py:2 tool"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// 9. A macro that renames a reader (each #ifdef alternative) is that reader; a local name
// reassigned between two reads reads what was assigned last.
TEST(ExtractPatterns, RenamedReadersAndReassignedNames) {
  TempTree t;
  t.write("lib/env.c",
          "#include <stdlib.h>\n"                                       // 1
          "char *foo_getenv(const char *v) { return getenv(v); }\n"     // 2
          "#define foox_getenv foo_getenv\n"                            // 3
          "#ifdef VMS\n"                                                // 4
          "#define my_env vms_getenv\n"                                 // 5
          "#else\n"                                                     // 6
          "#define my_env foox_getenv\n"                                // 7
          "#endif\n"                                                    // 8
          "#define NOT_A_READER strlen\n"                               // 9
          "int f(void) {\n"                                             // 10
          "  const char *p = \"no_proxy\";\n"                           // 11
          "  char *n = foo_getenv(p);\n"                                // 12
          "  if (!n) {\n"                                               // 13
          "    p = \"NO_PROXY\";\n"                                     // 14
          "    n = foo_getenv(p);\n"                                    // 15
          "  }\n"                                                       // 16
          "  char *c = foox_getenv(\"FOO_COLUMNS\");\n"                 // 17
          "  char *d = my_env(\"FOO_DEEP\");\n"                         // 18
          "  return n && c && d && NOT_A_READER(\"FOO_NONE\");\n"      // 19
          "}\n");
  Facts f = run(t);
  std::set<std::string> want = {"no_proxy lib/env.c:12 library", "NO_PROXY lib/env.c:15 library",
                                "FOO_COLUMNS lib/env.c:17 library", "FOO_DEEP lib/env.c:18 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// 10. Automake as automake reads it: `include Makefile.inc` lists, a generated Makefile.in
// beside its Makefile.am ignored, nodist_ sources with their target, a program named lib*
// (a test program) no library, a convenience library that rebuilds a program's sources for
// unit tests no library either, a convenience library under tests/ a test's; scripts/, docs/
// and debian/ are build, debian/tests test.
TEST(ExtractPatterns, AutomakeIncludesConvenienceLibrariesAndFolders) {
  TempTree t;
  t.write("lib/Makefile.am", "lib_LTLIBRARIES = libfoo.la\nlibfoo_la_SOURCES = core.c\n");
  t.write("lib/core.c", reader("FOO_CORE", false));
  t.write("src/Makefile.am",
          "include Makefile.inc\n"
          "bin_PROGRAMS = foo\n"
          "foo_SOURCES = $(FOO_FILES)\n"
          "if BUILD_UNITTESTS\n"
          "noinst_LTLIBRARIES = libfootool.la\n"
          "libfootool_la_SOURCES = $(FOO_FILES)\n"
          "endif\n");
  t.write("src/Makefile.inc", "FOO_FILES = tool_main.c \\\n  tool_opts.c\n");
  t.write("src/Makefile.in", "am_libfootool_la_OBJECTS = tool_main.lo tool_opts.lo\nlibfoo_src = tool_opts.c\n");
  t.write("src/tool_main.c", reader("FOO_TOOL_MAIN", true));
  t.write("src/tool_opts.c", reader("FOO_TOOL_OPTS", false));
  t.write("tests/libtest/Makefile.am",
          "include Makefile.inc\n"
          "noinst_LTLIBRARIES = libstub.la\n"
          "libstub_la_SOURCES = stub.c\n");
  t.write("tests/libtest/Makefile.inc",
          "SUPPORTFILES = first.c\n"
          "noinst_PROGRAMS = libauth lib1521\n"
          "libauth_SOURCES = libauth.c $(SUPPORTFILES)\n"
          "nodist_lib1521_SOURCES = lib1521.c $(SUPPORTFILES)\n");
  t.write("tests/libtest/first.c", reader("FOO_MEMDEBUG", false));
  t.write("tests/libtest/stub.c", reader("FOO_STUB_CREDS", false));
  t.write("scripts/dist.py", "import os\nroot = os.environ['MESON_DIST_ROOT']\n");
  t.write("docs/conf.py", "import os\nv = os.environ.get('FOO_DOC_VERSION')\n");
  t.write("debian/tests/smoke.c", reader("AUTOPKGTEST_TMP", true));
  Facts f = run(t);
  std::set<std::string> want = {"FOO_CORE lib/core.c:2 library",
                                "FOO_TOOL_MAIN src/tool_main.c:2 tool",
                                "FOO_TOOL_OPTS src/tool_opts.c:2 tool",
                                "FOO_MEMDEBUG tests/libtest/first.c:2 test",
                                "FOO_STUB_CREDS tests/libtest/stub.c:2 test",
                                "MESON_DIST_ROOT scripts/dist.py:2 build",
                                "FOO_DOC_VERSION docs/conf.py:2 build",
                                "AUTOPKGTEST_TMP debian/tests/smoke.c:2 test"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// 7. API controls in headers the build installs, wherever they sit: Automake's WHERE_HEADERS
// (through an included Makefile.am and a list named before it is set), CMake's install(FILES),
// meson's install_headers; not noinst_ headers nor headers nothing installs. The umbrella header
// is parsed first and its includes are found from the tree's root, with a configure template
// standing in for the header it generates (config.h: the export macro and a type the other
// headers need). A keyed setter of resource limits lists each value of its enum (sentinels
// aside); a drawing call's limit and a cache view are no controls; a control offered through
// `#define A B` is listed as A.
TEST(ExtractPatterns, ApiInInstalledHeadersWithIncludesKeyedSettersAndAliases) {
  TempTree t;
  t.write("Makefile.am", "include core/Makefile.am\n");
  t.write("core/Makefile.am",
          "coreincdir = $(includedir)/core\n"
          "coreinc_HEADERS = $(CORE_HDRS)\n"
          "CORE_HDRS = core/umbrella.h core/resource.h core/draw.h\n"
          "noinst_HEADERS = core/tune_private.h\n");
  t.write("core/config.h.in",
          "#cmakedefine CORE_HAVE_THREADS\n"
          "#cmakedefine01 CORE_USE_MMAP\n"
          "#undef CORE_THREAD_T\n"
          "#define CoreExport extern\n"
          "typedef long long core_int64_t;\n");
  t.write("core/umbrella.h",
          "#include \"core/config.h\"\n"
          "#include \"core/resource.h\"\n"
          "#include \"core/draw.h\"\n");
  t.write("core/resource.h",
          "typedef enum {\n"                                                                    // 1
          "  UndefinedResource = 0,\n"                                                          // 2
          "  MemoryResource,\n"                                                                 // 3
          "  ThreadsResource,\n"                                                                // 4
          "  DiskResource\n"                                                                    // 5
          "} ResourceType;\n"                                                                   // 6
          "CoreExport int SetCoreResourceLimit(const ResourceType type, const core_int64_t limit);\n"  // 7
          "CoreExport core_int64_t GetCoreResourceLimit(const ResourceType type);\n"            // 8
          "CoreExport void AcquireCoreResource(const ResourceType type, const core_int64_t size);\n");  // 9
  t.write("core/draw.h",
          "CoreExport void DrawSetStrokeMiterLimit(void* context, unsigned long limit);\n"      // 1
          "CoreExport void* GetCacheView(void* view);\n"                                        // 2
          "CoreExport void corec_set_affinity_format(const char* format);\n"                    // 3
          "#define core_set_affinity_format corec_set_affinity_format\n");                      // 4
  t.write("core/tune_private.h", "int core_set_num_threads(int n);\n");
  t.write("lib2/CMakeLists.txt",
          "add_library(lib2 pool.c)\n"
          "install(FILES pool.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lib2)\n");
  t.write("lib2/pool.c", "int x;\n");
  t.write("lib2/pool.h", "int lib2_set_num_threads(int n);\n");
  t.write("lib2/pool_internal.h", "int lib2_internal_set_num_threads(int n);\n");
  t.write("lib3/meson.build", "install_headers('lib3.h')\n");
  t.write("lib3/lib3.h", "void lib3_set_num_threads(int n);\n");
  Facts f = run(t, "all", true);
  std::set<std::string> got;
  for (auto& a : f.api_controls)
    got.insert(a.name + " " + a.category + " " + a.file + ":" + std::to_string(a.line) + " " + a.scope);
  // GetCoreResourceLimit reads the limit: a query, no control.
  std::set<std::string> want = {"SetCoreResourceLimit limit core/resource.h:7 library",
                                "MemoryResource limit core/resource.h:3 library",
                                "ThreadsResource threads core/resource.h:4 library",
                                "DiskResource limit core/resource.h:5 library",
                                "core_set_affinity_format affinity core/draw.h:3 library",
                                "lib2_set_num_threads threads lib2/pool.h:1 library",
                                "lib3_set_num_threads threads lib3/lib3.h:1 library"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// 12. Which wrapper a call reaches, on a large C++ tree where names repeat: a static or inline
// function (or a macro) of a source file is a reader for its own file's calls only, so that
// `read(...)` elsewhere is no read; a member call never reaches a free function; a named lambda
// is a wrapper of its scope. Code no configuration compiles (`#if 0`) reads nothing, its
// `#else` does; a conditional default argument (`flag ? 1 : 0`) and an #ifdef between a
// call's arguments leave the call's name alone; Objective-C(++) sources are read, a MATLAB
// `.m` file is not.
TEST(ExtractPatterns, ReaderVisibilityDeadCodeAndConditionalArguments) {
  TempTree t;
  t.write("lib/config.cpp",
          "#include <stdlib.h>\n"                                                          // 1
          "#include <string>\n"                                                            // 2
          "static inline const char *env_read(const char *n) { return getenv(n); }\n"     // 3
          "template <typename T> inline T read(const std::string &k, const T &d) {\n"      // 4
          "  const char *r = env_read(k.c_str());\n"                                       // 5
          "  return r ? T(atoi(r)) : d;\n"                                                 // 6
          "}\n"                                                                            // 7
          "#define LOCAL_GET(x) getenv(\"LIB_\" x)\n"                                      // 8
          "int threads(bool flag) {\n"                                                     // 9
          "  int a = read<int>(\"LIB_THREADS\", 1);\n"                                     // 10
          "  int b = read<int>(\"LIB_FLAG\", flag ? 1 : 0);\n"                             // 11
          "  int c = read<int>(\"LIB_BACKEND\",\n"                                         // 12
          "#ifdef HAVE_GPU\n"                                                              // 13
          "      2\n"                                                                      // 14
          "#else\n"                                                                        // 15
          "      3\n"                                                                      // 16
          "#endif\n"                                                                       // 17
          "  );\n"                                                                         // 18
          "#if 0\n"                                                                        // 19
          "  a += getenv(\"LIB_DEAD\") != 0;\n"                                            // 20
          "#if defined(X)\n"                                                               // 21
          "  a += getenv(\"LIB_DEAD_NESTED\") != 0;\n"                                     // 22
          "#endif\n"                                                                       // 23
          "#else\n"                                                                        // 24
          "  a += getenv(\"LIB_ELSE\") != 0;\n"                                            // 25
          "#endif\n"                                                                       // 26
          "  return a + b + c + (LOCAL_GET(\"MACRO\") != 0);\n"                            // 27
          "}\n");                                                                          // 28
  t.write("lib/parser.cpp",
          "#include <string>\n"                                                            // 1
          "struct Parser { bool read(const std::string &key); bool has(const char *k); };\n"  // 2
          "bool read(const char *file, int flags);\n"                                      // 3
          "#define LOCAL_GET(x) lookup(x)\n"                                               // 4
          "int parse(Parser &p) {\n"                                                       // 5
          "  return p.read(\"NOT_ENV_MEMBER\") + read(\"NOT_ENV_FILE\", 0) +\n"            // 6
          "         (LOCAL_GET(\"NOT_ENV_MACRO\") != 0);\n"                                // 7
          "}\n");                                                                          // 8
  t.write("lib/env.h", "const char *lib_getenv(const char *name);\n");
  t.write("lib/env.c",
          "#include <stdlib.h>\n"
          "const char *lib_getenv(const char *name) { return getenv(name); }\n");
  t.write("lib/use.cpp",
          "#include \"env.h\"\n"                                                           // 1
          "struct Store { const char *lib_getenv(const char *k); };\n"                     // 2
          "int use(Store &s) {\n"                                                          // 3
          "  return (lib_getenv(\"LIB_GLOBAL\") != 0) + (s.lib_getenv(\"NOT_ENV_STORE\") != 0);\n"  // 4
          "}\n"                                                                            // 5
          "int lam() {\n"                                                                  // 6
          "  auto get = [](const char *e) { return getenv(e); };\n"                        // 7
          "  return get(\"LIB_LAMBDA\") != 0;\n"                                           // 8
          "}\n");                                                                          // 9
  t.write("lib/mac.mm",
          "#import <Foundation/Foundation.h>\n"                                            // 1
          "#include <stdlib.h>\n"                                                          // 2
          "@implementation Cam\n"                                                          // 3
          "- (void)open { if (!getenv(\"LIB_OBJC\")) [self ask]; }\n"                       // 4
          "@end\n");                                                                       // 5
  t.write("lib/script.m", "x = getenv('MATLAB_HOME');\nif getenv(\"MATLAB_DEBUG\") disp(x); end\n");
  Facts f = run(t);
  std::set<std::string> want = {
      "LIB_THREADS lib/config.cpp:10 library", "LIB_FLAG lib/config.cpp:11 library",
      "LIB_BACKEND lib/config.cpp:12 library", "LIB_ELSE lib/config.cpp:25 library",
      "LIB_MACRO lib/config.cpp:27 library",   "LIB_GLOBAL lib/use.cpp:4 library",
      "LIB_LAMBDA lib/use.cpp:8 library",      "LIB_OBJC lib/mac.mm:4 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// The text passes the two checks above rest on, line numbers kept.
TEST(ExtractPatterns, PreprocessorPassesKeepLines) {
  using syspilot::extract::code::blank_never_compiled;
  using syspilot::extract::code::first_branch_inside_expressions;
  std::string dead =
      "keep1\n#if 0\ndead1\n#ifdef X\ndead2\n#endif\n#elif Y\nkeep2\n#endif\n#if (0) // off\ndead3\n#endif\nkeep3\n";
  std::string live = blank_never_compiled(dead);
  EXPECT_EQ(std::count(live.begin(), live.end(), '\n'), std::count(dead.begin(), dead.end(), '\n'));
  for (const char* gone : {"dead1", "dead2", "dead3", "#ifdef X"}) EXPECT_EQ(live.find(gone), std::string::npos) << live;
  EXPECT_NE(live.find("#elif Y\nkeep2\n#endif"), std::string::npos) << live;
  EXPECT_NE(live.find("keep1\n"), std::string::npos) << live;
  EXPECT_NE(live.find("\nkeep3\n"), std::string::npos) << live;
  // Between arguments: the first branch stays, directives and the rest are blanked; a
  // conditional between statements, and a '(' inside a string or a #define, change nothing.
  std::string args =
      "f(\"(\", 1,\n#ifdef A\nfirst\n#elif B\nsecond\n#else\nthird\n#endif\n);\n#define OPEN (\n#ifdef C\nx();\n#else\ny();\n#endif\n";
  std::string one = first_branch_inside_expressions(args);
  EXPECT_EQ(one.size(), args.size());
  for (const char* gone : {"second", "third", "#ifdef A", "#elif B"}) EXPECT_EQ(one.find(gone), std::string::npos) << one;
  EXPECT_NE(one.find("first"), std::string::npos) << one;
  EXPECT_NE(one.find("#ifdef C\nx();\n#else\ny();\n#endif"), std::string::npos) << one;
  // a digit separator opens no character literal: the parenthesis it closes still counts
  std::string sep = "int n = f(1'000);\n#ifdef D\nx();\n#else\ny();\n#endif\n";
  EXPECT_EQ(first_branch_inside_expressions(sep), sep);
  // `#if 0` inside a block comment is text
  std::string commented = "/*\n#if 0\n*/\nkeep4();\n#endif\n";
  EXPECT_NE(blank_never_compiled(commented).find("keep4"), std::string::npos);
}

// Paths that say what code is for, on trees without build files that name their targets:
// performance tests (perf/) are benchmarks; Python scripts that build or generate
// (build_sdk.py, gen_java.py) are the build's; a googletest copy (ts_gtest.cpp, gtest-all.cc)
// is test code wherever it sits; contrib/ holds tools, unless a contributed module keeps its
// own sources (contrib/modules/viz/src/), which are a library's like the tree's own.
TEST(ExtractPatterns, ScopeOfPerfBuildScriptsTestFrameworkCopiesAndContributedModules) {
  TempTree t;
  auto c = [](const std::string& var) {
    return "#include <stdlib.h>\nint f_" + var + "(void) { return getenv(\"" + var + "\") != 0; }\n";
  };
  t.write("modules/core/src/system.cpp", c("CV_CORE"));
  t.write("modules/core/perf/perf_main.cpp", c("CV_PERF"));
  t.write("modules/ts/src/ts_gtest.cpp", c("CV_GTEST_COLOR"));
  t.write("third_party/gtest-all.cc", c("GT_ALL"));
  t.write("contrib/modules/viz/src/viz.cpp", c("CV_VIZ"));
  t.write("contrib/pzstd/main.c", c("PZ_LEVEL"));
  t.write("platforms/android/build_sdk.py", "import os\nndk = os.environ.get(\"ANDROID_NDK\")\n");
  t.write("modules/java/generator/gen_java.py", "import os\nlevel = os.environ.get(\"LOG_LEVEL\")\n");
  t.write("modules/python/package/cv2/__init__.py", "import os\npath = os.environ.get(\"CV_PY_PATH\")\n");
  Facts f = run(t);
  std::set<std::string> want = {"CV_CORE modules/core/src/system.cpp:2 library",
                                "CV_PERF modules/core/perf/perf_main.cpp:2 bench",
                                "CV_GTEST_COLOR modules/ts/src/ts_gtest.cpp:2 test",
                                "GT_ALL third_party/gtest-all.cc:2 test",
                                "CV_VIZ contrib/modules/viz/src/viz.cpp:2 library",
                                "PZ_LEVEL contrib/pzstd/main.c:2 tool",
                                "ANDROID_NDK platforms/android/build_sdk.py:2 build",
                                "LOG_LEVEL modules/java/generator/gen_java.py:2 build",
                                "CV_PY_PATH modules/python/package/cv2/__init__.py:2 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// 13. Functions that return names: getenv(name_for(k)) reads every name name_for may return,
// a literal of a switch or a row of its table (an array, or a container such as std::array or
// an enumeration-indexed array initialised with strings, cited at each row); a return of
// NULL is none. A function that returns something else (a computed buffer) gives no name, and
// a pointer into a buffer is no table: the name it is given later is read.
TEST(ExtractPatterns, FunctionsThatReturnNamesAndContainerTables) {
  TempTree t;
  t.write("lib/threads.cpp",
          "#include <stdlib.h>\n"                                                      // 1
          "#include <array>\n"                                                         // 2
          "enum class Module { Default, Pme, Update };\n"                              // 3
          "static const char *module_env(Module m) {\n"                                // 4
          "  constexpr EnumArray<Module, const char *> names = {\n"                    // 5
          "      \"LIB_DEFAULT_THREADS should never be set\",\n"                       // 6
          "      \"LIB_PME_THREADS\",\n"                                               // 7
          "      \"LIB_UPDATE_THREADS\"};\n"                                           // 8
          "  return names[m];\n"                                                       // 9
          "}\n"                                                                        // 10
          "static const char *level_env(int k) {\n"                                    // 11
          "  switch (k) {\n"                                                           // 12
          "    case 0: return \"LIB_LOW\";\n"                                          // 13
          "    case 1: return (\"LIB_HIGH\");\n"                                       // 14
          "  }\n"                                                                      // 15
          "  return NULL;\n"                                                           // 16
          "}\n"                                                                        // 17
          "static const char *built(int k) { static char b[32]; return b; }\n"         // 18
          "int pick(Module m, int k) {\n"                                              // 19
          "  const char *e = getenv(module_env(m));\n"                                 // 20
          "  const char *l = getenv(level_env(k));\n"                                  // 21
          "  const char *x = getenv(built(k));\n"                                      // 22
          "  std::array<const char *, 2> extra = {\"LIB_EXTRA_A\", \"LIB_EXTRA_B\"};\n"  // 23
          "  for (auto &n : extra) if (getenv(n)) return 1;\n"                         // 24
          "  return e && l && x;\n"                                                    // 25
          "}\n"                                                                        // 26
          "const char *proxy(void) {\n"                                                // 27
          "  char buf[32];\n"                                                          // 28
          "  char *p = buf;\n"                                                         // 29
          "  p = (char *)\"LIB_ALL_PROXY\";\n"                                         // 30
          "  return getenv(p);\n"                                                      // 31
          "}\n");                                                                      // 32
  Facts f = run(t);
  std::set<std::string> want = {"LIB_PME_THREADS lib/threads.cpp:7 library", "LIB_UPDATE_THREADS lib/threads.cpp:8 library",
                                "LIB_LOW lib/threads.cpp:21 library",         "LIB_HIGH lib/threads.cpp:21 library",
                                "LIB_EXTRA_A lib/threads.cpp:23 library",     "LIB_EXTRA_B lib/threads.cpp:23 library",
                                "LIB_ALL_PROXY lib/threads.cpp:31 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// Cython sources (.pyx, .pxi) are read as Python (a `cdef` line around the read is no
// obstacle); a bazel/ folder holds the build's helpers.
TEST(ExtractPatterns, CythonSourcesAndBazelHelpers) {
  TempTree t;
  t.write("src/python/pkg/_cy/engine.pyx.pxi",
          "import os\n"
          "cdef str _ENGINE = os.environ.get('PKG_ASYNC_ENGINE', 'poller').upper()\n"
          "cdef int _limit(int n):\n"
          "    return int(os.getenv('PKG_LIMIT', '4'))\n");
  t.write("src/python/pkg/_cy/core.pyx", "import os\ncdef object _v = os.environ['PKG_CORE']\n");
  t.write("bazel/_test_main.py", "import os\nif os.environ.get('PKG_BAZEL_TRACE'):\n    pass\n");
  Facts f = run(t);
  std::set<std::string> want = {"PKG_ASYNC_ENGINE src/python/pkg/_cy/engine.pyx.pxi:2 library",
                                "PKG_LIMIT src/python/pkg/_cy/engine.pyx.pxi:4 library",
                                "PKG_CORE src/python/pkg/_cy/core.pyx:2 library",
                                "PKG_BAZEL_TRACE bazel/_test_main.py:2 build"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// Python names whose case a wrapper changes: os.environ.get("LIB_" + key.upper()),
// f"LIB_{key.upper()}", and a parameter reassigned as itself upper-cased at the top of the
// function (`env_var = env_var.upper()`) read the upper-cased name at each caller; other calls
// assigned to a name build none.
TEST(ExtractPatterns, PythonNamesWhoseCaseAWrapperChanges) {
  TempTree t;
  t.write("pkg/conf.py",
          "import os\n"                                                  // 1
          "def env(key, default=None):\n"                                // 2
          "    return os.environ.get('PKG_' + key.upper(), default)\n"   // 3
          "def env2(key):\n"                                             // 4
          "    return os.getenv(f'PKG_{key.lower()}')\n"                 // 5
          "def flag(env_var):\n"                                         // 6
          "    env_var = env_var.upper()\n"                              // 7
          "    return env_var in os.environ\n"                           // 8
          "def other(name):\n"                                           // 9
          "    name = name.strip()\n"                                    // 10
          "    return os.environ.get(name)\n"                            // 11
          "threads = env('threads', 4)\n"                                // 12
          "level = env2('LOG_LEVEL')\n"                                  // 13
          "on = flag('use_gpu')\n"                                       // 14
          "x = other('PKG_STRIPPED')\n");                                // 15
  Facts f = run(t);
  std::set<std::string> want = {"PKG_THREADS pkg/conf.py:12 library", "PKG_log_level pkg/conf.py:13 library",
                                "USE_GPU pkg/conf.py:14 library", "PKG_STRIPPED pkg/conf.py:15 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// Names an object keeps for later: a constructor stores its parameter in a member, and a method
// of the class reads the environment with that member, directly or through a getter that
// changes its case in place. Each construction is then a read of the name it passes: a local
// or static object, a derived class's `: Base(name)`, and a macro that declares a buffer of its
// stringized argument and builds an object over it (the read is cited at the macro's use). A
// class that keeps a name no method reads, or reads a member its constructor does not fill
// from that parameter, names nothing.
TEST(ExtractPatterns, NamesAnObjectKeepsForLater) {
  TempTree t;
  t.write("src/knob.h",
          "#pragma once\n"
          "#include <string>\n"
          "class Knob {\n"
          " protected:\n"
          "  explicit Knob(char* key) : key_(key) {}\n"
          " public:\n"
          "  const char* raw();\n"
          " protected:\n"
          "  char* key();\n"
          " private:\n"
          "  char* key_;\n"
          "};\n"
          "class IntKnob : public Knob {\n"
          " public:\n"
          "  IntKnob(char* key, int fallback) : Knob(key), fallback_(fallback) {}\n"
          "  int get();\n"
          " private:\n"
          "  int fallback_;\n"
          "};\n"
          "#define DEFINE_KNOB(id, fallback)          \\\n"
          "  static char knob_name_##id[] = #id;       \\\n"
          "  static IntKnob knob_##id(knob_name_##id, fallback);\n"
          "class Setting {\n"
          " public:\n"
          "  Setting(const char* what, const char* label) : label_(label) { what_ = what; }\n"
          "  const char* value() const;\n"
          "  const char* what_;\n"
          "  const char* label_;\n"
          "};\n"
          "struct Proxy {\n"
          "  explicit Proxy(std::string scheme) : scheme_(scheme) {}\n"
          "  std::string var() { std::transform(scheme_.begin(), scheme_.end(), scheme_.begin(), ::tolower); return scheme_; }\n"
          "  const char* get() { return std::getenv(var().c_str()); }\n"
          "  std::string scheme_;\n"
          "};\n"
          "class Title {\n"
          " public:\n"
          "  explicit Title(const char* text) : text_(text) {}\n"
          "  const char* text() const { return text_; }\n"
          "  const char* text_;\n"
          "};\n");
  t.write("src/knob.cc",
          "#include <cctype>\n"
          "#include <cstdlib>\n"
          "#include \"knob.h\"\n"
          "static const char* read_var(const char* n) { return getenv(n); }\n"
          "const char* Knob::raw() { return read_var(key()); }\n"
          "char* Knob::key() {\n"
          "  for (char* c = key_; *c; ++c) *c = toupper(*c);\n"
          "  return key_;\n"
          "}\n"
          "int IntKnob::get() { const char* v = raw(); return v ? atoi(v) : fallback_; }\n"
          "const char* Setting::value() const { return getenv(this->what_); }\n");
  t.write("src/pool.cc",
          "#include \"knob.h\"\n"                                                  // 1
          "DEFINE_KNOB(lib_pool_threads, 4);\n"                                    // 2
          "DEFINE_KNOB(lib_spin_count,\n"                                          // 3
          "            100);\n"                                                    // 4
          "static Setting where(\"LIB_HOME\", \"HOME_IS_A_LABEL\");\n"             // 5
          "int start() {\n"                                                        // 6
          "  Proxy p(\"HTTPS_PROXY\");\n"                                          // 7
          "  Title t(\"TITLE_NOT_A_VAR\");\n"                                      // 8
          "  return p.get() != nullptr;\n"                                         // 9
          "}\n");
  Facts f = run(t);
  std::set<std::string> want = {"LIB_POOL_THREADS src/pool.cc:2 library", "LIB_SPIN_COUNT src/pool.cc:3 library",
                                "LIB_HOME src/pool.cc:5 library", "https_proxy src/pool.cc:7 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// A Python call by a bare name reaches its own module's function of that name first: two
// modules each define `set_env`, one upper-cases its argument and one does not, and each
// module's call reads the name its own function builds. A module whose own function of that
// name reads nothing reads nothing through the other modules' readers; a module with no
// function of that name (it imported one) reaches the first module's.
TEST(ExtractPatterns, PythonCallsReachTheirOwnModulesFunctionFirst) {
  TempTree t;
  t.write("pkg/a.py",
          "import os\n"                                           // 1
          "def set_env(name):\n"                                  // 2
          "    return os.environ.get(name.upper())\n"             // 3
          "x = set_env('pkg_upper')\n");                          // 4
  t.write("pkg/b.py",
          "import os\n"                                           // 1
          "def set_env(name):\n"                                  // 2
          "    return os.environ.get(name)\n"                     // 3
          "y = set_env('pkg_as_written')\n");                     // 4
  t.write("pkg/c.py",
          "def set_env(name):\n"                                  // 1
          "    return name\n"                                     // 2
          "z = set_env('NOT_A_VARIABLE')\n");                     // 3
  t.write("pkg/d.py",
          "from pkg.a import set_env\n"                           // 1
          "w = set_env('pkg_imported')\n");                       // 2
  Facts f = run(t);
  std::set<std::string> want = {"PKG_UPPER pkg/a.py:4 library", "pkg_as_written pkg/b.py:4 library",
                                "PKG_IMPORTED pkg/d.py:2 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// Names built by formatting and joining strings: sprintf/snprintf into a buffer, strcpy then
// strcat, a C++ std::string joined with `+`, and Python's `%` and str.format, through a
// wrapper's parameter or with constants. A name formatted from run-time data (getpid()) or with
// a conversion this cannot fill (%f, a named field) is no name, and the literal part alone is
// never reported.
TEST(ExtractPatterns, NamesBuiltByFormattingAndJoining) {
  TempTree t;
  t.write("src/env.cpp",
          "#include <cstdio>\n"                                                      // 1
          "#include <cstdlib>\n"                                                     // 2
          "#include <cstring>\n"                                                     // 3
          "#include <string>\n"                                                      // 4
          "static const char* by_format(const char* key) {\n"                        // 5
          "  char buf[64];\n"                                                        // 6
          "  snprintf(buf, sizeof(buf), \"LIB_%s_THREADS\", key);\n"                 // 7
          "  return getenv(buf);\n"                                                  // 8
          "}\n"                                                                      // 9
          "static const char* by_concat(const char* key) {\n"                        // 10
          "  char name[64] = \"LIB_\";\n"                                            // 11
          "  strcat(name, key);\n"                                                   // 12
          "  return getenv(name);\n"                                                 // 13
          "}\n"                                                                      // 14
          "static const char* by_join(const std::string& key) {\n"                   // 15
          "  std::string var = std::string(\"LIB_\") + key + \"_LEVEL\";\n"         // 16
          "  return getenv(var.c_str());\n"                                          // 17
          "}\n"                                                                      // 18
          "int setup(int level) {\n"                                                 // 19
          "  by_format(\"POOL\");\n"                                                 // 20
          "  by_concat(\"SPIN\");\n"                                                 // 21
          "  by_join(\"LOG\");\n"                                                    // 22
          "  char buf[32];\n"                                                        // 23
          "  sprintf(buf, \"LIB_DEVICE_%d\", 0);\n"                                  // 24
          "  getenv(buf);\n"                                                         // 25
          "  snprintf(buf, sizeof buf, \"LIB_PID_%d\", (int)getpid());\n"            // 26
          "  getenv(buf);\n"                                                         // 27
          "  snprintf(buf, sizeof buf, \"LIB_RATIO_%f\", 0.5);\n"                    // 28
          "  getenv(buf);\n"                                                         // 29
          "  return level;\n"                                                        // 30
          "}\n");
  t.write("pkg/conf.py",
          "import os\n"                                                              // 1
          "def knob(key):\n"                                                         // 2
          "    return os.environ.get('PKG_%s' % key)\n"                              // 3
          "def pair(a, b):\n"                                                        // 4
          "    return os.getenv('PKG_{}_{}'.format(a, b))\n"                         // 5
          "def named(key):\n"                                                        // 6
          "    return os.getenv('PKG_{k}'.format(k=key))\n"                          // 7
          "threads = knob('THREADS')\n"                                              // 8
          "mode = pair('GPU', 'MODE')\n"                                             // 9
          "x = named('NOT_A_NAME')\n"                                                // 10
          "level = os.environ.get('PKG_%s_%d' % ('LEVEL', 2))\n");                   // 11
  Facts f = run(t);
  std::set<std::string> want = {"LIB_POOL_THREADS src/env.cpp:20 library", "LIB_SPIN src/env.cpp:21 library",
                                "LIB_LOG_LEVEL src/env.cpp:22 library",  "LIB_DEVICE_0 src/env.cpp:25 library",
                                "PKG_THREADS pkg/conf.py:8 library",     "PKG_GPU_MODE pkg/conf.py:9 library",
                                "PKG_LEVEL_2 pkg/conf.py:11 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// A reader may build the name at run time from each prefix of a braced list and the name its
// caller gives (`for (auto& prefix : {"LIBA_", "LIBB_"}) getenv((std::string(prefix) +
// name).c_str())`, directly or through a local string): every caller's name is read under each
// prefix, cited at the call that gives it. A list holding anything but strings names nothing.
TEST(ExtractPatterns, PrefixesFromABracedListAtRunTime) {
  TempTree t;
  t.write("src/utils.cpp",
          "#include <cstdlib>\n"                                                           // 1
          "#include <string>\n"                                                            // 2
          "namespace lib {\n"                                                              // 3
          "int getenv(const char *name, char *buf, int size) { return ::getenv(name) ? 1 : 0; }\n"
          "int getenv_int_user(const char *name, int def) {\n"                             // 5
          "  char buf[12];\n"                                                              // 6
          "  for (const auto &prefix : {\"LIBA_\", \"LIBB_\"}) {\n"                        // 7
          "    std::string name_str = std::string(prefix) + std::string(name);\n"          // 8
          "    if (getenv(name_str.c_str(), buf, 12) > 0) return atoi(buf);\n"             // 9
          "  }\n"                                                                          // 10
          "  return def;\n"                                                                // 11
          "}\n"                                                                            // 12
          "bool flag_user(const char *name) {\n"                                           // 13
          "  for (const char *prefix : {\"_LIBA_\", \"_LIBB_\"})\n"                        // 14
          "    if (::getenv((std::string(prefix) + name).c_str())) return true;\n"         // 15
          "  return false;\n"                                                              // 16
          "}\n"                                                                            // 17
          "int mixed(const char *name, int n) {\n"                                         // 18
          "  for (auto x : {1, 2}) if (::getenv(name)) n += x;\n"                          // 19
          "  return n;\n"                                                                  // 20
          "}\n"                                                                            // 21
          "}  // namespace lib\n");                                                        // 22
  t.write("src/verbose.cpp",
          "namespace lib { int getenv_int_user(const char*, int); bool flag_user(const char*); }\n"
          "int verbose() { return lib::getenv_int_user(\"VERBOSE\", 0); }\n"              // 2
          "bool dump() { return lib::flag_user(\"DUMP\"); }\n");                           // 3
  Facts f = run(t);
  std::set<std::string> want = {"LIBA_VERBOSE src/verbose.cpp:2 library", "LIBB_VERBOSE src/verbose.cpp:2 library",
                                "_LIBA_DUMP src/verbose.cpp:3 library", "_LIBB_DUMP src/verbose.cpp:3 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// A table's rows may be calls of a macro that builds a string (`DEF_ENV(CPU_JIT)` with
// `#define DEF_ENV(x) "LIB_EXP_" #x`), or of a macro of no parameters whose body is one; the
// table is read by index in another file through its extern declaration: every row is a read,
// cited at the row. A row that builds no name (a number) is none.
TEST(ExtractPatterns, TableRowsBuiltByStringMacros) {
  TempTree t;
  t.write("src/env_vars.cpp",
          "#define DEF_ENV(x) \"LIB_EXP_\" #x\n"                                          // 1
          "#define DEF_ENV_TRACE() \"LIB_EXP_KERNEL_TRACE\"\n"                            // 2
          "#define COUNT(x) (x + 1)\n"                                                    // 3
          "const char *env_names[] = {\n"                                                 // 4
          "    DEF_ENV(CPU_JIT),\n"                                                       // 5
          "    DEF_ENV(OPT_LEVEL),\n"                                                     // 6
          "    DEF_ENV_TRACE(),\n"                                                        // 7
          "};\n"                                                                          // 8
          "const int counts[] = { COUNT(1), COUNT(2) };\n");                              // 9
  t.write("src/use.cpp",
          "#include <cstdlib>\n"                                                          // 1
          "extern const char *env_names[3];\n"                                            // 2
          "enum env_key { SC_CPU_JIT, SC_OPT_LEVEL, SC_TRACE };\n"                         // 3
          "int opt() { return getenv(env_names[SC_OPT_LEVEL]) != nullptr; }\n");          // 4
  Facts f = run(t);
  std::set<std::string> want = {"LIB_EXP_CPU_JIT src/env_vars.cpp:5 library", "LIB_EXP_OPT_LEVEL src/env_vars.cpp:6 library",
                                "LIB_EXP_KERNEL_TRACE src/env_vars.cpp:7 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// C++ API: a function outside any class is named with its namespaces, so that a setter of a
// variable the library reads is tied to it by the library's words (lib::set_verbose for
// LIB_VERBOSE); a pure virtual method is an interface the program implements; a call that
// takes a pool the program implements (void *threadpool, an abstract pool class) runs on the
// program's threads and sets nothing, while one that takes the library's own pool type sets it.
TEST(ExtractPatterns, ApiCxxNamespacesInterfacesAndProgramPools) {
  TempTree t;
  t.write("src/verbose.c",
          "#include <stdlib.h>\n"
          "int lib_verbose(void) { return getenv(\"LIB_VERBOSE\") != 0; }\n");
  t.write("include/lib.hpp",
          "namespace lib {\n"                                                                     // 1
          "struct lib_pool;\n"                                                                    // 2
          "namespace interop {\n"                                                                 // 3
          "struct threadpool_iface {\n"                                                           // 4
          "  virtual int get_num_threads() const = 0;\n"                                          // 5
          "  virtual void parallel_for(int n, void (*fn)(int, int)) = 0;\n"                       // 6
          "  virtual ~threadpool_iface() {}\n"                                                    // 7
          "};\n"                                                                                  // 8
          "int threadpool_sgemm(int m, int n, threadpool_iface *threadpool);\n"                   // 9
          "int threadpool_stream_create(void **stream, void *threadpool);\n"                      // 10
          "int threadpool_set_max_concurrency(int max_concurrency);\n"                           // 11
          "}  // namespace interop\n"                                                             // 12
          "inline namespace v1 {\n"                                                               // 13
          "void set_verbose(int level);\n"                                                        // 14
          "}\n"                                                                                   // 15
          "int ref_thread_pool(void *ctx, lib_pool *pool);\n"                                     // 16
          "}  // namespace lib\n");                                                               // 17
  Facts f = run(t, "all", true);
  std::set<std::string> got;
  for (auto& a : f.api_controls) got.insert(a.name + " " + a.file + ":" + std::to_string(a.line));
  std::set<std::string> want = {"lib::interop::threadpool_set_max_concurrency include/lib.hpp:11",
                                "lib::set_verbose include/lib.hpp:14", "lib::ref_thread_pool include/lib.hpp:16"};
  EXPECT_EQ(got, want) << "found:\n" << dump(got) << "wanted:\n" << dump(want);
}

// A configure template of a C++ source (`kernel_list.cpp.in`, generated into the library at
// configure time) is read as C++, as one of a C source is read as C; a template of anything
// else (a text file) is not code.
TEST(ExtractPatterns, ConfigureTemplatesOfCxxSourcesAreRead) {
  TempTree t;
  t.write("src/kernel_list.cpp.in",
          "#include <cstdlib>\n"                                                          // 1
          "namespace lib { const char *overrides() { return std::getenv(\"LIB_KERNEL_OVERRIDES\"); } }\n"
          "const char *list = \"@KERNEL_LIST@\";\n");                                     // 3
  t.write("src/config.hpp.in", "#include <cstdlib>\ninline bool trace() { return std::getenv(\"LIB_TRACE\") != nullptr; }\n");
  t.write("doc/notes.txt.in", "getenv(\"LIB_NOT_CODE\")\n");
  Facts f = run(t);
  std::set<std::string> want = {"LIB_KERNEL_OVERRIDES src/kernel_list.cpp.in:2 library", "LIB_TRACE src/config.hpp.in:2 library"};
  EXPECT_EQ(reads(f), want) << "found:\n" << dump(reads(f)) << "wanted:\n" << dump(want);
}

// A public name of tens of thousands of characters (a hostile header's) is no API control, and
// the header's other calls are still read.
TEST(ExtractPatterns, ApiHugeNamesAreNoControls) {
  TempTree t;
  t.write("include/lib.h", "/** Sets the number of threads. */\nint " + std::string(60000, 'a') +
                               "_set_num_threads(int num_threads);\n"
                               "int lib_set_num_threads(int num_threads);\n");
  Facts f = run(t, "all", true);
  std::set<std::string> want = {"lib_set_num_threads threads include/lib.h:3"};
  EXPECT_EQ(api_lines(f), want) << "found " << f.api_controls.size() << " controls";
}
