"""The jobs of a project, decided once: each job kind's shape, memory, binding and cost.

A project's jobs (smoke test, training, profiling, the network preflight, the interactive
allocation) are entries of one registry, :data:`JOB_KINDS`. Each entry's shape is a
:class:`Shape` of structured values (the time limit as a duration, memory as a form and an
amount, GPUs as a count), computed from the answers and the site by the rules below, each
written once:

- :func:`whole_nodes`: whether a job has whole nodes;
- :func:`refusals`: what a partition refuses in a job's shape (GPUs, nodes, whole nodes,
  time limit, memory, cores), for the questionnaire and ``lint`` alike;
- :func:`memory_rule`: which memory option a job asks for (``--mem`` per node for whole
  nodes, ``--mem-per-gpu`` for part of a node, none where memory follows the GPUs);
- :func:`launch`: tasks, ranks per task and CPUs per task for a launcher;
- :func:`binding`: how the training ranks are bound to CPUs (data; the prose is chosen by it);
- :func:`cost`: what a job is billed at its time limit, from the shape's values.

:meth:`Shape.options` is the one place the options become ``#SBATCH`` text; the templates
print them, and ``explain``, ``lint`` and the cost code read the shapes, never the text.
:func:`parse_options` reads options back only where text is all there is: a job file's
header (lint) and plugin_data recorded before shapes were (schema 2).

Adding a job kind: one :class:`JobKind` entry here (its shape function), its template
under ``project-templates/project/jobs/`` and its test (CONTRIBUTING.md, "Adding a job kind").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, Field

from .models.base import Model  # (recorded in plugin_data: unknown keys are errors, frozen)
from ._types import OWN_OPTIONS, OneLine, SlurmOption, SlurmTime, matching, slurm_time_normal, slurm_time_seconds

if TYPE_CHECKING:
    from .models import NodeLayout, Partition, Site

__all__ = ["JOB_KINDS", "OWN_OPTIONS", "JobKind", "Memory", "Refusal", "Shape", "binding", "cost", "kind_of_file", "launch",
           "memory_rule", "parse_options", "profile_time", "refusals", "whole_nodes"]

MemoryForm = Literal["per-node", "per-gpu", "follows-gpus", "none"]
Binding = Literal["masks", "slurm", "torchrun-numa", "torchrun-shared-node", "torchrun-own-image", "torchrun-image"]


class Memory(Model):
    """The memory a job asks for on each node: a form and an amount in GB."""

    form: MemoryForm = Field(description="per-node (--mem), per-gpu (--mem-per-gpu), follows-gpus (the site gives "
                             "memory with the GPUs, no option), none (no figure known: the partition's default).")
    gb: int | None = Field(default=None, ge=1, description="GB per node or per GPU (per-node, per-gpu).")

    @property
    def option(self) -> str:
        """The sbatch option ('' for none)."""
        if self.form == "per-node":
            return f"--mem={self.gb}G"
        return f"--mem-per-gpu={self.gb}G" if self.form == "per-gpu" else ""

    def per_node_gb(self, gpus: int) -> int | None:
        """GB held on each node by a job with ``gpus`` GPUs there (None: not asked for)."""
        if self.form == "per-node":
            return self.gb
        return self.gb * gpus if self.form == "per-gpu" and self.gb else None

    def held_gb(self, gpus: int, whole_node: bool, node_gb: int | None, gpu_gb: int | None) -> int | None:
        """GB a job holds on each node: what it asks for, or where memory follows the GPUs,
        their share by the node's figures (``node_gb`` per node, ``gpu_gb`` per GPU)."""
        if self.form != "follows-gpus":
            return self.per_node_gb(gpus)
        return node_gb if whole_node else (gpu_gb or 0) * gpus or None

    @property
    def text(self) -> str:
        """What explain prints: the option, or where the memory comes from."""
        if self.option:
            return self.option
        return "follows the GPUs" if self.form == "follows-gpus" else "the partition's default"

    def note(self, whole_node: bool) -> str:
        """The job file's comment line on its share of the node ('' for none)."""
        what = {"per-node": f"{self.gb}G per node", "per-gpu": "memory per GPU", "follows-gpus": "memory follows the GPUs",
                "none": ""}[self.form]
        if whole_node:
            return "Whole nodes" + (f"; {what}" if self.form == "follows-gpus" else f": {what}" if what else "") + "."
        return f"Part of a node: {what}." if what else ""

    @classmethod
    def parse(cls, options: dict[str, str], follows_gpus: bool) -> Memory:
        """The memory of parsed options (:func:`parse_options`)."""
        for name, form in (("mem", "per-node"), ("mem-per-gpu", "per-gpu")):
            match = re.fullmatch(r"(\d+)G", options.get(name, ""))
            if match:
                return cls(form=form, gb=int(match.group(1)))  # type: ignore[arg-type]
        return cls(form="follows-gpus" if follows_gpus else "none")


def whole_nodes(node: NodeLayout | int, gpus: int) -> bool:
    """THE whole-node rule: a job with every GPU of its nodes (a node layout, or its GPU
    count) has whole nodes."""
    return gpus == (node if isinstance(node, int) else node.gpus)


@dataclass(frozen=True)
class Refusal:
    """What a partition refuses in a job's shape: the answer at fault, why, and the answers
    that would fit (``(question, value)`` pairs), worded once for the questionnaire
    (:meth:`use`) and for ``lint`` (:meth:`fix`)."""

    answer: str
    reason: str
    fixes: tuple[tuple[str, str], ...] = ()
    hint: str = ""  # what else to do (a sentence), after the answers

    def use(self) -> str:
        """The questionnaire's message: the reason and the answers to give instead."""
        return (f"{self.reason}." + (" Use " + " or ".join(f"{n}={v}" for n, v in self.fixes) + "." if self.fixes else "")
                + (f" {self.hint}" if self.hint else ""))

    def fix(self, context: str = "") -> str:
        """lint's message for a job file: the reason (with ``context``) and the updates that fix the project."""
        fixes = " Fix: " + ", or ".join(f"lumi-scaffold update -d {n}={v}" for n, v in self.fixes) if self.fixes else ""
        return f"{self.reason}{context}.{fixes}" + (f"{'.' if fixes else ''} {self.hint}" if self.hint else "")


def refusals(site: Site, part: Partition, *, nodes: int, gpus: int, time: str | None = None,
             memory: Memory | None = None, tasks: int = 0, cpus_per_task: int = 0,
             partial_node: bool = False) -> list[Refusal]:
    """THE job-shape rules against a partition entry: GPUs per node within the node's,
    whole nodes for a job on several nodes, at most the partition's nodes, all GPUs of a node
    on a whole-node partition (unless the job kind may use ``partial_node``), the time limit
    for this many nodes, and (where given) memory and cores within a node's."""
    node = site.node_of(part.name)
    full = node.gpus
    out = []
    if not 0 < gpus <= full:
        out.append(Refusal("gpus_per_node", f"{gpus} GPUs per node is out of range: {part.name} nodes have {full} GPUs"
                           f"{' (GCDs)' if node.gpu_vendor == 'amd' else ''}",
                           (("gpus_per_node", str(min(max(gpus, 1), full))),)))
    elif nodes > 1 and not whole_nodes(node, gpus):
        out.append(Refusal("gpus_per_node", f"a job on {nodes} nodes uses whole nodes: {part.name} nodes have {full} GPUs, not {gpus}",
                           (("gpus_per_node", str(full)), ("nodes", "1"))))
    elif part.allocation == "whole-node" and not whole_nodes(node, gpus) and site.has_partial_nodes and not partial_node:
        out.append(Refusal("partition", f"{part.name} allocates (and bills) whole nodes, so {gpus} of {full} GPUs would waste the rest",
                           (("gpus_per_node", str(full)), ("partition", site.partial_node_partition))))
    if nodes < part.min_nodes:
        fits = next((p.name for p in site.partitions if p.min_nodes <= nodes <= p.max_nodes), None)
        out.append(Refusal("nodes", f"{part.name} takes jobs of at least {part.min_nodes} nodes, not {nodes}",
                           ((("partition", fits),) if fits else ()) + (("nodes", str(part.min_nodes)),)))
    if nodes > part.max_nodes:
        bigger = next((p.name for p in site.partitions if p.min_nodes <= nodes <= p.max_nodes), None)
        out.append(Refusal("nodes", f"{part.name} allows at most {part.max_nodes} nodes, not {nodes}",
                           ((("partition", bigger),) if bigger else ()) + (("nodes", str(part.max_nodes)),)))
    limit = part.walltime_limit(nodes)
    if time is not None and slurm_time_seconds(time) > slurm_time_seconds(limit):
        scope = f" for {nodes} node(s)" if part.walltime_bins else ""
        # The project's answer for a longer run (docs/jobs.md, "Chains"), where the partition allows it.
        chain = (f"For a longer run, CHAIN=N sbatch jobs/train.sbatch queues N jobs of {limit}, each resuming from the "
                 "last checkpoint." if part.chains else "")
        out.append(Refusal("walltime", f"{slurm_time_normal(time)!r} exceeds the {part.name} limit of {limit}{scope}",
                           (("walltime", limit),), chain))
    per_node = memory.per_node_gb(gpus) if memory else None
    if per_node and node.mem_per_node_gb and per_node > node.mem_per_node_gb:
        out.append(Refusal("memory", f"{per_node} GB of memory per node exceed the {node.mem_per_node_gb} GB a {part.name} node has"))
    if tasks * cpus_per_task > node.usable_cores:
        out.append(Refusal("cpus", f"{tasks} tasks x {cpus_per_task} CPUs exceed the {node.usable_cores} usable cores of a "
                                   f"{part.name} node"))
    return out


def memory_rule(site: Site, node: NodeLayout, gpus: int) -> Memory:
    """THE memory rule: whole nodes ask for the node's memory, part of a node for memory per
    GPU; nothing where the site gives no figure (Slurm's default applies) or memory follows
    the GPUs."""
    if site.memory_follows_gpus:
        return Memory(form="follows-gpus")
    if whole_nodes(node, gpus):
        return Memory(form="per-node", gb=node.mem_per_node_gb) if node.mem_per_node_gb else Memory(form="none")
    return Memory(form="per-gpu", gb=node.mem_per_gpu_gb) if node.mem_per_gpu_gb else Memory(form="none")


# A value written after --name= in an #SBATCH line (the job name, account, partition, QOS).
SlurmValue = Annotated[str, AfterValidator(matching(
    re.compile(r"^[A-Za-z0-9_.,:@%+-]*$"), "{!r} may only contain letters, digits and _ . , : @ % + -"))]


class Shape(Model):
    """One job's request, as structured values. ``options()`` renders it."""

    name: SlurmValue = Field(description="--job-name")
    account: SlurmValue
    partition: SlurmValue = Field(description="Slurm's partition name.")
    qos: SlurmValue = ""
    time: SlurmTime
    nodes: int = Field(ge=1)
    tasks_per_node: int = Field(ge=1)
    ranks_per_task: int = Field(default=1, ge=1, description="Processes each task starts (torchrun: one per GPU).")
    gpus_per_node: int = Field(ge=1)
    gpu_request: Literal["gpus-per-node", "gres"] = "gpus-per-node"
    gpu_type: SlurmValue = ""
    cpus_per_task: int = Field(ge=1)
    memory: Memory
    exclusive: bool = False
    whole_node: bool = Field(description="The job has every GPU of its nodes.")
    binding: Binding = Field(default="slurm", description="How its ranks get their CPUs (binding()).")
    extra: list[SlurmOption] = Field(default_factory=list, description="The site's and partition's own options.")

    @property
    def seconds(self) -> int:
        return slurm_time_seconds(self.time)

    @property
    def ranks(self) -> int:
        return self.nodes * self.tasks_per_node * self.ranks_per_task

    def gpus_option(self) -> str:
        if self.gpu_request == "gres":
            return f"--gres=gpu:{self.gpu_type}:{self.gpus_per_node}" if self.gpu_type else f"--gres=gpu:{self.gpus_per_node}"
        return f"--gpus-per-node={self.gpus_per_node}"

    def options(self) -> list[str]:
        """THE rendering of a job's request as sbatch options, in the job files' order."""
        opts = [f"--job-name={self.name}", f"--account={self.account}", f"--partition={self.partition}",
                f"--time={self.time}", f"--nodes={self.nodes}", f"--ntasks-per-node={self.tasks_per_node}",
                self.gpus_option(), f"--cpus-per-task={self.cpus_per_task}"]
        opts += [self.memory.option] if self.memory.option else []
        opts += ["--exclusive"] if self.exclusive else []
        opts += [f"--qos={self.qos}"] if self.qos else []
        return opts + list(self.extra)


_OPTION = re.compile(r"^--([a-z][a-z-]*)(?:=(.*))?$")


def parse_options(options: Iterable[str]) -> dict[str, str]:
    """``--name=value`` options as {name: value} ('' for a flag); other lines are skipped."""
    out = {}
    for option in options:
        match = _OPTION.match(option)
        if match:
            out[match.group(1)] = match.group(2) or ""
    return out


def gpus_of(options: dict[str, str]) -> int:
    """GPUs per node parsed options ask for: --gpus-per-node=N or --gres=gpu[:type]:N (0: none)."""
    if "gpus-per-node" in options:
        return int(options["gpus-per-node"]) if options["gpus-per-node"].isdigit() else 0
    match = re.fullmatch(r"gpu(?::[A-Za-z0-9_-]+)?:(\d+)", options.get("gres", ""))
    return int(match.group(1)) if match else 0


def shape_from_options(options: list[str], *, ranks_per_task: int, gpus_on_node: int, follows_gpus: bool) -> Shape:
    """The shape of options recorded as text only (plugin_data schema 2, lumi-scaffold 0.3.0)."""
    o = parse_options(options)
    gpus = gpus_of(o)
    gres = re.fullmatch(r"gpu(?::([A-Za-z0-9_-]+))?:\d+", o.get("gres", ""))
    return Shape(
        name=o.get("job-name", ""), account=o.get("account", ""), partition=o.get("partition", ""), qos=o.get("qos", ""),
        time=o.get("time", ""), nodes=int(o.get("nodes", "1")), tasks_per_node=int(o.get("ntasks-per-node", "1")),
        ranks_per_task=ranks_per_task, gpus_per_node=max(gpus, 1), gpu_request="gres" if gres else "gpus-per-node",
        gpu_type=(gres.group(1) or "") if gres else "", cpus_per_task=int(o.get("cpus-per-task", "1")),
        memory=Memory.parse(o, follows_gpus), exclusive="exclusive" in o, whole_node=whole_nodes(gpus_on_node, gpus),
        extra=[opt for opt in options if _OPTION.match(opt) and _OPTION.match(opt).group(1) not in OWN_OPTIONS],  # type: ignore[union-attr]
    )


def launch(launcher: str, gpus: int, cpus_per_gpu: int) -> dict[str, int]:
    """Tasks on each node, ranks per task, CPUs per task: srun starts one task per GPU;
    torchrun one task per node that spawns a worker per GPU."""
    per_task = gpus if launcher == "torchrun" else 1
    return {"tasks_per_node": gpus // per_task, "ranks_per_task": per_task, "cpus_per_task": cpus_per_gpu * per_task}


def binding(launcher: str, whole_node: bool, numa_binding: bool, own_image: bool) -> Binding:
    """How the training ranks get their CPUs. srun masks only make sense on whole nodes
    [UG-lumig], [TM-Bind]; torchrun binds workers itself (--numa-binding) where the image's
    PyTorch can, on whole nodes only: on a shared node the job's cores may lie outside its
    GPUs' NUMA nodes."""
    if launcher != "torchrun":
        return "masks" if whole_node else "slurm"
    if not whole_node:
        return "torchrun-shared-node"
    if numa_binding:
        return "torchrun-numa"
    return "torchrun-own-image" if own_image else "torchrun-image"


class Cost(Model):
    """What one job of a kind is billed, by the partition's rule, at its time limit."""

    unit: OneLine
    per_hour: float = Field(ge=0)
    hours: float = Field(gt=0, description="The job's time limit in hours.")
    at_limit: float = Field(ge=0, description="Billed when the job runs to its time limit.")
    rule: OneLine
    source: OneLine = ""


def cost(shape: Shape, part: Partition, node: NodeLayout) -> Cost | None:
    """What the job is billed at its time limit by its partition's rule (None without one).
    An --exclusive job holds the node's every core."""
    rule = part.billing_rule
    if rule is None:
        return None
    cores = node.cores if shape.exclusive else shape.cpus_per_task * shape.tasks_per_node
    per_hour = rule.units_per_hour(shape.nodes, shape.gpus_per_node, cores, shape.memory.per_node_gb(shape.gpus_per_node))
    hours = shape.seconds / 3600
    return Cost(unit=rule.unit, per_hour=per_hour, hours=round(hours, 4), at_limit=round(per_hour * hours, 4),
                rule=rule.describe(), source=rule.source)


# Time limits of the short jobs. The profile job's follows the README's step count, not the
# training walltime: a budget for the start (image, venv, data staging, kernel compilation)
# plus one per profiled step. Both are assumptions of this template, not site facts; a
# longer profile asks for more with sbatch --time.
# The progress watchdog's default limits (scripts/values.sh; watch_progress in the project's
# scripts/lib/job.sh applies them to the job's time limit as Slurm holds it; lumi-scaffold
# explain reads the result from a dry run): (percent of the time limit, floor s, s per node
# added to the floor, cap s). The floors keep healthy slow starts safe: container start,
# imports and a multi-node collective initialisation before the first heartbeat, a first
# compiled step or a checkpoint in a phase; the caps are 0.4's limits. A hang with heartbeats
# then costs at most about 9 % of a 1-hour job (STARTUP/PHASE 216 s, and up to 107 s to
# notice it, gather evidence and stop) and 2.2 % of a 48-hour one. OUTPUT_TIMEOUT judges a
# command that reports nothing but its output: a silent epoch is not a hang, so its share is
# larger (docs/jobs.md, "What a hang costs").
WATCHDOG_RULE = {"startup_timeout": (6, 180, 2, 1800), "progress_timeout": (3, 60, 0, 1200),
                 "phase_timeout": (6, 180, 0, 3600), "output_timeout": (20, 300, 0, 7200)}
# The share of a job's memory on a node that the extracted archive may fill, the rest left for
# training: scripts/lib/prestage.sh checks it (prestage_memory_percent in values.sh) and
# lumi-scaffold explain prints it, from this one figure.
PRESTAGE_MEMORY_PERCENT = 75

# How long a node with evidence against it stays in the project's node ledger (scripts/lib/
# ledger.py), days: long enough for a chain of 48-hour jobs and the site's answer to a report,
# short enough that a node the site repaired comes back by itself. A choice of this
# template, not a site fact; `python3 scripts/lib/ledger.py clear NODE` ends one sooner.
LEDGER_DAYS = 7

SMOKE_TIME = "00:10:00"
PREFLIGHT_TIME = "00:15:00"
PROFILE_STEPS = 40
PROFILE_START_S = 600
PROFILE_STEP_S = 15


def profile_time(steps: int) -> str:
    """The profile job's time limit for ``steps`` steps, in whole minutes (HH:MM:SS)."""
    minutes = -(-(PROFILE_START_S + steps * PROFILE_STEP_S) // 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


@dataclass(frozen=True)
class Request:
    """What the shapes are computed from: the answers, checked against the site before."""

    project: str
    account: str
    nodes: int
    gpus: int
    launcher: str
    walltime: str
    site: Site
    part: Partition
    smoke: Partition
    numa_binding: bool = False  # the image's torchrun has --numa-binding
    own_image: bool = False  # the user's image (custom, cotainr): its PyTorch is unknown


def _shortest(*times: str) -> str:
    def seconds(value: str) -> int:
        try:
            return slurm_time_seconds(value)
        except ValueError:
            return 0
    return min(times, key=seconds)


def _shape(r: Request, kind: str, part: Partition, *, nodes: int, gpus: int, launcher: str, time: str,
           placed: bool = False) -> Shape:
    """A job of ``kind`` on ``part``; ``placed``: one GPU wherever Slurm puts it (never a
    whole node's job, even on a one-GPU node)."""
    node = r.site.node_of(part.name)
    whole = whole_nodes(node, gpus) and not placed
    return Shape(
        name=f"{r.project}-{kind}", account=r.account, partition=part.slurm_name, qos=part.qos or "", time=time,
        nodes=nodes, **launch(launcher, gpus, node.cpus_per_gpu), gpus_per_node=gpus, gpu_request=r.site.gpu_request,
        gpu_type=(node.gpu_type or "") if r.site.gpu_request == "gres" else "", memory=memory_rule(r.site, node, gpus),
        exclusive=whole and part.allocation == "by-resource", whole_node=whole,
        binding=binding(launcher, whole, r.numa_binding, r.own_image),
        extra=r.site.sbatch_options + part.sbatch_options,
    )


def _smoke(r: Request) -> Shape:
    """One GPU on the partial-node partition for ten minutes."""
    return _shape(r, "smoke", r.smoke, nodes=1, gpus=1, launcher="srun", time=SMOKE_TIME, placed=True)


def _train(r: Request) -> Shape:
    return _shape(r, "train", r.part, nodes=r.nodes, gpus=r.gpus, launcher=r.launcher, time=r.walltime)


def _profile(r: Request) -> Shape:
    """The training job's shape and launcher, for the profiled steps' time."""
    return _shape(r, "profile", r.part, nodes=r.nodes, gpus=r.gpus, launcher=r.launcher,
                  time=_shortest(r.walltime, profile_time(PROFILE_STEPS)))


def _sweep(r: Request) -> Shape:
    """Each trial of a sweep (a task of a job array): the training job's shape."""
    return _shape(r, "sweep", r.part, nodes=r.nodes, gpus=r.gpus, launcher=r.launcher, time=r.walltime)


def _preflight(r: Request) -> Shape | None:
    """Multi-node projects: the training job's nodes and GPUs, one task per GPU, 15 minutes at most."""
    if r.nodes <= 1:
        return None
    return _shape(r, "preflight", r.part, nodes=r.nodes, gpus=r.gpus, launcher="srun",
                  time=_shortest(r.walltime, PREFLIGHT_TIME))


@dataclass(frozen=True)
class JobKind:
    """One kind of job a project has."""

    name: str
    file: str  # the file in the project
    shape: Callable[[Request], Shape | None] | None = None
    same_as: str = ""  # a kind that runs with another's shape (the interactive allocation: train's)
    partition: Literal["smoke", "project"] = "project"  # which partition it is billed on
    launcher: Literal["answer", "srun"] = "answer"  # who starts its ranks: the project's launcher, or srun
    watchdog: bool = False  # the progress watchdog runs in it (explain costs a hang)
    optional: bool = False  # a project may lack the file (a profiler of none, one node, made before the kind, removed by hand)
    partial_node: bool = False  # may use part of a node on a whole-node partition (lint)
    runs_as: str = ""  # a kind whose job file this one runs (each trial of a sweep runs jobs/train.sbatch)


JOB_KINDS: dict[str, JobKind] = {k.name: k for k in (
    JobKind("smoke", "jobs/smoke-test.sbatch", _smoke, partition="smoke", launcher="srun", partial_node=True),
    JobKind("train", "jobs/train.sbatch", _train, watchdog=True),
    JobKind("profile", "jobs/profile.sbatch", _profile, watchdog=True, optional=True),
    JobKind("preflight", "jobs/preflight.sbatch", _preflight, launcher="srun", optional=True),
    # One trial of a sweep (billed per trial); older projects lack the file.
    JobKind("sweep", "jobs/sweep.sbatch", _sweep, watchdog=True, optional=True, runs_as="train"),
    JobKind("interactive", "jobs/interactive.sh", same_as="train"),
)}


def kind_of_file(path: str) -> JobKind | None:
    """The job kind whose file this is (a path relative to the project)."""
    return next((k for k in JOB_KINDS.values() if k.file == path), None)


def shapes(r: Request) -> dict[str, Shape]:
    """Every job kind's shape for this request (kinds that share another's are left out)."""
    out = {}
    for kind in JOB_KINDS.values():
        shape = kind.shape(r) if kind.shape else None
        if shape is not None:
            out[kind.name] = shape
    return out


def costs(r: Request, computed: dict[str, Shape]) -> dict[str, Cost]:
    out = {}
    for name, shape in computed.items():
        part = r.smoke if JOB_KINDS[name].partition == "smoke" else r.part
        billed = cost(shape, part, r.site.node_of(part.name))
        if billed is not None:
            out[name] = billed
    return out


def signal_lead(walltime: str) -> int:
    """Seconds before the time limit at which Slurm warns a job with this limit (USR1): after
    it, a training job that ends unfinished ran out of time, and its chain goes on; the
    profile job's report says so."""
    try:
        seconds = slurm_time_seconds(walltime)
    except ValueError:
        return 300
    return 300 if seconds >= 3600 else max(30, seconds // 4)


def fields(r: Request, *, container_binds: list[str], allreduce_bench: str) -> dict[str, Any]:
    """The computed job fields of plugin_data (JobFields) for this request."""
    node = r.site.node_of(r.part.name)
    computed = shapes(r)
    train = computed["train"]
    bound = train.binding
    whole_node_memory = memory_rule(r.site, node, node.gpus)  # what a job with all of node.gpus asks for
    return dict(
        smoke_partition=r.smoke.slurm_name,
        smoke_qos=r.smoke.qos or "",
        whole_node=train.whole_node,
        exclusive=train.exclusive,
        tasks=r.nodes * r.gpus,
        tasks_per_node=train.tasks_per_node,
        ranks_per_task=train.ranks_per_task,
        cpus_per_task=train.cpus_per_task,
        binding=bound,
        torchrun_binding="exclusive" if bound == "torchrun-numa" else "",
        # Node-local tmp a job may fill on a shared node (None: its memory is the limit).
        shared_node_tmp_gb=None if train.whole_node else r.part.shared_node_tmp_gb,
        run_name=r.project,
        profile_steps=PROFILE_STEPS,
        signal_lead=signal_lead(r.walltime),
        profile_signal_lead=signal_lead(computed["profile"].time),
        memory=train.memory.option,
        memory_note=train.memory.note(train.whole_node),
        whole_node_memory=whole_node_memory.option,
        # srun's masks, for the steps srun starts one task per GPU in (training with srun,
        # the preflight): they only make sense when the job has whole nodes. [UG-lumig], [TM-Bind]
        cpu_bind="verbose,mask_cpu:" + ",".join(node.cpu_masks) if train.whole_node else "",
        binds=list(dict.fromkeys(r.site.bind_roots + container_binds)),
        srun_options=r.site.srun_options + r.part.srun_options,
        shapes=computed,
        slurm={name: shape.options() for name, shape in computed.items()},
        allreduce_bench=allreduce_bench if r.nodes > 1 else "",
        cost=costs(r, computed),
    )
