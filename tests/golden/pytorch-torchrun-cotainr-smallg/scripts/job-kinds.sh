#!/bin/bash
# The jobs besides training: jobs/profile.sbatch (profile_job, which needs scripts/job-env.sh
# sourced first) and jobs/sweep.sbatch (sweep_job). This file is the same in every project
# made by lumi-scaffold; this project's values are in scripts/values.sh.

# The project's values (where job-env.sh has read them already, reading them again changes
# nothing).
# shellcheck source=values.sh
source "$(dirname "${BASH_SOURCE[0]}")/values.sh"

# The profiling job (jobs/profile.sbatch, where the project has a profiler): [train.py
# arguments]. The training job's shape, launch and data; scripts/run-profile.sh wraps only
# rank PROFILE_RANK (profile_rank in values.sh) in the profiler, every other rank runs as in
# training. It starts from step 0 in an output directory of its own (resuming a finished
# run would profile nothing), and writes the profile into profiles/<job id>. The progress
# watchdog's limits, PROGRESS_TIMEOUT and STARTUP_TIMEOUT, are the job file's.
profile_job() {
    report_job profile   # (its report: in the output directory below, reports/)
    # Slurm's warning profile_signal_lead seconds before the time limit (--signal in the job
    # file): the job report says so at once. A profile the limit cuts off may be incomplete:
    # ask for more time (sbatch --time=...).
    trap 'echo "time limit in ${profile_signal_lead} s: the profile will end unfinished" >&2; time_is_up' USR1

    # profiles/<job id>, or <job id>.2, .3 ... for more runs in one allocation (by hand).
    local name="${SLURM_JOB_ID}" n=1 output status=0
    while [ -e "${PROJECT_DIR}/profiles/${name}" ]; do
        n=$((n + 1))
        name="${SLURM_JOB_ID}.${n}"
    done
    PROFILE_DIR="${PROJECT_DIR}/profiles/${name}"
    export PROFILE_DIR
    output="${OUTPUT_ROOT?}/profile-${name}"   # (OUTPUT_ROOT: set by scripts/job-env.sh)
    mkdir -p "${PROFILE_DIR}" "${output}"

    stage_data
    restore_caches   # (compiling kernels would show in the profile)
    watch_progress
    run_step launch run-profile.sh "${output}" "${DATA_ARGS[@]}" "$@" || status=$?
    stop_watching
    drop_heartbeats
    save_caches
    if [ "${STALLED}" = 1 ] || [ "${status}" != 0 ]; then
        exit "$(( status == 0 ? 1 : status ))"
    fi
    echo "Profile written to ${PROFILE_DIR}"
}

# A sweep (jobs/sweep.sbatch): SWEEP_FILE [train.py arguments for every trial]. One trial of
# train.py per line of the sweep file, each trial a task of a Slurm job array (submitted by
# scripts/sweep.py, which counts the trials and throttles the array). Trial i trains in its
# own run directory, RUN_NAME=<sweep file's name>-<i> (e.g. example-001), through
# jobs/train.sbatch, and resumes like a training job. A partition that takes no job arrays
# (sweep_refused in values.sh says why) refuses it in one line.
sweep_job() {
    if [ -n "${sweep_refused}" ]; then
        echo "sweep: ${sweep_refused}. Fix: sweep on another partition (lumi-scaffold update -d partition=<name>)" >&2
        exit 2
    fi
    local sweep_file="${1:-}" sweep_path sweep trial trial_args
    case "${sweep_file}" in
        /*) sweep_path="${sweep_file}" ;;
        *) sweep_path="${SLURM_SUBMIT_DIR:-.}/${sweep_file}" ;;
    esac
    if [ -z "${sweep_file}" ] || [ ! -f "${sweep_path}" ]; then
        echo "sweep: no sweep file '${sweep_file}' in ${SLURM_SUBMIT_DIR:-.}: give one, e.g. python3 scripts/sweep.py submit sweeps/example.txt" >&2
        exit 2
    fi
    shift
    if ! [[ "${SLURM_ARRAY_TASK_ID:-}" =~ ^[1-9][0-9]*$ ]]; then
        echo "sweep: not an array job (tasks 1-N): submit with python3 scripts/sweep.py submit ${sweep_file} (or sbatch --array=1-N ...)" >&2
        exit 2
    fi
    sweep="$(basename "${sweep_file}" .txt)"
    if ! [[ "${sweep}" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
        echo "sweep: '${sweep}' is not a plain name (it names the trials' run directories): rename the file to letters, digits, . _ -" >&2
        exit 2
    fi
    # The trial: the SLURM_ARRAY_TASK_ID-th line that is not empty or a comment, split into
    # words at spaces (no quotes, no shell: the line's words go to train.py as they are).
    trial="$(grep -v -E '^[[:space:]]*(#|$)' "${sweep_path}" | sed -n "${SLURM_ARRAY_TASK_ID}p")"
    if [ -z "${trial}" ]; then
        echo "sweep: ${sweep_file} has no trial ${SLURM_ARRAY_TASK_ID} (the array is larger than the file)" >&2
        exit 2
    fi
    read -r -a trial_args <<<"${trial}"
    RUN_NAME="${sweep}-$(printf '%03d' "${SLURM_ARRAY_TASK_ID}")"
    LUMI_SCAFFOLD_SWEEP="${sweep}"
    export RUN_NAME LUMI_SCAFFOLD_SWEEP
    echo "sweep ${sweep}: trial ${SLURM_ARRAY_TASK_ID} (${RUN_NAME}): ${trial}"
    # The training job's own script runs the trial in this allocation (its #SBATCH lines are
    # comments here; Slurm's time-limit warning reaches it, as this shell becomes it). The
    # arguments given to every trial come first (--chain N must), the trial's own last.
    exec bash "${SLURM_SUBMIT_DIR:-.}/jobs/train.sbatch" "$@" "${trial_args[@]}"
}
