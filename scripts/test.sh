#!/usr/bin/env bash
# The test command: installs dependencies, builds, and runs every test suite.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$here/build"}
start=$(date +%s)
bash "$here/scripts/setup.sh" "$build"
BUILD_DIR="$build" bash "$here/scripts/build.sh"
echo "build done in $(( $(date +%s) - start )) s" >&2
cd "$build"
ctest --output-on-failure --timeout 600 -j1 "$@"
echo "tests done in $(( $(date +%s) - start )) s" >&2
