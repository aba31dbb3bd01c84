#!/usr/bin/env bash
# Configures and builds SysPilot into BUILD_DIR (default: build). Extra args go to cmake.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$here/build"}
export CCACHE_DIR=${CCACHE_DIR:-"$HOME/.cache/ccache"}
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
