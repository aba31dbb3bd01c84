#!/usr/bin/env bash
# Regenerates corpus/ from corpus/sources.json: fetches the Debian source packages, extracts
# facts from sources, installed headers, docs and shared objects, drafts each contract with
# the offline drafter, applies the reviewed overlay (corpus/overlays/LIB.lpcl, origin manual)
# and checks the result. Writes corpus/facts/LIB.json and corpus/LIB.lpcl.
# Usage: scripts/regen-corpus.sh [LIB...]      (default: every library in sources.json)
# Env: BUILD_DIR (default build), SYSPILOT (the syspilot binary), FROM_FACTS=1 to reuse
# corpus/facts/*.json instead of extracting again.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$here/build"}
syspilot=${SYSPILOT:-"$build/syspilot"}
corpus="$here/corpus"
work="$here/.deps/corpus-inputs"
[ -x "$syspilot" ] || { echo "regen-corpus: $syspilot not built; run scripts/build.sh first" >&2; exit 2; }
mkdir -p "$corpus/facts" "$work"

# One line per library: NAME<TAB>VERSION<TAB>SOURCE-PACKAGES<TAB>INPUTS (space-separated).
entries=$(python3 - "$corpus/sources.json" "$@" <<'PY'
import json, sys
want = set(sys.argv[2:])
for lib in json.load(open(sys.argv[1]))["libraries"]:
    if want and lib["library"] not in want:
        continue
    srcs = [d for d in lib.get("debian", []) if "=" in d]
    print("\t".join([lib["library"], lib["version"], " ".join(srcs) or "-", "\x1f".join(lib["inputs"])]))
PY
)
[ -n "$entries" ] || { echo "regen-corpus: no such library in sources.json: $*" >&2; exit 2; }

if [ "${FROM_FACTS:-0}" != 1 ]; then
  pkgs=$(printf '%s\n' "$entries" | cut -f3 | tr ' ' '\n' | sort -u | grep -v '^-$' | grep . || true)
  # shellcheck disable=SC2086
  [ -z "$pkgs" ] || bash "$here/scripts/fetch-sources.sh" $pkgs >/dev/null
fi

status=0
while IFS=$'\t' read -r lib version _ inputs; do
  facts="$corpus/facts/$lib.json"
  if [ "${FROM_FACTS:-0}" != 1 ]; then
    args=()
    IFS=$'\x1f' read -r -a items <<<"$inputs"
    for item in "${items[@]}"; do
      case "$item" in
        src:*) args+=("$here/.deps/sources/${item#src:}") ;;
        gz:*) f=${item#gz:}; out="$work/$lib/$(basename "${f%.gz}")"; mkdir -p "$work/$lib"
              gzip -dc "$f" > "$out"; args+=("$out") ;;
        run:*) out="$work/$lib/$(basename "${item#run:}" | tr ' ' '_').txt"; mkdir -p "$work/$lib"
               ${item#run:} > "$out" 2>&1 || true; args+=("$out") ;;
        /*) args+=("$item") ;;
        *) args+=("$here/$item") ;;
      esac
    done
    "$syspilot" extract --lib "$lib" --json -o "$facts.tmp" "${args[@]}" >/dev/null
    # Paths inside the facts are made relative to the repository or the source tree, so the
    # committed facts do not depend on where this checkout lives.
    python3 - "$facts.tmp" "$here" <<'PY'
import json, sys
path, root = sys.argv[1], sys.argv[2] + "/"
def fix(x):
    if isinstance(x, dict): return {k: fix(v) for k, v in x.items()}
    if isinstance(x, list): return [fix(v) for v in x]
    if isinstance(x, str):
        x = x.replace(root + ".deps/sources/", "").replace(root + ".deps/corpus-inputs/", "").replace(root, "")
    return x
d = fix(json.load(open(path)))
json.dump(d, open(path, "w"), indent=1, sort_keys=True)
PY
    mv "$facts.tmp" "$facts"
  fi
  overlay=()
  [ -f "$corpus/overlays/$lib.lpcl" ] && overlay=(--overlay "$corpus/overlays/$lib.lpcl")
  if "$syspilot" synth "$facts" --lib "$lib" --lib-version "$version" "${overlay[@]}" --no-store -q \
       -o "$corpus/$lib.lpcl"; then
    echo "regen-corpus: $lib $version ok" >&2
  else
    echo "regen-corpus: $lib $version has open diagnostics (see above)" >&2; status=1
  fi
done <<<"$entries"
"$syspilot" check "$corpus"/*.lpcl >/dev/null || status=1
exit $status
