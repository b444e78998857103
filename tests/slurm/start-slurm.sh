#!/usr/bin/env bash
# start-slurm.sh DIR
#
# Start a private, single-host Slurm cluster (munged + slurmctld + one or two slurmd) for
# tests, with LUMI-G-like partitions and fake AMD GPUs. Everything lives under DIR:
#   DIR/etc/{slurm.conf,gres.conf,job_submit.lua}  DIR/munge/munge.key  DIR/run/*.pid
#   DIR/log/*.log  DIR/state  DIR/spool/<node>  DIR/dev/<node>/fakegpu*  DIR/env.sh
# Afterwards: `source DIR/env.sh` (exports SLURM_CONF), then sbatch/srun/squeue as usual.
# Stop with stop-slurm.sh DIR. Must run as root (slurmd runs as root). Installs the Debian
# packages munge slurmctld slurmd slurm-client (--no-install-recommends) when missing.
# Idempotent: a second start with the same knobs is a no-op; with other knobs it rewrites
# the config and restarts slurmctld/slurmd (the controller state is wiped on every
# controller start, so job ids restart at 1).
# Recipe and findings: /work/shared/slurm-local-notes.md (tested with Slurm 22.05.8, Debian 12).
#
# Knobs (environment variables, all optional):
#   SLURM_LOCAL_NODES=1            number of slurmd on this host (1 or 2)
#   SLURM_LOCAL_NODENAME=          name of the first node; default "localhost" for one node,
#                                  "nid005000" when SLURM_LOCAL_NODES>1 (trailing digits are
#                                  incremented for the next node: nid005001)
#   SLURM_LOCAL_CPUS=$(nproc)      CPUs advertised per node (64 to run full LUMI-G job shapes)
#   SLURM_LOCAL_TASK_PLUGIN=task/affinity   or task/none (accepts and ignores any CPU mask)
#   SLURM_LOCAL_GPUS=8             fake GPUs per node (0 = no GPU gres)
#   SLURM_LOCAL_GPU_TYPE=mi250     gres type; empty = untyped (gpu:8)
#   SLURM_LOCAL_REAL_MEMORY=491520 RealMemory per node in MB (bookkeeping only)
#   SLURM_LOCAL_DEF_MEM_PER_CPU=1024  DefMemPerCPU of every partition, in MB
#   SLURM_LOCAL_MIN_JOB_AGE=5      seconds a finished job stays visible in scontrol
#   SLURM_LOCAL_FIRST_JOB_ID=1     first job id (clusters side by side on one host should not
#                                  hand out the same ids: jobs derive ports from them)
#   SLURM_LOCAL_AUTH=munge         or "none" (auth/none, no munged; Slurm 22.05 only)
#   SLURM_LOCAL_REQUIRE_ACCOUNT=0  1 = job_submit.lua rejects jobs without --account
#   SLURM_LOCAL_CTLD_PORT=6817     slurmctld port
#   SLURM_LOCAL_SLURMD_PORT=6818   port of the first slurmd (next node: +1)
#   SLURM_LOCAL_START_TIMEOUT=30   seconds to wait for all nodes to become idle
#   SLURM_LOCAL_LINK_ETC=0         1 = also symlink /etc/slurm/slurm.conf to DIR/etc/slurm.conf
set -euo pipefail

PROG="start-slurm.sh"
# shellcheck source-path=SCRIPTDIR source=slurm-lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/slurm-lib.sh"
die() {
    printf '%s: error: %s\n' "${PROG}" "$*" >&2
    exit 1
}
note() { printf '%s: %s\n' "${PROG}" "$*" >&2; }

[[ $# -eq 1 && -n "$1" ]] || die "usage: ${PROG} DIR"
mkdir -p -- "$1"
DIR="$(cd -- "$1" && pwd -P)"
# Unix socket paths (munge socket, slurmd step sockets under DIR/spool) are limited to 107 bytes.
[[ ${#DIR} -le 60 ]] || die "DIR path too long for Unix sockets (${#DIR} > 60 chars): ${DIR}"

NODES="${SLURM_LOCAL_NODES:-1}"
CPUS="${SLURM_LOCAL_CPUS:-$(nproc)}"
TASK_PLUGIN="${SLURM_LOCAL_TASK_PLUGIN:-task/affinity}"
GPUS="${SLURM_LOCAL_GPUS:-8}"
GPU_TYPE="${SLURM_LOCAL_GPU_TYPE-mi250}"
REAL_MEMORY="${SLURM_LOCAL_REAL_MEMORY:-491520}"
DEF_MEM_PER_CPU="${SLURM_LOCAL_DEF_MEM_PER_CPU:-1024}"
MIN_JOB_AGE="${SLURM_LOCAL_MIN_JOB_AGE:-5}"
FIRST_JOB_ID="${SLURM_LOCAL_FIRST_JOB_ID:-1}"
AUTH="${SLURM_LOCAL_AUTH:-munge}"
REQUIRE_ACCOUNT="${SLURM_LOCAL_REQUIRE_ACCOUNT:-0}"
CTLD_PORT="${SLURM_LOCAL_CTLD_PORT:-6817}"
SLURMD_PORT="${SLURM_LOCAL_SLURMD_PORT:-6818}"
START_TIMEOUT="${SLURM_LOCAL_START_TIMEOUT:-30}"
LINK_ETC="${SLURM_LOCAL_LINK_ETC:-0}"

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
for knob in NODES CPUS GPUS REAL_MEMORY DEF_MEM_PER_CPU MIN_JOB_AGE FIRST_JOB_ID CTLD_PORT SLURMD_PORT START_TIMEOUT; do
    is_uint "${!knob}" || die "SLURM_LOCAL_${knob} must be a non-negative integer, got '${!knob}'"
done
[[ "${NODES}" -ge 1 && "${NODES}" -le 2 ]] || die "SLURM_LOCAL_NODES must be 1 or 2, got ${NODES}"
[[ "${CPUS}" -ge 1 ]] || die "SLURM_LOCAL_CPUS must be >= 1"
case "${TASK_PLUGIN}" in task/affinity | task/none) ;; *) die "SLURM_LOCAL_TASK_PLUGIN must be task/affinity or task/none, got '${TASK_PLUGIN}'" ;; esac
case "${AUTH}" in munge | none) ;; *) die "SLURM_LOCAL_AUTH must be munge or none, got '${AUTH}'" ;; esac
case "${REQUIRE_ACCOUNT}" in 0 | 1) ;; *) die "SLURM_LOCAL_REQUIRE_ACCOUNT must be 0 or 1" ;; esac
case "${LINK_ETC}" in 0 | 1) ;; *) die "SLURM_LOCAL_LINK_ETC must be 0 or 1" ;; esac
[[ "${GPU_TYPE}" =~ ^[A-Za-z0-9_]*$ ]] || die "SLURM_LOCAL_GPU_TYPE must be alphanumeric, got '${GPU_TYPE}'"
[[ "$(id -u)" -eq 0 ]] || die "must run as root (slurmd and slurmctld run as root here)"

# Debian installs the daemons in /usr/sbin, which is not always on a CI user's PATH.
export PATH="${PATH}:/usr/sbin:/sbin"
unset SLURM_CONF

# --- packages ---------------------------------------------------------------------------
ensure_packages() {
    # tests/slurm/ensure-tools.sh: the suite's one installer (mksquashfs comes through it too).
    bash "$(dirname -- "${BASH_SOURCE[0]}")/ensure-tools.sh" "${DIR}/log/apt.log" \
        slurmctld=slurmctld slurmd=slurmd sbatch=slurm-client srun=slurm-client scontrol=slurm-client \
        sinfo=slurm-client squeue=slurm-client scancel=slurm-client munged=munge mungekey=munge ||
        die "Slurm is not installed (above)"
}
ensure_packages

# --- layout -----------------------------------------------------------------------------
ETC="${DIR}/etc"
RUN="${DIR}/run"
LOG="${DIR}/log"
STATE="${DIR}/state"
CONF="${ETC}/slurm.conf"
MUNGE_SOCKET="${RUN}/munge.socket"
MUNGE_PID="${RUN}/munged.pid"
CTLD_PID="${RUN}/slurmctld.pid"
# Slurm clients must be able to read slurm.conf (pitfall: unreadable -> 60 s hang); the
# munge key lives in its own private directory.
mkdir -p -- "${ETC}" "${RUN}" "${LOG}" "${STATE}" "${DIR}/spool" "${DIR}/dev" "${DIR}/munge"
chmod 755 -- "${ETC}" "${RUN}" "${DIR}/spool" "${DIR}/dev"
chmod 700 -- "${DIR}/munge" "${STATE}"

# Node names and ports.
NODE_NAMES=()
if [[ "${NODES}" -gt 1 || -n "${SLURM_LOCAL_NODENAME:-}" ]]; then
    first="${SLURM_LOCAL_NODENAME:-nid005000}"
    [[ "${first}" =~ ^[A-Za-z0-9_-]+$ ]] || die "bad SLURM_LOCAL_NODENAME '${first}'"
    if [[ "${NODES}" -eq 1 ]]; then
        NODE_NAMES=("${first}")
    else
        [[ "${first}" =~ ^(.*[^0-9])?([0-9]+)$ ]] ||
            die "SLURM_LOCAL_NODENAME must end in digits when SLURM_LOCAL_NODES>1, got '${first}'"
        prefix="${BASH_REMATCH[1]}"
        digits="${BASH_REMATCH[2]}"
        for ((i = 0; i < NODES; i++)); do
            NODE_NAMES+=("$(printf '%s%0*d' "${prefix}" "${#digits}" "$((10#${digits} + i))")")
        done
    fi
else
    NODE_NAMES=(localhost)
fi
slurmd_pidfile() { printf '%s/slurmd-%s.pid' "${RUN}" "$1"; }

# Jobs compute MASTER_ADDR with `scontrol show hostnames` (node names, not addresses), and
# JAX's coordinator is the first node name too: the emulated names must resolve, as they do
# on a real cluster. All nodes are this host, so they resolve to 127.0.0.1 (one line per
# name, added once, tagged so a reader of /etc/hosts knows where it came from).
resolve_node_names() {
    local node
    for node in "${NODE_NAMES[@]}"; do
        getent hosts -- "${node}" >/dev/null 2>&1 && continue
        printf '127.0.0.1 %s   # lumi-scaffold tests/slurm/start-slurm.sh\n' "${node}" >>/etc/hosts ||
            die "cannot add ${node} to /etc/hosts: jobs could not resolve their MASTER_ADDR"
    done
}
resolve_node_names

# --- config -----------------------------------------------------------------------------
gres_for_node=""
if [[ "${GPUS}" -gt 0 ]]; then
    if [[ -n "${GPU_TYPE}" ]]; then
        gres_for_node="gpu:${GPU_TYPE}:${GPUS}"
    else
        gres_for_node="gpu:${GPUS}"
    fi
fi

write_slurm_conf() {
    local i node
    cat <<CONF
# Generated by tests/slurm/start-slurm.sh; rewritten on every start.
ClusterName=lumi-ci
SlurmctldHost=localhost
SlurmctldPort=${CTLD_PORT}
CONF
    if [[ "${AUTH}" == munge ]]; then
        printf 'AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=%s\n' "${MUNGE_SOCKET}"
    else
        printf 'AuthType=auth/none\nCredType=cred/none\n'
    fi
    cat <<CONF
SlurmUser=root
SlurmdUser=root
StateSaveLocation=${STATE}
SlurmdSpoolDir=${DIR}/spool/%n
SlurmctldPidFile=${CTLD_PID}
SlurmdPidFile=${RUN}/slurmd-%n.pid
SlurmctldLogFile=${LOG}/slurmctld.log
SlurmdLogFile=${LOG}/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=${TASK_PLUGIN}
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=${LOG}/jobcomp.log
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
EnforcePartLimits=ALL
GresTypes=gpu
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=${MIN_JOB_AGE}
FirstJobId=${FIRST_JOB_ID}
KillWait=5
InactiveLimit=0
CONF
    if [[ "${REQUIRE_ACCOUNT}" == 1 ]]; then
        printf 'JobSubmitPlugins=lua\n'
    fi
    for i in "${!NODE_NAMES[@]}"; do
        node="${NODE_NAMES[i]}"
        printf 'NodeName=%s NodeHostname=localhost NodeAddr=127.0.0.1 Port=%s CPUs=%s Boards=1 SocketsPerBoard=1 CoresPerSocket=%s ThreadsPerCore=1 RealMemory=%s%s State=UNKNOWN\n' \
            "${node}" "$((SLURMD_PORT + i))" "${CPUS}" "${CPUS}" "${REAL_MEMORY}" \
            "${gres_for_node:+ Gres=${gres_for_node}}"
    done
    # LUMI-G partitions (limits from lumi-facts.md).
    local common="Nodes=ALL DefaultTime=00:15:00 DefMemPerCPU=${DEF_MEM_PER_CPU} State=UP"
    printf 'PartitionName=small-g Default=YES MaxTime=3-00:00:00 MaxNodes=4 %s\n' "${common}"
    printf 'PartitionName=standard-g MaxTime=2-00:00:00 MaxNodes=1024 OverSubscribe=EXCLUSIVE %s\n' "${common}"
    printf 'PartitionName=dev-g MaxTime=03:00:00 MaxNodes=32 %s\n' "${common}"
    # The "local" site plugin's partitions (plugins/lumi-site-local).
    printf 'PartitionName=debug MaxTime=1-00:00:00 MaxNodes=1 %s\n' "${common}"
    printf 'PartitionName=batch MaxTime=1-00:00:00 MaxNodes=2 OverSubscribe=EXCLUSIVE %s\n' "${common}"
}

write_gres_conf() {
    local node last
    printf 'AutoDetect=off\n'
    [[ "${GPUS}" -gt 0 ]] || return 0
    last=$((GPUS - 1))
    for node in "${NODE_NAMES[@]}"; do
        if [[ "${last}" -eq 0 ]]; then
            files="${DIR}/dev/${node}/fakegpu0"
        else
            files="${DIR}/dev/${node}/fakegpu[0-${last}]"
        fi
        printf 'NodeName=%s Name=gpu%s File=%s\n' "${node}" "${GPU_TYPE:+ Type=${GPU_TYPE}}" "${files}"
    done
}

write_job_submit_lua() {
    cat <<'LUA'
-- Generated by tests/slurm/start-slurm.sh: mimic LUMI's mandatory --account.
function slurm_job_submit(job_desc, part_list, submit_uid)
    if job_desc.account == nil or job_desc.account == "" then
        slurm.log_user("no --account given; use --account=project_<id>")
        return slurm.ESLURM_INVALID_ACCOUNT
    end
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end
LUA
}

# Fake GPU devices: character devices cloned from /dev/null (slurmd ignores plain files
# silently, and refuses duplicate names), symlinks to /dev/null where mknod is denied.
make_fake_gpus() {
    local node g dev
    for node in "${NODE_NAMES[@]}"; do
        mkdir -p -- "${DIR}/dev/${node}"
        for ((g = 0; g < GPUS; g++)); do
            dev="${DIR}/dev/${node}/fakegpu${g}"
            [[ -c "${dev}" ]] && continue
            rm -f -- "${dev}"
            mknod -m 666 -- "${dev}" c 1 3 2>/dev/null || ln -s /dev/null "${dev}"
        done
    done
}

# --- process helpers --------------------------------------------------------------------
all_slurm_alive() {
    local node
    alive "${CTLD_PID}" slurmctld || return 1
    for node in "${NODE_NAMES[@]}"; do
        alive "$(slurmd_pidfile "${node}")" slurmd || return 1
    done
}

stop_slurm_daemons() {
    local f pidfiles=()
    for f in "${RUN}"/slurmd-*.pid; do
        if [[ -e "${f}" ]]; then pidfiles+=("${f}"); fi
    done
    if [[ ${#pidfiles[@]} -gt 0 ]]; then term_all slurmd "${pidfiles[@]}"; fi
    term_all slurmctld "${CTLD_PID}"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

STARTED_MUNGE=0
STARTED_SLURM=0
SHOW_LOGS=() # log files worth showing when start-up fails at the current step
on_failure() {
    local rc=$? f
    if [[ -n "${tmpconf:-}" ]]; then
        rm -f -- "${tmpconf}" "${tmpconf}.gres" "${tmpconf}.lua"
    fi
    [[ ${rc} -eq 0 ]] && return 0
    for f in "${SHOW_LOGS[@]}"; do
        [[ -s "${f}" ]] || continue
        printf '%s: --- last lines of %s ---\n' "${PROG}" "${f}" >&2
        tail -n 15 -- "${f}" >&2
    done
    if [[ ${STARTED_SLURM} -eq 1 ]]; then
        stop_slurm_daemons || true
    fi
    if [[ ${STARTED_MUNGE} -eq 1 ]]; then
        term_all munged "${MUNGE_PID}" || true
    fi
    exit "${rc}"
}
trap on_failure EXIT

# --- munge ------------------------------------------------------------------------------
# all_can_traverse DIR: DIR and each of its parents are searchable (x) by everyone.
all_can_traverse() {
    local d="$1"
    while [[ -n "${d}" ]]; do
        [[ -n "$(find "${d}" -maxdepth 0 -perm -o+x)" ]] || return 1
        [[ "${d}" == / ]] && return 0
        d="$(dirname -- "${d}")"
    done
}

start_munge() {
    local key="${DIR}/munge/munge.key" i
    if alive "${MUNGE_PID}" munged; then
        return 0
    fi
    if [[ ! -s "${key}" ]]; then
        mungekey -c -k "${key}" -b 1024 || die "mungekey failed"
    fi
    chmod 600 -- "${key}"
    rm -f -- "${MUNGE_SOCKET}" "${MUNGE_SOCKET}.lock"
    SHOW_LOGS=("${LOG}/munged.log")
    local force=()
    if ! all_can_traverse "${RUN}"; then
        # munged refuses a socket whose parent directories are not o+x (pytest's tmp dirs are
        # 0700); --force turns that check into a warning. Only root can then use the cluster.
        force=(--force)
        note "a parent of ${RUN} is not world-searchable: starting munged with --force (root-only use)"
    fi
    munged "${force[@]}" --socket="${MUNGE_SOCKET}" --key-file="${key}" --pid-file="${MUNGE_PID}" \
        --log-file="${LOG}/munged.log" --seed-file="${DIR}/munge/munged.seed" ||
        die "munged failed to start (log: ${LOG}/munged.log)"
    STARTED_MUNGE=1
    for ((i = 0; i < 50; i++)); do
        if [[ -S "${MUNGE_SOCKET}" ]] && alive "${MUNGE_PID}" munged; then
            SHOW_LOGS=()
            return 0
        fi
        sleep 0.1
    done
    die "munged did not come up (log: ${LOG}/munged.log)"
}

# --- main -------------------------------------------------------------------------------
tmpconf="$(mktemp "${ETC}/.new.XXXXXX")"
write_slurm_conf >"${tmpconf}"
write_gres_conf >"${tmpconf}.gres"
if [[ "${REQUIRE_ACCOUNT}" == 1 ]]; then
    write_job_submit_lua >"${tmpconf}.lua"
else
    : >"${tmpconf}.lua"
fi

same_config() {
    cmp -s -- "${tmpconf}" "${CONF}" && cmp -s -- "${tmpconf}.gres" "${ETC}/gres.conf" &&
        { [[ "${REQUIRE_ACCOUNT}" == 0 ]] || cmp -s -- "${tmpconf}.lua" "${ETC}/job_submit.lua"; }
}

write_env_sh() {
    printf '# Generated by tests/slurm/start-slurm.sh\nexport SLURM_CONF=%q\n' "${CONF}" >"${DIR}/env.sh"
    chmod 644 -- "${DIR}/env.sh"
}

if [[ "${AUTH}" == munge ]]; then
    start_munge
elif alive "${MUNGE_PID}" munged; then
    term_all munged "${MUNGE_PID}"
fi

if all_slurm_alive && same_config; then
    rm -f -- "${tmpconf}" "${tmpconf}.gres" "${tmpconf}.lua"
    write_env_sh
    note "already running with the same configuration (${CONF})"
    trap - EXIT
    exit 0
fi

stop_slurm_daemons
for ((i = 0; i <= NODES; i++)); do
    if [[ ${i} -eq 0 ]]; then port="${CTLD_PORT}"; else port="$((SLURMD_PORT + i - 1))"; fi
    if port_in_use "${port}"; then
        die "port ${port} already in use (another Slurm? set SLURM_LOCAL_CTLD_PORT/SLURM_LOCAL_SLURMD_PORT)"
    fi
done

mv -f -- "${tmpconf}" "${CONF}"
mv -f -- "${tmpconf}.gres" "${ETC}/gres.conf"
if [[ "${REQUIRE_ACCOUNT}" == 1 ]]; then
    mv -f -- "${tmpconf}.lua" "${ETC}/job_submit.lua"
else
    rm -f -- "${tmpconf}.lua" "${ETC}/job_submit.lua"
fi
chmod 644 -- "${CONF}" "${ETC}/gres.conf"
make_fake_gpus

# A fresh controller state every time: otherwise slurmctld reports nodes idle from saved
# state before slurmd registered.
find "${STATE}" -mindepth 1 -delete
for node in "${NODE_NAMES[@]}"; do
    mkdir -p -- "${DIR}/spool/${node}"
done

STARTED_SLURM=1
SHOW_LOGS=("${LOG}/slurmctld.log")
for node in "${NODE_NAMES[@]}"; do
    SHOW_LOGS+=("${LOG}/slurmd-${node}.log")
done
slurmctld -f "${CONF}" -i || die "slurmctld failed to start"
for node in "${NODE_NAMES[@]}"; do
    slurmd -f "${CONF}" -N "${node}" || die "slurmd -N ${node} failed to start"
done

export SLURM_CONF="${CONF}"
deadline=$((SECONDS + START_TIMEOUT))
while :; do
    states="$(sinfo -h -N -p small-g -o '%N %t' 2>/dev/null | sort -u)" || states=""
    idle="$(grep -c ' idle$' <<<"${states}" || true)"
    [[ "${idle}" -eq "${NODES}" ]] && break
    all_slurm_alive || die "a Slurm daemon exited during start-up"
    [[ ${SECONDS} -lt ${deadline} ]] || die "nodes not idle after ${START_TIMEOUT} s: ${states//$'\n'/, }"
    sleep 0.1
done

write_env_sh
if [[ "${LINK_ETC}" == 1 ]]; then
    mkdir -p /etc/slurm
    if [[ -e /etc/slurm/slurm.conf && ! -L /etc/slurm/slurm.conf ]]; then
        note "not linking: /etc/slurm/slurm.conf is a regular file"
    else
        ln -sfn -- "${CONF}" /etc/slurm/slurm.conf
    fi
fi
trap - EXIT
note "up: ${NODE_NAMES[*]} (source ${DIR}/env.sh)"
