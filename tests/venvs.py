"""Virtual environments made by the tests, when the tests themselves may run in a venv.

A venv made from a venv's python sees the *base* interpreter's packages through
``--system-site-packages``, not the outer venv's (lumi-scaffold, pytest, setuptools,
torch). So, when the tests run in a venv, the outer venv's site directories are added to
nested venvs by a .pth file, after the nested venv's own, so what is installed there still
wins. Outside a venv, ``--system-site-packages`` already shows everything.

This module imports nothing from lumi_scaffold: the stand-in container Python imports it.
"""

from __future__ import annotations

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
    if not IN_VENV:
        return
    purelib = sysconfig.get_path("purelib", vars={"base": str(venv_root), "platbase": str(venv_root)})
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in site.getsitepackages())
    Path(purelib, "_lumi_scaffold_tests_outer_venv.pth").write_text(lines)


CONTAINER_PYTHON = """#!{python}
# TEST STAND-IN for the container's Python when the tests run in a virtual environment:
# this venv's Python, except that venvs made with it (`python -m venv [options] DIR...`, as
# setup-venv.sh does) also see this venv's packages, as a venv made from a container's
# conda Python sees the container's framework.
import os
import sys
from pathlib import Path

args = sys.argv[1:]
if args[:2] != ["-m", "venv"]:
    os.execv(sys.executable, [sys.executable, *args])
import subprocess

status = subprocess.call([sys.executable, *args])
if status == 0:
    sys.path.insert(0, {repo!r})
    from tests.venvs import see_outer_packages

    for arg in args[2:]:
        if not arg.startswith("-"):
            see_outer_packages(Path(arg).resolve())
sys.exit(status)
"""


def container_python(bin_dir: Path) -> str:
    """The directory holding `python` for the stand-in container: this interpreter's own, or,
    in a venv, one with a wrapper (written to ``bin_dir``) whose venvs see this venv's packages."""
    if not IN_VENV:
        return str(Path(sys.executable).parent)
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("python", "python3"):
        (bin_dir / name).write_text(CONTAINER_PYTHON.format(python=sys.executable, repo=str(REPO)))
        (bin_dir / name).chmod(0o755)
    return str(bin_dir)
