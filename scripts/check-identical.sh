#!/usr/bin/env bash
# Proves a refactor left the simulator's behaviour unchanged: runs 27
# simulations (every policy on the Arena runtime trace; arena, gavel and
# tiresias on the Arena traces; pollux, optimus and sia on their workloads;
# failures, racks with shared uplinks, an ITP cluster) with two tessel
# binaries and compares every event log and JSON summary byte for byte
# (the wall times, sim_wall_time_s and decision_*_ms, aside). Needs the shared data (TESSEL_DATA or ../shared/data).
# Usage: scripts/check-identical.sh OLD_TESSEL NEW_TESSEL   (about 40 s)
# e.g.   git worktree add /tmp/old <commit> && (cd /tmp/old && scripts/build.sh)
#        scripts/check-identical.sh /tmp/old/build/tessel build/tessel
set -uo pipefail
OLD=$1 NEW=$2
D=${TESSEL_DATA:-$(cd "$(dirname "$0")/../.." && pwd)/shared/data}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
RT=$D/arena/traces/runtime_trace.csv
runs=()
for p in fcfs srtf tiresias gandiva gavel elasticflow pollux sia optimus arena arena-no-backfill arena-full-search \
  fcfs:backfill=easy; do
  runs+=("rt-$p|--cluster arena-testbed-32 --trace $RT --arena-iteration-divisor 1 --policy $p")
done
runs+=("philly-arena|--cluster arena-1280 --trace $D/arena/traces/simulate_trace_philly.csv --policy arena"
  "philly-gavel|--cluster arena-1280 --trace $D/arena/traces/simulate_trace_philly.csv --policy gavel --truth arena-db"
  "venus-tiresias|--cluster arena-1280 --trace $D/arena/traces/simulate_trace_venus.csv --policy tiresias"
  "pollux1|--cluster pollux-64 --trace $D/pollux/workloads/workload-1.csv --policy pollux"
  "pollux1-optimus|--cluster pollux-64 --trace $D/pollux/workloads/workload-1.csv --policy optimus"
  "sia1|--cluster sia-64 --trace $D/sia/workloads/philly/workload-1.csv --policy sia"
  "demo-fail|--cluster demo --policy fcfs --node-mtbf-h 50 --seed 3"
  "demo-fail-arena|--cluster demo --policy arena --node-mtbf-h 50 --seed 3"
  "demo-gandiva|--cluster demo --policy gandiva"
  "itp1-easy|--cluster arena-1280 --trace $D/itp/cluster01.csv --policy fcfs:backfill=easy"
  "itp1-arena|--cluster arena-1280 --trace $D/itp/cluster01.csv --policy arena"
  "demo-arena|--cluster demo --policy arena"
  "demo-sia|--cluster demo --policy sia"
  "demo-gavel-fail|--cluster demo --policy gavel --node-mtbf-h 20 --seed 9")
differ=0
for r in "${runs[@]}"; do
  name=${r%%|*} args=${r#*|}
  for side in old new; do
    bin=$OLD; [[ $side == new ]] && bin=$NEW
    # shellcheck disable=SC2086
    "$bin" simulate $args --event-log "$OUT/$name.$side.log" --json 2>/dev/null | grep -v -E "sim_wall_time|decision_(p50|p99|max)_ms" >"$OUT/$name.$side.json"
  done
  for kind in log json; do
    if ! cmp -s "$OUT/$name.old.$kind" "$OUT/$name.new.$kind"; then
      echo "DIFFERS: $name ($kind)"
      differ=1
    fi
  done
done
echo "${#runs[@]} runs, $((2 * ${#runs[@]})) files compared: $([[ $differ == 0 ]] && echo identical || echo DIFFERENT)"
exit $differ
