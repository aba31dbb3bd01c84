# Sourced by the cluster tests: fail/step, and the checks that the Slurm packages are installed
# and that the test runs as root (the cluster's daemons do). Without them a test fails, it does
# not skip.
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
