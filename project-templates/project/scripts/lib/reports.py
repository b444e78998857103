# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""The project's runs, read back from their job reports (scripts/lib/python/jobfiles.py owns
the format), and the trials of its sweep files: the one reader of both, for scripts/sweep.py
and `lumi-scaffold explain --runs` (which loads this file from its own copy of the template,
so that it reads the runs of a project made by an older release too). Standard library and
Python 3.6's grammar: scripts/sweep.py runs with the login node's own python3.

    runs(output_root)                  # every run with reports: its jobs and totals
    run(output_root + "/example-001")  # one run (None: no reports yet)
    sweep_trials(text)                 # a sweep file's trials: train.py's arguments each
"""

import os
import sys
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from jobfiles import NOT_MEASURED, read_report  # noqa: E402  (scripts/lib/python/jobfiles.py)

UNIT = "GPU-hours"  # a run whose reports name no billing unit
NOT_REPORTED = "not reported"  # steps a training script without runlog.py never reported


def sweep_trials(text: str) -> List[List[str]]:
    """The trials of a sweep file's text: each line that is not empty or a comment (#),
    split into train.py's arguments at spaces (no quotes), as jobs/sweep.sbatch reads it."""
    lines = (line.strip() for line in text.split("\n"))
    return [line.split() for line in lines if line and not line.startswith("#")]


def _names(folder: str) -> List[str]:
    try:
        return sorted(name for name in os.listdir(folder) if not name.startswith("."))
    except OSError:
        return []


def reports(run_dir: Any) -> List[Dict[str, Any]]:
    """The job reports of a run directory, oldest first (not one being written: its .json.tmp)."""
    folder = os.path.join(str(run_dir), "reports")
    jobs = [r for r in (read_report(os.path.join(folder, n)) for n in _names(folder) if n.endswith(".json")) if r]
    return sorted(jobs, key=lambda r: (str(r.get("written", "")), str(r.get("job", ""))))


def run(run_dir: Any) -> Optional[Dict[str, Any]]:
    """A run directory's jobs (oldest first) and their totals; None without reports. steps:
    the steps its jobs reported (None: none did); unreported: the jobs that reported none."""
    jobs = reports(run_dir)
    if not jobs:
        return None
    billed = [r["billing"]["billed"] for r in jobs if (r.get("billing") or {}).get("billed") is not None]
    done = [r["steps"]["done"] for r in jobs if r["steps"].get("done") is not None]
    last = [r["steps"]["last"] for r in jobs if r["steps"].get("last") is not None]
    total, steps = round(sum(billed), 4) if billed else None, sum(done) if done else None
    joules = [energy_kwh(r) for r in jobs]
    return {
        "run": os.path.basename(str(run_dir)),
        "path": str(run_dir),
        "sweep": next((r["sweep"] for r in jobs if r.get("sweep")), ""),
        "jobs": jobs,
        "last_step": max(last) if last else None,
        "steps": steps,
        "unreported": len(jobs) - len(done),
        "seconds": round(sum(float((r.get("seconds") or {}).get("job") or 0) for r in jobs), 1),
        "billed": total,
        "unit": next((r["billing"].get("unit") for r in jobs if r.get("billing")), "") or UNIT,
        "per_1000_steps": round(total * 1000 / steps, 4) if total is not None and steps and len(done) == len(jobs) else None,
        # the energy of the jobs whose nodes measured it (None: none did; never 0 for not measured)
        "energy_kwh": round(sum(j for j in joules if j is not None), 4) if any(j is not None for j in joules) else None,
        "energy_not_measured": sum(j is None for j in joules),
        # why the newest job stopped (scripts/lib/fault.py; None: it finished, or a report of
        # lumi-scaffold before 0.4 or from outside a training job)
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


def energy_kwh(report: Dict[str, Any]) -> Optional[float]:
    """The kWh a job's nodes used (None: not measured, or a report from before 0.5)."""
    joules = (report.get("energy") or {}).get("joules")
    return None if joules is None else round(joules / 3.6e6, 4)


def kwh(value: Optional[float]) -> str:
    """An energy figure of a report or a run (energy_kwh), "not measured" where there is none."""
    return NOT_MEASURED if value is None else "{:.3f} kWh".format(value)


def number(value: Optional[float], spec: str = "g", none: str = "-") -> str:
    """A figure of a report or a run, ``none`` where there is none."""
    return none if value is None else format(value, spec)


def duration(seconds: float) -> str:
    """h:mm:ss."""
    return "{}:{:02d}:{:02d}".format(int(seconds // 3600), int(seconds % 3600 // 60), int(seconds % 60))
