"""What a site's jobs run on: how a partition bills, its nodes, its limits, the storage areas."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from .._types import CpuMask, GpuVendorName, PartitionName, Slug, SlurmName, SlurmTime, brace_variable, check_abs_path, check_one_line, slurm_time_seconds
from .base import ExtraOption, Model

__all__ = ["BillingRule", "NodeLayout", "Partition", "SiteNote", "StorageArea", "WalltimeBin"]


class BillingRule(Model):
    """How a partition bills a job, so that a project can say what a job costs before it runs.

    Either whole nodes (``per_node_hour``: LUMI standard-g bills 4 GPU-hours per node-hour
    [UG-bill]) or slices of a node (``per_slice_hour`` for each slice a job takes on each node,
    the most of ceil(cores/slice_cores), ceil(memory/slice_mem_gb) and ceil(GPUs/slice_gpus):
    LUMI small-g and dev-g bill 0.5 GPU-hours per slice-hour, a slice being 8 cores, 64 GB or
    one GCD [UG-bill])."""

    unit: str = Field(default="GPU-hours", description="What the site bills in (GPU-hours, SU, node-hours).")
    per_node_hour: float | None = Field(default=None, gt=0, description="Units per node-hour for whole nodes.")
    per_slice_hour: float | None = Field(default=None, gt=0, description="Units per slice-hour (by-resource).")
    slice_cores: PositiveInt | None = Field(default=None, description="Cores in one slice.")
    slice_mem_gb: PositiveInt | None = Field(default=None, description="GB of memory in one slice.")
    slice_gpus: PositiveInt = Field(default=1, description="GPUs in one slice.")
    source: str = ""

    _text = field_validator("unit", "source")(check_one_line)

    @model_validator(mode="after")
    def _one_form(self) -> BillingRule:
        if (self.per_node_hour is None) == (self.per_slice_hour is None):
            raise ValueError("give per_node_hour (whole nodes) or per_slice_hour (slices of a node), one of them")
        if self.per_node_hour is not None and (self.slice_cores or self.slice_mem_gb):
            raise ValueError("slice_cores and slice_mem_gb belong to per_slice_hour rules")
        return self

    def units_per_hour(self, nodes: int, gpus: int, cores: int, mem_gb: int | None) -> float:
        """Units one hour of a job costs: ``nodes`` nodes, each with ``gpus`` GPUs, ``cores``
        cores and ``mem_gb`` GB (None: no memory request, not counted)."""
        if self.per_node_hour is not None:
            return nodes * self.per_node_hour
        slices = -(-gpus // self.slice_gpus)
        if self.slice_cores:
            slices = max(slices, -(-cores // self.slice_cores))
        if self.slice_mem_gb and mem_gb:
            slices = max(slices, -(-mem_gb // self.slice_mem_gb))
        assert self.per_slice_hour is not None  # one of the two forms, checked above
        return nodes * slices * self.per_slice_hour

    def describe(self) -> str:
        """The rule in words, for explain and the README."""
        if self.per_node_hour is not None:
            return f"{_number(self.per_node_hour)} {self.unit} per node-hour, whole nodes"
        terms = [f"ceil(GPUs/{self.slice_gpus})" if self.slice_gpus != 1 else "GPUs"]
        terms = ([f"ceil(cores/{self.slice_cores})"] if self.slice_cores else []) + (
            [f"ceil(mem/{self.slice_mem_gb}GB)"] if self.slice_mem_gb else []) + terms
        return f"max({', '.join(terms)}) x {_number(self.per_slice_hour or 0)} {self.unit} per hour on each node"


def _number(value: float) -> str:
    return f"{value:g}"


class SiteNote(Model):
    """One line of prose stating a site fact, with the fact's source key."""

    text: str = Field(description="One line, written into comments, help text and the README.")
    source: str = Field(default="", description="Source key of the fact (see lumi-facts.md).")

    _text = field_validator("text", "source")(check_one_line)


def check_path_note(value: SiteNote | None) -> SiteNote | None:
    """A SiteNote whose text is a directory (a site's energy_counters), checked as every path is."""
    if value is not None:
        check_abs_path(value.text)
    return value


class WalltimeBin(Model):
    """A wall-time limit that applies to jobs of up to ``max_nodes`` nodes."""

    max_nodes: PositiveInt
    max_walltime: SlurmTime


class NodeLayout(Model):
    """What one GPU node offers and how ranks are bound to it."""

    gpus: PositiveInt = Field(description="GPUs (for MI250X: GCDs) per node, as Slurm counts them.")
    gpu_type: str = Field(default="", description="GRES type, e.g. mi250; empty for untyped GRES.")
    gpu_vendor: GpuVendorName = Field(
        default="amd", description="Who makes the GPUs: amd or nvidia. It decides the variable a rank's GPUs are read "
        "from (ROCR_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES), the container's GPU flag (--nv for NVIDIA), the collective "
        "library's name (RCCL, NCCL) and the GPU monitor (rocm-smi, nvidia-smi); docs/plugins/gpu-vendors.md.")
    cpus: PositiveInt = Field(description="Logical CPUs Slurm shows per node (hardware threads included).")
    cores: PositiveInt = Field(description="Physical cores per node.")
    reserved_cores: list[int] = Field(default_factory=list, description="Cores no job may use.")
    reserved_cores_note: SiteNote | None = Field(
        default=None, description="Which cores the reserved ones are, for the README (LUMI: 'the first core of each "
        "CCD' [TM-LN]); leave out where the site's documentation does not say.",
    )
    cpus_per_gpu: PositiveInt = Field(description="Cores per GPU task (--cpus-per-task).")
    cpu_masks: list[CpuMask] = Field(
        description="--cpu-bind=mask_cpu masks in local-rank order (rank i -> GPU i), hex, none of them 0x0."
    )
    gpu_numa: list[int] = Field(
        default_factory=list, description="NUMA node of each GPU, in local-rank order (LUMI: rocm-smi --showtoponuma "
        "[UG-bind]); shown by `lumi-scaffold explain`; leave out where unknown.")
    gpu_nic: list[str] = Field(
        default_factory=list, description="Network interface nearest each GPU, in local-rank order; shown by "
        "`lumi-scaffold explain`; leave out where unknown.")
    gpu_nic_group: list[int] = Field(
        default_factory=list, description="Which GPUs share a network interface, in local-rank order: the same number "
        "for the GPUs of one NIC (LUMI: the two GCDs of an MI250X [UG-lumig]); `lumi-scaffold explain` shows it "
        "where gpu_nic (the interfaces' names per GPU) is unknown; leave out where unknown.")
    nic_note: SiteNote | None = Field(
        default=None, description="The nodes' network interfaces in one line, for `lumi-scaffold explain` (LUMI: one "
        "Slingshot-11 NIC per MI250X, hsn0-hsn3 [UG-lumig]).")
    mem_per_gpu_gb: PositiveInt | None = Field(
        default=None, description="Memory to request per GPU (--mem-per-gpu), GB; leave out to request none."
    )
    mem_per_node_gb: PositiveInt | None = Field(
        default=None, description="Memory to request for a whole node (--mem), GB; leave out to request none."
    )
    gpu_power: SiteNote | None = Field(
        default=None, description="What rocm-smi's power column shows for busy GPUs, the best sign that they work, for "
        "`scripts/attach.sh --help` (LUMI: '~300 W one busy GCD, ~500 W both GCDs of an MI250X' [AIG-06]); leave out "
        "where the site's documentation gives no figures.",
    )
    source: str = ""

    @property
    def usable_cores(self) -> int:
        return self.cores - len(self.reserved_cores)

    @model_validator(mode="after")
    def _check_layout(self) -> NodeLayout:
        for name in ("gpu_numa", "gpu_nic", "gpu_nic_group"):
            if getattr(self, name) and len(getattr(self, name)) != self.gpus:
                raise ValueError(f"{name} has {len(getattr(self, name))} entries but the node has {self.gpus} GPUs; give one per GPU")
        if any(not re.fullmatch(r"[A-Za-z0-9_.:-]+", nic) for nic in self.gpu_nic):
            raise ValueError("gpu_nic entries are interface names: letters, digits, _ . : -")
        if len(self.cpu_masks) != self.gpus:
            raise ValueError(f"cpu_masks has {len(self.cpu_masks)} masks but the node has {self.gpus} GPUs; give one per GPU")
        bad = [c for c in self.reserved_cores if not 0 <= c < self.cpus]
        if bad:
            raise ValueError(f"reserved_cores {bad} are outside the node's {self.cpus} CPUs")
        if self.gpus * self.cpus_per_gpu > self.usable_cores:
            raise ValueError(
                f"{self.gpus} GPUs x {self.cpus_per_gpu} cpus_per_gpu needs more than the {self.usable_cores} usable cores"
            )
        if self.mem_per_gpu_gb and self.mem_per_node_gb and self.mem_per_gpu_gb * self.gpus > self.mem_per_node_gb:
            raise ValueError(
                f"mem_per_gpu_gb={self.mem_per_gpu_gb} x {self.gpus} GPUs exceeds mem_per_node_gb={self.mem_per_node_gb}"
            )
        reserved = sum(1 << c for c in self.reserved_cores)
        seen = 0
        for rank, mask in enumerate(self.cpu_masks):
            bits = int(mask, 16)
            if bits >> self.cpus:
                raise ValueError(f"mask {mask} (rank {rank}) names CPUs beyond the node's {self.cpus}")
            if bits & reserved:
                cores = [c for c in self.reserved_cores if bits >> c & 1]
                raise ValueError(f"mask {mask} (rank {rank}) uses reserved core(s) {cores}; such a job step fails")
            if bits & seen:
                raise ValueError(f"mask {mask} (rank {rank}) overlaps the mask of an earlier rank")
            if bin(bits).count("1") != self.cpus_per_gpu:
                raise ValueError(
                    f"mask {mask} (rank {rank}) has {bin(bits).count('1')} CPUs; it must have cpus_per_gpu={self.cpus_per_gpu}"
                )
            seen |= bits
        return self


class Partition(Model):
    """A Slurm partition (or a partition plus QOS) and the limits a generated job must respect."""

    name: PartitionName = Field(description="Name used in answers, as Slurm spells it (letters, digits, _ . -); also "
                                "the --partition value unless slurm_partition is set.")
    slurm_partition: SlurmName | None = Field(
        default=None, description="The --partition value when it differs from name (e.g. a QOS entry on batch); "
        "Slurm's own spelling (dots, capitals, _ too).")
    qos: SlurmName | None = Field(default=None, description="--qos value jobs need (e.g. Frontier's debug QOS).")
    allocation: Literal["whole-node", "by-resource"] = Field(
        description="'whole-node': every job gets whole nodes; 'by-resource': GPUs, cores and memory are shared."
    )
    max_nodes: PositiveInt = Field(description="Most nodes one job may use.")
    min_nodes: PositiveInt = Field(
        default=1, description="Fewest nodes a job here must use (a QOS for large jobs: 65); the questionnaire refuses "
        "fewer and names a partition that takes them.")
    max_walltime: SlurmTime = Field(description="Longest --time, D-HH:MM:SS.")
    default_walltime: SlurmTime | None = Field(
        default=None, description="The training job's wall time the questionnaire offers here; leave out for one "
        "hour, or the partition's limit where that is shorter (a 30-minute debug QOS: 00:30:00).")
    walltime_bins: list[WalltimeBin] = Field(
        default_factory=list,
        description="Shorter limits for smaller jobs (Frontier batch: 1-91 nodes 2 h, ...), by ascending max_nodes.",
    )
    shared_node_tmp_gb: PositiveInt | None = Field(
        default=None,
        description="GB of node-local tmp (RAM) a job may fill when it shares a node in this partition (LUMI small-g: "
        "64 [AIG-04]); whole-node and --exclusive jobs are limited by their memory instead. Leave out when unknown.",
    )
    node: NodeLayout | None = Field(
        default=None,
        description="The nodes of this partition where they differ from the site's `node` (Setonix gpu-highmem: more "
        "memory); jobs in it take GPUs, cores, masks and memory from here.",
    )
    sbatch_options: list[ExtraOption] = Field(
        default_factory=list, description="Extra #SBATCH options every job in this partition needs (after the site's)."
    )
    srun_options: list[ExtraOption] = Field(
        default_factory=list, description="Extra options of the training step's srun in this partition (after the site's)."
    )
    purpose: str = Field(default="", description="What the partition is for, one line.")
    chains: bool = Field(
        default=True, description="Whether training jobs here may queue their successors (`--chain N`); false for "
        "partitions meant for debugging only (LUMI dev-g [UG-part]), where the job refuses a chain (CHAIN=N).")
    arrays: bool = Field(
        default=True, description="Whether sweeps (Slurm job arrays, jobs/sweep.sbatch) may run here; false where a "
        "sweep's trials would break the partition's job limits (LUMI dev-g: 2 jobs, 1 running [UG-part]).")
    shared_multi_gpu: SiteNote | None = Field(
        default=None, description="What a job with more than one GPU on this partition's shared nodes may hit, one "
        "line with its source (LUMI small-g: 'sporadic RCCL and binding failures' [TM-ai-E08]); `new`, `doctor` and "
        "`explain` name it for such jobs, with whole nodes as the way out. Leave out where nothing is known.")
    billing: str = Field(default="", description="How jobs are billed, one line.")
    billing_rule: BillingRule | None = Field(
        default=None, description="How jobs are billed, as a rule `lumi-scaffold explain` and the README compute "
        "costs with; leave out where the site's rule is not known (then no cost is shown).")
    source: str = Field(default="", description="Source key of the limits.")

    _text = field_validator("purpose", "billing", "source")(check_one_line)

    @property
    def max_seconds(self) -> int:
        return slurm_time_seconds(self.max_walltime)

    @property
    def slurm_name(self) -> str:
        return self.slurm_partition or self.name

    def walltime_limit(self, nodes: int) -> str:
        """The longest --time for a job of ``nodes`` nodes."""
        for limit in self.walltime_bins:
            if nodes <= limit.max_nodes:
                return limit.max_walltime
        return self.max_walltime

    @model_validator(mode="after")
    def _bins(self) -> Partition:
        edges = [b.max_nodes for b in self.walltime_bins]
        if edges != sorted(set(edges)):
            raise ValueError("walltime_bins must have strictly ascending max_nodes")
        if any(slurm_time_seconds(b.max_walltime) > self.max_seconds for b in self.walltime_bins):
            raise ValueError("a walltime bin exceeds the partition's max_walltime")
        if self.min_nodes > self.max_nodes:
            raise ValueError(f"min_nodes {self.min_nodes} exceeds max_nodes {self.max_nodes}")
        if self.default_walltime and slurm_time_seconds(self.default_walltime) > self.max_seconds:
            raise ValueError(f"default_walltime {self.default_walltime} exceeds the partition's max_walltime "
                             f"{self.max_walltime}; give at most that")
        return self


class StorageArea(Model):
    """A file system area. ``path`` may contain ``{account}`` for the project's Slurm account,
    ``{project}`` for the project the account belongs to (see :attr:`AccountRule.project`),
    and ``${USER}`` where the area is per user."""

    name: Slug = Field(description="Short name used in answers, e.g. scratch.")
    path: str = Field(description="Path, with {account} standing for the Slurm account, {project} for its project "
                                  "(AccountRule.project), ${USER} where the area is per user.")
    kind: Literal["home", "parallel", "flash", "ram", "nvme", "other"] = Field(
        description="'ram' is node-local memory (counted in the job's memory)."
    )
    data: bool = Field(default=False, description="Offer this area as a place for training data.")
    note: str = Field(default="", description="Quota, retention, billing: one line.")
    source: str = ""
    user_level: bool | None = Field(
        default=None, description="true: the path is already each user's own directory (a variable such as "
        "${WORKDIR} that is set per user), so no /${USER} is added; default: per user where the path holds ${USER}.")

    _text = field_validator("note", "source")(check_one_line)

    @field_validator("path")
    @classmethod
    def _path_is_safe(cls, value: str) -> str:
        check_abs_path(value.replace("{account}", "account").replace("{project}", "project"))
        return brace_variable(value)

    def resolve(self, account: str, project: str | None = None) -> str:
        """The path for ``account`` (and its ``project``, by default the account itself)."""
        return self.path.replace("{account}", account).replace("{project}", account if project is None else project)

    @property
    def per_user(self) -> bool:
        """Whether the path already names the user's own directory: ``user_level``, or by
        default ``${USER}`` in it."""
        return "${USER}" in self.path if self.user_level is None else self.user_level

    def user_dir(self, account: str, project: str | None = None) -> str:
        """The user's directory in this area: the path itself where it is per user."""
        path = self.resolve(account, project)
        return path if self.per_user else f"{path}/${{USER}}"
