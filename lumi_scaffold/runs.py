"""`lumi-scaffold explain --runs`: a project's runs, from the reports its jobs wrote.

Rank 0 of every training and profiling job writes ``reports/<job id>.json`` into its run
directory (the generated ``scripts/lib/python/runlog.py``): steps, throughput, step times, the
share spent waiting for data, and GPU-hours billed by the site's rule. The generated
project's ``scripts/lib/reports.py`` reads them back (its ``scripts/sweep.py summary`` too):
this loads that file from the template of this installation (:func:`project_reports`) and
prints one row per job and one total per run, with what `lumi-scaffold explain` estimated for
a job of its kind beside what it measured (billed GPU-hours, energy); nothing else (no
tracker, no Slurm) is needed. Steps a job's script did not report (it never used runlog.py)
show as "not reported", the energy of nodes without counters as "not measured".
"""

from __future__ import annotations

import getpass
import os
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import UserMessageError

__all__ = ["output_root", "project_reports", "read_runs", "format_runs"]

# The reader, as every generated project has it (the one source of both).
REPORTS = Path("project-templates", "project", "scripts", "lib", "reports.py")


@lru_cache(maxsize=None)
def project_reports() -> ModuleType:
    """The template's ``scripts/lib/reports.py``, loaded as a module (standard library only)."""
    from .bundle import template_module, template_root

    root = template_root()
    if root is None:
        raise UserMessageError("this lumi_scaffold has no template (neither a source checkout nor a wheel), and "
                               "with it no scripts/lib/reports.py to read job reports with. Fix: reinstall lumi-scaffold")
    return template_module("lumi_scaffold._project_reports", root / REPORTS)


def output_root(recorded: str, given: str | None = None) -> Path:
    """Where the project's runs are: ``given`` (--output-root), else $OUTPUT_ROOT as the jobs
    read it, else the recorded root with its variables ($USER) expanded."""
    if not given and not os.environ.get("OUTPUT_ROOT") and "USER" not in os.environ:
        os.environ["USER"] = getpass.getuser()  # (as job-env.sh sets it)
    root = given or os.environ.get("OUTPUT_ROOT") or os.path.expandvars(recorded)
    if "$" in root:
        raise UserMessageError(f"output root {recorded!r}: a variable in it is not set here. Fix: "
                               "lumi-scaffold explain --runs --output-root DIR")
    return Path(root)


def read_runs(root: Path) -> list[dict[str, Any]]:
    """Every run under ``root`` with reports: its jobs (oldest first) and totals."""
    runs: list[dict[str, Any]] = project_reports().runs(root)
    return runs


def format_runs(root: Path, runs: list[dict[str, Any]], estimates: dict[str, str] | None = None,
                energy: str = "") -> str:
    """The runs as text; ``estimates``: what `lumi-scaffold explain` estimates for a job of
    each kind before it runs (billed at its time limit), shown beside what it measured, and
    ``energy``, what it says of the energy."""
    if not runs:
        return f"No job reports under {root} yet: each training job writes one into its run directory (reports/)."
    reports = project_reports()
    fmt, unknown = reports.number, reports.NOT_REPORTED
    estimates = estimates or {}
    head = ("job", "kind", "ended", "steps", "samples/s", "per GPU", "step p50", "p95", "data wait", "billed",
            "estimated", "per 1k steps", "energy", "nodes")
    lines = [f"Runs in {root}:"]
    for run in runs:
        lines.append("")
        sweep = f" (sweep {run['sweep']})" if run["sweep"] else ""
        # Steps a script without runlog.py did not report are "not reported", never 0.
        trained = f"steps trained: {unknown}" if run["steps"] is None else f"{run['steps']} steps trained"
        if run["steps"] is not None and run["unreported"]:
            trained += f" (and {run['unreported']} job(s) whose steps are {unknown})"
        last = f"last step {unknown}" if run["last_step"] is None else f"step {run['last_step']}"
        lines.append(f"{run['run']}{sweep}: {len(run['jobs'])} job(s), {last}, "
                     f"{trained}, {fmt(run['billed'])} {run['unit']} billed ({fmt(run['per_1000_steps'])} per 1,000 steps), "
                     f"energy {_energy(reports, run)}, "
                     f"loss {fmt(run['loss']['last'], '.4g')} (best {fmt(run['loss']['best'], '.4g')})")
        rows = [head]
        for r in run["jobs"]:
            s, t, b = r["steps"], r.get("step_time_s") or {}, r.get("billing") or {}
            wait = r.get("data_wait_share")
            steps = unknown if s.get("done") is None else f"{s.get('first')}-{s.get('last')}" if s["done"] else "-"
            rows.append((str(r.get("job", "")), str(r.get("kind", "")), str(r.get("ended", "")), steps,
                         fmt(r.get("samples_per_s"), ".1f"), fmt(r.get("samples_per_s_per_gpu"), ".1f"),
                         fmt(t.get("p50"), ".3f"), fmt(t.get("p95"), ".3f"),
                         "-" if wait is None else f"{100 * wait:.0f}%", fmt(b.get("billed"), ".3f"),
                         estimates.get(str(r.get("kind", "")), "-"), fmt(b.get("per_1000_steps"), ".3f"),
                         reports.kwh(reports.energy_kwh(r)), str(r.get("nodes", ""))))
        widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
        lines += ["  " + "  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    if estimates:
        lines += ["", "estimated: what `lumi-scaffold explain` gives before a job of that kind runs, billed at its time limit"]
    if energy:
        lines.append(f"energy estimated: {energy}")
    return "\n".join(lines)


def _energy(reports: ModuleType, run: dict[str, Any]) -> str:
    """A run's energy: the jobs' that measured it, and how many did not (never 0 for those)."""
    text = reports.kwh(run.get("energy_kwh"))
    missing = run.get("energy_not_measured", len(run["jobs"]))
    if run.get("energy_kwh") is not None and missing:
        text += f" (and {missing} job(s) {reports.NOT_MEASURED})"
    return text
