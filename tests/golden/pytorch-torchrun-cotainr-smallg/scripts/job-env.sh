#!/bin/bash
# Host-side setup shared by every job in jobs/ and by scripts/setup-venv.sh.
# It runs OUTSIDE the container: Slurm tools and modules exist only out here.
# The container path, binds and modules come from plugin_data in .copier-answers.yml,
# so `copier update` moves them when LUMI moves its images.

# USER is set in login shells and jobs; the default keeps `set -u` working in bare shells.
export USER="${USER:-$(id -un)}"

# The project directory: where sbatch was run (the README runs every job from there).
PROJECT_DIR="${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
export PROJECT_DIR

# cotainr image
SIF="${SIF:-${PROJECT_DIR}/container/demo.sif}"   # built by container/build.sh
export SIF

# Binds: real roots of symlinked file systems (Singularity does not follow symlinks in
# bind paths) and what this image generation needs. [EBC-PT], [WS-09]
BINDS="${BINDS:-/pfs,/scratch,/projappl,/project,/flash,/appl}"
export BINDS

# Every step runs through this command.
# shellcheck disable=SC2034  # used by the jobs that source this file
CONTAINER=(singularity exec)
if [ -n "${BINDS}" ]; then
    CONTAINER+=(--bind "${BINDS}")
fi
CONTAINER+=("${SIF}")

# Rendezvous for torch.distributed, computed out here because there are no Slurm tools
# inside the container. [WS-09], [AIG-05]
if [ -n "${SLURM_JOB_NODELIST:-}" ]; then
    MASTER_ADDR="$(scontrol show hostnames "${SLURM_JOB_NODELIST}" | head -n 1)"
    # 1 + the job id's last four digits, like the AI guide's "1${SLURM_JOB_ID:0-4}", so two
    # jobs on one shared node do not collide; also right for job ids under four digits.
    MASTER_PORT="$((10000 + SLURM_JOB_ID % 10000))"
    export MASTER_ADDR MASTER_PORT
fi

# Data and outputs: never under $HOME (see README.md). Override by exporting before sbatch.
DATA_DIR="${DATA_DIR:-/scratch/project_465000000/datasets/demo}"
OUTPUT_ROOT="${OUTPUT_ROOT:-/scratch/project_465000000/${USER}/demo/outputs}"
export DATA_DIR OUTPUT_ROOT

# Runs a job step in the background and waits for it, so that signal traps (the
# time-limit copy-back) run at once instead of after the step. Returns the step's status.
run_step() {
    "$@" &
    local pid=$! status=0
    while :; do
        wait "${pid}" && status=0 || status=$?
        kill -0 "${pid}" 2>/dev/null || break   # still running: a trapped signal woke us
    done
    return "${status}"
}
