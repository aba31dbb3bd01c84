#!/usr/bin/env bash
# Slurm.Tune*: `syspilot tune --executor slurm` on a real one-node Slurm cluster
# (scripts/slurm-cluster.sh, its own STATE_DIR, stopped on failure too). Usage:
#   slurm_tune_test.sh SYSPILOT OMP_LOOP CASE [PROGRAM]
# CASE: omp       a session of tests/tuner/programs/omp_loop stores its trials with their node,
#                 as many runs as jobs ran (the ledger and the cluster's jobcomp log agree)
#       crash     a configuration that crashes is a failed trial, and the session goes on; sbatch
#                 refusing a job, or no Slurm on PATH, is a clear error
#       resume    kill -9 of the submitter (--parallel 2) while a job runs, then --resume: it
#                 completes and no finished trial or run is repeated (the store against the jobs
#                 the cluster ran)
#       nodedown  the node set DOWN while its job runs: the job is lost (NODE_FAIL), resubmitted
#                 once, and runs when the node is resumed; the session completes
#       analysis  (PROGRAM: tests/tuner/programs/spin_pool) the analysis' runs are one job on the
#                 node: its verdicts guide the search (a confirmed hypothesis, stored with the
#                 session) and its runs are charged to the budget; the job is not in the ledger
# Needs root and Debian's Slurm packages (scripts/setup.sh): without them it fails, not skips.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cluster="$here/scripts/slurm-cluster.sh"
syspilot=${1:?usage: slurm_tune_test.sh SYSPILOT OMP_LOOP CASE}
omp_loop=${2:?usage: slurm_tune_test.sh SYSPILOT OMP_LOOP CASE}
case_=${3:?usage: slurm_tune_test.sh SYSPILOT OMP_LOOP CASE}

# shellcheck source=common.sh
source "$here/tests/cluster/common.sh"

require_cluster munged slurmctld slurmd sbatch scontrol squeue sinfo sqlite3
[ -x "$syspilot" ] || fail "no syspilot at $syspilot"

work=$(mktemp -d "${TMPDIR:-/tmp}/slurm-tune-test.XXXXXX")
state="$work/slurm"
tune_pid=""
cleanup() {
  local rc=$?
  [ -z "$tune_pid" ] || kill -9 "$tune_pid" 2>/dev/null || true
  # A node left down by a failed step would keep the next test's jobs pending.
  [ -z "${SLURM_CONF:-}" ] || timeout 20 scontrol update nodename="$(hostname -s)" state=resume 2>/dev/null || true
  finish_cluster_test "$rc" "$work" "$state"
}
trap cleanup EXIT

eval "$(bash "$cluster" start "$state")"
node=$(hostname -s)
db="$work/t.db"
q() { sqlite3 "$db" "$@"; }

# The session's jobs as the cluster's jobcomp log recorded them, by the ids in the ledger.
jobcomp_states() {
  local sid=$1 id
  for id in $(q "SELECT job_id FROM tune_jobs WHERE session_id = $sid ORDER BY seq"); do
    sed -n "s/^JobId=$id .*JobState=\([A-Z_]*\) .*/\1/p" "$state/log/jobcomp.log"
  done
}

# Every run in the store is a job the cluster completed, and every completed job is a run: the
# trials' repeats add up to the COMPLETED jobs; no configuration is a trial twice.
check_accounting() {
  local sid=$1 runs completed trials configs
  runs=$(q "SELECT COALESCE(SUM(repeats), 0) FROM tune_trials WHERE session_id = $sid")
  completed=$(jobcomp_states "$sid" | grep -c '^COMPLETED$' || true)
  [ "$runs" = "$completed" ] || fail "session $sid: the trials count $runs runs; the cluster completed $completed jobs"
  trials=$(q "SELECT COUNT(*) FROM tune_trials WHERE session_id = $sid")
  configs=$(q "SELECT COUNT(DISTINCT config) FROM tune_trials WHERE session_id = $sid")
  [ "$trials" = "$configs" ] || fail "session $sid: $trials trials of $configs configurations: one was repeated"
  [ "$(q "SELECT COUNT(*) FROM tune_trials WHERE session_id = $sid AND node != '$node'")" = 0 ] \
    || fail "session $sid: a trial without node $node: $(q "SELECT idx, node FROM tune_trials WHERE session_id = $sid")"
}

tune() { timeout 300 "$syspilot" tune --executor slurm --db "$db" --verify 0 --no-minimise --max-repeats 1 "$@"; }

case "$case_" in
omp)
  step "tune omp_loop on the cluster, budget 6"
  # 6 configurations and the default: more than the budget, whatever the analysis job decides.
  tune --budget 6 --strategy grid --add OMP_NUM_THREADS=1,2,4 --add OMP_WAIT_POLICY=active,passive \
    -- "$omp_loop" 200 20000 > "$work/out.log" 2> "$work/tune.log" || fail "tune exited $?"
  [ "$(q "SELECT status FROM tune_sessions WHERE id = 1")" = finished ] || fail "session 1 is not finished"
  [ "$(q "SELECT COALESCE(SUM(repeats), 0) FROM tune_trials WHERE session_id = 1")" = 6 ] \
    || fail "the budget's 6 runs were not all spent: $(q "SELECT idx, config, repeats FROM tune_trials")"
  check_accounting 1
  [ "$(q "SELECT COUNT(*) FROM tune_jobs WHERE session_id = 1")" = 6 ] || fail "the ledger does not hold 6 jobs"
  "$syspilot" sessions show 1 --db "$db" > "$work/show.log"
  grep -q "on $node" "$work/show.log" || fail "sessions show does not say which node ran a trial"
  grep -q "^node: *$node, default" "$work/show.log" || fail "sessions show has no reference of node $node"
  ;;
crash)
  step "a configuration that crashes is a failed trial; the session goes on"
  tune --budget 4 --strategy grid --add MODE=crash,ok,fast \
    -- /bin/sh -c 'case "$MODE" in crash) kill -SEGV $$;; fast) sleep 0.05;; *) sleep 0.1;; esac' \
    > "$work/out.log" 2> "$work/tune.log" || fail "tune exited $?"
  failure=$(q "SELECT failure FROM tune_trials WHERE session_id = 1 AND config = '{\"MODE\":\"crash\"}'")
  echo "$failure" | grep -q SIGSEGV || fail "the crashing trial's failure: '$failure'"
  [ "$(q "SELECT COUNT(*) FROM tune_trials WHERE session_id = 1 AND ok = 1 AND config != '{}'")" -ge 1 ] \
    || fail "no trial succeeded after the crash"
  grep -q "^MODE=fast" "$work/out.log" || fail "tune did not find MODE=fast: $(cat "$work/out.log")"
  check_accounting 1

  step "sbatch refusing the jobs, and no Slurm on PATH: clear errors"
  rc=0
  tune --budget 2 --partition no-such-partition --add MODE=ok -- /bin/true > /dev/null 2> "$work/bad.log" || rc=$?
  [ "$rc" != 0 ] || fail "tune with an unknown partition exited 0"
  grep -q "sbatch failed.*check --partition and --slurm-arg" "$work/bad.log" || fail "no sbatch error: $(cat "$work/bad.log")"
  rc=0
  PATH=/nonexistent "$syspilot" tune --executor slurm --db "$db" --budget 2 --add MODE=ok -- /bin/true \
    > /dev/null 2> "$work/nopath.log" || rc=$?
  [ "$rc" = 2 ] || fail "tune without sbatch on PATH exited $rc, expected 2"
  grep -q "sbatch is not on PATH: install slurm-client" "$work/nopath.log" \
    || fail "no missing-Slurm error: $(cat "$work/nopath.log")"
  ;;
resume)
  step "kill -9 of the submitter while a job runs, then --resume"
  # Two runs in flight (--parallel 2): the second queues behind the first on the one node.
  "$syspilot" tune --executor slurm --parallel 2 --db "$db" --verify 0 --no-minimise --max-repeats 1 --budget 6 \
    --strategy grid --add K=1,2,3,4,5,6,7 -- /bin/sh -c 'sleep 0.6' > "$work/out1.log" 2> "$work/tune1.log" &
  tune_pid=$!
  # Killed once its third job runs: two trials are stored, the third is in flight.
  for _ in $(seq 300); do
    n=$(q "SELECT COUNT(*) FROM tune_jobs" 2>/dev/null || echo 0)
    if [ "${n:-0}" -ge 3 ]; then
      last=$(q "SELECT job_id FROM tune_jobs ORDER BY seq DESC LIMIT 1")
      [ "$(squeue -h -j "$last" -o %T 2>/dev/null)" = RUNNING ] && break
    fi
    sleep 0.1
  done
  kill -9 "$tune_pid"
  wait "$tune_pid" 2>/dev/null || true
  tune_pid=""
  before=$(q "SELECT COUNT(*) FROM tune_trials WHERE session_id = 1")
  inflight=$(q "SELECT job_id FROM tune_jobs ORDER BY seq DESC LIMIT 1")
  echo "killed with $before trials stored, job $inflight in flight"
  [ "$before" -lt 6 ] || fail "the session finished before the kill"
  "$syspilot" tune --executor slurm --db "$db" --resume 1 --budget 6 --verify 0 --no-minimise \
    > "$work/out2.log" 2> "$work/tune2.log" || fail "tune --resume exited $?"
  grep -q "recovering Slurm job $inflight" "$work/tune2.log" || fail "the job in flight ($inflight) was not recovered"
  [ "$(q "SELECT status FROM tune_sessions WHERE id = 1")" = finished ] || fail "session 1 is not finished"
  [ "$(q "SELECT COALESCE(SUM(repeats), 0) FROM tune_trials WHERE session_id = 1")" = 6 ] \
    || fail "the session did not spend its 6 runs: $(q "SELECT idx, config, repeats FROM tune_trials")"
  check_accounting 1
  [ "$(q "SELECT COUNT(*) FROM tune_jobs WHERE session_id = 1")" = 6 ] \
    || fail "more jobs than runs: $(q "SELECT job_id, trial, config FROM tune_jobs")"
  ;;
nodedown)
  step "the node goes down while its job runs, and comes back"
  "$syspilot" tune --executor slurm --db "$db" --verify 0 --no-minimise --max-repeats 1 --budget 3 \
    --strategy grid --add K=1,2 -- /bin/sh -c 'sleep 1.5' > "$work/out.log" 2> "$work/tune.log" &
  tune_pid=$!
  for _ in $(seq 300); do
    n=$(q "SELECT COUNT(*) FROM tune_jobs" 2>/dev/null || echo 0)
    if [ "${n:-0}" -ge 2 ]; then
      victim=$(q "SELECT job_id FROM tune_jobs ORDER BY seq DESC LIMIT 1")
      [ "$(squeue -h -j "$victim" -o %T 2>/dev/null)" = RUNNING ] && break
    fi
    sleep 0.1
  done
  scontrol update nodename="$node" state=down reason=syspilot-test
  sleep 1
  scontrol update nodename="$node" state=resume
  wait "$tune_pid" || fail "tune exited $? after the node came back"
  tune_pid=""
  grep -q "Slurm job $victim on $node ended NODE_FAIL.*resubmitting it once" "$work/tune.log" \
    || fail "job $victim was not reported lost and resubmitted"
  [ "$(jobcomp_states 1 | grep -c '^NODE_FAIL$' || true)" = 1 ] || fail "the cluster lost no job, or more than one"
  [ "$(q "SELECT COUNT(*) FROM tune_trials WHERE session_id = 1 AND ok = 1")" = 3 ] \
    || fail "a trial failed: $(q "SELECT idx, config, failure FROM tune_trials")"
  check_accounting 1
  ;;
analysis)
  prog=${4:?the analysis case needs the spin_pool program}
  step "the analysis runs as one job on the node; its verdicts guide the search"
  tune --budget 8 -- "$prog" > "$work/out.log" 2> "$work/tune.log" || fail "tune exited $?"
  grep -q "the analysis job ran .* [1-9][0-9]* times on $node" "$work/tune.log" \
    || fail "no analysis job on $node: $(grep analysis "$work/tune.log")"
  grep -q "^tune: hypothesis .*: confirmed" "$work/tune.log" || fail "no hypothesis confirmed on the node"
  grep -q "stay undecided" "$work/tune.log" && fail "the hypotheses stayed undecided"
  [ "$(q "SELECT guides FROM tune_sessions WHERE id = 1")" != "[]" ] || fail "the session stored no guide"
  spent=$(q "SELECT json_extract(options, '$.analysis_spent') FROM tune_sessions WHERE id = 1")
  [ "${spent:-0}" -ge 1 ] || fail "the analysis job's runs were not charged (analysis_spent '$spent')"
  trial_runs=$(q "SELECT COALESCE(SUM(repeats), 0) FROM tune_trials WHERE session_id = 1")
  [ $((trial_runs + spent)) -le 8 ] || fail "$trial_runs trial runs and $spent analysis runs exceed the budget of 8"
  check_accounting 1
  all=$(grep -c 'JobState=COMPLETED' "$state/log/jobcomp.log" || true)
  [ "$all" = $(( $(jobcomp_states 1 | grep -c '^COMPLETED$' || true) + 1 )) ] \
    || fail "the cluster completed $all jobs: not the ledger's and one analysis job"
  ;;
*) fail "unknown case $case_" ;;
esac
echo PASS
