#!/usr/bin/env bash
# stop-slurm.sh DIR
#
# Stop the test cluster that start-slurm.sh DIR started: cancel every job that is still
# queued or running (so no slurmstepd survives), then stop slurmd, slurmctld and munged,
# each by its own pidfile under DIR/run (never by process name, so other Slurm instances on
# the host are untouched). Safe to run when nothing is running. The files under DIR stay for
# inspection (logs in DIR/log).
set -euo pipefail

PROG="stop-slurm.sh"
note() { printf '%s: %s\n' "${PROG}" "$*" >&2; }
[[ $# -eq 1 && -n "$1" ]] || {
    note "usage: ${PROG} DIR"
    exit 1
}
[[ -d "$1" ]] || {
    note "no such directory: $1 (nothing to stop)"
    exit 0
}
DIR="$(cd -- "$1" && pwd -P)"
RUN="${DIR}/run"
CONF="${DIR}/etc/slurm.conf"
export PATH="${PATH}:/usr/sbin:/sbin"

# shellcheck source-path=SCRIPTDIR source=slurm-lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/slurm-lib.sh"

# 1. Cancel what is left and wait (up to 20 s) until the controller has no job in any
#    queue state (running jobs go through COMPLETING while slurmstepd cleans up).
if alive "${RUN}/slurmctld.pid" slurmctld && [[ -r "${CONF}" ]]; then
    export SLURM_CONF="${CONF}"
    mapfile -t jobs < <(timeout 10 squeue -h -o '%A' 2>/dev/null || true)
    if [[ ${#jobs[@]} -gt 0 ]]; then
        note "cancelling ${#jobs[@]} job(s): ${jobs[*]}"
        timeout 10 scancel -- "${jobs[@]}" 2>/dev/null || true
        for ((i = 0; i < 200; i++)); do
            left="$(timeout 10 squeue -h -o '%A' 2>/dev/null || true)"
            [[ -z "${left}" ]] && break
            sleep 0.1
        done
        [[ -z "${left}" ]] || note "jobs still present after 20 s: ${left//$'\n'/ }"
    fi
fi

# 2. Daemons: slurmd(s) and slurmctld together, then munged (clients need it until here).
slurmd_pidfiles=()
for f in "${RUN}"/slurmd-*.pid; do
    [[ -e "${f}" ]] && slurmd_pidfiles+=("${f}")
done
if [[ ${#slurmd_pidfiles[@]} -gt 0 ]]; then
    term_all slurmd "${slurmd_pidfiles[@]}" &
fi
term_all slurmctld "${RUN}/slurmctld.pid"
wait
term_all munged "${RUN}/munged.pid"

if [[ -L /etc/slurm/slurm.conf && "$(readlink /etc/slurm/slurm.conf)" == "${CONF}" ]]; then
    rm -f /etc/slurm/slurm.conf
fi
rm -f -- "${DIR}/env.sh"
note "stopped (${DIR})"
