#!/usr/bin/env bash
# Reproduces docs/deadlines-and-settings.md's tables for deadlines, the Arena artifact's setting
# and decision overheads (issue 15): the deadline-aware policies on the
# three Arena traces (measured truth), `compare --setting arena-artifact`
# beside the default setting on Venus and PAI, and every policy's decision
# times on the Philly trace. Needs the shared data (TESSEL_DATA or
# ../shared/data). About 5 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
DATA="${TESSEL_DATA:-$(pwd)/../shared/data}"
T="build/tessel"
DDL=fcfs,gavel,elasticflow,elasticflow:admission=false,sia,arena,arena-ddl
for t in philly venus pai; do
  trace="$DATA/arena/traces/simulate_trace_$t.csv"
  echo "== deadlines: $t on arena-1280 (--truth arena-db)"
  $T compare --cluster arena-1280 --trace "$trace" --truth arena-db --policies "$DDL" --no-progress
done
for t in venus pai; do
  trace="$DATA/arena/traces/simulate_trace_$t.csv"
  echo "== deadlines: $t on arena-1280 (--truth arena-db, iterations as written)"
  $T compare --cluster arena-1280 --trace "$trace" --truth arena-db --arena-iteration-divisor 1 --policies "$DDL" \
    --no-progress
done
ART=fcfs,gavel,elasticflow,elasticflow:admission=false,sia,arena,arena-ddl
echo "== philly: --setting arena-artifact (sia left out: 50 s here)"
$T compare --cluster arena-1280 --trace "$DATA/arena/traces/simulate_trace_philly.csv" --setting arena-artifact \
  --policies fcfs,gavel,elasticflow,elasticflow:admission=false,arena,arena-ddl --no-progress
for t in venus pai; do
  trace="$DATA/arena/traces/simulate_trace_$t.csv"
  echo "== $t: --setting arena-artifact"
  $T compare --cluster arena-1280 --trace "$trace" --setting arena-artifact --policies "$ART" --no-progress
  echo "== $t: the default setting with the same truth"
  $T compare --cluster arena-1280 --trace "$trace" --truth arena-db --policies "$ART" --no-progress
done
echo "== decision times on Philly (--truth arena-db --horizon 600000s), every policy"
ALL=$($T policies | awk 'NR > 2 {print $1}' | paste -sd, -)
$T compare --cluster arena-1280 --trace "$DATA/arena/traces/simulate_trace_philly.csv" --truth arena-db \
  --horizon 600000s --policies "$ALL" --no-progress --json |
  python3 -c '
import json, sys
print("%-20s %9s %8s %8s %8s %7s" % ("policy", "decisions", "p50 ms", "p99 ms", "max ms", "wall s"))
for s in json.load(sys.stdin):
    print("%-20s %9d %8.3f %8.3f %8.2f %7.2f" % (s["policy"], s["decisions"], s["decision_p50_ms"],
          s["decision_p99_ms"], s["decision_max_ms"], s["sim_wall_time_s"]))'
