"""Test helpers for lumi-scaffold and for plugin authors.

``answer_matrix`` lists every combination of the choice answers a catalogue allows
(site, framework, container, launcher, data location, pre-staging, profiler, partition
with a job shape that fits it); ``render_project`` renders one in-process;
``lint_projects`` runs bash -n and shellcheck once over the distinct shell files of many
projects, so a full matrix stays affordable.
"""

from __future__ import annotations

import hashlib
import itertools
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from .lint import bash_syntax, check_headers, shell_files, shellcheck
from .models import Site
from .plugins import Catalogue, get_catalogue

__all__ = ["answer_matrix", "job_shapes", "lint_projects", "render_many", "render_project", "template_source"]

REPO_ROOT = Path(__file__).resolve().parent.parent


def template_source(dest: Path | None = None) -> Path:
    """A copy of the template without git history (renders faster than a git source)."""
    dest = Path(dest or tempfile.mkdtemp(prefix="lumi-template-"))
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO_ROOT / "copier.yml", dest / "copier.yml")
    shutil.copytree(REPO_ROOT / "project-templates", dest / "project-templates", dirs_exist_ok=True)
    return dest


def job_shapes(site: Site) -> list[tuple[str, int, int]]:
    """(partition, nodes, gpus_per_node): one shape per partition that fits it, plus whole
    single nodes on the partial-node partition (which adds --exclusive)."""
    full = site.node.gpus
    shapes = []
    for part in site.partitions:
        if part.allocation == "whole-node":
            shapes.append((part.name, min(2, part.max_nodes), full))
        else:
            shapes.append((part.name, 1, min(2, full)))
    shapes.append((site.partial_node_partition, 1, full))
    return shapes


def answer_matrix(cat: Catalogue | None = None, *, sites: Iterable[str] | None = None,
                  frameworks: Iterable[str] | None = None, **fixed: Any) -> Iterator[dict[str, Any]]:
    """Every combination of the choice answers for the given sites and frameworks."""
    cat = cat or get_catalogue()
    for site_name in sites or list(cat.sites):
        site = cat.sites[site_name]
        for fw_name in frameworks or cat.frameworks_for(site_name):
            if fw_name not in cat.frameworks_for(site_name):
                continue
            fw = cat.frameworks[fw_name]
            containers = ["recommended", *(c.id for c in cat.images(site_name, fw_name)), "custom", "cotainr"]
            areas = [s.name for s in site.storage if s.data]
            for container, launcher, area, prestage, profiler, shape in itertools.product(
                containers, fw.launchers, areas, (False, True), fw.profilers, job_shapes(site)
            ):
                partition, nodes, gpus = shape
                answers = {
                    "project_name": "demo",
                    "site": site_name,
                    "account": site.account.example,
                    "framework": fw_name,
                    "container": container,
                    "nodes": nodes,
                    "gpus_per_node": gpus,
                    "partition": partition,
                    "launcher": launcher,
                    "data_location": area,
                    "prestage": prestage,
                    "profiler": profiler,
                }
                if container == "custom":
                    answers["container_path"] = "/project/containers/custom.sif"
                if profiler != "none":
                    answers["profile_rank"] = nodes * gpus - 1
                yield {**answers, **fixed}


def render_project(template: Path | str, dest: Path, answers: dict[str, Any]) -> Path:
    """Render one project in-process with ``answers`` and defaults for the rest."""
    import copier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copier.run_copy(str(template), str(dest), data=answers, defaults=True, unsafe=True, quiet=True,
                        settings=copier.Settings())
    return Path(dest)


def _render_chunk(job: tuple[str, list[tuple[str, dict[str, Any]]]]) -> list[tuple[str, str]]:
    template, items = job
    failures = []
    for dest, answers in items:
        try:
            render_project(template, Path(dest), answers)
        except Exception as exc:  # reported per combination
            failures.append((dest, f"{type(exc).__name__}: {exc}"))
    return failures


def render_many(template: Path, root: Path, matrix: list[dict[str, Any]], workers: int = 2) -> list[tuple[str, str]]:
    """Render each answer set into root/<index>; returns (dest, error) for failures."""
    items = [(str(root / f"{i:05d}"), answers) for i, answers in enumerate(matrix)]
    chunks = [(str(template), items[i::workers]) for i in range(workers)]
    if workers == 1:
        return _render_chunk(chunks[0])
    with ProcessPoolExecutor(workers) as pool:
        return [f for result in pool.map(_render_chunk, chunks) for f in result]


def lint_projects(projects: Iterable[Path], cat: Catalogue | None = None, workers: int = 2) -> list[str]:
    """bash -n + shellcheck on each distinct shell file, #SBATCH checks on every project."""
    cat = cat or get_catalogue()
    unique: dict[str, Path] = {}
    problems: list[str] = []
    for project in projects:
        for path in shell_files(project):
            unique.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), path)
        answers = (project / ".copier-answers.yml").read_text()
        site = next(line.split(": ", 1)[1] for line in answers.splitlines() if line.startswith("site: "))
        problems += [f"{project}: {p}" for p in check_headers(project, site, cat)]
    files = sorted(unique.values())
    problems += bash_syntax(files)
    batches = [files[i::workers] for i in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        for found in pool.map(shellcheck, batches):
            problems += found
    return problems
