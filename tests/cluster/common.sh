# Sourced by the cluster tests (which set $cluster): fail/step, the exit they share, and the
# checks that the Slurm packages are installed and that the test runs as root (the cluster's
# daemons do). Without them a test fails, it does not skip.
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

# require_cluster COMMAND...: each command on PATH (Debian's munge, slurmctld, slurmd,
# slurm-client, sqlite3; scripts/setup.sh installs them), and root.
require_cluster() {
  local missing="" c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
  done
  [ -z "$missing" ] || fail "not installed:$missing; install munge slurmctld slurmd slurm-client sqlite3" \
    "(bash scripts/setup.sh does)"
  [ "$(id -u)" = 0 ] || fail "must run as root: the cluster's daemons run as root"
}

# finish_cluster_test RC WORK STATE: what every cluster test does on exit. Stops the cluster under
# STATE (by the PIDs it recorded), shows the tails of the test's and the cluster's logs when RC
# is a failure, removes WORK and exits with RC.
finish_cluster_test() {
  local rc=$1 work=$2 state=$3 f
  bash "$cluster" stop "$state" >/dev/null 2>&1 || true
  if [ "$rc" != 0 ]; then
    for f in "$work"/*.log "$state"/log/jobcomp.log "$state"/log/slurmctld.log; do
      [ -f "$f" ] && { echo "--- tail $f" >&2; tail -n 40 "$f" >&2; }
    done
  fi
  rm -rf "$work"
  exit "$rc"
}
