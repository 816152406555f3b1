#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*_fuzz.cc, clang with ASan + UBSan)
# into build-fuzz/ and runs each for SECONDS (default 60): first over the
# saved regression inputs (fuzz/regressions/<target>/, each must pass), then
# fuzzing from the seed corpus (fuzz/seeds/<target>/, plus the first lines
# of the shared data's traces when $TESSEL_DATA or ../shared/data exists).
# Prints executions, coverage and corpus size per target; exits 1 on the
# first finding, leaving the input in build-fuzz/fuzz-artifacts/<target>/.
#
#   scripts/fuzz.sh [SECONDS]       all targets
#   TARGETS="trace model" scripts/fuzz.sh 600
#   FUZZ_JOBS=2 scripts/fuzz.sh     two targets at a time
#   FUZZ_SEED=1 scripts/fuzz.sh 20  libFuzzer's seed fixed (CI: the same
#                                   mutations each run, not a new lottery)
#
# Seeds named "<digit>-name" are for targets whose first input byte picks
# what is fuzzed; the digit becomes that byte.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-60}"
if ! [[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] || ((SECONDS_EACH < 1)); then
  echo "usage: scripts/fuzz.sh [SECONDS] (a whole number of seconds >= 1, got '$SECONDS_EACH')" >&2
  exit 2
fi
ROOT="$(pwd)"
BUILD="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
DATA="${TESSEL_DATA:-$(cd .. && pwd)/shared/data}"
ALL_TARGETS=(trace cluster model params options daemon_input slurm_output)
read -r -a TARGETS <<<"${TARGETS:-${ALL_TARGETS[*]}}"

# FUZZ_NO_BUILD=1: run the binaries already in $BUILD (e.g. copies, while
# the sources change).
if [[ "${FUZZ_NO_BUILD:-0}" != 1 ]]; then
  command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
  cmake -S . -B "$BUILD" -DCMAKE_CXX_COMPILER=clang++ -DTESSEL_FUZZ=ON -DTESSEL_BUILD_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O1 -gline-tables-only" >/dev/null
  cmake --build "$BUILD" -j"${JOBS:-$(nproc)}" --target $(printf '%s_fuzz ' "${TARGETS[@]}") >/dev/null
fi

# The seed corpus of one target, in $BUILD/fuzz-corpus/<target> (kept
# between runs: libFuzzer adds what it finds there).
prepare_corpus() {
  local t="$1" dir="$BUILD/fuzz-corpus/$1" f base
  mkdir -p "$dir"
  for f in "fuzz/seeds/$t"/*; do
    [[ -f "$f" ]] || continue
    base="$(basename "$f")"
    if [[ "$base" =~ ^([0-9])- ]]; then
      { printf "\\x0${BASH_REMATCH[1]}"; cat "$f"; } >"$dir/seed-$base"
    else
      cp "$f" "$dir/seed-$base"
    fi
  done
  if [[ "$t" == trace && -d "$DATA" ]]; then
    local choice src
    while IFS=: read -r choice src; do
      for f in $DATA/$src; do
        [[ -f "$f" ]] || continue
        { printf "\\x0$choice"; head -n 40 "$f"; } >"$dir/data-$choice-$(echo "$f" | tr '/' '_')"
      done
    done <<'EOF'
1:arena/traces/*.csv
2:pollux/workloads/workload-1.csv
2:sia/workloads/*/workload-1.csv
3:itp/cluster0[12].csv
4:pollux/philly.csv
5:alibaba-v2023/openb_pod_list_default.csv
EOF
  fi
}

run_target() {
  local t="$1" bin="$BUILD/${1}_fuzz" log="$BUILD/fuzz-logs/$1.log"
  mkdir -p "$BUILD/fuzz-logs" "$BUILD/fuzz-artifacts/$t"
  local regressions=()
  if [[ -d "fuzz/regressions/$t" ]]; then
    mapfile -t regressions < <(find "fuzz/regressions/$t" -type f | sort)
  fi
  if ((${#regressions[@]})); then
    if ! "$bin" -runs=1 "${regressions[@]}" >"$log.regressions" 2>&1; then
      echo "$t: a saved regression input fails again:" >&2
      tail -n 30 "$log.regressions" >&2
      return 1
    fi
  fi
  prepare_corpus "$t"
  local seed_args=()
  [[ -n "${FUZZ_SEED:-}" ]] && seed_args=(-seed="$FUZZ_SEED")
  if ! "$bin" "${seed_args[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$BUILD/fuzz-artifacts/$t/" "$BUILD/fuzz-corpus/$t" >"$log" 2>&1; then
    echo "$t: FINDING (input in $BUILD/fuzz-artifacts/$t/):" >&2
    grep -E "ERROR|runtime error|fuzz invariant|SUMMARY|Test unit written" "$log" | head -n 20 >&2
    return 1
  fi
  local runs cov ft corp
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || echo "?")
  ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || echo "?")
  corp=$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -n 1 | sed 's/corp: //' || echo "?")
  printf '%-13s %4ss  executions %10s  coverage %6s edges  features %6s  corpus %s  regressions %d\n' \
    "$t" "$SECONDS_EACH" "$runs" "$cov" "$ft" "$corp" "${#regressions[@]}"
}

status=0
pids=()
for t in "${TARGETS[@]}"; do
  if [[ ! -x "$BUILD/${t}_fuzz" ]]; then
    echo "fuzz.sh: unknown target '$t' (known: ${ALL_TARGETS[*]})" >&2
    exit 2
  fi
  if ((${FUZZ_JOBS:-1} > 1)); then
    run_target "$t" &
    pids+=($!)
    if ((${#pids[@]} >= FUZZ_JOBS)); then
      wait "${pids[0]}" || status=1
      pids=("${pids[@]:1}")
    fi
  else
    run_target "$t" || status=1
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
