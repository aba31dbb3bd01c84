#!/usr/bin/env bash
# Installs everything SysPilot needs on Debian 12 (idempotent; as root or with sudo)
# and fetches the pinned tree-sitter grammars into the build tree.
# Usage: scripts/setup.sh [BUILD_DIR]    (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$here/build"}

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# Build toolchain and libraries SysPilot links against.
BUILD_PKGS="build-essential cmake ninja-build ccache pkg-config git ca-certificates
  libclang-16-dev libcpp-httplib-dev nlohmann-json3-dev libsqlite3-dev libssl-dev
  libgtest-dev libtree-sitter-dev libcli11-dev libelf-dev zlib1g-dev libbrotli-dev
  openssl clang-16 libclang-rt-16-dev"
# npm fetches the grammars; a machine with its own Node.js keeps it.
command -v npm >/dev/null 2>&1 || BUILD_PKGS="$BUILD_PKGS nodejs npm"
# Real libraries the tests, scenarios and corpus run against.
RUNTIME_PKGS="libopenblas-pthread-dev libopenblas0-pthread libopenblas0-openmp libblis-dev
  libgomp1 libomp-dev libtbb-dev libfftw3-dev libzstd-dev libjemalloc-dev
  python3 python3-optuna python3-numexpr python3-sklearn linux-perf dpkg-dev wrk sqlite3 xz-utils
  imagemagick librsvg2-bin zstd
  munge slurmctld slurmd slurm-client
  chromium fonts-dejavu-core"
# Debian's chromium (bookworm-security) runs the dashboard's browser tests (tests/dashboard):
# headless, driven over the DevTools pipe against a `syspilot serve` on loopback; the DejaVu
# fonts make its screenshots the same on every machine.
# The Slurm packages serve scripts/slurm-cluster.sh, which runs its own munged and Slurm daemons
# under a state folder. Their system services stay harmless: Debian's slurmd and slurmctld
# units start only once /etc/slurm/slurm.conf exists (nothing here writes it), and a system
# munged, if one starts, keeps /run/munge, apart from the cluster's own socket.

missing=""
for p in $BUILD_PKGS $RUNTIME_PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing:$missing" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# tree-sitter grammars: newest versions whose parser ABI (14) the Debian 0.20.7 runtime accepts.
GRAMMARS="tree-sitter-c@0.23.6 tree-sitter-cpp@0.23.4 tree-sitter-python@0.23.6"
gdir="$build/grammars"
mkdir -p "$gdir"
for g in $GRAMMARS; do
  name=${g%@*}; ver=${g#*@}
  dest="$gdir/$name"
  if [ -f "$dest/.version" ] && [ "$(cat "$dest/.version")" = "$ver" ]; then continue; fi
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "$g" >/dev/null)
  rm -rf "$dest"; mkdir -p "$dest"
  tar -xzf "$tmp"/*.tgz -C "$tmp"
  cp -r "$tmp/package/src" "$dest/src"
  echo "$ver" > "$dest/.version"
  rm -rf "$tmp"
done
echo "setup: dependencies ready; grammars in $gdir" >&2
