# Helpers shared by the integration tests (sourced): log, fail, wait_for, and the end
# checks check_nothing_left, check_loss_curves, check_integrity.
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

# wait_for_quietly SECONDS COMMAND...: as wait_for, but returns 1 at the deadline instead of
# failing the test.
wait_for_quietly() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}

# check_nothing_left: no Slurm job of tessel's is still queued or running.
check_nothing_left() {
  local left
  left=$(squeue -h -o '%j %T' | awk '$1 ~ /^tessel-/ && $2 != "COMPLETED"' || true)
  [[ -z "$left" ]] || fail "Slurm jobs of tessel's left behind: $left"
}

# check_loss_curves JOBS_DIR ID...: each job's loss curve (JOBS_DIR/ID/metrics.jsonl) equals
# an uninterrupted run's (compare_loss.py), two references at a time (one per core).
check_loss_curves() {
  local dir=$1 j p
  shift
  local pids=()
  for j in "$@"; do
    /usr/bin/python3 "$ROOT/tests/integration/compare_loss.py" "$dir/$j/metrics.jsonl" \
      >"$WORK/compare.$j.log" 2>&1 &
    pids+=("$!:$j")
    if ((${#pids[@]} == 2)); then
      for p in "${pids[@]}"; do wait "${p%%:*}" || fail "job ${p#*:}'s loss curve differs from an uninterrupted run: $(tail -2 "$WORK/compare.${p#*:}.log")"; done
      pids=()
    fi
  done
  for p in "${pids[@]}"; do wait "${p%%:*}" || fail "job ${p#*:}'s loss curve differs from an uninterrupted run: $(tail -2 "$WORK/compare.${p#*:}.log")"; done
  for j in "$@"; do echo "  job $j: $(tail -n1 "$WORK/compare.$j.log")"; done
}

# check_integrity DB: SQLite's PRAGMA integrity_check says ok.
check_integrity() {
  local ok
  ok=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])" "$1")
  [[ $ok == ok ]] || fail "PRAGMA integrity_check: $ok"
}
