#!/usr/bin/env bash
# Reproduces docs/contention.md's communication-contention tables (issue 13):
#  1. Wang et al.'s setting: ddl-64 (16 nodes x 4 GPUs, 10 Gb/s) and their
#     160-job mix (gen-trace --profile ddl), seeds 1-10, their contention
#     overhead (eta/beta = 0.235/0.856), no start or restart costs (their
#     simulator has none): placement rules under FCFS and SRSF, and the
#     three communication schedules (avoid, accept, AdaDUAL) under SRSF
#     with LWF-2 placement, as the paper runs them.
#  2. Their own setting (--setting ddl-paper: their shared-GPU simulator),
#     seeds 1-5 (PAPER_SEEDS): SRSF(1), SRSF(2) and Ada-SRSF with their
#     code's remaining size and with the correct one, under LWF-2; and
#     first-fit against LWF-kappa under Ada-SRSF, both ways.
#  3. The Arena traces on arena-1280-2to1 (racks of 16 nodes, 2:1 uplinks):
#     the policies with and without the network model, and arena with and
#     without the model in its belief.
# Prints mean and standard deviation over seeds of average JCT. About
# 20 s for part 1 and 40 s for part 2 (its 60 runs took 36.5 s here) on this 2-core machine; part 3
# (ARENA=1) adds 45 simulations of the Arena traces.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
DATA="${TESSEL_DATA:-$(pwd)/../shared/data}"
T=build/tessel
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SEEDS="${SEEDS:-1 2 3 4 5 6 7 8 9 10}"
COMMON=(--cluster ddl-64 --restart-overhead 0 --start-overhead 0 --contention-overhead 0.2745 --no-progress --json)

# avg_jct_s of every run in $tmp/$1.* -> "mean sd" in seconds.
stats() {
  python3 - "$tmp" "$1" <<'PY'
import glob, json, statistics, sys
v = [json.load(open(f))["avg_jct_s"] for f in sorted(glob.glob(f"{sys.argv[1]}/{sys.argv[2]}.*.json"))]
print(f"{statistics.mean(v):8.2f} {statistics.stdev(v) if len(v) > 1 else 0:6.2f} {len(v)}")
PY
}

for s in $SEEDS; do $T gen-trace --profile ddl --seed "$s" --out "$tmp/ddl.$s.csv" >/dev/null; done

echo "== ddl-64, average JCT in seconds (mean, sd, runs): placement rules"
printf "%-14s %-26s %8s %6s %s\n" policy placement mean sd runs
for policy in fcfs srsf-accept; do
  for placement in first-fit consolidate lwf-kappa:kappa=1 lwf-kappa:kappa=2 lwf-kappa:kappa=4; do
    key="p.${policy}.${placement//[:=]/_}"
    for s in $SEEDS; do
      $T simulate "${COMMON[@]}" --trace "$tmp/ddl.$s.csv" --seed "$s" --policy "$policy" --placement "$placement" \
        >"$tmp/$key.$s.json" 2>/dev/null
    done
    printf "%-14s %-26s %s\n" "$policy" "$placement" "$(stats "$key")"
  done
done

echo "== ddl-64, average JCT in seconds: communication schedules (SRSF order, LWF-2 placement)"
printf "%-14s %8s %6s %s\n" policy mean sd runs
for policy in srsf-avoid srsf-accept ada-srsf fcfs; do
  key="c.$policy"
  for s in $SEEDS; do
    $T simulate "${COMMON[@]}" --trace "$tmp/ddl.$s.csv" --seed "$s" --policy "$policy" --placement lwf-kappa:kappa=2 \
      >"$tmp/$key.$s.json" 2>/dev/null
  done
  printf "%-14s %s\n" "$policy" "$(stats "$key")"
done

PAPER_SEEDS="${PAPER_SEEDS:-1 2 3 4 5}"
for s in $PAPER_SEEDS; do
  [ -f "$tmp/ddl.$s.csv" ] || $T gen-trace --profile ddl --seed "$s" --out "$tmp/ddl.$s.csv" >/dev/null
done
# One row: policy, placement, mean sd runs, then each seed's average JCT.
paper_row() {
  local policy="$1" placement="$2" key="d.${1//[:=]/_}.${2//[:=]/_}"
  for s in $PAPER_SEEDS; do
    $T simulate --setting ddl-paper --cluster ddl-64 --trace "$tmp/ddl.$s.csv" --seed "$s" --policy "$policy" \
      --placement "$placement" --no-progress --json >"$tmp/$key.$s.json"
  done
  local each
  each=$(for s in $PAPER_SEEDS; do python3 -c "import json,sys; print('%.2f' % json.load(open(sys.argv[1]))['avg_jct_s'])" "$tmp/$key.$s.json"; done | tr '\n' ' ')
  printf "%-30s %-18s %s   %s\n" "$policy" "$placement" "$(stats "$key")" "$each"
}
echo "== ddl-paper (their shared-GPU simulator), average JCT in seconds: communication schedules under LWF-2"
printf "%-30s %-18s %8s %6s %s   %s\n" policy placement mean sd runs "per seed"
for policy in srsf-avoid srsf-accept ada-srsf:paper_rest_size=true ada-srsf; do
  paper_row "$policy" lwf-kappa:kappa=2
done
echo "== ddl-paper: placement under Ada-SRSF (kappa: their threshold on a job's GPUs)"
printf "%-30s %-18s %8s %6s %s   %s\n" policy placement mean sd runs "per seed"
for policy in ada-srsf:paper_rest_size=true ada-srsf; do
  for placement in first-fit lwf-kappa:kappa=1 lwf-kappa:kappa=2 lwf-kappa:kappa=4; do
    paper_row "$policy" "$placement"
  done
done

if [ "${ARENA:-0}" = 1 ]; then
  for t in philly venus pai; do
    trace="$DATA/arena/traces/simulate_trace_$t.csv"
    echo "== $t on arena-1280-2to1: network model on"
    $T compare --cluster arena-1280-2to1 --trace "$trace" --no-progress \
      --policies fcfs,tiresias,gavel,elasticflow:admission=false,pollux,sia,arena,arena:network=false
    echo "== $t on arena-1280-2to1: network model off (every job at its rate alone)"
    $T compare --cluster arena-1280-2to1 --trace "$trace" --no-progress --network off \
      --policies fcfs,tiresias,gavel,elasticflow:admission=false,pollux,sia,arena
  done
fi
