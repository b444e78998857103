#!/bin/bash
# Like run.sh, but rank 0 runs under Framework profiler (torch.profiler / jax.profiler) on one rank;
# every other rank runs normally. Profiling one rank keeps the overhead and the output
# small, and balanced training makes one rank representative. [WS-09]
# Choose another rank without regenerating: PROFILE_RANK=3 sbatch jobs/profile.sbatch
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# torchrun starts this script once per worker (--no-python) and sets RANK for it.
rank="${RANK:?run-profile.sh runs as a torchrun worker, which sets RANK}"
if [ "${rank}" != "${PROFILE_RANK:-0}" ]; then
    exec "${HERE}/run.sh" "$@"
fi

output="${PROFILE_DIR:-${HERE}/../profiles/${SLURM_JOB_ID:-manual}}/rank-${rank}"
mkdir -p "${output}"
echo "rank ${rank}: profiling with framework into ${output}" >&2
# View: open the trace in ui.perfetto.dev (keep traces under ~2 GB) or TensorBoard
export LUMI_SCAFFOLD_PROFILE_DIR="${output}"   # the example script profiles a few steps into this directory when it is set
exec "${HERE}/run.sh" "$@"
