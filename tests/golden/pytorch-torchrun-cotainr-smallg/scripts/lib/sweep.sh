#!/bin/bash
# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
# The sweep job's library (jobs/sweep.sbatch sources it; each trial then runs jobs/train.sbatch,
# which sources scripts/lib/job.sh).
# shellcheck source=values-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/values-lib.sh"
PROJECT_DIR="${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"

# A sweep (jobs/sweep.sbatch, a Slurm job array that scripts/sweep.py submits): the sweep
# file is SWEEP (SWEEP=sweeps/example.txt); task i runs the i-th trial (a line that is not
# empty or a comment, split at spaces, no shell) through the training job file, in its own
# run directory, RUN_NAME=<sweep file's name>-<i>: the trial's words go after COMMAND and
# the arguments every trial gets. A partition without job arrays refuses it.
sweep_job() {
    if [ -n "${sweep_refused}" ]; then
        echo "sweep: ${sweep_refused}. Fix: sweep on another partition (lumi-scaffold update -d partition=<name>)" >&2
        exit 2
    fi
    local sweep_file="${SWEEP:-}" sweep_path sweep trial trial_args
    case "${sweep_file}" in
        /*) sweep_path="${sweep_file}" ;;
        *) sweep_path="${PROJECT_DIR}/${sweep_file}" ;;
    esac
    if [ -z "${sweep_file}" ] || [ ! -f "${sweep_path}" ]; then
        echo "sweep: no sweep file SWEEP='${sweep_file}' in ${PROJECT_DIR}: python3 scripts/sweep.py submit sweeps/example.txt" >&2
        exit 2
    fi
    if ! [[ "${SLURM_ARRAY_TASK_ID:-}" =~ ^[1-9][0-9]*$ ]]; then
        echo "sweep: not an array job (tasks 1-N): python3 scripts/sweep.py submit ${sweep_file} submits it" >&2
        exit 2
    fi
    sweep="$(basename "${sweep_file}" .txt)"
    if ! [[ "${sweep}" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
        echo "sweep: '${sweep}' is not a plain name (it names the trials' run directories): rename the file to letters, digits, . _ -" >&2
        exit 2
    fi
    trial="$(grep -v -E '^[[:space:]]*(#|$)' "${sweep_path}" | sed -n "${SLURM_ARRAY_TASK_ID}p")"
    if [ -z "${trial}" ]; then
        echo "sweep: ${sweep_file} has no trial ${SLURM_ARRAY_TASK_ID} (the array is larger than the file)" >&2
        exit 2
    fi
    read -r -a trial_args <<<"${trial}"
    RUN_NAME="${sweep}-$(printf '%03d' "${SLURM_ARRAY_TASK_ID}")"
    LUMI_SCAFFOLD_SWEEP="${sweep}"
    export RUN_NAME LUMI_SCAFFOLD_SWEEP
    unset SWEEP
    echo "sweep ${sweep}: trial ${SLURM_ARRAY_TASK_ID} (${RUN_NAME}): ${trial}"
    # This shell becomes the training job's (its #SBATCH lines are comments here; Slurm's
    # time-limit warning reaches it).
    exec bash "${PROJECT_DIR}/jobs/train.sbatch" "$@" "${trial_args[@]}"
}
