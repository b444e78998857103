"""The repository's own test runs (tests/ and the example plugins' tests under plugins/):
what every test shares. A plugin's tests run from its own directory do not see this file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def _shellcheck_memo_dir(tmp_path_factory) -> Path:
    """The shellcheck memo's directory, shared by the xdist workers (beside their own base
    temporary directories)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shellcheck-memo"


@pytest.fixture(autouse=True)
def _shellcheck_memo(monkeypatch, _shellcheck_memo_dir):
    """Each file's shellcheck run once per suite (tests/lint_memo.py)."""
    from lumi_scaffold import lint

    from tests.lint_memo import SharedMemo, memo_shellcheck

    monkeypatch.setattr(lint, "shellcheck", memo_shellcheck(lint.shellcheck, SharedMemo(_shellcheck_memo_dir)))


@pytest.fixture(autouse=True)
def _copier_shortcuts(request, monkeypatch):
    """Every fresh copy a test makes in its own process (lumi_scaffold.testing.render_project,
    `lumi-scaffold new` run in-process, check_conformance's render_many) with the render
    matrix's Copier shortcuts (tests/copier_shortcuts.py): the same bytes in about half the
    time. Not in tests/test_render.py, which renders with plain Copier (its goldens) and
    compares the two; not for a copy into a directory that has files, nor for an update."""
    if request.node.path.name == "test_render.py":
        return
    import copier

    from lumi_scaffold import testing

    from tests.copier_shortcuts import active, copier_shortcuts, render_many

    plain = copier.run_copy

    def run_copy(src_path, dst_path=".", *args, **kwargs):
        dst = Path(dst_path)
        if active() or (dst.exists() and any(dst.iterdir())):
            return plain(src_path, dst_path, *args, **kwargs)
        with copier_shortcuts():
            return plain(src_path, dst_path, *args, **kwargs)

    monkeypatch.setattr(copier, "run_copy", run_copy)
    monkeypatch.setattr(testing, "render_many", render_many)
