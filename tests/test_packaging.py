"""The wheel carries the template, so plugin authors can render projects with
lumi-scaffold installed from an index (lumi_scaffold.testing.template_source)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from .helpers import REPO

pytestmark = pytest.mark.slow


def _has_setuptools_68() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 68


SOURCES = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "copier.yml", "lumi_scaffold", "project-templates"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # built from a copy, so setuptools' build/ and egg-info land in the temp directory
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.py[co]", "*.egg-info"))
        else:
            shutil.copy2(REPO / name, src / name)
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps", "-w", str(out), str(src)]
    if _has_setuptools_68():
        cmd.insert(4, "--no-build-isolation")  # offline and faster; else pip fetches setuptools
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return next(out.glob("lumi_scaffold-*.whl"))


def test_wheel_contains_the_template_with_modes(wheel):
    with zipfile.ZipFile(wheel) as zf:
        infos = {i.filename: i for i in zf.infolist()}
    prefix = "lumi_scaffold/_template/"
    shipped = {name[len(prefix):] for name in infos if name.startswith(prefix)}
    in_repo = {str(p.relative_to(REPO)) for p in [REPO / "copier.yml", *(REPO / "project-templates").rglob("*")]
               if p.is_file() and "__pycache__" not in p.parts}
    assert shipped == in_repo
    run_sh = infos[prefix + "project-templates/project/scripts/run.sh.jinja"]
    assert (run_sh.external_attr >> 16) & stat.S_IXUSR, "shell templates must stay executable"


def test_installed_wheel_renders_a_project(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--target", str(target), str(wheel)], check=True, capture_output=True, text=True)
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        import lumi_scaffold
        from lumi_scaffold.testing import render_project, template_root, template_source
        here = Path(lumi_scaffold.__file__).resolve().parent
        assert here.parent == Path(sys.argv[1]).resolve(), here
        assert template_root() == here / "_template", template_root()
        project = render_project(template_source(Path(sys.argv[2]) / "t"), Path(sys.argv[2]) / "p",
                                 {"project_name": "demo", "account": "project_465000000"})
        print((project / "scripts" / "run.sh").stat().st_mode & 0o111 != 0, (project / "jobs" / "train.sbatch").is_file())
    """)
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run([sys.executable, "-c", script, str(target), str(tmp_path)], cwd=tmp_path, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]


def test_wheel_ships_py_typed(wheel):
    with zipfile.ZipFile(wheel) as zf:
        assert "lumi_scaffold/py.typed" in zf.namelist()
