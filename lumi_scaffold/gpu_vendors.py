"""What the jobs' runtime needs to know of a node's GPUs, by vendor: one table, read by
values.py (scripts/values.sh), the templates (``lumi_gpu``) and the catalogue's checks.

A site names its vendor (``node.gpu_vendor``, AMD unless it says otherwise, as every site
before 0.5 was); nothing else in the runtime names one. Each fact carries its source.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from typing import Any

from ._types import ContainerGpuFlag, GpuVendorName  # noqa: F401  (GpuVendorName: the name the models use)


@dataclass(frozen=True)
class GpuVendor:
    name: str
    title: str
    # The variable Slurm sets per task for the GPUs it gave the task (gres/gpu), the one the
    # vendor's runtime reads; run.sh reports a rank's GPU from it.
    devices_variable: str
    # What the container runtime needs to give a container the GPUs (Singularity/Apptainer):
    # '' where the images bring their own GPU libraries and /dev is visible (LUMI's images).
    container_flag: ContainerGpuFlag
    container_flag_why: str
    # The collective library PyTorch's "nccl" backend is on this vendor's GPUs.
    collectives: str
    # The GPU monitor on the nodes, for scripts/attach.sh --smi.
    monitor: str
    # The vendor's GPU software stack, which a generic wheel lacks.
    stack: str
    # What the framework calls the GPU (README lines, comments).
    gpu_word: str
    # The collective benchmark's suite, and where the preflight looks for its all_reduce_perf in
    # an image, in order (a name alone: on PATH).
    benchmark_suite: str
    all_reduce_perf: tuple[str, ...]
    source: str

    def facts(self) -> dict[str, Any]:
        return dict(_facts(self))


VENDORS: dict[str, GpuVendor] = {
    "amd": GpuVendor(
        name="amd", title="AMD", devices_variable="ROCR_VISIBLE_DEVICES", container_flag="",
        container_flag_why="none: Singularity shows the node's /dev, the GPUs, by default",
        collectives="RCCL", monitor="rocm-smi", stack="ROCm", gpu_word="ROCm GPUs appear as cuda devices",
        benchmark_suite="rccl-tests", all_reduce_perf=("/usr/libexec/rccl-tests/all_reduce_perf", "all_reduce_perf"),
        source="[TM-Bind]",
    ),
    "nvidia": GpuVendor(
        name="nvidia", title="NVIDIA", devices_variable="CUDA_VISIBLE_DEVICES", container_flag="--nv",
        container_flag_why="without --nv (or --nvccli) Singularity binds none of the driver's libraries, and CUDA sees "
        "no GPU in the container",
        collectives="NCCL", monitor="nvidia-smi", stack="CUDA", gpu_word="NVIDIA GPUs are cuda devices",
        benchmark_suite="nccl-tests", all_reduce_perf=("all_reduce_perf",),
        source="https://github.com/sylabs/singularity/issues/1395",
    ),
}


def vendor(name: str) -> GpuVendor:
    return VENDORS[name]


def container_gpu_flag(site: Any, node: Any) -> ContainerGpuFlag:
    """The flag ``singularity exec`` gets for the GPUs of ``node`` at ``site``: the site's own
    (``container_gpu_flag``), else its vendor's."""
    flag: ContainerGpuFlag = site.container_gpu_flag if site.container_gpu_flag is not None else \
        VENDORS[node.gpu_vendor].container_flag
    return flag


@functools.lru_cache(maxsize=None)
def _facts(vendor: GpuVendor) -> dict[str, Any]:
    """asdict once per vendor (templates ask ~30 times a project); facts() hands out copies."""
    return asdict(vendor)
