#!/usr/bin/env bash
# A local Slurm for tests: one slurmctld and N slurmd as virtual nodes on
# 127.0.0.1, with typed fake GPUs, all state under one directory.
#
#   scripts/local-slurm.sh start DIR [--nodes N] [--gpus-per-node G]
#                                    [--cpus-per-node C] [--port-base P]
#                                    [--timeout S] [--powered-down K]
#   scripts/local-slurm.sh stop DIR
#   scripts/local-slurm.sh status DIR
#   scripts/local-slurm.sh restart-ctld DIR [--crash]
#       stop slurmctld (SIGTERM; SIGKILL with --crash) and start it again
#       without -c: it recovers its jobs from its saved state
#
# Everything lives under DIR: slurm.conf, gres.conf, spool and state
# directories, logs, pid files, the munge key, socket and seed, and the fake
# GPU device files (character devices made with mknod, major 195 as NVIDIA's).
# Nodes are n1..nN; the first half (rounded up) carry GPUs of type a100, the
# rest type v100. slurmctld listens on P, node nK on P+K; without
# --port-base, P is the first of 27810, 27830, ... whose block is free (two
# starts at the same moment may still pick the same block). `start` writes
# DIR/slurm.env (source it: it exports SLURM_CONF) and returns once every node
# is IDLE, or fails after --timeout seconds with the log tails.
#
# Jobs run as root (SlurmUser=root, everything here is root). The system's own
# Slurm and munge (if any) are neither used nor disturbed: no default paths,
# no default ports. `stop` cancels the jobs (while slurmctld is up), then
# signals only processes of DIR: the daemons from its pid files, in the order
# slurmd, slurmctld, munged, and any slurmstepd still listening on a socket in
# DIR's spool (with the job processes under it); it waits for them to exit.
# `start` on a stopped DIR starts the same cluster again, recovering its jobs.
#
# --powered-down K: the last K nodes are Slurm power-saving nodes (CLOUD),
# powered down at start. `scontrol update nodename=nK state=power_up` runs
# DIR/power/resume, which starts their slurmd; state=power_down runs
# DIR/power/suspend, which stops it. Slurm never powers a node down on its
# own (SuspendTime is a year; INFINITE would turn power saving off in Slurm
# 22.05): an autoscaler (tessel serve --autoscale) does. The resume program
# starts slurmd with -b, so that it reports a fresh boot (Slurm waits for one
# after powering a node up).
set -euo pipefail

die() { echo "local-slurm: $*" >&2; exit 1; }

usage() {
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

need_bin() {
  local b
  for b in "$@"; do
    command -v "$b" >/dev/null 2>&1 || die "missing program '$b' (install munge, slurmctld, slurmd, slurm-client)"
  done
}

# Absolute path of DIR (created if needed).
abs_dir() {
  mkdir -p "$1"
  (cd "$1" && pwd -P)
}

# Whether process PID exists and is not a zombie (here PID 1 may reap
# orphans late, and kill -0 succeeds on a zombie).
is_running() {
  local st
  kill -0 "$1" 2>/dev/null || return 1
  # The state follows the last ')' (the command name may hold spaces).
  st=$(sed -E 's/.*\) ([A-Za-z]).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $st && $st != Z && $st != X ]]
}

# pid from FILE if that process is running, else nothing.
live_pid() {
  local f=$1 pid
  [[ -s $f ]] || return 0
  pid=$(tr -dc '0-9' <"$f")
  if [[ -n $pid ]] && is_running "$pid"; then echo "$pid"; fi
  return 0
}

port_in_use() {
  ss -Hltn "sport = :$1" 2>/dev/null | grep -q .
}

# The first port P of 27810, 27810+S, ... (S = max(N, 20)) below 29810 with
# P..P+N-1 all free.
free_port_block() {
  local n=$1 step=$(($1 > 20 ? $1 : 20)) base p ok
  for ((base = 27810; base + n <= 29810; base += step)); do
    ok=1
    for ((p = base; p < base + n; p++)); do
      if port_in_use "$p"; then ok=0; break; fi
    done
    ((ok)) && { echo "$base"; return 0; }
  done
  return 1
}

# The pid files of every daemon of DIR, slurmd first, munged last.
pid_files() {
  local d=$1
  ls "$d"/run/slurmd-*.pid 2>/dev/null || true
  echo "$d/run/slurmctld.pid"
  echo "$d/munge/munged.pid"
}

log_tails() {
  local d=$1 f
  for f in "$d"/log/slurmctld.log "$d"/log/slurmd-*.log "$d"/munge/munged.log; do
    [[ -f $f ]] || continue
    echo "---- tail of $f" >&2
    tail -n 15 "$f" >&2
  done
}

# Waits until every pid in the arguments has exited; SIGKILLs after 15 s.
wait_exit() {
  local deadline=$((SECONDS + 15)) pid alive
  while :; do
    alive=()
    for pid in "$@"; do is_running "$pid" && alive+=("$pid"); done
    ((${#alive[@]} == 0)) && return 0
    if ((SECONDS >= deadline)); then
      echo "local-slurm: pids ${alive[*]} did not exit on SIGTERM; sending SIGKILL" >&2
      kill -KILL "${alive[@]}" 2>/dev/null || true
      sleep 0.2
      return 0
    fi
    sleep 0.1
  done
}

# Pids of the slurmstepd processes of DIR: those listening on a unix socket
# in DIR's spool (slurmd leaves running steps alone when it stops).
stepd_pids() {
  ss -xlpn 2>/dev/null | awk -v spool="$1/spool/" 'index($5, spool) == 1' \
    | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u
}

# PID and all its descendants, deepest first.
process_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do process_tree "$child"; done
  echo "$1"
}

cmd_stop() {
  local d=$1 f pid i ids
  [[ -d $d ]] || { echo "local-slurm: $d does not exist; nothing to stop"; return 0; }
  d=$(cd "$d" && pwd -P)
  # Read every pid before signalling anything: slurmd removes its own pid file
  # on exit, and a later read could find a recycled pid.
  local slurmd_pids=() ctld_pid munged_pid
  for f in "$d"/run/slurmd-*.pid; do
    [[ -e $f ]] || continue
    pid=$(live_pid "$f")
    [[ -n $pid ]] && slurmd_pids+=("$pid")
  done
  ctld_pid=$(live_pid "$d/run/slurmctld.pid")
  munged_pid=$(live_pid "$d/munge/munged.pid")
  # Jobs outlive slurmd: cancel them while the controller is up and wait
  # (bounded) for their steps to end.
  if [[ -n $ctld_pid ]]; then
    ids=$(SLURM_CONF=$d/slurm.conf squeue -h -o '%A' 2>/dev/null | sort -u | tr '\n' ' ') || ids=""
    if [[ -n ${ids// /} ]]; then
      # shellcheck disable=SC2086
      SLURM_CONF=$d/slurm.conf scancel $ids 2>/dev/null || true
      for ((i = 0; i < 100; i++)); do
        [[ -z $(stepd_pids "$d") ]] && break
        sleep 0.1
      done
    fi
  fi
  if ((${#slurmd_pids[@]})); then
    kill -TERM "${slurmd_pids[@]}" 2>/dev/null || true
    wait_exit "${slurmd_pids[@]}"
  fi
  # Steps still running (controller down, or cancel too slow): kill each
  # slurmstepd of DIR with the processes it started.
  local tree=() part=()
  for pid in $(stepd_pids "$d"); do
    mapfile -t part < <(process_tree "$pid")
    tree+=("${part[@]}")
  done
  if ((${#tree[@]})); then
    echo "local-slurm: killing ${#tree[@]} leftover job step processes" >&2
    kill -KILL "${tree[@]}" 2>/dev/null || true
    wait_exit "${tree[@]}"
  fi
  if [[ -n $ctld_pid ]]; then
    kill -TERM "$ctld_pid" 2>/dev/null || true
    wait_exit "$ctld_pid"
  fi
  if [[ -n $munged_pid ]]; then
    kill -TERM "$munged_pid" 2>/dev/null || true
    wait_exit "$munged_pid"
  fi
  rm -f "$d"/run/*.pid "$d/munge/munged.pid"
  echo "local-slurm: stopped (slurmd: ${#slurmd_pids[@]}, slurmctld: ${ctld_pid:-none}, munged: ${munged_pid:-none})"
}

cmd_status() {
  local d=$1 f pid any=0
  [[ -d $d ]] || die "$d does not exist"
  d=$(cd "$d" && pwd -P)
  while read -r f; do
    pid=$(live_pid "$f")
    if [[ -n $pid ]]; then
      echo "running  $(basename "$f" .pid) pid $pid"
      any=1
    else
      echo "stopped  $(basename "$f" .pid)"
    fi
  done < <(pid_files "$d")
  if ((any)) && [[ -f $d/slurm.conf ]]; then
    SLURM_CONF=$d/slurm.conf sinfo -N -o '%N %T %G %c' 2>&1 || true
  fi
  ((any)) || return 3
}

# Fails (with the log tails) if, 5 s after the start, a daemon of DIR that
# should run has no live process: a daemon that died at start-up (a fatal
# config error) is reported at once instead of at the deadline.
check_alive() {
  local d=$1 nodes=$2 started=$3 i
  ((SECONDS - started < 5)) && return 0
  if [[ -z $(live_pid "$d/run/slurmctld.pid") ]]; then
    echo "local-slurm: slurmctld is not running" >&2
    log_tails "$d"
    return 1
  fi
  for ((i = 1; i <= nodes; i++)); do
    if [[ -z $(live_pid "$d/run/slurmd-n$i.pid") ]]; then
      echo "local-slurm: slurmd of n$i is not running" >&2
      log_tails "$d"
      return 1
    fi
  done
}

# Polls until every node of DIR is idle (no flags) or the deadline passes.
wait_idle() {
  local d=$1 nodes=$2 timeout=$3 started=$SECONDS out idle
  while :; do
    out=$(SLURM_CONF=$d/slurm.conf sinfo -h -N -o '%N %T' 2>&1) || out=""
    idle=$(awk '$2 == "idle" { n++ } END { print n + 0 }' <<<"$out")
    ((idle == nodes)) && return 0
    check_alive "$d" "$nodes" "$started" || return 1
    if ((SECONDS - started >= timeout)); then
      echo "local-slurm: nodes not all idle after ${timeout}s (idle: $idle of $nodes)" >&2
      echo "$out" >&2
      log_tails "$d"
      return 1
    fi
    sleep 0.2
  done
}

# Polls until slurmctld of DIR answers a ping.
wait_ctld() {
  local d=$1 timeout=$2 started=$SECONDS
  until SLURM_CONF=$d/slurm.conf scontrol ping 2>/dev/null | grep -q 'is UP'; do
    check_alive "$d" 0 "$started" || return 1
    if ((SECONDS - started >= timeout)); then
      echo "local-slurm: slurmctld not answering after ${timeout}s" >&2
      log_tails "$d"
      return 1
    fi
    sleep 0.2
  done
}

start_ctld() {
  local d=$1
  slurmctld -f "$d/slurm.conf" -L "$d/log/slurmctld.log" \
    || { log_tails "$d"; echo "local-slurm: slurmctld failed to start" >&2; return 1; }
}

# Stops whatever a failed start left running, then fails.
start_failed() {
  cmd_stop "$1" >&2
  die "start failed; logs are under $1/log"
}

cmd_start() {
  local d=$1; shift
  local nodes=4 gpus=2 cpus=4 port_base="" timeout=60 powered_down=0
  while (($#)); do
    case $1 in
      --nodes) nodes=$2; shift 2 ;;
      --gpus-per-node) gpus=$2; shift 2 ;;
      --cpus-per-node) cpus=$2; shift 2 ;;
      --port-base) port_base=$2; shift 2 ;;
      --timeout) timeout=$2; shift 2 ;;
      --powered-down) powered_down=$2; shift 2 ;;
      *) die "unknown option '$1'" ;;
    esac
  done
  [[ $nodes =~ ^[1-9][0-9]*$ ]] || die "--nodes must be a positive integer, got '$nodes'"
  [[ $powered_down =~ ^[0-9]+$ ]] && ((powered_down < nodes)) ||
    die "--powered-down must be an integer from 0 to --nodes - 1, got '$powered_down'"
  [[ $gpus =~ ^[1-9][0-9]*$ ]] || die "--gpus-per-node must be a positive integer, got '$gpus'"
  [[ $cpus =~ ^[1-9][0-9]*$ ]] || die "--cpus-per-node must be a positive integer, got '$cpus'"
  if [[ -n $port_base ]] && { ! [[ $port_base =~ ^[0-9]+$ ]] ||
    ((port_base < 1024 || port_base + nodes > 65535)); }; then
    die "--port-base must be in 1024..$((65535 - nodes)), got '$port_base'"
  fi
  ((EUID == 0)) || die "must run as root (jobs run as root, mknod needs root)"
  need_bin munged slurmctld slurmd sinfo scontrol mknod ss

  d=$(abs_dir "$d")
  local f
  while read -r f; do
    [[ -n $(live_pid "$f") ]] && die "a daemon of $d is already running ($f); run 'stop $d' first"
  done < <(pid_files "$d")
  local p
  if [[ -z $port_base ]]; then
    port_base=$(free_port_block $((nodes + 1))) \
      || die "no free block of $((nodes + 1)) ports in 27810-29809; pass --port-base"
  fi
  for ((p = port_base; p <= port_base + nodes; p++)); do
    port_in_use "$p" && die "port $p is in use; pick another --port-base"
  done

  mkdir -p "$d"/{run,log,state,spool,dev,munge,jobs}
  # munged insists that its socket directory be 0755 and that everyone may
  # search every directory above it (a mktemp -d directory is 0700).
  chmod 0755 "$d/munge"
  chmod go+x "$d"

  # munge: a private key, socket, pid and seed file.
  if [[ ! -s $d/munge/munge.key ]]; then
    dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 0400 "$d/munge/munge.key"
  munged --socket="$d/munge/munge.socket.2" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" \
    --seed-file="$d/munge/munged.seed" \
    || { log_tails "$d"; start_failed "$d"; }

  # Fake GPUs: per node its own nvidia0..G-1 (char 195:i), so device numbers
  # and CUDA_VISIBLE_DEVICES agree within a node.
  local half=$(((nodes + 1) / 2)) i g type
  : >"$d/gres.conf"
  local node_lines=""
  for ((i = 1; i <= nodes; i++)); do
    type=a100
    ((i > half)) && type=v100
    mkdir -p "$d/dev/n$i" "$d/spool/n$i"
    for ((g = 0; g < gpus; g++)); do
      [[ -e $d/dev/n$i/nvidia$g ]] || mknod "$d/dev/n$i/nvidia$g" c 195 "$g"
    done
    echo "NodeName=n$i Name=gpu Type=$type File=$d/dev/n$i/nvidia[0-$((gpus - 1))]" >>"$d/gres.conf"
    local state=UNKNOWN
    ((i > nodes - powered_down)) && state=CLOUD
    node_lines+="NodeName=n$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((port_base + i)) CPUs=$cpus RealMemory=4096 Gres=gpu:$type:$gpus State=$state"$'\n'
  done
  local power_lines=""
  if ((powered_down > 0)); then
    mkdir -p "$d/power"
    # What slurmctld runs with a hostlist ("n3,n4" or "n[3-4]").
    # slurmctld runs it with no PATH, its own environment and descriptors;
    # a slurmd inheriting those cannot launch tasks, so it starts clean.
    printf '%s\n' '#!/bin/sh' '# Powers nodes up: starts their slurmd.' \
      'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; export PATH; cd /' \
      "for n in \$(SLURM_CONF=$d/slurm.conf scontrol show hostnames \"\$1\"); do" \
      "  env -i PATH=\"\$PATH\" setsid slurmd -b -f $d/slurm.conf -N \"\$n\" </dev/null >/dev/null 2>&1" \
      'done' >"$d/power/resume"
    printf '%s\n' '#!/bin/sh' '# Powers nodes down: stops their slurmd.' \
      'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; export PATH' \
      "for n in \$(SLURM_CONF=$d/slurm.conf scontrol show hostnames \"\$1\"); do" \
      "  f=$d/run/slurmd-\$n.pid" \
      '  [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null' 'done' 'exit 0' >"$d/power/suspend"
    chmod 0755 "$d/power/resume" "$d/power/suspend"
    power_lines="# Power saving: the last $powered_down nodes start powered down (CLOUD).
ResumeProgram=$d/power/resume
SuspendProgram=$d/power/suspend
SuspendTime=31536000
ResumeTimeout=60
SuspendTimeout=10
PrivateData=cloud
SlurmctldParameters=cloud_reg_addrs"
  fi

  cat >"$d/slurm.conf" <<EOF
# Generated by tessel scripts/local-slurm.sh; all state under $d.
ClusterName=tessel-local
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port_base
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket.2
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups here: track processes by /proc, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# Virtual nodes share the host's CPUs and memory.
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
# Heterogeneous jobs (exact allocations with different GPU counts per node)
# are started only by the backfill scheduler: run it every second, not 30 s.
SchedulerParameters=bf_interval=1
# No accounting daemon: finished jobs are recorded by jobcomp/filetxt.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$d/log/jobcomp.txt
# A node set DOWN or DRAIN returns only when resumed (scontrol update
# state=resume); a DOWN node that registers with a valid config returns too.
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=300
MailProg=/bin/true
Waittime=0
$power_lines
$node_lines
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF

  cat >"$d/slurm.env" <<EOF
# Source this file to use the local Slurm under $d.
export SLURM_CONF=$d/slurm.conf
EOF

  start_ctld "$d" || start_failed "$d"
  wait_ctld "$d" "$timeout" || start_failed "$d"
  for ((i = 1; i <= nodes - powered_down; i++)); do
    slurmd -f "$d/slurm.conf" -N "n$i" \
      || { log_tails "$d"; start_failed "$d"; }
  done
  wait_idle "$d" "$((nodes - powered_down))" "$timeout" || start_failed "$d"
  echo "local-slurm: $((nodes - powered_down)) nodes idle, $powered_down powered down; controller on port $port_base; source $d/slurm.env"
}

# Stops slurmctld (SIGTERM: it saves its state first; with --crash SIGKILL,
# as a crash: changes of the last ~5 s are lost) and starts it again without
# -c, so it recovers its jobs from StateSaveLocation. Waits until it answers
# and every node has registered again (no node left in state UNKNOWN).
cmd_restart_ctld() {
  local d pid sig=TERM deadline
  d=$(cd "$1" && pwd -P) || die "$1 does not exist"
  shift
  while (($#)); do
    case $1 in
      --crash) sig=KILL; shift ;;
      *) die "unknown option '$1'" ;;
    esac
  done
  [[ -f $d/slurm.conf ]] || die "$d has no slurm.conf"
  pid=$(live_pid "$d/run/slurmctld.pid")
  if [[ -n $pid ]]; then
    kill -"$sig" "$pid"
    wait_exit "$pid"
  fi
  start_ctld "$d" || die "restart failed"
  wait_ctld "$d" 60 || die "restart failed"
  deadline=$((SECONDS + 60))
  while SLURM_CONF=$d/slurm.conf sinfo -h -N -o '%T' 2>/dev/null | grep -q '^unknown'; do
    if ((SECONDS >= deadline)); then
      log_tails "$d"
      die "nodes still UNKNOWN 60 s after the restart"
    fi
    sleep 0.2
  done
  echo "local-slurm: slurmctld restarted (after SIG$sig)"
}

(($# >= 2)) || usage
cmd=$1 dir=$2
shift 2
case $cmd in
  start) cmd_start "$dir" "$@" ;;
  stop) cmd_stop "$dir" ;;
  status) cmd_status "$dir" ;;
  restart-ctld) cmd_restart_ctld "$dir" "$@" ;;
  *) usage ;;
esac
