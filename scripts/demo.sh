#!/usr/bin/env bash
# The main job: installs dependencies, builds, and tunes the included example end to end
# on the embedded defaults (a SQLite file under build/, the offline drafter).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$here/build"}
bash "$here/scripts/setup.sh" "$build"
BUILD_DIR="$build" bash "$here/scripts/build.sh"
export SYSPILOT_DB=${SYSPILOT_DB:-"$build/syspilot.db"}
"$build/syspilot" check "$here"/corpus/*.lpcl
