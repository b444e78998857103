#!/bin/bash
# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
# Pre-staging: extracts the dataset archive into node-local storage (node_tmp in values.sh)
# so that training reads it from there, not from the shared file system.
# The jobs run it once on every node (stage_data in scripts/lib/job.sh, which also sets
# DATASET_ARCHIVE, NODE_TMP and STAGE_DIR); the training script reads STAGE_DIR/data.
# Checkpoints do not go there: they go to the run directory on the shared file system, so
# a job that ends early, or on another node, loses none.
# Every node reads the one archive at the same time: where the site says how to lay it out
# on the shared file system (striping), the README's training step and lumi-scaffold explain say it.
set -euo pipefail
# shellcheck source=../values.sh
source "$(dirname "${BASH_SOURCE[0]}")/../values.sh"
: "${DATASET_ARCHIVE?}" "${NODE_TMP?}" "${STAGE_DIR?}"   # set by scripts/lib/job.sh

node="node ${SLURM_NODEID:-0} ($(hostname))"
if [ ! -f "${DATASET_ARCHIVE}" ]; then
    echo "prestage: ${DATASET_ARCHIVE} does not exist. Fix: set dataset_archive (lumi-scaffold update -d dataset_archive=...) or DATASET_ARCHIVE." >&2
    exit 1
fi
mkdir -p "${STAGE_DIR}/data"
# The space a plain .tar needs is its size (a compressed archive needs more than its size).
need_kb=$(( $(stat -c %s "${DATASET_ARCHIVE}") / 1024 + 1 ))
avail_kb="$(df -Pk "${STAGE_DIR}" | awk 'NR == 2 {print $4}')"
# The job's memory on this node: --mem gives SLURM_MEM_PER_NODE, --mem-per-gpu gives SLURM_MEM_PER_GPU (MiB).
mem_mb="${SLURM_MEM_PER_NODE:-$(( ${SLURM_MEM_PER_GPU:-0} * ${SLURM_GPUS_ON_NODE:-1} ))}"
# The archive may fill prestage_memory_percent of it (values.sh; lumi-scaffold explain says
# the same); the rest is left for training.
budget_kb=$(( mem_mb * 1024 * prestage_memory_percent / 100 ))
why="the job may use $(( budget_kb / 1024 )) MiB (${prestage_memory_percent}%) of its memory for it"
# On a node shared with other jobs, the partition may give node-local storage a limit of its
# own, whatever the job's memory (prestage_shared_tmp_kb in values.sh, where it does); jobs
# with whole nodes (--exclusive) are limited by their memory.
if [ -n "${prestage_shared_tmp_kb}" ] && { [ "${mem_mb}" = 0 ] || [ "${prestage_shared_tmp_kb}" -lt "${budget_kb}" ]; }; then
    budget_kb="${prestage_shared_tmp_kb}"
    why="${prestage_shared_tmp}"
fi
if [ "${need_kb}" -gt "${avail_kb}" ] || { [ "${budget_kb}" -gt 0 ] && [ "${need_kb}" -gt "${budget_kb}" ]; }; then
    echo "prestage: ${node}: ${DATASET_ARCHIVE} needs $(( need_kb / 1024 )) MiB; ${NODE_TMP} has $(( avail_kb / 1024 )) MiB free and ${why}." >&2
    echo "Fix: ${prestage_fix}." >&2
    exit 1
fi
tar -C "${STAGE_DIR}/data" -xf "${DATASET_ARCHIVE}"
echo "prestage: node ${SLURM_NODEID:-0}: extracted $(( need_kb / 1024 )) MiB into ${STAGE_DIR}/data" >&2
