#!/usr/bin/env bash
# The whole daemon story on one machine (as root): a local Slurm with typed
# fake GPUs (scripts/local-slurm.sh), `tessel serve`, three example jobs
# submitted through the CLI, a node drained under a running job (it
# checkpoints and resumes elsewhere), an elastic job shrunk from 4 to 2 GPUs
# by a reconfiguration, and everything completing. About 4 minutes.
# Usage: scripts/demo-daemon.sh [DIR] (default /tmp/tessel-demo; kept for reading).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-/tmp/tessel-demo}
T=$ROOT/build/tessel
[[ -x $T ]] || "$ROOT/scripts/build.sh"
mkdir -p "$DIR" && chmod 755 "$DIR"
export TESSEL_SERVER=http://127.0.0.1:18642
step() { echo; echo "== $*"; }
state() { "$T" job "$1" --json | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["state"], d["gpus"])'; }
until_state() { while [[ $(state "$1") != $2* ]]; do sleep 2; done; }
DAEMON=
cleanup() {
  [[ -n $DAEMON ]] && kill "$DAEMON" 2>/dev/null || true
  "$ROOT/scripts/local-slurm.sh" stop "$DIR/slurm" >/dev/null 2>&1 || true
}
trap cleanup EXIT

step "a local Slurm: 4 nodes, 2 a100 on n1-n2, 2 v100 on n3-n4"
"$ROOT/scripts/local-slurm.sh" start "$DIR/slurm" --nodes 4
source "$DIR/slurm/slurm.env"
printf 'demo-token-0123456789abcdef demo\n' >"$DIR/tokens" && chmod 600 "$DIR/tokens"
export TESSEL_TOKEN=demo-token-0123456789abcdef
serve() {
  "$T" serve --tokens "$DIR/tokens" --state-dir "$DIR/state" --listen 127.0.0.1:18642 --poll 0.5 \
    --checkpoint-interval 5 --rendezvous-addr 127.0.0.1 --gpu-map a100=a100-80g,v100=v100-32g "$@" \
    >>"$DIR/daemon.log" 2>&1 &
  DAEMON=$!
  until curl -sf "$TESSEL_SERVER/healthz" >/dev/null; do sleep 0.5; done
}
serve
step "tessel serve (policy arena) on $TESSEL_SERVER; log in $DIR/daemon.log"
"$T" nodes

step "three jobs"
A=$("$T" submit "$ROOT/examples/jobs/rigid-2gpu.yaml")
B=$("$T" submit "$ROOT/examples/jobs/a100-1gpu.yaml")
C=$("$T" submit "$ROOT/examples/jobs/elastic-1to4.yaml")
for j in $A $B $C; do until_state "$j" running; done
"$T" jobs

step "drain the node under job $A: it checkpoints and resumes elsewhere"
while ! grep -q '"checkpoint"' "$DIR/state/jobs/$A/metrics.jsonl" 2>/dev/null; do sleep 1; done
NODE=$("$T" job "$A" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"][0])')
scontrol update nodename="$NODE" state=drain reason=demo
sleep 5; until_state "$A" running
"$T" jobs
scontrol update nodename="$NODE" state=resume
for j in $A $B $C; do until_state "$j" completed; done
"$T" job "$A"

step "a resize: elasticflow runs an elastic job on 4 a100, a drain shrinks it to 2"
kill "$DAEMON"; wait "$DAEMON" 2>/dev/null || true
serve --policy elasticflow
# The belief: a shape as slow as the command emulates (0.01 s per sample), so
# that a fourth GPU is worth having (the tiny example shape is launch-bound).
sed -e 's/^name: .*/name: demo-resize/' -e 's/^gpus: .*/gpus: 4/' -e 's/^min_gpus: .*/min_gpus: 2/' \
  -e 's/^model: .*/model: {name: tessel-example-resize, layers: 8, hidden: 640, heads: 10, seq_len: 512, vocab: 256, precision: fp32}/' \
  -e "s|\.\./train.py|$ROOT/examples/train.py|" "$ROOT/examples/jobs/elastic-1to4.yaml" >"$DIR/resize.yaml"
echo "gpu_types: [a100-80g]" >>"$DIR/resize.yaml"
R=$("$T" submit "$DIR/resize.yaml")
until_state "$R" "running 4"
while ! grep -q '"checkpoint"' "$DIR/state/jobs/$R/metrics.jsonl" 2>/dev/null; do sleep 1; done
scontrol update nodename=n2 state=drain reason=demo
until_state "$R" "running 2"
"$T" jobs
until_state "$R" completed
scontrol update nodename=n2 state=resume  # (earlier, elasticflow would grow the job back to 4)
"$T" job "$R"
/usr/bin/python3 "$ROOT/tests/integration/compare_loss.py" "$DIR/state/jobs/$R/metrics.jsonl"
step "done; the daemon's state and the jobs' files are in $DIR/state"
