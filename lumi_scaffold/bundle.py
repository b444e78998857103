"""The template that comes with the installed package, as a git repository Copier can read.

A wheel carries the template's history as a git bundle (``lumi_scaffold/_template.bundle``,
made by setup.py from the repository: HEAD plus the release tags). ``lumi-scaffold new``
copies it to :data:`SOURCE` and renders from there, so the project records
``_src_path: ~/.cache/lumi-scaffold/template.bundle``: one string that is the same for
everyone who works on the project, survives ``pipx upgrade`` (and a new Python), and that
Copier itself reads (it expands ``~`` and reads bundles as repositories). Before every
``new`` and ``update`` the file is rewritten from the package that runs, so an update
replays the project's recorded version (``_commit``) from the new package's history and
renders the new package's template. No network: git reads the bundle from disk.

See docs/updating.md, "Where the template comes from".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import ModuleType

from .errors import UserMessageError

__all__ = ["PACKAGE_BUNDLE", "SOURCE", "is_bundled", "package_bundle", "refresh", "template_module", "template_ref"]

SOURCE = "~/.cache/lumi-scaffold/template.bundle"
PACKAGE_BUNDLE = Path(__file__).resolve().parent / "_template.bundle"
_CHECKOUT = Path(__file__).resolve().parent.parent


def template_root() -> Path | None:
    """Where this installation's template is: the source checkout (editable installs) or
    the copy shipped in the wheel (``lumi_scaffold/_template``); None when neither is there."""
    package = Path(__file__).resolve().parent
    for root in (package.parent, package / "_template"):
        if (root / "copier.yml").is_file() and (root / "project-templates").is_dir():
            return root
    return None


def template_module(name: str, path: Path) -> ModuleType:
    """A Python file of the template, or of a project made from it (a helper of scripts/lib/:
    the standard library only), loaded as module ``name``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def is_bundled(src: str | None) -> bool:
    """Whether ``src`` (a --template value or a recorded _src_path) is the bundled template."""
    return bool(src) and os.path.expanduser(str(src)) == os.path.expanduser(SOURCE)


def package_bundle() -> bytes:
    """The installed package's template bundle (of a source checkout: made from its history)."""
    return _bundle_bytes()


def _bundle_bytes() -> bytes:
    if PACKAGE_BUNDLE.is_file():
        return PACKAGE_BUNDLE.read_bytes()
    if (_CHECKOUT / "copier.yml").is_file() and (_CHECKOUT / ".git").exists():
        # A source checkout (editable install): its history serves as the bundle.
        with tempfile.TemporaryDirectory(prefix="lumi-scaffold-bundle-") as tmp:
            out = Path(tmp) / "t.bundle"
            result = subprocess.run(["git", "bundle", "create", str(out), "HEAD", "--tags"], cwd=_CHECKOUT,
                                    capture_output=True, text=True)
            if result.returncode == 0:
                return out.read_bytes()
            raise UserMessageError(f"cannot bundle the template of the checkout {_CHECKOUT}: {result.stderr.strip()}")
    raise UserMessageError(
        f"this lumi-scaffold installation has no template bundle ({PACKAGE_BUNDLE} is missing). "
        "Fix: reinstall it from a wheel (pipx reinstall lumi-scaffold), or pass --template"
    )


def refresh() -> Path:
    """Write the installed package's template bundle to :data:`SOURCE`; return its path."""
    if shutil.which("git") is None:
        raise UserMessageError("git is not installed, and Copier needs it to read the bundled template. Fix: install git")
    data = _bundle_bytes()
    target = Path(os.path.expanduser(SOURCE))
    try:
        if target.is_file() and target.read_bytes() == data:
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".template-", suffix=".bundle")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)  # atomic: another lumi-scaffold reading it sees one whole bundle
    except OSError as exc:
        raise UserMessageError(f"cannot write the template bundle to {target}: {exc.strerror or exc}") from None
    return target


def template_ref(src: str, vcs_ref: str | None) -> str | None:
    """The git ref to render ``src`` at. For the bundled template: refresh it, and default to
    the package's own template (HEAD of its bundle), not merely its newest release tag."""
    if is_bundled(src):
        refresh()
        return vcs_ref or "HEAD"
    return vcs_ref
