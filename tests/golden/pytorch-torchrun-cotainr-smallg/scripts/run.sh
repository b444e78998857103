#!/bin/bash
# Runs INSIDE the container: sets up the environment, then runs the command it was given.
# Every job step goes through it, and in training torchrun starts it once more for each
# worker (--no-python), so each rank gets the same setup:
#   srun ... singularity run ... "$SIF" scripts/run.sh python -m torch.distributed.run ... scripts/run.sh python -u src/demo/train.py
# It also works outside Slurm (defaults below), e.g. for scripts/setup-venv.sh.
set -euo pipefail

PROJECT_DIR="${PROJECT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
# Defaults for use outside a Slurm job (login node, local tests).
: "${USER:=$(id -un)}" "${SLURM_JOB_ID:=0}" "${SLURM_NODEID:=0}"

# Our venv on top of the container's Python (scripts/setup-venv.sh): it sees the
# container's packages and pins the framework, so pip never replaces it. A packed one
# (venv.sqsh, bound at /user-software by scripts/job-env.sh) comes before venv/; none
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
# Packages in ~/.local would shadow the container's (Singularity mounts $HOME). [TM-Cont]
export PYTHONNOUSERSITE=1

# torchrun sets RANK, LOCAL_RANK, WORLD_SIZE and LOCAL_WORLD_SIZE for each worker it starts.
# The CPUs a worker owns, its share of the task's: size data-loader worker pools with it,
# minus one for the rank (never with the whole task's cores in every worker).
cpus="$(( ${SLURM_CPUS_PER_TASK:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)} / ${LOCAL_WORLD_SIZE:-1} ))"
export LUMI_SCAFFOLD_CPUS_PER_RANK="$(( cpus > 0 ? cpus : 1 ))"   # (nproc obeys OMP_*, which torchrun sets)

# Interconnect and runtime settings for LUMI.
export NCCL_SOCKET_IFNAME="hsn0,hsn1,hsn2,hsn3"   # RCCL bootstrap over the Slingshot interfaces, not the management network [WS-09, WS-2026]
export HSA_FORCE_FINE_GRAIN_PCIE="1"   # fine-grained PCIe memory, recommended with the RCCL OFI plugin [WS-2026]
export FI_MR_CACHE_MONITOR="userfaultfd"   # libfabric memory-registration cache monitor (userfaultfd avoids hangs seen in LAIF images; kdreg2 is announced as the default) [WS-2026, AIG-PR118]
export FI_CXI_DISABLE_HOST_REGISTER="1"   # HPE RCCL tuning for the CXI provider [WS-2026]
export FI_CXI_DEFAULT_CQ_SIZE="131072"   # larger completion queue avoids CXI queue overruns at scale [WS-2026]
export FI_CXI_RX_MATCH_MODE="hybrid"   # allow software matching when hardware match entries run out [WS-2026]
export FI_CXI_RDZV_EAGER_SIZE="0"   # HPE RCCL tuning for the CXI provider [WS-2026]
export FI_CXI_RDZV_THRESHOLD="0"   # HPE RCCL tuning for the CXI provider [WS-2026]
export FI_CXI_RDZV_GET_MIN="0"   # HPE RCCL tuning for the CXI provider [WS-2026]
export FI_CXI_DEFAULT_TX_SIZE="2048"   # HPE RCCL tuning for the CXI provider [WS-2026]
export TOKENIZERS_PARALLELISM="false"   # Hugging Face tokenizers would fork threads into DataLoader workers [WS-ref]
# Not exported with this image (a known issue; lumi-scaffold doctor names it in older projects):
# NCCL_NET_GDR_LEVEL: exporting it (PHB or SYS) can make torch.distributed jobs hang with LAIF images (reported on the ROCm 7.0 ones); leave it unset, RCCL detects the level from the PCI topology; the AI Guide dropped it with no loss of speed [LAIF-I30, AIG-PR97]

# In a job, temporary files (Python's tempfile, compilers, pip) go to a directory of this job
# and node in node-local /tmp (RAM, counted in the job's memory), not to a /tmp shared with
# other jobs and users: LAIF's own multi-node tests give each job its TMPDIR too. [LAIF-T] The node's
# first rank makes it, the others find it; it is kept for the job's later steps on the node.
if [ "${SLURM_JOB_ID}" != 0 ]; then
    export TMPDIR="/tmp/${USER}-tmp-${SLURM_JOB_ID}-${SLURM_NODEID}"
    mkdir -m 700 "${TMPDIR}" 2>/dev/null || true
    if [ ! -d "${TMPDIR}" ] || [ ! -O "${TMPDIR}" ]; then
        echo "TMPDIR=${TMPDIR} could not be made, or is another user's: this job's temporary files cannot go there. Fix: submit the job again (a new job id names a new directory)" >&2
        exit 2
    fi
fi

# MIOpen's kernel cache: its default under $HOME fails on Lustre (file locks), so one
# directory per node in node-local /tmp. [WS-ref], [EBC-PT]
export MIOPEN_USER_DB_PATH="/tmp/${USER}-miopen-cache-${SLURM_JOB_ID}-${SLURM_NODEID}"
export MIOPEN_CUSTOM_CACHE_DIR="${MIOPEN_USER_DB_PATH}"
mkdir -p "${MIOPEN_USER_DB_PATH}"   # every rank: idempotent, and no rank waits for another

# Triton's kernel cache (torch.compile compiles its GPU kernels with Triton) and
# TorchInductor's (torch.compile's compiled graphs), both among the caches to keep off
# $HOME [AIG-I112]: one directory each per node in node-local /tmp, like MIOpen's.
export TRITON_CACHE_DIR="/tmp/${USER}-triton-cache-${SLURM_JOB_ID}-${SLURM_NODEID}"
export TORCHINDUCTOR_CACHE_DIR="/tmp/${USER}-inductor-cache-${SLURM_JOB_ID}-${SLURM_NODEID}"
# The jobs restore these caches from the project's cache area when they start and
# save them when training ends (scripts/caches.sh; KEEP_KERNEL_CACHES=0: off).

# Framework caches off $HOME, in the project's cache area. [AIG], [WS-03]
# TORCH_EXTENSIONS_DIR: extensions torch builds just in time (DeepSpeed's ops too), kept
# from job to job there; their default is ~/.cache. [AIG-I112]
export TORCH_HOME="/scratch/project_465000000/${USER}/cache/torch_home"
export HF_HOME="/scratch/project_465000000/${USER}/cache/hf_home"
export TORCH_EXTENSIONS_DIR="/scratch/project_465000000/${USER}/cache/torch_extensions_dir"

# One line per rank: where it runs, its GPU and its CPUs, as the workshop's run.sh prints. [WS-ref]
# (Not in the jobs' helper steps: LUMI_SCAFFOLD_HELPER=1.)
if [ -n "${TORCHELASTIC_RUN_ID:-}" ] && [ "${LUMI_SCAFFOLD_HELPER:-0}" != 1 ]; then   # a worker torchrun started (not the torchrun task itself)
    gpu="none"
    if [ -n "${ROCR_VISIBLE_DEVICES:-}" ]; then   # the rank uses the LOCAL_RANK-th visible GPU
        IFS=, read -r -a gpus <<<"${ROCR_VISIBLE_DEVICES}"
        gpu="${gpus[$(( ${LOCAL_RANK:-0} % ${#gpus[@]} ))]}"
    fi
    echo "rank ${RANK:-0}/${WORLD_SIZE:-1} node ${SLURMD_NODENAME:-$(hostname)} local_rank ${LOCAL_RANK:-0} gpu ${gpu} cpus $(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)"
    # The progress watchdog's heartbeat (scripts/watchdog.py): the examples write their step
    # into this file every step.
    if [ -n "${LUMI_SCAFFOLD_HEARTBEAT_DIR:-}" ]; then
        export LUMI_SCAFFOLD_HEARTBEAT="${LUMI_SCAFFOLD_HEARTBEAT_DIR}/rank${RANK:-0}@${SLURMD_NODENAME:-$(hostname)}"
    fi
fi

# RCCL debug output, one file per rank: submit with RCCL_DEBUG_FILES=1 sbatch ... [WS-09]
# (LUMI_RCCL_DEBUG=1, its name before lumi-scaffold 0.3, works too.)
if [ "${RCCL_DEBUG_FILES:-${LUMI_RCCL_DEBUG:-0}}" = 1 ]; then
    export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS="${NCCL_DEBUG_SUBSYS:-INIT,NET,COLL}"
    export NCCL_DEBUG_FILE="${PROJECT_DIR}/logs/rccl-${SLURM_JOB_ID}-rank${RANK:-${SLURM_PROCID:-0}}.txt"
fi

exec "$@"
