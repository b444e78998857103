"""Virtual environments made by the tests, when the tests themselves may run in a venv.

A venv made from a venv's python sees the *base* interpreter's packages through
``--system-site-packages``, not the outer venv's (lumi-scaffold, pytest, setuptools,
torch). So, when the tests run in a venv, the outer venv's site directories are added to
nested venvs by a .pth file, after the nested venv's own, so what is installed there still
wins. Outside a venv, ``--system-site-packages`` already shows everything. (Generated
projects' scripts/setup-venv.sh solves the same problem for container images whose Python
is a venv, and needs no help from here.)
"""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

IN_VENV = sys.prefix != sys.base_prefix
REPO = Path(__file__).resolve().parent.parent


def nested_venv(root: Path) -> Path:
    """A venv at ``root`` (no pip of its own) that sees this Python's packages; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(root)], check=True)
    see_outer_packages(root)
    return root / "bin" / "python"


def see_outer_packages(venv_root: Path) -> None:
    """Make the venv at ``venv_root`` see this (virtual) environment's site directories too."""
    if IN_VENV:
        _see_these_packages(venv_root, "_lumi_scaffold_tests_outer_venv.pth")


def _see_these_packages(venv_root: Path, name: str) -> None:
    """A .pth file ``name`` in the venv at ``venv_root`` that adds this environment's site
    directories after the venv's own."""
    purelib = sysconfig.get_path("purelib", vars={"base": str(venv_root), "platbase": str(venv_root)})
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in site.getsitepackages())
    Path(purelib, name).write_text(lines)


def venv_on_a_bare_base(root: Path) -> Path:
    """A newcomer's venv: its base interpreter has none of the packages (a fresh OS Python),
    the venv itself has all of them (here: this environment's site directories, by a .pth
    file). Venvs made from it with ``--system-site-packages`` see the bare base, as on a
    newcomer's machine. The base is this interpreter's binary copied next to links to its
    standard library, with an empty site-packages. Returns the venv's python."""
    base = root / "base"
    stdlib = Path(sysconfig.get_path("stdlib", vars={"installed_base": sys.base_prefix, "base": sys.base_prefix}))
    lib = base / "lib" / stdlib.name
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "dist-packages"):
            (lib / entry.name).symlink_to(entry)
    (lib / "site-packages").mkdir()
    (base / "bin").mkdir()
    python = base / "bin" / "python3"
    shutil.copy2(Path(getattr(sys, "_base_executable", sys.executable)).resolve(), python)
    venv = root / "venv"
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(venv)], check=True)
    _see_these_packages(venv, "_lumi_scaffold_tests_venv_packages.pth")
    return venv / "bin" / "python"
