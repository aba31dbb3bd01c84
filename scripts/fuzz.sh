#!/usr/bin/env bash
# Builds a libFuzzer target with clang-16 in its own build tree and runs it.
# Usage: scripts/fuzz.sh [--target lpcl|http] [--main-build DIR] [SECONDS]   (default lpcl, 60 s)
#   lpcl: the LPCL parser, checker and printers.
#   http: the HTTP surface of `syspilot serve` (connection layer, parser, auth, routes) in
#         process; the service is rebuilt here with coverage and sanitizers, the stages under it
#         are linked from the main build DIR (default: build), which must be built first.
# Prints "skipped" when clang++-16 is missing.
# Env: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_JOBS (default 1). Crashes go to $FUZZ_BUILD_DIR/crashes-TARGET/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
target=lpcl
main_build="$here/build"
secs=60
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target=$2; shift 2 ;;
    --main-build) main_build=$(cd "$2" && pwd); shift 2 ;;
    *) secs=$1; shift ;;
  esac
done
if ! command -v clang++-16 >/dev/null 2>&1 || ! command -v clang-16 >/dev/null 2>&1; then
  echo "fuzz: skipped (clang++-16 is not installed; scripts/setup.sh installs it)"
  exit 0
fi
build=${FUZZ_BUILD_DIR:-"$here/build-fuzz"}
# Paths relative to the checkout, so that clones and build trees share ccache hits.
export CCACHE_DIR=${CCACHE_DIR:-"$HOME/.cache/ccache"} CCACHE_BASEDIR="$here" CCACHE_NOHASHDIR=1
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
# fuzz/ is configured as a project of its own: only what is fuzzed builds with clang and sanitizers.
mkdir -p "$build"
extra=()
[ "$target" = http ] && extra=(-DSYSPILOT_MAIN_BUILD="$main_build")
CC=clang-16 CXX=clang++-16 cmake -S "$here/fuzz" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS="$san" "${extra[@]}" >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
nice cmake --build "$build" --target "${target}_fuzz" -j"${FUZZ_JOBS:-1}" >"$build/build-$target.log" 2>&1 ||
  { tail -30 "$build/build-$target.log" >&2; exit 1; }
corpus="$build/corpus-$target"
crashes="$build/crashes-$target"
mkdir -p "$corpus" "$crashes"
case "$target" in
  lpcl) seeds=("$here/docs/examples"); opts=(-max_len=4096 -dict="$here/fuzz/lpcl.dict") ;;
  http) seeds=("$here/fuzz/corpus/http"); opts=(-max_len=16384 -dict="$here/fuzz/http.dict") ;;
  *) echo "fuzz: unknown target '$target' (lpcl or http)" >&2; exit 2 ;;
esac
log="$build/fuzz-$target-last.log"
set +e
# detect_leaks=0: the service's thread-local stores live until their threads end.
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1 nice "$build/${target}_fuzz" -max_total_time="$secs" \
  -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$crashes/" -print_final_stats=1 "${opts[@]}" \
  "$corpus" "${seeds[@]}" >"$log" 2>&1
rc=$?
set -e
execs=$(awk '/stat::number_of_executed_units/{print $2}' "$log")
echo "fuzz $target: ${secs}s, ${execs:-0} executions, exit $rc, corpus $(ls "$corpus" | wc -l) inputs (log: $log)"
if [ $rc -ne 0 ]; then
  grep -E "ERROR|property broken|SUMMARY" "$log" | head -20 >&2
  echo "fuzz: FAILED; reproduce with: $build/${target}_fuzz $crashes/<file>" >&2
fi
exit $rc
