#!/usr/bin/env bash
# Slurm.OneNodeClusterRunsJobs: scripts/slurm-cluster.sh starts a real one-node Slurm cluster
# (munged, slurmctld, slurmd) in a fresh STATE_DIR, the cluster runs an `srun` step and an
# `sbatch --wait` batch job, a node set DOWN by hand shows as down and comes back on RESUME,
# and `stop` ends exactly the daemons it recorded. The cluster is stopped on failure too.
# Needs root and Debian's munge, slurmctld, slurmd and slurm-client (scripts/setup.sh installs
# them): without them the test fails, it does not skip.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cluster="$here/scripts/slurm-cluster.sh"

# shellcheck source=common.sh
source "$here/tests/cluster/common.sh"

require_cluster munged mungekey slurmctld slurmd srun sbatch sinfo scontrol squeue

state=$(mktemp -d "${TMPDIR:-/tmp}/slurm-cluster-test.XXXXXX")/slurm
cleanup() {
  local rc=$?
  bash "$cluster" stop "$state" >/dev/null 2>&1 || true
  if [ "$rc" != 0 ]; then
    for f in "$state"/log/*.log; do
      [ -f "$f" ] && { echo "--- tail $f" >&2; tail -n 30 "$f" >&2; }
    done
  fi
  rm -rf "$(dirname "$state")"
  exit "$rc"
}
trap cleanup EXIT

# Each Slurm call gets a deadline: a wedged controller must fail the test, not hang ctest.
t() { timeout 60 "$@"; }

step "start"
t0=$(date +%s%N)
out=$(bash "$cluster" start "$state")
echo "start took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
[ "$out" = "export SLURM_CONF=$state/slurm.conf" ] || fail "start printed '$out'"
eval "$out"
[ "$(bash "$cluster" env "$state")" = "$out" ] || fail "env prints another line than start"
# Everything the cluster writes lives under STATE_DIR.
grep -q "^AuthInfo=socket=$state/" "$SLURM_CONF" || fail "slurm.conf does not use its own munge socket"

step "start again: already running, nothing restarted"
pids_before=$(cat "$state"/run/*.pid)
again=$(bash "$cluster" start "$state" 2>&1) || fail "a second start failed: $again"
echo "$again" | grep -q "already running" || fail "a second start did not say 'already running': $again"
[ "$(cat "$state"/run/*.pid)" = "$pids_before" ] || fail "a second start restarted daemons"
bash "$cluster" status "$state" || fail "status does not report the cluster running"

node=$(hostname -s)
step "srun on node $node"
got=$(t srun -N1 --exclusive hostname)
[ "$got" = "$(hostname)" ] || fail "srun hostname printed '$got', expected '$(hostname)'"

step "sbatch --wait"
job="$state/job"
mkdir -p "$job"
cat > "$job/job.sh" <<'EOF'
#!/bin/sh
echo "ran job $SLURM_JOB_ID on $SLURMD_NODENAME" > result.txt
EOF
sub=$(t sbatch --wait --chdir="$job" -o "$job/slurm-%j.out" "$job/job.sh") \
  || fail "sbatch --wait exited non-zero: $sub"
id=$(echo "$sub" | sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p')
[ -n "$id" ] || fail "sbatch printed '$sub'"
[ "$(cat "$job/result.txt" 2>/dev/null)" = "ran job $id on $node" ] \
  || fail "the batch job's file: '$(cat "$job/result.txt" 2>/dev/null)'"
# No slurmdbd, so no sacct: the controller still knows the finished job.
t scontrol show job "$id" | grep -q "JobState=COMPLETED" || fail "job $id not COMPLETED in scontrol"

step "node down, then resume"
t scontrol update nodename="$node" state=down reason=test
st=$(t sinfo -h -N -n "$node" -o '%t|%E')
[ "$st" = "down|test" ] || fail "after state=down, sinfo shows '$st'"
t scontrol update nodename="$node" state=resume
for _ in $(seq 50); do
  st=$(t sinfo -h -N -n "$node" -o %t)
  [ "$st" = idle ] && break
  sleep 0.2
done
[ "$st" = idle ] || fail "after state=resume, sinfo shows '$st'"
got=$(t srun -N1 hostname)
[ "$got" = "$(hostname)" ] || fail "srun after resume printed '$got'"

step "stop"
pids=$(cat "$state"/run/*.pid)
[ "$(echo "$pids" | wc -w)" = 3 ] || fail "expected 3 recorded PIDs, got: $pids"
bash "$cluster" stop "$state"
for p in $pids; do
  # Gone, or a zombie its parent has yet to reap (it has exited all the same).
  st=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1 || true)
  [ -z "$st" ] || [ "$st" = Z ] || fail "pid $p ($(cat "/proc/$p/comm" 2>/dev/null)) still runs after stop"
done
rc=0; bash "$cluster" status "$state" >/dev/null || rc=$?
[ "$rc" = 3 ] || fail "status after stop exited $rc, expected 3 (stopped)"
bash "$cluster" stop "$state" || fail "stop with nothing running exited non-zero"
for f in slurm.conf log/slurmctld.log munge/munge.key; do [ -f "$state/$f" ] || fail "stop removed $f"; done
echo "PASS"
