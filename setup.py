"""Ships the Copier template inside the wheel, twice.

- ``lumi_scaffold/_template/``: the template files. Plugin authors test against them
  (``lumi_scaffold.testing.template_source``) with lumi-scaffold installed from an index.
- ``lumi_scaffold/_template.bundle``: the template's git history (HEAD and the release
  tags) as a git bundle, which Copier reads as a repository. ``lumi-scaffold new`` renders
  from it and ``lumi-scaffold update`` replays a project's recorded version from it
  (lumi_scaffold/bundle.py, docs/updating.md).

The bundle is made from the git checkout the build runs in; an sdist carries it (made when
the sdist is), so a wheel built from an sdist has the same one. The template stays at the
repository root, where Copier wants it. Editable installs use the checkout, so nothing is
copied for them. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
BUNDLE = Path("lumi_scaffold") / "_template.bundle"


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True)
    except OSError as exc:  # no git at all
        return subprocess.CompletedProcess(["git", *args], 127, "", str(exc))


def _is_checkout() -> bool:
    top = _git("rev-parse", "--show-toplevel")
    return top.returncode == 0 and Path(top.stdout.strip()).resolve() == HERE


def write_bundle(target: Path) -> None:
    """The template's history as a git bundle at ``target``: from the checkout, else the
    bundle an sdist carries."""
    target.parent.mkdir(parents=True, exist_ok=True)
    prebuilt = HERE / BUNDLE
    if _is_checkout():
        if _git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
            sys.exit("lumi-scaffold: error: a shallow clone cannot bundle the template's history. "
                     "Fix: git fetch --unshallow --tags, then build again")
        if _git("status", "--porcelain", "--", "copier.yml", "project-templates").stdout.strip():
            print("lumi-scaffold: warning: uncommitted template changes are not in the bundle "
                  "(lumi-scaffold new renders the last commit); commit them first", file=sys.stderr)
        target.unlink(missing_ok=True)
        made = _git("bundle", "create", str(target), "HEAD", "--tags")
        if made.returncode:
            sys.exit(f"lumi-scaffold: error: git bundle create failed: {made.stderr.strip()}")
    elif prebuilt.is_file():
        if prebuilt.resolve() != target.resolve():
            shutil.copy2(prebuilt, target)
    else:
        sys.exit(f"lumi-scaffold: error: cannot make {BUNDLE}: {HERE} is neither a git checkout "
                 "nor an sdist that carries the bundle. Fix: build from a git clone")


class BuildPyWithTemplate(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "lumi_scaffold" / "_template"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        shutil.copy2(HERE / "copier.yml", target / "copier.yml")
        shutil.copytree(HERE / "project-templates", target / "project-templates",
                        ignore=shutil.ignore_patterns("__pycache__", "*.py[co]"))
        write_bundle(Path(self.build_lib) / BUNDLE)


class SdistWithBundle(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        write_bundle(Path(base_dir) / BUNDLE)


setup(cmdclass={"build_py": BuildPyWithTemplate, "sdist": SdistWithBundle})
