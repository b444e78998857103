#!/bin/bash
# Create the project's venv INSIDE the container, on top of its Python:
#   bash scripts/setup-venv.sh        (login node is fine; takes a few minutes)
# The venv uses --system-site-packages so the container's PyTorch (DDP, RCCL) stays visible,
# and constraints.txt pins the container's framework versions so pip never replaces
# them with a generic wheel built without ROCm or Slingshot support. [AIG-02], [seed-000]
set -euo pipefail

if [ "${1:-}" != "--inside" ]; then
    # shellcheck source=job-env.sh
    source "$(dirname "${BASH_SOURCE[0]}")/job-env.sh"
    # Keep pip's cache off $HOME. [WS-05]
    export PIP_CACHE_DIR="${PIP_CACHE_DIR:-/tmp/${USER}-pip-cache}"
    exec "${CONTAINER[@]}" "${PROJECT_DIR}/scripts/run.sh" bash "${PROJECT_DIR}/scripts/setup-venv.sh" --inside
fi

# Inside the container (run.sh has activated the image's Python, and the venv if present).
cd "${PROJECT_DIR}"
pinned=(torch)
versions() {
    python - "${pinned[@]}" <<'PY'
import importlib.metadata as md
import sys
for name in sys.argv[1:]:
    try:
        print(f"{name}=={md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name} (not installed)")
PY
}
before="$(versions)"
if [ ! -x venv/bin/python ]; then
    python -m venv --system-site-packages venv
fi
# shellcheck source=/dev/null
source venv/bin/activate
python -m pip install --constraint constraints.txt --requirement requirements.txt
after="$(versions)"
if [ "${before}" != "${after}" ]; then
    echo "ERROR: installing requirements changed the container's framework:" >&2
    diff <(echo "${before}") <(echo "${after}") >&2 || true
    echo "Fix: remove the requirement that pulls it in, or loosen its version; then rm -rf venv and rerun." >&2
    exit 1
fi
echo "venv ready; the container's versions are intact:"
echo "${after}"
