#!/usr/bin/env bash
# Precision/recall of `syspilot extract` on real Debian source trees against the hand-built
# lists in tests/extract/expected/, next to what a plain `grep -rn getenv` finds.
# Usage: scripts/extract-eval.sh [--fetch]   (BUILD_DIR defaults to build; the trees live in
# .deps/sources, fetched by --fetch through scripts/fetch-sources.sh)
# Prints a Markdown table; a tree that is not present is listed as "not fetched". Then a second
# table: each extraction's wall time and peak memory (GNU time, when /usr/bin/time is there).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$here/build"}
bin="$build/syspilot"
src="$here/.deps/sources"
if [ "${1:-}" = "--fetch" ]; then
  bash "$here/scripts/fetch-sources.sh" openblas=0.3.21+ds-4 openblas=0.3.29+ds-3 openblas=0.3.34+ds-2 \
    onetbb=2021.8.0-2+deb12u1 fftw3=3.3.10-1 libzstd=1.5.4+dfsg2-5 libzstd=1.5.7+dfsg-4 \
    jemalloc=5.3.0-1 jemalloc=5.3.1-2 blis=0.9.0-1 \
    llvm-toolchain-16=1:16.0.6-15~deb12u1 hwloc=2.9.0-1 graphicsmagick=1.4+really1.3.40-4+deb12u1 \
    vips=8.14.1-3+deb12u3 libgit2=1.5.1+ds-1+deb12u1 curl=7.88.1-10+deb12u15 \
    gstreamer1.0=1.22.0-2+deb12u1 starpu=1.3.10+dfsg-2 opencv=4.6.0+dfsg-12 \
    gromacs=2022.5-2 grpc=1.51.1-3 c-blosc=1.21.3+ds-1 libuv1=1.44.2-1+deb12u1 \
    onednn=3.7.2+ds-2 pocl=6.0-6 \
    >&2 || echo "some versions were not served (see above)" >&2
  # llvm-toolchain-16 unpacks to 1.6 GB; only openmp/ (LLVM's OpenMP runtime) is scored, so
  # the rest is removed (the tree keeps its .fetched mark, so it is not fetched again)
  llvm="$src/llvm-toolchain-16-16.0.6"
  if [ -d "$llvm/openmp" ]; then
    find "$llvm" -mindepth 1 -maxdepth 1 ! -name openmp ! -name .fetched -exec rm -rf {} +
  fi
fi
[ -x "$bin" ] || { echo "extract-eval: $bin not built (run scripts/build.sh)" >&2; exit 2; }

# expected-list name -> source folder
pairs="openblas-0.3.21:openblas-0.3.21+ds openblas-0.3.29:openblas-0.3.29+ds openblas-0.3.34:openblas-0.3.34+ds
onetbb-2021.8.0:onetbb-2021.8.0 fftw3-3.3.10:fftw3-3.3.10 zstd-1.5.4:libzstd-1.5.4+dfsg2
zstd-1.5.7:libzstd-1.5.7+dfsg jemalloc-5.3.0:jemalloc-5.3.0 jemalloc-5.3.1:jemalloc-5.3.1 blis-0.9.0:blis-0.9.0
llvm-openmp-16.0.6:llvm-toolchain-16-16.0.6/openmp hwloc-2.9.0:hwloc-2.9.0
graphicsmagick-1.3.40:graphicsmagick-1.4+really1.3.40 vips-8.14.1:vips-8.14.1
libgit2-1.5.1:libgit2-1.5.1+ds curl-7.88.1:curl-7.88.1 gstreamer-1.22.0:gstreamer1.0-1.22.0
starpu-1.3.10:starpu-1.3.10+dfsg opencv-4.6.0:opencv-4.6.0+dfsg gromacs-2022.5:gromacs-2022.5
grpc-1.51.1:grpc-1.51.1 c-blosc-1.21.3:c-blosc-1.21.3+ds libuv-1.44.2:libuv1-1.44.2
onednn-3.7.2:onednn-3.7.2+ds pocl-6.0:pocl-6.0"

timings=""
pct() { awk -v m="$1" -v d="$2" 'BEGIN { if (d == 0) print "n/a"; else printf "%.1f%%", 100 * m / d }'; }

# Library scope: where an expected list has a third column (the scopes a name is read in,
# e.g. `library,test`), the names read in library code against the names syspilot reports with
# at least one `library`-scope fact; "-" for lists without it.
echo "| library | expected env | syspilot env P | syspilot env R | grep getenv P | grep getenv R | API P | API R | library env expected | library env P | library env R |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for p in $pairs; do
  name=${p%%:*}; dir="$src/${p#*:}"; exp="$here/tests/extract/expected/$name.txt"
  if [ ! -d "$dir" ] || [ ! -f "$exp" ]; then
    echo "| $name | not fetched | | | | | | | | | |"; continue
  fi
  want=$(mktemp); got=$(mktemp); grepped=$(mktemp); log=$(mktemp); wantlib=$(mktemp); gotlib=$(mktemp)
  awk '/^\[env\]/{s=1;next} /^\[/{s=0} s && $1 !~ /^#/ && NF {print $1}' "$exp" | sort -u > "$want"
  scoped=$(awk '/^\[env\]/{s=1;next} /^\[/{s=0} s && $1 !~ /^#/ && NF >= 3 {n++} END {print n+0}' "$exp")
  awk '/^\[env\]/{s=1;next} /^\[/{s=0} s && $1 !~ /^#/ && $3 ~ /(^|,)library(,|$)/ {print $1}' "$exp" | sort -u > "$wantlib"
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%e %M" -o "$log.time" "$bin" extract "$dir" --lib "$name" --scope all --json --expected "$exp" > "$log.json" 2> "$log"
    timings="$timings| $name | $(awk '{printf "%.1f | %.0f", $1, $2 / 1024}' "$log.time") |
"
  else
    "$bin" extract "$dir" --lib "$name" --scope all --json --expected "$exp" > "$log.json" 2> "$log"
  fi
  python3 -c "import json,sys; [print(e['name']) for e in json.load(open(sys.argv[1]))['env_vars']]" "$log.json" | sort -u > "$got"
  python3 -c "import json,sys; [print(e['name']) for e in json.load(open(sys.argv[1]))['env_vars'] if e.get('scope', 'library') == 'library']" "$log.json" | sort -u > "$gotlib"
  # what a plain grep shows: quoted names on lines that call getenv
  (cd "$dir" && grep -rn getenv --exclude-dir=.pc . 2>/dev/null) | grep -oE "getenv *\( *\"[A-Za-z_][A-Za-z0-9_]*\"" \
    | grep -oE "\"[A-Za-z_0-9]+\"" | tr -d '"' | sort -u > "$grepped"
  ne=$(wc -l < "$want"); ng=$(wc -l < "$got"); nm=$(comm -12 "$want" "$got" | wc -l)
  nr=$(wc -l < "$grepped"); nrm=$(comm -12 "$want" "$grepped" | wc -l)
  api=$(grep -E "^score .* api:" "$log" | sed -E 's/.*api: P ([^ ]+) R ([^ ]+).*/\1 | \2/')
  [ -n "$api" ] || api="- | -"
  lib="- | - | -"
  if [ "$scoped" -gt 0 ]; then
    nel=$(wc -l < "$wantlib"); ngl=$(wc -l < "$gotlib"); nml=$(comm -12 "$wantlib" "$gotlib" | wc -l)
    lib="$nel | $(pct "$nml" "$ngl") | $(pct "$nml" "$nel")"
  fi
  echo "| $name | $ne | $(pct "$nm" "$ng") | $(pct "$nm" "$ne") | $(pct "$nrm" "$nr") | $(pct "$nrm" "$ne") | $api | $lib |"
  rm -f "$want" "$got" "$grepped" "$log" "$log.json" "$log.time" "$wantlib" "$gotlib"
done
if [ -n "$timings" ]; then
  echo
  echo "| library | extract wall s | peak MB |"
  echo "|---|---|---|"
  printf "%s" "$timings"
fi
