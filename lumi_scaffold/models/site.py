"""A site: its accounts, README sections, tracking viewers, and the Site model itself."""

from __future__ import annotations

import re
from datetime import date
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .._types import AbsPath, ContainerGpuFlag, EnvName, PartitionName, Requirement, Slug, check_one_line
from .base import EnvSetting, ExtraOption, Model, check_unique
from .resources import NodeLayout, Partition, SiteNote, StorageArea, check_path_note
from .runtime import AllreduceReference, ContainerGeneration, CotainrSupport, RcclCheck

__all__ = ["AccountRule", "ReadmeSection", "Site", "TrackingViewer"]


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
    partial_node_partition: PartitionName = Field(description="Default partition for jobs using part of one node.")
    whole_node_partition: PartitionName = Field(description="Default partition for whole-node and multi-node jobs.")
    profilers: list[Slug] = Field(
        default_factory=list, description="Profilers offered to every framework at this site besides the framework's "
        "own (a site's nsys: a command profiler registered with register_profilers), each of the site's GPUs.")
    smoke_partition: PartitionName | None = Field(
        default=None, description="Partition of the one-GPU smoke test (a debug QOS entry, where the site has one); "
        "leave out for partial_node_partition.")
    node: NodeLayout
    storage: list[StorageArea] = Field(min_length=1)
    node_local_tmp: AbsPath = Field(description="Node-local scratch used for pre-staging and caches (e.g. /tmp).")
    node_local_tmp_note: str = Field(
        "", description="What node_local_tmp is, for comments and the README (LUMI: 'RAM, counted in the "
                        "job's memory'); leave empty when the site's documentation does not say.")
    support: str = Field(
        "", description="Where users report a suspect node, as the site's documentation names it (a URL or an "
                        "address): the node ledger's report names it. Empty: the report says only what to send.")
    archive_striping: SiteNote | None = Field(
        None, description="Pre-staging: how to lay out the one archive every node reads at once on the shared file "
        "system (LUMI: lfs setstripe, as the AI guide advises [AIG-04]); the README and explain say it where the "
        "project pre-stages. Leave out where the site does not say.")
    interconnect: str = Field(
        "", description="The network between nodes as prose names it, where images need builds for it (LUMI: "
        "Slingshot: 'a generic wheel lacks the image's ROCm and Slingshot builds'); empty where the site does not say.")
    bind_roots: list[AbsPath] = Field(
        default_factory=list, description="Real roots behind symlinked file systems that must be bound (LUMI: /pfs)."
    )
    container_runtime: Literal["singularity", "apptainer"]
    container_gpu_flag: ContainerGpuFlag | None = Field(
        default=None, description="The flag of `singularity exec` that gives the container the GPUs: '', --nv, "
        "--nvccli or --rocm. Leave out for the GPU vendor's (node.gpu_vendor): --nv for NVIDIA, none for AMD, whose "
        "images bring their own ROCm (docs/plugins/gpu-vendors.md).")
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
    energy_counters: SiteNote | None = Field(
        default=None,
        description="Where the nodes show their energy counters, in HPE Cray EX's pm_counters format (files energy, "
        "accel*_energy, cpu_energy, memory_energy: '<joules> J <timestamp> us'; freshness, generation): the "
        "directory as text (LUMI: /sys/cray/pm_counters), with its source. Every job reads them on each node at its "
        "start and end, outside the container, for the energy in its report. Leave out where the nodes have none: "
        "the report then says 'not measured'.",
    )
    allreduce_reference: AllreduceReference | None = Field(
        default=None,
        description="A sourced all-reduce bus bandwidth between nodes that jobs/preflight.sbatch compares with; "
        "leave out where none is published (the preflight then prints its figure with no verdict).",
    )
    cache_area: Slug = Field(description="Storage area for framework caches (TORCH_HOME, HF_HOME), never $HOME.")
    project_area: Slug | None = Field(
        default=None, description="Storage area where a project's checkout belongs (its code, venv and Slurm's logs/; "
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

    _text = field_validator("title", "display_name", "source", "node_local_tmp_note", "support", "interconnect")(
        check_one_line)

    @field_validator("own_image_frameworks", mode="before")
    @classmethod
    def _all_or_list(cls, value: object) -> object:
        if isinstance(value, str) and value != "all":
            raise ValueError(f"{value!r} must be 'all' or a list of framework names, e.g. [pytorch, jax]")
        return value

    _counters = field_validator("energy_counters")(check_path_note)

    @model_validator(mode="after")
    def _check_references(self) -> Site:
        names = [p.name for p in self.partitions]
        check_unique("partitions", names)
        check_unique("storage", [s.name for s in self.storage])
        check_unique("generations", [g.name for g in self.generations])
        check_unique("env", [e.name for e in self.env])
        by_name = {p.name: p for p in self.partitions}
        for field in ("partial_node_partition", "whole_node_partition", "smoke_partition"):
            value = getattr(self, field)
            if value is None:
                continue
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
