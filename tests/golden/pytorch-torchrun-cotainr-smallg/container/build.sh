#!/bin/bash
# Build the project's image (cotainr_image in scripts/values.sh) from container/environment.yml
# with cotainr. Runs the build on a compute node (it needs memory and time; cotainr_srun in
# values.sh says where), from the project directory:
#   bash container/build.sh
# This file is the same in every project made by lumi-scaffold that builds its image.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=../scripts/values.sh
source scripts/values.sh
# shellcheck source=../scripts/lib/values-lib.sh
source scripts/lib/values-lib.sh   # (lmod: `module` with nounset off)

sif="${cotainr_image}"
if [ -e "${sif}" ]; then
    # cotainr stops at an "overwrite?" prompt when the image exists.
    mv "${sif}" "${sif}.previous"
    echo "Moved the old image to ${sif}.previous" >&2
fi
# A bindings module left loaded by hand sets SINGULARITY_BIND, whose targets the image being
# built lacks, and the build stops ("... doesn't exist in container"). Build with no bind
# paths, and with the modules as module_reset in values.sh says, then cotainr's.
unset SINGULARITY_BIND SINGULARITY_BINDPATH APPTAINER_BIND APPTAINER_BINDPATH
if [ -n "${module_reset}" ]; then
    lmod "${module_reset}"
fi
lmod load "${cotainr_modules[@]}"
if [ -n "${cotainr_base_image}" ]; then
    # BASE_IMAGE=/path/to/other.sif bash container/build.sh builds on another base image.
    base="${BASE_IMAGE:-${cotainr_base_image}}"
    if [ ! -f "${base}" ]; then
        echo "No base image at ${base}: ${site} may have removed it. Fix: give a current one with BASE_IMAGE=/path/to/image.sif, or upgrade lumi-scaffold and run lumi-scaffold update for the catalogue's" >&2
        exit 2
    fi
    from=(--base-image="${base}")
else
    from=(--system="${cotainr_system}")
fi
srun "${cotainr_srun[@]}" cotainr build "${sif}" "${from[@]}" --conda-env=container/environment.yml --accept-licenses
