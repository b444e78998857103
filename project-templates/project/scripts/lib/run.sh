#!/bin/bash
# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
# Runs INSIDE the container, once per task of every job step: sets up the rank's
# environment, then runs the command it was given (scripts/lib/job.sh prints each step):
#   srun ... singularity run ... IMAGE scripts/lib/run.sh python -u src/<package>/train.py
# With the torchrun launcher, torchrun starts it once more for each worker (--no-python):
#   srun ... IMAGE scripts/lib/run.sh python -m torch.distributed.run ... scripts/lib/run.sh COMMAND
# It also works outside Slurm (defaults below), e.g. for scripts/setup-venv.sh.
# This project's values are in scripts/values.sh.
set -euo pipefail

PROJECT_DIR="${PROJECT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
# Defaults for use outside a Slurm job (login node, local tests).
: "${USER:=$(id -un)}" "${SLURM_JOB_ID:=0}" "${SLURM_NODEID:=0}"
# shellcheck source=values-lib.sh
source "${PROJECT_DIR}/scripts/lib/values-lib.sh"

# Exports each NAME=value given, its ${NAME}s expanded (a value may name NAME itself: its
# value before). No local variable: one would hide a ${NAME} of the same name.
export_values() {
    while [ "$#" -gt 0 ]; do
        expand_into "${1%%=*}" "${1#*=}"
        export "${1%%=*}"
        shift
    done
}

# An image that keeps Python in a conda env (activate_variable in values.sh) is activated
# first. Activation scripts are not written for `set -u` (conda's read unset variables):
# nounset is off while it runs.
if [ -n "${activate_variable}" ]; then
    activate="${!activate_variable:?this image should define ${activate_variable}}"
    set +u
    eval "${activate}"
    set -u
fi

# Our venv on top of the container's Python (scripts/setup-venv.sh): it sees the
# container's packages and pins the framework, so pip never replaces it. A packed one
# (venv.sqsh, bound at /user-software by scripts/lib/job.sh) comes before venv/; none
# while setup-venv.sh builds one.
if [ "${SETUP_VENV_BUILDING:-0}" = 1 ]; then
    :
elif [ -f /user-software/bin/activate ]; then
    # shellcheck source=/dev/null
    source /user-software/bin/activate
elif [ -f "${PROJECT_DIR}/venv/bin/activate" ]; then
    # shellcheck source=/dev/null
    source "${PROJECT_DIR}/venv/bin/activate"
fi
# Packages in ~/.local would shadow the container's (when the runtime mounts $HOME).
export PYTHONNOUSERSITE=1
# The helpers any command may import (heartbeat, runlog), last on the path: yours win.
if [[ ":${PYTHONPATH:-}:" != *":${PROJECT_DIR}/scripts/lib/python:"* ]]; then
    export PYTHONPATH="${PYTHONPATH:+${PYTHONPATH}:}${PROJECT_DIR}/scripts/lib/python"
fi

if [ "${launcher}" = torchrun ]; then
    # torchrun sets RANK, LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE for each worker it
    # starts. The CPUs a worker owns, its share of the task's: size data-loader worker pools
    # with it, minus one for the rank (never with the whole task's cores in every worker).
    cpus="$(( ${SLURM_CPUS_PER_TASK:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)} / ${LOCAL_WORLD_SIZE:-1} ))"
    export LUMI_SCAFFOLD_CPUS_PER_RANK="$(( cpus > 0 ? cpus : 1 ))"   # (nproc obeys OMP_*, which torchrun sets)
    rank_process="${TORCHELASTIC_RUN_ID:-}"   # a worker torchrun started (not the torchrun task itself)
else
    # One process per GPU; torch.distributed's env:// rendezvous reads these, and they give
    # any other framework's code the same numbers.
    export RANK="${SLURM_PROCID:-0}"
    export LOCAL_RANK="${SLURM_LOCALID:-0}"
    export WORLD_SIZE="${SLURM_NTASKS:-1}"
    export LOCAL_WORLD_SIZE="${SLURM_NTASKS_PER_NODE:-1}"
    # The CPUs this rank owns: size data-loader worker pools with it, minus one for the rank.
    cpus="${SLURM_CPUS_PER_TASK:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"   # (nproc obeys OMP_*)
    export LUMI_SCAFFOLD_CPUS_PER_RANK="${cpus}"
    rank_process="${SLURM_STEP_ID:-}"
fi

# Interconnect and runtime settings of the site (image_env in values.sh, each with its reason).
export_values "${image_env[@]}"

# In a job, temporary files (Python's tempfile, compilers, pip) go to a directory of this job
# and node in node-local storage (node_tmp in values.sh), not to one shared with other jobs
# and users. The node's first rank makes it, the others find it; it is kept for the job's
# later steps on the node, and removed when the job ends (scripts/lib/nodes.sh).
if [ "${SLURM_JOB_ID}" != 0 ]; then
    TMPDIR="$(job_tmpdir)"
    export TMPDIR
    mkdir -m 700 "${TMPDIR}" 2>/dev/null || true
    if [ ! -d "${TMPDIR}" ] || [ ! -O "${TMPDIR}" ]; then
        echo "TMPDIR=${TMPDIR} could not be made, or is another user's: this job's temporary files cannot go there. Fix: submit the job again (a new job id names a new directory)" >&2
        exit 2
    fi
fi
# PyTorch's Flight Recorder dump pipe (flight_recorder in job.sh sets LUMI_SCAFFOLD_FLIGHT=1):
# each rank of a NCCL/RCCL process group makes <this prefix><rank>.pipe, node-local, and the
# watchdog writes to it to ask that rank for its dump before it stops a stalled step.
if [ "${LUMI_SCAFFOLD_FLIGHT:-0}" = 1 ] && [ -n "${TMPDIR:-}" ]; then
    export TORCH_NCCL_DEBUG_INFO_PIPE_FILE="${TORCH_NCCL_DEBUG_INFO_PIPE_FILE:-${TMPDIR}/flight-recorder-pipe-}"
fi

# Kernel caches, one directory per node in node-local storage (kernel_cache_env), and
# framework caches in the project's cache area (cache_env): all off $HOME. Every rank makes
# the kernel caches' directories (idempotent, and no rank waits for another).
export_values "${kernel_cache_env[@]}" "${cache_env[@]}"
cache_dirs=() cache_dir=""
for setting in "${kernel_cache_env[@]}"; do
    expand_into cache_dir "${setting#*=}"
    cache_dirs+=("${cache_dir}")
done
if [ "${#cache_dirs[@]}" -gt 0 ]; then
    mkdir -p "${cache_dirs[@]}"
fi

# One line per rank: where it runs, its GPU and its CPUs (not in the jobs' helper steps:
# LUMI_SCAFFOLD_HELPER=1).
if [ -n "${rank_process}" ] && [ "${LUMI_SCAFFOLD_HELPER:-0}" != 1 ]; then
    gpu="none"
    devices="${!gpu_devices_variable:-}"   # ROCR_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES: values.sh
    if [ -n "${devices}" ]; then   # the rank uses the LOCAL_RANK-th visible GPU
        IFS=, read -r -a gpus <<<"${devices}"
        gpu="${gpus[$(( ${LOCAL_RANK:-0} % ${#gpus[@]} ))]}"
    fi
    echo "rank ${RANK:-0}/${WORLD_SIZE:-1} node ${SLURMD_NODENAME:-$(hostname)} local_rank ${LOCAL_RANK:-0} gpu ${gpu} cpus $(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)"
    # The progress watchdog's heartbeats (scripts/lib/watchdog.py): this rank's name in the job's
    # heartbeat directory (the watchdog finds the rank processes by it), and where
    # heartbeat.py keeps the rank's record on this node (node-local: only one
    # file per node goes to the shared directory).
    if [ -n "${LUMI_SCAFFOLD_HEARTBEAT_DIR:-}" ]; then
        export LUMI_SCAFFOLD_HEARTBEAT="${LUMI_SCAFFOLD_HEARTBEAT_DIR}/rank${RANK:-0}@${SLURMD_NODENAME:-$(hostname)}"
        export LUMI_SCAFFOLD_HEARTBEAT_LOCAL="${TMPDIR:-/tmp}/heartbeat-${LUMI_SCAFFOLD_HEARTBEAT_STARTED:-0}@${SLURMD_NODENAME:-$(hostname)}"
    fi
fi

# The collective library's debug output (collectives in values.sh: NCCL, or RCCL on AMD
# GPUs), one file per rank, in the output root's logs/ (LUMI_SCAFFOLD_LOG_DIR, from
# scripts/lib/job.sh): submit with <collectives>_DEBUG_FILES=1 sbatch ...,
# NCCL_DEBUG_FILES=1 or RCCL_DEBUG_FILES=1 (debug_files_alias in values.sh: another name).
log_dir="${LUMI_SCAFFOLD_LOG_DIR:-$(expand "${output_root}")/logs}"
log_prefix="${log_dir}/${collectives,,}-${SLURM_JOB_ID:-0}-rank"
debug_variable="${collectives}_DEBUG_FILES"
debug_files="${!debug_variable:-0}"
if [ -n "${debug_files_alias}" ] && [ -z "${!debug_variable:-}" ]; then
    debug_files="${!debug_files_alias:-0}"
fi
if [ "${debug_files}" = 1 ]; then
    mkdir -p "${log_dir}"
    export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS="${NCCL_DEBUG_SUBSYS:-INIT,NET,COLL}"
    export NCCL_DEBUG_FILE="${log_prefix}${RANK:-${SLURM_PROCID:-0}}.txt"
fi

# The network check (net_check in values.sh, with why): in a multi-node step (not on the
# login node, nor in a 1-GPU step), rank 0 logs the collective library's network setup, and a
# watcher (scripts/lib/collective_net.py: the library's final choice decides, its
# net_check_final line; without one, the last network line) stops the job when it is TCP and
# warns when no choice came within <collectives>_NET_CHECK_WAIT seconds (900 unless set). Skip
# it with <collectives>_NET_CHECK=0 sbatch ... (NCCL_NET_CHECK=0, or RCCL_NET_CHECK=0).
check_variable="${collectives}_NET_CHECK"
wait_variable="${collectives}_NET_CHECK_WAIT"
if [ -n "${net_check}" ] && [ "${RANK:-}" = 0 ] && [ "${SLURM_STEP_NUM_NODES:-1}" -gt 1 ] \
    && [ "${!check_variable:-1}" = 1 ] && [ "${LUMI_SCAFFOLD_HELPER:-0}" != 1 ]; then
    export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS="${NCCL_DEBUG_SUBSYS:-INIT,NET}"
    mkdir -p "${log_dir}"
    export NCCL_DEBUG_FILE="${NCCL_DEBUG_FILE:-${log_prefix}0.txt}"
    python "${PROJECT_DIR}/scripts/lib/collective_net.py" watch --pid "$$" --wait "${!wait_variable:-900}" \
        --fast "${net_check_fast}" --tcp "${net_check_tcp}" ${net_check_final:+--final "${net_check_final}"} \
        --name "${net_check}" --fix "${net_check_fix}" --collectives "${collectives}" "${NCCL_DEBUG_FILE}" &   # $$: the training process, after the exec below
fi

exec "$@"
