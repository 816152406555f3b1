#!/usr/bin/env bash
# Records the Slurm outputs the unit tests of src/cluster replay (see
# README.md here). Starts a local 8-node Slurm (scripts/local-slurm.sh: n1-n4
# a100, n5-n8 v100, 2 GPUs each) in a temp dir, builds a known scene, saves
# each command's stdout (or stderr, for failures) here, and stops it.
#   src/cluster/testdata/slurm/capture.sh [--port-base P]
# Takes ~2 min: scancel retries ~95 s before it fails on a pending job.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd -P)
repo=$(cd "$here/../../../.." && pwd -P)
port_base=27860
[[ ${1:-} == --port-base ]] && port_base=$2
dir=$(mktemp -d /tmp/tessel-capture.XXXXXX)
trap '"$repo/scripts/local-slurm.sh" stop "$dir" >/dev/null; rm -rf "$dir"' EXIT
"$repo/scripts/local-slurm.sh" start "$dir" --nodes 8 --port-base "$port_base"
# shellcheck disable=SC1091
source "$dir/slurm.env"
jobs=$dir/jobs
mkdir -p "$jobs"

# Waits until squeue shows job $1 in a state matching $2.
wait_state() {
  local i
  for ((i = 0; i < 300; i++)); do
    squeue -h -t all -j "$1" -o '%T' 2>/dev/null | grep -qE "^($2)\$" && return 0
    sleep 0.1
  done
  echo "capture: job $1 never reached $2" >&2
  return 1
}

# Sends SIGTERM to the process in pid file $1 and waits until it is gone.
stop_pid() {
  local pid
  pid=$(cat "$1")
  kill -TERM "$pid"
  while [[ -d /proc/$pid ]] && ! grep -q ') Z' "/proc/$pid/stat" 2>/dev/null; do sleep 0.1; done
}

sinfo --json >"$here/sinfo_idle.json"
squeue --json >"$here/squeue_empty.json"

cat >"$jobs/long.sh" <<'SCRIPT'
#!/bin/bash
srun ${SLURM_HET_SIZE:+--het-group=0-$((SLURM_HET_SIZE-1))} sleep 300
SCRIPT
printf '#!/bin/bash\nexit 0\n' >"$jobs/ok.sh"
printf '#!/bin/bash\nexit 3\n' >"$jobs/fail.sh"
printf '#!/bin/bash\nkill -KILL $$\n' >"$jobs/killed.sh"
common=(--parsable --chdir="$jobs" --output="$jobs/%x-%j.out" --export=ALL)

# Running, in the shapes SlurmClient::Submit uses: a uniform exact
# allocation (2 a100 on n1 and n2, 2 CPUs per task) and a heterogeneous job
# for different counts per node (1 v100 on n6, then 2 on n5).
a=$(sbatch "${common[@]}" --job-name=tessel-uniform --nodes=2 --nodelist=n1,n2 \
  --ntasks-per-node=2 --gpus-per-task=a100:1 --gpu-bind=per_task:1 --cpus-per-task=2 --no-requeue \
  "$jobs/long.sh")
b=$(sbatch "${common[@]}" --job-name=tessel-nonuniform \
  --nodes=1 --nodelist=n6 --ntasks-per-node=1 --gpus-per-task=v100:1 --gpu-bind=per_task:1 --no-requeue \
  : --nodes=1 --nodelist=n5 --ntasks-per-node=2 --gpus-per-task=v100:1 --gpu-bind=per_task:1 --no-requeue \
  "$jobs/long.sh")
wait_state "$a" RUNNING
wait_state "$b" RUNNING
# Pending: wants n1's GPUs, which job a holds.
c=$(sbatch "${common[@]}" --job-name=tessel-pending --nodes=1 --nodelist=n1 \
  --ntasks-per-node=1 --gpus-per-task=a100:1 "$jobs/long.sh")
# Finished: completed (not ours by name), failed with exit code 3, killed by
# SIGKILL, cancelled.
d=$(sbatch "${common[@]}" --job-name=other-job --nodelist=n4 "$jobs/ok.sh")
e=$(sbatch "${common[@]}" --job-name=tessel-failed --nodelist=n4 "$jobs/fail.sh")
f=$(sbatch "${common[@]}" --job-name=tessel-killed --nodelist=n4 "$jobs/killed.sh")
g=$(sbatch "${common[@]}" --job-name=tessel-cancelled --nodelist=n8 "$jobs/long.sh")
wait_state "$g" RUNNING
scancel "$g"
wait_state "$d" COMPLETED
wait_state "$e" FAILED
wait_state "$f" FAILED
wait_state "$g" CANCELLED
wait_state "$c" PENDING

# Node states: n2 drained under job a (allocated+drain), n3 drained idle,
# n7 down, n8's slurmd stopped and the node resumed (idle+not responding).
scontrol update NodeName=n2 State=DRAIN "Reason=tessel: drain under a job"
scontrol update NodeName=n3 State=DRAIN "Reason=tessel: maintenance"
scontrol update NodeName=n7 State=DOWN "Reason=tessel: fake failure"
stop_pid "$dir/run/slurmd-n8.pid"
scontrol update NodeName=n8 State=DOWN "Reason=slurmd stopped"
scontrol update NodeName=n8 State=RESUME
sinfo --json >"$here/sinfo_busy.json"
squeue --json >"$here/squeue_busy.json"
scontrol show node -o >"$here/scontrol_show_node_busy.txt"

# Failures (stderr; exit codes in README.md).
sbatch "${common[@]}" --job-name=x --nodes=1 --nodelist=n99 --ntasks-per-node=1 \
  --gpus-per-task=a100:1 "$jobs/ok.sh" 2>"$here/sbatch_invalid_node.stderr" || true
sbatch "${common[@]}" --job-name=x --nodes=1 --nodelist=n1 --ntasks-per-node=1 \
  --gpus-per-task=h100:1 "$jobs/ok.sh" 2>"$here/sbatch_unknown_gpu_type.stderr" || true
scancel --signal=USR1 --full 999999 2>"$here/scancel_signal_unknown_job.stderr" || true
scancel --signal=USR1 --full "$c" 2>"$here/scancel_signal_pending_job.stderr" || true
scontrol update NodeName=n99 State=DRAIN Reason=x 2>"$here/scontrol_drain_unknown_node.stderr" || true
scontrol update NodeName=n4 State=RESUME 2>"$here/scontrol_resume_idle_node.stderr" || true

# slurmctld down: the JSON listings still exit 0, with "errors" filled in.
stop_pid "$dir/run/slurmctld.pid"
squeue --json >"$here/squeue_ctld_down.json" || true
sinfo --json >"$here/sinfo_ctld_down.json" || true
sbatch "${common[@]}" --job-name=x "$jobs/ok.sh" 2>"$here/sbatch_ctld_down.stderr" || true
echo "capture: done; job ids: a=$a b=$b c=$c d=$d e=$e f=$f g=$g"
