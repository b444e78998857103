"""The project's runs, read back from the reports its jobs wrote, and the trials of its sweep
files: the one reader of both, for scripts/sweep.py and `lumi-scaffold explain --runs`
(which loads this file from its own copy of the template, so that it reads the runs of a
project made by an older release too).

Rank 0 of every training and profiling job writes RUN_DIR/reports/<job id>.json
(scripts/lib/python/runlog.py): steps, throughput, step times, the share spent waiting for data,
and GPU-hours billed by the site's rule. After its step a training job completes the report
itself, or writes one for a script without runlog (scripts/lib/fault.py): wall time, GPU-hours,
the exit status and cause, and stopped_by (why it stopped; null when it finished). Nothing else (no tracker, no Slurm) is needed to
read them. Standard library only, and Python 3.6's grammar: scripts/sweep.py runs with the
login node's own python3.

    from reports import run, runs, sweep_trials
    runs(output_root)                  # every run with reports: its jobs and totals
    run(output_root + "/example-001")  # one run (None: no reports yet)
    sweep_trials(text)                 # a sweep file's trials: train.py's arguments each
"""

import json
import os
from typing import Any, Dict, List, Optional

UNIT = "GPU-hours"  # a run whose reports name no billing unit


def sweep_trials(text: str) -> List[List[str]]:
    """The trials of a sweep file's text: each line that is not empty or a comment (#),
    split into train.py's arguments at spaces (no quotes), as jobs/sweep.sbatch reads it."""
    lines = (line.strip() for line in text.split("\n"))
    return [line.split() for line in lines if line and not line.startswith("#")]


def report(path: str) -> Optional[Dict[str, Any]]:
    """One job report; None for a file that is none (or not yet: being written)."""
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("steps"), dict) else None


def _names(folder: str) -> List[str]:
    try:
        return sorted(name for name in os.listdir(folder) if not name.startswith("."))
    except OSError:
        return []


def reports(run_dir: Any) -> List[Dict[str, Any]]:
    """The job reports of a run directory, oldest first. A report being written (its
    .json.tmp) is left out: it would count its job twice."""
    folder = os.path.join(str(run_dir), "reports")
    found = [report(os.path.join(folder, name)) for name in _names(folder) if name.endswith(".json")]
    jobs = [r for r in found if r]
    jobs.sort(key=lambda r: (str(r.get("written", "")), str(r.get("job", ""))))
    return jobs


def run(run_dir: Any) -> Optional[Dict[str, Any]]:
    """A run directory's jobs (oldest first) and their totals; None without reports."""
    jobs = reports(run_dir)
    if not jobs:
        return None
    billed = [r["billing"]["billed"] for r in jobs if (r.get("billing") or {}).get("billed") is not None]
    steps = sum(int(r["steps"].get("done") or 0) for r in jobs)
    total = round(sum(billed), 4) if billed else None
    return {
        "run": os.path.basename(str(run_dir)),
        "path": str(run_dir),
        "sweep": next((r["sweep"] for r in jobs if r.get("sweep")), ""),
        "jobs": jobs,
        "last_step": max(int(r["steps"].get("last") or 0) for r in jobs),
        "steps": steps,
        "seconds": round(sum(float((r.get("seconds") or {}).get("job") or 0) for r in jobs), 1),
        "billed": total,
        "unit": next((r["billing"].get("unit") for r in jobs if r.get("billing")), "") or UNIT,
        "per_1000_steps": round(total * 1000 / steps, 4) if total is not None and steps else None,
        # why the newest job stopped (scripts/lib/fault.py; None: it finished, or its report is
        # older than lumi-scaffold 0.4 or from outside a training job)
        "stopped_by": jobs[-1].get("stopped_by"),
        "loss": {"last": (jobs[-1].get("loss") or {}).get("last"),
                 "best": min((r["loss"]["best"] for r in jobs if (r.get("loss") or {}).get("best") is not None),
                             default=None)},
    }


def runs(root: Any) -> List[Dict[str, Any]]:
    """Every run under the output root ``root`` that has reports, by name."""
    found = [run(os.path.join(str(root), name)) for name in _names(str(root))
             if os.path.isdir(os.path.join(str(root), name, "reports"))]
    return [r for r in found if r]


def number(value: Optional[float], spec: str = "g") -> str:
    """A figure of a report or a run, '-' where there is none."""
    return "-" if value is None else format(value, spec)


def duration(seconds: float) -> str:
    """h:mm:ss."""
    return "{}:{:02d}:{:02d}".format(int(seconds // 3600), int(seconds % 3600 // 60), int(seconds % 60))


if __name__ == "__main__":
    import sys

    sys.exit(__doc__.splitlines()[0] + " Import it (scripts/sweep.py summary, lumi-scaffold explain --runs).")
