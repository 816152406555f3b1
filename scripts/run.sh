#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on the embedded
# default: plan GPT-3 175B on 1,024 A100-80GB (DGX A100 nodes), global batch
# 1,536, then estimate the best plan in detail. No data files needed.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
build/tessel plan --model gpt3-175b --gpu a100-80g --gpus 1024 --global-batch 1536 --precision fp16
echo
build/tessel estimate --model gpt3-175b --gpu a100-80g --gpus 1024 --global-batch 1536 --precision fp16 \
  --tp 8 --pp 8 --micro-batch 1 --recompute selective --virtual-stages 3 --zero 1
echo
# The simulator: every policy on the demo cluster and the embedded
# synthetic workload, side by side, with plots.
build/tessel compare --cluster demo --out build/sim-demo
