#!/bin/bash
# Build container/demo.sif from container/environment.yml with cotainr.
# Runs the build on a compute node (it needs memory and time), from the project directory:
#   bash container/build.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

sif="container/demo.sif"
if [ -e "${sif}" ]; then
    # cotainr stops at an "overwrite?" prompt when the image exists. [WS-06]
    mv "${sif}" "${sif}.previous"
    echo "Moved the old image to ${sif}.previous" >&2
fi
# A bindings module left loaded by hand sets SINGULARITY_BIND, whose targets the image being
# built lacks, and the build stops ("... doesn't exist in container"). [TM-Cont] Build with no
# bind paths and no modules but cotainr's (module purge).
unset SINGULARITY_BIND SINGULARITY_BINDPATH APPTAINER_BIND APPTAINER_BINDPATH
module purge
module load LUMI cotainr
# 100 GB of memory, as the LUMI AI workshop's reference cotainr build asks. [WS-06]
srun --account=project_465000000 --partition=small-g --time=01:00:00 --nodes=1 --ntasks=1 \
    --cpus-per-task=7 --mem=100G \
    cotainr build "${sif}" --system=lumi-g --conda-env=container/environment.yml --accept-licenses
