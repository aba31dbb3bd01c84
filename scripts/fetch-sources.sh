#!/usr/bin/env bash
# Fetches and unpacks Debian source packages without touching the system's apt configuration:
# a private sources list with deb-src lines for bookworm, trixie and sid.
# Usage: scripts/fetch-sources.sh [-d DEST] PKG[=VERSION]...   (default DEST: .deps/sources)
# Prints one line per package: PKG VERSION DIR. A version the archive no longer serves is
# reported on stderr and skipped (exit 3 if any was skipped).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dest="$here/.deps/sources"
if [ "${1:-}" = "-d" ]; then dest=$2; shift 2; fi
mkdir -p "$dest"
state="$here/.deps/apt"
mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
list="$state/sources.list"
cat > "$list" <<EOL
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian trixie main
deb-src http://deb.debian.org/debian sid main
EOL
opts=(-o Dir::Etc::SourceList="$list" -o Dir::Etc::SourceParts=/dev/null
      -o Dir::State::Lists="$state/lists" -o Dir::Cache="$state/cache" -o APT::Sandbox::User=root)
# Refresh the private index at most once an hour.
stamp="$state/lists/.stamp"
if [ ! -f "$stamp" ] || [ $(( $(date +%s) - $(stat -c %Y "$stamp") )) -gt 3600 ]; then
  apt-get "${opts[@]}" update -qq >/dev/null 2>&1 && touch "$stamp" || echo "fetch-sources: apt-get update failed" >&2
fi
skipped=0
for spec in "$@"; do
  pkg=${spec%%=*}; ver=""
  [ "$spec" != "$pkg" ] && ver=${spec#*=}
  if [ -z "$ver" ]; then
    ver=$(apt-cache "${opts[@]}" showsrc "$pkg" 2>/dev/null | awk '/^Version:/{print $2; exit}')
  fi
  upver=${ver#*:}; upver=${upver%-*}
  dir="$dest/$pkg-$upver"
  if [ -d "$dir" ] && [ -f "$dir/.fetched" ]; then echo "$pkg $ver $dir"; continue; fi
  work=$(mktemp -d "$dest/.fetch.XXXXXX")
  if ! (cd "$work" && apt-get "${opts[@]}" source --download-only -qq "$pkg=$ver" >/dev/null 2>"$work/err"); then
    echo "fetch-sources: $pkg=$ver not served: $(tail -n1 "$work/err")" >&2
    rm -rf "$work"; skipped=1; continue
  fi
  dsc=$(ls "$work"/*.dsc | head -n1)
  (cd "$work" && dpkg-source --no-check -x "$dsc" unpacked >/dev/null 2>&1) || {
    echo "fetch-sources: cannot unpack $dsc" >&2; rm -rf "$work"; skipped=1; continue; }
  rm -rf "$dir"; mv "$work/unpacked" "$dir"; touch "$dir/.fetched"; rm -rf "$work"
  echo "$pkg $ver $dir"
done
exit $(( skipped ? 3 : 0 ))
