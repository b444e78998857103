"""Catalogue models: sites, container images, frameworks, profilers.

Plugins register instances of these (or plain dicts that validate into them). Every
model forbids unknown keys, so a misspelled key in plugin data fails loudly, and the
checks that keep generated jobs correct (masks against reserved cores, partition
limits, account patterns) live here rather than in templates.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PositiveInt, field_validator, model_serializer, model_validator

from .jobs import OWN_OPTIONS
from ._types import (PACKAGE, VERSION, AbsPath, CpuMask, EnvName, Ident, NameWord, Package, Requirement, ShellWord, Slug, SlurmName,
                     SlurmOption, SlurmTime, brace_variable, check_abs_path, check_plain_word, check_requirement,
                     check_shell_word, check_one_line, slurm_time_seconds)

__all__ = [
    "AccountRule",
    "BillingRule",
    "BindingsModule",
    "ContainerGeneration",
    "CotainrSupport",
    "ContainerImage",
    "EnvModule",
    "EnvSetting",
    "Framework",
    "KnownIssue",
    "NodeLayout",
    "Partition",
    "Profiler",
    "RcclCheck",
    "ReadmeSection",
    "Site",
    "SiteNote",
    "StorageArea",
    "WalltimeBin",
    "Source",
    "TemplateFile",
]

class Model(BaseModel):
    """Base for catalogue models: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


JobShape = Literal["multi-node", "process-groups"]


class KnownIssue(Model):
    """A known problem of an image or an env setting, from a public report (lumi-facts §11).

    A project is affected when its job has every shape in ``shapes`` (none: every job) and,
    for an env setting, its image is of one of ``generations`` (none: every image).
    ``process-groups`` (the code makes a second process group: tensor, pipeline, expert
    parallel) cannot be seen in the answers, so such an issue is named whenever its other
    shapes hold, saying that it applies if the code does that."""

    title: str = Field(description="One line: what goes wrong, e.g. 'multi-node init_process_group hangs'.")
    source: str = Field(min_length=1, description="Source key of the report (in sources.yaml), e.g. LAIF-I28; "
                                                  "also how doctor and explain name the issue.")
    shapes: list[JobShape] = Field(
        default_factory=list, description="Job shapes affected, all of them must hold: 'multi-node' (more than one "
        "node), 'process-groups' (a second process group); empty: every job.")
    generations: list[Slug] = Field(
        default_factory=list, description="Env settings only: the image generations the issue affects (the setting is "
        "left out of those projects); empty: every image.")
    instead: str = Field(description="One line: what to do instead.")

    _text = field_validator("title", "source", "instead")(check_one_line)

    @property
    def key(self) -> str:
        """The issue's name: its first source key (LAIF-I28)."""
        return self.source.split(",")[0].strip()

    def affects(self, nodes: int, generation: str) -> bool:
        """Whether a job on ``nodes`` nodes with an image of ``generation`` may hit the issue."""
        if self.generations and generation not in self.generations:
            return False
        return "multi-node" not in self.shapes or nodes > 1

    @property
    def conditional(self) -> str:
        """The condition answers cannot show ('' when none)."""
        return "if your code makes a second process group (new_group: tensor, pipeline or expert parallel)" \
            if "process-groups" in self.shapes else ""


class EnvSetting(Model):
    """One environment variable a generated script exports, with the reason beside it."""

    name: EnvName = Field(description="Variable name, e.g. NCCL_SOCKET_IFNAME.")
    value: ShellWord = Field(description="Value; may reference other variables as ${NAME}.")
    why: str = Field(description="One line saying why the setting is there; written as a comment.")
    source: str = Field(default="", description="Source key of the fact (see lumi-facts.md).")
    scope: Literal["all", "multi-node", "off"] = Field(
        default="all",
        description="'multi-node' settings are only written for jobs on more than one node; 'off' ones are written "
        "commented out, `why` saying why (e.g. a job option they need that the site does not confirm).",
    )
    known_issues: list[KnownIssue] = Field(
        default_factory=list, description="Known problems of the setting: it is not exported in projects an issue "
        "affects (its generations and shapes), and scripts/values.sh says why in a comment.")

    _why = field_validator("why", "source")(check_one_line)

    @model_serializer(mode="wrap")
    def _without_no_issues(self, handler: Any) -> dict[str, Any]:
        # A setting with no known issues dumps as before they existed (recorded plugin_data).
        data = handler(self)
        if isinstance(data, dict) and not data.get("known_issues"):
            data.pop("known_issues", None)
        return data


def _profiler_word(value: str) -> str:
    check_shell_word(value.replace("{output}", "output"))
    return value


ProfilerWord = Annotated[str, AfterValidator(_profiler_word)]


class ProfilerEnvSetting(EnvSetting):
    """An environment setting for the profiled rank; ``{output}`` is its output directory."""

    value: str = Field(description="Value; {output} stands for the rank's profile directory.")

    _value = field_validator("value")(_profiler_word)


def _not_own_option(value: str) -> str:
    """A site's option that lumi-scaffold does not write itself (jobs.OWN_OPTIONS)."""
    if value.split("=")[0] in [f"--{name}" for name in OWN_OPTIONS]:
        raise ValueError(f"{value!r}: {value.split('=')[0]} comes from the project's answers; give only other options")
    return value


# A site's, partition's or image's own option: a SlurmOption lumi-scaffold does not write itself.
ExtraOption = Annotated[SlurmOption, AfterValidator(_not_own_option)]


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


class WalltimeBin(Model):
    """A wall-time limit that applies to jobs of up to ``max_nodes`` nodes."""

    max_nodes: PositiveInt
    max_walltime: SlurmTime


class NodeLayout(Model):
    """What one GPU node offers and how ranks are bound to it."""

    gpus: PositiveInt = Field(description="GPUs (for MI250X: GCDs) per node, as Slurm counts them.")
    gpu_type: str = Field(default="", description="GRES type, e.g. mi250; empty for untyped GRES.")
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

    name: Slug = Field(description="Name used in answers; also the --partition value unless slurm_partition is set.")
    slurm_partition: SlurmName | None = Field(
        default=None, description="The --partition value when it differs from name (e.g. a QOS entry on batch); "
        "Slurm's own spelling (dots, capitals, _ too).")
    qos: SlurmName | None = Field(default=None, description="--qos value jobs need (e.g. Frontier's debug QOS).")
    allocation: Literal["whole-node", "by-resource"] = Field(
        description="'whole-node': every job gets whole nodes; 'by-resource': GPUs, cores and memory are shared."
    )
    max_nodes: PositiveInt = Field(description="Most nodes one job may use.")
    max_walltime: SlurmTime = Field(description="Longest --time, D-HH:MM:SS.")
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
        "partitions meant for debugging only (LUMI dev-g [UG-part]), where the job refuses --chain.")
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




class EnvModule(Model):
    """An environment module a job loads on the host before it starts the container."""

    use: AbsPath | None = Field(default=None, description="Directory for `module use`, if needed.")
    use_module: NameWord | None = Field(
        default=None, description="A module that makes this one loadable, loaded instead of `module use` where the "
        "site has it (LUMI: Local-LAIF for /appl/local/laifs/modules); jobs fall back on `use` where it is missing.")
    name: NameWord = Field(description="Module to load, e.g. rccl-net-plugin or rocm/6.2.4.")
    sets_binds: bool = Field(
        default=False, description="The module sets the runtime's bind paths (SINGULARITY_BIND and the like)."
    )
    why: str = Field(default="", description="One line saying why it is loaded; written as a comment.")
    source: str = ""

    _text = field_validator("why", "source")(check_one_line)


class BindingsModule(Model):
    """An environment module that sets SINGULARITY_BIND (and friends) for an image generation.

    Kept for plugins written before :attr:`ContainerGeneration.modules`; it is loaded like
    a ``modules`` entry with ``sets_binds: true``.
    """

    use: AbsPath | None = Field(default=None, description="Directory for `module use`, if needed.")
    name: NameWord = Field(description="Module to load, e.g. lumi-aif-singularity-bindings.")
    source: str = ""

    _text = field_validator("source")(check_one_line)


class ContainerGeneration(Model):
    """How a family of images is started and how its Python environment is activated."""

    name: Slug
    title: str
    run_verb: Literal["exec", "run"] = Field(description="`singularity exec` or `singularity run`.")
    activate_var: EnvName | None = Field(
        default=None,
        description="Variable inside the container holding the activation command (legacy: WITH_CONDA).",
    )
    modules: list[EnvModule] = Field(
        default_factory=list, description="Modules every job loads on the host, in this order (e.g. rocm, then rccl-net-plugin)."
    )
    bindings_module: BindingsModule | None = Field(
        default=None, description="One module that sets the binds (older form of a `modules` entry with sets_binds)."
    )
    binds: list[AbsPath] = Field(default_factory=list, description="Binds every job needs.")
    multi_node_binds: list[AbsPath] = Field(
        default_factory=list, description="Extra binds for jobs on more than one node (RCCL over Slingshot)."
    )
    legacy: bool = Field(
        default=False, description="Images of this generation are no longer developed (LUMI's former LUST images "
        "[TM-Cont]); where a framework has only such images on the site, doctor says so.")
    mpi_srun_options: list[ExtraOption] = Field(
        default_factory=list,
        description="srun options that start the image's MPI programs (rccl-tests' all_reduce_perf in the network "
        "preflight), e.g. --mpi=pmi2 for the LAIF images' MPICH [LAIF-T].",
    )
    note: str = ""
    source: str = ""

    _text = field_validator("title", "note", "source")(check_one_line)

    @model_validator(mode="after")
    def _one_way_to_give_modules(self) -> ContainerGeneration:
        if self.modules and self.bindings_module:
            raise ValueError(
                f"give modules or bindings_module, not both; move bindings_module ({self.bindings_module.name}) "
                "into modules as an entry with sets_binds: true, where you want it in the load order"
            )
        _unique("modules", [m.name for m in self.modules])
        return self

    @property
    def load_modules(self) -> list[EnvModule]:
        """The modules a job loads, in order (``bindings_module`` as a ``modules`` entry)."""
        if self.bindings_module:
            bm = self.bindings_module
            return [EnvModule(use=bm.use, name=bm.name, sets_binds=True, source=bm.source)]
        return list(self.modules)


class CotainrSupport(Model):
    """How a site builds images with cotainr; sites without it get no ``cotainr`` choice."""

    system: NameWord | None = Field(
        default=None, description="`cotainr build --system` value, e.g. lumi-g (`cotainr info` lists them); or give "
        "base_image.")
    base_image: AbsPath | None = Field(
        default=None, description="`cotainr build --base-image` value: the image the build starts from, instead of "
        "a system's (LUMI: a LUMI AI Factory mpich image).")
    generation: Slug | None = Field(
        default=None, description="The container generation the built image runs with (binds, modules, run verb, "
        "settings left out), the base image's (LUMI: laif); default: own_image_generation.")
    build_partition: NameWord | None = Field(
        default=None, description="Partition container/build.sh runs the build on: a CPU partition, as the build "
        "needs no GPU (LUMI: small); default: the partial-node GPU partition.")
    build_cpus: int | None = Field(default=None, gt=0, description="Cores of the build; default: cpus_per_gpu.")
    build_mem_gb: int = Field(default=100, gt=0, description="Memory of the build in GB.")
    modules: list[NameWord] = Field(
        min_length=1, description="What `module load` needs for cotainr, in order, e.g. [LUMI, cotainr]."
    )
    base: str = Field(description="One line: what the system's base image contains (written as a comment).")
    pip_index: str | None = Field(
        default=None, description="Extra pip index for framework builds matching the base image's ROCm, e.g. "
        "https://download.pytorch.org/whl/rocm6.4.",
    )
    framework_packages: dict[Slug, list[str]] = Field(
        default_factory=dict,
        description="Per framework, its packages from pip_index, pinned with their local version (torch==2.9.1+rocm6.4): "
        "pip gives an extra index no priority over PyPI, whose builds lack ROCm.",
    )
    packages_source: str = Field(default="", description="Source key of pip_index and framework_packages.")
    source: str = ""

    _text = field_validator("base", "source", "packages_source")(check_one_line)

    @field_validator("pip_index")
    @classmethod
    def _index(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~-]+)*/?", value):
            raise ValueError(f"{value!r} must be an https URL of letters, digits and . _ ~ - (it goes into environment.yml)")
        return value

    @field_validator("framework_packages")
    @classmethod
    def _pins(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for packages in value.values():
            for package in packages:
                check_requirement(package)
            loose = [p for p in packages if "==" not in p or "*" in p]
            if loose:
                raise ValueError(f"{loose} must be pinned exactly (name==version+local): an extra index has no "
                                 "priority over PyPI, so anything looser can take PyPI's build")
        return value

    @model_validator(mode="after")
    def _index_for_packages(self) -> CotainrSupport:
        if self.framework_packages and not self.pip_index:
            raise ValueError("framework_packages come from pip_index: give it")
        if (self.system is None) == (self.base_image is None):
            raise ValueError("give one of system (cotainr build --system) or base_image (cotainr build --base-image), "
                             f"not {'both' if self.system else 'neither'}")
        return self

    @property
    def build_from(self) -> str:
        """The `cotainr build` option that names the base: --system=... or --base-image=..."""
        return f"--system={self.system}" if self.system else f"--base-image={self.base_image}"


def _log_pattern(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9 /|._:()-]+", value):
        raise ValueError(f"{value!r} must be a grep -E pattern of letters, digits, spaces and / | . _ : ( ) - "
                         "(it is written into a shell script)")
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"{value!r} is not a regular expression: {exc}") from None
    return value


LogPattern = Annotated[str, AfterValidator(_log_pattern)]


def _echoable(value: str) -> str:
    """Text a shell script echoes inside double quotes: no $, quotes or backslashes."""
    if not re.fullmatch(r"[A-Za-z0-9 ,.;:()/_+-]+", value):
        raise ValueError(f"{value!r}: letters, digits, spaces and , . ; : ( ) / _ + - only (it is echoed by a shell script)")
    return value


class RcclCheck(Model):
    """How a multi-node job tells from RCCL's init log (NCCL_DEBUG=INFO) whether it talks
    between nodes over the fast network or fell back to TCP sockets."""

    fast: LogPattern = Field(description="A line that means the fast network is used (LUMI: the OFI plugin's "
                             "`NET/OFI Selected provider is cxi`).")
    tcp: LogPattern = Field(description="A line that means TCP sockets are used (NET/Socket, `Using network Socket`, "
                            "an OFI plugin on libfabric's tcp provider).")
    final: LogPattern | None = Field(
        default=None,
        description="The line after which RCCL keeps its network: NCCL's `Using network <name>`, printed once per "
        "communicator when its network is set [RCCL-net]. Given, each such line decides (by itself, or by the last "
        "fast or tcp line before it) and nothing decides before it; absent (site data before 0.4), the last fast or "
        "tcp line decides as soon as it appears.",
    )
    name: str = Field(description="The fast network, for messages (Slingshot).")
    fix: str = Field(description="One line: what to check when RCCL fell back to TCP.")
    source: str = ""

    _text = field_validator("name", "fix", "source")(check_one_line)
    _plain = field_validator("name", "fix")(_echoable)


class AllreduceReference(Model):
    """A published all-reduce bus bandwidth the network preflight compares with."""

    busbw_gbs: float = Field(gt=0, description="Bus bandwidth in GB/s (rccl-tests' busbw) expected at size_bytes.")
    shape: str = Field(description="One line: what was measured (nodes, GPUs, message size, image).")
    source: str = Field(min_length=1, description="Where the figure is published (a source key); required.")
    size_bytes: int | None = Field(
        default=None, gt=0, description="The message size of the figure; absent: the largest message measured."
    )
    tolerance: float = Field(
        default=0.0, ge=0, lt=1, description="How far below busbw_gbs still passes, as a fraction (0.05: 5 %)."
    )
    nodes: int | None = Field(
        default=None, ge=2, description="The node count it was measured on: the preflight gives its verdict only there."
    )
    benchmark_args: list[str] = Field(
        default_factory=list,
        description="all_reduce_perf's options the figure was measured with (e.g. -b 2M -e 2048M -f 2 -g 1 -d half "
        "-n 80 -w 5); the preflight measures the same way, and gives its verdict only when it ran with exactly these. "
        "Empty: not known; the preflight measures with -b 1M -e 1G -f 2 and gives no verdict.",
    )
    column: Literal["out-of-place", "in-place"] = Field(
        default="out-of-place",
        description="The busbw column of all_reduce_perf's table the figure is read from (LUMI's ReFrame check: "
        "in-place [RF-RCCL]).",
    )

    _text = field_validator("shape", "source")(check_one_line)
    _plain = field_validator("shape", "source")(_echoable)

    @field_validator("benchmark_args")
    @classmethod
    def _plain_words(cls, value: list[str]) -> list[str]:
        for word in value:
            if not re.fullmatch(r"-{1,2}[A-Za-z_]+|[A-Za-z0-9.]+", word):
                raise ValueError(f"{word!r}: an option (-b) or a plain value (2048M, half) only (it is written into a "
                                 "shell script)")
        return value


class AccountRule(Model):
    """What a valid Slurm account looks like at a site."""

    pattern: str = Field(description="Regular expression the whole account must match.")
    example: str = Field(description="A valid account, shown in help and used as the default.")
    example_works: bool = Field(False, description="The example is an account jobs may use (a test site whose Slurm "
                                "does not check accounts); otherwise a project left with it is told, and its smoke "
                                "job refuses to submit.")
    help: str = Field(description="One line telling the user where to find their account.")
    project: str | None = Field(
        default=None,
        description="Regular expression with one group that takes the project out of the account, for {project} in "
        "storage paths (Setonix: '(.+)-gpu' makes pawsey0001-gpu use /scratch/pawsey0001); default: the account.",
    )
    source: str = ""

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value

    @field_validator("project")
    @classmethod
    def _one_group(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                groups = re.compile(value).groups
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from None
            if groups != 1:
                raise ValueError(f"{value!r} must have exactly one group, the project, e.g. '(.+)-gpu'")
        return value

    @model_validator(mode="after")
    def _example_matches(self) -> AccountRule:
        if not self.matches(self.example):
            raise ValueError(f"example {self.example!r} does not match pattern {self.pattern!r}")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", self.example):
            raise ValueError("example must be letters, digits, _ . -")
        if self.project and not re.fullmatch(self.project, self.example):
            raise ValueError(f"example {self.example!r} does not match project {self.project!r}")
        return self

    def project_of(self, account: str) -> str:
        """The project an account belongs to (the account itself without a project rule)."""
        match = re.fullmatch(self.project, account) if self.project else None
        return match.group(1) if match and match.group(1) else account

    def matches(self, account: str) -> bool:
        return re.fullmatch(self.pattern, account) is not None and re.fullmatch(r"[A-Za-z0-9_.-]+", account) is not None


class ReadmeSection(Model):
    """A section a plugin adds to the generated README (Markdown; a Jinja template rendered
    with the project's answers, like plugin files)."""

    title: str = Field(description="Heading of the section, one line.")
    body: str = Field(description="Markdown text of the section.")
    source: str = ""

    _text = field_validator("title", "source")(check_one_line)


class TrackingViewer(Model):
    """How a site's users look at a tracker's runs (LUMI: an app of its web interface)."""

    name: Literal["tensorboard", "mlflow", "wandb"]
    text: str = Field(description="One sentence for the README, e.g. where the site's app is and what to give it.")
    package: Requirement | Literal[""] = Field("", description="The tracker's package as the site's viewer needs it, for the venv (LUMI's "
                                 "MLflow app reads the stores of MLflow 2.22: mlflow-skinny==2.22.*); '': the tracker's own.")
    source: str = ""

    _text = field_validator("text", "source")(check_one_line)


class Site(Model):
    """An HPC site: Slurm partitions, node layout, storage, container runtime, interconnect."""

    name: Slug
    title: str
    display_name: str = Field("", description="How prose names the site (LUMI, Frontier); default: its name.")
    source: str = ""
    account: AccountRule
    partitions: list[Partition] = Field(min_length=1)
    partial_node_partition: Slug = Field(description="Default partition for jobs using part of one node.")
    whole_node_partition: Slug = Field(description="Default partition for whole-node and multi-node jobs.")
    node: NodeLayout
    storage: list[StorageArea] = Field(min_length=1)
    node_local_tmp: AbsPath = Field(description="Node-local scratch used for pre-staging and caches (e.g. /tmp).")
    node_local_tmp_note: str = Field(
        "", description="What node_local_tmp is, for comments and the README (LUMI: 'RAM, counted in the "
                        "job's memory'); leave empty when the site's documentation does not say.")
    interconnect: str = Field(
        "", description="The network between nodes as prose names it, where images need builds for it (LUMI: "
        "Slingshot: 'a generic wheel lacks the image's ROCm and Slingshot builds'); empty where the site does not say.")
    bind_roots: list[AbsPath] = Field(
        default_factory=list, description="Real roots behind symlinked file systems that must be bound (LUMI: /pfs)."
    )
    container_runtime: Literal["singularity", "apptainer"]
    module_reset: Literal["purge", "reset"] | None = Field(
        default=None,
        description="How every job starts from a known module state before it loads the image's modules: "
        "`module purge` or `module reset` (LUMI: purge [AIG-01]); leave out where the site does not say.",
    )
    generations: list[ContainerGeneration] = Field(min_length=1)
    own_image_generation: Slug | None = Field(
        default=None,
        description="Generation of a user's own image (custom, cotainr); default: the one named 'explicit', else the last.",
    )
    own_image_frameworks: list[Slug] | Literal["all"] = Field(
        default_factory=list,
        description="Frameworks offered here without a catalogue image, run from the user's own image; 'all' for every one.",
    )
    cotainr: CotainrSupport | None = Field(
        default=None, description="cotainr support (the `cotainr` container choice); absent: not offered."
    )
    env: list[EnvSetting] = Field(default_factory=list, description="Interconnect and runtime settings for run.sh.")
    reviewed: date | None = Field(
        default=None, description="When the site's data was last checked against its sources (YYYY-MM-DD); "
        "`lumi-scaffold plugins` and `doctor` print it, so users can tell stale advice from current.")
    rccl_check: RcclCheck | None = Field(
        default=None,
        description="Multi-node jobs stop when RCCL's init log says TCP sockets instead of the fast network; "
        "leave out where the site's log lines are not known.",
    )
    miopen_cache: AbsPath | None = Field(
        default=None, description="Per-node MIOpen cache directory (must not be on Lustre)."
    )
    allreduce_reference: AllreduceReference | None = Field(
        default=None,
        description="A sourced all-reduce bus bandwidth between nodes that jobs/preflight.sbatch compares with; "
        "leave out where none is published (the preflight then prints its figure with no verdict).",
    )
    cache_area: Slug = Field(description="Storage area for framework caches (TORCH_HOME, HF_HOME), never $HOME.")
    project_area: Slug | None = Field(
        default=None, description="Storage area where a project's checkout belongs (its code, venv, logs/ and profiles/; "
        "LUMI: project [UG-stor]); the README says so. Leave out where the site does not say.")
    memory_follows_gpus: bool = Field(
        default=False,
        description="Jobs cannot ask for memory: it follows the GPUs they get (Setonix). No --mem or --mem-per-gpu "
        "is written, and node memory figures are only shown.",
    )
    rccl_debug_alias: EnvName | None = Field(
        default=None, description="An older name of RCCL_DEBUG_FILES that this site's projects read too: the name it "
        "had in them before lumi-scaffold 0.3 (LUMI: LUMI_RCCL_DEBUG). Leave out for a new site.")
    gpu_request: Literal["gpus-per-node", "gres"] = Field(
        default="gpus-per-node",
        description="How jobs ask for GPUs: --gpus-per-node=N, or --gres=gpu:N (gpu:<gpu_type>:N where the node "
        "gives a gpu_type).",
    )
    sbatch_options: list[ExtraOption] = Field(
        default_factory=list, description="Extra #SBATCH options every job at this site needs."
    )
    srun_options: list[ExtraOption] = Field(
        default_factory=list, description="Extra options of every training step's srun at this site."
    )
    readme: list[ReadmeSection] = Field(
        default_factory=list, description="Sections the generated README gets for projects at this site."
    )
    tracking_viewers: list[TrackingViewer] = Field(
        default_factory=list, description="How users look at tracked runs here (the README says it); leave out a "
        "tracker the site's documentation does not cover: the README then gives the tracker's own command.")

    _text = field_validator("title", "display_name", "source", "node_local_tmp_note", "interconnect")(check_one_line)

    @field_validator("own_image_frameworks", mode="before")
    @classmethod
    def _all_or_list(cls, value: object) -> object:
        if isinstance(value, str) and value != "all":
            raise ValueError(f"{value!r} must be 'all' or a list of framework names, e.g. [pytorch, jax]")
        return value

    @model_validator(mode="after")
    def _check_references(self) -> Site:
        names = [p.name for p in self.partitions]
        _unique("partitions", names)
        _unique("storage", [s.name for s in self.storage])
        _unique("generations", [g.name for g in self.generations])
        _unique("env", [e.name for e in self.env])
        by_name = {p.name: p for p in self.partitions}
        for field in ("partial_node_partition", "whole_node_partition"):
            value = getattr(self, field)
            if value not in by_name:
                raise ValueError(f"{field}={value!r} is not one of the partitions {names}")
        if by_name[self.partial_node_partition].allocation != "by-resource" and self.has_partial_nodes:
            raise ValueError("partial_node_partition must be a by-resource partition when the site has one")
        if self.has_partial_nodes and self.node.mem_per_gpu_gb is None and not self.memory_follows_gpus:
            raise ValueError(
                "node.mem_per_gpu_gb is missing: jobs on part of a node in a by-resource partition need --mem-per-gpu "
                "(without it they get the partition's default memory); give it, or make every partition whole-node"
            )
        if self.has_partial_nodes and self.node.mem_per_node_gb is None and not self.memory_follows_gpus:
            raise ValueError(
                "node.mem_per_node_gb is missing: whole-node jobs in a by-resource partition need --mem "
                "(without it they get the partition's default memory); give it, or make every partition whole-node"
            )
        if self.cache_area not in {s.name for s in self.storage}:
            raise ValueError(f"cache_area={self.cache_area!r} is not one of the storage areas")
        if self.project_area is not None and self.project_area not in {s.name for s in self.storage}:
            raise ValueError(f"project_area={self.project_area!r} is not one of the storage areas")
        if not any(s.data for s in self.storage):
            raise ValueError("at least one storage area must have data: true")
        generations = [g.name for g in self.generations]
        for setting in self.env:
            unknown = sorted({g for i in setting.known_issues for g in i.generations} - set(generations))
            if unknown:
                raise ValueError(f"env {setting.name}: known_issues name generations {unknown}, not among {generations}")
        if self.own_image_generation is not None and self.own_image_generation not in generations:
            raise ValueError(f"own_image_generation={self.own_image_generation!r} is not one of the generations {generations}")
        if self.cotainr and self.cotainr.generation is not None and self.cotainr.generation not in generations:
            raise ValueError(f"cotainr.generation={self.cotainr.generation!r} is not one of the generations {generations}")
        return self

    @property
    def has_partial_nodes(self) -> bool:
        """Whether any partition shares nodes (otherwise every job gets whole nodes)."""
        return any(p.allocation == "by-resource" for p in self.partitions)

    def partition(self, name: str) -> Partition | None:
        return next((p for p in self.partitions if p.name == name), None)

    def node_of(self, partition: str) -> NodeLayout:
        """The nodes jobs in ``partition`` get: its own layout, else the site's."""
        part = self.partition(partition)
        return part.node if part is not None and part.node is not None else self.node

    def storage_area(self, name: str) -> StorageArea | None:
        return next((s for s in self.storage if s.name == name), None)

    def generation(self, name: str) -> ContainerGeneration | None:
        return next((g for g in self.generations if g.name == name), None)

    @property
    def own_generation(self) -> ContainerGeneration:
        """The generation a user's own image (``container: custom`` or ``cotainr``) runs with."""
        name = self.own_image_generation or "explicit"
        return self.generation(name) or self.generations[-1]

    @property
    def cotainr_generation(self) -> ContainerGeneration:
        """The generation a cotainr build runs with: its base image's, else the own-image one."""
        name = self.cotainr.generation if self.cotainr else None
        return (self.generation(name) if name else None) or self.own_generation

    def runs_own_image(self, framework: str) -> bool:
        """Whether ``framework`` is offered here from a user's own image even without a catalogue image."""
        return self.own_image_frameworks == "all" or framework in self.own_image_frameworks


class ContainerImage(Model):
    """One container image a site offers for a framework."""

    id: Ident = Field(description="Stable id used in answers (container=<id>) to pin this image.")
    site: Slug
    framework: Slug
    title: str
    path: AbsPath = Field(description="Absolute path of the .sif on the site, or one that starts with an environment "
                         "variable ($MYSOFTWARE/containers/x.sif or ${MYSOFTWARE}/...; checked when a job starts).")
    generation: Slug = Field(description="Name of one of the site's container generations.")
    status: Literal["recommended", "available", "observed", "legacy", "removed"] = Field(
        description="'recommended' (the default, one per site and framework), 'available' (offered, newer or "
        "different, not the default), 'observed' (seen in public job scripts, not announced by the site: offered "
        "with that status in its label, never a default nor a way out of a known issue, and checked by `doctor` "
        "on a login node), 'legacy' (replaced), 'removed' (gone from the site).")
    replaced_by: Ident | None = Field(default=None, description="Id of the image to move to, if legacy or removed.")
    versions: dict[str, str] = Field(
        default_factory=dict,
        description="Package versions the image ships, exactly as its Python reports them (local and dev suffixes "
        "included), for the README; the venv is held to the image's own versions, read at setup.",
    )
    versions_unconfirmed: list[Package] = Field(
        default_factory=list,
        description="Names in versions whose exact version string is UNCONFIRMED (a wildcard like 2.10.* always is).",
    )
    requirements: list[Requirement] = Field(
        default_factory=list,
        description="Packages the venv installs with this image, at versions that accept what it ships "
        "(JAX 0.4.35: flax==0.10.4, the newest flax asking for no newer jax).",
    )
    profilers: list[Slug] | None = Field(
        default=None,
        description="Profilers that work in this image (rocprof v1 only where it ships; rocprofv3 from ROCm 6.2); "
        "default: all of the framework's.",
    )
    numa_binding: bool = Field(
        default=False,
        description="The image's PyTorch has `torch.distributed.run --numa-binding` (PyTorch 2.9 and later): torchrun "
        "jobs on whole nodes bind each worker to cores near its GPU with --numa-binding=exclusive. [AIG-05]",
    )
    pull_from: str | None = Field(
        default=None,
        description="Where users pull the image from (docker://..., oras://...) into `path` themselves; the README "
        "names the `singularity pull` (or apptainer) step. Leave out for images the site provides at `path`.",
    )
    known_issues: list[KnownIssue] = Field(
        default_factory=list, description="Known problems of the image in some job shapes: the questionnaire labels "
        "it, and copy, update, doctor and explain name the issue where the project's shape is affected.")
    optional: bool = Field(
        default=False, description="The image is for another plugin's site or framework, which may not be installed: "
        "without it the image is left out with a note, and the plugin is not broken.")
    note: str = ""
    source: str = ""

    _text = field_validator("title", "note", "source")(check_one_line)

    @field_validator("known_issues")
    @classmethod
    def _image_issues(cls, issues: list[KnownIssue]) -> list[KnownIssue]:
        if any(i.generations for i in issues):
            raise ValueError("an image's known issues take no generations (the image has one); give generations only "
                             "on an env setting's known issues")
        return issues

    @field_validator("pull_from")
    @classmethod
    def _pull_uri(cls, value: str | None) -> str | None:
        return check_pull_address(value) if value is not None else value

    @field_validator("id")
    @classmethod
    def _not_a_special_answer(cls, value: str) -> str:
        if value in ("recommended", "custom", "cotainr"):
            raise ValueError(f"{value!r} is one of the container answers (recommended, custom, cotainr); give the image "
                             "its own id, e.g. <site>-<framework>-<version>")
        return value

    @field_validator("versions")
    @classmethod
    def _versions_are_pins(cls, versions: dict[str, str]) -> dict[str, str]:
        for package, version in versions.items():
            if not PACKAGE.match(package) or not VERSION.match(str(version)):
                raise ValueError(f"{package}={version!r} is not a package name and version")
        return versions

    @model_validator(mode="after")
    def _replacement(self) -> ContainerImage:
        if self.replaced_by == self.id:
            raise ValueError("replaced_by names the image itself")
        unknown = sorted(set(self.versions_unconfirmed) - set(self.versions))
        if unknown:
            raise ValueError(f"versions_unconfirmed names {unknown}, which are not in versions")
        torch = _release(self.versions.get("torch", ""))
        if self.numa_binding and torch and torch < (2, 9):
            raise ValueError(f"numa_binding needs PyTorch 2.9 or later, but versions has torch {self.versions['torch']}: "
                             "torch.distributed.run of this image has no --numa-binding")
        return self


def check_pull_address(value: str) -> str:
    """An address `singularity pull` takes, safe to write into a shell command line."""
    if not re.fullmatch(r"(docker|oras|library|shub)://[A-Za-z0-9._/:@+-]+", value):
        raise ValueError(f"{value!r} must be a docker://, oras://, library:// or shub:// address of letters, digits "
                         "and . _ / : @ + - (it is written into the README's setup command)")
    return value


def _release(version: str) -> tuple[int, ...]:
    """The leading numeric release of a version or pin ('2.10.*' -> (2, 10)); () if none."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def _train_arg(value: str) -> str:
    check_plain_word(value.replace("{project_dir}", "project"))
    return value


TrainArg = Annotated[str, AfterValidator(_train_arg)]


class Framework(Model):
    """A machine-learning framework: how it launches, initialises and what it pins."""

    name: Slug
    title: str
    source: str = ""
    launchers: list[Literal["srun", "torchrun"]] = Field(
        min_length=1, description="'srun': one task per GPU; 'torchrun': one task per node spawning workers."
    )
    distributed_init: str = Field(description="One line: how the example joins the process group.")
    needs_master_addr: bool = Field(
        default=True, description="The framework reads MASTER_ADDR/MASTER_PORT (PyTorch env://)."
    )
    pinned_packages: list[str] = Field(
        min_length=1, description="Packages whose container versions go into constraints.txt."
    )
    requirements: list[Requirement] = Field(default_factory=list, description="Packages the example needs in the venv.")
    runs_on: Slug | None = Field(
        default=None, description="Another framework whose images serve this one too (Lightning or DeepSpeed on "
        "PyTorch's): every site's images for it are offered for this framework, with their pins, and this framework's "
        "requirements go into the venv on top; `lumi-scaffold update` moves a project when the site moves them.")
    train_args: list[TrainArg] = Field(
        default_factory=list,
        description="Arguments the jobs pass to the training script, before the user's own; {project_dir} stands for "
        "the project directory (DeepSpeed: --deepspeed --deepspeed_config {project_dir}/config/ds_config.json).",
    )
    cache_vars: list[EnvName] = Field(default_factory=list, description="Cache variables moved off $HOME.")
    triton_cache: bool = Field(
        default=False,
        description="The framework compiles GPU kernels with torch.compile (TorchInductor, Triton): TRITON_CACHE_DIR and "
        "TORCHINDUCTOR_CACHE_DIR go to node-local tmp, and jobs carry those caches between jobs like MIOpen's.",
    )
    env: list[EnvSetting] = Field(default_factory=list, description="Framework settings for run.sh.")
    profilers: list[Slug] = Field(default_factory=lambda: ["none"], description="Profilers this framework supports.")
    readme: list[ReadmeSection] = Field(
        default_factory=list, description="Sections the generated README gets for projects using this framework."
    )
    smoke_test: str = Field(description="Python source printing the number of GPUs the framework sees.")
    example: str = Field(description="Python source (a Jinja template) of the example training script.")

    _text = field_validator("title", "source", "distributed_init")(check_one_line)

    @field_validator("pinned_packages")
    @classmethod
    def _names(cls, values: list[str]) -> list[str]:
        for value in values:
            if not PACKAGE.match(value):
                raise ValueError(f"{value!r} is not a package name (pinned_packages names packages, like torch; "
                                 "their versions come from each image's versions)")
        return values



class Profiler(Model):
    """A profiler that wraps exactly one rank of a job."""

    name: Slug
    title: str
    kind: Literal["none", "command", "framework"] = Field(
        description="'command': prefix the rank's command; 'framework': the script profiles itself."
    )
    command: list[ProfilerWord] = Field(
        default_factory=list, description="Command prefix; {output} stands for the per-rank output directory."
    )
    env: list[ProfilerEnvSetting] = Field(default_factory=list, description="Set only for the profiled rank.")
    view: str = Field(default="", description="One line: how to look at the result.")
    source: str = ""

    _text = field_validator("title", "view", "source")(check_one_line)

    @model_validator(mode="after")
    def _kind_matches(self) -> Profiler:
        if (self.kind == "command") != bool(self.command):
            raise ValueError("a 'command' profiler needs a command; other kinds must not have one")
        return self


def _unique(field: str, names: list[str]) -> None:
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"{field} names must be unique; repeated: {dupes}")


_SOURCE_KEY = re.compile(r"^[A-Z][A-Z0-9]+(?:-[A-Za-z0-9]+)*$")
_URL = re.compile(r"^https?://[^\s<>()\[\]]+$")


class Source(Model):
    """A source a plugin's data or files cite (``[KEY]`` in a comment, ``source: KEY`` in
    data), listed in the README of every project that cites it, like the built-in ones."""

    key: str = Field(description="The key cited, e.g. CINES or ADASTRA-UG: capitals and digits, then -parts.")
    title: str = Field(description="One line: what the source is.")
    url: str = Field(description="Where to read it (http:// or https://).")
    read: str = Field(default="", description="When it was read (e.g. 2026-11-20), for the README.")

    _text = field_validator("title", "read")(check_one_line)

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        if not _SOURCE_KEY.match(value):
            raise ValueError(f"{value!r} is not a source key: capitals and digits, then -parts (CINES, ADASTRA-UG)")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not _URL.match(value):
            raise ValueError(f"{value!r} is not an http(s) address without spaces or brackets (it is written into a "
                             "Markdown link)")
        return value


class TemplateFile(Model):
    """A file a plugin adds to projects that use its site or framework."""

    owner: Literal["site", "framework"] = Field(description="Which answer decides whether the file is written.")
    owner_name: Slug = Field(description="Name of the site or framework the file belongs to.")
    directory: Literal["scripts", "config"] = Field(
        default="config", description="Project directory the file goes into (config/ or scripts/)."
    )
    name: str = Field(description="File name (no directories), e.g. ds_config.json.")
    content: str = Field(description="Jinja template text, rendered with the project's answers.")
    source: str = ""

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", value):
            raise ValueError(f"{value!r} must be a plain file name: letters, digits, . _ -")
        return value
