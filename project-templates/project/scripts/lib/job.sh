#!/bin/bash
# The jobs' library, sourced at the top of every file in jobs/. OWNED BY THE TEMPLATE:
# `lumi-scaffold update` rewrites it (and `lumi-scaffold doctor` names it if it was changed);
# change your job in jobs/, and this project's values in scripts/values.sh.
#
# It runs OUTSIDE the container, where Slurm and the modules are. Sourcing it sets up the
# container (CONTAINER), the run directory and the environment the command gets; the job
# file then names its command (COMMAND, WORKDIR) and calls one function: train_job,
# profile_job, sweep_job or smoke_job. Nothing is added to COMMAND but the arguments given
# to sbatch after the job file; the step line is printed before it starts.
# LUMI_SCAFFOLD_DRY_RUN=1 bash jobs/train.sbatch prints it and runs nothing
# (`lumi-scaffold explain` does that).

export USER="${USER:-$(id -un)}"
PROJECT_DIR="${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
LIB="${PROJECT_DIR}/scripts/lib"
DRY_RUN="${LUMI_SCAFFOLD_DRY_RUN:-0}"
JOB_ARGS=("$@")   # the job's own arguments (sbatch FILE ARGS...): a chain's next job gets them again
export PROJECT_DIR
# shellcheck source=values-lib.sh
source "${LIB}/values-lib.sh"

# The container sees only the binds and variables set here (sbatch passes on the submitting
# shell's environment, modules loaded by hand included).
unset SINGULARITY_BIND SINGULARITY_BINDPATH APPTAINER_BIND APPTAINER_BINDPATH
while read -r name; do
    unset "${name}"
done < <(compgen -e | grep -E '^(SINGULARITY|APPTAINER)ENV_' || true)
if [ "${DRY_RUN}" != 1 ]; then
    # (lmod, scripts/lib/values-lib.sh: `module` with nounset off, for Lmod 9.2)
    if [ -n "${module_reset}" ]; then
        lmod "${module_reset}"
    fi
    for step in "${modules[@]}"; do
        read -r verb module directory <<<"${step}"
        case "${verb}" in
            load) lmod load "${module}" ;;
            use) lmod use "${module}" ;;
            load-or-use)
                if lmod is-avail "${module}" 2>/dev/null; then lmod load "${module}"; else lmod use "${directory}"; fi ;;
            *) echo "scripts/values.sh: modules: '${step}' is not 'load NAME', 'use DIRECTORY' or 'load-or-use NAME DIRECTORY'" >&2; return 2 ;;
        esac
    done
    if [ -z "${SIF:-}" ] && [ -n "${image_variable}" ] && [ ! -f "$(expand "${image}")" ]; then
        echo "No image at ${image} (${image_variable}=${!image_variable:-<unset>}): set ${image_variable}, or give the image with SIF=/path/to/image.sif" >&2
        return 2
    fi
    for var in "${storage_variables[@]}"; do
        if [ -z "${!var:-}" ]; then
            echo "${var} is not set: the project's paths (data, outputs, caches or the container's binds) start with \${${var}} (scripts/values.sh). Fix: set ${var} in the shell that submits the job" >&2
            return 2
        fi
    done
fi

# The image (SIF=/path/to/image.sif sbatch ... runs another) and its binds (BINDS=...).
SIF="${SIF:-$(expand "${image}")}"
BINDS="${BINDS:-$(expand "${binds}")}"
export SIF BINDS
CONTAINER=("${container_command[@]}")
if [ -n "${BINDS}" ]; then
    CONTAINER+=(--bind "${BINDS}")
fi
# The venv packed into one SquashFS file (bash scripts/setup-venv.sh --pack), bound at
# /user-software, where run.sh activates it instead of venv/. VENV_PACK= leaves it out.
VENV_PACK="${VENV_PACK-${PROJECT_DIR}/venv.sqsh}"
if [ -n "${VENV_PACK}" ] && [ -d "${VENV_PACK}" ]; then
    CONTAINER+=(--bind "${VENV_PACK}:/user-software")
elif [ -n "${VENV_PACK}" ] && [ -f "${VENV_PACK}" ]; then
    CONTAINER+=(--bind "${VENV_PACK}:/user-software:image-src=/")
    echo "venv: ${VENV_PACK} bound at /user-software (used instead of venv/)"
fi
CONTAINER+=("${SIF}")

# torch.distributed's rendezvous (rendezvous=1), computed out here: the container has no
# Slurm tools. The port: 10000 + the job id's last four digits, so two jobs sharing a node differ.
if [ "${rendezvous}" = 1 ] && [ -n "${SLURM_JOB_NODELIST:-}" ]; then
    MASTER_ADDR="$(scontrol show hostnames "${SLURM_JOB_NODELIST}" | head -n 1)"
    MASTER_PORT="$((10000 + SLURM_JOB_ID % 10000))"
    export MASTER_ADDR MASTER_PORT
elif [ "${rendezvous}" = 1 ] && [ "${DRY_RUN}" = 1 ]; then
    export MASTER_ADDR="<first node>" MASTER_PORT="<10000 + job id % 10000>"
fi
# srun no longer takes --cpus-per-task from the job (recent Slurm reads SRUN_CPUS_PER_TASK).
if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
    export SRUN_CPUS_PER_TASK="${SLURM_CPUS_PER_TASK}"
fi

# What the command finds in its environment (never among its arguments): the data, and the
# run directory that every job of a run shares (checkpoints in CHECKPOINT_DIR), so that a
# chained or resubmitted job goes on where the last one stopped. Each may be set before
# sbatch: RUN_NAME=lr-0.1 sbatch jobs/train.sbatch starts another run.
DATA_DIR="${DATA_DIR:-$(expand "${dataset_dir}")}"
OUTPUT_ROOT="${OUTPUT_ROOT:-$(expand "${output_root}")}"
RUN_NAME="${RUN_NAME:-${run_name}}"
if ! [[ "${RUN_NAME}" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
    echo "RUN_NAME='${RUN_NAME}' is not a plain name: use letters, digits, . _ - (it names a directory)." >&2
    return 2
fi
RUN_DIR="${OUTPUT_ROOT}/${RUN_NAME}"
CHECKPOINT_DIR="${RUN_DIR}/checkpoints"
# The jobs' files that grow large or many go under the output root too, not into the
# project directory, which holds the code and the venv: the collective library's debug files
# and the watchdog's heartbeats in OUTPUT_ROOT/logs, profiles in OUTPUT_ROOT/profiles. Slurm's own
# job logs stay in logs/ (#SBATCH --output takes no variables, only %j and the like).
LUMI_SCAFFOLD_LOG_DIR="${OUTPUT_ROOT}/logs"
export DATA_DIR OUTPUT_ROOT RUN_NAME RUN_DIR CHECKPOINT_DIR LUMI_SCAFFOLD_LOG_DIR

# Experiment tracking (tracking in values.sh): TRACKING=none sbatch ... leaves a job out.
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

# Pre-staging (prestage=1): scripts/lib/prestage.sh extracts the archive into node-local
# storage on every node, and DATA_DIR names the copy. DATASET_ARCHIVE=... sbatch ... overrides.
if [ "${prestage}" = 1 ]; then
    DATASET_ARCHIVE="${DATASET_ARCHIVE:-$(expand "${dataset_archive}")}"
    NODE_TMP="${NODE_TMP:-$(expand "${node_tmp}")}"
    STAGE_DIR="${NODE_TMP}/${USER}-${project_name}-${SLURM_JOB_ID:-0}"
    export DATASET_ARCHIVE NODE_TMP STAGE_DIR
fi

# A helper step: one task per node. --overlap: it holds none of the job's CPUs, memory and
# GPUs, which Slurm frees node by node after a step; a training step asking for all of them
# on a node not yet freed could be refused ("Memory required by task is not available").
per_node() {
    srun --overlap --nodes="${SLURM_JOB_NUM_NODES:-1}" --ntasks="${SLURM_JOB_NUM_NODES:-1}" --ntasks-per-node=1 "$@"
}

stage_data() {
    if [ "${prestage}" = 1 ] && [ "${DRY_RUN}" != 1 ]; then
        per_node --kill-on-bad-exit=1 bash "${LIB}/prestage.sh"
    fi
    if [ "${prestage}" = 1 ]; then
        DATA_DIR="${STAGE_DIR}/data"
    fi
}

# Kernel caches (kernel_caches=1; scripts/lib/caches.sh), one set per image: restored into
# node-local storage on every node when a job starts, saved from the first node after its
# training step has ended (not while a framework may be writing). KEEP_KERNEL_CACHES=0: off.
restore_caches() {
    if [ "${kernel_caches}" = 1 ] && [ "${KEEP_KERNEL_CACHES:-1}" = 1 ] && [ "${DRY_RUN}" != 1 ]; then
        per_node bash "${LIB}/caches.sh" restore || echo "caches: not restored (above); this job compiles its kernels anew" >&2
    fi
}
save_caches() {
    if [ "${kernel_caches}" = 1 ] && [ "${KEEP_KERNEL_CACHES:-1}" = 1 ]; then
        srun --overlap --nodes=1 --ntasks=1 --nodelist="$(scontrol show hostnames "${SLURM_JOB_NODELIST}" | head -n 1)" \
            bash "${LIB}/caches.sh" save || echo "caches: not saved (above)" >&2
    fi
}

# A word as the shell reads it back: as it is when it is plain, else in single quotes.
shell_word() {
    if [[ "$1" =~ ^[A-Za-z0-9_@%+=:,./-]+$ ]]; then
        printf '%s' "$1"
    else
        printf "'%s'" "${1//\'/\'\\\'\'}"
    fi
}
shell_line() {
    local out=() word
    for word; do
        out+=("$(shell_word "${word}")")
    done
    echo "${out[*]}"
}

# The step that runs COMMAND (with the job's arguments after it) on every rank, through
# scripts/lib/WRAPPER (run.sh; run-profile.sh to profile one rank), in STEP; printed whole.
#   make_step WRAPPER [arguments...]
make_step() {
    local wrapper="${LIB}/$1"
    shift
    check_command
    STEP=(srun --kill-on-bad-exit=1 --chdir="${WORKDIR}")
    local numa="${NUMA_BINDING:-${numa_binding}}"   # (NUMA_BINDING=exclusive: PyTorch 2.9 and later)
    if [ "${launcher}" = torchrun ]; then
        STEP+=("${srun_options[@]}" "${CONTAINER[@]}" "${LIB}/run.sh"
            python -m torch.distributed.run ${numa:+"--numa-binding=${numa}"}
            --nnodes="${SLURM_JOB_NUM_NODES:-<nodes>}" --nproc_per_node="${ranks_per_task}"
            --rdzv_id="${SLURM_JOB_ID:-<job id>}" --rdzv_backend=c10d --rdzv_endpoint="${MASTER_ADDR}:${MASTER_PORT}"
            --no-python "${wrapper}" "${COMMAND[@]}" "$@")
    else
        STEP+=(${cpu_bind:+"--cpu-bind=${cpu_bind}"} "${srun_options[@]}" "${CONTAINER[@]}" "${wrapper}" "${COMMAND[@]}" "$@")
    fi
    print_step
}
# The job file's COMMAND and WORKDIR (the project directory where it names none), checked.
check_command() {
    if [ "${#COMMAND[@]}" = 0 ]; then
        echo "COMMAND is empty: name what every rank runs in the job file, e.g. COMMAND=(python -u src/${package}/train.py)" >&2
        exit 2
    fi
    WORKDIR="${WORKDIR:-${PROJECT_DIR}}"
    if [ ! -d "${WORKDIR}" ]; then
        echo "WORKDIR='${WORKDIR}' is not a directory: the job file names where COMMAND starts" >&2
        exit 2
    fi
}
# The job's first check: a setting that a known issue of this image left out of the project
# (env_refused in values.sh: NAME=VALUE: why), set to that value in the job's environment
# (the shell it was submitted from), stops the job before it queues, stages or starts
# anything; another value of it is only warned of.
check_known_issues() {
    local refused setting name
    for refused in "${env_refused[@]}"; do
        setting="${refused%%: *}"
        name="${setting%%=*}"
        if [ -z "${!name+set}" ] || [ "${KNOWN_ISSUES:-}" = ignore ]; then
            continue
        elif [[ "${setting}" == *=* ]] && [ "${!name}" = "${setting#*=}" ]; then
            echo "${name}=${!name} is set, and it is known to be bad with this image: ${refused#*: }. Fix: unset ${name} in the shell you submit from, or KNOWN_ISSUES=ignore sbatch ... to start anyway" >&2
            exit 2
        fi
        echo "WARNING: ${name}=${!name} is set; with this image ${setting} is known to be bad: ${refused#*: }" >&2
    done
}
# Prints STEP as a line to copy into a shell in an allocation, after the variables it needs.
print_step() {
    local name env=()
    for name in RUN_NAME RUN_DIR CHECKPOINT_DIR DATA_DIR MASTER_ADDR MASTER_PORT SRUN_CPUS_PER_TASK SINGULARITY_BIND APPTAINER_BIND; do
        if [ -n "${!name:-}" ]; then
            env+=("${name}=${!name}")
        fi
    done
    if [ ! -d "${DATA_DIR}" ]; then
        echo "data: no directory DATA_DIR=${DATA_DIR} (yet)"
    fi
    echo "step: export $(shell_line "${env[@]}")"
    echo "step: $(shell_line "${STEP[@]}")"
}
# Where a dry run ends: after the step line and the watchdog's limits are printed.
dry_run_ends() {
    if [ "${DRY_RUN}" = 1 ]; then
        exit 0
    fi
}

# Runs the step in the background (STEP_PID) and waits for it, so that a signal trap (the
# time-limit warning) runs at once, not after the step. Returns the step's status.
run_step() {
    "${STEP[@]}" &
    STEP_PID=$!
    local status=0 again
    while kill -0 "${STEP_PID}" 2>/dev/null; do
        wait "${STEP_PID}" && status=0 || status=$?   # >128 too when a trapped signal woke us
    done
    wait "${STEP_PID}" 2>/dev/null && again=0 || again=$?   # the step's own status, had a trap run as it ended
    if [ "${again}" != 127 ]; then
        status="${again}"
    fi
    return "${status}"
}

# The job report (scripts/lib/python/runlog.py, and scripts/lib/fault.py when the step
# ends): RUN_DIR/reports/<job id>.json, with the GPU-hours billed by the site's rule for
# the job kind (billing_KIND in values.sh) times the job's nodes.
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
    start_nodes
}

# Each node's share of the job (scripts/lib/nodes.sh, outside the container, one helper
# task per node): when the job starts, its energy counters are read (energy_counters in
# values.sh: the site's directory of them, '' where it names none; ENERGY_COUNTERS=...
# sbatch ... reads another) and a guard task waits on every node; end_nodes reads them again
# and removes the job's node-local directories (TMPDIR, the staged data, the kernel caches').
# When Slurm ends the job first (scancel, the time limit), every node's guard does that, and
# the batch shell cleans its own node as it exits. A one-node job does all of it from the
# batch shell, on its own node. KEEP_NODE_TMP=1 sbatch ... keeps them.
start_nodes() {
    NODE_GUARD_PID="" NODES_HERE=0
    ENERGY_COUNTERS="${ENERGY_COUNTERS-${energy_counters}}"
    LUMI_SCAFFOLD_NODE_RECORDS="${PROJECT_DIR}/logs/nodes-${SLURM_JOB_ID:-0}"
    export ENERGY_COUNTERS LUMI_SCAFFOLD_NODE_RECORDS
    if [ "${DRY_RUN}" = 1 ] || [ -z "${SLURM_JOB_ID:-}" ]; then
        return 0
    fi
    trap 'bash "${LIB}/nodes.sh" clean' EXIT
    rm -rf "${LUMI_SCAFFOLD_NODE_RECORDS}"
    mkdir -p "${LUMI_SCAFFOLD_NODE_RECORDS}"
    if [ "${SLURM_JOB_NUM_NODES:-1}" = 1 ]; then
        # One node, the batch shell's own: read and cleaned from here (the EXIT trap too), with
        # no helper step and no guard.
        NODES_HERE=1
        if [ -n "${ENERGY_COUNTERS}" ]; then
            bash "${LIB}/nodes.sh" start || echo "energy: the counters were not read (above): not measured" >&2
        fi
        return 0
    fi
    if [ -n "${ENERGY_COUNTERS}" ]; then
        per_node bash "${LIB}/nodes.sh" start || echo "energy: the counters were not read (above): not measured" >&2
    fi
    # (its srun's lines stay out of the job's log: a guard Slurm kills is no rank of the job)
    per_node --job-name=node-guard bash "${LIB}/nodes.sh" guard >/dev/null 2>&1 &
    NODE_GUARD_PID=$!
}
# At the job's end: every node's counters read and its directories removed, then the energy
# into the job report.
end_nodes() {
    if [ "${NODES_HERE:-0}" = 1 ]; then
        bash "${LIB}/nodes.sh" end
        report_energy
        return 0
    fi
    if [ -z "${NODE_GUARD_PID:-}" ]; then
        return 0
    fi
    per_node bash "${LIB}/nodes.sh" end || echo "nodes: the job's end step failed (above)" >&2
    wait_guards
    report_energy
}
# Waits up to 10 s for the guards to end (stood down, or ending the job on Slurm's SIGTERM).
wait_guards() {
    wait_gone "${NODE_GUARD_PID}" 100
    kill "${NODE_GUARD_PID}" 2>/dev/null || true
}
# Waits up to $2 tenths of a second for the background process $1 to end. Polled, never
# `wait`ed: bash 5.2 once blocked in `wait` for a watchdog that had already exited (it
# exits as it signals the USR2 trap), and the job would have held its nodes to its time
# limit (2026-11-29, a two-node job of tests/test_guard_jobs.py); no status is needed here.
wait_gone() {
    local waited=0
    while kill -0 "$1" 2>/dev/null && [ "${waited}" -lt "$2" ]; do
        sleep 0.1
        waited=$(( waited + 1 ))
    done
}
# The energy each node used (scripts/lib/python/jobfiles.py, from the nodes' records) into
# the job report, and one line; the records go.
report_energy() {
    helper_python "${LIB}/python/jobfiles.py" energy --run-dir "${RUN_DIR}" --job "${SLURM_JOB_ID:-0}" \
        --records "${LUMI_SCAFFOLD_NODE_RECORDS}" --counters "${ENERGY_COUNTERS}" --nodes "${SLURM_JOB_NUM_NODES:-1}" \
        || echo "energy: scripts/lib/python/jobfiles.py failed (above): not measured" >&2
    rm -rf "${LUMI_SCAFFOLD_NODE_RECORDS}"
}
# Seconds to the job's time limit, from its EndTime as Slurm holds it (the --signal lead the
# job was submitted with may not be the job file's); $1 where Slurm does not say.
seconds_left() {
    local end
    end="$(scontrol show job "${SLURM_JOB_ID:-0}" 2>/dev/null | grep -o 'EndTime=[0-9T:-]*' | head -n 1)"
    end="${end#EndTime=}"
    if [ -n "${end}" ] && end="$(date -d "${end}" +%s 2>/dev/null)"; then
        echo "$(( end > $(date +%s) ? end - $(date +%s) : 0 ))"
    else
        echo "$1"
    fi
}
# Tells the job's rank 0 (runlog.py) that Slurm's time-limit warning came.
time_is_up() {
    touch "${LUMI_SCAFFOLD_TIME_UP}" 2>/dev/null || true
}

# The job's time limit in seconds as Slurm holds it (sbatch --time=... wins over the job
# file's header), from its [days-]hours:minutes:seconds; in a dry run, the header's --time.
time_limit_seconds() {
    local limit days=0 parts=() seconds=0 part
    if [ "${DRY_RUN}" = 1 ] || [ -z "${SLURM_JOB_ID:-}" ]; then
        limit="$(sed -n 's/^#SBATCH --time=//p' "$(job_file)" | head -n 1)"
    else
        limit="$(scontrol show job "${SLURM_JOB_ID}" 2>/dev/null | grep -o 'TimeLimit=[^ ]*' | head -n 1)"
        limit="${limit#TimeLimit=}"
    fi
    if [[ "${limit}" =~ ^([0-9]+)-(.*)$ ]]; then   # days-hours[:minutes[:seconds]]
        days="${BASH_REMATCH[1]}"
        limit="${BASH_REMATCH[2]}:00:00"
        IFS=: read -r -a parts <<<"${limit}"
        parts=("${parts[@]:0:3}")
    elif [[ "${limit}" =~ ^[0-9:]+$ ]]; then   # minutes, minutes:seconds or hours:minutes:seconds
        IFS=: read -r -a parts <<<"${limit}"
        case "${#parts[@]}" in
            1) parts=(0 "${parts[0]}" 0) ;;
            2) parts=(0 "${parts[@]}") ;;
        esac
    fi
    if [ "${#parts[@]}" != 3 ]; then   # UNLIMITED, or nothing read
        return 0
    fi
    for part in "${parts[@]}"; do
        seconds=$(( seconds * 60 + 10#${part} ))
    done
    echo $(( days * 86400 + seconds ))
}

# A watchdog limit's default for a time limit of $2 seconds (none: the cap) on $3 nodes, by
# its rule $1 in scripts/values.sh: (percent of the time limit, floor, seconds per node added
# to the floor, cap).
default_limit() {
    local rule="$1[@]" value floor
    rule=("${!rule}")
    value=$(( ${2:-0} * rule[0] / 100 ))
    if [ -z "$2" ]; then
        value="${rule[3]}"
    fi
    floor=$(( rule[1] + rule[2] * ${3:-1} ))
    value=$(( value < floor ? floor : value ))
    echo $(( value > rule[3] ? rule[3] : value ))
}

# The progress watchdog (scripts/lib/watchdog.py) beside a training or profiling step. A
# command that imports heartbeat.py (the examples do) is stopped when no rank made progress
# for PROGRESS_TIMEOUT seconds: STARTUP_TIMEOUT before the first heartbeat, PHASE_TIMEOUT
# in a phase it declared (a checkpoint, the first step). Any other command is judged by the
# job's output: stopped when it did not grow for OUTPUT_TIMEOUT seconds. Before the stop:
# which limit, the last rank and node that made progress, and the evidence of every rank.
# Each limit: seconds from the environment or the job file (0: off), else its default from
# the job's time limit and nodes by its rule in scripts/values.sh: a share of the time limit,
# at least a floor (plus some seconds per node), at most a cap.
# After the watchdog fires: up to EVIDENCE_SECONDS for every rank's Flight Recorder dump and
# stacks, then scancel, and up to STOP_SECONDS for the step to end before srun is killed.
EVIDENCE_SECONDS=60
STOP_SECONDS=30
watch_progress() {
    STALLED=0 WATCHDOG_PID=""
    local limit largest seconds nodes="${SLURM_JOB_NUM_NODES:-}" given=()
    seconds="$(time_limit_seconds)"
    if [ -z "${nodes}" ]; then
        nodes="$(sed -n 's/^#SBATCH --nodes=//p' "$(job_file)" | head -n 1)"
    fi
    for limit in STARTUP_TIMEOUT PROGRESS_TIMEOUT PHASE_TIMEOUT OUTPUT_TIMEOUT; do
        if [ -n "${!limit:-}" ] && ! [[ "${!limit}" =~ ^[0-9]{1,7}$ ]]; then
            echo "${limit}='${!limit}' is not a number of seconds: e.g. ${limit}=1800 sbatch ... (0: no limit)" >&2
            exit 2
        fi
        given+=("${limit}=${!limit:-$(default_limit "${limit,,}" "${seconds}" "${nodes}")} s${!limit:+ (set)}")
    done
    STARTUP_TIMEOUT="${STARTUP_TIMEOUT:-$(default_limit startup_timeout "${seconds}" "${nodes}")}"
    PROGRESS_TIMEOUT="${PROGRESS_TIMEOUT:-$(default_limit progress_timeout "${seconds}" "${nodes}")}"
    PHASE_TIMEOUT="${PHASE_TIMEOUT:-$(default_limit phase_timeout "${seconds}" "${nodes}")}"
    OUTPUT_TIMEOUT="${OUTPUT_TIMEOUT:-$(default_limit output_timeout "${seconds}" "${nodes}")}"
    # How often a node's heartbeat file on the shared file system may be rewritten: every
    # PROGRESS_TIMEOUT/20 s, at most every 10 s (one file per node); a third of a limit under 30 s.
    LUMI_SCAFFOLD_HEARTBEAT_INTERVAL="$(( PROGRESS_TIMEOUT / 20 > 10 ? PROGRESS_TIMEOUT / 20 : 10 ))"
    if [ "${PROGRESS_TIMEOUT}" -lt 30 ]; then
        LUMI_SCAFFOLD_HEARTBEAT_INTERVAL="$(( PROGRESS_TIMEOUT / 3 > 1 ? PROGRESS_TIMEOUT / 3 : 1 ))"
    fi
    local slack=$(( LUMI_SCAFFOLD_HEARTBEAT_INTERVAL + 2 ))   # a node's file is up to an interval (and 1 s) old
    # The frameworks' collective timeout (the examples read it) sits above every allowance:
    # a rank waiting in a collective while another checkpoints is waiting for a phase, and
    # the watchdog, which knows the phases, judges a hang (and asks for the Flight Recorder first).
    largest="${PROGRESS_TIMEOUT}"
    for limit in STARTUP_TIMEOUT PHASE_TIMEOUT; do
        largest=$(( ${!limit} > largest ? ${!limit} : largest ))
    done
    LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT=$(( largest + slack + 60 ))
    export LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT LUMI_SCAFFOLD_HEARTBEAT_INTERVAL
    if [ "${PROGRESS_TIMEOUT}" = 0 ]; then
        echo "watchdog: off (PROGRESS_TIMEOUT=0)"
        return 0
    fi
    limit="$(printf '%s, ' "${given[@]}")"
    echo "watchdog: for a time limit of ${seconds:-<none>} s on ${nodes:-1} node(s): ${limit%, }; then up to" \
        "$(( EVIDENCE_SECONDS + STOP_SECONDS )) s to gather evidence and stop the step"
    echo "watchdog: a command is judged by its output alone (OUTPUT_TIMEOUT; 0: no limit) until it imports" \
        "heartbeat.py, then by STARTUP_TIMEOUT to the first heartbeat, PROGRESS_TIMEOUT between heartbeats, PHASE_TIMEOUT" \
        "in a phase it declared (README.md); NAME=seconds sbatch ... sets one"
    if [ "${DRY_RUN}" = 1 ]; then
        return 0
    fi
    # run.sh names every rank in here; heartbeat.py writes one file per node. STARTED names
    # the ranks' node-local records, so a step never reads an earlier step's.
    LUMI_SCAFFOLD_HEARTBEAT_DIR="${LUMI_SCAFFOLD_LOG_DIR}/heartbeat-${SLURM_JOB_ID}"
    rm -rf "${LUMI_SCAFFOLD_HEARTBEAT_DIR}"
    mkdir -p "${LUMI_SCAFFOLD_HEARTBEAT_DIR}"
    LUMI_SCAFFOLD_HEARTBEAT_STARTED="$(date +%s%N)"
    export LUMI_SCAFFOLD_HEARTBEAT_DIR LUMI_SCAFFOLD_HEARTBEAT_STARTED
    local output
    output="$(scontrol show job "${SLURM_JOB_ID}" 2>/dev/null | sed -n 's/^ *StdOut=//p' | head -n 1)"
    trap on_stall USR2
    LUMI_SCAFFOLD_HELPER=1 "${CONTAINER[@]}" "${LIB}/run.sh" python "${LIB}/watchdog.py" \
        watch --dir "${LUMI_SCAFFOLD_HEARTBEAT_DIR}" --timeout "${PROGRESS_TIMEOUT}" --startup "${STARTUP_TIMEOUT}" \
        --phase-timeout "${PHASE_TIMEOUT}" --output-timeout "${OUTPUT_TIMEOUT}" --slack "${slack}" \
        --notify "$$" --interval "$(( PROGRESS_TIMEOUT < 10 ? 1 : 5 ))" --output ${output:+"${output}"} &
    WATCHDOG_PID=$!
}

# On the watchdog's signal: every rank's Flight Recorder dump (asked through its dump pipe),
# its process state and its stacks (one helper task per node), then scancel
# of the training step (Slurm ends it on every node, a rank blocked in C code included);
# where no step id is found, SIGTERM to srun, SIGKILL STOP_SECONDS later.
# shellcheck disable=SC2329  # invoked by the trap in watch_progress
on_stall() {
    STALLED=1
    local steps=() step
    mapfile -t steps < <(squeue --noheader --steps --jobs="${SLURM_JOB_ID}" --format='%i %j' 2>/dev/null \
        | awk -v job="${SLURM_JOB_ID}" 'index($1, job ".") == 1 && $1 ~ /\.[0-9]+$/ && $2 != "node-guard" {print $1}' || true)
    echo "watchdog: the evidence of every rank follows (Flight Recorder dumps, process states, stacks); the collective library's logs stay in ${LUMI_SCAFFOLD_LOG_DIR}" >&2
    LUMI_SCAFFOLD_HELPER=1 timeout "${EVIDENCE_SECONDS}" srun --overlap --nodes="${SLURM_JOB_NUM_NODES:-1}" --ntasks="${SLURM_JOB_NUM_NODES:-1}" \
        --ntasks-per-node=1 "${CONTAINER[@]}" "${LIB}/run.sh" python "${LIB}/watchdog.py" dump --dir "${LUMI_SCAFFOLD_HEARTBEAT_DIR}" \
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
        ( sleep "${STOP_SECONDS}"; kill -KILL "${STEP_PID}" 2>/dev/null ) &   # an srun that does not return
    fi
}

# Ends the watchdog after the step.
stop_watching() {
    trap - USR2
    if [ -n "${WATCHDOG_PID}" ]; then
        kill -TERM "${WATCHDOG_PID}" 2>/dev/null || true
        wait_gone "${WATCHDOG_PID}" 50
    fi
}

# Removes the heartbeat directory after a step the watchdog did not stop, once job_outcome
# has read it; a stall's files stay.
drop_heartbeats() {
    if [ -n "${WATCHDOG_PID}" ] && [ "${STALLED}" = 0 ] && [ ! -e "${LUMI_SCAFFOLD_HEARTBEAT_DIR}/stalled" ]; then
        rm -rf "${LUMI_SCAFFOLD_HEARTBEAT_DIR}"
    fi
}

# The job file that runs: a batch job runs Slurm's copy of it, whose name is the job's
# Command (with the job's arguments after it); jobs/train.sbatch where that is not a file.
job_file() {
    local file="${BASH_SOURCE[-1]}"
    if [[ "${file}" == */slurm_script ]]; then
        file="$(scontrol show job "${SLURM_JOB_ID}" 2>/dev/null | sed -n 's/^ *Command=//p' | head -n 1)"
        if [ "${#JOB_ARGS[@]}" -gt 0 ]; then
            file="${file% "${JOB_ARGS[*]}"}"
        fi
    fi
    if [ ! -f "${file}" ]; then
        file="${PROJECT_DIR}/jobs/train.sbatch"
    fi
    echo "${file}"
}

# The training job (jobs/train.sbatch): COMMAND [the job's arguments] on every rank.
# CHAIN=N sbatch jobs/train.sbatch makes it the first of up to N jobs (chains=1 in
# values.sh): each queues the next, which starts when this one ends and resumes the run; a
# job whose training finishes (or that fails or is cancelled before Slurm's time-limit
# warning) cancels the rest; a job the watchdog stopped is replaced, once per chain, by one
# without the node that stalled (on evidence against it).
train_job() {
    check_known_issues
    report_job train
    chain="${CHAIN:-1}"
    if ! [[ "${chain}" =~ ^[1-9][0-9]{0,2}$ ]]; then
        echo "CHAIN='${chain}' is not a number of jobs (1-999), e.g. CHAIN=4 sbatch jobs/train.sbatch" >&2
        exit 2
    fi
    if [ "${chain}" -gt 1 ] && [ "${chains}" != 1 ]; then
        echo "CHAIN=${chain}: ${chains_refused}. Fix: train long runs on another partition (lumi-scaffold update -d partition=<name>)" >&2
        exit 2
    fi
    # From Slurm's warning, signal_lead seconds before the time limit (--signal in the job
    # file), a job that ends unfinished ran out of time, and the chain's next job continues.
    time_up=0
    next_job=""
    trap 'time_up=1; echo "time limit in $(seconds_left "${signal_lead}") s${next_job:+: job ${next_job} continues the run}" >&2; time_is_up' USR1
    trap 'stop_train TERM' TERM
    trap 'stop_train INT' INT
    trap 'stop_train HUP' HUP

    check_ledger
    stage_data
    restore_caches
    if [ "${DRY_RUN}" != 1 ]; then
        mkdir -p "${RUN_DIR}" "${CHECKPOINT_DIR}"
        echo "$(date -Iseconds) job ${SLURM_JOB_ID:-} (${SLURM_JOB_NAME:-}) on ${SLURM_JOB_NODELIST:-}" >>"${RUN_DIR}/jobs.txt"
    fi
    if [ "${chain}" -gt 1 ] && [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then
        echo "chain: this job was requeued; its first start queued the next one" >&2
    elif [ "${chain}" -gt 1 ] && [ "${DRY_RUN}" != 1 ]; then
        # Queued before training, so that it runs even when this job meets its time limit.
        if next_job="$(cd "${PROJECT_DIR}" && CHAIN="$((chain - 1))" sbatch --parsable ${LEDGER_EXCLUDE:+"--exclude=${LEDGER_EXCLUDE}"} \
            --dependency="afterany:${SLURM_JOB_ID}" "$(job_file)" "${JOB_ARGS[@]}")"; then
            echo "chain: job ${next_job} continues run ${RUN_NAME} after this one ($((chain - 1)) more job(s) at most)"
        else
            next_job=""
            echo "chain: could not queue the next job (above); this one trains, and the chain ends with it" >&2
        fi
    fi
    local status=0 retry what exclude=()
    make_step run.sh "$@"
    flight_recorder
    watch_progress
    dry_run_ends
    run_step || status=$?
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
    elif { [ "${FAULT_HANG}" = 1 ] || [ "${FAULT_DECISION}" = resume-elsewhere ]; } && [ "${FAULT_DECISION}" != stop ] \
        && [ "${chain}" -gt 1 ]; then
        # A hang, or a rank that died with a hardware message tied to its node, in a chain: once
        # per chain the run goes on in a job that replaces this one, without a node only on
        # evidence against it; a second time ends the chain.
        what="a collective timed out in this job (a hang)"
        if [ "${FAULT_HANG}" != 1 ]; then
            what="a rank of this job died with a hardware message"
        elif [ "${FAULT_CAUSE}" != "collective timeout" ]; then
            what="the watchdog stopped this job"
        fi
        ledger_nodes   # (with the node the evidence named, unless LEDGER_DAYS=0)
        if [ -n "${FAULT_EXCLUDE}" ]; then
            exclude=(--exclude="${LEDGER_EXCLUDE:-${FAULT_EXCLUDE}}")
            stop_chain "${what}; a job without ${FAULT_EXCLUDE} replaces it"
        else
            stop_chain "${what}; a job on any nodes replaces it (software hang suspected)"
        fi
        if retry="$(cd "${PROJECT_DIR}" && CHAIN="${chain}" LUMI_SCAFFOLD_STALLED_BEFORE="${FAULT_EXCLUDE:-a software hang in job ${SLURM_JOB_ID}}" \
            sbatch --parsable "${exclude[@]}" --dependency="afterany:${SLURM_JOB_ID}" "$(job_file)" "${JOB_ARGS[@]}")"; then
            echo "chain: job ${retry} resumes run ${RUN_NAME} from its newest checkpoint${FAULT_EXCLUDE:+, without node ${FAULT_EXCLUDE}}" >&2
        else
            echo "chain: could not queue a job to resume (above); the chain ends here" >&2
        fi
    elif [ "${FAULT_DECISION}" = stop ]; then
        stop_chain "${FAULT_REASON}"
    fi
    end_nodes
    exit "${status}"
}

# PyTorch's Flight Recorder for the training step: every rank keeps its last collectives and,
# when a NCCL/RCCL collective times out or the watchdog asks through the rank's dump pipe
# (scripts/lib/run.sh), writes them to RUN_DIR/flight-recorder/<job id>/rank-<R>,
# from which scripts/lib/fault.py names the rank that never entered the collective the others
# wait in (gloo writes none). The names follow the image's torch: from 2.10 on the TORCH_FR_
# names alone (pytorch/pytorch PR #167395; 2.11 and later warn on every rank where the older
# ones are set), before it the TORCH_NCCL_ names; both where the version is unknown. Yours win.
flight_recorder() {
    FLIGHT_DIR="${RUN_DIR}/flight-recorder/${SLURM_JOB_ID:-0}"
    local version minor=-1 size="${TORCH_FR_BUFFER_SIZE:-${TORCH_NCCL_TRACE_BUFFER_SIZE:-2000}}"
    local file="${TORCH_FR_DUMP_TEMP_FILE:-${TORCH_NCCL_DEBUG_INFO_TEMP_FILE:-${FLIGHT_DIR}/rank-}}"
    if [ "${DRY_RUN}" = 1 ]; then
        return 0
    fi
    mkdir -p "${FLIGHT_DIR}"
    # (from the package's metadata with the image's Python: importing torch takes seconds)
    version="$(LUMI_SCAFFOLD_HELPER=1 "${CONTAINER[@]}" "${LIB}/run.sh" python -c \
        'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null | tail -n 1 || true)"
    if [[ "${version}" =~ ^2\.([0-9]+)\. ]]; then
        minor="${BASH_REMATCH[1]}"
    elif [[ "${version}" =~ ^[1-9][0-9]*\. ]]; then
        minor=$(( ${version%%.*} > 2 ? 99 : 0 ))
    fi
    export TORCH_NCCL_DUMP_ON_TIMEOUT="${TORCH_NCCL_DUMP_ON_TIMEOUT:-1}" LUMI_SCAFFOLD_FLIGHT=1
    if [ "${minor}" -ge 10 ] || [ "${minor}" = -1 ]; then
        export TORCH_FR_BUFFER_SIZE="${size}" TORCH_FR_DUMP_TEMP_FILE="${file}"
    fi
    if [ "${minor}" -lt 10 ]; then
        export TORCH_NCCL_TRACE_BUFFER_SIZE="${size}" TORCH_NCCL_DEBUG_INFO_TEMP_FILE="${file}"
    fi
}

# A helper of scripts/lib/ with the node's python3 (it starts at once), else the image's.
helper_python() {
    if command -v python3 >/dev/null 2>&1; then
        python3 "$@"
    else
        LUMI_SCAFFOLD_HELPER=1 "${CONTAINER[@]}" "${LIB}/run.sh" python "$@"
    fi
}

# The project's node ledger (scripts/lib/ledger.py, OUTPUT_ROOT/node-ledger.tsv): the nodes
# with evidence against them, in LEDGER_EXCLUDE (comma-separated). A job that landed on one
# queues a job that replaces it without them, and ends (the ledger's first lines say so);
# every job the chain queues excludes them. LEDGER_DAYS=0 sbatch ...: no ledger.
ledger_nodes() {
    LEDGER_EXCLUDE=""
    if [ "${DRY_RUN}" != 1 ] && [ "${LEDGER_DAYS:-${ledger_days}}" != 0 ]; then
        LEDGER_EXCLUDE="$(helper_python "${LIB}/ledger.py" in-force 2>/dev/null | tail -n 1 || true)"
    fi
}
check_ledger() {
    ledger_nodes
    if [ -z "${LEDGER_EXCLUDE}" ]; then
        return 0
    fi
    helper_python "${LIB}/ledger.py" list
    local node here=()
    mapfile -t here < <(scontrol show hostnames "${SLURM_JOB_NODELIST:-}" 2>/dev/null)
    for node in "${here[@]}"; do
        if [[ ",${LEDGER_EXCLUDE}," == *",${node},"* ]]; then
            local replacement
            if replacement="$(cd "${PROJECT_DIR}" && sbatch --parsable --exclude="${LEDGER_EXCLUDE}" "$(job_file)" "${JOB_ARGS[@]}")"; then
                echo "ledger: this job landed on ${node}: job ${replacement} replaces it without ${LEDGER_EXCLUDE} (the options given to sbatch on its command line are not carried over); this one ends" >&2
            else
                echo "ledger: this job landed on ${node}, and no job could be queued to replace it (above); this one ends" >&2
            fi
            exit 0
        fi
    done
    echo "ledger: this job runs on ${here[*]}, none of them"
}

# Why the training step ended (scripts/lib/fault.py, with the node's python3, else the
# image's): one `fault:` line naming the cause, rank, node and step (none when the training
# finished), the job report completed, and the chain's decision in FAULT_CAUSE, FAULT_HANG
# (1: a collective timeout or a stall), FAULT_DECISION (finished, resume, resume-elsewhere,
# stop), FAULT_EXCLUDE (a node, only on evidence) and FAULT_REASON.
#   job_outcome STATUS [SIGNAL that ended the job: TERM, INT, HUP]
job_outcome() {
    local decision="${PROJECT_DIR}/logs/fault-${SLURM_JOB_ID:-0}" logs=() up=0
    if [ -f "${LUMI_SCAFFOLD_TIME_UP}" ] || [ "${time_up:-0}" = 1 ]; then
        up=1
    fi
    mapfile -t logs < <(scontrol show job "${SLURM_JOB_ID:-0}" 2>/dev/null | sed -n 's/^ *Std\(Out\|Err\)=//p' | sort -u)
    rm -f "${decision}"
    helper_python "${LIB}/fault.py" end --status "$1" --log "${logs[@]}" \
        --heartbeats "${LUMI_SCAFFOLD_HEARTBEAT_DIR:-}" --flight "${FLIGHT_DIR:-}" \
        --time-up "${up}" --signal "${2:-}" --chain "${chain:-1}" --next "${next_job:-}" \
        --hung-before "${LUMI_SCAFFOLD_STALLED_BEFORE:-}" --known-issues "${image_known_issues}" \
        --run-dir "${RUN_DIR}" --job "${SLURM_JOB_ID:-0}" --out "${decision}" \
        --ledger-days "${LEDGER_DAYS:-${ledger_days}}" --support "${support}" \
        || echo "fault: scripts/lib/fault.py failed (above): no report from the job" >&2
    FAULT_CAUSE="$(sed -n 's/^cause=//p' "${decision}" 2>/dev/null || true)"
    FAULT_DECISION="$(sed -n 's/^decision=//p' "${decision}" 2>/dev/null || true)"
    FAULT_EXCLUDE="$(sed -n 's/^exclude=//p' "${decision}" 2>/dev/null || true)"
    FAULT_REASON="$(sed -n 's/^reason=//p' "${decision}" 2>/dev/null || true)"
    if [ -z "${FAULT_DECISION}" ]; then   # no decision read: stop, unless finished or out of time
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

# On TERM, INT or HUP ($1): a cancelled job ends its chain and its step, and says so
# (`fault: cancelled`; after the time-limit warning, `fault: time limit`). Slurm sends
# SIGKILL KillWait seconds after its SIGTERM: the step gets up to 5 s to end (rank 0's
# runlog writes its report on SIGTERM) before the report is completed.
# shellcheck disable=SC2329  # invoked by the traps in train_job
stop_train() {
    trap '' TERM INT HUP
    local status=$(( 128 + $(kill -l "$1") ))
    if [ "${time_up}" = 0 ]; then
        stop_chain "this job was cancelled"
    fi
    if [ -n "${STEP_PID:-}" ]; then
        kill -TERM "${STEP_PID}" 2>/dev/null || true   # (run by hand, Ctrl-C alone would not reach it)
        wait_gone "${STEP_PID}" 50
    fi
    if [ "${NODES_HERE:-0}" = 1 ]; then   # (one node, the batch shell's: read and cleaned from here)
        bash "${LIB}/nodes.sh" end || true
    elif [ -n "${NODE_GUARD_PID:-}" ]; then   # (Slurm's SIGTERM: the guards read the counters and clean)
        if [ "$1" != TERM ]; then   # (Ctrl-C, a closed terminal: the allocation still runs steps)
            per_node bash "${LIB}/nodes.sh" end || true
        fi
        wait_guards
    fi
    if [ -z "${FAULT_DECISION:-}" ]; then   # (not when the step had ended and the job had said why)
        job_outcome "${status}" "$1"
    fi
    if [ -n "${NODE_GUARD_PID:-}" ] || [ "${NODES_HERE:-0}" = 1 ]; then
        report_energy
    fi
    exit "${status}"
}

# The profiling job (jobs/profile.sbatch, where the project has a profiler): the training
# job's shape and launch, scripts/lib/run-profile.sh wrapping rank PROFILE_RANK
# (profile_rank in values.sh) in the profiler, in the run directory the job file names; the
# profile goes into OUTPUT_ROOT/profiles/<job id> (.2, .3 ... for more runs in one allocation).
profile_job() {
    check_known_issues
    report_job profile
    trap 'echo "time limit in $(seconds_left "${profile_signal_lead}") s: the profile will end unfinished" >&2; time_is_up' USR1
    local name="${SLURM_JOB_ID:-0}" n=1 status=0
    while [ -e "${OUTPUT_ROOT}/profiles/${name}" ]; do
        n=$((n + 1))
        name="${SLURM_JOB_ID:-0}.${n}"
    done
    PROFILE_DIR="${OUTPUT_ROOT}/profiles/${name}"
    export PROFILE_DIR
    check_ledger
    stage_data
    restore_caches   # (compiling kernels would show in the profile)
    if [ "${DRY_RUN}" != 1 ]; then
        mkdir -p "${PROFILE_DIR}" "${RUN_DIR}" "${CHECKPOINT_DIR}"
    fi
    make_step run-profile.sh "$@"
    watch_progress
    dry_run_ends
    run_step || status=$?
    stop_watching
    drop_heartbeats
    save_caches
    end_nodes
    if [ "${STALLED}" = 1 ] || [ "${status}" != 0 ]; then
        exit "$(( status == 0 ? 1 : status ))"
    fi
    echo "Profile written to ${PROFILE_DIR}"
}

# The smoke test (jobs/smoke-test.sbatch): COMMAND as one task, in the container, through run.sh.
smoke_job() {
    check_known_issues
    check_command
    STEP=(srun --kill-on-bad-exit=1 --chdir="${WORKDIR}" "${CONTAINER[@]}" "${LIB}/run.sh" "${COMMAND[@]}" "$@")
    print_step
    dry_run_ends
    trap 'bash "${LIB}/nodes.sh" clean' EXIT   # (one task: the batch shell's node is the job's)
    run_step
}
