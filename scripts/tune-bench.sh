#!/usr/bin/env bash
# The tuner benchmark, live: syspilot against random search and Optuna's TPE at the same budget on
# the example programs, each as a real process on this machine. Prints one table per program
# (tune --compare) and a summary line per program. Needs a build (scripts/build.sh).
# Usage: scripts/tune-bench.sh [BUDGET]   (default 12)
# Env: BUILD_DIR (default build), TUNE_BENCH_PROGRAMS (a ;-separated list of "PROGRAM ARGS" to
# run instead of the defaults), SYSPILOT_NCPUS is NOT set here: the spaces are this machine's.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$here/build"}
budget=${1:-12}
bin="$build/syspilot"
[ -x "$bin" ] || { echo "tune-bench: build first (scripts/build.sh); $bin is missing" >&2; exit 2; }
progs="$build/tests/tuner/programs"
default_list="$build/examples/nested_blas;$progs/omp_blas;$progs/spin_pool;$progs/tbb_omp;$progs/tbb_nested"
IFS=';' read -r -a list <<<"${TUNE_BENCH_PROGRAMS:-$default_list}"
db=$(mktemp -d)/bench.db
trap 'rm -rf "$(dirname "$db")"' EXIT
echo "tune-bench: $(nproc) CPUs, budget $budget runs per strategy, $(date -u +%FT%TZ)"
for entry in "${list[@]}"; do
  read -r -a argv <<<"$entry"
  [ -x "${argv[0]}" ] || { echo "tune-bench: skipped ${argv[0]} (not built)"; continue; }
  echo
  echo "== $(basename "${argv[0]}") ${argv[*]:1}"
  set +e
  "$bin" tune --db "$db" --budget "$budget" --compare syspilot,random,optuna-tpe -- "${argv[@]}" 2>/dev/null
  rc=$?
  set -e
  [ $rc -eq 0 ] || echo "(tune exited $rc)"
done
