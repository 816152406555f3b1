#!/usr/bin/env bash
# `tessel serve --autoscale` on a real local Slurm with power saving
# (scripts/local-slurm.sh --powered-down: n2-n4 start powered down; Slurm's
# ResumeProgram and SuspendProgram start and stop their slurmd):
#   1. a burst of elastic jobs on the one powered node makes Pollux's
#      utility rise: tessel powers nodes up (scontrol update
#      State=POWER_UP), they join and the jobs spread onto them;
#   2. every job completes, none is lost or run twice;
#   3. idle, the cluster shrinks: tessel powers the empty nodes down again
#      (State=POWER_DOWN) until one node is left.
# Usage: tests/integration/autoscale_test.sh [BUILD_DIR]. Needs root, Slurm,
# munge and Debian's python3-torch (scripts/install-deps.sh). Exit 0: passed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
T=$BUILD/tessel
WORK=$(mktemp -d /tmp/tessel-autoscale-test.XXXXXX)
chmod 755 "$WORK"  # munged needs every directory above its socket searchable
PORT=$((20000 + RANDOM % 2000))
export TESSEL_SERVER=http://127.0.0.1:$PORT
DAEMON_PID=
PASSED=0

# log, fail, wait_for
source "$ROOT/tests/integration/lib.sh"
cleanup() {
  [[ -n "$DAEMON_PID" ]] && kill "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null || true
  "$ROOT/scripts/local-slurm.sh" stop "$WORK/slurm" >/dev/null 2>&1 || true
  if [[ $PASSED == 1 ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
fail_extra() { sinfo -N -o '%N %T' || true; grep autoscale "$WORK/daemon.log" | tail -20 || true; }

log "starting a local Slurm in $WORK/slurm: n1 up, n2-n4 powered down"
"$ROOT/scripts/local-slurm.sh" start "$WORK/slurm" --nodes 4 --powered-down 3 >"$WORK/slurm-start.log" 2>&1 ||
  { cat "$WORK/slurm-start.log"; fail "local Slurm did not start"; }
# shellcheck disable=SC1091
source "$WORK/slurm/slurm.env"
printf 'alice-token-0123456789abcdef alice\n' >"$WORK/tokens"
chmod 600 "$WORK/tokens"
export TESSEL_TOKEN=alice-token-0123456789abcdef

# Pollux (blind to GPU types) on both types; 5 s rounds and a 6-round window
# (a new job is profiled before its first placement) so that the test sees
# both directions within minutes.
"$T" serve --policy pollux --autoscale 1:4 --autoscale-window 6 --tokens "$WORK/tokens" --state-dir "$WORK/state" \
  --listen 127.0.0.1:$PORT --poll 0.5 --round 5 --stop-timeout 60 --checkpoint-interval 5 \
  --rendezvous-addr 127.0.0.1 --gpu-map a100=a100-80g,v100=a100-80g >>"$WORK/daemon.log" 2>&1 &
DAEMON_PID=$!
wait_for 30 "the daemon's /healthz" curl -sf "$TESSEL_SERVER/healthz"
powered() { sinfo -h -N -o '%N %T' | awk '$2 !~ /[~%#]$/ && $2 !~ /down/ {n++} END {print n + 0}'; }
[[ $(powered) == 1 ]] || fail "expected one powered node at the start, sinfo says $(powered)"

# --- 1. a burst grows the cluster ---------------------------------------------------
log "1. a burst of four elastic jobs"
mkdir -p "$WORK/specs"
IDS=()
for i in 1 2 3 4; do
  sed -e "s|\.\./train.py|$ROOT/examples/train.py|" -e "s/^name: .*/name: burst-$i/" \
    -e 's/^iterations: .*/iterations: 120/' -e 's/^gpus: .*/gpus: 1/' \
    "$ROOT/examples/jobs/elastic-1to4.yaml" >"$WORK/specs/burst-$i.yaml"
  IDS+=("$("$T" submit "$WORK/specs/burst-$i.yaml")")
done
log "submitted ${IDS[*]}"
grown() { (($(powered) >= 2)); }
wait_for 240 "a node powered up and joined" grown
grep -q "autoscale: powering up n" "$WORK/daemon.log" || fail "the daemon did not say it powered a node up"
MOST=$(powered)
log "powered nodes: $MOST"
# A job runs on a node that was powered down at the start.
on_new_node() {
  local j
  for j in "${IDS[@]}"; do
    "$T" job "$j" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if any(n != "n1" for n in d.get("nodes") or []) else 1)' && return 0
  done
  return 1
}
wait_for 300 "a job running on a node powered up for it" on_new_node

# --- 2. every job completes -------------------------------------------------------
log "2. every job completes"
state_of() { "$T" job "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
all_done() {
  local j
  for j in "${IDS[@]}"; do [[ $(state_of "$j") == completed ]] || return 1; done
}
wait_for 900 "every burst job completed" all_done
check_nothing_left

# --- 3. idle, the cluster shrinks -------------------------------------------------
log "3. idle: the empty nodes are powered down"
shrunk() { [[ $(sinfo -h -N -o '%N %T' | awk '$2 ~ /~$/ {n++} END {print n + 0}') == 3 ]]; }
wait_for 180 "three nodes powered down again" shrunk
grep -q "autoscale: powering down n" "$WORK/daemon.log" || fail "the daemon did not say it powered a node down"
kill "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=
log "PASS (grew to $MOST nodes, back to 1)"
PASSED=1
