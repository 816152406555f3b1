# Helpers shared by the integration tests (sourced): log, fail, wait_for.
# fail prints the tail of $WORK/daemon.log and squeue, keeps $WORK and exits 1;
# a test may define fail_extra to print more first.
# shellcheck shell=bash

log() { echo "[$(date +%T)] $*"; }

fail() {
  echo "FAIL: $*" >&2
  if declare -F fail_extra >/dev/null; then fail_extra >&2 || true; fi
  echo "--- daemon log (tail)" >&2; tail -n 60 "$WORK/daemon.log" >&2 || true
  echo "--- squeue" >&2; squeue -o '%i %j %T %N %r' >&2 || true
  echo "(work directory kept: $WORK)" >&2
  exit 1
}

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every half second
# until it succeeds; fails the test after SECONDS.
wait_for() {
  local limit=$1 what=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "timed out after ${limit}s waiting for: $what"
    sleep 0.5
  done
}
