"""`lumi-scaffold explain --runs`: a project's runs, from the reports its jobs wrote.

Rank 0 of every training and profiling job writes ``reports/<job id>.json`` into its run
directory (the generated ``src/<package>/runlog.py``): steps, throughput, step times, the
share spent waiting for data, and GPU-hours billed by the site's rule. This reads them
back, one row per job and one total per run; nothing else (no tracker, no Slurm) is needed.
"""

from __future__ import annotations

import getpass
import json
import os
from pathlib import Path
from typing import Any

from .errors import UserMessageError

__all__ = ["output_root", "read_runs", "format_runs"]


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


def _report(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # (being written, or not a report)
    return data if isinstance(data, dict) and isinstance(data.get("steps"), dict) else None


def read_runs(root: Path) -> list[dict[str, Any]]:
    """Every run under ``root`` with reports: its jobs (oldest first) and totals."""
    runs = []
    for run_dir in sorted(p for p in root.glob("*") if (p / "reports").is_dir()):
        jobs = [r for r in (_report(p) for p in sorted((run_dir / "reports").glob("*.json"))) if r]
        if not jobs:
            continue
        jobs.sort(key=lambda r: (str(r.get("written", "")), str(r.get("job", ""))))
        billed = [r["billing"]["billed"] for r in jobs if (r.get("billing") or {}).get("billed") is not None]
        steps = sum(int(r["steps"].get("done") or 0) for r in jobs)
        total = round(sum(billed), 4) if billed else None
        runs.append({
            "run": run_dir.name,
            "path": str(run_dir),
            "sweep": next((r["sweep"] for r in jobs if r.get("sweep")), ""),
            "jobs": jobs,
            "last_step": max(int(r["steps"].get("last") or 0) for r in jobs),
            "steps": steps,
            "seconds": round(sum(float((r.get("seconds") or {}).get("job") or 0) for r in jobs), 1),
            "billed": total,
            "unit": next((r["billing"].get("unit") for r in jobs if r.get("billing")), "") or "GPU-hours",
            "per_1000_steps": round(total * 1000 / steps, 4) if total is not None and steps else None,
            "loss": {"last": (jobs[-1].get("loss") or {}).get("last"),
                     "best": min((r["loss"]["best"] for r in jobs if (r.get("loss") or {}).get("best") is not None),
                                 default=None)},
        })
    return runs


def _fmt(value: Any, spec: str = "g") -> str:
    return "-" if value is None else format(value, spec)


def format_runs(root: Path, runs: list[dict[str, Any]]) -> str:
    if not runs:
        return f"No job reports under {root} yet: each training job writes one into its run directory (reports/)."
    head = ("job", "kind", "ended", "steps", "samples/s", "per GPU", "step p50", "p95", "data wait", "billed", "per 1k steps", "nodes")
    lines = [f"Runs in {root}:"]
    for run in runs:
        lines.append("")
        sweep = f" (sweep {run['sweep']})" if run["sweep"] else ""
        lines.append(f"{run['run']}{sweep}: {len(run['jobs'])} job(s), step {run['last_step']}, {run['steps']} steps trained, "
                     f"{_fmt(run['billed'])} {run['unit']} billed ({_fmt(run['per_1000_steps'])} per 1,000 steps), "
                     f"loss {_fmt(run['loss']['last'], '.4g')} (best {_fmt(run['loss']['best'], '.4g')})")
        rows = [head]
        for r in run["jobs"]:
            s, t, b = r["steps"], r.get("step_time_s") or {}, r.get("billing") or {}
            wait = r.get("data_wait_share")
            rows.append((str(r.get("job", "")), str(r.get("kind", "")), str(r.get("ended", "")),
                         f"{s.get('first')}-{s.get('last')}" if s.get("done") else "-",
                         _fmt(r.get("samples_per_s"), ".1f"), _fmt(r.get("samples_per_s_per_gpu"), ".1f"),
                         _fmt(t.get("p50"), ".3f"), _fmt(t.get("p95"), ".3f"),
                         "-" if wait is None else f"{100 * wait:.0f}%", _fmt(b.get("billed"), ".3f"),
                         _fmt(b.get("per_1000_steps"), ".3f"), str(r.get("nodes", ""))))
        widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
        lines += ["  " + "  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)
