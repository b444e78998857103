#!/bin/bash
# The jobs' library: host-side setup shared by every job in jobs/, by the steps you run in
# jobs/interactive.sh and by scripts/setup-venv.sh. It runs OUTSIDE the container: Slurm
# tools and modules exist only out here. This file is the same in every project made by
# lumi-scaffold; this project's values (image, binds, modules, paths, launch, costs) are in
# scripts/values.sh, which `lumi-scaffold update` rewrites when the site moves its images.

# USER is set in login shells and jobs; the default keeps `set -u` working in bare shells.
export USER="${USER:-$(id -un)}"

# The project directory: where sbatch was run (the README runs every job from there).
PROJECT_DIR="${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
export PROJECT_DIR
# shellcheck source=values-lib.sh
source "${PROJECT_DIR}/scripts/values-lib.sh"

# sbatch hands the job the environment of the shell that submitted it (--export=ALL),
# modules loaded by hand included. Start from a known state: no bind paths or variables for
# the container but the ones set here (add binds with BINDS=..., variables in
# scripts/run.sh; Apptainer reads the SINGULARITY_ names too), and the modules as
# module_reset in values.sh says.
unset SINGULARITY_BIND SINGULARITY_BINDPATH APPTAINER_BIND APPTAINER_BINDPATH
while read -r name; do
    unset "${name}"
done < <(compgen -e | grep -E '^(SINGULARITY|APPTAINER)ENV_' || true)
if [ -n "${module_reset}" ]; then
    module "${module_reset}"
fi

# The image (values.sh says which, and its known issues); SIF=/path/to/image.sif uses another.
# A path that starts with a variable from the environment is checked here, so that a job
# with no image stops with one line.
if [ -z "${SIF:-}" ] && [ -n "${image_variable}" ] && [ ! -f "$(expand "${image}")" ]; then
    echo "No image at ${image} (${image_variable}=${!image_variable:-<unset>}): set ${image_variable}, or give the image with SIF=/path/to/image.sif" >&2
    return 2
fi
SIF="${SIF:-$(expand "${image}")}"
export SIF

# The modules the image needs, loaded in order.
for step in "${modules[@]}"; do
    read -r verb module directory <<<"${step}"
    case "${verb}" in
        load) module load "${module}" ;;
        use) module use "${module}" ;;
        load-or-use)
            if module is-avail "${module}" 2>/dev/null; then
                module load "${module}"
            else
                module use "${directory}"
            fi
            ;;
        *) echo "scripts/values.sh: modules: '${step}' is not 'load NAME', 'use DIRECTORY' or 'load-or-use NAME DIRECTORY'" >&2; return 2 ;;
    esac
done

BINDS="${BINDS:-$(expand "${binds}")}"
export BINDS

# Every step runs through this command.
# shellcheck disable=SC2034  # used by the jobs that source this file
CONTAINER=("${container_command[@]}")
if [ -n "${BINDS}" ]; then
    CONTAINER+=(--bind "${BINDS}")
fi
# The venv packed into one SquashFS file (bash scripts/setup-venv.sh --pack), bound where it
# was built: /user-software. scripts/run.sh activates it instead of venv/.
# VENV_PACK= (empty) leaves it out; setup-venv.sh binds the directory it packs from.
VENV_PACK="${VENV_PACK-${PROJECT_DIR}/venv.sqsh}"
if [ -n "${VENV_PACK}" ] && [ -d "${VENV_PACK}" ]; then
    CONTAINER+=(--bind "${VENV_PACK}:/user-software")
elif [ -n "${VENV_PACK}" ] && [ -f "${VENV_PACK}" ]; then
    CONTAINER+=(--bind "${VENV_PACK}:/user-software:image-src=/")
    echo "venv: ${VENV_PACK} bound at /user-software (used instead of venv/)"
fi
CONTAINER+=("${SIF}")

# Rendezvous for torch.distributed (rendezvous=1 in values.sh), computed out here because
# there are no Slurm tools inside the container.
if [ "${rendezvous}" = 1 ] && [ -n "${SLURM_JOB_NODELIST:-}" ]; then
    MASTER_ADDR="$(scontrol show hostnames "${SLURM_JOB_NODELIST}" | head -n 1)"
    # 1 + the job id's last four digits, so two jobs on one shared node do not collide; also
    # right for job ids under four digits.
    MASTER_PORT="$((10000 + SLURM_JOB_ID % 10000))"
    export MASTER_ADDR MASTER_PORT
fi

# srun does not take --cpus-per-task from the job in recent Slurm (it reads
# SRUN_CPUS_PER_TASK): pass it on, so every task gets the cores the job asked for.
if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
    export SRUN_CPUS_PER_TASK="${SLURM_CPUS_PER_TASK}"
fi

# The storage paths that start with a variable from the environment jobs are submitted
# from: checked here, so that a job without it stops with one line.
for var in "${storage_variables[@]}"; do
    if [ -z "${!var:-}" ]; then
        echo "${var} is not set: the project's data, outputs and caches are under \${${var}} (scripts/values.sh). Fix: set ${var} in the shell that submits the job" >&2
        return 2
    fi
done

# Data and outputs: never under $HOME (see README.md). Override by exporting before sbatch.
DATA_DIR="${DATA_DIR:-$(expand "${dataset_dir}")}"
OUTPUT_ROOT="${OUTPUT_ROOT:-$(expand "${output_root}")}"
# The run directory: every job of one run writes its checkpoints here and resumes from the
# newest, so a resubmitted or chained job goes on where the last one stopped. Another
# RUN_NAME (RUN_NAME=lr-0.1 sbatch jobs/train.sbatch) starts another run.
RUN_NAME="${RUN_NAME:-${run_name}}"
if ! [[ "${RUN_NAME}" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
    echo "RUN_NAME='${RUN_NAME}' is not a plain name: use letters, digits, . _ - (it names a directory)." >&2
    return 2
fi
RUN_DIR="${OUTPUT_ROOT}/${RUN_NAME}"
export DATA_DIR OUTPUT_ROOT RUN_NAME RUN_DIR

# Experiment tracking (tracking in values.sh; none when empty): TRACKING=none sbatch ...
# leaves a job out of it.
if [ -n "${tracking}" ]; then
    TRACKING="${TRACKING:-${tracking}}"
    if [ "${TRACKING}" != "${tracking}" ] && [ "${TRACKING}" != none ]; then
        echo "TRACKING='${TRACKING}': this project tracks with ${tracking} (or none). Fix: lumi-scaffold update -d tracking=<tracker> adds another's package" >&2
        return 2
    fi
    export LUMI_SCAFFOLD_TRACKING="${TRACKING}" LUMI_SCAFFOLD_PROJECT="${project_name}"
    for setting in "${tracking_defaults[@]}"; do   # each only where you have not set it
        name="${setting%%=*}"
        if [ -z "${!name:-}" ]; then
            export "${name}=$(expand "${setting#*=}")"
        fi
    done
fi

# The job report (src/<package>/runlog.py): rank 0 of a training or profiling step writes
# RUN_DIR/reports/<job id>.json and prints one line when its training ends and at Slurm's
# time-limit warning (time_is_up), with the GPU-hours billed from the job's start by the
# site's rule for the job kind (billing_KIND in values.sh) times the job's nodes; none
# where the site's data has no billing rule.
#   report_job KIND
report_job() {
    LUMI_SCAFFOLD_JOB_KIND="$1"
    LUMI_SCAFFOLD_JOB_START="$(date +%s)"
    LUMI_SCAFFOLD_TIME_UP="${PROJECT_DIR}/logs/time-up-${SLURM_JOB_ID:-0}"
    rm -f "${LUMI_SCAFFOLD_TIME_UP}"
    unset LUMI_SCAFFOLD_BILLING_PER_NODE LUMI_SCAFFOLD_BILLING_UNIT
    local billing="billing_$1"
    if [ -n "${!billing:-}" ]; then
        read -r LUMI_SCAFFOLD_BILLING_PER_NODE LUMI_SCAFFOLD_BILLING_UNIT <<<"${!billing}"
    fi
    export LUMI_SCAFFOLD_JOB_KIND LUMI_SCAFFOLD_JOB_START LUMI_SCAFFOLD_TIME_UP
    export LUMI_SCAFFOLD_BILLING_PER_NODE LUMI_SCAFFOLD_BILLING_UNIT
}
# Tells the job's rank 0 that Slurm's time-limit warning came: it reports within seconds.
time_is_up() {
    touch "${LUMI_SCAFFOLD_TIME_UP}" 2>/dev/null || true
}

# Pre-staging (prestage=1 in values.sh): scripts/prestage.sh extracts the archive into
# node-local storage on every node. Override: DATASET_ARCHIVE=... sbatch ...
if [ "${prestage}" = 1 ]; then
    DATASET_ARCHIVE="${DATASET_ARCHIVE:-$(expand "${dataset_archive}")}"
    NODE_TMP="${NODE_TMP:-${node_tmp}}"
    STAGE_DIR="${NODE_TMP}/${USER}-${project_name}-${SLURM_JOB_ID:-0}"
    export DATASET_ARCHIVE NODE_TMP STAGE_DIR
fi

# Sets DATA_ARGS, the data arguments of the training script, after staging the data when
# the project pre-stages it.
# shellcheck disable=SC2034  # DATA_ARGS is read by the jobs that call stage_data
stage_data() {
    if [ "${prestage}" = 1 ]; then
        # One task per node (--ntasks too: the step would otherwise take the job's task count).
        # --overlap: this helper step holds none of the job's CPUs, memory and GPUs, which Slurm
        # frees node by node after it ends; a training step asking for all of them on a node not
        # yet freed can be refused outright ("Memory required by task is not available").
        srun --overlap --nodes="${SLURM_JOB_NUM_NODES:-1}" --ntasks="${SLURM_JOB_NUM_NODES:-1}" --ntasks-per-node=1 \
            --kill-on-bad-exit=1 bash "${PROJECT_DIR}/scripts/prestage.sh"
        DATA_ARGS=(--data "${STAGE_DIR}/data")
    elif [ -d "${DATA_DIR}" ]; then
        DATA_ARGS=(--data "${DATA_DIR}")
    else
        DATA_ARGS=()
        echo "No data in ${DATA_DIR}; training on synthetic data." >&2
    fi
}

# Kernel caches (kernel_caches=1 in values.sh; scripts/caches.sh), one set per image:
# restored from the project's cache area into node-local storage on every node when a job
# starts, saved back from the first node after its training step has ended (not while
# MIOpen may be writing), so the next job does not compile the same kernels again.
# KEEP_KERNEL_CACHES=0 sbatch ... skips both. One task per node; --overlap: it holds none
# of the job's resources when the training step starts right after it (Slurm frees a
# step's resources node by node).
restore_caches() {
    if [ "${kernel_caches}" = 1 ] && [ "${KEEP_KERNEL_CACHES:-1}" = 1 ]; then
        srun --overlap --nodes="${SLURM_JOB_NUM_NODES:-1}" --ntasks="${SLURM_JOB_NUM_NODES:-1}" --ntasks-per-node=1 \
            bash "${PROJECT_DIR}/scripts/caches.sh" restore \
            || echo "caches: not restored (above); this job compiles its kernels anew" >&2
    fi
}
# One task on the job's first node; --overlap: it does not wait for the job's other steps.
save_caches() {
    if [ "${kernel_caches}" = 1 ] && [ "${KEEP_KERNEL_CACHES:-1}" = 1 ]; then
        srun --overlap --nodes=1 --ntasks=1 \
            --nodelist="$(scontrol show hostnames "${SLURM_JOB_NODELIST}" | head -n 1)" \
            bash "${PROJECT_DIR}/scripts/caches.sh" save \
            || echo "caches: not saved (above)" >&2
    fi
}

# Starts the training script (train_script in values.sh) on every rank of the job, each
# rank through scripts/WRAPPER: run.sh, or run-profile.sh to profile one rank. How the ranks
# start and get their CPUs: the launch values in values.sh, and the comment above them.
# --kill-on-bad-exit ends every rank when one fails.
# The script runs in DIR (the run directory, which RUN_DIR names too), so files it writes by
# relative path land there, not in the project directory. The job's --output DIR, and its
# --data DATA (stage_data's DATA_ARGS, first when given), go only to a script that defines
# that option (the quoted "--output" or "--data" in its text, as argparse's
# add_argument("--output", ...) has it): a script that parses its arguments strictly and
# takes neither is not given them (its environment names both: RUN_DIR, and DATA_DIR or,
# pre-staged, STAGE_DIR/data). An argument that names a file or directory of the project by
# relative path (data/train, --config=conf/a.yaml) is given as an absolute path, so it
# still names that file from DIR.
#   launch WRAPPER DIR [--data DATA] [train.py arguments...]
launch() {
    local wrapper="${PROJECT_DIR}/scripts/$1" dir arg
    if ! dir="$(cd "$2" 2>/dev/null && pwd)"; then
        echo "launch: no directory '$2' to start train.py in (the run directory). Fix: check OUTPUT_ROOT and RUN_NAME" >&2
        return 2
    fi
    shift 2
    local given=() args=() made=()
    for arg in "${train_args[@]}"; do
        given+=("$(expand "${arg}")")
    done
    if takes_option --output; then
        given+=(--output "${dir}")
    fi
    if [ "${1:-}" = --data ]; then
        if takes_option --data; then
            given+=(--data "$2")
        fi
        shift 2
    fi
    for arg in "${given[@]}" "$@"; do
        local value="${arg}" option=""
        if [[ "${arg}" == -*=* ]]; then
            option="${arg%%=*}=" value="${arg#*=}"
        fi
        if [ -n "${value}" ] && [[ "${value}" != [/-]* ]] && [ -e "${PROJECT_DIR}/${value}" ]; then
            made+=("${value}")
            value="${PROJECT_DIR}/${value}"
        fi
        args+=("${option}${value}")
    done
    if [ "${#made[@]}" -gt 0 ]; then
        echo "launch: in ${dir}, these arguments name the project's files by absolute path: ${made[*]}"
    fi
    local step=(srun --kill-on-bad-exit=1 --chdir="${dir}")
    if [ "${launcher}" = torchrun ]; then
        step+=("${srun_options[@]}" "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/run.sh"
            python -m torch.distributed.run ${numa_binding:+"--numa-binding=${numa_binding}"}
            --nnodes="${SLURM_JOB_NUM_NODES}" --nproc_per_node="${ranks_per_task}"
            --rdzv_id="${SLURM_JOB_ID}" --rdzv_backend=c10d --rdzv_endpoint="${MASTER_ADDR}:${MASTER_PORT}"
            --no-python "${wrapper}")
    else
        step+=(${cpu_bind:+"--cpu-bind=${cpu_bind}"} "${srun_options[@]}" "${CONTAINER[@]}" "${wrapper}")
    fi
    "${step[@]}" python -u "${PROJECT_DIR}/${train_script}" "${args[@]}"
}

# Whether the training script defines the option $1: its text has it in quotes.
takes_option() {
    grep -q -E "[\"']$1[\"']" "${PROJECT_DIR}/${train_script}" 2>/dev/null
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

# The progress watchdog (scripts/watchdog.py), beside a training or profiling step. A
# training script that imports src/<package>/heartbeat.py (the examples do) announces
# itself, and is stopped when no rank made progress (a heartbeat) for PROGRESS_TIMEOUT
# seconds: STARTUP_TIMEOUT before the first heartbeat, when output counts too, and
# PHASE_TIMEOUT while a rank is in a phase it declared (a checkpoint, an evaluation, the
# first step). A script that never imports it is judged by the job's output alone: it is
# stopped when that did not grow for OUTPUT_TIMEOUT seconds. Before it stops the step it
# prints which limit applied and the last rank and node that made progress, and dumps every
# rank's stacks; the job then fails (the RCCL logs in logs/ stay). The jobs set
# PROGRESS_TIMEOUT and STARTUP_TIMEOUT, and may set the other two (defaults here); each is
# seconds, 0 turns it off (PROGRESS_TIMEOUT=0: the whole watchdog).
#   watch_progress; run_step launch ...; stop_watching
watch_progress() {
    # shellcheck disable=SC2034  # STALLED is read by the jobs that source this file
    STALLED=0 WATCHDOG_PID=""
    PHASE_TIMEOUT="${PHASE_TIMEOUT:-3600}"
    OUTPUT_TIMEOUT="${OUTPUT_TIMEOUT:-21600}"
    local limit
    for limit in PROGRESS_TIMEOUT STARTUP_TIMEOUT PHASE_TIMEOUT OUTPUT_TIMEOUT; do
        if ! [[ "${!limit}" =~ ^[0-9]{1,7}$ ]]; then
            echo "${limit}='${!limit}' is not a number of seconds: e.g. ${limit}=1800 sbatch ... (0: no limit)" >&2
            return 2
        fi
    done
    # How often a node's heartbeat file on the shared file system may be rewritten
    # (src/<package>/heartbeat.py reads it): every PROGRESS_TIMEOUT/20 seconds, never more
    # often than every 10 s (one file per node: at 128 nodes and the default limit, about two
    # writes a second for the whole job); a third of a limit under 30 s (tests), so that
    # progress still shows within it.
    LUMI_SCAFFOLD_HEARTBEAT_INTERVAL="$(( PROGRESS_TIMEOUT / 20 > 10 ? PROGRESS_TIMEOUT / 20 : 10 ))"
    if [ "${PROGRESS_TIMEOUT}" -lt 30 ]; then
        LUMI_SCAFFOLD_HEARTBEAT_INTERVAL="$(( PROGRESS_TIMEOUT / 3 > 1 ? PROGRESS_TIMEOUT / 3 : 1 ))"
    fi
    # A node's file is up to one interval old, and a rank's record in it one second more:
    # the watchdog waits that long past a limit before it judges.
    local slack=$(( LUMI_SCAFFOLD_HEARTBEAT_INTERVAL + 2 ))
    # The frameworks' own collective timeouts (the examples read this) sit above every
    # allowance of the watchdog. A rank that waits in a collective while another rank writes
    # a checkpoint, evaluates or compiles its first step is waiting for a phase the watchdog
    # allows PHASE_TIMEOUT (STARTUP_TIMEOUT before the first step): a timeout below that
    # would end a healthy job, whatever PROGRESS_TIMEOUT says. So it is the largest of the
    # three limits, plus the time the watchdog takes to notice (the slack and a minute),
    # and it grows with them; the watchdog, which knows the phases, judges a hang, and the
    # framework's timeout ends one only where the watchdog is off or gone.
    local largest="${PROGRESS_TIMEOUT}"
    for limit in STARTUP_TIMEOUT PHASE_TIMEOUT; do
        largest=$(( ${!limit} > largest ? ${!limit} : largest ))
    done
    LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT=$(( largest + slack + 60 ))
    export LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT LUMI_SCAFFOLD_HEARTBEAT_INTERVAL
    if [ "${PROGRESS_TIMEOUT}" = 0 ]; then
        echo "watchdog: off (PROGRESS_TIMEOUT=0)"
        return 0
    fi
    # scripts/run.sh gives every rank its name in here; heartbeat.py writes one file per node.
    LUMI_SCAFFOLD_HEARTBEAT_DIR="${PROJECT_DIR}/logs/heartbeat-${SLURM_JOB_ID}"
    rm -rf "${LUMI_SCAFFOLD_HEARTBEAT_DIR}"
    mkdir -p "${LUMI_SCAFFOLD_HEARTBEAT_DIR}"
    # (when it started: it names the ranks' node-local records, so a step never reads an
    # earlier step's)
    LUMI_SCAFFOLD_HEARTBEAT_STARTED="$(date +%s%N)"
    export LUMI_SCAFFOLD_HEARTBEAT_DIR LUMI_SCAFFOLD_HEARTBEAT_STARTED
    local output
    output="$(scontrol show job "${SLURM_JOB_ID}" 2>/dev/null | sed -n 's/^ *StdOut=//p' | head -n 1)"
    trap on_stall USR2
    LUMI_SCAFFOLD_HELPER=1 "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/run.sh" python "${PROJECT_DIR}/scripts/watchdog.py" \
        watch --dir "${LUMI_SCAFFOLD_HEARTBEAT_DIR}" --timeout "${PROGRESS_TIMEOUT}" --startup "${STARTUP_TIMEOUT}" \
        --phase-timeout "${PHASE_TIMEOUT}" --output-timeout "${OUTPUT_TIMEOUT}" --slack "${slack}" \
        --notify "$$" --interval "$(( PROGRESS_TIMEOUT < 10 ? 1 : 5 ))" --output ${output:+"${output}"} &
    WATCHDOG_PID=$!
    local by_output="no limit (OUTPUT_TIMEOUT=0)"
    if [ "${OUTPUT_TIMEOUT}" != 0 ]; then
        by_output="stopped when the job's output does not grow for OUTPUT_TIMEOUT=${OUTPUT_TIMEOUT} s"
    fi
    echo "watchdog: on; until the training script imports heartbeat.py it is judged by its output alone: ${by_output}." \
        "A script that imports it gets STARTUP_TIMEOUT=${STARTUP_TIMEOUT} s before its first heartbeat," \
        "PROGRESS_TIMEOUT=${PROGRESS_TIMEOUT} s after, PHASE_TIMEOUT=${PHASE_TIMEOUT} s in a phase." \
        "For a tighter guard, add to train.py: from heartbeat import Heartbeat (then Heartbeat().beat(step) each step)"
}

# On the watchdog's signal: every rank's stacks (one helper task per node), then the step
# stops: scancel of the training step (its id found with squeue before the helper step
# starts), which Slurm carries out on every node of the step, a rank blocked in C code
# included; where no step id is found, SIGTERM to srun, SIGKILL 60 s later.
# shellcheck disable=SC2329  # invoked by the trap in watch_progress
on_stall() {
    # shellcheck disable=SC2034  # read by the jobs that source this file
    STALLED=1
    local steps=() step
    mapfile -t steps < <(squeue --noheader --steps --jobs="${SLURM_JOB_ID}" --format=%i 2>/dev/null \
        | grep -E "^${SLURM_JOB_ID}\.[0-9]+$" || true)
    echo "watchdog: the stacks of every rank follow; RCCL's logs stay in logs/rccl-${SLURM_JOB_ID}-rank*.txt" >&2
    LUMI_SCAFFOLD_HELPER=1 timeout 120 srun --overlap --nodes="${SLURM_JOB_NUM_NODES:-1}" --ntasks="${SLURM_JOB_NUM_NODES:-1}" \
        --ntasks-per-node=1 "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/run.sh" \
        python "${PROJECT_DIR}/scripts/watchdog.py" dump --dir "${LUMI_SCAFFOLD_HEARTBEAT_DIR}" \
        || echo "watchdog: could not collect the stacks (above)" >&2
    for step in "${steps[@]}"; do
        if scancel "${step}"; then
            echo "watchdog: cancelled step ${step} (scancel)" >&2
        else
            echo "watchdog: scancel ${step} failed (above); stopping srun instead" >&2
            steps=()
        fi
    done
    if [ -n "${STEP_PID:-}" ]; then
        if [ "${#steps[@]}" = 0 ]; then
            kill -TERM "${STEP_PID}" 2>/dev/null || true
        fi
        ( sleep 60; kill -KILL "${STEP_PID}" 2>/dev/null ) &   # an srun that does not return
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

# Removes the heartbeat directory after a step the watchdog did not stop, once the job has
# read its evidence (job_outcome); a stall's files stay. Rank-local records are in the
# job's node-local TMPDIR.
drop_heartbeats() {
    if [ -n "${WATCHDOG_PID}" ] && [ "${STALLED}" = 0 ] && [ ! -e "${LUMI_SCAFFOLD_HEARTBEAT_DIR}/stalled" ]; then
        rm -rf "${LUMI_SCAFFOLD_HEARTBEAT_DIR}"
    fi
}

# The training job (jobs/train.sbatch): [--chain N] [train.py arguments].
# Every job of a run writes into one run directory (RUN_DIR) and resumes from its newest
# checkpoint. --chain N (first argument; chains=1 in values.sh) makes this the first of up
# to N jobs: each queues the next, which starts when this one ends and resumes the run; a
# job whose training finishes (or that fails or is cancelled before Slurm's time-limit
# warning) cancels the rest; a job the progress watchdog stopped is replaced, once per
# chain, by one without the node that stalled.
train_job() {
    report_job train
    # The progress watchdog stops the job when no rank made progress for PROGRESS_TIMEOUT
    # seconds (STARTUP_TIMEOUT until the first step's heartbeat): a hung collective then
    # costs minutes, not the rest of the time limit. The job file sets both.
    PROGRESS_TIMEOUT="${PROGRESS_TIMEOUT:-1200}"
    STARTUP_TIMEOUT="${STARTUP_TIMEOUT:-1800}"

    chain=1
    if [ "${1:-}" = "--chain" ]; then
        if [ "${chains}" != 1 ]; then
            echo "--chain: ${chains_refused}. Fix: train long runs on another partition (lumi-scaffold update -d partition=<name>)" >&2
            exit 2
        fi
        chain="${2:-}"
        if ! [[ "${chain}" =~ ^[1-9][0-9]{0,2}$ ]]; then
            echo "--chain needs the number of jobs (1-999), e.g. sbatch jobs/train.sbatch --chain 4" >&2
            exit 2
        fi
        shift 2
    fi

    # Slurm's warning signal_lead seconds before the time limit (--signal in the job file):
    # from then on a job that ends unfinished ran out of time, and the next job of the chain
    # (or submitting again) continues the run. A job that finishes the training, fails before
    # the warning, or is cancelled (scancel; Ctrl-C or a lost allocation when run by hand)
    # ends the chain. The kernel caches are saved after the training step has ended, not at
    # the warning: MIOpen may be writing to them while the step runs.
    time_up=0
    next_job=""
    trap 'time_up=1; echo "time limit in ${signal_lead} s${next_job:+: job ${next_job} continues the run}" >&2; time_is_up' USR1
    trap 'stop_train TERM' TERM
    trap 'stop_train INT' INT
    trap 'stop_train HUP' HUP

    stage_data
    restore_caches
    mkdir -p "${RUN_DIR}"
    echo "$(date -Iseconds) job ${SLURM_JOB_ID} (${SLURM_JOB_NAME:-}) on ${SLURM_JOB_NODELIST}" >>"${RUN_DIR}/jobs.txt"
    if [ "${chain}" -gt 1 ] && [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then
        echo "chain: this job was requeued; its first start queued the next one" >&2
    elif [ "${chain}" -gt 1 ]; then
        # Queued before training, so it runs even when this job is ended by its time limit (afterany).
        if next_job="$(cd "${PROJECT_DIR}" && sbatch --parsable --dependency="afterany:${SLURM_JOB_ID}" \
            jobs/train.sbatch --chain "$((chain - 1))" "$@")"; then
            echo "chain: job ${next_job} continues run ${RUN_NAME} after this one ($((chain - 1)) more job(s) at most)"
        else
            next_job=""
            echo "chain: could not queue the next job (above); this one trains, and the chain ends with it" >&2
        fi
    fi
    local status=0 retry what exclude=()
    flight_recorder
    watch_progress
    run_step launch run.sh "${RUN_DIR}" "${DATA_ARGS[@]}" "$@" || status=$?
    stop_watching
    save_caches
    if [ "${STALLED}" = 1 ]; then
        status=$(( status == 0 ? 1 : status ))
    fi
    job_outcome "${status}"
    drop_heartbeats
    rm -f "${LUMI_SCAFFOLD_TIME_UP}"
    if [ "${FAULT_DECISION}" = finished ]; then
        stop_chain "training finished"
    elif [ "${FAULT_HANG}" = 1 ] && [ "${FAULT_DECISION}" != stop ] && [ "${chain}" -gt 1 ]; then
        # A hang in a chain (fault.py's decision): once per chain, the run goes on from its
        # newest checkpoint in a job that replaces this one, without a node only on evidence
        # against it; a second hang ends the chain.
        what="a collective timed out in this job (a hang)"
        if [ "${FAULT_CAUSE}" != "collective timeout" ]; then
            what="the watchdog stopped this job"
        fi
        if [ -n "${FAULT_EXCLUDE}" ]; then
            exclude=(--exclude="${FAULT_EXCLUDE}")
            stop_chain "${what}; a job without ${FAULT_EXCLUDE} replaces it"
        else
            stop_chain "${what}; a job on any nodes replaces it (software hang suspected)"
        fi
        if retry="$(cd "${PROJECT_DIR}" && LUMI_SCAFFOLD_STALLED_BEFORE="${FAULT_EXCLUDE:-a software hang in job ${SLURM_JOB_ID}}" \
            sbatch --parsable "${exclude[@]}" --dependency="afterany:${SLURM_JOB_ID}" jobs/train.sbatch --chain "${chain}" "$@")"; then
            echo "chain: job ${retry} resumes run ${RUN_NAME} from its newest checkpoint${FAULT_EXCLUDE:+, without node ${FAULT_EXCLUDE}}" >&2
        else
            echo "chain: could not queue a job to resume (above); the chain ends here" >&2
        fi
    elif [ "${FAULT_DECISION}" = stop ]; then
        stop_chain "${FAULT_REASON}"
    fi
    exit "${status}"
}

# PyTorch's Flight Recorder for the training step: every rank keeps its last collectives in
# a ring buffer and, when a NCCL/RCCL collective times out, writes them to
# RUN_DIR/flight-recorder/<job id>/rank-<R>, from which scripts/fault.py names the rank that
# never entered the collective the others wait in. gloo writes no dump on its timeout. The
# names follow the image's torch, read once per job: from 2.10 on the TORCH_FR_ names alone
# (pytorch/pytorch PR #167395; the buffer's name since 2.8: NVIDIA/nvidia-resiliency-ext#163),
# since torch 2.11 and later warn on every rank where the older TORCH_NCCL_ names are set
# (seen with 2.11 on a GPU and 2.13 on the CPU); before 2.10 the
# TORCH_NCCL_ names, which every release reads (PyTorch, "ProcessGroupNCCL Environment
# Variables"); both where the version is unknown. Your own values win.
flight_recorder() {
    FLIGHT_DIR="${RUN_DIR}/flight-recorder/${SLURM_JOB_ID:-0}"
    mkdir -p "${FLIGHT_DIR}"
    local version minor=-1 size="${TORCH_FR_BUFFER_SIZE:-${TORCH_NCCL_TRACE_BUFFER_SIZE:-2000}}"
    local file="${TORCH_FR_DUMP_TEMP_FILE:-${TORCH_NCCL_DEBUG_INFO_TEMP_FILE:-${FLIGHT_DIR}/rank-}}"
    version="$(image_torch_version)"
    if [[ "${version}" =~ ^2\.([0-9]+)\. ]]; then
        minor="${BASH_REMATCH[1]}"
    elif [[ "${version}" =~ ^[1-9][0-9]*\. ]]; then
        minor=$(( ${version%%.*} > 2 ? 99 : 0 ))
    fi
    export TORCH_NCCL_DUMP_ON_TIMEOUT="${TORCH_NCCL_DUMP_ON_TIMEOUT:-1}"
    if [ "${minor}" -ge 10 ] || [ "${minor}" = -1 ]; then
        export TORCH_FR_BUFFER_SIZE="${size}" TORCH_FR_DUMP_TEMP_FILE="${file}"
    fi
    if [ "${minor}" -lt 10 ]; then
        export TORCH_NCCL_TRACE_BUFFER_SIZE="${size}" TORCH_NCCL_DEBUG_INFO_TEMP_FILE="${file}"
    fi
}

# The image's torch version from its package metadata (importing torch would take seconds),
# with the image's Python as the ranks get it; nothing where the image has no torch.
image_torch_version() {
    LUMI_SCAFFOLD_HELPER=1 "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/run.sh" python -c \
        'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null | tail -n 1 || true
}

# Why the training step ended (scripts/fault.py, with the node's python3, else the image's):
# one `fault:` line naming the cause, rank, node and step (none when the training finished),
# the job report RUN_DIR/reports/<job id>.json written or completed (wall time, GPU-hours
# billed, exit status and cause, stopped_by), and the decision for the chain in FAULT_CAUSE,
# FAULT_HANG (1: a collective timeout or a heartbeat stall), FAULT_DECISION (finished,
# resume, resume-elsewhere, stop), FAULT_EXCLUDE (a node, only on evidence) and FAULT_REASON.
#   job_outcome STATUS [SIGNAL that ended the job: TERM, INT, HUP]
job_outcome() {
    local decision="${PROJECT_DIR}/logs/fault-${SLURM_JOB_ID:-0}" python=(python3) logs=() up=0
    if [ -f "${LUMI_SCAFFOLD_TIME_UP}" ] || [ "${time_up:-0}" = 1 ]; then
        up=1
    fi
    if ! command -v python3 >/dev/null 2>&1; then
        python=(env LUMI_SCAFFOLD_HELPER=1 "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/run.sh" python)
    fi
    mapfile -t logs < <(scontrol show job "${SLURM_JOB_ID:-0}" 2>/dev/null | sed -n 's/^ *Std\(Out\|Err\)=//p' | sort -u)
    rm -f "${decision}"
    "${python[@]}" "${PROJECT_DIR}/scripts/fault.py" end --status "$1" --log "${logs[@]}" \
        --heartbeats "${LUMI_SCAFFOLD_HEARTBEAT_DIR:-}" --flight "${FLIGHT_DIR:-}" \
        --time-up "${up}" --signal "${2:-}" --chain "${chain:-1}" --next "${next_job:-}" \
        --hung-before "${LUMI_SCAFFOLD_STALLED_BEFORE:-}" --known-issues "${image_known_issues}" \
        --run-dir "${RUN_DIR}" --job "${SLURM_JOB_ID:-0}" --out "${decision}" \
        || echo "fault: scripts/fault.py failed (above): no report from the job" >&2
    FAULT_CAUSE="$(sed -n 's/^cause=//p' "${decision}" 2>/dev/null || true)"
    FAULT_DECISION="$(sed -n 's/^decision=//p' "${decision}" 2>/dev/null || true)"
    FAULT_EXCLUDE="$(sed -n 's/^exclude=//p' "${decision}" 2>/dev/null || true)"
    FAULT_REASON="$(sed -n 's/^reason=//p' "${decision}" 2>/dev/null || true)"
    if [ -z "${FAULT_DECISION}" ]; then   # no decision read: the rule of lumi-scaffold 0.3
        FAULT_DECISION=stop
        FAULT_REASON="training failed (status $1) before Slurm's time-limit warning, and the next job would fail the same way"
        if [ "$1" = 0 ]; then
            FAULT_DECISION=finished
        elif [ "${up}" = 1 ]; then
            FAULT_DECISION=resume
        fi
    fi
    FAULT_HANG=0
    if [[ "${FAULT_CAUSE}" =~ ^(collective timeout|heartbeat stall|output stall)$ ]]; then
        FAULT_HANG=1
    fi
    rm -f "${decision}"
    rmdir "${FLIGHT_DIR:-}" "$(dirname "${FLIGHT_DIR:-/}")" 2>/dev/null || true   # (no dump: nothing to keep)
}

# Cancels the next job of the chain, saying why.
stop_chain() {
    if [ -n "${next_job}" ]; then
        echo "chain: $1; cancelling job ${next_job}" >&2
        scancel "${next_job}" || true
    fi
}

# On TERM, INT or HUP ($1): a cancelled job ends its chain, and its training step, and says
# so (job_outcome: `fault: cancelled`, stopped_by in the report; after Slurm's time-limit
# warning, `fault: time limit`). Slurm sends SIGKILL KillWait seconds after its SIGTERM
# (slurm.conf): the step gets up to 5 s to end (rank 0's runlog writes its report on
# SIGTERM) before the job's report is completed.
# shellcheck disable=SC2329  # invoked by the traps in train_job
stop_train() {
    trap '' TERM INT HUP
    local status=$(( 128 + $(kill -l "$1") )) waited=0
    if [ "${time_up}" = 0 ]; then
        stop_chain "this job was cancelled"
    fi
    if [ -n "${STEP_PID:-}" ]; then
        kill -TERM "${STEP_PID}" 2>/dev/null || true   # the training step too (run by hand, Ctrl-C alone would not reach it)
        while kill -0 "${STEP_PID}" 2>/dev/null && [ "${waited}" -lt 10 ]; do
            sleep 0.5
            waited=$(( waited + 1 ))
        done
    fi
    if [ -z "${FAULT_DECISION:-}" ]; then   # (not when the step had ended and the job had said why)
        job_outcome "${status}" "$1"
    fi
    exit "${status}"
}
