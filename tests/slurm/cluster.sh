#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for `make test-slurm`: Debian's slurm-wlm and
# munge (installed when missing), a slurm.conf for localhost in DIR, and munged, slurmctld and
# slurmd started from DIR and stopped by their own pids. Nothing is written outside DIR (but the
# packages), and nothing is left running after `stop`.
#
#   tests/slurm/cluster.sh start DIR   start it; prints SLURM_CONF=DIR/slurm.conf on stdout
#   tests/slurm/cluster.sh stop DIR    cancel its jobs, stop the daemons, wait until they are gone
#
# Exit codes: 0 done; 1 it failed (the daemons' logs are printed); 77 it cannot run here (not
# root and Slurm not installed), said loudly on stderr.
set -euo pipefail

readonly EXIT_CANNOT=77
readonly PACKAGES=(slurm-wlm munge)

say() { printf 'cluster.sh: %s\n' "$*" >&2; }
fail() {
  say "error: $*"
  exit 1
}

# Installs slurm-wlm and munge when a command of theirs is missing (root only).
install_packages() {
  local missing=''
  for command in munged slurmctld slurmd sbatch; do
    command -v "$command" >/dev/null || missing=1
  done
  [[ -n $missing ]] || return 0
  if [[ $(id -u) -ne 0 ]]; then
    say "SKIPPED: Slurm is not installed and installing it needs root (apt-get install ${PACKAGES[*]})"
    exit "$EXIT_CANNOT"
  fi
  say "installing ${PACKAGES[*]} (apt-get)..."
  # Debian's packages try to start their services; policy-rc.d refuses in containers, which is
  # what we want: our daemons are our own.
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${PACKAGES[@]}" >&2 ||
    { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${PACKAGES[@]}" >&2; } ||
    fail "apt-get install ${PACKAGES[*]} failed"
}

# A TCP port on 127.0.0.1 nobody listens on (a connection to it is refused).
free_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  fail "no free TCP port found"
}

write_conf() {
  local dir=$1 host ctld_port slurmd_port
  host=$(hostname -s)
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  [[ $slurmd_port -ne $ctld_port ]] || slurmd_port=$((ctld_port + 1))
  cat >"$dir/slurm.conf" <<CONF
# A single-node cluster for the harness's tests (tests/slurm/cluster.sh).
ClusterName=harness-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# No cgroups in a container: processes are tracked by their parents.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# No slurmdbd: finished jobs go to a text file, which \`sacct -c\` reads.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
ReturnToService=2
KillWait=5
# The node offers more CPUs than the machine has (the test's jobs mostly wait on each other).
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
}

# Starts a daemon in the foreground of its own session, in the background of ours; records its pid.
start_daemon() {
  local dir=$1 name=$2
  shift 2
  setsid "$@" >"$dir/log/$name.out" 2>&1 </dev/null &
  echo $! >"$dir/pids/$name"
}

print_logs() {
  local dir=$1 file
  for file in "$dir"/log/*; do
    [[ -f $file ]] || continue
    say "--- $file"
    tail -n 20 "$file" >&2 || true
  done
}

cmd_start() {
  local dir=$1
  install_packages
  [[ $(id -u) -eq 0 ]] || {
    say "SKIPPED: starting slurmd needs root"
    exit "$EXIT_CANNOT"
  }
  mkdir -p "$dir"/{munge,ctld,spool,log,pids}
  # munged wants its socket's directory and every one above it searchable by everyone, and its
  # key readable by its user alone.
  chmod 755 "$dir" "$dir/munge"
  local above=$dir
  while above=$(dirname "$above") && [[ $above != / ]]; do
    [[ $(( 8#$(stat -c %a "$above") & 1 )) -eq 1 ]] ||
      fail "$above is not searchable by everyone (chmod o+x), which munged requires of its socket's directories"
  done
  mungekey --create --keyfile="$dir/munge/munge.key" >&2
  chmod 600 "$dir/munge/munge.key"
  write_conf "$dir"
  export SLURM_CONF=$dir/slurm.conf
  start_daemon "$dir" munged munged --foreground --socket="$dir/munge/munge.socket" \
    --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
    --seed-file="$dir/munge/munged.seed" --log-file="$dir/log/munged.log"
  wait_for 10 test -S "$dir/munge/munge.socket" || failed_to_start "$dir" "munged's socket"
  start_daemon "$dir" slurmctld slurmctld -D -f "$SLURM_CONF"
  start_daemon "$dir" slurmd slurmd -D -f "$SLURM_CONF"
  wait_for 60 node_is_idle || failed_to_start "$dir" "the node to be idle"
  echo "SLURM_CONF=$SLURM_CONF"
}

node_is_idle() {
  [[ $(sinfo --noheader --format=%t 2>/dev/null) == idle ]]
}

# The cluster did not come up: what its daemons said, then whatever did start is stopped.
failed_to_start() {
  local dir=$1 what=$2
  print_logs "$dir"
  say "error: timed out waiting for $what"
  cmd_stop "$dir"
  exit 1
}

# wait_for SECONDS COMMAND...: polls COMMAND until it succeeds; false after SECONDS.
wait_for() {
  local seconds=$1 tries
  shift
  for ((tries = seconds * 5; tries > 0; tries--)); do
    "$@" && return 0
    sleep 0.2
  done
  return 1
}

cmd_stop() {
  local dir=$1 name pid
  [[ -f $dir/slurm.conf ]] || return 0
  export SLURM_CONF=$dir/slurm.conf
  # Jobs first: a job's slurmstepd would outlive slurmd.
  if [[ -f $dir/pids/slurmctld ]] && kill -0 "$(cat "$dir/pids/slurmctld")" 2>/dev/null; then
    scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
    wait_for 60 no_jobs_left || say "warning: jobs are still listed after a minute"
  fi
  for name in slurmd slurmctld munged; do
    [[ -f $dir/pids/$name ]] || continue
    pid=$(cat "$dir/pids/$name")
    if kill -TERM "$pid" 2>/dev/null && ! wait_for 30 gone "$pid"; then
      say "warning: $name (pid $pid) ignored SIGTERM for 30 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/pids/$name"
  done
  if stepds_left "$dir"; then
    fail "a slurmstepd of this cluster is still running (pgrep -a slurmstepd)"
  fi
  say "stopped"
}

no_jobs_left() {
  [[ -z $(squeue --noheader --format=%i 2>/dev/null) ]]
}

# Whether the process is gone (a zombie of ours counts as gone).
gone() {
  [[ ! -e /proc/$1 ]] || [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) == Z ]]
}

# Whether a slurmstepd whose spool directory is ours still runs.
stepds_left() {
  local dir=$1 pid
  for pid in $(pgrep slurmstepd || true); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -q "^SLURM_CONF=$dir/"; then
      return 0
    fi
  done
  return 1
}

main() {
  [[ $# -eq 2 && ($1 == start || $1 == stop) ]] || {
    sed -n '2,12p' "${BASH_SOURCE[0]}" >&2
    exit 1
  }
  local dir
  mkdir -p "$2"
  dir=$(cd "$2" && pwd)
  "cmd_$1" "$dir"
}

main "$@"
