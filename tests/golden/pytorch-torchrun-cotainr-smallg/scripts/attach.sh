#!/bin/bash
# Open a shell (or run a command) inside one of your running jobs, or watch its GPUs.
set -euo pipefail

usage() {
    cat <<'USAGE'
Usage: scripts/attach.sh JOBID [NODE] [--smi | -- COMMAND [ARGS...]]

  scripts/attach.sh 1234                  a shell on the job's first node
  scripts/attach.sh 1234 nid005001        a shell on another node of the job
  scripts/attach.sh 1234 --smi            rocm-smi every second (power is the best sign of
                                          use: ~300 W one busy GCD, ~500 W both GCDs of an MI250X) [AIG-06]
  scripts/attach.sh 1234 -- top -b -n 1   one command, then back

Each call is its own job step that shares the job's resources (srun --overlap), so several
can be open at once, on any of the job's nodes. [TM-Slurm]
squeue --me lists your jobs and their nodes. Such a step sees the job's GPUs without
asking for them: LUMI's AI workshop and course watch a running job's GCDs with rocm-smi
from a step attached this way. [WS-04], [TM-ai-E08]
USAGE
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
    --smi) command=(watch -n1 rocm-smi) ;;
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
