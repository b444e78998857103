"""``PluginData``: everything a project takes from plugins, typed, validated and computed.

``copier.yml`` records it as the answer ``plugin_data`` (``when: false``), so that
``copier update`` replays the old project exactly and brings in only what changed in the
catalogue. It is input like any other: Copier accepts ``--data plugin_data=...`` and reads
it back from ``.copier-answers.yml``, and its values end up in shell scripts, Python and
YAML. So it is validated on every render and update (the question's validator, and
``lumi-scaffold update`` before it starts) with the same rules as the catalogue data it
comes from: shell words, absolute paths, one-line text, plain names.

Besides the facts (site, partition, container, framework, profiler), it holds the
*computed job fields* (:class:`JobFields`): the Slurm options of each job kind, the memory
option, the CPU binding, every bind path, the package name. Each is one small function
below; the templates only loop and print.

Shapes: schema 1 (lumi-scaffold 0.1 and 0.2) lacks the computed fields and some facts
added since; they have defaults here, so an old answers file still validates and updates.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, ValidationError, field_validator, model_serializer, model_validator

from ._types import (AbsPath, AbsPathOrEmpty, ContainerGpuFlag, CpuMask, EnvName, GpuVendorName, Ident, NameWordOrEmpty, OneLine, Package, PartitionName, PlainNameOrEmpty,
                     PythonName, Requirement, ShellWord, SlurmOption, Slug, SlurmTime, Version, check_answer_path, path_variable)
from .datafile import value_at
from .errors import PluginDataError
from .jobs import JOB_KINDS, Binding, Cost, Shape, shape_from_options
from .models import (AllreduceReference, CotainrSupport, EnvModule, EnvSetting, ProfilerEnvSetting, ProfilerWord, RcclCheck,
                     SiteNote, TrainArg, check_pull_address)
from .models.base import Model
from .models.resources import check_path_note

__all__ = ["SCHEMA", "Cost", "PluginData", "PluginDataError", "job_disagreement", "storage_variables", "validate_plugin_data"]

SCHEMA = 3
"""Shape of plugin_data written now. 1: lumi-scaffold 0.1 and 0.2 (no computed job fields);
2: 0.3.0 (job options as text); 3: 0.4.0 (job shapes as structured values, the binding and
the memory prose as fields)."""


def _pull_from(value: str) -> str:
    return check_pull_address(value) if value else value


class SiteFacts(Model):
    name: Slug
    title: OneLine
    display_name: OneLine = Field("", description="How prose names the site (schema 1: absent, the name is used).")
    runtime: Literal["singularity", "apptainer"]
    module_reset: Literal["", "purge", "reset"] = ""
    rccl_check: RcclCheck | None = Field(None, description="Set for multi-node jobs where the site gives it.")
    allreduce_reference: AllreduceReference | None = Field(
        None, description="Multi-node jobs: the site's sourced all-reduce bandwidth the preflight compares with.")
    gpus_per_node: int = Field(ge=1)
    gpu_type: PlainNameOrEmpty = ""
    gpu_vendor: GpuVendorName = Field("amd", description="Who makes the GPUs (0.5; left out of the answers file for amd).")
    container_gpu_flag: ContainerGpuFlag = Field(
        "", description="singularity exec's flag that gives the container the GPUs (0.5; left out when none).")
    cpus_per_gpu: int = Field(ge=1)
    cpu_masks: list[CpuMask]
    mem_per_gpu_gb: int | None = Field(None, ge=1)
    mem_per_node_gb: int | None = Field(None, ge=1)
    node_local_tmp: AbsPath
    node_local_tmp_note: OneLine = ""
    support: OneLine = ""  # where users report a suspect node (the node ledger's report)
    archive_striping: SiteNote | None = Field(None, description="How to lay out the pre-staging archive (0.5).")
    bind_roots: list[AbsPath] = []
    miopen_cache: AbsPathOrEmpty = ""
    memory_follows_gpus: bool = Field(False, description="Jobs cannot ask for memory; it follows their GPUs.")
    gpu_numa: list[int] = Field(default_factory=list, description="NUMA node of each GPU, in local-rank order.")
    gpu_nic: list[PlainNameOrEmpty] = Field(default_factory=list, description="Network interface nearest each GPU.")
    # 0.3: prose from data (schema 2 answers files without them still validate).
    interconnect: OneLine = ""
    reserved_cores: list[int] = Field([], description="Cores no job may use (the CPU masks avoid them).")
    reserved_cores_note: SiteNote | None = None
    gpu_power: SiteNote | None = Field(None, description="rocm-smi's power for busy GPUs, for attach.sh --help.")
    rccl_debug_alias: EnvName | Literal[""] = Field(
        "", description="An older name of RCCL_DEBUG_FILES run.sh reads too ('' for none; left out of the answers file "
        "then).")
    energy_counters: SiteNote | None = Field(
        None, description="The nodes' energy counters' directory and its source (0.5; none: the job report's energy is "
        "not measured; left out of the answers file then).")

    @model_serializer(mode="wrap")
    def _without_no_alias(self, handler: Any) -> dict[str, Any]:
        # Only sites with an alias (counters, a GPU flag, an MIOpen cache, GPUs not AMD's) have the key (the
        # answers files of other projects stay as they were; a project of an NVIDIA site names nothing of AMD's).
        data = handler(self)
        if data.get("gpu_vendor") == "amd":
            data.pop("gpu_vendor")
        for key in ("rccl_debug_alias", "energy_counters", "container_gpu_flag", "miopen_cache"):
            if not data.get(key):
                data.pop(key, None)
        return data

    _counters = field_validator("energy_counters")(check_path_note)


class PartitionFacts(Model):
    name: PartitionName
    slurm_partition: PlainNameOrEmpty = ""
    qos: PlainNameOrEmpty = ""
    allocation: Literal["whole-node", "by-resource"]
    max_walltime: SlurmTime
    purpose: OneLine = ""
    chains: bool = Field(True, description="Training jobs may be chained (CHAIN=N); false on debugging partitions.")
    arrays: bool = Field(True, description="Sweeps (job arrays) may run here (0.4); false where a sweep's trials would "
                        "break the partition's job limits.")
    billing: OneLine = ""
    source: OneLine = ""


def _recorded_kind(value: str) -> str:
    if value not in JOB_KINDS or JOB_KINDS[value].shape is None:
        raise ValueError(f"{value!r} is not a job kind with its own shape ({', '.join(k for k, v in JOB_KINDS.items() if v.shape)})")
    return value


JobKind = Annotated[str, AfterValidator(_recorded_kind)]


class JobFields(Model):
    """The job shape and the fields computed from it (schema 2; shapes, binding and the
    memory prose: schema 3), which the templates print. Computed by lumi_scaffold.jobs."""

    smoke_partition: PlainNameOrEmpty
    smoke_qos: PlainNameOrEmpty = ""
    whole_node: bool
    exclusive: bool
    tasks: int = Field(ge=1)
    tasks_per_node: int = Field(1, ge=1)
    ranks_per_task: int = Field(1, ge=1)
    cpus_per_task: int = Field(1, ge=1)
    torchrun_binding: Literal["", "exclusive"] = ""
    binding: Binding = Field("slurm", description="How the training ranks get their CPUs (lumi_scaffold.jobs.binding; "
                             "schema 3).")
    shared_node_tmp_gb: int | None = Field(None, ge=1)
    run_name: Slug = "run"
    profile_steps: int = Field(40, ge=1, description="Steps of the README's profile command; the profile job's time "
                               "limit is sized for them.")
    signal_lead: int = Field(300, ge=1, description="Seconds before its time limit at which Slurm warns the training "
                             "job (USR1).")
    profile_signal_lead: int = Field(300, ge=1, description="The same for the profile job, whose time limit is its "
                                     "own (0.4; older answers files: 300).")
    # Computed (schema 2).
    slurm: dict[JobKind, list[SlurmOption]] = Field(
        default_factory=dict, description="The Slurm options of each job kind (jobs/interactive.sh uses train's; "
        "preflight: multi-node projects only): what `shapes` renders, checked on every load (schema 3)."
    )
    allreduce_bench: Literal["", "torch", "jax"] = Field(
        "", description="The project's all-reduce benchmark the preflight runs where the image has no all_reduce_perf.")
    memory: SlurmOption | Literal[""] = Field("", description="The training job's memory option, or '' for none.")
    memory_note: OneLine = Field("", description="The training job file's comment on its share of the node (schema 3).")
    whole_node_memory: SlurmOption | Literal[""] = Field(
        "", description="The memory option of a job with whole nodes here (prestage.sh's advice; schema 3).")
    shapes: dict[JobKind, Shape] = Field(
        default_factory=dict, description="Each job kind's request as structured values, which `slurm` renders "
        "(schema 3; derived from `slurm` for schema 2).")
    cpu_bind: ShellWord = Field(
        "", description="srun's --cpu-bind value for the training ranks ('' where Slurm places them)."
    )
    binds: list[AbsPath] = Field(default_factory=list, description="Every path the container gets bound.")
    srun_options: list[SlurmOption] = Field(
        default_factory=list, description="The site's and partition's extra options of the training step's srun.")
    cost: dict[JobKind, Cost] = Field(
        default_factory=dict, description="Each job kind's cost where its partition has a billing rule "
        "(jobs/interactive.sh: train's per hour).")


class ImageIssue(Model):
    """A known issue of the image that the project's job shape may hit (lumi-facts §11), for
    the README's container row and the comment above values.sh's image line."""

    key: OneLine = Field(description="The issue's source key (LAIF-I44).")
    title: OneLine
    instead: OneLine
    conditional: OneLine = Field("", description="The condition the answers cannot show ('' when none).")


class ContainerFacts(Model):
    id: Ident
    title: OneLine
    path: str
    status: Literal["recommended", "available", "observed", "legacy", "removed", "custom", "cotainr"]
    replaced_by: Ident | Literal[""] = ""
    source: OneLine = ""
    cotainr: CotainrSupport | None = None
    numa_binding: bool = False
    versions_unconfirmed: list[Package] = []
    generation: Slug
    run_verb: Literal["exec", "run"]
    activate_var: EnvName | Literal[""] = ""
    module_use: AbsPathOrEmpty = ""
    module: NameWordOrEmpty = Field("", description="The one module older templates load (an Lmod name/version too).")
    modules: list[EnvModule] = []
    binds: list[AbsPath] = []
    mpi_srun_options: list[SlurmOption] = []
    relative: bool
    pull_from: Annotated[str, AfterValidator(_pull_from)] = Field(
        "", description="Where the user pulls the image from into `path` ('' for images the site keeps).")
    known_issues: list[ImageIssue] = Field(
        [], description="The image's known issues that the training job's shape may hit, as the catalogue knew them "
        "when the project was made or updated (doctor and explain judge by the catalogue installed now).")

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        # The answer's check (container_path: spaces and any letters), which takes every path the
        # catalogue's own check (ContainerImage.path) takes: render accepts what load accepted.
        if re.fullmatch(r"container/[A-Za-z0-9][A-Za-z0-9._-]*\.sif", value):
            return value
        try:
            return check_answer_path(value)
        except ValueError as exc:
            raise ValueError(f"{exc}; or container/<name>.sif for a cotainr build") from None

    @model_serializer(mode="wrap")
    def _without_absent_cotainr(self, handler: Any) -> dict[str, Any]:
        # Only cotainr builds have the key (the answers files of other projects stay as they were).
        data = handler(self)
        if data.get("cotainr") is None:
            data.pop("cotainr", None)
        if not data.get("known_issues"):  # likewise, only images with an issue for the project's shape
            data.pop("known_issues", None)
        return data


class EnvLeftOut(Model):
    """A site or framework setting not exported in this project, and why (a known issue)."""

    name: EnvName
    value: str = ""  # (the value left out; '' in data recorded before lumi-scaffold 0.5)
    why: OneLine
    source: OneLine = ""


class Section(Model):
    """A README section from a plugin (plain Markdown)."""

    title: OneLine
    body: str
    source: OneLine = ""


class FrameworkFacts(Model):
    name: Slug
    title: OneLine
    needs_master_addr: bool = True
    distributed_init: OneLine = ""
    pinned_packages: list[Package] = []
    train_args: list[TrainArg] = []


class Cache(Model):
    name: EnvName
    value: ShellWord


class KernelCache(Model):
    """A compiler cache that lives in node-local tmp during a job and is carried from job to
    job through an archive in the project's cache area (scripts/lib/caches.sh)."""

    name: Slug = Field(description="The archive's name: <kernel_cache_store>/<name>.tar.")
    title: OneLine
    path: ShellWord = Field(description="The node-local directory (${USER}, ${SLURM_JOB_ID}, ${SLURM_NODEID} expand in the job).")


class Storage(Model):
    name: Slug
    path: AbsPath
    note: OneLine = ""


class ProfilerFacts(Model):
    name: Slug
    title: OneLine
    kind: Literal["none", "command", "framework"]
    command: list[ProfilerWord] = []
    env: list[ProfilerEnvSetting] = []
    view: OneLine = ""


class TrackingFacts(Model):
    """The experiment tracker the jobs log to (lumi_scaffold.tracking; absent: none)."""

    name: Literal["tensorboard", "mlflow", "wandb"]
    title: OneLine
    package: Requirement
    viewer: OneLine = Field("", description="How the site's users look at the runs (the site's tracking_viewers).")
    source: OneLine = ""


class PluginData(Model):
    """The recorded ``plugin_data`` answer (see the module docstring)."""

    schema_: int = Field(SCHEMA, alias="schema", ge=1, le=SCHEMA, description="Shape version (1: lumi-scaffold 0.1/0.2).")
    package: PythonName | Literal[""] = Field("", description="The project's Python package, src/<package> (schema 2).")
    plugins: dict[Package, OneLine] = Field(description="Plugin name -> version ('builtin' for built-in ones).")
    site: SiteFacts
    partition: PartitionFacts
    job: JobFields
    container: ContainerFacts
    pins: dict[Package, Version] = {}
    framework: FrameworkFacts
    env: list[EnvSetting] = []
    env_left_out: list[EnvLeftOut] = Field(
        default_factory=list, description="Settings left out for this image and shape by a known issue; scripts/values.sh says why.")
    caches: list[Cache] = []
    kernel_caches: list[KernelCache] = Field(
        default_factory=list, description="Node-local compiler caches the jobs restore at start and save at the end.")
    kernel_cache_store: AbsPathOrEmpty = Field("", description="Where their archives are kept ('' for none).")
    data_dir: AbsPath
    dataset_dir: AbsPath
    output_root: AbsPath
    storage: list[Storage] = []
    project_area: Storage | None = Field(
        None, description="Where the project's checkout belongs (the site's project_area, the user's directory there).")
    home_area: Storage | None = Field(None, description="The users' home directories (the site's home storage area).")
    profiler: ProfilerFacts
    tracking: TrackingFacts | None = Field(None, description="The experiment tracker (0.4; absent: none).")
    requirements: list[Requirement] = []
    readme: list[Section] = Field(default_factory=list, description="README sections from the site's and framework's plugins.")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _shapes_of_schema_2(cls, data: Any) -> Any:
        """Schema 2 (0.3.0) recorded the job options as text only: read the shapes, the
        binding and the memory prose from them, so that explain and doctor read one model."""
        if not isinstance(data, dict) or data.get("schema") != 2:
            return data
        job, site = data.get("job"), data.get("site")
        if not isinstance(job, dict) or not isinstance(site, dict) or "shapes" in job or not isinstance(job.get("slurm"), dict):
            return data
        try:
            return {**data, "job": upgraded_job(job, site, data.get("container") or {})}
        except (TypeError, ValueError):
            return data  # the fields' own validation says what is wrong

    def dump(self) -> dict[str, Any]:
        """The JSON-able dict recorded in the answers file."""
        data = self.model_dump(mode="json", by_alias=True)
        if data.get("tracking") is None:
            data.pop("tracking", None)  # (projects without a tracker record what they did before)
        return data


def upgraded_job(job: dict[str, Any], site: dict[str, Any], container: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 job fields with the schema 3 ones read from them."""
    follows, gpus_on_node = bool(site.get("memory_follows_gpus")), int(site.get("gpus_per_node", 0))
    shapes = {}
    whole = bool(job.get("whole_node"))
    if int(job.get("ranks_per_task", 1)) > 1:
        own = container.get("status") in ("custom", "cotainr")
        binding = ("torchrun-numa" if job.get("torchrun_binding") else "torchrun-shared-node" if not whole
                   else "torchrun-own-image" if own else "torchrun-image")
    else:
        binding = "masks" if job.get("cpu_bind") else "slurm"
    for kind, options in job["slurm"].items():
        ranks = int(job.get("ranks_per_task", 1)) if kind in ("train", "profile") else 1
        shape = shape_from_options(list(options), ranks_per_task=ranks, gpus_on_node=gpus_on_node,
                                   follows_gpus=follows).model_dump()
        if kind == "smoke":  # one GPU placed by Slurm
            shape.update(whole_node=False, binding="slurm")
        else:
            shape["binding"] = binding if kind in ("train", "profile") else "masks" if job.get("cpu_bind") else "slurm"
        shapes[kind] = shape
    train = shapes.get("train")
    note = Shape.model_validate(train).memory.note(whole) if train else ""
    return {**job, "shapes": shapes, "binding": binding, "memory_note": note}


FIX = ("plugin_data is computed by lumi-scaffold from the installed plugins: do not give it with --data or edit it "
       "in .copier-answers.yml (restore that file from git, then run lumi-scaffold update)")


def storage_variables(data: PluginData | dict[str, Any], *more: str) -> list[str]:
    """The environment variables the project's storage paths start with (a site whose
    scratch is ``${MYSCRATCH}``): its data, outputs, kernel-cache store and cache
    directories, the container's binds (``${WORK}``), and ``more`` (the dataset archive).
    Jobs check them when they start, doctor on a login node: an unset one would bind or
    write under a path that starts at /. ``data``: the model, or plugin_data as Copier holds
    the answer (the ``lumi_storage_variables`` filter's), validated here."""
    pd = data if isinstance(data, PluginData) else validate_plugin_data(data)
    paths = [pd.dataset_dir, pd.output_root, pd.kernel_cache_store, *(c.value for c in pd.caches), *pd.job.binds,
             *more]
    return sorted({name for name in map(path_variable, paths) if name})


def validate_plugin_data(data: Any, where: str = "plugin_data") -> PluginData:
    """``data`` as :class:`PluginData`, or :class:`PluginDataError` with one line naming
    the first bad field, its value and the fix (and how many more problems there are)."""
    if not isinstance(data, dict):
        raise PluginDataError(f"{where or 'plugin_data'}: expected a mapping, got {type(data).__name__}. Fix: {FIX}.",
                              field=where or "plugin_data", value=data)
    try:
        pd = PluginData.model_validate(data)
    except ValidationError as exc:
        field, value = _first_problem(exc, data, where)
        raise PluginDataError(one_line_message(exc, data, where), field=field,
                              value=None if value is _MISSING else value) from None
    if disagreement := job_disagreement(pd):
        name, value, reason = disagreement
        field = f"{where}.{name}" if where else name
        raise PluginDataError(" ".join(f"{field}={value!r}: {reason}. Fix: {FIX}.".split()), field=field, value=value)
    return pd


def job_disagreement(pd: PluginData) -> tuple[str, Any, str] | None:
    """Each job is recorded as its shape (``job.shapes``) and again as what the templates
    print of it: its sbatch options (``job.slurm``, Shape.options) and the training job's
    fields (tasks, binding, memory...). Where a record has shapes (schema 3), the first
    field its shape does not give, as (field, recorded value, what the shape gives); None
    when they agree. Schema 2's shapes are read from its options, and agree by construction."""
    job = pd.job
    if pd.schema_ < 3:
        return None
    for kind in dict.fromkeys([*job.shapes, *job.slurm]):
        shape, recorded = job.shapes.get(kind), job.slurm.get(kind)
        if shape is None or recorded != shape.options():
            return (f"job.slurm.{kind}", recorded,
                    f"job.shapes.{kind} renders {shape.options()}" if shape else f"there is no job.shapes.{kind}")
    train = job.shapes.get("train")
    if train is None:
        return None
    derived = {"whole_node": train.whole_node, "exclusive": train.exclusive, "tasks": train.ranks,
               "tasks_per_node": train.tasks_per_node, "ranks_per_task": train.ranks_per_task,
               "cpus_per_task": train.cpus_per_task, "binding": train.binding, "memory": train.memory.option,
               "memory_note": train.memory.note(train.whole_node)}
    for name, value in derived.items():
        if getattr(job, name) != value:
            return f"job.{name}", getattr(job, name), f"job.shapes.train gives {value!r}"
    return None


def _first_problem(exc: ValidationError, data: Any, where: str) -> tuple[str, Any]:
    """The dotted name of the first bad field and its value (``_MISSING`` where absent)."""
    loc = _field_path(_first_error(exc)["loc"])
    return ".".join(map(str, (where, *loc) if where else loc)), value_at(data, loc, _MISSING)


def _first_error(exc: ValidationError) -> Any:
    errors = exc.errors(include_url=False)
    # A field that may also be empty ('' | a word) reports both alternatives: the word's
    # reason is the one that helps.
    return next((e for e in errors if not str(e["msg"]).startswith("Input should be ''")), errors[0])


def one_line_message(exc: ValidationError, data: Any, where: str, fix: str = FIX) -> str:
    """The first problem of ``exc`` (and how many more), naming the field and its value."""
    errors = exc.errors(include_url=False)
    first = _first_error(exc)
    loc = _field_path(first["loc"])
    field, value = _first_problem(exc, data, where)
    reason = str(first["msg"]).removeprefix("Value error, ")
    others = len({_field_path(e["loc"]) for e in errors} - {loc})
    more = f" ({others} more problem{'s' if others > 1 else ''})" if others else ""
    shown = "" if value is _MISSING else f"={value!r}"
    if value is _MISSING and first.get("input") is not None and first["type"] != "missing":
        shown = f"={first['input']!r}"
    text = f"{field}{shown}: {reason}{more}. Fix: {fix}."
    return " ".join(text.split())  # one line, whatever the value held


def _field_path(loc: tuple) -> tuple:
    """The error's location without pydantic's union and validator tags."""
    return tuple(p for p in loc if isinstance(p, int) or ("[" not in p and p not in ("str", "int", "bool", "none")))


_MISSING = object()


def check(data: Any) -> str:
    """The question validator's message for a ``plugin_data`` answer ('' when valid); Copier
    names the question before it."""
    try:
        validate_plugin_data(data, where="")
    except PluginDataError as exc:
        return exc.message
    return ""

