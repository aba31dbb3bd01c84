#!/usr/bin/env bash
# The Slurm executor's overhead per run: a program run N times as the local executor runs it
# (`syspilot trial-run`, the same code a job runs) against N Slurm jobs of the same run, each
# timed from sbatch to its result file, as `tune --executor slurm` waits for it. Starts a
# one-node cluster on loopback (scripts/slurm-cluster.sh) in a fresh folder and stops it at the end.
# Usage: scripts/slurm-bench.sh [RUNS] [-- PROGRAM ARGS...]   (default 10 runs of `sleep 0.1`)
# Env: BUILD_DIR (default build). Needs root and Slurm's packages (scripts/setup.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-"$here/build"}
bin="$build/syspilot"
[ -x "$bin" ] || { echo "slurm-bench: build first (scripts/build.sh); $bin is missing" >&2; exit 2; }
runs=${1:-10}
shift || true
[ "${1:-}" != -- ] || shift
prog=("$@")
[ ${#prog[@]} -gt 0 ] || prog=(sleep 0.1)

work=$(mktemp -d "${TMPDIR:-/tmp}/slurm-bench.XXXXXX")
state="$work/slurm"
trap 'bash "$here/scripts/slurm-cluster.sh" stop "$state" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
eval "$(bash "$here/scripts/slurm-cluster.sh" start "$state" 2>/dev/null)"

# The spec of one run of the default configuration (tuner/slurm.h, TrialSpec).
argv_json=$(printf '%s\n' "${prog[@]}" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().splitlines()))')
cat > "$work/spec.json" <<EOF
{"space": {"params": [], "constraints": [], "one_value": []},
 "objective": {"argv": $argv_json, "timeout_s": 60}, "config": {}, "limit_s": 0}
EOF

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# median min max of the numbers on stdin
stats() { sort -n | awk '{v[NR]=$1} END {m = NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2;
                                        printf "%8.0f %8.0f %8.0f", m, v[1], v[NR]}'; }

: > "$work/local.ms"
for i in $(seq "$runs"); do
  t0=$(now_ms)
  "$bin" trial-run --spec "$work/spec.json" --out "$work/local-$i.json"
  echo $(( $(now_ms) - t0 )) >> "$work/local.ms"
done

: > "$work/slurm.ms"
for i in $(seq "$runs"); do
  out="$work/slurm-$i.json"
  t0=$(now_ms)
  sbatch --parsable --exclusive -N1 --no-requeue --time=2 --job-name=syspilot-bench --output="$work/job-%j.out" \
    --wrap="exec $bin trial-run --spec $work/spec.json --out $out" > /dev/null
  while [ ! -e "$out" ]; do sleep 0.02; done
  echo $(( $(now_ms) - t0 )) >> "$work/slurm.ms"
done

run_ms() { python3 -c 'import json,sys; print(round(1000 * json.load(open(sys.argv[1]))["value"]))' "$1"; }
prog_ms=$(for f in "$work"/local-*.json; do run_ms "$f"; done | stats)
local_ms=$(stats < "$work/local.ms")
slurm_ms=$(stats < "$work/slurm.ms")
med() { echo "$1" | awk '{print $1}'; }
echo "slurm-bench: $runs runs of '${prog[*]}', $(nproc) CPUs, one-node cluster on loopback, $(date -u +%FT%TZ)"
printf "%-44s %8s %8s %8s\n" "per run (ms)" median min max
printf "%-44s %s\n" "the program (wall, as measured)" "$prog_ms"
printf "%-44s %s\n" "local: syspilot trial-run" "$local_ms"
printf "%-44s %s\n" "slurm: sbatch to result file" "$slurm_ms"
echo "overhead of a Slurm job over a local run: $(( $(med "$slurm_ms") - $(med "$local_ms") )) ms (medians)"
