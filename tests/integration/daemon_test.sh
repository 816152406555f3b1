#!/usr/bin/env bash
# End-to-end test of `tessel serve` on a real local Slurm (scripts/local-slurm.sh:
# 4 virtual nodes, 2 typed fake GPUs each, a100 on n1-n2 and v100 on n3-n4)
# with the example training job (examples/), driven only through the CLI:
#   1. bad input is refused with clear errors and nothing is stored;
#   2. three jobs run on the GPU types and nodes the policy chose;
#   3. SIGKILL of the daemon mid-run, restart: nothing lost or duplicated,
#      running jobs adopted;
#   4. a node drained under a running job: it resumes from its checkpoint
#      elsewhere;
#   5. every job completes with its history in the store; a job that moved
#      keeps the loss curve of an uninterrupted run;
#   6. a reconfiguration changes a running job's world size (elasticflow
#      shrinks an elastic job from 4 to 2 GPUs when a node is drained) and
#      training continues from its checkpoint with the same loss curve;
#   7. a reconfiguration changes the parallel plan (arena): a job whose model
#      needs tensor parallelism on 4 a100-80g and tensor + pipeline
#      parallelism on 4 v100-32g is moved from one type to the other when a
#      node is drained, relaunches under the other (t, p) plan from its
#      resharded checkpoint, and completes with the uninterrupted loss curve.
# Usage: tests/integration/daemon_test.sh [BUILD_DIR]. Needs root, Slurm,
# munge and Debian's python3-torch (scripts/install-deps.sh). Exit 0: passed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
T=$BUILD/tessel
WORK=$(mktemp -d /tmp/tessel-daemon-test.XXXXXX)
chmod 755 "$WORK"  # munged needs every directory above its socket searchable
PORT=$((18000 + RANDOM % 2000))
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

start_daemon() {  # start_daemon [--policy P]
  "$T" serve "$@" --tokens "$WORK/tokens" --state-dir "$WORK/state" --listen 127.0.0.1:$PORT \
    --poll 0.5 --round 30 --stop-timeout 60 --checkpoint-interval 5 --rendezvous-addr 127.0.0.1 \
    --gpu-map a100=a100-80g,v100=v100-32g >>"$WORK/daemon.log" 2>&1 &
  DAEMON_PID=$!
  wait_for 30 "the daemon's /healthz" curl -sf "$TESSEL_SERVER/healthz"
}

as() { local user=$1; shift; TESSEL_TOKEN=$(awk -v u="$user" '$2 == u {print $1}' "$WORK/tokens") "$T" "$@"; }
state_of() { as alice job "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
job_field() { as alice job "$1" --json | python3 -c "import json,sys; print(json.load(sys.stdin)$2)"; }
is_state() { [[ $(state_of "$1") == "$2" ]]; }
# No tessel job ever has two Slurm jobs.
no_duplicates() {
  local dups
  dups=$(squeue -h -o '%j %T' | awk '$1 ~ /^tessel-/ && $2 != "COMPLETED" {print $1}' | sort | uniq -d)
  [[ -z "$dups" ]] || fail "two Slurm jobs for one tessel job: $dups"
}

log "starting a local Slurm in $WORK/slurm"
"$ROOT/scripts/local-slurm.sh" start "$WORK/slurm" --nodes 4 >"$WORK/slurm-start.log" 2>&1 ||
  { cat "$WORK/slurm-start.log"; fail "local Slurm did not start"; }
# shellcheck disable=SC1091
source "$WORK/slurm/slurm.env"
printf 'alice-token-0123456789abcdef alice\nbob-token-0123456789abcdef01 bob\nroot-token-0123456789abcdef0 root admin\n' \
  >"$WORK/tokens"
chmod 600 "$WORK/tokens"
start_daemon
log "daemon up on $TESSEL_SERVER"

# --- 1. bad input ------------------------------------------------------------------
log "1. bad input"
mkdir -p "$WORK/specs"
cp "$ROOT/examples/jobs/rigid-2gpu.yaml" "$WORK/specs/good.yaml"
sed -i "s|\.\./train.py|$ROOT/examples/train.py|" "$WORK/specs/good.yaml"
sed 's/^global_batch: .*/global_batch: abc/' "$WORK/specs/good.yaml" >"$WORK/specs/malformed.yaml"
sed 's/^model: .*/model: no-such-model/' "$WORK/specs/good.yaml" >"$WORK/specs/unknown-model.yaml"
sed 's|command: \[/usr/bin/python3|command: [/no/such/python|' "$WORK/specs/good.yaml" >"$WORK/specs/missing-command.yaml"
expect_refused() {  # expect_refused PATTERN COMMAND...
  local pattern=$1; shift
  local rc=0 out
  out=$("$@" 2>&1) || rc=$?
  [[ $rc == 2 ]] || fail "expected exit 2 from '$*', got $rc: $out"
  grep -q -- "$pattern" <<<"$out" || fail "expected '$pattern' in the error of '$*', got: $out"
}
expect_refused "malformed.yaml:[0-9]*: global_batch" as alice submit "$WORK/specs/malformed.yaml"
expect_refused "no-such-model" as alice submit "$WORK/specs/unknown-model.yaml"
expect_refused "/no/such/python" as alice submit "$WORK/specs/missing-command.yaml"
expect_refused "401\|token" env TESSEL_TOKEN= "$T" submit "$WORK/specs/good.yaml"
expect_refused "401\|token" env TESSEL_TOKEN=not-a-valid-token-at-all "$T" jobs
[[ $(as root jobs --all --json) == "[]" ]] || fail "a refused submission was stored: $(as root jobs --all --json)"

# --- 2. three jobs ---------------------------------------------------------------------
log "2. three jobs through the CLI"
RIGID=$(as alice submit "$ROOT/examples/jobs/rigid-2gpu.yaml")
A100=$(as alice submit "$ROOT/examples/jobs/a100-1gpu.yaml")
ELASTIC=$(as alice submit "$ROOT/examples/jobs/elastic-1to4.yaml" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
log "submitted rigid=$RIGID a100=$A100 elastic=$ELASTIC"
expect_refused "403\|another user\|permission" as bob cancel "$RIGID"
expect_refused "403\|another user\|permission" as bob job "$RIGID"
[[ $(as bob jobs --json) == "[]" ]] || fail "bob sees alice's jobs"
for j in $RIGID $A100 $ELASTIC; do wait_for 180 "job $j running" is_state "$j" running; done
no_duplicates
[[ $(job_field "$A100" '["gpu_type"]') == a100-80g ]] || fail "the a100 job runs on $(job_field "$A100" '["gpu_type"]')"
[[ $(job_field "$RIGID" '["gpus"]') == 2 ]] || fail "the rigid job holds $(job_field "$RIGID" '["gpus"]') GPUs"
as alice jobs

# --- 3. SIGKILL of the daemon -----------------------------------------------------------
log "3. SIGKILL of the daemon mid-run"
kill -9 "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=
no_duplicates
start_daemon
sleep 3
no_duplicates
for j in $RIGID $A100 $ELASTIC; do
  s=$(state_of "$j")
  [[ $s == running || $s == completed || $s == starting ]] || fail "job $j is $s after the restart"
done

# --- 4. drain a node under a running job ---------------------------------------------------
log "4. draining a node under job $RIGID"
wait_for 120 "job $RIGID running with a checkpoint" \
  grep -q '"event": *"checkpoint"' "$WORK/state/jobs/$RIGID/metrics.jsonl"
NODE=$(job_field "$RIGID" '["nodes"][0]')
scontrol update nodename="$NODE" state=drain reason=tessel-test
moved() {
  local nodes
  nodes=$(job_field "$RIGID" '["nodes"]')
  [[ $(state_of "$RIGID") == running && $nodes != *"'$NODE'"* && $nodes != "[]" ]]
}
wait_for 240 "job $RIGID running off $NODE" moved
no_duplicates
scontrol update nodename="$NODE" state=resume

# --- 5. everything completes ---------------------------------------------------------------
log "5. waiting for every job to complete"
for j in $RIGID $A100 $ELASTIC; do wait_for 600 "job $j completed" is_state "$j" completed; done
no_duplicates
for j in $RIGID $A100 $ELASTIC; do
  hist=$(as alice job "$j" --json | python3 -c 'import json,sys; print(" ".join(h["to"] for h in json.load(sys.stdin)["history"]))')
  [[ $hist == pending*running*completed ]] || fail "job $j history: $hist"
done
hist=$(as alice job "$RIGID" --json | python3 -c 'import json,sys; print(" ".join(h["to"] for h in json.load(sys.stdin)["history"]))')
[[ $hist == *reconfiguring* ]] || fail "the drained job never reconfigured: $hist"
# The moved job resumed from its checkpoint with the loss curve of an
# uninterrupted run of the same job (run here without Slurm, one process).
/usr/bin/python3 "$ROOT/tests/integration/compare_loss.py" "$WORK/state/jobs/$RIGID/metrics.jsonl" \
  || fail "the moved job's loss curve differs from an uninterrupted run"

# --- 6. a world-size change ------------------------------------------------------------------
log "6. a reconfiguration that changes the world size (policy elasticflow)"
kill "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=
start_daemon --policy elasticflow
# The scheduler's belief: a shape whose estimated step time matches what the
# command emulates (0.01 s per sample on one GPU), so that 4 GPUs are worth
# 2x of 2 to elasticflow; the tiny example shape is launch-bound in the
# estimator and would gain nothing from a fourth GPU.
sed -e 's/^name: .*/name: resize-4to2/' -e 's/^gpus: .*/gpus: 4/' -e 's/^min_gpus: .*/min_gpus: 2/' \
  -e 's/^max_gpus: .*/max_gpus: 4/' \
  -e 's/^model: .*/model: {name: tessel-example-resize, layers: 8, hidden: 640, heads: 10, seq_len: 512, vocab: 256, precision: fp32}/' \
  "$ROOT/examples/jobs/elastic-1to4.yaml" >"$WORK/specs/resize.yaml"
sed -i "s|\.\./train.py|$ROOT/examples/train.py|" "$WORK/specs/resize.yaml"
echo "gpu_types: [a100-80g]" >>"$WORK/specs/resize.yaml"
RESIZE=$(as alice submit "$WORK/specs/resize.yaml")
on_gpus() { [[ $(state_of "$RESIZE") == running && $(job_field "$RESIZE" '["gpus"]') == "$1" ]]; }
wait_for 120 "job $RESIZE running on 4 GPUs" on_gpus 4
wait_for 120 "job $RESIZE checkpointed" grep -q '"event": *"checkpoint"' "$WORK/state/jobs/$RESIZE/metrics.jsonl"
scontrol update nodename=n2 state=drain reason=tessel-test
wait_for 180 "job $RESIZE running on 2 GPUs" on_gpus 2
# n2 comes back only once the job is done: elasticflow would grow it back.
wait_for 600 "job $RESIZE completed" is_state "$RESIZE" completed
scontrol update nodename=n2 state=resume
worlds=$(grep '"event": *"start"' "$WORK/state/jobs/$RESIZE/metrics.jsonl" |
  python3 -c 'import json,sys; print(" ".join(str(json.loads(l)["world_size"]) for l in sys.stdin))')
[[ $worlds == "4 2"* ]] || fail "job $RESIZE ran at world sizes: $worlds"
/usr/bin/python3 "$ROOT/tests/integration/compare_loss.py" "$WORK/state/jobs/$RESIZE/metrics.jsonl" \
  || fail "the resized job's loss curve differs from an uninterrupted run"
no_duplicates

# --- 7. a plan change ---------------------------------------------------------------------------
log "7. a reconfiguration that changes the parallel plan (policy arena)"
kill "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=
start_daemon --policy arena
# The belief's model: 8 layers of hidden 8192 in fp32 (6.4 B parameters) fits 4 a100-80g
# data-parallel with ZeRO or with t = 2, and 4 v100-32g only with t and p > 1 (`tessel plan
# --model custom --layers 8 --hidden 8192 --heads 16 --vocab 256 --seq-len 512 --precision fp32
# --gpu v100-32g --gpus-per-node 2 --gpus 4 --global-batch 48`); the command runs the same
# layers and heads at a small hidden size, so every plan the planner picks for the model is
# one the job can run. Measured: d4 ZeRO-2 on a100, then t2 p2 v2 (12 micro-batches) on v100.
cat >"$WORK/specs/replan.yaml" <<SPEC
name: replan-tp-pp
model: {name: tessel-example-replan, layers: 8, hidden: 8192, heads: 16, seq_len: 512, vocab: 256, precision: fp32}
global_batch: 48
iterations: 60
command: [/usr/bin/python3, $ROOT/examples/train.py, --layers, "8", --hidden, "64", --heads, "16", --seq-len, "16", --vocab, "256", --sim-seconds-per-sample, "0.01"]
gpus: 4
gpu_types: [a100-80g, v100-32g]
SPEC
REPLAN=$(as alice submit "$WORK/specs/replan.yaml")
wait_for 300 "job $REPLAN running" is_state "$REPLAN" running
wait_for 180 "job $REPLAN checkpointed" grep -q '"event": *"checkpoint"' "$WORK/state/jobs/$REPLAN/metrics.jsonl"
FIRST_TYPE=$(job_field "$REPLAN" '["gpu_type"]')
NODE=$(job_field "$REPLAN" '["nodes"][0]')
scontrol update nodename="$NODE" state=drain reason=tessel-test
other_type() { [[ $(state_of "$REPLAN") == running && $(job_field "$REPLAN" '["gpu_type"]') != "$FIRST_TYPE" ]]; }
wait_for 300 "job $REPLAN running off $FIRST_TYPE" other_type
wait_for 600 "job $REPLAN completed" is_state "$REPLAN" completed
scontrol update nodename="$NODE" state=resume
plans=$(grep '"event": *"start"' "$WORK/state/jobs/$REPLAN/metrics.jsonl" |
  python3 -c 'import json,sys; print(" ".join("t%dp%d" % (json.loads(l)["tp"], json.loads(l)["pp"]) for l in sys.stdin))')
log "job $REPLAN ran under the plans: $plans"
distinct=$(tr ' ' '\n' <<<"$plans" | sort -u | wc -l)
[[ $distinct -ge 2 ]] || fail "job $REPLAN never changed its (t, p) plan: $plans"
[[ $plans == *t2* || $plans == *p2* ]] || fail "job $REPLAN never ran model-parallel: $plans"
/usr/bin/python3 "$ROOT/tests/integration/compare_loss.py" "$WORK/state/jobs/$REPLAN/metrics.jsonl" \
  || fail "the re-planned job's loss curve differs from an uninterrupted run"
no_duplicates
log "PASS"
PASSED=1
