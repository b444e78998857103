#!/bin/bash
# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
# This project's values (scripts/values.sh) and the functions that read them. Sourced by
# the library (job.sh, run.sh, caches.sh ...), never run by itself.
# shellcheck source=../values.sh
source "$(dirname "${BASH_SOURCE[0]}")/../values.sh"

# expand_into VAR VALUE sets VAR to VALUE with every ${NAME} in it replaced by that
# variable's value (empty when unset): values.sh keeps such references as they are, to
# expand where they are used. It starts no subshell (run.sh expands ~20 values per rank),
# and keeps its state in its arguments: a local variable would hide a NAME of the same name.
expand_into() {
    set -- "$1" "$2" ""   # VAR, what is left to expand, what is expanded
    while [[ "$2" =~ ^([^$]*)\$\{([A-Za-z_][A-Za-z0-9_]*)\}(.*)$ ]]; do
        set -- "$1" "${BASH_REMATCH[3]}" "$3${BASH_REMATCH[1]}${!BASH_REMATCH[2]:-}"
    done
    printf -v "$1" '%s' "$3$2"
}

# The same, printed, for "$(expand "${value}")" (the variable it sets stays in that subshell).
expand() {
    expand_into expanded "$1"
    printf '%s' "${expanded:-}"
}


# This job's temporary directory on this node (node_tmp in values.sh, a ${NAME} in it
# expanded here, on the node): scripts/lib/run.sh makes it, scripts/lib/nodes.sh removes it
# when the job ends.
job_tmpdir() {   # (called as "$(job_tmpdir)", as expand is)
    expand_into node_tmp_expanded "${node_tmp}"
    printf '%s' "${node_tmp_expanded:-}/${USER}-tmp-${SLURM_JOB_ID}-${SLURM_NODEID}"
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
