"""A git clone of this checkout with its uncommitted changes committed: what setup.py and
scripts/release build from (the template bundle is the clone's history, HEAD and tags)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .helpers import REPO


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def commit(repo: Path, message: str) -> None:
    git(repo, "-c", "user.name=lumi-scaffold tests", "-c", "user.email=tests@lumi-scaffold.invalid",
        "commit", "-q", "--allow-empty", "-m", message)


def source_clone(dest: Path) -> Path:
    """Clone REPO (without its tags) to ``dest`` and commit the working tree's changes there
    ("work in progress"), so builds in the clone see exactly the files being tested."""
    # --no-tags: as the repository travels (CI's clone and a submission carry no tags; scripts/release
    # restores the tags of earlier "Release X" commits), whatever tags this checkout has made.
    subprocess.run(["git", "clone", "--quiet", "--no-local", "--no-tags", str(REPO), str(dest)], check=True,
                   capture_output=True)
    status = git(REPO, "status", "--porcelain", "-z", "--untracked-files=all").split("\0")
    for entry in filter(None, status):
        rel = entry[3:]
        src, dst = REPO / rel, dest / rel
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        elif not src.exists() and dst.exists():
            dst.unlink()
    if git(dest, "status", "--porcelain"):
        git(dest, "add", "-A")
        commit(dest, "work in progress (tests/wheels.py)")
    return dest
