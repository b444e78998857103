#!/bin/bash
# An interactive allocation in the training shape (2 node(s) x 8 GPU(s) on standard-g).
# Usage: bash jobs/interactive.sh [salloc options] [COMMAND...]   (billed while it is held; exit to release)
# Inside, run the job files: they start their steps in this allocation, as in a batch job,
# and print each step line ("step: srun ..."), which you may copy and change. A run name of
# its own keeps the batch run's checkpoints out of it:
#   RUN_NAME=try bash jobs/train.sbatch
#   bash jobs/profile.sbatch
# scripts/attach.sh opens more shells in it from another terminal.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

options=(
    --job-name=demo-train
    --account=project_465000000
    --partition=standard-g
    --time=01:00:00
    --nodes=2
    --ntasks-per-node=8
    --gpus-per-node=8
    --cpus-per-task=7
    --mem=480G
)
exec salloc "${options[@]}" "$@"
