"""The suite's memo of shellcheck runs (tests/conftest.py installs it for every test).

Most tests lint or `doctor` a freshly rendered default project, and a few lint one project
several times; shellcheck is ~90 % of a doctor run (3 s). A run is taken from the memo
when the same shellcheck would see the same bytes: the files given, at the same paths
relative to the directory it runs in, and every shell file and .shellcheckrc under that
directory (what `source` can reach with --source-path=SCRIPTDIR). Findings name the files
as they were given; a hit renames them to this call's paths, and a run whose findings
name any other file is not kept. Not for users: lumi_scaffold.lint runs shellcheck each
time.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

_SKIP_DIRS = {"venv", ".venv", ".git", "node_modules", "__pycache__", "logs", "outputs"}


def _digest(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def _reachable(root: Path) -> tuple[tuple[str, str], ...]:
    found = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(names):
            if name.endswith((".sh", ".sbatch")) or name == ".shellcheckrc":
                path = Path(directory) / name
                if path.is_file():
                    found.append((str(path.relative_to(root)), _digest(path)))
    return tuple(found)


def memo_shellcheck(original: Callable[..., list[str]], memo: dict) -> Callable[..., list[str]]:
    def shellcheck(files: list[Path], *, cwd: Path | None = None) -> list[str]:
        files = list(files)
        root = Path(cwd) if cwd is not None else Path(os.path.commonpath([str(Path(f).parent) for f in files] or ["."]))
        try:
            given = tuple((os.path.relpath(f, root), _digest(Path(f))) for f in files)
            key = (os.environ.get("PATH", ""), given, _reachable(root))
        except (OSError, ValueError):
            return original(files, cwd=cwd)
        names = [str(f) for f in files]
        if key in memo:
            then, findings = memo[key]
            renamed = dict(zip(then, names))
            return [renamed[line.split(":", 1)[0]] + ":" + line.split(":", 1)[1] for line in findings]
        findings = original(files, cwd=cwd)
        if all(":" in line and line.split(":", 1)[0] in names for line in findings):
            memo[key] = (names, findings)
        return findings

    return shellcheck
