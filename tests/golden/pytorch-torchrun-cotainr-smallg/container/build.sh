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
module load CrayEnv cotainr
# The base image: the LUMI AI Factory ROCm 7.0 image with libfabric and MPICH (20260513_121430, mpich layer), but no framework. [WS-06-2026, WS-PR33, SS-cot]
# BASE_IMAGE=/path/to/other.sif bash container/build.sh builds on another.
base="${BASE_IMAGE:-/appl/local/laifs/containers/lumi-multitorch-u24r70f21m50t210-20260513_121430/lumi-multitorch-mpich-u24r70f21m50t210-20260513_121430.sif}"
if [ ! -f "${base}" ]; then
    echo "No base image at ${base}: LUMI may have removed it. Fix: give a current one with BASE_IMAGE=/path/to/image.sif, or upgrade lumi-scaffold and run lumi-scaffold update for the catalogue's" >&2
    exit 2
fi
# On small, a CPU partition: the build needs no GPU (32 cores, 60 GB, as the
# LUMI AI workshop's 2026 cotainr build asks [WS-06-2026]).
srun --account=project_465000000 --partition=small --time=01:00:00 --nodes=1 --ntasks=1 \
    --cpus-per-task=32 --mem=60G \
    cotainr build "${sif}" --base-image="${base}" --conda-env=container/environment.yml --accept-licenses
