// Facts shaped like OpenBLAS's (pthreads build) and LLM answers about them, right and wrong,
// shared by the synthesis tests.
#pragma once
#include <string>

#include "extract/facts.h"

namespace syspilot::synth::testing {

inline extract::Facts openblas_facts() {
  extract::Facts f;
  f.library = "openblas";
  f.roots = {"openblas-0.3.21"};
  auto env = [&](std::string n, int line, std::string type, std::string def = {}) {
    extract::EnvRead e;
    e.name = std::move(n);
    e.file = "driver/others/openblas_env.c";
    e.line = line;
    e.function = "openblas_read_env";
    e.type = std::move(type);
    e.default_value = std::move(def);
    e.via = "readenv";
    e.language = "c";
    f.env_vars.push_back(e);
  };
  env("OPENBLAS_VERBOSE", 49, "int", "0");
  env("OPENBLAS_NUM_THREADS", 52, "int");
  env("GOTO_NUM_THREADS", 55, "int");
  env("OMP_NUM_THREADS", 58, "int");
  env("OPENBLAS_THREAD_TIMEOUT", 61, "int", "28");
  env("HOME", 70, "string");  // read, but not a knob of the library
  extract::ApiControl a;
  a.name = "openblas_set_num_threads";
  a.signature = "void openblas_set_num_threads(int num_threads)";
  a.category = "threads";
  a.file = "cblas.h";
  a.line = 12;
  a.doc = "Sets the number of threads of the pool.";
  f.api_controls.push_back(a);
  extract::ThreadingFact t;
  t.kind = "thread_create";
  t.detail = "pthread_create";
  t.file = "driver/others/blas_server.c";
  t.line = 870;
  t.function = "blas_thread_init";
  t.init_time = true;
  f.threading.push_back(t);
  t.kind = "spin_wait";
  t.detail = "sched_yield loop";
  t.line = 400;
  t.function = "blas_thread_server";
  t.init_time = false;
  f.threading.push_back(t);
  extract::DocMention d;
  d.name = "OPENBLAS_NUM_THREADS";
  d.sentence = "OPENBLAS_NUM_THREADS sets the number of threads OpenBLAS uses.";
  d.file = "README.md";
  d.line = 180;
  d.format = "markdown";
  f.doc_mentions.push_back(d);
  extract::BinaryFacts b;
  b.path = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0";
  b.soname = "libopenblas.so.0";
  b.imports = {"getenv", "pthread_create", "sched_yield"};
  b.exports = {"openblas_set_num_threads"};
  f.binaries.push_back(b);
  return f;
}

// A right answer: grounded, complete, consistent with the code.
inline const char* kGoodDraft = R"(contract openblas "0.3.21" {
  binds soname "libopenblas.so.0";
  control OPENBLAS_NUM_THREADS : env int in [1, ncpus] read_at init sets cpu.threads
      @ "driver/others/openblas_env.c:52";
  control GOTO_NUM_THREADS : env int in [1, ncpus] fallback_for OPENBLAS_NUM_THREADS sets cpu.threads
      @ "driver/others/openblas_env.c:55";
  control OMP_NUM_THREADS : env int in [1, ncpus] fallback_for GOTO_NUM_THREADS sets cpu.threads
      @ "driver/others/openblas_env.c:58";
  control OPENBLAS_THREAD_TIMEOUT : env int default 28 sets cpu.spin @ "driver/others/openblas_env.c:61";
  control openblas_set_num_threads : api(int num_threads) int sets cpu.threads @ "cblas.h:12";
  demand cpu.threads = OPENBLAS_NUM_THREADS ?? GOTO_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus;
  assume exclusive(cpu.cores) @ "driver/others/blas_server.c:870";
  behavior spin_wait idle_timeout OPENBLAS_THREAD_TIMEOUT;
  signal os.threads expect cpu.threads + 1;
}
)";

// Does not parse: an unclosed domain and a missing semicolon.
inline const char* kSyntaxError = R"(contract openblas "0.3.21" {
  control OPENBLAS_NUM_THREADS : env int in [1, ncpus default 4
  demand cpu.threads = OPENBLAS_NUM_THREADS ?? ncpus
}
)";

// Names a knob and a source file the facts never show.
inline const char* kInventedKnob = R"(contract openblas "0.3.21" {
  binds soname "libopenblas.so.0";
  control OPENBLAS_NUM_THREADS : env int in [1, ncpus] read_at init sets cpu.threads
      @ "driver/others/openblas_env.c:52";
  control GOTO_NUM_THREADS : env int in [1, ncpus] fallback_for OPENBLAS_NUM_THREADS sets cpu.threads
      @ "driver/others/openblas_env.c:55";
  control OMP_NUM_THREADS : env int in [1, ncpus] fallback_for GOTO_NUM_THREADS sets cpu.threads
      @ "driver/others/openblas_env.c:58";
  control OPENBLAS_TURBO_MODE : env bool default true sets cpu.threads @ "driver/others/turbo.c:7";
  control OPENBLAS_THREAD_TIMEOUT : env int default 28 sets cpu.spin @ "driver/others/openblas_env.c:61";
  control openblas_set_num_threads : api(int num_threads) int sets cpu.threads @ "cblas.h:12";
  demand cpu.threads = OPENBLAS_NUM_THREADS ?? OPENBLAS_TURBO_MODE ?? GOTO_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus;
  assume exclusive(cpu.cores) @ "driver/others/blas_server.c:9999";
}
)";

// Types and defaults that disagree with the code.
inline const char* kWrongTypes = R"(contract openblas "0.3.21" {
  control OPENBLAS_NUM_THREADS : env string sets cpu.threads @ "driver/others/openblas_env.c:52";
  control GOTO_NUM_THREADS : env int in [1, ncpus] fallback_for OPENBLAS_NUM_THREADS sets cpu.threads;
  control OMP_NUM_THREADS : env int in [1, ncpus] fallback_for GOTO_NUM_THREADS sets cpu.threads;
  control OPENBLAS_THREAD_TIMEOUT : env int default 5 sets cpu.spin @ "driver/others/openblas_env.c:61";
  control openblas_set_num_threads : api(int num_threads) int sets cpu.threads @ "cblas.h:12";
  demand cpu.threads = GOTO_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus;
}
)";

// Leaves out knobs the facts show (GOTO_NUM_THREADS, OPENBLAS_THREAD_TIMEOUT, the API call).
inline const char* kMissingKnobs = R"(contract openblas "0.3.21" {
  binds soname "libopenblas.so.0";
  control OPENBLAS_NUM_THREADS : env int in [1, ncpus] sets cpu.threads @ "driver/others/openblas_env.c:52";
  control OMP_NUM_THREADS : env int in [1, ncpus] fallback_for OPENBLAS_NUM_THREADS sets cpu.threads;
  demand cpu.threads = OPENBLAS_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus;
}
)";

// Parses, but its default lies outside its own domain: no deterministic repair applies.
inline const char* kOutOfDomain = R"(contract openblas "0.3.21" {
  control OPENBLAS_NUM_THREADS : env int in [1, ncpus] default 0 sets cpu.threads @ "driver/others/openblas_env.c:52";
  control GOTO_NUM_THREADS : env int in [1, ncpus] fallback_for OPENBLAS_NUM_THREADS sets cpu.threads;
  control OMP_NUM_THREADS : env int in [1, ncpus] fallback_for GOTO_NUM_THREADS sets cpu.threads;
  control OPENBLAS_THREAD_TIMEOUT : env int default 28 sets cpu.spin;
  control openblas_set_num_threads : api(int num_threads) int sets cpu.threads @ "cblas.h:12";
  demand cpu.threads = OPENBLAS_NUM_THREADS ?? GOTO_NUM_THREADS ?? OMP_NUM_THREADS ?? ncpus;
}
)";

}  // namespace syspilot::synth::testing
