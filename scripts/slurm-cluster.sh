#!/usr/bin/env bash
# A real one-node Slurm cluster on loopback, from Debian 12's packages (munge, slurmctld, slurmd,
# slurm-client), for the scale-out tests and for trying `syspilot` under Slurm by hand. It runs
# its own munged, slurmctld and slurmd as root, and stops exactly those, by the PIDs they wrote.
# Usage: scripts/slurm-cluster.sh start|stop|status|env [STATE_DIR]
#   (default STATE_DIR: ${TMPDIR:-/tmp}/syspilot-slurm)
#   start   writes the configuration, starts the daemons, waits until the node is idle and prints
#           the line to eval (`eval "$(scripts/slurm-cluster.sh env)"`); already running: says so
#   stop    ends the daemons it started (by PID) and waits for them; removes no file
#   status  the daemons' PIDs and `sinfo`; exit 0 running, 3 stopped, 1 partly running
#   env     prints `export SLURM_CONF=STATE_DIR/slurm.conf` for a shell to eval
#
# Everything lives under STATE_DIR: slurm.conf, the munge key, socket, seed, logs and PID files,
# slurmctld's state and slurmd's spool. Nothing is written to /etc, and a system-wide munged or
# Slurm, if one runs, is left alone: this cluster has its own munge socket (AuthInfo=socket=...)
# and its own TCP ports, picked free at each start from a range derived from STATE_DIR.
#
# Accounting: Debian 12's Slurm 22.05 has only accounting_storage/none and /slurmdbd; the file-
# based storage that once fed `sacct` is gone, and jobcomp/filetxt does not feed it either. So
# `sacct` needs slurmdbd (and a MariaDB behind it) and does NOT work on this cluster ("Slurm
# accounting storage is disabled"). Use `squeue`, `scontrol show job ID` (kept MinJobAge=3600 s
# after the end) and `sbatch --wait`'s exit status instead; jobcomp/filetxt writes one line per
# finished job to STATE_DIR/log/jobcomp.log as a record.
set -euo pipefail

cmd=${1:-}
state=${2:-"${TMPDIR:-/tmp}/syspilot-slurm"}
usage() { echo "usage: $0 start|stop|status|env [STATE_DIR]" >&2; exit 2; }
case "$cmd" in start|stop|status|env) ;; *) usage ;; esac
# slurm.conf and munged want absolute paths; a relative STATE_DIR would also change meaning
# between the daemons (which chdir) and the clients. Only `start` creates the folder.
[ "$cmd" != start ] || mkdir -p "$state"
case "$state" in /*) ;; *) state="$PWD/$state" ;; esac

conf="$state/slurm.conf"
munge_sock="$state/munge/munge.socket"
log="$state/log"
run="$state/run"
# Daemon name, PID file. Stopped in this order: slurmd, then the controller, munged last (both
# Slurm daemons authenticate through it while they shut down).
daemons=("slurmd:$run/slurmd.pid" "slurmctld:$run/slurmctld.pid" "munged:$run/munged.pid")

say() { echo "slurm-cluster: $*" >&2; }
die() { say "$*"; exit 1; }

# Whether process $1 runs. An exited daemon whose parent has not reaped it yet (a zombie: the
# container's PID 1 may be slow to) has ended all the same.
alive() {
  local st
  st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

# The PID a daemon recorded, if that process still runs and is that daemon: a PID file left by
# a crash may name a recycled PID, and then it is someone else's process, not ours to signal.
live_pid() {
  local name=$1 file=$2 pid comm
  [ -s "$file" ] || return 1
  pid=$(tr -dc '0-9' < "$file")
  [ -n "$pid" ] && alive "$pid" || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  # /usr/sbin/slurmctld is an alternatives link to slurmctld-wlm: accept both names.
  case "$comm" in "$name"|"$name"-wlm) echo "$pid" ;; *) return 1 ;; esac
}

running_count() {
  local n=0 d
  for d in "${daemons[@]}"; do live_pid "${d%%:*}" "${d#*:}" >/dev/null && n=$((n + 1)); done
  echo "$n"
}

env_line() { echo "export SLURM_CONF=$conf"; }

do_stop() {
  local d name file pid pids=() _
  for d in "${daemons[@]}"; do
    name=${d%%:*}; file=${d#*:}
    pid=$(live_pid "$name" "$file") || continue
    say "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid")
    # One at a time: slurmd reports to slurmctld, and both need munged, while they shut down.
    for _ in $(seq 150); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
      say "$name (pid $pid) ignored SIGTERM for 15 s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
      ! alive "$pid" || die "$name (pid $pid) is still running"
    fi
  done
  [ ${#pids[@]} -gt 0 ] || say "nothing running under $state"
  return 0
}

# A TCP port nobody on this machine has bound (listening or connected), read from /proc so that
# it needs neither ss nor netstat. $1: first port to try; prints the port.
port_used() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v h="$hex" 'FNR > 1 { split($2, a, ":"); if (a[2] == h) f = 1 } END { exit !f }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
free_port() {
  local p=$1
  while port_used "$p"; do p=$((p + 1)); done
  echo "$p"
}

tails() {
  local f
  for f in "$log"/munged.log "$log"/slurmctld.log "$log"/slurmd.log; do
    [ -f "$f" ] || continue
    echo "--- tail $f" >&2
    tail -n 25 "$f" >&2
  done
}

do_start() {
  local missing="" c
  for c in munged mungekey munge slurmctld slurmd sinfo scontrol srun; do
    command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
  done
  [ -z "$missing" ] || { say "missing:$missing (apt-get install munge slurmctld slurmd slurm-client;" \
    "scripts/setup.sh installs them)"; exit 2; }
  # SlurmUser=root and a root munged: the jobs run as the submitting user, and that is root here.
  [ "$(id -u)" = 0 ] || { say "must run as root (the daemons run as root)"; exit 2; }

  local n
  n=$(running_count)
  if [ "$n" = "${#daemons[@]}" ]; then
    say "already running under $state"
    env_line
    return 0
  fi
  # Partly running (one daemon died): start from a clean slate rather than guess which is sane.
  [ "$n" = 0 ] || { say "partly running; stopping what is left first"; do_stop; }

  # munged refuses key, socket and log directories that others may write to, and a socket
  # directory that others may not enter (clients of any user must reach the socket).
  mkdir -p "$state/munge" "$log" "$run" "$state/ctld" "$state/spool"
  chmod 0755 "$state/munge"
  chmod 0700 "$log" "$run" "$state/ctld" "$state/spool"
  if [ ! -s "$state/munge/munge.key" ]; then
    mungekey --create --bits=1024 --keyfile="$state/munge/munge.key"
  fi
  chmod 0400 "$state/munge/munge.key"
  rm -f "$munge_sock" "$munge_sock.lock"
  # munged also insists that every folder above its socket be enterable by all users, so that
  # any user's client can reach it. A STATE_DIR inside a `mktemp -d` folder (0700) fails that;
  # this cluster only serves root, so there --force turns munged's refusal into a warning.
  local force="" dir
  dir=$state
  while [ "$dir" != / ]; do
    [ "$(( 0$(stat -c %a "$dir") & 01 ))" != 0 ] || force="--force"
    dir=$(dirname "$dir")
  done
  # munged forks into the background once its socket listens, then writes its PID file.
  munged $force --socket="$munge_sock" --key-file="$state/munge/munge.key" \
    --pid-file="$run/munged.pid" --log-file="$log/munged.log" \
    --seed-file="$state/munge/munged.seed" </dev/null >>"$log/munged.log" 2>&1 \
    || { tails; die "munged did not start"; }
  munge -n -S "$munge_sock" | unmunge -S "$munge_sock" >/dev/null \
    || { tails; do_stop; die "munge credentials do not round-trip through $munge_sock"; }

  # Ports: the base is derived from STATE_DIR, so that two clusters (two test runs) start
  # their scans apart; below 32768, where Linux does not hand out ephemeral ports.
  local base ctld_port slurmd_port node cpu_line
  base=$(( 10000 + $(printf '%s' "$state" | cksum | cut -d' ' -f1) % 20000 ))
  ctld_port=$(free_port "$base")
  slurmd_port=$(free_port $((ctld_port + 1)))
  # The node as slurmd sees this machine (name = `hostname -s`, CPUs, sockets, memory): slurmd
  # refuses to register if the configuration promises more than it finds.
  node=$(hostname -s)
  cpu_line=$(slurmd -C | head -n 1)
  case "$cpu_line" in "NodeName=$node "*) ;; *) die "unexpected \`slurmd -C\`: $cpu_line" ;; esac

  # Rewritten at each start: the ports may differ from the last run's.
  cat > "$conf" <<EOF
# Written by scripts/slurm-cluster.sh at $(date -u +%FT%TZ); rewritten at each start.
ClusterName=syspilot
# The controller is this host, reached on loopback.
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
# Listen on the node's and the controller's address (127.0.0.1), not on every interface.
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
# Our own munged, not the system's /run/munge socket (used by slurm and its credentials).
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_sock
# No cgroups in a container: processes tracked by parent PID, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
# No slurmdbd: sacct does not work (see the script's header); squeue and scontrol do.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$log/jobcomp.log
# Keep finished jobs in \`scontrol show job\` for an hour.
MinJobAge=3600
# Only a node that stopped answering comes back by itself; one set DOWN by hand stays down.
ReturnToService=1
SlurmctldTimeout=30
SlurmdTimeout=30
# Everything under STATE_DIR; an empty plugstack so /etc/slurm/plugstack.conf is not read.
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmctldLogFile=$log/slurmctld.log
SlurmdLogFile=$log/slurmd.log
PlugStackConfig=$state/plugstack.conf
SlurmctldDebug=info
SlurmdDebug=info
# No mail on this machine; the default /usr/bin/mail is missing and slurmctld says so at start.
MailProg=/bin/true
$cpu_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  : > "$state/plugstack.conf"

  export SLURM_CONF="$conf"
  # -c: a fresh cluster each start (no jobs or node states recovered from the last run, so a
  # node left DOWN by a test comes back idle). Both daemons fork and write their PID files.
  slurmctld -c -f "$conf" </dev/null >>"$log/slurmctld.log" 2>&1 \
    || { tails; do_stop; die "slurmctld did not start"; }
  slurmd -f "$conf" </dev/null >>"$log/slurmd.log" 2>&1 \
    || { tails; do_stop; die "slurmd did not start"; }

  # slurmd registers within a second or so; poll often, give up after 30 s.
  local _ st=""
  for _ in $(seq 150); do
    st=$(sinfo -h -N -n "$node" -o %t 2>/dev/null || true)
    [ "$st" = idle ] && break
    sleep 0.2
  done
  if [ "$st" != idle ]; then
    say "node $node not idle after 30 s (state: '${st:-no answer}')"
    tails
    do_stop
    exit 1
  fi
  say "node $node idle; controller on 127.0.0.1:$ctld_port, slurmd on :$slurmd_port"
  env_line
}

do_status() {
  local d name pid n
  for d in "${daemons[@]}"; do
    name=${d%%:*}
    if pid=$(live_pid "$name" "${d#*:}"); then echo "$name: running (pid $pid)"; else echo "$name: stopped"; fi
  done
  n=$(running_count)
  if [ "$n" = 0 ]; then return 3; fi
  SLURM_CONF="$conf" sinfo -N -l 2>/dev/null || echo "sinfo: no answer from the controller"
  [ "$n" = "${#daemons[@]}" ] || return 1
}

case "$cmd" in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  env) env_line ;;
esac
