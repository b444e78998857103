"""Helpers shared by the tests: render projects in-process, make fake plugin distributions."""

from __future__ import annotations

import contextlib
import importlib.util
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lumi_scaffold.testing import render_project

REPO = Path(__file__).resolve().parent.parent

# The project template as it is copied (files without .jinja are copied as they are).
PROJECT = REPO / "project-templates" / "project"

# What a rendered project is checked against in the matrix and golden tests.
DEFAULTS = {"project_name": "demo", "account": "project_465000000"}


def need_module(name: str, reason: str, *, required: bool = False) -> None:
    """Skip the test (at module level: the module) when the Python package ``name`` is not
    installed; where ``required`` (CI installs it), raise ModuleNotFoundError instead: the run
    fails. find_spec, not import: only the jobs' ranks use the frameworks, and a test worker
    that imported torch would spend ~2.5 CPU-s on it (JAX ~1 s, DeepSpeed more)."""
    if importlib.util.find_spec(name) is None:
        if required:
            raise ModuleNotFoundError(f"No module named {name!r}: {reason}", name=name)
        pytest.skip(reason, allow_module_level=True)


def template_copy(dest: Path) -> Path:
    """This checkout's template without its git history (renders in ~90 ms instead of a git
    clone each)."""
    from lumi_scaffold.testing import template_source

    return template_source(dest, root=REPO)


def render(template: Path | str, dest: Path, **answers: Any) -> Path:
    """Render a project with ``answers`` (plus DEFAULTS) and defaults for the rest. The
    repository renders as checked out (HEAD and uncommitted changes), never its newest tag,
    which a checkout with the release tags would give (a CI clone has none). A fresh
    destination outside git renders through the matrix's Copier shortcuts (the same bytes:
    tests/test_render.py::test_copier_shortcuts_change_nothing), without the ~50 `git
    config` processes plain Copier starts for a project's files."""
    dest = Path(dest)
    fresh = not (dest.exists() and any(dest.iterdir())) and not _in_git(dest)
    with _shortcuts() if fresh else contextlib.nullcontext():
        return render_project(template, dest, {**DEFAULTS, **answers},
                              vcs_ref="HEAD" if Path(template).resolve() == REPO else None)


def _shortcuts():
    from .copier_shortcuts import copier_shortcuts

    return copier_shortcuts()


def _in_git(path: Path) -> bool:
    return any((parent / ".git").exists() for parent in path.resolve().parents)


def load_module(name: str, path: Path) -> ModuleType:
    """A Python file of the template (a runtime helper, or a module of the project's own
    tests/: pytest and the standard library only) as module ``name``."""
    from lumi_scaffold.bundle import template_module

    return template_module(name, path)


def read_tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def write_plugin_dist(site_dir: Path, dist: str, entry_points: dict[str, str], modules: dict[str, str], version: str = "1.0") -> None:
    """A fake installed distribution: a .dist-info with entry points plus module files."""
    info = site_dir / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    eps = "\n".join(f"{name} = {target}" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[lumi_scaffold]\n{eps}\n")
    for name, source in modules.items():
        (site_dir / f"{name}.py").write_text(textwrap.dedent(source))



def values(project: Path) -> dict[str, Any]:
    """A rendered project's scripts/values.sh as its jobs read it (lumi_scaffold.testing.project_values)."""
    from lumi_scaffold.testing import project_values

    return project_values(project)


def site_plugin(name: str, site: Any, *images: Any) -> tuple[str, Any]:
    """A test plugin ``name`` that registers ``site`` (a Site) and ``images`` (ContainerImages),
    for lumi_scaffold.testing.plugin_catalogue."""
    from types import SimpleNamespace

    from lumi_scaffold import hookimpl

    @hookimpl
    def register_sites(register):
        register(site)

    @hookimpl
    def register_containers(register):
        for image in images:
            register(image)

    return name, SimpleNamespace(register_sites=register_sites, register_containers=register_containers)
