#!/usr/bin/env bash
# `tessel sweep --slurm` on a local Slurm (CTest integration.sweep): the grid runs as one
# job array, its table equals the same sweep run locally byte for byte, a re-run after a
# lost result submits only the task that had it, and a task that fails is reported with
# the cells left to run. Starts and stops its own Slurm (scripts/local-slurm.sh).
#
#   tests/integration/sweep_slurm_test.sh [build/tessel]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=${1:-$ROOT/build/tessel}
WORK=$(mktemp -d /tmp/tessel-sweep-test.XXXXXX)
chmod 755 "$WORK"  # munged wants every directory above its socket searchable
# shellcheck source=tests/integration/lib.sh
source "$ROOT/tests/integration/lib.sh"
cleanup() { "$ROOT/scripts/local-slurm.sh" stop "$WORK/slurm" >/dev/null 2>&1 || true; }
trap cleanup EXIT
fail_extra() { for f in "$WORK"/*.log "$WORK"/slurm-run/logs/*.out; do [[ -f $f ]] && { echo "--- $f"; tail -n 20 "$f"; }; done; }

"$ROOT/scripts/local-slurm.sh" start "$WORK/slurm" --nodes 2 >"$WORK/slurm-start.log" 2>&1 || fail "the local Slurm did not start"
# shellcheck disable=SC1091
source "$WORK/slurm/slurm.env"

log "the sweep locally (reference)"
"$T" sweep "$ROOT/examples/sweep.yaml" --out "$WORK/local-run" --workers 2 >"$WORK/local.txt" 2>"$WORK/local.log" ||
  fail "the local sweep failed"

log "the same sweep as a Slurm job array, 4 cells per task"
"$T" sweep "$ROOT/examples/sweep.yaml" --out "$WORK/slurm-run" --slurm --cells-per-task 4 >"$WORK/slurm.txt" 2>"$WORK/slurm.log" ||
  fail "the Slurm sweep failed"
grep -q "submitting 5 Slurm array task(s) of 4 cell(s) each" "$WORK/slurm.log" || fail "expected 5 array tasks (18 cells, 4 per task)"
[[ $(ls "$WORK/slurm-run/logs" | wc -l) -eq 5 ]] || fail "expected one log per array task"
cmp "$WORK/local-run/table.csv" "$WORK/slurm-run/table.csv" || fail "table.csv differs between the local and the Slurm run"
cmp "$WORK/local-run/table.json" "$WORK/slurm-run/table.json" || fail "table.json differs"
cmp "$WORK/local.txt" "$WORK/slurm.txt" || fail "the printed tables differ"
diff -r "$WORK/local-run/cells" "$WORK/slurm-run/cells" >/dev/null || fail "the cells' results differ"

log "a lost result: the re-run submits only its task"
lost=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cells'][9]['id'])" "$WORK/slurm-run/sweep.json")
rm "$WORK/slurm-run/cells/$lost.json"
"$T" sweep "$ROOT/examples/sweep.yaml" --out "$WORK/slurm-run" --slurm --cells-per-task 4 >"$WORK/slurm2.txt" 2>"$WORK/slurm2.log" ||
  fail "the resumed Slurm sweep failed"
grep -q "17 done before" "$WORK/slurm2.log" || fail "the re-run did not see 17 cells done"
grep -q "submitting 1 Slurm array task(s)" "$WORK/slurm2.log" || fail "the re-run should submit task 2 alone"
grep -q "cell $lost: " "$WORK/slurm-run/logs/task-2.out" || fail "task 2 did not run the lost cell"
grep -q "done before" "$WORK/slurm-run/logs/task-2.out" || fail "task 2 re-ran cells that had results"
cmp "$WORK/local-run/table.csv" "$WORK/slurm-run/table.csv" || fail "the resumed table differs"

log "a task that fails: the sweep says which cells are left"
cat >"$WORK/broken.yaml" <<YAML
name: broken
policies: [fcfs]
traces: [$WORK/trace.csv]
seeds: 2
YAML
"$T" gen-trace --jobs 20 --out "$WORK/trace.csv"
"$T" sweep "$WORK/broken.yaml" --out "$WORK/broken" --workers 1 --json >/dev/null 2>"$WORK/broken0.log" || fail "the small sweep failed"
rm "$WORK/broken/cells/"*.json
echo "job_id,submit_s" >"$WORK/trace.csv"  # the trace breaks after planning
if "$T" sweep "$WORK/broken.yaml" --out "$WORK/broken" --slurm >"$WORK/broken.txt" 2>"$WORK/broken.log"; then
  fail "a sweep whose tasks failed exited 0"
fi
grep -q "2 of 2 cells have no result" "$WORK/broken.log" || fail "the failure does not say which cells are left"
queue_empty() { [[ -z $(squeue -h -o %i) ]]; }
wait_for 30 "the queue to empty" queue_empty
cleanup  # stop the local Slurm while its directory (pid files) still exists
rm -rf "$WORK"
log "PASS"
