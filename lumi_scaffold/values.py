"""``scripts/values.sh``: the one generated shell file of a project, its values as plain lines.

The jobs' logic is a static library copied into every project as it is (``scripts/lib/job.sh``,
``scripts/lib/run.sh`` and the Python helpers beside them). What differs from project to project
(the image, its binds, modules and environment, the job's launch, limits and costs, the
site's facts) is computed here, from the answers and ``plugin_data``, and written as
``name=value`` lines with the comment that says why above each. The template of values.sh
only prints :func:`render`'s text: no template computes a number or tests a job kind.

Every value is one shell word in single quotes, or a list of them in ``( )``. A value may
name environment variables as ``${NAME}`` (a path under ``${USER}``'s directory, a cache
per ``${SLURM_NODEID}``): they stay as they are in the file and the scripts expand them
where the value is used (``expand`` in scripts/lib/job.sh, ``values.read`` in Python),
once the variables exist, so sourcing the file never fails for an unset one.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .plugin_data import PluginData, storage_variables
from . import command
from .jobs import LEDGER_DAYS, PRESTAGE_MEMORY_PERCENT, WATCHDOG_RULE
from .gpu_vendors import vendor
from .tracking import TRACKING_DEFAULTS
from .values_items import Heading, Item, Value, absent, word

HEADER = """\
# This project's values, read by scripts/lib/job.sh and scripts/lib/run.sh (the jobs' library,
# the same in every project) and by the Python helpers in scripts/lib/. lumi-scaffold writes
# this file from .copier-answers.yml: `lumi-scaffold update -d NAME=VALUE` changes an
# answer and this file with it. Variables named as ${NAME} in a value are expanded where
# the value is used, in the job. Override a value for one job from the environment
# instead (SIF=..., BINDS=..., DATA_DIR=..., README.md says which).
"""

# The environment variables of each kernel cache the site keeps (plugin_data.kernel_caches).
KERNEL_CACHE_ENV = {"miopen": ("MIOPEN_USER_DB_PATH", "MIOPEN_CUSTOM_CACHE_DIR"), "triton": ("TRITON_CACHE_DIR",),
                    "inductor": ("TORCHINDUCTOR_CACHE_DIR",)}


def render(items: Iterable[Item]) -> str:
    """The text of scripts/values.sh."""
    lines = ["#!/bin/bash", *HEADER.rstrip("\n").split("\n"),
             "# shellcheck disable=SC2034,SC2016  # the scripts that source this file read every name, and expand ${NAME}", "{"]
    for item in items:
        if isinstance(item, Heading):
            lines += ["", *(f"# {t}".rstrip() for t in item.text)]
            continue
        lines += [f"# {c}".rstrip() for c in item.comment]
        if isinstance(item.value, tuple):
            lines.append(f"{item.name}=({' '.join(map(word, item.value))})")
        else:
            lines.append(f"{item.name}={word(item.value)}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _flag(value: Any) -> str:
    return "1" if value else "0"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def project_values(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    """Every value of the project, in the order the file shows them. ``cite`` keeps the
    citations the project's site cites (lumi_scaffold.sources.cite for its site)."""
    items: list[Item] = []
    from .values_network import network, preflight  # (they build on this module's items)

    for part in (_site, _image, _modules, _binds, _storage, _tracking, _billing, _launch, _inside, network,
                 preflight, _profiler, _sweep, _caches, _prestage, _venv, _attach, _cotainr):
        items += part(answers, pd, cite)
    return items


def _site(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    site = pd.site
    gpu = vendor(site.gpu_vendor)
    reset = {"purge": "no modules but the ones loaded below (module purge)",
             "reset": "the site's default modules (module reset)",
             "": "the modules of the shell it was submitted from (the site's data names no reset)"}[site.module_reset]
    return [
        Heading((f"{site.display_name or site.name}: {site.title}.",)),
        Value("site", site.display_name or site.name),
        Value("project_name", str(answers.get("project_name", ""))),
        Value("package", pd.package),
        Value("module_reset", site.module_reset, (f"A job starts from {reset}.",)),
        Value("node_tmp", site.node_local_tmp, (
            f"Node-local temporary storage{f' ({site.node_local_tmp_note})' if site.node_local_tmp_note else ''}: "
            "each job's TMPDIR, staged data and kernel caches.",)),
        Value("gpu_vendor", gpu.name, (f"{gpu.title} GPUs: Slurm gives each task its GPUs in {gpu.devices_variable}, "
                                       f"collectives run on {gpu.collectives},",
                                       f"and {gpu.monitor} shows the GPUs (scripts/attach.sh --smi).",)),
        Value("gpu_devices_variable", gpu.devices_variable),
        Value("gpu_monitor", gpu.monitor),
        Value("collectives", gpu.collectives),
    ]


def _image(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    c = pd.container
    comment = [f"{c.title}{f' [{c.source}]' if c.source else ''}"]
    if c.status == "observed":
        comment.append(f"Observed in public job scripts, not announced by {pd.site.display_name or pd.site.name}: "
                       "`lumi-scaffold doctor` on a login node checks that it is there.")
    nodes = pd.job.shapes["train"].nodes if "train" in pd.job.shapes else 1
    for i in c.known_issues:
        comment.append(f"Known issue [{i.key}] on {_count(nodes, 'node')}{f', {i.conditional}' if i.conditional else ''}: "
                       f"{i.title}. Instead: {i.instead}.")
    if c.relative:
        path = "${PROJECT_DIR}/" + c.path
        comment.append("Built by container/build.sh.")
    else:
        path = c.path
    from ._types import path_variable

    var = "" if c.relative else path_variable(c.path)
    out: list[Item] = [Heading(("The container image (SIF=/path/to/image.sif sbatch ... uses another).",)),
                       Value("image", path, tuple(comment))]
    out.append(Value("image_known_issues", "; ".join(f"[{i.key}] {i.title}" for i in c.known_issues), (
        "The image's known issues, named by scripts/lib/fault.py when a job hangs with no rank to blame ('': none).",)))
    out.append(Value("image_variable", var, (
        (f"The image's path starts with ${{{var}}}, from the environment jobs are submitted from: a job checks it.",)
        if var else ("(The image's path names no environment variable to check.)",))))
    flag = pd.site.container_gpu_flag
    gpu = vendor(pd.site.gpu_vendor)
    out.append(Value("container_command", (pd.site.runtime, c.run_verb, *((flag,) if flag else ())), (
        "Every step runs through this command, the binds and the image.",
        *((f"{flag}: the container's GPUs ({gpu.container_flag_why}).",) if flag and flag == gpu.container_flag else
          (f"{flag}: the container's GPUs, as the site's data asks.",) if flag else ()))))
    out.append(Value("activate_variable", c.activate_var, (
        (cite("This image keeps Python in a conda env that run.sh activates first. [EBC-PT]"),)
        if c.activate_var else ("(The image's Python needs no activation.)",))))
    return out


def _modules(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    steps: list[str] = []
    comment: list[str] = []
    where = pd.site.display_name or pd.site.name
    for m in pd.container.modules:
        if m.why:
            comment.append(f"{m.name}: {m.why}{f' [{m.source}]' if m.source else ''}")
        elif m.sets_binds:
            comment.append(f"{m.name} sets the container's bind paths.{f' [{m.source}]' if m.source else ''}")
        if m.use_module and m.use:
            comment += [f"Where {where} has the {m.use_module} module, it makes {m.name} loadable; where it has not (yet),",
                        "`module use` its directory does. Which form the site documents may change (UNCONFIRMED):",
                        "either works here."]
            steps.append(f"load-or-use {m.use_module} {m.use}")
        elif m.use_module:
            steps.append(f"load {m.use_module}")
        elif m.use:
            steps.append(f"use {m.use}")
        steps.append(f"load {m.name}")
    if not steps:
        comment.append("(The image needs no modules.)")
    comment.append("Each step: `load NAME`, `use DIRECTORY`, or `load-or-use NAME DIRECTORY`.")
    return [Value("modules", tuple(steps), tuple(comment))]


def _binds(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    why: tuple[str, ...]
    if pd.site.bind_roots:
        why = ("Real roots of symlinked file systems (Singularity does not follow symlinks in",
               cite("bind paths) and what this image generation needs. [EBC-PT], [WS-09]"))
    else:
        why = ("The file systems this image generation needs to see.",)
    return [Value("binds", ",".join(pd.job.binds), (*why, "BINDS=... sbatch ... binds others."))]


def _storage(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    archive = str(answers.get("dataset_archive") or "") if answers.get("prestage") else ""
    variables = storage_variables(pd, archive)
    return [
        Heading(("Data and outputs: never under $HOME (README.md). DATA_DIR=..., OUTPUT_ROOT=... and",
                 "RUN_NAME=... sbatch ... override them.")),
        Value("storage_variables", tuple(variables), (
            ("The storage paths start with these variables, from the environment jobs are submitted",
             "from: a job without them stops with one line.") if variables else
            ("(The storage paths name no environment variables.)",))),
        Value("dataset_dir", pd.dataset_dir),
        Value("output_root", pd.output_root),
        Value("run_name", pd.job.run_name, ("Every job of one run writes into OUTPUT_ROOT/RUN_NAME and resumes from there.",)),
        Value("prestage", _flag(answers.get("prestage")), (
            "1: scripts/lib/prestage.sh extracts dataset_archive into node_tmp on every node.",)),
        Value("dataset_archive", archive),
        Value("kernel_caches", _flag(pd.kernel_caches), (
            "1: the jobs restore the kernel caches from the project's cache area when they start",
            "and save them when training ends (scripts/lib/caches.sh; KEEP_KERNEL_CACHES=0: off).")),
    ]


def _tracking(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    t = pd.tracking
    if t is None:
        return [Heading(("Experiment tracking: none.",)), Value("tracking", ""), Value("tracking_defaults", ())]
    defaults, why = TRACKING_DEFAULTS.get(t.name, ((), ()))
    return [
        Heading((f"Experiment tracking with {t.title} (scripts/lib/python/runlog.py, rank 0): every job of a run",
                 "logs into one tracked run, its id kept in RUN_DIR/tracking.json. TRACKING=none sbatch ...",
                 "leaves a job out of it.")),
        Value("tracking", t.name),
        Value("tracking_defaults", defaults, why or ("(Nothing to set for it.)",)),
    ]


def _billing(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    items: list[Item] = [Heading((
        "Billing, for the job report's GPU-hours: the rate of one node as each job file's own #SBATCH lines",
        "ask for it (the job multiplies by its nodes; sbatch --nodes counts, other options given to",
        "sbatch on the command line do not).",))]
    for kind, shape in pd.job.shapes.items():
        cost = pd.job.cost.get(kind)
        if cost is None:
            items.append(Value(f"billing_{kind}", "", (f"{kind}: the site's data has no billing rule for {pd.partition.name}.",)))
            continue
        items.append(Value(f"billing_{kind}", f"{cost.per_hour / shape.nodes:g} {cost.unit}", (
            f"{kind}: {cost.rule}{f' [{cost.source}]' if cost.source else ''}",)))
    counters = pd.site.energy_counters
    source = f" [{counters.source}]" if counters and counters.source else ""
    items.append(Value("energy_counters", counters.text if counters else "", (
        "Energy, for the job report: the directory of the nodes' energy counters (joules), read on every node at each",
        f"job's start and end, outside the container (scripts/lib/nodes.sh){source}; '': the site's data names none,",
        "and the report says 'not measured'. ENERGY_COUNTERS=/path sbatch ... reads another.")))
    return items


def _launch(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    launcher = str(answers.get("launcher") or "srun")
    job = pd.job
    return [
        Heading(("How the training and profiling ranks start (make_step in scripts/lib/job.sh):",
                 *command.launch_note(pd, launcher, cite))),
        Value("launcher", launcher),
        Value("srun_options", tuple(job.srun_options), ("srun's options for the training step beyond the job's.",)),
        Value("cpu_bind", job.cpu_bind, ("srun's --cpu-bind for the training step ('' for none).",)),
        Value("numa_binding", job.torchrun_binding,
              ("torchrun's --numa-binding ('' for none).",) if launcher == "torchrun" else ("(Not used by the srun launcher.)",)),
        Value("ranks_per_task", str(job.ranks_per_task),
              ("Ranks each task starts: torchrun's workers per node.",) if launcher == "torchrun" else ("Ranks each task starts.",)),
        Value("rendezvous", _flag(pd.framework.needs_master_addr), (
            cite("1: the jobs set MASTER_ADDR and MASTER_PORT for torch.distributed's rendezvous. [WS-09], [AIG-05]"),)
            if pd.framework.needs_master_addr else (
            f"0: {pd.framework.title} finds its peers itself ({pd.framework.distributed_init or 'its own rendezvous'}).",)),
        Value("chains", _flag(pd.partition.chains), ("1: CHAIN=N sbatch jobs/train.sbatch queues the run's next jobs.",)),
        Value("chains_refused", refused_here(pd, CHAINS) if not pd.partition.chains else ""),
        Value("signal_lead", str(job.signal_lead), ("Seconds before the time limit at which Slurm warns the training job.",)),
        Value("profile_signal_lead", str(job.profile_signal_lead)),
        Heading(("The progress watchdog's default limits (watch_progress in scripts/lib/job.sh), each from the job's",
                 "time limit: (percent of it, floor in seconds, seconds per node added to the floor, cap in seconds).",
                 "A job file or the environment may set one in seconds (0: off): PROGRESS_TIMEOUT=600 sbatch ...")),
        *(Value(name, tuple(map(str, rule))) for name, rule in WATCHDOG_RULE.items()),
        Value("ledger_days", str(LEDGER_DAYS), ("Days a node with evidence against it stays in the node ledger (0: none).",)),
        Value("support", pd.site.support, (f"Where {pd.site.title} takes the report of a suspect node (the ledger prints one).",)
              if pd.site.support else ("The site's data names no place to report a suspect node.",)),
    ]


# What a partition without job arrays refuses (refused_here): jobs/sweep.sbatch (slurm.jinja's
# arrays_refused), scripts/sweep.py, explain and doctor say it in the same words.
ARRAYS = "job arrays (the trials of a sweep would break its job limits)"
CHAINS = "chains of jobs"


def _sweep(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    shape = pd.job.shapes.get("sweep")
    cost = pd.job.cost.get("sweep") if shape else None
    return [
        Heading(("Sweeps (scripts/sweep.py submits jobs/sweep.sbatch, sweep_job in scripts/lib/job.sh): one trial",
                 "of the training per line of a sweep file, each a task of a Slurm job array on the sweep's shape.")),
        Value("sweep_at_limit", repr(cost.at_limit) if cost else "", (
            "What one trial is billed when it runs to its time limit, by billing_sweep's rule ('': no rule).",)),
        Value("sweep_time_limit", shape.time if shape else ""),
        Value("sweep_unit", cost.unit if cost else "GPU-hours"),
        Value("sweep_refused", refused_here(pd, ARRAYS) if not pd.partition.arrays else "", (
            "Why the partition takes no sweep ('': it takes job arrays, and jobs/sweep.sbatch runs).",)),
    ]


def refused_here(pd: PluginData, what: str) -> str:
    """Why this partition refuses what its data says it takes no part in, with its purpose:
    the one wording of scripts/values.sh, the job files and README (the lumi_refused global)
    and lumi-scaffold explain and doctor."""
    name, purpose = pd.partition.name, pd.partition.purpose
    return f"{name} takes no {what}{f'; {name}: ' + purpose.rstrip('.') if purpose else ''}"


def _inside(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    env_comment: list[str] = []
    env: list[str] = []
    for e in pd.env:
        note = f"{e.name}={e.value}: {'off: ' if e.scope == 'off' else ''}{e.why}{f' [{e.source}]' if e.source else ''}"
        env_comment.append(note if e.scope != "off" else f"(not set) {note}")
        if e.scope != "off":
            env.append(f"{e.name}={e.value}")
    for left in pd.env_left_out:
        env_comment.append(f"(not set, a known issue with this image) {left.name}: {left.why}"
                           f"{f' [{left.source}]' if left.source else ''}")
    kernel = tuple(f"{name}={c.path}" for c in pd.kernel_caches for name in KERNEL_CACHE_ENV.get(c.name, ()))
    named = {c.name for c in pd.kernel_caches}
    kernel_why = ((cite("MIOpen's kernel cache: its default under $HOME fails on Lustre (file locks). [WS-ref], [EBC-PT]"),)
                  if "miopen" in named else ()) + ((cite("Triton's and TorchInductor's kernel caches, off $HOME, node-local. "
                                                         "[AIG-I112]"),) if named & {"triton", "inductor"} else ())
    caches = tuple(f"{c.name}={c.value}" for c in pd.caches)
    return [
        Heading(("Inside the container (scripts/lib/run.sh, every rank).",)),
        Value("image_env", tuple(env), tuple(env_comment) or ("(No interconnect or runtime settings for this site.)",)),
        Value("env_refused", tuple(f"{left.name}{f'={left.value}' if left.value else ''}: {left.why}"
                                   f"{f' [{left.source}]' if left.source else ''}" for left in pd.env_left_out), (
            "Settings left out above for a known issue with this image, as \"NAME=VALUE: why\": a job whose",
            "environment has one stops before it starts anything (KNOWN_ISSUES=ignore sbatch ... starts it),",
            "and one with another value of NAME is warned of.") if pd.env_left_out else (
            "(No setting is known to be bad with this image: a job refuses none.)",)),
        Value("kernel_cache_env", kernel, (*kernel_why, "One directory per node in node-local storage; every rank makes it.")
              if kernel else ("(No kernel caches to move.)",)),
        Value("cache_env", caches, (cite("Framework caches off $HOME, in the project's cache area. [AIG], [WS-03]"),)
              if caches else ("(No framework caches to move.)",)),
        Value("debug_files_alias", pd.site.rccl_debug_alias, (
            f"Another name {vendor(pd.site.gpu_vendor).collectives}_DEBUG_FILES=1 answers to (its name before lumi-scaffold 0.3).",)
            if pd.site.rccl_debug_alias else ()),
    ]


def _profiler(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    p = pd.profiler
    names = ("profiler", "profile_rank", ("profiler_command",), ("profiler_env",))
    if p.kind == "none" or answers.get("profiler", "none") == "none":
        return absent("Profiling (jobs/profile.sbatch): none in this project.", *names)
    command = tuple(p.command) if p.kind == "command" else ()
    env = tuple(f"{e.name}={e.value}" for e in p.env) if p.kind != "command" else ()
    return [
        Heading((f"Profiling with {p.title} (jobs/profile.sbatch, profile_job in",
                 "scripts/lib/job.sh): scripts/lib/run-profile.sh runs one rank under it, every other rank as in",
                 cite("training. Profiling one rank keeps the overhead and the output small, and balanced training "
                      "makes one rank representative. [WS-09]"),
                 *((f"View: {p.view}",) if p.view else ()))),
        Value("profiler", p.name),
        Value("profile_rank", str(answers.get("profile_rank", 0)), (
            "The rank it profiles; PROFILE_RANK=3 sbatch jobs/profile.sbatch profiles another.",)),
        Value("profiler_command", command, (
            "The profiled rank's command before the training's; {output} is its profile directory.",) if command else ()),
        Value("profiler_env", env, tuple(f"{e.name}: {e.why}" for e in p.env) + (
            "Set for the profiled rank only; {output} is its profile directory.",) if env else ()),
    ]


def _caches(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    caches = pd.kernel_caches
    if not caches:
        return absent("Kernel caches carried from job to job (scripts/lib/caches.sh): none for this site and framework.",
                       "kernel_cache_store", ("kernel_cache_dirs",))
    titles = [c.title for c in caches]
    names = titles[0] if len(titles) == 1 else f"{', '.join(titles[:-1])} and {titles[-1]}"
    site = pd.site
    note = f" ({site.node_local_tmp_note})" if site.node_local_tmp_note else ""
    return [
        Heading((f"Compiler caches that survive jobs: {names}.",
                 f"During a job {'they live' if len(caches) > 1 else 'it lives'} in node-local {site.node_local_tmp}{note},",
                 "where scripts/lib/run.sh points the framework; scripts/lib/caches.sh carries each from job to job.")),
        Value("kernel_cache_store", pd.kernel_cache_store, (
            "The archives, one directory per image: KERNEL_CACHE_STORE/<image file name without .sif>/<name>.tar",
            "(KERNEL_CACHE_STORE=... sbatch ... keeps them elsewhere).")),
        Value("kernel_cache_dirs", tuple(f"{c.name}={c.path}" for c in caches), (
            "Each cache's name and its node-local directory (the same directories as scripts/lib/run.sh's).",)),
    ]


def _prestage(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    names = ("prestage_memory_percent", "prestage_shared_tmp_kb", "prestage_shared_tmp", "prestage_fix")
    if not answers.get("prestage"):
        return absent("Pre-staging (scripts/lib/prestage.sh): off.", *names)
    job, site, part = pd.job, pd.site, str(answers.get("partition", pd.partition.name))
    tmp = site.node_local_tmp
    items: list[Item] = [Heading((
        f"Pre-staging (scripts/lib/prestage.sh): the dataset archive, extracted into node-local {tmp}{f' ({site.node_local_tmp_note})' if site.node_local_tmp_note else ''}",
        cite("on every node, so that training reads it from there, not from the parallel file system. [UG-stor], [WS-09]"))),
        Value("prestage_memory_percent", str(PRESTAGE_MEMORY_PERCENT), (
            "Percent of the job's memory on each node that the extracted archive may fill; the rest is left for training.",))]
    if job.shared_node_tmp_gb:
        items += [
            Value("prestage_shared_tmp_kb", str(job.shared_node_tmp_gb * 1000000000 // 1024), (
                f"On a node shared with other jobs, {part} gives {tmp} about {job.shared_node_tmp_gb} GB, whatever the",
                cite("job's memory (in KiB); jobs with whole nodes (--exclusive) are limited by their memory. [AIG-04]"))),
            Value("prestage_shared_tmp", f"{part} gives jobs on a shared node about {job.shared_node_tmp_gb} GB of {tmp}"),
        ]
    else:
        items += [Value("prestage_shared_tmp_kb", "", ("(No limit of its own for jobs on a shared node.)",)),
                  Value("prestage_shared_tmp", "")]
    fix = f"use whole nodes (gpus_per_node={site.gpus_per_node}, --exclusive), " if job.shared_node_tmp_gb else ""
    train = pd.job.shapes.get("train")
    if train is not None and train.memory.form == "follows-gpus":
        fix += "use more GPUs per node (memory follows them)"
    else:
        fix += f"request more memory ({f'whole nodes: {job.whole_node_memory}' if job.whole_node_memory else '--mem'})"
    fix += f", shard the data, or read it from {answers.get('data_location', '')} without pre-staging"
    return items + [Value("prestage_fix", fix, ("What to do when the archive does not fit.",))]


def _venv(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    interconnect = f" and {pd.site.interconnect}" if pd.site.interconnect else ""
    stack = vendor(pd.site.gpu_vendor).stack
    return [
        Heading((f"The venv (scripts/setup-venv.sh), on top of the image's Python: the framework ({pd.framework.title}) and",
                 f"every binary package the image ships (its {stack} builds of other packages) are pinned; its pure-Python",
                 "packages may be upgraded; constraints.txt says how to move one package between the two. A generic",
                 cite(f"wheel from PyPI lacks the image's {stack}{interconnect} builds. [AIG-02]"),
                 *(("LAIF images keep their Python in a venv (/opt/venv): the project's venv sees its packages",
                    "through a .pth file.") if cite("[AIG-02]") else ()),
                 cite("--pack: one SquashFS file on the parallel file system instead of thousands. [AIG-02], [UG-stor]"))),
        Value("pip_cache", "/tmp/${USER}-pip-cache", (cite("pip's cache while it installs, off $HOME. [WS-05]"),)),
        Value("venv_framework", venv_framework(pd), (
            "The framework's packages: pinned in the venv at the image's versions, whatever constraints.txt says",
            "(the venv pins every binary package of the image too, and constraints.txt may take one of those over;",
            "pure-Python ones may be upgraded). A name the image does not ship changes nothing.")),
    ]


# What else belongs to a framework package, where an image ships it: jax's jaxlib, and the
# Triton that torch.compile generates kernels with (named as PyTorch's wheels, the
# ROCm index and source builds name it: -rocm names only on AMD GPUs).
FRAMEWORK_COMPANIONS = {"jax": ("jaxlib",), "torch": ("triton", "pytorch-triton", "pytorch-triton-rocm", "triton-rocm")}


def venv_framework(pd: PluginData) -> tuple[str, ...]:
    """The packages the venv never lets change, whatever constraints.txt says: the framework's
    pinned packages, every package whose version the catalogue gives for the image (its pins),
    those a cotainr build installs for the framework, and their FRAMEWORK_COMPANIONS."""
    cotainr = pd.container.cotainr
    built = [*cotainr.framework_packages.get(pd.framework.name, []), *cotainr.pypi_packages.get(pd.framework.name, [])] \
        if cotainr else []
    names = {*pd.framework.pinned_packages, *pd.pins, *(re.split(r"[^A-Za-z0-9._-]", p, maxsplit=1)[0] for p in built)}
    names |= {companion for name in names for companion in FRAMEWORK_COMPANIONS.get(name, ())
              if pd.site.gpu_vendor == "amd" or not companion.endswith("-rocm")}
    return tuple(sorted(names, key=str.lower))


def _attach(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    power = pd.site.gpu_power
    monitor = vendor(pd.site.gpu_vendor).monitor
    if cite("[WS-04]"):
        gpus = ("Such a step sees the job's GPUs without",
                f"asking for them: LUMI's AI workshop and course watch a running job's GCDs with {monitor}",
                cite("from a step attached this way. [WS-04], [TM-ai-E08]"))
    else:
        gpus = (f"If {monitor} in such a step shows no GPUs, the",
                "step needs them requested too (add --gpus-per-node=N below); whether an overlapping step",
                "sees them by default is UNCONFIRMED for this site.")
    return [
        Heading(("scripts/attach.sh --help: what this site's GPUs show, and what an attached step sees.",)),
        Value("gpu_power", power.text if power else "", (f"{monitor}'s power for busy GPUs ('': no figures).",)),
        Value("gpu_power_source", power.source if power else ""),
        Value("overlap_source", cite("[TM-Slurm]"), ("Where Slurm's overlapping job steps are documented for this site.",)),
        Value("attached_gpus", gpus, ("Its help's lines on whether an attached step sees the job's GPUs.",)),
    ]


def _cotainr(answers: Mapping[str, Any], pd: PluginData, cite: Callable[[str], str]) -> list[Item]:
    names = ("cotainr_image", ("cotainr_modules",), "cotainr_base_image", "cotainr_system", ("cotainr_srun",))
    c = pd.container.cotainr
    if c is None or answers.get("container") != "cotainr":
        return absent("Building the image with cotainr (container/build.sh): not in this project.", *names)
    partition = c.build_partition or pd.job.smoke_partition
    cpus = c.build_cpus or pd.site.cpus_per_gpu
    srun = [f"--account={answers.get('account', '')}", f"--partition={partition}"]
    if not c.build_partition and pd.job.smoke_qos:
        srun.append(f"--qos={pd.job.smoke_qos}")
    srun += ["--time=01:00:00", "--nodes=1", "--ntasks=1", f"--cpus-per-task={cpus}", f"--mem={c.build_mem_gb}G"]
    if c.build_partition:
        workshop = ", as the LUMI AI workshop's 2026 cotainr build asks [WS-06-2026]" if cite("[WS-06-2026]") else ""
        where = f"On {partition}, a CPU partition: the build needs no GPU ({cpus} cores, {c.build_mem_gb} GB{workshop})."
    elif c.build_mem_gb == 100 and cite("[WS-06]"):
        where = cite(f"On {partition}: {c.build_mem_gb} GB of memory, as the LUMI AI workshop's reference cotainr build asks. [WS-06]")
    else:
        where = f"On {partition}: {c.build_mem_gb} GB of memory for the build."
    return [
        Heading((cite("Building the image with cotainr (container/build.sh); cotainr stops at an \"overwrite?\" prompt "
                      "when the image exists, so the build moves it aside first. [WS-06]"),
                 cite("A bindings module left loaded by hand sets SINGULARITY_BIND, whose targets the image being built "
                      "lacks: the build starts with no bind paths. [TM-Cont]"))),
        Value("cotainr_image", pd.container.path, ("The image it builds, from the project directory.",)),
        Value("cotainr_modules", tuple(c.modules), ("What `module load` needs for cotainr.",)),
        Value("cotainr_base_image", c.base_image or "", (
            f"The base image: {c.base}.{f' [{c.source}]' if c.source else ''}",
            "BASE_IMAGE=/path/to/other.sif bash container/build.sh builds on another.") if c.base_image else ()),
        Value("cotainr_system", "" if c.base_image else (c.system or ""), (
            f"cotainr's {c.system} system: {c.base}.{f' [{c.source}]' if c.source else ''}",) if not c.base_image else ()),
        Value("cotainr_srun", tuple(srun), (where,)),
    ]
