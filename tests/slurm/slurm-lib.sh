# shellcheck shell=bash
# Helpers shared by start-slurm.sh and stop-slurm.sh (sourced, not executed).
# Daemons are found only through their own pidfiles, never by process name.

# pid_of PIDFILE: print the pid stored in PIDFILE.
pid_of() {
    local pid
    [[ -s "$1" ]] || return 1
    pid="$(<"$1")"
    pid="${pid//[!0-9]/}"
    [[ -n "${pid}" ]] || return 1
    printf '%s' "${pid}"
}

# alive PIDFILE NAME: the pid in PIDFILE is a live (not zombie) process called NAME.
# The name check guards against pid reuse; the state check matters where PID 1 reaps
# orphans lazily (this CI VM's init does), so a stopped daemon lingers as a zombie.
alive() {
    local pid stat
    pid="$(pid_of "$1")" || return 1
    stat="$(cat "/proc/${pid}/stat" 2>/dev/null)" || return 1
    [[ "${stat}" == *"($2) "* ]] || return 1
    stat="${stat##*) }"
    [[ "${stat:0:1}" != Z && "${stat:0:1}" != X ]]
}

# term_all NAME PIDFILE...: SIGTERM every live one, wait up to 10 s for all of them to
# exit, SIGKILL the rest, remove the pidfiles.
term_all() {
    local name="$1" f i pending
    shift
    for f in "$@"; do
        if alive "${f}" "${name}"; then
            kill -TERM "$(pid_of "${f}")" 2>/dev/null || true
        fi
    done
    for ((i = 0; i < 100; i++)); do
        pending=0
        for f in "$@"; do
            if alive "${f}" "${name}"; then pending=1; fi
        done
        [[ ${pending} -eq 0 ]] && break
        sleep 0.1
    done
    for f in "$@"; do
        if alive "${f}" "${name}"; then
            printf '%s: %s (pid %s) ignored SIGTERM, sending SIGKILL\n' "${PROG:-slurm-lib}" \
                "${name}" "$(pid_of "${f}")" >&2
            kill -KILL "$(pid_of "${f}")" 2>/dev/null || true
        fi
        rm -f -- "${f}"
    done
}
