#!/usr/bin/env bash
# Slurm.RegenJobsMatchALocalRegen: `syspilot regen --executor slurm` on a real one-node Slurm
# cluster (scripts/slurm-cluster.sh, its own STATE_DIR, stopped on failure too). Usage:
#   slurm_regen_test.sh SYSPILOT
# Three releases of a small library and one release folder the extractors find nothing in, as
# a directory feed: one job per release, the same contracts and changelog as a local regen into
# another store, the failing release reported and the others stored; the cluster's jobcomp log
# holds one COMPLETED job per release, and a second run submits the failed release alone.
# Needs root and Debian's Slurm packages (scripts/setup.sh): without them it fails, not skips.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cluster="$here/scripts/slurm-cluster.sh"
syspilot=${1:?usage: slurm_regen_test.sh SYSPILOT}

# shellcheck source=common.sh
source "$here/tests/cluster/common.sh"

require_cluster munged slurmctld slurmd sbatch scontrol squeue sinfo sqlite3
[ -x "$syspilot" ] || fail "no syspilot at $syspilot"

work=$(mktemp -d "${TMPDIR:-/tmp}/slurm-regen-test.XXXXXX")
state="$work/slurm"
trap 'finish_cluster_test $? "$work" "$state"' EXIT

# A library "foo": FOO_NUM_THREADS from 1.0.0, FOO_SPIN_TIMEOUT from 1.1.0, its default 8 in 1.2.0.
release() {
  local v=$1 d="$work/root/releases/foo-$1" def=4
  mkdir -p "$d/src" "$d/include"
  [ "$v" = 1.2.0 ] && def=8
  {
    echo "#include <stdlib.h>"
    echo "#include <pthread.h>"
    echo "int foo_threads(void) { const char* s = getenv(\"FOO_NUM_THREADS\"); return s ? atoi(s) : $def; }"
    echo "static void* worker(void* a) { return a; }"
    echo "void foo_start(void) { pthread_t t; pthread_create(&t, 0, worker, 0); }"
    [ "$v" = 1.0.0 ] || echo "int foo_spin(void) { const char* s = getenv(\"FOO_SPIN_TIMEOUT\"); return s ? atoi(s) : 100; }"
  } > "$d/src/foo.c"
  printf '#pragma once\n/** Sets the number of worker threads foo uses. */\nvoid foo_set_num_threads(int n);\n' \
    > "$d/include/foo.h"
}
release 1.0.0
release 1.1.0
release 1.2.0
mkdir -p "$work/root/releases/foo-1.1.5"
printf '\001\002\003' > "$work/root/releases/foo-1.1.5/data.bin"
cat > "$work/regen.json" <<JSON
{"source_roots": ["$work/root"], "work_dir": "$work/fetch",
 "libraries": [{"name": "foo", "feeds": [{"kind": "dir", "path": "$work/root/releases"}]}]}
JSON

step "a local regen, for comparison"
rc=0
"$syspilot" regen --config "$work/regen.json" --db "$work/local.db" --changelog "$work/local.md" \
  > "$work/local.out" 2> "$work/local.log" || rc=$?
[ "$rc" = 1 ] || fail "the local regen exited $rc, expected 1 (a release failed)"

eval "$(bash "$cluster" start "$state")"

step "regen --executor slurm: one job per release"
rc=0
timeout 600 "$syspilot" regen --config "$work/regen.json" --db "$work/cluster.db" --changelog "$work/cluster.md" \
  --executor slurm --slurm-dir "$work/jobs" > "$work/cluster.out" 2> "$work/cluster.log" || rc=$?
[ "$rc" = 1 ] || fail "regen --executor slurm exited $rc, expected 1 (a release failed)"
[ "$(grep -c 'submitted foo .* as Slurm job' "$work/cluster.log")" = 4 ] || fail "not one job per release"
grep -q "foo 1.1.5: failed" "$work/cluster.log" || fail "the empty release was not reported failed"
contracts() {
  sqlite3 "$1" "SELECT l.name, v.version, c.revision, c.digest, c.status FROM contracts c
    JOIN versions v ON v.id = c.version_id JOIN libraries l ON l.id = v.library_id ORDER BY v.version"
}
[ "$(contracts "$work/cluster.db" | wc -l)" = 3 ] || fail "not 3 releases stored: $(contracts "$work/cluster.db")"
[ "$(contracts "$work/cluster.db")" = "$(contracts "$work/local.db")" ] \
  || fail "the stores differ: $(contracts "$work/cluster.db") against $(contracts "$work/local.db")"
diff <(sed 1,3d "$work/cluster.md") <(sed 1,3d "$work/local.md") > "$work/changelog.diff" \
  || fail "the changelogs differ: $(cat "$work/changelog.diff")"
grep -q "FOO_SPIN_TIMEOUT" "$work/cluster.md" || fail "the changelog misses 1.1.0's new variable"
[ "$(grep -c 'JobState=COMPLETED' "$state/log/jobcomp.log")" = 4 ] \
  || fail "the cluster did not complete 4 jobs: $(cat "$state/log/jobcomp.log")"

step "again: only the release not stored is a job again"
rc=0
"$syspilot" regen --config "$work/regen.json" --db "$work/cluster.db" --executor slurm --slurm-dir "$work/jobs" \
  > "$work/again.out" 2> "$work/again.log" || rc=$?
[ "$rc" = 1 ] || fail "the second regen exited $rc, expected 1 (1.1.5 fails again)"
[ "$(grep -c 'submitted' "$work/again.log")" = 1 ] && grep -q "submitted foo 1.1.5 " "$work/again.log" \
  || fail "the second regen did not submit 1.1.5 alone: $(cat "$work/again.log")"
[ "$(grep -c 'JobState=' "$state/log/jobcomp.log")" = 5 ] || fail "the second regen ran more than one job"
[ "$(contracts "$work/cluster.db")" = "$(contracts "$work/local.db")" ] || fail "the second regen changed the store"
echo PASS
