#!/bin/bash
# An interactive allocation in the training shape (2 node(s) x 8 GPU(s) on standard-g).
# Usage: bash jobs/interactive.sh [salloc options]   (billed while it is held; exit to release)
# Inside, run steps the way jobs/train.sbatch does, e.g.:
#   source scripts/job-env.sh
#   srun "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/run.sh" python -u src/demo/train.py --steps 20
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

options=(
    --job-name=demo-train
    --account=project_465000000
    --partition=standard-g
    --time=12:00:00
    --nodes=2
    --ntasks-per-node=8
    --gpus-per-node=8
    --cpus-per-task=7
    --mem=480G
)
exec salloc "${options[@]}" "$@"
