"""`lumi-scaffold explain`: what each job of a project asks for, how its ranks are bound,
and what it costs, before any of it is spent.

Everything comes from the project's recorded ``plugin_data`` (``.copier-answers.yml``):
the Slurm options the job files were written with, the site's masks, NUMA and NIC facts
for the job's partition, and the partition's billing rule. Facts the site does not give
(a NUMA map, NICs, a billing rule) are left out and said to be unknown, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import UserMessageError
from .known_issues import project_issues, shared_node_notes
from .jobs import JOB_KINDS, PRESTAGE_MEMORY_PERCENT, Shape, refusals
from .plugin_data import PluginData
from .plugins import get_catalogue
from .tracking import TRACKERS
from .values import ARRAYS, refused_here

TRACKING_HINT = "lumi-scaffold update -d tracking=<" + "|".join(t for t in TRACKERS if t != "none") + "> adds a tracker"

__all__ = ["JobReport", "explain_project", "format_report"]

@dataclass
class Rank:
    rank: int
    node: int
    local_rank: int
    gpu: int
    cpus: str
    numa: int | None = None
    nic: str | None = None


@dataclass
class JobReport:
    kind: str
    file: str
    nodes: int
    tasks_per_node: int
    ranks: int
    cpus_per_task: int
    memory: str
    time_limit: str
    billed_per_hour: float | None
    billed_at_limit: float | None
    unit: str
    rule: str
    source: str
    binding: str
    whole_node: bool
    table: list[Rank] = field(default_factory=list)
    hang: dict[str, Any] | None = None
    sweeps: list[dict[str, Any]] = field(default_factory=list)  # (sweep: the project's sweep files and their cost)
    refused: str = ""  # why the partition refuses this job ('' where it runs)
    step: str = ""  # the step line the job prints before its step starts (from a dry run)
    step_error: str = ""  # why the dry run gave no step line


# The progress watchdog's limits as a job file made before lumi-scaffold 0.5 sets them.
LIMIT_LINE = re.compile(r'^(PROGRESS_TIMEOUT|STARTUP_TIMEOUT|PHASE_TIMEOUT|OUTPUT_TIMEOUT)="\$\{\1:-(\d+)\}"$', re.M)
# What a dry run of a job file prints (scripts/lib/job.sh: make_step and watch_progress).
STEP_LINE = re.compile(r"^step: (.*)$", re.M)
# The limits a dry run prints (watch_progress): NAME=seconds each, and what stopping takes after.
WATCH_LINE = re.compile(r"^watchdog: for a time limit of .*?: (.*); then up to (\d+) s to gather evidence", re.M)
WATCH_LIMIT = re.compile(r"\b(STARTUP|PROGRESS|PHASE|OUTPUT)_TIMEOUT=(\d+) s")
# After the watchdog fires in a job file made before lumi-scaffold 0.5: up to 120 s to collect
# the stacks, 60 s for the step to stop.
STOP_SECONDS = 180
# The default of job files made before lumi-scaffold 0.4, which set no PHASE_TIMEOUT.
PHASE_DEFAULT = 3600


@dataclass
class DryRun:
    """What a job file prints when it runs nothing (LUMI_SCAFFOLD_DRY_RUN=1): its step lines
    and the watchdog's limits (None: no watchdog line, or off), or why it failed."""

    steps: list[str] = field(default_factory=list)
    limits: dict[str, int] | None = None
    error: str = ""


def dry_run(project: Path, job_file: str) -> DryRun:
    """``LUMI_SCAFFOLD_DRY_RUN=1 bash JOB_FILE`` in the project, outside Slurm: the library
    builds and prints the step as the job would, and starts nothing. Projects made before
    lumi-scaffold 0.5 (no scripts/lib/job.sh) have no dry run: their limits are read from the
    job file's lines."""
    import os
    import subprocess

    path = project / job_file
    if not (project / "scripts/lib/job.sh").is_file():
        try:
            text = path.read_text()
        except OSError:
            return DryRun(error=f"no {job_file}")
        found = {name.lower(): int(value) for name, value in LIMIT_LINE.findall(text)}
        if not {"progress_timeout", "startup_timeout"} <= set(found):
            return DryRun()
        found.setdefault("phase_timeout", PHASE_DEFAULT)
        return DryRun(limits=found if found["progress_timeout"] else {"progress_timeout": 0})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SRUN_", "SINGULARITY", "APPTAINER"))}
    project = project.resolve()
    env.update(LUMI_SCAFFOLD_DRY_RUN="1", SLURM_SUBMIT_DIR=str(project), USER=env.get("USER") or "user")
    try:
        done = subprocess.run(["bash", str(path)], cwd=project, env=env, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DryRun(error=f"LUMI_SCAFFOLD_DRY_RUN=1 bash {job_file}: {exc}")
    out = done.stdout
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        return DryRun(error=f"LUMI_SCAFFOLD_DRY_RUN=1 bash {job_file} failed (status {done.returncode}): {last}")
    limits: dict[str, int] | None = None
    if (m := WATCH_LINE.search(out)):
        limits = {f"{name.lower()}_timeout": int(seconds) for name, seconds in WATCH_LIMIT.findall(m.group(1))}
        limits["stop"] = int(m.group(2))
    elif "watchdog: off" in out:
        limits = {"progress_timeout": 0}
    return DryRun(steps=STEP_LINE.findall(out), limits=limits)


def _late(progress: int) -> int:
    """How long past its limit the watchdog may notice a hang, as scripts/lib/job.sh
    (watch_progress) starts it: the heartbeat files' slack (their rewrite interval,
    max(10 s, PROGRESS_TIMEOUT/20), a third of a limit under 30 s, plus 2 s) and one look of
    scripts/lib/watchdog.py (every 1 s under a 10-s limit, else 5 s)."""
    interval = max(progress // 20, 10) if progress >= 30 else max(progress // 3, 1)
    return interval + 2 + (1 if progress < 10 else 5)


# The watchdog's limits as explain's table names them: when each applies.
HANG_ROWS = (("startup_timeout", "STARTUP_TIMEOUT", "before the first heartbeat"),
             ("progress_timeout", "PROGRESS_TIMEOUT", "between heartbeats"),
             ("phase_timeout", "PHASE_TIMEOUT", "in a phase the command declared"),
             ("output_timeout", "OUTPUT_TIMEOUT", "a command without heartbeats, no output"))


def _hang(run: DryRun, per_hour: float | None, at_limit: float | None, unit: str) -> dict[str, Any]:
    """What a hang (a collective that never returns) costs at worst, by the limit that applies
    where it happens, and without the watchdog (the whole time limit). A command that imports
    heartbeat.py (the examples do) is judged by STARTUP_TIMEOUT before its first heartbeat,
    PROGRESS_TIMEOUT after, PHASE_TIMEOUT in a phase, and the watchdog notices a hang late by
    the heartbeat files' slack and one look; any other command by OUTPUT_TIMEOUT and one look.
    Then the time to gather evidence and stop the step (the dry run says how long)."""
    limits = run.limits or {}
    progress = limits.get("progress_timeout", 0)
    if not progress:
        return {"watchdog": False, "without": at_limit, "with": None, "unit": unit,
                **({"progress_timeout": 0} if run.limits is not None else {})}
    late, stop = _late(progress), limits.get("stop", STOP_SECONDS)
    look = 1 if progress < 10 else 5

    def cost(seconds: int) -> tuple[float | None, bool]:
        if per_hour is None:
            return None, False
        billed = round(per_hour * seconds / 3600, 4)
        # A time limit shorter than the watchdog's allowance ends a hang first (the profile job's).
        return (at_limit, True) if at_limit is not None and billed >= at_limit else (billed, False)

    rows: list[dict[str, Any]] = []
    for key, name, when in HANG_ROWS:
        if key not in limits or not limits[key]:
            continue
        seconds = limits[key] + (look if key == "output_timeout" else late) + stop
        billed, limit_first = cost(seconds)
        rows.append({"limit": name, "when": when, "timeout": limits[key], "seconds": seconds, "cost": billed,
                     "limit_first": limit_first})
    beating = [r for r in rows if r["limit"] != "OUTPUT_TIMEOUT"]
    worst = max(beating, key=lambda r: r["seconds"])
    output = next((r for r in rows if r["limit"] == "OUTPUT_TIMEOUT"), None)
    return {"watchdog": True, **{key: limits.get(key) for key, _, _ in HANG_ROWS}, "late": late, "stop": stop,
            "seconds": worst["seconds"], "without": at_limit, "with": worst["cost"], "limit_first": worst["limit_first"],
            "unit": unit, "output_seconds": output and output["seconds"], "with_output": output and output["cost"],
            "output_limit_first": bool(output and output["limit_first"]), "rows": rows}


def _refused(data: PluginData, shape: Shape) -> str:
    """Why the partition, as the site's data has it now, refuses the job's nodes or time limit
    (the questionnaire's rules, lumi_scaffold.jobs.refusals; a project made before a rule, or
    whose site data changed since): '' where it fits or the site is not installed."""
    site = get_catalogue().sites.get(data.site.name)
    part = site.partition(data.partition.name) if site else None
    if site is None or part is None:
        return ""
    found = [r for r in refusals(site, part, nodes=shape.nodes, gpus=shape.gpus_per_node, time=shape.time)
             if r.answer in ("nodes", "walltime")]
    return "; ".join(f"Slurm will refuse it: {r.fix()}" for r in found)


def _cores(mask: str) -> str:
    """A hex CPU mask as core ranges: 0x00fe -> '1-7'."""
    bits = int(mask, 16)
    cores = [i for i in range(bits.bit_length()) if bits >> i & 1]
    ranges: list[str] = []
    for core in cores:
        if ranges and core == int(ranges[-1].split("-")[-1]) + 1:
            ranges[-1] = f"{ranges[-1].split('-')[0]}-{core}"
        else:
            ranges.append(str(core))
    return ",".join(ranges)


# What each binding (lumi_scaffold.jobs.binding) means for a job's ranks.
BINDINGS = {
    "masks": "srun binds each rank to its GPU's cores (--cpu-bind=mask_cpu, the site's masks)",
    "slurm": "one task per GPU, placed by Slurm (no masks on part of a node)",
    "torchrun-numa": "torchrun binds each worker to cores of its own on its GPU's NUMA node, shared with no other worker "
                     "(--numa-binding={})",
    "torchrun-shared-node": "torchrun's workers are not bound to cores",
    "torchrun-own-image": "torchrun's workers are not bound to cores",
    "torchrun-image": "torchrun's workers are not bound to cores",
}


def _binding(data: PluginData, shape: Shape) -> str:
    if shape.binding == "slurm" and shape.ranks == 1:
        return f"one task on one GPU with {shape.cpus_per_task} cores, placed by Slurm"
    return BINDINGS[shape.binding].format(data.job.torchrun_binding)


def _nic_groups(data: PluginData) -> tuple[list[str], str]:
    """Where the site's data names no interface per GPU: which GPUs share each GPU's NIC
    ('GPUs 0,1'), and the site's line on its NICs, from the catalogue installed now."""
    site = get_catalogue().sites.get(data.site.name)
    node = site.node_of(data.partition.name) if site else None
    if node is None or not node.gpu_nic_group or data.site.gpu_nic:
        return [], ""
    groups = node.gpu_nic_group
    shared = [f"GPUs {','.join(str(g) for g, n in enumerate(groups) if n == group)}" for group in groups]
    note = node.nic_note
    return shared, (f"{note.text} [{note.source}]" if note.source else note.text) if note else ""


def _table(data: PluginData, shape: Shape) -> list[Rank]:
    site = data.site
    shared, _ = _nic_groups(data)
    masks = site.cpu_masks if shape.binding == "masks" else []
    gpus = shape.gpus_per_node
    rows = []
    for rank in range(shape.nodes * gpus):
        local = rank % gpus
        if masks:
            cpus = _cores(masks[local])
        elif shape.binding == "torchrun-numa" and site.gpu_numa:
            cpus = f"its own share of NUMA {site.gpu_numa[local]}"
        else:
            cpus = f"{shape.cpus_per_task // shape.ranks_per_task} placed by Slurm"
        # Which physical GPU a job gets is known on whole nodes only (local rank i -> GPU i).
        whole = shape.whole_node
        rows.append(Rank(rank=rank, node=rank // gpus, local_rank=local, gpu=local, cpus=cpus,
                         numa=site.gpu_numa[local] if site.gpu_numa and whole else None,
                         nic=(site.gpu_nic[local] if site.gpu_nic else shared[local] if shared else None) if whole else None))
    return rows


def read_project(project: Path) -> tuple[dict[str, Any], PluginData]:
    from .answers import read_answers, recorded_plugin_data

    answers = read_answers(project)
    data = recorded_plugin_data(project, answers)
    if not data.job.slurm:
        raise UserMessageError(f"{project} was made before lumi-scaffold 0.3 (plugin_data schema {data.schema_}), which did "
                               "not record its jobs' options. Fix: lumi-scaffold update the project first.")
    return answers, data


def explain_project(project: Path | str) -> dict[str, Any]:
    """Every job of the project (smoke test, training, profiling when it has one) and the
    interactive allocation, as plain data (the --json output)."""
    project = Path(project)
    answers, data = read_project(project)
    jobs, runs = [], {}
    for name, kind in JOB_KINDS.items():
        shape = data.job.shapes.get(name)
        if shape is None or (kind.optional and not (project / kind.file).is_file()):
            continue  # a kind run with another's shape, or removed by hand, or made by a version without it
        cost = data.job.cost.get(name)
        # (each trial of a sweep runs jobs/train.sbatch; the preflight's step is its benchmark's)
        runs[name] = dry_run(project, JOB_KINDS[kind.runs_as or name].file) if name != "preflight" else DryRun()
        jobs.append(JobReport(
            kind=name, file=kind.file, nodes=shape.nodes, tasks_per_node=shape.tasks_per_node, ranks=shape.ranks,
            cpus_per_task=shape.cpus_per_task, memory=shape.memory.text, time_limit=shape.time,
            billed_per_hour=cost.per_hour if cost else None,
            billed_at_limit=cost.at_limit if cost else None, unit=cost.unit if cost else "",
            rule=cost.rule if cost else "no billing rule known for this partition", source=cost.source if cost else "",
            binding=_binding(data, shape), whole_node=shape.whole_node, table=_table(data, shape),
            hang=_hang(runs[name], cost.per_hour if cost else None, cost.at_limit if cost else None,
                       cost.unit if cost else "") if kind.watchdog else None,
            step=runs[name].steps[-1] if runs[name].steps else "", step_error=runs[name].error,
            sweeps=_sweeps(project, cost.at_limit if cost else None) if name == "sweep" else [],
            refused=refused_here(data, ARRAYS) if name == "sweep" and not data.partition.arrays else _refused(data, shape)))
    train = data.job.cost.get("train")
    return {
        "project": str(project),
        "site": data.site.display_name or data.site.name,
        "nics": _nic_groups(data)[1],
        "partition": data.partition.name,
        "jobs": [asdict(job) for job in jobs],
        "interactive": {"file": JOB_KINDS["interactive"].file, "shape": f"as {JOB_KINDS['train'].file}",
                        "billed_per_hour": train.per_hour if train else None, "unit": train.unit if train else "",
                        "rule": train.rule if train else "no billing rule known for this partition"},
        "prestage": _prestage(answers, data),
        "energy": energy_estimate(data),
        "research": _research(project, data),
        "known_issues": project_issues(data, get_catalogue()),
        "shared_node": shared_node_notes(data, get_catalogue()),
    }


def energy_estimate(data: PluginData) -> dict[str, Any]:
    """What explain can say of a job's energy before it runs: an estimate only from a sourced
    figure of the nodes' power, which no site's data gives yet; and whether the job reports
    measure it (the site's energy counters, read on every node at the job's start and end)."""
    site = data.site.display_name or data.site.name
    counters = data.site.energy_counters
    measured = (f"each job's report has the energy its nodes used, from their counters ({counters.text})" if counters
                else "the job reports say 'not measured': the site's data names no energy counters on its nodes")
    return {"estimate": None, "counters": counters.text if counters else "",
            "text": f"no estimate: the data for {site} gives no sourced figure of a node's power; {measured}"}


def _research(project: Path, data: PluginData) -> dict[str, Any] | None:
    """What the jobs leave for comparing runs: a report per job (scripts/lib/python/runlog.py;
    projects made before it have none) and the tracker they log to."""
    if not (data.package and ((project / "scripts/lib/python/runlog.py").is_file()
                              or (project / "src" / data.package / "runlog.py").is_file())):
        return None
    tracker = data.tracking
    return {
        "reports": f"{data.output_root}/<run name>/reports/<job id>.json",
        "tracking": tracker.name if tracker else "none",
        "title": TRACKERS[tracker.name if tracker else "none"].title,
        "writes": TRACKERS[tracker.name].where if tracker else "",
        "readme": f"Tracking with {tracker.title}" if tracker else "",  # the README's section: how to look at them
    }


def _sweeps(project: Path, per_trial: float | None) -> list[dict[str, Any]]:
    """The project's sweep files (sweeps/*.txt): trials (counted by scripts/lib/reports.py, as
    scripts/sweep.py counts them) and what they cost at the time limit."""
    from .runs import project_reports

    out = []
    for path in sorted((project / "sweeps").glob("*.txt")):
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        trials = len(project_reports().sweep_trials(text))
        out.append({"file": str(path.relative_to(project)), "trials": trials,
                    "at_limit": round(per_trial * trials, 4) if per_trial is not None else None})
    return out


def _prestage(answers: dict[str, Any], data: PluginData) -> dict[str, Any] | None:
    """How much node-local storage pre-staged data may fill on each node: the rule
    scripts/lib/prestage.sh checks (PRESTAGE_MEMORY_PERCENT of the job's memory, or the
    partition's limit on a shared node where that is less)."""
    if not answers.get("prestage"):
        return None
    striping = data.site.archive_striping
    archive = f"{answers.get('dataset_archive', '')}: {striping.text}{f' [{striping.source}]' if striping.source else ''}" \
        if striping else ""
    where, shared = data.site.node_local_tmp, data.job.shared_node_tmp_gb
    train, site = data.job.shapes["train"], data.site
    mem = train.memory.held_gb(train.gpus_per_node, train.whole_node, site.mem_per_node_gb, site.mem_per_gpu_gb)
    budget = mem * PRESTAGE_MEMORY_PERCENT / 100 if mem else None
    if shared and (budget is None or shared < budget):
        return {"where": where, "budget_gb": shared, "why": "the partition's limit for a job on a shared node",
                "archive": archive}
    note = f" ({data.site.node_local_tmp_note})" if data.site.node_local_tmp_note else ""
    return {"where": where, "budget_gb": budget,
            "why": f"{PRESTAGE_MEMORY_PERCENT}% of the job's memory on each node{note}; the rest is left for training",
            "archive": archive}


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _hang_lines(hang: dict[str, Any]) -> list[str]:
    """What a hang costs, by the watchdog's limit that applies where it happens: a table."""
    unit = hang["unit"] or "(no billing rule)"
    without = f"up to {_number(hang['without'])} {unit} (the whole time limit) without the watchdog"
    if not hang["watchdog"]:
        why = "PROGRESS_TIMEOUT is 0 for this job" if "progress_timeout" in hang else \
            "this job file has no progress watchdog (made before lumi-scaffold 0.3: lumi-scaffold update)"
        return [f"a hang costs {without}; {why}"]
    if "rows" not in hang:  # (a report written before lumi-scaffold 0.5)
        return [f"a hang costs {without}; with it at most {_number(hang['with'])} {unit}"]
    lines = [f"a hang costs {without}; with it, at most the limit that applies, up to {hang['late']} s to notice "
             f"(heartbeat files' delay, one look) and up to {hang['stop']} s to gather evidence and stop:"]
    cells = [[r["limit"], f"{r['timeout']} s", r["when"],
              "the time limit first" if r["limit_first"] else f"{r['seconds']} s, {_number(r['cost'])} {unit}"]
             for r in hang["rows"]]
    if hang["output_timeout"] == 0:
        cells.append(["OUTPUT_TIMEOUT", "0", "a command without heartbeats", "no limit: the time limit"])
    widths = [max(len(row[i]) for row in cells) for i in range(3)]
    return lines + ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[3] for row in cells]


def format_report(report: dict[str, Any]) -> str:
    """The text `lumi-scaffold explain` prints."""
    lines = [f"{report['project']}: {report['site']}, partition {report['partition']}", ""]
    for job in report["jobs"]:
        lines.append(f"{job['file']} ({job['kind']}): {job['nodes']} node(s) x {job['tasks_per_node']} task(s), "
                     f"{job['ranks']} rank(s), {job['cpus_per_task']} CPUs per task, memory {job['memory']}, "
                     f"time limit {job['time_limit']}")
        each = " per trial" if job["kind"] == "sweep" else ""
        if job["refused"]:
            lines.append(f"  refused: {job['refused']}")
        if job["billed_per_hour"] is None:
            lines.append(f"  billed: {job['rule']}")
        else:
            source = f" [{job['source']}]" if job["source"] else ""
            lines.append(f"  billed{each}: {_number(job['billed_at_limit'])} {job['unit']} at the time limit, "
                         f"{_number(job['billed_per_hour'])} per hour; rule: {job['rule']}{source}")
        for sweep in job["sweeps"]:
            total = f": {_number(sweep['at_limit'])} {job['unit']} at the time limit" if sweep["at_limit"] is not None else ""
            lines.append(f"  {sweep['file']}: {sweep['trials']} trial(s){total}")
        if job["step"]:
            lines.append(f"  step: {job['step']}")
        elif job["step_error"]:
            lines.append(f"  step: not known ({job['step_error']})")
        if job["hang"]:
            lines.extend("  " + line for line in _hang_lines(job["hang"]))
        lines.append(f"  binding: {job['binding']}")
        numa = any(r["numa"] is not None for r in job["table"])
        nic = any(r["nic"] is not None for r in job["table"])
        head = ["rank", "node", "local", "GPU", "CPU cores"] + (["NUMA"] if numa else []) + (["NIC"] if nic else [])
        rows = [[str(r["rank"]), str(r["node"]), str(r["local_rank"]), str(r["gpu"]), r["cpus"]]
                + ([str(r["numa"])] if numa else []) + ([str(r["nic"])] if nic else []) for r in job["table"]]
        shown = [row for row, r in zip(rows, job["table"]) if r["node"] == 0]
        widths = [max(len(x) for x in col) for col in zip(head, *shown)]
        for row in [head, *shown]:
            lines.append("  " + "  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip())
        if job["nodes"] > 1:
            lines.append(f"  (the same on each of the other {job['nodes'] - 1} node(s): ranks {len(shown)}-{len(rows) - 1}; "
                         "--json lists every rank)")
        whole = job["whole_node"]
        if not numa:
            lines.append("  NUMA nodes: " + ("not in the site's data" if whole else "depend on the GPUs Slurm gives the job"))
        if not nic:
            lines.append("  NICs per GPU: " + ("not in the site's data" if whole else "depend on the GPUs Slurm gives the job"))
        elif report.get("nics"):
            lines.append(f"  NIC: the GPUs that share the GPU's network interface; {report['nics']}")
        lines.append("")
    inter = report["interactive"]
    billed = (f"{_number(inter['billed_per_hour'])} {inter['unit']} per hour held" if inter["billed_per_hour"] is not None
              else inter["rule"])
    lines.append(f"{inter['file']}: {inter['shape']}; billed {billed}")
    if report["prestage"]:
        p = report["prestage"]
        lines.append(f"pre-staging: up to {_number(p['budget_gb'])} GB in {p['where']} per node: {p['why']}")
        if p.get("archive"):
            lines.append(f"pre-staging: {p['archive']}")
    lines.append(f"energy: {report['energy']['text']}")
    if report.get("research"):
        r = report["research"]
        lines.append(f"job reports: {r['reports']} (lumi-scaffold explain --runs lists them)")
        if r["tracking"] == "none":
            lines.append(f"tracking: none; the job reports only ({TRACKING_HINT})")
        else:
            lines.append(f"tracking: {r['title']}, one tracked run per run directory across the jobs that resume it, "
                         f"{r['writes']}; to look at them: README.md, \"{r['readme']}\"")
    lines += [f"warning: {line}" for line in report.get("known_issues", []) + report.get("shared_node", [])]
    return "\n".join(lines)
