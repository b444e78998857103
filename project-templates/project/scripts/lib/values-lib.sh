#!/bin/bash
# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
# This project's values (scripts/values.sh) and the functions that read them. Sourced by
# the library (job.sh, run.sh, caches.sh ...), never run by itself.
# shellcheck source=../values.sh
source "$(dirname "${BASH_SOURCE[0]}")/../values.sh"

# The value $1 with every ${NAME} in it replaced by that variable's value (empty when
# unset): values.sh keeps such references as they are, to expand where they are used.
expand() {
    local rest="$1" out="" name
    while [[ "${rest}" =~ ^([^$]*)\$\{([A-Za-z_][A-Za-z0-9_]*)\}(.*)$ ]]; do
        name="${BASH_REMATCH[2]}"
        out+="${BASH_REMATCH[1]}${!name:-}"
        rest="${BASH_REMATCH[3]}"
    done
    printf '%s' "${out}${rest}"
}


# This job's temporary directory on this node (node_tmp in values.sh, a ${NAME} in it
# expanded here, on the node): scripts/lib/run.sh makes it, scripts/lib/nodes.sh removes it
# when the job ends.
job_tmpdir() {
    printf '%s' "$(expand "${node_tmp}")/${USER}-tmp-${SLURM_JOB_ID}-${SLURM_NODEID}"
}

# The environment-modules command `module "$@"`, with nounset off while it runs: Lmod 9.2
# reads LD_LIBRARY_PATH and LD_PRELOAD unguarded and fails under `set -u` (the job files'
# set -euo pipefail) where they are unset (TACC/Lmod#835, #839; which Lmod a site runs
# varies). The caller's nounset setting is restored after; the status is module's.
lmod() {
    local nounset=0 status=0
    if [[ $- == *u* ]]; then
        nounset=1
    fi
    set +u
    module "$@" || status=$?
    if [ "${nounset}" = 1 ]; then
        set -u
    fi
    return "${status}"
}
