#!/usr/bin/env bash
# Builds the LPCL libFuzzer target with clang-16 in its own build tree and runs it.
# Usage: scripts/fuzz.sh [SECONDS]   (default 60). Prints "skipped" when clang++-16 is missing.
# Env: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_JOBS (default 1). Crashes go to $FUZZ_BUILD_DIR/crashes/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
if ! command -v clang++-16 >/dev/null 2>&1 || ! command -v clang-16 >/dev/null 2>&1; then
  echo "fuzz: skipped (clang++-16 is not installed; scripts/setup.sh installs it)"
  exit 0
fi
build=${FUZZ_BUILD_DIR:-"$here/build-fuzz"}
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
# fuzz/ is configured as a project of its own: only lpcl builds with clang and sanitizers.
mkdir -p "$build"
CC=clang-16 CXX=clang++-16 cmake -S "$here/fuzz" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$san" >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
nice cmake --build "$build" --target lpcl_fuzz -j"${FUZZ_JOBS:-1}" >/dev/null
corpus="$build/corpus"
mkdir -p "$corpus" "$build/crashes"
log="$build/fuzz-last.log"
set +e
UBSAN_OPTIONS=halt_on_error=1 nice "$build/lpcl_fuzz" -max_total_time="$secs" -max_len=4096 -timeout=10 \
  -rss_limit_mb=2048 -dict="$here/fuzz/lpcl.dict" -artifact_prefix="$build/crashes/" -print_final_stats=1 \
  "$corpus" "$here/docs/examples" >"$log" 2>&1
rc=$?
set -e
execs=$(awk '/stat::number_of_executed_units/{print $2}' "$log")
echo "fuzz: ${secs}s, ${execs:-0} executions, exit $rc, corpus $(ls "$corpus" | wc -l) inputs (log: $log)"
if [ $rc -ne 0 ]; then
  grep -E "ERROR|property broken|SUMMARY" "$log" | head -20 >&2
  echo "fuzz: FAILED; reproduce with: $build/lpcl_fuzz $build/crashes/<file>" >&2
fi
exit $rc
