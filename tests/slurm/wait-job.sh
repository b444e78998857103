#!/usr/bin/env bash
# wait-job.sh JOBID [TIMEOUT]
#
# Wait for a Slurm job of the local test cluster to finish by polling
# `scontrol show job -o JOBID` every 0.2 s (more reliable than `sbatch --wait`, which can
# report 0 for a purged job and never returns for a job that cannot start). Needs
# SLURM_CONF in the environment (source DIR/env.sh). TIMEOUT defaults to 120 s.
# Prints the final "JobId=... JobState=... ExitCode=... Reason=..." line on stdout.
# Exit status: 0 COMPLETED; the job's exit code (1 if that is 0, at most 253) for FAILED,
# TIMEOUT, CANCELLED, NODE_FAIL, OUT_OF_MEMORY, ...; 254 on timeout; 255 when the job is
# unknown to the controller (never existed, or purged MinJobAge seconds after it ended).
set -euo pipefail

PROG="wait-job.sh"
note() { printf '%s: %s\n' "${PROG}" "$*" >&2; }
if [[ $# -lt 1 || $# -gt 2 || ! "$1" =~ ^[0-9]+$ || ! "${2:-120}" =~ ^[0-9]+$ ]]; then
    note "usage: ${PROG} JOBID [TIMEOUT_SECONDS]"
    exit 2
fi
job="$1"
timeout_s="${2:-120}"
[[ -n "${SLURM_CONF:-}" ]] || note "warning: SLURM_CONF is not set"

field() {
    # field NAME LINE: value of NAME=... in a `scontrol show job -o` line
    if [[ " $2 " =~ \ $1=([^ ]*)\  ]]; then
        printf '%s' "${BASH_REMATCH[1]}"
    fi
}

deadline=$((SECONDS + timeout_s))
last=""
while :; do
    if out="$(scontrol show job -o "${job}" 2>&1)"; then
        last="${out}"
        state="$(field JobState "${out}")"
        exit_code="$(field ExitCode "${out}")"
        case "${state}" in
            COMPLETED | FAILED | TIMEOUT | CANCELLED | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | BOOT_FAIL | DEADLINE)
                printf 'JobId=%s JobState=%s ExitCode=%s Reason=%s\n' "${job}" "${state}" \
                    "${exit_code}" "$(field Reason "${out}")"
                [[ "${state}" == COMPLETED ]] && exit 0
                code="${exit_code%%:*}"
                [[ "${code}" =~ ^[0-9]+$ && "${code}" -gt 0 ]] || code=1
                [[ "${code}" -gt 253 ]] && code=253
                exit "${code}"
                ;;
        esac
    elif [[ "${out}" == *"Invalid job id"* ]]; then
        note "job ${job} unknown to the controller (never submitted, or purged after MinJobAge)"
        exit 255
    fi
    if [[ ${SECONDS} -ge ${deadline} ]]; then
        note "timeout after ${timeout_s} s; last: ${last:-${out}}"
        exit 254
    fi
    sleep 0.2
done
