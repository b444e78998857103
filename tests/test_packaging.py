"""The wheel carries the template, so plugin authors can render projects with
lumi-scaffold installed from an index (lumi_scaffold.testing.template_source), and its
history as a git bundle, so `lumi-scaffold new`/`update` work from the installed package
(tests/test_install.py runs those in a fresh venv)."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from .helpers import REPO
from .wheels import git, source_clone

pytestmark = pytest.mark.slow


def _has_setuptools_68() -> bool:
    try:
        import setuptools
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 68


def build_cmd(src: Path, out: Path) -> list[str]:
    cmd = [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps", "-w", str(out), str(src)]
    if _has_setuptools_68():
        cmd.insert(4, "--no-build-isolation")  # offline and faster; else pip fetches setuptools
    return cmd


@pytest.fixture(scope="session")
def clone(tmp_path_factory) -> Path:
    return source_clone(tmp_path_factory.mktemp("src") / "lumi-scaffold")


@pytest.fixture(scope="session")
def wheel(clone, tmp_path_factory) -> Path:
    # built in a clone, so setuptools' build/ and egg-info land in the temp directory and the
    # bundle holds the working tree as its HEAD
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(build_cmd(clone, out), check=True, capture_output=True, text=True)
    return next(out.glob("lumi_scaffold-*.whl"))


def test_wheel_contains_the_template_with_modes(wheel):
    with zipfile.ZipFile(wheel) as zf:
        infos = {i.filename: i for i in zf.infolist()}
    prefix = "lumi_scaffold/_template/"
    shipped = {name[len(prefix):] for name in infos if name.startswith(prefix)}
    in_repo = {str(p.relative_to(REPO)) for p in [REPO / "copier.yml", *(REPO / "project-templates").rglob("*")]
               if p.is_file() and "__pycache__" not in p.parts}
    assert shipped == in_repo
    run_sh = infos[prefix + "project-templates/project/scripts/lib/run.sh"]
    assert (run_sh.external_attr >> 16) & stat.S_IXUSR, "shell scripts must stay executable"


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
        print((project / "scripts" / "lib" / "run.sh").stat().st_mode & 0o111 != 0, (project / "jobs" / "train.sbatch").is_file())
    """)
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run([sys.executable, "-c", script, str(target), str(tmp_path)], cwd=tmp_path, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]


def test_wheel_ships_py_typed(wheel):
    with zipfile.ZipFile(wheel) as zf:
        assert "lumi_scaffold/py.typed" in zf.namelist()


def test_wheel_carries_the_template_history_as_a_bundle(wheel, clone, tmp_path):
    with zipfile.ZipFile(wheel) as zf:
        (tmp_path / "t.bundle").write_bytes(zf.read("lumi_scaffold/_template.bundle"))
    heads = git(tmp_path, "bundle", "list-heads", str(tmp_path / "t.bundle"))
    assert f"{git(clone, 'rev-parse', 'HEAD').strip()} HEAD" in heads.splitlines()
    # The clone has no tags (tests/wheels.py, as CI's clone and a submission): the build tags
    # each "Release X" commit vX in the bundle, so a project made from the wheel records a
    # release, not a bare commit (Copier read 0.0.0.post217.dev0 from one).
    assert not git(clone, "tag", "--list").strip()
    for line in git(clone, "log", "--format=%H %s", "HEAD").splitlines():
        sha, _, subject = line.partition(" ")
        if re.match(r"Release (0\.2\.0|0\.3\.0)\b", subject):
            assert f"{sha} refs/tags/v{subject.split()[1].rstrip(':')}" in heads.splitlines()
    # Copier reads it as a repository: the HEAD template is the working tree's
    copy = tmp_path / "copy"
    git(tmp_path, "clone", "--quiet", str(tmp_path / "t.bundle"), str(copy))
    assert (copy / "copier.yml").read_bytes() == (REPO / "copier.yml").read_bytes()


def test_sdist_carries_the_bundle_and_a_wheel_built_from_it_too(clone, tmp_path):
    import tarfile

    subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path)], cwd=clone, check=True,
                   capture_output=True, text=True)
    sdist = next(tmp_path.glob("lumi_scaffold-*.tar.gz"))
    with tarfile.open(sdist) as tf:
        tf.extractall(tmp_path / "x", filter="data")
    unpacked = next((tmp_path / "x").iterdir())
    assert (unpacked / "lumi_scaffold/_template.bundle").is_file()
    subprocess.run(build_cmd(unpacked, tmp_path / "w"), check=True, capture_output=True, text=True)
    with zipfile.ZipFile(next((tmp_path / "w").glob("*.whl"))) as zf:
        assert zf.read("lumi_scaffold/_template.bundle") == (unpacked / "lumi_scaffold/_template.bundle").read_bytes()


def test_a_build_without_history_or_bundle_says_so_in_one_line(clone, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(clone, src, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info"))
    result = subprocess.run(build_cmd(src, tmp_path / "w"), capture_output=True, text=True)
    assert result.returncode != 0
    assert "is neither a git checkout nor an sdist that carries the bundle. Fix: build from a git clone" in result.stderr + result.stdout
