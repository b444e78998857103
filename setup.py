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

import re
import shutil
import subprocess
import sys
import tempfile
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
        missing = _missing_release_tags()
        if not missing:
            made = _git("bundle", "create", str(target), "HEAD", "--tags")
        else:
            with tempfile.TemporaryDirectory() as tmp:
                made = _bundle_with_tags(Path(tmp) / "repo.git", target.resolve(), missing)
        if made.returncode:
            sys.exit(f"lumi-scaffold: error: git bundle create failed: {made.stderr.strip()}")
    elif prebuilt.is_file():
        if prebuilt.resolve() != target.resolve():
            shutil.copy2(prebuilt, target)
    else:
        sys.exit(f"lumi-scaffold: error: cannot make {BUNDLE}: {HERE} is neither a git checkout "
                 "nor an sdist that carries the bundle. Fix: build from a git clone")


# The subject of a release commit (scripts/release makes them): "Release 0.3.0", or
# "Release 0.2.0: what it holds". Its tag is v<version>.
_RELEASE_SUBJECT = re.compile(r"^Release ([0-9]+(?:\.[0-9]+)+)(?::.*)?$")


def _missing_release_tags() -> list[tuple[str, str]]:
    """(tag, commit) of each "Release X" commit whose vX tag this checkout lacks: tags do not
    travel with every copy of the repository (a CI clone, a submission)."""
    tags = set(_git("tag", "--list", "v*").stdout.split())
    found = []
    for line in _git("log", "--format=%H %s", "HEAD").stdout.splitlines():
        sha, _, subject = line.partition(" ")
        match = _RELEASE_SUBJECT.match(subject)
        if match and f"v{match.group(1)}" not in tags:
            found.append((f"v{match.group(1)}", sha))
    return found


def _bundle_with_tags(scratch: Path, target: Path, missing: list[tuple[str, str]]) -> subprocess.CompletedProcess[str]:
    """The bundle of HEAD and the tags, the missing release tags added in a scratch copy of
    the history (the checkout itself is left as it is), so that a project made from the
    wheel records a release (``_commit: v0.3.0-12-g...``), not a bare commit, and
    ``lumi-scaffold update`` finds every release to replay."""
    def git_in(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(scratch), *args], capture_output=True, text=True)

    done = subprocess.run(["git", "init", "--quiet", "--bare", str(scratch)], capture_output=True, text=True)
    if done.returncode:
        return done
    for args in (["fetch", "--quiet", "--no-tags", str(HERE), "HEAD:refs/heads/main", "+refs/tags/*:refs/tags/*"],
                 ["symbolic-ref", "HEAD", "refs/heads/main"],
                 *(["tag", tag, sha] for tag, sha in missing)):
        done = git_in(*args)
        if done.returncode:
            return done
    return git_in("bundle", "create", str(target), "HEAD", "--tags")


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
