#!/usr/bin/env bash
# Speed figures: Google Benchmark over the estimator/planner budgets
# (tessel_bench), the simulator budgets (tessel_sim_bench) and the goodput
# budgets (tessel_goodput_bench); the last two need the shared data
# (TESSEL_DATA or ../shared/data).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
export TESSEL_DATA="${TESSEL_DATA:-$(pwd)/../shared/data}"
build/tessel_bench "$@"
build/tessel_sim_bench "$@"
build/tessel_goodput_bench "$@"
