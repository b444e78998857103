#!/usr/bin/env bash
# ensure-tools.sh LOG TOOL=PACKAGE...
#
# The suite's installer of system tools (Slurm and munge for start-slurm.sh, mksquashfs for
# the packed-venv test): exits 0 at once when every TOOL is on the search path; otherwise
# installs the Debian PACKAGEs of the missing ones (apt-get, --no-install-recommends, output
# in LOG) and checks again. When a tool is still missing it exits 1, and its last line on
# stderr says which tool, and why it was not installed (the tests skip with that line).
# The search path: ENSURE_TOOLS_PATH, default PATH plus /usr/sbin:/sbin (Debian's daemons).
set -euo pipefail

PROG="ensure-tools.sh"
usage() {
    printf '%s: usage: %s LOG TOOL=PACKAGE...\n' "${PROG}" "${PROG}" >&2
    exit 2
}
[[ $# -ge 2 && -n "$1" ]] || usage
log="$1"
shift
search="${ENSURE_TOOLS_PATH:-${PATH}:/usr/sbin:/sbin}"
on_path() { PATH="${search}" command -v -- "$1" 2>/dev/null; }

missing=()
packages=()
for pair in "$@"; do
    tool="${pair%%=*}"
    package="${pair#*=}"
    [[ "${pair}" == *=* && "${tool}" =~ ^[A-Za-z0-9._+-]+$ && "${package}" =~ ^[a-z0-9][a-z0-9.+-]*$ ]] || usage
    on_path "${tool}" >/dev/null && continue
    missing+=("${tool}")
    [[ " ${packages[*]} " == *" ${package} "* ]] || packages+=("${package}")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if ! apt="$(on_path apt-get)"; then
    printf '%s: %s missing and no apt-get to install %s\n' "${PROG}" "${missing[*]}" "${packages[*]}" >&2
    exit 1
fi
printf '%s: installing %s (missing: %s)\n' "${PROG}" "${packages[*]}" "${missing[*]}" >&2
mkdir -p -- "$(dirname -- "${log}")"
if ! DEBIAN_FRONTEND=noninteractive "${apt}" -o DPkg::Lock::Timeout=120 update -qq >"${log}" 2>&1 ||
    ! DEBIAN_FRONTEND=noninteractive "${apt}" -o DPkg::Lock::Timeout=120 install -y -qq \
        --no-install-recommends "${packages[@]}" >>"${log}" 2>&1; then
    tail -n 20 -- "${log}" >&2
    printf '%s: %s missing: apt-get could not install %s (log: %s)\n' "${PROG}" "${missing[*]}" \
        "${packages[*]}" "${log}" >&2
    exit 1
fi
still=()
for tool in "${missing[@]}"; do
    on_path "${tool}" >/dev/null || still+=("${tool}")
done
if [[ ${#still[@]} -gt 0 ]]; then
    printf '%s: %s still missing after installing %s (log: %s)\n' "${PROG}" "${still[*]}" "${packages[*]}" \
        "${log}" >&2
    exit 1
fi
