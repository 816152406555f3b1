#!/usr/bin/env bash
# Reproduces the goodput tables of docs/goodput.md: the
# eight Pollux workloads on pollux-64 and the Sia workloads on sia-64, each
# workload simulated on its own, average JCT per workload and the mean.
# Needs the shared data (TESSEL_DATA or ../shared/data). About 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh >/dev/null
DATA="${TESSEL_DATA:-$(pwd)/../shared/data}"
echo "== Pollux workloads on pollux-64 =="
build/tessel compare --cluster pollux-64 --trace "$DATA/pollux/workloads" --each \
  --policies "pollux,optimus,tiresias:queues=2:threshold=57600:rounds_only=true,tiresias:queues=2:threshold=57600,tiresias"
for trace in philly saturn; do
  echo "== Sia workloads ($trace) on sia-64 =="
  build/tessel compare --cluster sia-64 --trace "$DATA/sia/workloads/$trace" --each \
    --policies sia,pollux,gavel,tiresias
done
