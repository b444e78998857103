#!/bin/bash
# Like run.sh, but rank 14 runs under rocprof (v1) HIP trace and kernel statistics;
# every other rank runs normally. Profiling one rank keeps the overhead and the output
# small, and balanced training makes one rank representative. [WS-09]
# Choose another rank without regenerating: PROFILE_RANK=3 sbatch jobs/profile.sbatch
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# srun starts this script once per rank.
rank="${SLURM_PROCID:-0}"
if [ "${rank}" != "${PROFILE_RANK:-14}" ]; then
    exec "${HERE}/run.sh" "$@"
fi

output="${PROFILE_DIR:-${HERE}/../profiles/${SLURM_JOB_ID:-manual}}/rank-${rank}"
mkdir -p "${output}"
echo "rank ${rank}: profiling with rocprof into ${output}" >&2
# View: results.stats.csv for kernel times; the trace JSON opens in ui.perfetto.dev
exec "${HERE}/run.sh" "rocprof" "--hip-trace" "--stats" "-d" "${output}" "-o" "${output}/results.csv" "$@"
