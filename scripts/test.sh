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
# Each run gets its own temporary folder: a file left in /tmp by another run, another
# checkout or another version (a store with a newer schema, a socket, a fixture) must not
# decide a test's outcome. GoogleTest's TempDir() and mkstemp-style helpers both follow it.
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/syspilot-test.XXXXXX")
trap 'rm -rf "$run_tmp"' EXIT
# mktemp makes it 0700; the tests that drop root to check permissions (the read-only
# store, for one) run as "nobody" and must still reach their own files inside it.
chmod 0755 "$run_tmp"
export TMPDIR="$run_tmp" TEST_TMPDIR="$run_tmp"
ctest --output-on-failure --timeout 600 -j1 "$@"
echo "tests done in $(( $(date +%s) - start )) s" >&2
