#!/usr/bin/env bash
# Configures and builds tessel into build/ (binary: build/tessel).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_TYPE="${BUILD_TYPE:-Release}"
cmake -S . -B build -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DTESSEL_BUILD_TESTS=ON -DTESSEL_BUILD_BENCH=ON >/dev/null
cmake --build build -j"${JOBS:-$(nproc)}"
