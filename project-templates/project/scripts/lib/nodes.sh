#!/bin/bash
# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
# What a job takes from each of its nodes and what it leaves there: it runs OUTSIDE the
# container, as one helper task per node (start_nodes and end_nodes in scripts/lib/job.sh),
# or in the batch shell for the batch shell's own node:
#   nodes.sh start   reads the node's energy counters (ENERGY_COUNTERS: a directory of
#                    counter files, energy_counters in values.sh) into the job's records
#   nodes.sh guard   waits while the job runs; when Slurm ends the job (scancel, the time
#                    limit: SIGTERM to every task) it does what `end` does
#   nodes.sh end     reads the counters again, removes the job's node-local directories,
#                    and stands the node's guard down
#   nodes.sh clean   removes the directories only
# The job's node-local directories: its TMPDIR (scripts/lib/run.sh), the staged data
# (STAGE_DIR) and the kernel caches' directories, each only where its name holds the job id
# (a directory without it may be another job's). KEEP_NODE_TMP=1 sbatch ... keeps them.
# The records (LUMI_SCAFFOLD_NODE_RECORDS, on the shared file system): <node>.start and
# <node>.end, each counter file's line as the node shows it; scripts/lib/python/jobfiles.py
# turns them into the job report's energy, and the job removes them.
set -uo pipefail

: "${USER:=$(id -un)}" "${SLURM_JOB_ID:=0}" "${SLURM_NODEID:=0}"
# shellcheck source=values-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/values-lib.sh"

node="${SLURMD_NODENAME:-$(hostname)}"
records="${LUMI_SCAFFOLD_NODE_RECORDS:-}"
counters="${ENERGY_COUNTERS:-}"

# The counter files as the node shows them, one line each ("energy 123456 J 1734094386462336 us"),
# and the time read: the energy counters (node, accelerators, CPU, memory, in joules) and the
# ones that say whether they are current (freshness, generation, startup).
read_counters() {
    local file name value
    echo "time $(date +%s)"
    if [ ! -d "${counters}" ]; then
        echo "error ${counters} is not a directory here"
        return 0
    fi
    for file in "${counters}"/energy "${counters}"/accel*_energy "${counters}"/cpu*_energy \
        "${counters}"/memory_energy "${counters}"/freshness "${counters}"/generation "${counters}"/startup; do
        name="${file##*/}"
        if [ -f "${file}" ]; then
            if value="$(head -c 200 "${file}" 2>/dev/null | tr -d '\n')"; then
                echo "${name} ${value}"
            else
                echo "error ${name} could not be read"
            fi
        fi
    done
}

# Writes this node's record WHEN (start, end): whole or not at all. Only into the job's
# records directory as the job made it: a guard that outlives the job's end makes none.
record() {
    if [ -z "${counters}" ] || [ -z "${records}" ] || [ ! -d "${records}" ]; then
        return 0
    fi
    local path="${records}/${node}.$1"
    read_counters >"${path}.tmp.$$" && mv -f "${path}.tmp.$$" "${path}"
}

# This job's node-local directories on this node.
job_dirs() {
    local value dirs=("$(job_tmpdir)")
    if [ -n "${STAGE_DIR:-}" ]; then
        dirs+=("${STAGE_DIR}")
    fi
    local job_id="\${SLURM_JOB_ID}"   # (as values.sh writes it, unexpanded)
    for value in "${kernel_cache_env[@]#*=}" "${kernel_cache_dirs[@]#*=}"; do
        if [[ "${value}" == *"${job_id}"* ]]; then
            dirs+=("$(expand "${value}")")
        fi
    done
    printf '%s\n' "${dirs[@]}" | sort -u
}

clean() {
    local dir
    if [ "${KEEP_NODE_TMP:-0}" = 1 ] || [ "${SLURM_JOB_ID}" = 0 ]; then
        return 0
    fi
    while read -r dir; do
        if [[ "${dir}" == /?* ]] && [[ "${dir}" == *"${SLURM_JOB_ID}"* ]] && [ -O "${dir}" ]; then
            rm -rf -- "${dir}" || echo "nodes: ${node}: could not remove ${dir} (above)" >&2
        fi
    done < <(job_dirs)
}

# The guard's pid, in the job's TMPDIR on this node (`end` stands it down with SIGUSR1).
guard_file() {
    echo "$(job_tmpdir)/.nodes-guard"
}

guard() {
    local dir sleeper state
    dir="$(job_tmpdir)"
    mkdir -m 700 "${dir}" 2>/dev/null
    if [ -O "${dir}" ]; then
        echo "$$" >"$(guard_file)"
    fi
    # SIGTERM comes when Slurm ends the job, and where a Slurm signals a cancelled step
    # before it kills it: only a job that is no longer running is ended here.
    trap 'kill "${sleeper}" 2>/dev/null; exit 0' USR1
    trap 'state="$(timeout 10 squeue --noheader --jobs="${SLURM_JOB_ID}" --format=%T 2>/dev/null)";
          if [ "${state}" != RUNNING ]; then record end; clean; fi; kill "${sleeper}" 2>/dev/null; exit 0' TERM
    sleep infinity &
    sleeper=$!
    while kill -0 "${sleeper}" 2>/dev/null; do
        wait "${sleeper}"
    done
}

case "${1:-}" in
    start) record start ;;
    guard) guard ;;
    end)
        record end
        guard_pid="$(cat "$(guard_file)" 2>/dev/null)"
        clean
        if [[ "${guard_pid}" =~ ^[0-9]+$ ]]; then
            kill -USR1 "${guard_pid}" 2>/dev/null
        fi
        ;;
    clean) clean ;;
    *)
        echo "usage: $0 start|guard|end|clean" >&2
        exit 2
        ;;
esac
exit 0
