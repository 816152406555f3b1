#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite. Tests that
# need ../shared/data (or $TESSEL_DATA) skip with a message when it is absent;
# with it, the accuracy report is printed too. Then the unit tests again
# under ASan + UBSan and every fuzz target briefly (scripts/test-sanitizers.sh;
# SANITIZERS=0 skips that part).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
export TESSEL_DATA="${TESSEL_DATA:-$(cd .. && pwd)/shared/data}"
(cd build && ctest --output-on-failure -j"${JOBS:-$(nproc)}")
if [[ -d "$TESSEL_DATA" ]]; then
  echo
  build/tessel accuracy
fi
if [[ "${SANITIZERS:-1}" != 0 ]]; then
  echo
  ./scripts/test-sanitizers.sh
fi
