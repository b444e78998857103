"""Helpers shared by the tests: render projects in-process, make fake plugin distributions."""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

from lumi_scaffold.testing import render_project

REPO = Path(__file__).resolve().parent.parent

# What a rendered project is checked against in the matrix and golden tests.
DEFAULTS = {"project_name": "demo", "account": "project_465000000"}


def template_copy(dest: Path) -> Path:
    """The template without its git history (renders in ~90 ms instead of a git clone each)."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "copier.yml", dest / "copier.yml")
    shutil.copytree(REPO / "project-templates", dest / "project-templates", dirs_exist_ok=True)
    return dest


def render(template: Path | str, dest: Path, **answers: Any) -> Path:
    """Render a project with ``answers`` (plus DEFAULTS) and defaults for the rest."""
    return render_project(template, dest, {**DEFAULTS, **answers})


def nested_venv(root: Path) -> Path:
    """A venv at ``root`` that sees this Python's packages (lumi-scaffold, pytest, pip, torch...);
    returns its python.

    ``--system-site-packages`` alone is not enough when the tests themselves run in a venv:
    a venv made from a venv's python sees the *base* interpreter's packages, not the outer
    venv's. So the outer venv's site directories are added by a .pth file (after the new
    venv's own, so what is installed there still wins)."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(root)], check=True)
    see_outer_packages(root)
    return root / "bin" / "python"


def see_outer_packages(venv_root: Path) -> None:
    """Make the venv at ``venv_root`` see this (virtual) environment's site directories too."""
    if sys.prefix == sys.base_prefix:
        return  # --system-site-packages already shows this interpreter's packages
    purelib = sysconfig.get_path("purelib", vars={"base": str(venv_root), "platbase": str(venv_root)})
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in site.getsitepackages())
    Path(purelib, "_lumi_scaffold_tests_outer_venv.pth").write_text(lines)


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
