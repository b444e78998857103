#!/bin/bash
# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
# Compiler caches that survive jobs (kernel_cache_dirs in values.sh, which names them). During
# a job they live in node-local storage, where scripts/lib/run.sh points the framework, and
# node-local files end with the job: without this script every job would compile its
# kernels anew. It carries each cache from job to job through an archive in the project's
# cache area, one directory per image (KERNEL_CACHE_STORE/<image file name without .sif>/):
#   caches.sh restore   every node, when a job starts (restore_caches in scripts/lib/job.sh)
#   caches.sh save      the job's first node, after its training step has ended (save_caches),
#                       never while the step runs: a framework (MIOpen's database) may still
#                       be writing to them
# Kernels compiled in one image are never restored into another (another ROCm or framework
# version); an image rebuilt under the same name keeps its archives: delete its directory.
# A save writes a temporary file next to the archive and renames it over the old one (one
# rename on one file system), so jobs saving at the same time leave a whole archive, the
# last one's, never a mix. Off: KEEP_KERNEL_CACHES=0 sbatch ...
set -euo pipefail

: "${USER:=$(id -un)}" "${SLURM_JOB_ID:=0}" "${SLURM_NODEID:=0}"
# shellcheck source=values-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/values-lib.sh"

KERNEL_CACHE_STORE="${KERNEL_CACHE_STORE:-$(expand "${kernel_cache_store}")}"
# The image the job runs (SIF, from scripts/lib/job.sh) keys the archives.
image="$(basename "${SIF:?caches.sh runs in a job, after scripts/lib/job.sh set SIF}" .sif)"
store="${KERNEL_CACHE_STORE}/${image}"

action="${1:-}"
node="node ${SLURM_NODEID} (${SLURMD_NODENAME:-$(hostname)})"
for cache in "${kernel_cache_dirs[@]}"; do
    name="${cache%%=*}"
    dir="$(expand "${cache#*=}")"
    archive="${store}/${name}.tar"
    case "${action}" in
        restore)
            if [ -f "${archive}" ]; then
                mkdir -p "${dir}"
                if tar -C "${dir}" -xf "${archive}"; then
                    echo "caches: ${node}: ${name} restored from ${archive} ($(du -sh "${dir}" | cut -f1))"
                else
                    echo "caches: ${node}: could not read ${archive} (above); the next save replaces it" >&2
                fi
            else
                echo "caches: ${node}: no ${name} cache saved yet (${archive})"
            fi
            ;;
        save)
            if [ -d "${dir}" ] && [ -n "$(ls -A "${dir}")" ]; then
                mkdir -p "${store}"
                tmp="${store}/.${name}.tar.${SLURM_JOB_ID}.$$"
                if tar -C "${dir}" -cf "${tmp}" . && mv -f "${tmp}" "${archive}"; then
                    echo "caches: ${name} saved to ${archive} ($(du -sh "${archive}" | cut -f1))"
                else
                    rm -f "${tmp}"
                    echo "caches: could not save ${name} to ${archive}" >&2
                fi
            fi
            ;;
        *)
            echo "usage: $0 restore|save" >&2
            exit 2
            ;;
    esac
done
