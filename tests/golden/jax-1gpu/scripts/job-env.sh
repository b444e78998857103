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

# Former LUST image, ROCm 6.2.0, Python 3.12, JAX 0.4.28 [EBC, seed-000]
SIF="${SIF:-/appl/local/containers/easybuild-sif-images/lumi-jax-rocm-6.2.0-python-3.12-jax-0.4.28-dockerhash-1441a4bce06f.sif}"
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
