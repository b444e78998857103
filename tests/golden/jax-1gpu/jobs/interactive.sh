#!/bin/bash
# An interactive allocation in the training shape (1 node(s) x 1 GPU(s) on small-g).
# Usage: bash jobs/interactive.sh [salloc options]   (billed while it is held; exit to release)
# Inside, run steps the way jobs/train.sbatch does, e.g.:
#   source scripts/job-env.sh
#   srun "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/run.sh" python -u src/demo/train.py --steps 20
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

options=(
    --job-name=demo-train
    --account=project_465000000
    --partition=small-g
    --time=01:00:00
    --nodes=1
    --ntasks-per-node=1
    --gpus-per-node=1
    --cpus-per-task=7
    --mem-per-gpu=60G
)
exec salloc "${options[@]}" "$@"
