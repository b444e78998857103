#!/bin/bash
# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
# Open a shell (or run a command) inside one of your running jobs, or watch its GPUs.
set -euo pipefail

# What this site's GPUs show, and whether an attached step sees them: scripts/values.sh.
# shellcheck source=values.sh
source "$(dirname "${BASH_SOURCE[0]}")/values.sh"

usage() {
    printf '%s\n' "Usage: scripts/attach.sh JOBID [NODE] [--smi | -- COMMAND [ARGS...]]" "" \
        "  scripts/attach.sh 1234                  a shell on the job's first node" \
        "  scripts/attach.sh 1234 nid005001        a shell on another node of the job"
    if [ -n "${gpu_power}" ]; then
        printf '%s\n' "  scripts/attach.sh 1234 --smi            ${gpu_monitor} every second (power is the best sign of" \
            "                                          use: ${gpu_power})${gpu_power_source:+ [${gpu_power_source}]}"
    else
        echo "  scripts/attach.sh 1234 --smi            ${gpu_monitor} every second"
    fi
    printf '%s\n' "  scripts/attach.sh 1234 -- top -b -n 1   one command, then back" "" \
        "Each call is its own job step that shares the job's resources (srun --overlap), so several" \
        "can be open at once, on any of the job's nodes.${overlap_source:+ ${overlap_source}}" \
        "squeue --me lists your jobs and their nodes. ${attached_gpus[0]}" "${attached_gpus[@]:1}"
}

case "${1:-}" in
    -h | --help)
        usage
        exit 0
        ;;
    "")
        usage >&2
        exit 2
        ;;
esac
jobid="$1"
shift
if ! [[ "${jobid}" =~ ^[0-9]+(_[0-9]+)?$ ]]; then
    echo "attach.sh: '${jobid}' is not a job id (a number; squeue --me lists yours). See --help." >&2
    exit 2
fi
node=""
if [ $# -gt 0 ] && [ "$1" != "--smi" ] && [ "$1" != "--" ]; then
    node="$1"
    shift
fi
command=("${SHELL:-/bin/bash}")
case "${1:-}" in
    "") ;;
    --smi) command=(watch -n1 "${gpu_monitor}") ;;
    --)
        shift
        if [ $# -eq 0 ]; then
            echo "attach.sh: no command after --. See --help." >&2
            exit 2
        fi
        command=("$@")
        ;;
    *)
        echo "attach.sh: unexpected '$1'. See --help." >&2
        exit 2
        ;;
esac
if [ -z "${node}" ]; then   # the job's first node (a one-node step may otherwise land on any)
    nodes="$(squeue -h -j "${jobid}" -t RUNNING -o %N 2>/dev/null || true)"
    if [ -z "${nodes}" ]; then
        echo "attach.sh: job ${jobid} is not running (squeue --me lists your jobs)." >&2
        exit 1
    fi
    node="$(scontrol show hostnames "${nodes}" | head -n 1)"
fi
# A terminal gets a pseudo-terminal (interactive shell, watch); a pipe does not.
pty=()
if [ -t 0 ] && [ -t 1 ]; then
    pty=(--pty)
fi
exec srun --jobid="${jobid}" --overlap --nodes=1 --ntasks=1 --nodelist="${node}" "${pty[@]}" "${command[@]}"
