"""The suite's memo of shellcheck runs (tests/conftest.py installs it for every test).

Most tests lint or `doctor` a freshly rendered project, and shellcheck is most of what
that costs (6 s of CPU for a default project; about a fifth of the suite's CPU before
this memo kept files apart and was shared by the workers). A file's findings are taken
from the memo when shellcheck would see the same thing: the same file at the same path
relative to its project (the nearest directory above it with a .shellcheckrc, the one
shellcheck reads; for files of no project, the directory above all of them in the call),
and the same shell files and .shellcheckrc in that project (what `source` can reach with
--source-path=SCRIPTDIR). "The same" is read as shellcheck reads it:

- the file itself and the files it can reach by `lumi_scaffold.lint.lint_key`: whole-line
  comments (not directives) and lines of one literal option word are blanked, the line
  count kept; `lint_projects` relies on the same rule for the users' lint;
- a reachable scripts/values.sh in the shape values.py writes (a brace group of
  comments and assignments of single-quoted words) by the names it assigns and which of
  them are arrays: a sourcing file can see nothing else of it (its own findings come from
  linting it, by its whole text).

Each file is looked up on its own; the files not found run in one shellcheck. Findings
name the files as they were given; a hit renames them to this call's paths, and a run
whose findings name any other file is not kept. The memo is a directory shared by the
xdist workers (SharedMemo). Not for users: lumi_scaffold.lint runs shellcheck each time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from lumi_scaffold.lint import _ASSIGNMENT, lint_key

_SKIP_DIRS = {"venv", ".venv", ".git", "node_modules", "__pycache__", "logs", "outputs"}


def _values_names(text: str) -> str | None:
    """A values.sh as a file that sources it can see it: its header and, in order, the names
    it assigns, each marked when an array; None for a file of any other shape."""
    lines = text.split("\n")
    if "{" not in lines or lines[-2:] != ["}", ""]:
        return None
    start = lines.index("{")
    seen = []
    for line in lines[start + 1:-2]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not _ASSIGNMENT.fullmatch(line):
            return None
        name, value = line.split("=", 1)
        seen.append(name + ("=()" if value.startswith("(") else "="))
    return "\n".join([*lines[:start + 1], *seen, "}"])


def _visible_text(path: Path, rel: str) -> str:
    if rel.replace(os.sep, "/").endswith("scripts/values.sh"):
        names = _values_names(path.read_text(encoding="utf-8", errors="replace"))
        if names is not None:
            return "values:" + hashlib.sha256(names.encode()).hexdigest()
    return lint_key(path)


_SOURCE = re.compile(r"\s*(?:source|\.)\s+(.*)|\s*#\s*shellcheck\s+source=(\S+).*")


class _Tree:
    """The shell files and .shellcheckrc files under ``root`` (a project's directory: _roots)."""

    def __init__(self, root: Path) -> None:
        self.files: dict[str, Path] = {}
        for directory, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            for name in sorted(names):
                if name.endswith((".sh", ".sbatch")) or name == ".shellcheckrc":
                    path = Path(directory) / name
                    if path.is_file():
                        self.files[str(path.relative_to(root))] = path
        # A file's project: the nearest directory above it with a .shellcheckrc (else the
        # root); `source` lines are looked up there, by file name.
        projects = {os.path.dirname(rel) for rel in self.files if os.path.basename(rel) == ".shellcheckrc"}
        self.project = {rel: self._project(rel, projects) for rel in self.files}
        self.by_name: dict[tuple[str, str], set[str]] = {}
        for rel, project in self.project.items():
            self.by_name.setdefault((project, os.path.basename(rel)), set()).add(rel)
        self._sources: dict[str, set[str] | None] = {}
        self._seen: dict[str, str] = {}

    @staticmethod
    def _project(rel: str, projects: set[str]) -> str:
        directory = os.path.dirname(rel)
        while directory not in projects and directory:
            directory = os.path.dirname(directory)
        return directory

    def sources(self, rel: str) -> set[str] | None:
        """The files of ``rel``'s project that its `source` lines and source directives can
        name (by file name: more than shellcheck follows, never less); None when a `source`
        line names none of them and no directive says what it reads."""
        if rel not in self._sources:
            named: set[str] | None = set()
            directive = False
            for line in self.files[rel].read_text(encoding="utf-8", errors="replace").split("\n"):
                match = _SOURCE.fullmatch(line)
                if match is None:
                    directive = False
                    continue
                words = set(re.findall(r"[A-Za-z0-9_.-]+", match.group(1) or match.group(2)))
                hits = {other for word in words for other in self.by_name.get((self.project[rel], word), ())}
                if match.group(1) is not None and not hits and not directive:
                    named = None
                    break
                named |= hits
                directive = match.group(2) is not None
            self._sources[rel] = named
        return self._sources[rel]

    def seen(self, rel: str) -> str:
        if rel not in self._seen:
            self._seen[rel] = _visible_text(self.files[rel], rel)
        return self._seen[rel]

    def key(self, rel: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """What shellcheck sees besides the text of the file ``rel`` itself: its path, the
        .shellcheckrc files above it and the files it sources, transitively; all relative to
        its project, so that the same file in two projects has the same key. Every file here
        counts when what a `source` line reads cannot be told."""
        if rel not in self.files:
            return rel, self.everything(set(self.files), "")
        project = self.project[rel]
        seen = {os.path.join(d, ".shellcheckrc") for d in _parents(rel)} & set(self.files)
        todo = [rel]
        while todo:
            sources = self.sources(todo.pop())
            if sources is None:
                return rel, self.everything(set(self.files) - {rel}, "")
            todo += sorted(sources - seen - {rel})
            seen |= sources
        return os.path.relpath(rel, project or "."), self.everything(seen - {rel}, project)

    def everything(self, names: set[str], project: str) -> tuple[tuple[str, str], ...]:
        return tuple((os.path.relpath(name, project or "."), self.seen(name)) for name in sorted(names))


def _parents(rel: str) -> list[str]:
    found = []
    while rel:
        rel = os.path.dirname(rel)
        found.append(rel)
    return found


class SharedMemo:
    """A dict-like memo in a directory, one JSON file per key: the workers share it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: object) -> Path:
        return self.directory / (hashlib.sha256(repr(key).encode()).hexdigest() + ".json")

    def get(self, key: object):
        try:
            return json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None

    def __setitem__(self, key: object, value: object) -> None:
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        with os.fdopen(handle, "w") as out:
            json.dump(value, out)
        os.replace(temporary, self._path(key))


def _roots(files: list[Path], cwd: Path | None) -> list[Path]:
    """The directory each file's key is read in: ``cwd`` when given; else the file's
    project, the nearest directory above it with a .shellcheckrc (shellcheck reads that one
    and follows `source` there); else, for the files outside any project, the directory
    above all of them. (Not the directory above all the files: lint_projects' batches hold
    projects beside its temporary union files, and that directory was /tmp or /, walked for
    each batch: 5-8 CPU-s a time here.)"""
    if cwd is not None:
        return [Path(cwd)] * len(files)
    found: dict[Path, Path | None] = {}

    def project(directory: Path) -> Path | None:
        if directory not in found:
            found[directory] = directory if (directory / ".shellcheckrc").is_file() else (
                None if directory.parent == directory else project(directory.parent))
        return found[directory]

    roots = [project(Path(f).absolute().parent) for f in files]
    loose = [str(Path(f).absolute().parent) for f, root in zip(files, roots) if root is None]
    common = Path(os.path.commonpath(loose)) if loose else Path(".")
    return [root or common for root in roots]


def memo_shellcheck(original: Callable[..., list[str]], memo) -> Callable[..., list[str]]:
    """``original`` (lumi_scaffold.lint.shellcheck) behind ``memo`` (a dict or SharedMemo)."""

    def shellcheck(files: list[Path], *, cwd: Path | None = None) -> list[str]:
        files = list(files)
        names = [str(f) for f in files]
        try:
            roots = _roots(files, cwd)
            trees = {root: _Tree(root) for root in set(roots)}
            keys = [(os.environ.get("PATH", ""), lint_key(Path(f)), trees[root].key(os.path.relpath(f, root)))
                    for f, root in zip(files, roots)]
        except (OSError, ValueError):
            return original(files, cwd=cwd)
        found: dict[str, list[str]] = {}
        for name, key in zip(names, keys):
            hit = memo.get(key)
            if hit is not None:
                found[name] = [name + ":" + rest for rest in hit]
        missing = [(f, name, key) for f, name, key in zip(files, names, keys) if name not in found]
        if missing:
            findings = original([f for f, _, _ in missing], cwd=cwd)
            ran = [name for _, name, _ in missing]
            if not all(":" in line and line.split(":", 1)[0] in ran for line in findings):
                return findings + [line for name in names if name in found for line in found[name]]
            for _, name, key in missing:
                found[name] = [line for line in findings if line.split(":", 1)[0] == name]
                memo[key] = [line.split(":", 1)[1] for line in found[name]]
        return [line for name in names for line in found[name]]

    return shellcheck


def install_in_process(directory: str) -> None:
    """In a Python the suite starts (a test's own script): its lints through the suite's
    memo in ``directory`` too."""
    from lumi_scaffold import lint

    lint.shellcheck = memo_shellcheck(lint.shellcheck, SharedMemo(Path(directory)))


MEMO_ENV = "LUMI_SCAFFOLD_TESTS_LINT_MEMO"


def pytest_configure(config) -> None:
    """As a pytest plugin (`-p tests.lint_memo`) in a pytest the suite starts (a plugin
    package's own tests in a fresh venv): its lints through the suite's memo, the directory
    in LUMI_SCAFFOLD_TESTS_LINT_MEMO."""
    if os.environ.get(MEMO_ENV):
        install_in_process(os.environ[MEMO_ENV])
