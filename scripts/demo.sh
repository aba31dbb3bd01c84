#!/usr/bin/env bash
# The main job: installs dependencies, builds, and tunes the included example end to end on
# the embedded defaults: a SQLite file under build/, the offline drafter (no LLM endpoint).
# Analysis (libraries, contracts, hypotheses, verdicts), then the contract-guided search.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$here/build"}
bash "$here/scripts/setup.sh" "$build"
BUILD_DIR="$build" bash "$here/scripts/build.sh"
export SYSPILOT_DB=${SYSPILOT_DB:-"$build/syspilot.db"}
unset SYSPILOT_LLM_URL SYSPILOT_LLM_MODEL SYSPILOT_LLM_API_KEY
app="$build/examples/nested_blas"
echo "== syspilot tune --budget 12 --report $build/demo-report.md -- $app" >&2
"$build/syspilot" tune --budget 12 --report "$build/demo-report.md" -- "$app"
echo "== report: $build/demo-report.md; store: $SYSPILOT_DB" >&2
