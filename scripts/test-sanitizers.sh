#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (with
# float-cast-overflow; every finding fails), then every fuzz target for
# FUZZ_SECONDS each (default 20) over its seeds and saved regressions.
# One clang build serves both: build-fuzz/ (TESSEL_FUZZ=ON). Leaves out the
# tests that need Slurm or Python (integration.*, examples.*, data.*), and the
# whole-command checks (docs.*: every documented command; browser.*: the
# dashboard and report in chromium), which run in the ordinary build
# (scripts/test.sh): under ASan they re-run what the unit tests cover and took
# about 10 of CI's minutes. The libraries (the code under
# test, and the tessel binary the CLI tests run) are instrumented; the test
# files themselves are not, which cuts their compile time (two sampled test
# files: 18.0 -> 7.7 s and 11.1 -> 8.2 s).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
BUILD="${FUZZ_BUILD_DIR:-$(pwd)/build-fuzz}"
cmake -S . -B "$BUILD" -DCMAKE_CXX_COMPILER=clang++ -DTESSEL_FUZZ=ON -DTESSEL_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -gline-tables-only" >/dev/null
cmake --build "$BUILD" -j"${JOBS:-$(nproc)}" --target tessel tessel_tests >/dev/null
export TESSEL_DATA="${TESSEL_DATA:-$(cd .. && pwd)/shared/data}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
echo "== test suite under ASan + UBSan"
(cd "$BUILD" && ctest --output-on-failure -j"${JOBS:-$(nproc)}" -E '^(integration|examples|data|python|docs|browser)\.')
echo "== fuzz targets, ${FUZZ_SECONDS:-20} s each"
# A fixed libFuzzer seed: a run here repeats the same mutations, so a test
# run fails on a finding only when the code changed, not by luck; longer
# campaigns (scripts/fuzz.sh 600) draw new seeds.
FUZZ_BUILD_DIR="$BUILD" FUZZ_JOBS="${FUZZ_JOBS:-$(nproc)}" FUZZ_SEED="${FUZZ_SEED:-1}" ./scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
