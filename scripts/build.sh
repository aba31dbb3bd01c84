#!/usr/bin/env bash
# Configures and builds SysPilot into BUILD_DIR (default: build). Extra args go to cmake.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$here/build"}
export CCACHE_DIR=${CCACHE_DIR:-"$HOME/.cache/ccache"}
# Paths relative to the checkout and no build-dir hashing, so clones and build dirs share hits.
export CCACHE_BASEDIR="$here" CCACHE_NOHASHDIR=1
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
