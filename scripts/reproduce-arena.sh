#!/usr/bin/env bash
# Reproduces docs/arena.md's tables for tessel's own policy (arena): every
# policy on the three Arena traces on arena-1280 and on the runtime trace on
# arena-testbed-32; the same with Arena's measured times as truth; the
# ablations. Needs the shared data (TESSEL_DATA or ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
DATA="${TESSEL_DATA:-$(pwd)/../shared/data}"
# elasticflow without admission control (the Arena artifact's EF-LS): with it, it refuses most
# jobs of these traces (all have deadlines) and its JCT would cover only the admitted ones.
ALL=fcfs,tiresias,gandiva,gavel,elasticflow:admission=false,pollux,sia,arena
ABLATIONS=arena,arena-no-elastic,arena-no-hetero,arena-dp,arena-no-backfill,arena-full-search,arena:marginal=false
# The explicit mechanisms and parameters: admission search, defragmentation,
# restart penalty, profiling.
KNOBS=arena,arena:admit_jobs=0,arena:defrag_moves=0,arena:restart_penalty=1,arena:restart_penalty=2,arena:restart_penalty=6,arena:profiling=none,arena:profiling=direct
for t in philly venus pai; do
  trace="$DATA/arena/traces/simulate_trace_$t.csv"
  echo "== $t on arena-1280 (estimator truth)"
  build/tessel compare --cluster arena-1280 --trace "$trace" --policies "$ALL"
  echo "== $t on arena-1280 (--truth arena-db)"
  build/tessel compare --cluster arena-1280 --trace "$trace" --truth arena-db --policies gavel,elasticflow:admission=false,pollux,sia,arena
  echo "== $t ablations"
  build/tessel compare --cluster arena-1280 --trace "$trace" --policies "$ABLATIONS"
  echo "== $t mechanisms and parameters"
  build/tessel compare --cluster arena-1280 --trace "$trace" --policies "$KNOBS"
done
runtime="$DATA/arena/traces/runtime_trace.csv"
echo "== runtime trace on arena-testbed-32"
build/tessel compare --cluster arena-testbed-32 --trace "$runtime" --arena-iteration-divisor 1 --policies "$ALL"
echo "== runtime trace ablations"
build/tessel compare --cluster arena-testbed-32 --trace "$runtime" --arena-iteration-divisor 1 --policies "$ABLATIONS"
echo "== runtime trace mechanisms and parameters"
build/tessel compare --cluster arena-testbed-32 --trace "$runtime" --arena-iteration-divisor 1 --policies "$KNOBS"
