"""`lumi-scaffold doctor`: what would stop a project's jobs, checked before they queue.

Besides lint (bash -n, shellcheck, #SBATCH headers against the partition's limits in the
catalogue installed now) and the update notices, it asks Slurm itself: ``sbatch
--test-only`` on every job file, where ``sbatch`` is on PATH (a login node). Slurm then
checks the account, partition, QOS and limits as they are today, without queueing anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SbatchCheck", "SlurmUnreachable", "sbatch_test_only", "venv_files"]


@dataclass
class SbatchCheck:
    job: str
    ok: bool
    message: str


def find_sbatch() -> str | None:
    return shutil.which("sbatch")


class SlurmUnreachable(Exception):
    """sbatch is installed but no Slurm controller answers (not a login node of a cluster)."""


def _env() -> dict[str, str]:
    # The job's own SLURM_* variables (doctor run inside an allocation) would change what
    # sbatch checks; SLURM_CONF says which cluster.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    return env | ({"SLURM_CONF": os.environ["SLURM_CONF"]} if "SLURM_CONF" in os.environ else {})


def _ping(sbatch: str, timeout: float) -> None:
    """Raise SlurmUnreachable unless the controller answers ``scontrol ping``."""
    scontrol = Path(sbatch).with_name("scontrol")
    exe = str(scontrol) if scontrol.exists() else shutil.which("scontrol")
    if exe is None:
        return  # sbatch's own messages will say
    try:
        result = subprocess.run([exe, "ping"], capture_output=True, text=True, timeout=timeout, env=_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmUnreachable(str(exc)) from None
    if result.returncode != 0 or "UP" not in result.stdout:
        raise SlurmUnreachable(" ".join((result.stderr + result.stdout).split()) or f"exit status {result.returncode}")


def sbatch_test_only(project: Path, sbatch: str | None = None, timeout: float = 60) -> list[SbatchCheck] | None:
    """``sbatch --test-only`` on each jobs/*.sbatch, run from the project directory as the
    README submits them; None when there is no sbatch on PATH, SlurmUnreachable when no
    controller answers."""
    exe = sbatch or find_sbatch()
    if exe is None:
        return None
    _ping(exe, timeout)
    checks = []
    env = _env()
    for path in sorted((project / "jobs").glob("*.sbatch")):
        rel = str(path.relative_to(project))
        try:
            result = subprocess.run([exe, "--test-only", rel], cwd=project, capture_output=True, text=True,
                                    timeout=timeout, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            checks.append(SbatchCheck(rel, False, f"sbatch could not run: {exc}"))
            continue
        text = " ".join((result.stderr + result.stdout).split()) or f"exit status {result.returncode}"
        checks.append(SbatchCheck(rel, result.returncode == 0, text))
    return checks


def venv_files(project: Path) -> int | None:
    """How many files the project's venv (scripts/setup-venv.sh) holds; None without one.
    Each is a file for the parallel file system's metadata servers to find at every job
    start, and counts against the file quota."""
    venv = project / "venv"
    if not venv.is_dir():
        return None
    return sum(len(files) for _, _, files in os.walk(venv))

