#!/bin/bash
# Pre-staging: copy the dataset archive to node-local /tmp (RAM, counted in the job's memory)
# so that training reads it from there, not from the parallel file system. [UG-stor], [WS-09]
# Sourced by jobs/train.sbatch, which calls prestage_extract and copy_back; one task per
# node runs this file with --extract.

# The archive (a plain .tar: its size is the space it needs). Override: DATASET_ARCHIVE=... sbatch ...
DATASET_ARCHIVE="${DATASET_ARCHIVE:-/flash/project_465000000/data/imagenet.tar}"
NODE_TMP="${NODE_TMP:-/tmp}"
# Computed once in the batch script and inherited by the per-node extract tasks.
STAGE_DIR="${STAGE_DIR:-${NODE_TMP}/${USER:-$(id -un)}-demo-${SLURM_JOB_ID:-0}}"
export DATASET_ARCHIVE NODE_TMP STAGE_DIR

# On every node: check that the archive fits, then extract it.
prestage_extract() {
    # --ntasks too: the step would otherwise inherit the job's task count.
    srun --nodes="${SLURM_JOB_NUM_NODES:-1}" --ntasks="${SLURM_JOB_NUM_NODES:-1}" --ntasks-per-node=1 \
        --kill-on-bad-exit=1 bash "${PROJECT_DIR}/scripts/prestage.sh" --extract
}

# Copy outputs written on this (the first) node back to OUTPUT_ROOT; never deletes
# what is already there, so an earlier copy survives a later failure.
copy_back() {
    local dest="${OUTPUT_ROOT}/${SLURM_JOB_ID:-0}"
    mkdir -p "${dest}"
    if [ -d "${STAGE_DIR}/outputs" ]; then
        cp -a "${STAGE_DIR}/outputs/." "${dest}/"
        echo "copy_back: $(find "${dest}" -type f | wc -l) file(s) in ${dest}" >&2
    fi
}

extract() {
    if [ ! -f "${DATASET_ARCHIVE}" ]; then
        echo "prestage: ${DATASET_ARCHIVE} does not exist. Fix: set dataset_archive (copier update -d dataset_archive=...) or DATASET_ARCHIVE." >&2
        return 1
    fi
    local need_kb avail_kb mem_mb budget_kb
    mkdir -p "${STAGE_DIR}/data" "${STAGE_DIR}/outputs"
    need_kb=$(( $(stat -c %s "${DATASET_ARCHIVE}") / 1024 + 1 ))
    avail_kb="$(df -Pk "${STAGE_DIR}" | awk 'NR == 2 {print $4}')"
    # The job's memory on this node: --mem gives SLURM_MEM_PER_NODE, --mem-per-gpu gives SLURM_MEM_PER_GPU (MiB).
    mem_mb="${SLURM_MEM_PER_NODE:-$(( ${SLURM_MEM_PER_GPU:-0} * ${SLURM_GPUS_ON_NODE:-1} ))}"
    budget_kb=$(( mem_mb * 1024 * 3 / 4 ))   # leave a quarter of the job's memory for training
    if [ "${need_kb}" -gt "${avail_kb}" ] || { [ "${mem_mb}" -gt 0 ] && [ "${need_kb}" -gt "${budget_kb}" ]; }; then
        echo "prestage: $(hostname): ${DATASET_ARCHIVE} needs $(( need_kb / 1024 )) MiB; ${NODE_TMP} has $(( avail_kb / 1024 )) MiB free and the job may use $(( budget_kb / 1024 )) MiB of its memory for it." >&2
        echo "Fix: request more memory (whole nodes: --mem=480G), shard the data, or read it from flash without pre-staging." >&2
        return 1
    fi
    tar -C "${STAGE_DIR}/data" -xf "${DATASET_ARCHIVE}"
    echo "prestage: node ${SLURM_NODEID:-0}: extracted $(( need_kb / 1024 )) MiB into ${STAGE_DIR}/data" >&2
}

if [ "${1:-}" = "--extract" ]; then
    set -euo pipefail
    extract
fi
