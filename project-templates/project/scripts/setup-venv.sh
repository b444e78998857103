#!/bin/bash
# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
# Create the project's venv INSIDE the container, on top of the image's Python:
#   bash scripts/setup-venv.sh        (login node is fine; takes a few minutes)
# Before the venv exists, the script records every distribution the image's Python sees,
# at its exact version (local and dev suffixes included), with its tier, in
# venv/image-packages.json (scripts/lib/image_packages.py says how it decides the tier):
#   pinned: the framework's packages (venv_framework in scripts/values.sh) and every binary
#     package (compiled for the image: a generic wheel lacks its GPU and interconnect builds);
#   upgradable: pure-Python packages, which requirements.txt may upgrade, never downgrade.
# pip installs requirements.txt with those constraints (venv/image-constraints.txt: == for
# pinned, >= for upgradable) and your own (constraints.txt, which also says how to move one
# package between the tiers). Afterwards the script prints one line for each package of the
# image that the venv shadows with another version, and fails, naming the package and why,
# when a pinned one changed or an upgradable one went down.
# The venv sees the image's packages through a .pth file (scripts/lib/image_packages.py link),
# not --system-site-packages, which from a venv's Python (an image's own Python may be
# one) reaches the base interpreter's packages instead of the image's.
# Rerun it after changing requirements.txt; after a change of image, rm -rf venv first.
#
#   bash scripts/setup-venv.sh --pack
# builds the same venv at /user-software (a directory bound there while it builds) and packs
# it into one SquashFS file, venv.sqsh, which the jobs bind at /user-software: one file on
# the parallel file system instead of thousands.
# The pack is read-only: after changing requirements.txt, rerun --pack (it builds afresh).
# It needs mksquashfs on this node.
set -euo pipefail

if [ "${1:-}" != "--inside" ]; then
    # shellcheck source=lib/job.sh
    source "$(dirname "${BASH_SOURCE[0]}")/lib/job.sh"
    # Keep pip's cache off $HOME (pip_cache in values.sh).
    PIP_CACHE_DIR="${PIP_CACHE_DIR:-$(expand "${pip_cache}")}"
    export PIP_CACHE_DIR
    if [ "${1:-}" != "--pack" ]; then
        exec "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/lib/run.sh" bash "${PROJECT_DIR}/scripts/setup-venv.sh" --inside
    fi
    mksquashfs="${MKSQUASHFS:-mksquashfs}"
    if ! command -v "${mksquashfs}" >/dev/null; then
        echo "ERROR: --pack needs mksquashfs (${mksquashfs}), not found on this node. Fix: install squashfs-tools, or run without --pack." >&2
        exit 1
    fi
    build="${PROJECT_DIR}/.venv-pack"
    rm -rf "${build}"
    mkdir "${build}"
    # Bind the build directory at /user-software instead of an existing pack (scripts/lib/job.sh).
    VENV_PACK="${build}"
    # (The same library as above, read again for its container command with this VENV_PACK;
    # the linter follows it there, once, and not again here.)
    # shellcheck source=/dev/null
    source "${PROJECT_DIR}/scripts/lib/job.sh"
    SETUP_VENV_BUILDING=1 "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/lib/run.sh" bash "${PROJECT_DIR}/scripts/setup-venv.sh" --inside
    "${mksquashfs}" "${build}" "${PROJECT_DIR}/venv.sqsh.new" -processors 1 -no-xattrs -noappend -quiet
    mv "${PROJECT_DIR}/venv.sqsh.new" "${PROJECT_DIR}/venv.sqsh"
    rm -rf "${build}"
    echo "venv packed into venv.sqsh ($(du -h "${PROJECT_DIR}/venv.sqsh" | cut -f1)); jobs bind it at /user-software and use it instead of venv/."
    exit 0
fi

# Inside the container (run.sh has activated the image's Python, or the venv if present;
# none while packing). The venv: venv/, or /user-software while packing.
cd "${PROJECT_DIR}"
# This project's values: venv_framework, the framework's packages.
# shellcheck source=values.sh
source scripts/values.sh
venv=venv
if [ "${SETUP_VENV_BUILDING:-0}" = 1 ]; then
    venv=/user-software
fi
record="${venv}/image-packages.json"
if [ ! -x "${venv}/bin/python" ]; then
    if ! python -c "import pip" 2>/dev/null; then
        echo "ERROR: the image's Python ($(command -v python)) has no pip; the venv installs with it." >&2
        exit 1
    fi
    python scripts/lib/image_packages.py freeze .image-packages.json "${venv_framework[@]}"
    python -m venv --without-pip "${venv}"
    mv .image-packages.json "${record}"
    "${venv}/bin/python" scripts/lib/image_packages.py link "${record}"
elif [ ! -f "${record}" ]; then
    echo "ERROR: ${venv}/ was not made by this script (no ${record}): rm -rf ${venv} and rerun." >&2
    exit 1
fi
image="${SINGULARITY_CONTAINER:-${APPTAINER_CONTAINER:-}}"
made_for="$("${venv}/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["image"])' "${record}")"
if [ -n "${image}" ] && [ -n "${made_for}" ] && [ "${image}" != "${made_for}" ]; then
    echo "ERROR: the venv was made for ${made_for}, and this is ${image}. Fix: rm -rf venv and rerun." >&2
    exit 1
fi
# Already changed (a pip install by hand)? Say so before pip tries to undo it.
"${venv}/bin/python" scripts/lib/image_packages.py check "${record}" requirements.txt constraints.txt >/dev/null
"${venv}/bin/python" scripts/lib/image_packages.py constraints "${record}" constraints.txt >"${venv}/image-constraints.txt"
# The image's pip, run by the venv's Python, installs into the venv (--without-pip above).
# Its output is kept in the venv, to name the image's packages in a clash.
pip_output="${venv}/pip-install.log"
if ! "${venv}/bin/python" -m pip install --constraint "${venv}/image-constraints.txt" --constraint constraints.txt \
    --requirement requirements.txt 2>&1 | tee "${pip_output}"; then
    if ! "${venv}/bin/python" scripts/lib/image_packages.py explain "${record}" "${pip_output}" constraints.txt >&2; then
        echo "ERROR: pip cannot install requirements.txt with the constraints of ${venv}/image-constraints.txt" >&2
        echo "(the image's packages, each with its tier) and constraints.txt; pip names the clash above." >&2
        echo "Fix: loosen or remove that requirement (or pick a version that accepts the image's), then rerun." >&2
    fi
    exit 1
fi
"${venv}/bin/python" scripts/lib/image_packages.py check "${record}" requirements.txt constraints.txt
