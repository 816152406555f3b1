#!/usr/bin/env bash
# Measures the daemon's API as docs/daemon.md reports it: starts a local Slurm
# (scripts/local-slurm.sh, 4 nodes) and `tessel serve --policy fcfs` on it,
# runs `tessel loadtest` with the arguments given against it (a tiny job: a
# 5-second /bin/sleep on one GPU, so submissions launch real Slurm jobs), then
# stops both and removes everything it made.
#
#   scripts/loadtest-local.sh [loadtest options...]
#   scripts/loadtest-local.sh --submissions 1000 --queries 20000 --lists 4000 --concurrency 8 --cancel
#   scripts/loadtest-local.sh --duration 600 --drain-node n3 --concurrency 4
#
# TESSEL_BIN names the tessel binary (default build/tessel); PORT the API's
# port (default 8777). The load generator runs on the same machine as the
# daemon, so its own threads share the cores: figures are for the pair.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=${TESSEL_BIN:-$ROOT/build/tessel}
PORT=${PORT:-8777}
[[ -x $T ]] || { echo "error: no tessel binary at $T (build first: scripts/build.sh, or set TESSEL_BIN)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/tessel-loadtest.XXXXXX)
chmod 755 "$WORK"  # munged wants every directory above its socket searchable
DAEMON_PID=
cleanup() {
  if [[ -n $DAEMON_PID ]]; then kill "$DAEMON_PID" 2>/dev/null || true; wait "$DAEMON_PID" 2>/dev/null || true; fi
  "$ROOT/scripts/local-slurm.sh" stop "$WORK/slurm" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$ROOT/scripts/local-slurm.sh" start "$WORK/slurm" --nodes 4 >"$WORK/slurm-start.log" 2>&1 ||
  { cat "$WORK/slurm-start.log" >&2; echo "error: the local Slurm did not start" >&2; exit 1; }
# shellcheck disable=SC1091
source "$WORK/slurm/slurm.env"
TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s loadtest admin\n' "$TOKEN" >"$WORK/tokens"
chmod 600 "$WORK/tokens"
cat >"$WORK/tiny.yaml" <<'SPEC'
name: loadtest-tiny
model: {name: tessel-example-tiny, layers: 2, hidden: 64, heads: 4, seq_len: 32, vocab: 256, precision: fp32}
global_batch: 16
iterations: 150
command: [/bin/sleep, "5"]
gpus: 1
gpu_types: [a100-80g]
elastic: false
SPEC
"$T" serve --policy fcfs --tokens "$WORK/tokens" --state-dir "$WORK/state" --listen "127.0.0.1:$PORT" \
  --poll 0.5 --round 30 --gpu-map a100=a100-80g,v100=v100-32g >"$WORK/daemon.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 60); do
  curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
  kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$WORK/daemon.log" >&2; echo "error: the daemon exited" >&2; exit 1; }
  sleep 0.5
done
TESSEL_TOKEN=$TOKEN "$T" loadtest --server "http://127.0.0.1:$PORT" --spec "$WORK/tiny.yaml" "$@"
