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
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import SlurmUnreachable

if TYPE_CHECKING:
    from .plugin_data import ContainerFacts, PluginData

__all__ = ["SbatchCheck", "SlurmUnreachable", "home_notice", "image_check", "library_changes", "observed_image_check",
           "sbatch_test_only", "sweep_note",
           "storage_checks", "venv_files",
           "venv_pack_notes"]


def home_notice(project: Path, data: PluginData | None) -> str | None:
    """A warning when the project sits under $HOME, where its venv and logs would
    fill the home quota; it names the site's area for projects where the site gives one
    (``data``: None where the project's plugin_data does not validate)."""
    home = Path.home().resolve()
    if project.resolve() != home and home not in project.resolve().parents:
        return None
    area, home_area = (data.project_area, data.home_area) if data else (None, None)
    quota = f" ({home_area.note.rstrip('.')})" if home_area and home_area.note else ""
    where = f"{area.path} ({area.name})" if area else "a project or scratch area"
    return (f"{project} is under your home directory {home}{quota}: its venv and logs/ grow there. "
            f"Fix: commit it and git clone it into {where}, then create the venv there")


def library_changes(project: Path) -> list[str]:
    """The template's library files (scripts/lib/, and the commands in scripts/) that differ
    from what the template wrote, or are gone: a change there is not the user's to keep
    (lumi-scaffold update rewrites those files; an edit survives only where it merges)."""
    from .lint import LIBRARY_SUMS, library_files

    return [f"{rel} {what}: it is the template's library (lumi-scaffold update rewrites it; {LIBRARY_SUMS} "
            "has what it wrote). Fix: make the change in the job file (jobs/) or scripts/values.sh, or propose "
            f"it upstream; git checkout -- {rel} (or git log -p -- {rel}) brings back or shows the template's"
            for rel, what in library_files(project).items() if what != "as written"]


def ledger_notes(project: Path) -> list[str]:
    """The project's node ledger: each node in force (scripts/lib/ledger.py list, with the
    environment jobs are submitted from: OUTPUT_ROOT and the variables values.sh names)."""
    script = project / "scripts/lib/ledger.py"
    if not script.is_file():
        return []  # (a project made before lumi-scaffold 0.5)
    try:
        done = subprocess.run([sys.executable, str(script), "list"], capture_output=True, text=True, timeout=30,
                              cwd=project)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.removeprefix("ledger: ") + f" (clear: python3 scripts/lib/ledger.py clear {line.split()[1]})"
            for line in done.stdout.splitlines() if " excluded until " in line]


@dataclass
class SbatchCheck:
    job: str
    ok: bool
    message: str


def find_sbatch() -> str | None:
    return shutil.which("sbatch")


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


def image_check(path: str, environ: dict[str, str] | None = None, container: ContainerFacts | None = None,
                project: Path | None = None) -> str | None:
    """A problem with the project's image, checked on a login node as the job will find it
    when it starts: SIF from the environment where it is set (jobs take it from the shell
    that submits them), else the recorded path (``container``: plugin_data.container), with
    its leading variable expanded (``${MYSOFTWARE}/containers/x.sif``: the variable set, and
    a file there) or relative to ``project`` (an image built by container/build.sh). None
    where all is well."""
    from ._types import path_variable

    env = os.environ if environ is None else environ
    if env.get("SIF"):
        return None if os.path.isfile(env["SIF"]) else f"no image at SIF={env['SIF']}: give the path of an image file, or unset SIF"
    name = path_variable(path)
    if name:
        value = env.get(name, "")
        if not value:
            return (f"the image is {path}, and {name} is not set here: set it (jobs take it from the shell that "
                    "submits them), or give the image with SIF=/path/to/image.sif")
        real = value + path[len(name) + 3:]
        if not os.path.isfile(real):
            return f"no image at {path} ({name}={value}, so {real}): put the image there, or set {name} or SIF=/path/to/image.sif"
        return None
    real = str((project or Path.cwd()) / path) if container and container.relative else path
    if os.path.isfile(real):
        return None
    status = container.status if container else ""
    if status == "cotainr":
        fix = "build it with bash container/build.sh (README.md)"
    elif status == "custom":
        fix = "put your image there, or lumi-scaffold update -d container_path=/path/to/your.sif"
    elif container and container.pull_from:
        fix = f"pull it there from {container.pull_from} (README.md says how)"
    else:  # an image the site keeps, moved or removed since the project was made
        fix = (f"the site no longer has {container.id if container else 'this image'} there: lumi-scaffold update "
               "-d container=recommended (the image the catalogue installed now recommends; lumi-scaffold plugins lists the others)")
    return f"no image at {path}: {fix}, or give the image with SIF=/path/to/image.sif"


def observed_image_check(data: PluginData, cat: Any) -> tuple[bool, str] | None:
    """On a login node: whether the project's image, where the catalogue has it as observed
    (seen in public job scripts, not announced by the site), is there: (found, line). None
    for any other image."""
    image = cat.containers.get(data.container.id)
    if image is None or image.status != "observed":
        return None
    path = data.container.path or image.path
    if os.path.isfile(path):
        return True, (f"image {image.id} (observed, not announced) is at {path} on this login node; "
                      "jobs/smoke-test.sbatch shows whether it runs on the GPU nodes")
    recommended = cat.recommended_image(image.site, image.framework)
    fix = f"lumi-scaffold update -d container={recommended.id} (the recommended image)" if recommended else \
        "give another image with lumi-scaffold update -d container=<id>"
    return False, f"image {image.id} (observed, not announced) is not at {path} on this login node. Fix: {fix}"


def storage_checks(answers: dict[str, Any], data: PluginData, environ: dict[str, str] | None = None) -> list[str]:
    """The variables the project's storage paths start with (a site whose scratch is
    ``${MYSCRATCH}``) that are not set here, as the jobs check them when they start
    (``answers``: the project's, for its dataset archive)."""
    from .plugin_data import storage_variables

    archive = str(answers.get("dataset_archive") or "") if answers.get("prestage") else ""
    env = os.environ if environ is None else environ
    return [f"the project's paths (data, outputs, caches or the container's binds) start with ${{{name}}}, and "
            f"{name} is not set here: set it (jobs take it from the shell that submits them)"
            for name in storage_variables(data, archive) if not env.get(name)]


def sweep_note(project: Path, data: PluginData) -> str | None:
    """Where the project's partition takes no job arrays: that its sweep job will be refused
    (sbatch --test-only passes it: the array is given only when scripts/sweep.py submits)."""
    from .values import ARRAYS, refused_here

    if data.partition.arrays or not (project / "jobs" / "sweep.sbatch").is_file():
        return None
    return (f"jobs/sweep.sbatch: {refused_here(data, ARRAYS)}; it and scripts/sweep.py refuse to run there. "
            "Fix: sweep on another partition (lumi-scaffold update -d partition=<name>)")


def venv_files(project: Path) -> int | None:
    """How many files the project's venv (scripts/setup-venv.sh) holds; None without one.
    Each is a file for the parallel file system's metadata servers to find at every job
    start, and counts against the file quota."""
    venv = project / "venv"
    if not venv.is_dir():
        return None
    return sum(len(files) for _, _, files in os.walk(venv))



def venv_pack_notes(project: Path) -> list[str]:
    """What doctor says of a packed venv (scripts/setup-venv.sh --pack): that jobs use it,
    and that it is older than requirements.txt or constraints.txt (a change not packed yet)."""
    pack = project / "venv.sqsh"
    if not pack.is_file():
        return []
    notes = [f"venv.sqsh ({pack.stat().st_size // 2**20} MiB, one file) is the venv the jobs use, bound at "
             "/user-software" + (" (venv/ is not used while it exists)" if (project / "venv").is_dir() else "")]
    newer = [name for name in ("requirements.txt", "constraints.txt")
             if (project / name).is_file() and (project / name).stat().st_mtime > pack.stat().st_mtime]
    if newer:
        notes.append(f"{' and '.join(newer)} changed after venv.sqsh was packed. Fix: bash scripts/setup-venv.sh --pack")
    return notes
