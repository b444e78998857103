#!/bin/bash
# Host-side setup shared by every job in jobs/, by the steps you run in jobs/interactive.sh
# and by scripts/setup-venv.sh. It runs OUTSIDE the container: Slurm tools and modules exist
# only out here.
# The container path, binds and modules come from plugin_data in .copier-answers.yml,
# so `lumi-scaffold update` moves them when LUMI moves its images.

# USER is set in login shells and jobs; the default keeps `set -u` working in bare shells.
export USER="${USER:-$(id -un)}"

# The project directory: where sbatch was run (the README runs every job from there).
PROJECT_DIR="${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
export PROJECT_DIR

# sbatch hands the job the environment of the shell that submitted it (--export=ALL),
# modules loaded by hand included. Start from a known state: no bind paths or variables for
# the container but the ones set here (add binds with BINDS=..., variables in
# scripts/run.sh; Apptainer reads the SINGULARITY_ names too), and no modules but the
# ones loaded below (module purge).
unset SINGULARITY_BIND SINGULARITY_BINDPATH APPTAINER_BIND APPTAINER_BINDPATH
while read -r name; do
    unset "${name}"
done < <(compgen -e | grep -E '^(SINGULARITY|APPTAINER)ENV_' || true)
module purge

# cotainr image
SIF="${SIF:-${PROJECT_DIR}/container/demo.sif}"   # built by container/build.sh
export SIF

# lumi-aif-singularity-bindings: sets SINGULARITY_BIND for the workspaces, /appl and /var/spool/slurmd [TM-Cont, WS-06-2026, UG-PR315]
# Where LUMI has the Local-LAIF module, it makes lumi-aif-singularity-bindings loadable; where it
# has not (yet), `module use` its directory does. Which form the site documents may change
# (UNCONFIRMED): either works here.
if module is-avail Local-LAIF 2>/dev/null; then
    module load Local-LAIF
else
    module use /appl/local/laifs/modules
fi
module load lumi-aif-singularity-bindings

# Binds: real roots of symlinked file systems (Singularity does not follow symlinks in
# bind paths) and what this image generation needs. [EBC-PT], [WS-09]
BINDS="${BINDS:-/pfs}"
export BINDS

# Every step runs through this command.
# shellcheck disable=SC2034  # used by the jobs that source this file
CONTAINER=(singularity run)
if [ -n "${BINDS}" ]; then
    CONTAINER+=(--bind "${BINDS}")
fi
# The venv packed into one SquashFS file (bash scripts/setup-venv.sh --pack), bound where it
# was built: /user-software. scripts/run.sh activates it instead of venv/. [AIG-02]
# VENV_PACK= (empty) leaves it out; setup-venv.sh binds the directory it packs from.
VENV_PACK="${VENV_PACK-${PROJECT_DIR}/venv.sqsh}"
if [ -n "${VENV_PACK}" ] && [ -d "${VENV_PACK}" ]; then
    CONTAINER+=(--bind "${VENV_PACK}:/user-software")
elif [ -n "${VENV_PACK}" ] && [ -f "${VENV_PACK}" ]; then
    CONTAINER+=(--bind "${VENV_PACK}:/user-software:image-src=/")
    echo "venv: ${VENV_PACK} bound at /user-software (used instead of venv/)"
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

# srun does not take --cpus-per-task from the job in recent Slurm (it reads
# SRUN_CPUS_PER_TASK): pass it on, so every task gets the cores the job asked for. [TM-Slurm]
if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
    export SRUN_CPUS_PER_TASK="${SLURM_CPUS_PER_TASK}"
fi

# Data and outputs: never under $HOME (see README.md). Override by exporting before sbatch.
DATA_DIR="${DATA_DIR:-/scratch/project_465000000/datasets/demo}"
OUTPUT_ROOT="${OUTPUT_ROOT:-/scratch/project_465000000/${USER}/demo/outputs}"
# The run directory: every job of one run writes its checkpoints here and resumes from the
# newest, so a resubmitted or chained job goes on where the last one stopped. Another
# RUN_NAME (RUN_NAME=lr-0.1 sbatch jobs/train.sbatch) starts another run.
RUN_NAME="${RUN_NAME:-demo}"
if ! [[ "${RUN_NAME}" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
    echo "RUN_NAME='${RUN_NAME}' is not a plain name: use letters, digits, . _ - (it names a directory)." >&2
    return 2
fi
RUN_DIR="${OUTPUT_ROOT}/${RUN_NAME}"
export DATA_DIR OUTPUT_ROOT RUN_NAME RUN_DIR

# Experiment tracking with MLflow (src/demo/runlog.py, rank 0): every job of a run
# logs into one tracked run, its id kept in RUN_DIR/tracking.json. TRACKING=none sbatch ...
# leaves a job out of it.
TRACKING="${TRACKING:-mlflow}"
if [ "${TRACKING}" != mlflow ] && [ "${TRACKING}" != none ]; then
    echo "TRACKING='${TRACKING}': this project tracks with mlflow (or none). Fix: lumi-scaffold update -d tracking=<tracker> adds another's package" >&2
    return 2
fi
export LUMI_SCAFFOLD_TRACKING="${TRACKING}" LUMI_SCAFFOLD_PROJECT=demo
# MLflow's file store in the output area, one for all the project's runs (set MLFLOW_TRACKING_URI
# for a server or an SQLite file instead). MLflow 3.17 refuses a file store unless
# MLFLOW_ALLOW_FILE_STORE=true (older releases ignore it); unlike SQLite, it takes many jobs
# writing at once on a shared file system.
export MLFLOW_TRACKING_URI="${MLFLOW_TRACKING_URI:-${OUTPUT_ROOT}/mlruns}"
export MLFLOW_ALLOW_FILE_STORE="${MLFLOW_ALLOW_FILE_STORE:-true}"

# The job report (src/demo/runlog.py): rank 0 of a training or profiling step writes
# RUN_DIR/reports/<job id>.json and prints one line when its training ends and at Slurm's
# time-limit warning (time_is_up), with the GPU-hours billed from the job's start by the
# site's rule: the rate of one node as the job file's own #SBATCH lines ask for it, times the
# job's nodes (sbatch --nodes counts; other options given to sbatch on the command line do not).
#   report_job KIND
report_job() {
    LUMI_SCAFFOLD_JOB_KIND="$1"
    LUMI_SCAFFOLD_JOB_START="$(date +%s)"
    LUMI_SCAFFOLD_TIME_UP="${PROJECT_DIR}/logs/time-up-${SLURM_JOB_ID:-0}"
    rm -f "${LUMI_SCAFFOLD_TIME_UP}"
    unset LUMI_SCAFFOLD_BILLING_PER_NODE LUMI_SCAFFOLD_BILLING_UNIT
    case "$1" in
        profile) LUMI_SCAFFOLD_BILLING_PER_NODE=4 LUMI_SCAFFOLD_BILLING_UNIT=GPU-hours ;;
        train) LUMI_SCAFFOLD_BILLING_PER_NODE=4 LUMI_SCAFFOLD_BILLING_UNIT=GPU-hours ;;
        *) ;;
    esac
    export LUMI_SCAFFOLD_JOB_KIND LUMI_SCAFFOLD_JOB_START LUMI_SCAFFOLD_TIME_UP
    export LUMI_SCAFFOLD_BILLING_PER_NODE LUMI_SCAFFOLD_BILLING_UNIT
}
# Tells the job's rank 0 that Slurm's time-limit warning came: it reports within seconds.
time_is_up() {
    touch "${LUMI_SCAFFOLD_TIME_UP}" 2>/dev/null || true
}

# Sets DATA_ARGS, the data arguments of the training script.
# shellcheck disable=SC2034  # DATA_ARGS is read by the jobs that call stage_data
stage_data() {
    DATA_ARGS=()
    if [ -d "${DATA_DIR}" ]; then
        DATA_ARGS=(--data "${DATA_DIR}")
    else
        echo "No data in ${DATA_DIR}; training on synthetic data." >&2
    fi
}

# Kernel caches (scripts/caches.sh), one set per image: restored from the project's cache area
# into node-local /tmp on every node when a job starts, saved back from the first node
# after its training step has ended (not while MIOpen may be writing), so the next job does
# not compile the same kernels again. KEEP_KERNEL_CACHES=0 sbatch ... skips both.
# One task per node; --overlap: it holds none of the job's resources when the training step
# starts right after it (Slurm frees a step's resources node by node).
restore_caches() {
    if [ "${KEEP_KERNEL_CACHES:-1}" = 1 ]; then
        srun --overlap --nodes="${SLURM_JOB_NUM_NODES:-1}" --ntasks="${SLURM_JOB_NUM_NODES:-1}" --ntasks-per-node=1 \
            bash "${PROJECT_DIR}/scripts/caches.sh" restore \
            || echo "caches: not restored (above); this job compiles its kernels anew" >&2
    fi
}
# One task on the job's first node; --overlap: it does not wait for the job's other steps.
save_caches() {
    if [ "${KEEP_KERNEL_CACHES:-1}" = 1 ]; then
        srun --overlap --nodes=1 --ntasks=1 \
            --nodelist="$(scontrol show hostnames "${SLURM_JOB_NODELIST}" | head -n 1)" \
            bash "${PROJECT_DIR}/scripts/caches.sh" save \
            || echo "caches: not saved (above)" >&2
    fi
}

# Starts src/demo/train.py on every rank of the job, each rank through
# scripts/WRAPPER: run.sh, or run-profile.sh to profile one rank.
#   launch WRAPPER [train.py arguments...]
# One task per node; torchrun starts a worker per GPU and rendezvouses at MASTER_ADDR. [AIG-05]
# Its workers are not bound to cores: the catalogue does not know your image's PyTorch.
# With PyTorch 2.9 or later, add --numa-binding=exclusive to the torchrun line. [AIG-05]
# The srun launcher binds each rank to its GPU's cores (lumi-scaffold update -d launcher=srun).
launch() {
    local wrapper="${PROJECT_DIR}/scripts/$1"
    shift
    srun --kill-on-bad-exit=1 "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/run.sh" \
        python -m torch.distributed.run \
        --nnodes="${SLURM_JOB_NUM_NODES}" --nproc_per_node=8 \
        --rdzv_id="${SLURM_JOB_ID}" --rdzv_backend=c10d --rdzv_endpoint="${MASTER_ADDR}:${MASTER_PORT}" \
        --no-python "${wrapper}" python -u "${PROJECT_DIR}/src/demo/train.py" "$@"
}

# Runs a job step in the background (STEP_PID) and waits for it, so that a signal trap
# (the time-limit warning in jobs/train.sbatch) runs at once instead of after the step.
# Returns the step's status.
run_step() {
    "$@" &
    STEP_PID=$!
    local status=0 again
    while kill -0 "${STEP_PID}" 2>/dev/null; do
        wait "${STEP_PID}" && status=0 || status=$?   # >128 too when a trapped signal woke us
    done
    # Once more for the step's own status, had a trap run just as it ended (bash 5 keeps it;
    # 127: already reported above).
    wait "${STEP_PID}" 2>/dev/null && again=0 || again=$?
    if [ "${again}" != 127 ]; then
        status="${again}"
    fi
    return "${status}"
}

# The progress watchdog (scripts/watchdog.py), beside a training or profiling step: when no
# rank made progress (a heartbeat every step, or output) for PROGRESS_TIMEOUT seconds, or
# for STARTUP_TIMEOUT seconds before the first heartbeat, it prints the last rank and node
# that made progress, dumps every rank's stacks, and stops the step; the job then fails
# (the RCCL logs in logs/ stay). The jobs set both limits; 0 turns the watchdog off.
#   watch_progress; run_step launch ...; stop_watching
watch_progress() {
    # shellcheck disable=SC2034  # STALLED is read by the jobs that source this file
    STALLED=0 WATCHDOG_PID=""
    local limit
    for limit in PROGRESS_TIMEOUT STARTUP_TIMEOUT; do
        if ! [[ "${!limit}" =~ ^[0-9]{1,7}$ ]]; then
            echo "${limit}='${!limit}' is not a number of seconds: e.g. ${limit}=1800 sbatch ... (0: no watchdog)" >&2
            return 2
        fi
    done
    # The frameworks' own collective timeouts stay below the watchdog (src/demo/train.py reads
    # this): 600 s, or two thirds of a shorter PROGRESS_TIMEOUT.
    LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT=600
    if [ "${PROGRESS_TIMEOUT}" -gt 0 ] && [ "${PROGRESS_TIMEOUT}" -le 900 ]; then
        LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT="$(( PROGRESS_TIMEOUT * 2 / 3 > 0 ? PROGRESS_TIMEOUT * 2 / 3 : 1 ))"
    fi
    export LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT
    if [ "${PROGRESS_TIMEOUT}" = 0 ]; then
        echo "watchdog: off (PROGRESS_TIMEOUT=0)"
        return 0
    fi
    # scripts/run.sh gives every rank its heartbeat file in here.
    LUMI_SCAFFOLD_HEARTBEAT_DIR="${PROJECT_DIR}/logs/heartbeat-${SLURM_JOB_ID}"
    rm -rf "${LUMI_SCAFFOLD_HEARTBEAT_DIR}"
    mkdir -p "${LUMI_SCAFFOLD_HEARTBEAT_DIR}"
    export LUMI_SCAFFOLD_HEARTBEAT_DIR
    local output
    output="$(scontrol show job "${SLURM_JOB_ID}" 2>/dev/null | sed -n 's/^ *StdOut=//p' | head -n 1)"
    trap on_stall USR2
    LUMI_SCAFFOLD_HELPER=1 "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/run.sh" python "${PROJECT_DIR}/scripts/watchdog.py" \
        watch --dir "${LUMI_SCAFFOLD_HEARTBEAT_DIR}" --timeout "${PROGRESS_TIMEOUT}" --startup "${STARTUP_TIMEOUT}" \
        --notify "$$" --interval "$(( PROGRESS_TIMEOUT < 10 ? 1 : 5 ))" --output ${output:+"${output}"} &
    WATCHDOG_PID=$!
    echo "watchdog: on (PROGRESS_TIMEOUT=${PROGRESS_TIMEOUT} s, STARTUP_TIMEOUT=${STARTUP_TIMEOUT} s before the first heartbeat)"
}

# On the watchdog's signal: every rank's stacks (one helper task per node), then the step stops.
# shellcheck disable=SC2329  # invoked by the trap in watch_progress
on_stall() {
    # shellcheck disable=SC2034  # read by the jobs that source this file
    STALLED=1
    echo "watchdog: the stacks of every rank follow; RCCL's logs stay in logs/rccl-${SLURM_JOB_ID}-rank*.txt" >&2
    LUMI_SCAFFOLD_HELPER=1 timeout 120 srun --overlap --nodes="${SLURM_JOB_NUM_NODES:-1}" --ntasks="${SLURM_JOB_NUM_NODES:-1}" \
        --ntasks-per-node=1 "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/run.sh" \
        python "${PROJECT_DIR}/scripts/watchdog.py" dump --dir "${LUMI_SCAFFOLD_HEARTBEAT_DIR}" \
        || echo "watchdog: could not collect the stacks (above)" >&2
    if [ -n "${STEP_PID:-}" ]; then
        kill -TERM "${STEP_PID}" 2>/dev/null || true
        ( sleep 60; kill -KILL "${STEP_PID}" 2>/dev/null ) &   # a rank that ignores SIGTERM
    fi
}

# Ends the watchdog after the step.
stop_watching() {
    trap - USR2
    if [ -n "${WATCHDOG_PID}" ]; then
        kill -TERM "${WATCHDOG_PID}" 2>/dev/null || true
        wait "${WATCHDOG_PID}" 2>/dev/null || true
    fi
}
