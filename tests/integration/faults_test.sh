#!/usr/bin/env bash
# The daemon under faults, on a real local Slurm (scripts/local-slurm.sh: 4
# virtual nodes, 2 typed fake GPUs each): `tessel serve` (policy arena, so
# jobs are profiled first) is killed at exact points through fault points
# (TESSEL_FAULT_POINT=NAME, src/core/fault_point.h) and by SIGKILL in job
# states, and restarted each time. Cases, each named after its fault:
#   profiling             SIGKILL while jobs profile (the issue's reproduction)
#   profile.before-sbatch the intent stored, the profiling run not submitted
#   profile.after-sbatch  the run submitted, its Slurm id not stored
#   launch.before-sbatch  a launch's intent stored, not submitted
#   launch.after-sbatch   a launch submitted, its Slurm id not stored
#   reconfigure.after-signal  a running job asked to stop (node drained), not yet exited
#   complete.before-store a job finished, its completion not stored
#   twice                 SIGKILL twice in a row, during recovery
# Throughout, a sampler checks squeue twice a second: never two Slurm jobs
# with one name (each run of tessel has its own: tessel-<id> for a job's
# launch, tessel-<id>-profile-<type>-<stages> for a profiling run). At the
# end: every job completed exactly once, no Slurm job of tessel's left, the
# store's PRAGMA integrity_check ok, each job's loss curve that of an
# uninterrupted run. Usage: tests/integration/faults_test.sh [BUILD_DIR].
# Needs root, Slurm, munge and Debian's python3-torch. Exit 0: passed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
T=$BUILD/tessel
WORK=$(mktemp -d /tmp/tessel-faults-test.XXXXXX)
chmod 755 "$WORK"
PORT=$((20000 + RANDOM % 2000))
export TESSEL_SERVER=http://127.0.0.1:$PORT
DAEMON_PID=
SAMPLER_PID=
PASSED=0

# log, fail, wait_for
source "$ROOT/tests/integration/lib.sh"
cleanup() {
  [[ -n "$SAMPLER_PID" ]] && kill "$SAMPLER_PID" 2>/dev/null || true
  [[ -n "$DAEMON_PID" ]] && kill -9 "$DAEMON_PID" 2>/dev/null || true
  "$ROOT/scripts/local-slurm.sh" stop "$WORK/slurm" >/dev/null 2>&1 || true
  if [[ $PASSED == 1 ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

# start_daemon [FAULT_POINT]: the daemon, with the fault point armed if given.
start_daemon() {
  local fault=${1:-}
  echo "=== start (fault point: ${fault:-none})" >>"$WORK/daemon.log"
  env ${fault:+TESSEL_FAULT_POINT=$fault} "$T" serve --policy arena --tokens "$WORK/tokens" \
    --state-dir "$WORK/state" --listen 127.0.0.1:$PORT --poll 0.5 --round 5 --stop-timeout 60 \
    --checkpoint-interval 3 --rendezvous-addr 127.0.0.1 --gpu-map a100=a100-80g,v100=v100-32g \
    >>"$WORK/daemon.log" 2>&1 &
  DAEMON_PID=$!
}
healthy() { curl -sf "$TESSEL_SERVER/healthz"; }
dead() { ! kill -0 "$DAEMON_PID" 2>/dev/null; }
healthy_or_dead() { healthy || dead; }
running_or_dead() { dead || is_state "$1" running; }
kill_daemon() { kill -9 "$DAEMON_PID" 2>/dev/null || true; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=; }
# expect_fault NAME: the armed daemon dies at that point, by SIGKILL.
expect_fault() {
  local rc=0
  wait_for 180 "the daemon to die at fault point $1" dead
  wait "$DAEMON_PID" 2>/dev/null || rc=$?
  DAEMON_PID=
  [[ $rc == 137 ]] || fail "fault point $1: the daemon exited with $rc, not by SIGKILL"
  grep -q "fault point $1 reached" "$WORK/daemon.log" || fail "fault point $1 was not the cause"
  log "  died at $1"
}

as() { TESSEL_TOKEN=alice-token-0123456789abcdef "$T" "$@"; }
state_of() { as job "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
is_state() { [[ $(state_of "$1") == "$2" ]]; }
any_state() {  # any_state STATE: some job of ours is in it
  as jobs --json | python3 -c "import json,sys; sys.exit(0 if any(j['state'] == '$1' for j in json.load(sys.stdin)) else 1)"
}

# submit NAME [STEPS]: a 1-GPU job (40 steps: about 7 s of training) of a model of its own
# name, so that arena profiles it (stored profiles are per model); prints its id.
submit() {
  sed -e "s/^name: .*/name: $1/" -e "s/^iterations: .*/iterations: ${2:-40}/" \
    -e "s/name: tessel-example-tiny,/name: tessel-faults-$1,/" -e '/^gpu_types:/d' \
    -e "s|command: \[/usr/bin/python3, train.py|command: [/usr/bin/python3, $ROOT/examples/train.py|" \
    -e '/^workdir:/d' "$ROOT/examples/jobs/a100-1gpu.yaml" >"$WORK/$1.yaml"
  as submit "$WORK/$1.yaml"
}

log "starting a local Slurm in $WORK/slurm"
"$ROOT/scripts/local-slurm.sh" start "$WORK/slurm" --nodes 4 >"$WORK/slurm-start.log" 2>&1 ||
  { cat "$WORK/slurm-start.log"; fail "local Slurm did not start"; }
# shellcheck disable=SC1091
source "$WORK/slurm/slurm.env"
printf 'alice-token-0123456789abcdef alice\n' >"$WORK/tokens"
chmod 600 "$WORK/tokens"

# The sampler: two Slurm jobs under one name, ever, is a failure.
(
  while true; do
    dups=$(squeue -h -o '%j %T' 2>/dev/null | awk '$1 ~ /^tessel-/ && $2 != "COMPLETED" && $2 != "CANCELLED" {print $1}' | sort | uniq -d)
    [[ -z "$dups" ]] || echo "$(date +%T) $dups" >>"$WORK/duplicates"
    sleep 0.5
  done
) &
SAMPLER_PID=$!

JOBS=()
# --- profiling: SIGKILL while jobs profile ---------------------------------------------
log "profiling: SIGKILL while jobs profile"
start_daemon
wait_for 30 "the daemon's /healthz" healthy
for n in 1 2 3; do JOBS+=("$(submit prof-$n)"); done
wait_for 120 "a job profiling" any_state profiling
kill_daemon
start_daemon
wait_for 30 "the daemon's /healthz after the restart" healthy

# --- each fault point around a submission ------------------------------------------------
for point in profile.before-sbatch profile.after-sbatch launch.before-sbatch launch.after-sbatch; do
  log "$point"
  kill_daemon
  start_daemon "$point"
  # Another job's work may reach the point first (even during recovery):
  # the submission is then refused or never answered, which is fine.
  wait_for 30 "the daemon's /healthz or its death" healthy_or_dead
  if ! dead; then
    if id=$(submit "${point//./-}" 2>/dev/null); then JOBS+=("$id"); fi
  fi
  expect_fault "$point"
  start_daemon
  wait_for 30 "the daemon's /healthz after the restart" healthy
done

# --- reconfigure.after-signal: a running job asked to stop, not yet exited ----------------------
log "reconfigure.after-signal"
RUNNING=$(submit reconfigure 200)  # long enough to be running when its node is drained
JOBS+=("$RUNNING")
wait_for 240 "job $RUNNING running" is_state "$RUNNING" running
kill_daemon
start_daemon reconfigure.after-signal
# The policy may move another job first (arena re-plans when earlier cases'
# jobs end): the daemon then dies at the same point before the drain, and
# the case is exercised just the same.
NODE=
wait_for 30 "the daemon's /healthz or its death" healthy_or_dead
if ! dead; then
  wait_for 60 "job $RUNNING adopted as running, or the daemon's death" running_or_dead "$RUNNING"
fi
# (It may also die between that check and the query below.)
if ! dead; then
  NODE=$(as job "$RUNNING" --json 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"][0])' 2>/dev/null) || NODE=
fi
if [[ -n $NODE ]]; then
  scontrol update nodename="$NODE" state=drain reason=tessel-faults
else
  log "  another job was reconfigured first"
fi
expect_fault reconfigure.after-signal
start_daemon
wait_for 30 "the daemon's /healthz after the restart" healthy
if [[ -n $NODE ]]; then scontrol update nodename="$NODE" state=resume; fi

# --- complete.before-store: a job finished, its completion not stored -------------------------
log "complete.before-store"
kill_daemon
start_daemon complete.before-store
wait_for 30 "the daemon's /healthz or its death" healthy_or_dead
if ! dead; then
  if id=$(submit complete 2>/dev/null); then JOBS+=("$id"); fi  # finishes under the armed daemon
fi
expect_fault complete.before-store
start_daemon
wait_for 30 "the daemon's /healthz after the restart" healthy

# --- twice: SIGKILL twice in a row, during recovery -------------------------------------------
log "twice: SIGKILL twice in a row"
kill_daemon
start_daemon
sleep 1
kill_daemon
start_daemon
sleep 1
kill_daemon
start_daemon
wait_for 30 "the daemon's /healthz after the restarts" healthy

# --- the end: every job completed exactly once ------------------------------------------------
log "waiting for all ${#JOBS[@]} jobs to complete"
for j in "${JOBS[@]}"; do wait_for 600 "job $j completed" is_state "$j" completed; done
kill -9 "$SAMPLER_PID" 2>/dev/null || true
SAMPLER_PID=
[[ ! -s "$WORK/duplicates" ]] || fail "two Slurm jobs under one name: $(head -5 "$WORK/duplicates")"
sleep 2
check_nothing_left
for j in "${JOBS[@]}"; do
  n=$(as job "$j" --json | python3 -c 'import json,sys; print(sum(h["to"] == "completed" for h in json.load(sys.stdin)["history"]))')
  [[ $n == 1 ]] || fail "job $j completed $n times"
done
check_loss_curves "$WORK/state/jobs" "${JOBS[@]}"
kill_daemon
check_integrity "$WORK/state/tessel.db"
log "PASS"
PASSED=1
