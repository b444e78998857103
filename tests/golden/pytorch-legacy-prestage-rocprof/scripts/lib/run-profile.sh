#!/bin/bash
# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
# Like run.sh, but rank PROFILE_RANK (profile_rank in values.sh) runs under the profiler
# (profiler in values.sh); every other rank runs normally. Profiling one rank keeps the
# overhead and the output small. Choose another rank without regenerating:
#   PROFILE_RANK=3 sbatch jobs/profile.sbatch
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=values-lib.sh
source "${HERE}/values-lib.sh"
if [ "${launcher}" = torchrun ]; then
    # torchrun starts this script once per worker (--no-python) and sets RANK for it.
    rank="${RANK:?run-profile.sh runs as a torchrun worker, which sets RANK}"
else
    # srun starts this script once per rank.
    rank="${SLURM_PROCID:-0}"
fi
if [ "${rank}" != "${PROFILE_RANK:-${profile_rank}}" ]; then
    exec "${HERE}/run.sh" "$@"
fi

output="${PROFILE_DIR:-${OUTPUT_ROOT:-$(expand "${output_root}")}/profiles/${SLURM_JOB_ID:-manual}}/rank-${rank}"
mkdir -p "${output}"
echo "rank ${rank}: profiling with ${profiler} into ${output}" >&2
# The profiler's command before the training's, or its settings for the training's own
# profiler (profiler_command, profiler_env); {output} in them is this rank's directory.
command=()
for word in "${profiler_command[@]}"; do
    command+=("${word//\{output\}/"${output}"}")
done
for setting in "${profiler_env[@]}"; do
    setting="${setting//\{output\}/"${output}"}"
    export "${setting%%=*}=${setting#*=}"
done
exec "${HERE}/run.sh" "${command[@]}" "$@"
