#!/usr/bin/env bash
# End-to-end check of sharded sweeps on a real Slurm: a one-node cluster on
# localhost (munged, slurmctld, slurmd, select/cons_tres), a sweep submitted
# as a job array with one shard per task (scripts/slurm/sweep-shard.sbatch),
# the shards merged by a job that waits for the array, and the merged output
# compared byte for byte with the same sweep run unsharded.
#
# Installs Debian's slurm-wlm and munge when they are missing (needs root).
# Everything else lives in a temporary directory: the configuration, a
# throwaway munge key and socket, state, spool, logs and outputs. The
# daemons are started by this script and stopped by it, by PID, on every
# exit. Not part of `cargo test`.
#
# Usage: scripts/slurm-e2e.sh [EXPERIMENT] [SHARDS]
#   (default experiments/churn-vs-count.yaml, 4 shards)
# Environment: SLURM_E2E_TIMEOUT   seconds for each wait (default 300)
#              SLURM_E2E_PORT      slurmctld's port; slurmd uses the next (default 6817)
#              SLURM_E2E_KEEP=1    keep the temporary directory
set -euo pipefail
experiment=""
if [ $# -ge 1 ]; then
  [ -f "$1" ] || { echo "no experiment file $1" >&2; exit 2; }
  experiment="$(realpath "$1")"
fi
shards="${2:-4}"
cd "$(dirname "$0")/.."
repo="$PWD"
experiment="${experiment:-$repo/experiments/churn-vs-count.yaml}"
wait_s="${SLURM_E2E_TIMEOUT:-300}"
ctld_port="${SLURM_E2E_PORT:-6817}"
slurmd_port=$((ctld_port + 1))

[[ "$shards" =~ ^[1-9][0-9]*$ ]] || { echo "SHARDS must be a positive integer, got '$shards'" >&2; exit 2; }

started=$(date +%s.%N)
phase_start=$started
phase() { # prints how long the phase that just ended took
  local now
  now=$(date +%s.%N)
  awk -v a="$phase_start" -v b="$now" -v what="$1" 'BEGIN { printf "slurm-e2e: %-34s %6.1f s\n", what, b - a }'
  phase_start=$now
}

# --- packages ---------------------------------------------------------------
missing=()
for tool in munged mungekey slurmctld slurmd sbatch; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "missing ${missing[*]}: install slurm-wlm and munge (apt-get needs root)" >&2
    exit 1
  fi
  echo "slurm-e2e: installing slurm-wlm and munge (missing: ${missing[*]})"
  export DEBIAN_FRONTEND=noninteractive
  # Another apt-get may hold the dpkg lock for a while: wait for it.
  apt-get -o DPkg::Lock::Timeout="$wait_s" update -qq
  apt-get -o DPkg::Lock::Timeout="$wait_s" install -y -qq --no-install-recommends \
    slurm-wlm munge >/dev/null
fi
phase "packages"

# --- the binary every task runs ----------------------------------------------
cargo build --release --locked --quiet
plansim="${CARGO_TARGET_DIR:-$repo/target}/release/plansim"
phase "cargo build --release --locked"

# --- temporary cluster --------------------------------------------------------
tmp="$(mktemp -d /tmp/plansim-slurm-e2e.XXXXXX)"
# munged wants its socket directory (and the path to it) open to all.
chmod 755 "$tmp"
mkdir -p "$tmp"/{munge,state,spool,log,out}
chmod 755 "$tmp/munge"
pids=()
job_ids=()
export SLURM_CONF="$tmp/slurm.conf"

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ ${#job_ids[@]} -gt 0 ] && [ ${#pids[@]} -ge 2 ]; then
    # Cancel the jobs and give their slurmstepd a moment to end before
    # slurmd goes.
    scancel "${job_ids[@]}" 2>/dev/null || true
    for _ in $(seq 50); do
      [ -z "$(squeue -h -t running,completing 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  # Stop in reverse order of start (slurmd, slurmctld, munged), by PID.
  local i pid
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    pid="${pids[$i]}"
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [ "${SLURM_E2E_KEEP:-0}" = 1 ]; then
    echo "slurm-e2e: kept $tmp"
  else
    rm -rf "$tmp"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'echo "slurm-e2e: interrupted" >&2; exit 130' INT
trap 'echo "slurm-e2e: terminated" >&2; exit 143' TERM

logs_tail() {
  local log
  for log in "$tmp"/log/*.log; do
    [ -f "$log" ] || continue
    echo "--- tail of $(basename "$log") ---" >&2
    tail -n 20 "$log" >&2
  done
}

fail() {
  echo "slurm-e2e: FAILED: $*" >&2
  logs_tail
  exit 1
}

# Fails unless every daemon started so far is still running.
daemons_alive() {
  local name
  for name in "${!names[@]}"; do
    kill -0 "${pids[$name]}" 2>/dev/null || fail "${names[$name]} (pid ${pids[$name]}) exited"
  done
}
names=()

# Waits up to $wait_s seconds for the command to succeed.
wait_for() {
  local what="$1"
  shift
  local deadline=$((SECONDS + wait_s))
  until "$@"; do
    daemons_alive
    [ $SECONDS -lt $deadline ] || fail "timed out after ${wait_s}s waiting for $what"
    sleep 0.5
  done
}

for port in "$ctld_port" "$slurmd_port"; do
  if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
    echo "port $port is in use (another slurmctld?): set SLURM_E2E_PORT" >&2
    exit 1
  fi
done

# A throwaway key and a private socket: a system munged, if any, is untouched.
mungekey --create --keyfile="$tmp/munge/munge.key" --bits=1024
munge_socket="$tmp/munge/munge.socket"
munged --foreground --key-file="$tmp/munge/munge.key" --socket="$munge_socket" \
  --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" \
  --log-file="$tmp/log/munged.log" >>"$tmp/log/munged.log" 2>&1 &
pids+=($!)
names+=(munged)
wait_for "munged's socket" test -S "$munge_socket"

# The node as slurmd sees this machine: CPUs, sockets, cores, threads, memory.
node_hw="$(slurmd -C | head -n 1 | tr ' ' '\n' |
  grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore|RealMemory)=' |
  tr '\n' ' ')"
[ -n "$node_hw" ] || fail "slurmd -C printed no hardware description"

cat >"$SLURM_CONF" <<CONF
# Written by scripts/slurm-e2e.sh: a one-node cluster on localhost.
ClusterName=plansim-e2e
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# No cgroups in a container: plain process tracking, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
# Finished jobs stay visible to squeue -t all long enough to read their state.
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 $node_hw State=UNKNOWN
PartitionName=e2e Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF

# In the foreground (-D), so the PID is the daemon; it logs to stderr.
slurmctld -D -f "$SLURM_CONF" >>"$tmp/log/slurmctld.log" 2>&1 &
pids+=($!)
names+=(slurmctld)
ctld_up() { scontrol ping 2>/dev/null | grep -q "is UP"; }
wait_for "slurmctld to answer" ctld_up
slurmd -D -N localhost -f "$SLURM_CONF" >>"$tmp/log/slurmd.log" 2>&1 &
pids+=($!)
names+=(slurmd)
node_idle() { [ "$(sinfo -h -n localhost -o %T 2>/dev/null)" = idle ]; }
wait_for "node localhost to be idle in sinfo" node_idle
phase "cluster up (munged, slurmctld, slurmd)"

# --- the sweep: an array of shards, and a merge job that waits for it -------------
# The README's two sbatch lines, plus log files and the binary's path.
out="$tmp/out"
array_id="$(sbatch --parsable --array="1-$shards" --chdir="$repo" \
  --output="$tmp/log/task-%A_%a.out" --export="ALL,PLANSIM=$plansim" \
  scripts/slurm/sweep-shard.sbatch "$experiment" "$out")"
array_id="${array_id%%;*}"
job_ids+=("$array_id")
merge_id="$(sbatch --parsable --dependency="afterok:$array_id" --chdir="$repo" \
  --output="$tmp/log/merge-%j.out" --job-name=plansim-merge \
  --wrap "$(printf '%q' "$plansim") merge $(printf '%q' "$out")/shard-* --out $(printf '%q' "$out/merged") --quiet")"
merge_id="${merge_id%%;*}"
job_ids+=("$merge_id")
echo "slurm-e2e: submitted array job $array_id (tasks 1-$shards) and merge job $merge_id after it"

final='COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED'
# "TASK STATE" for each task of job $1 (-r: one line per array task).
states() { squeue -h -r -t all -j "$1" -o '%K %T' 2>/dev/null | sort -n; }
# Whether all $2 tasks of job $1 are in a final state.
finished() { [ "$(states "$1" | grep -cE " ($final)\$")" = "$2" ]; }
# Fails, showing the jobs' output, unless all $2 tasks of job $1 completed.
completed() {
  [ "$(states "$1" | grep -c ' COMPLETED$')" = "$2" ] && return 0
  states "$1" >&2
  local log
  for log in "$tmp"/log/*.out; do
    echo "--- $(basename "$log") ---" >&2
    tail -n 20 "$log" >&2
  done
  fail "job $1: not every task completed"
}
wait_for "array job $array_id to finish" finished "$array_id" "$shards"
completed "$array_id" "$shards"
phase "array job ($shards tasks)"
wait_for "merge job $merge_id to finish" finished "$merge_id" 1
completed "$merge_id" 1
phase "merge job"

"$plansim" sweep "$experiment" --quiet --out "$out/whole"
phase "unsharded sweep"
if ! diff -r "$out/merged" "$out/whole"; then
  fail "the merged shards differ from the unsharded sweep (above)"
fi
files=$(find "$out/whole" -type f | wc -l)
echo "slurm-e2e: OK: $shards shards run by Slurm merge into the unsharded sweep byte for byte ($files files)"
awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "slurm-e2e: total %.1f s\n", b - a }'
