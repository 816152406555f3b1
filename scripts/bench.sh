#!/usr/bin/env bash
# Speed figures: Google Benchmark over the estimator and planner budgets.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
build/tessel_bench "$@"
