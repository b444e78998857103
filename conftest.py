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
def _copier_shortcuts_for_plugin_matrices(request, monkeypatch):
    """check_conformance's renders (lumi_scaffold.testing.render_many) with the render
    matrix's Copier shortcuts (tests/copier_shortcuts.py), except in tests/test_render.py,
    which compares them with plain Copier."""
    if request.node.path.name == "test_render.py":
        return
    from lumi_scaffold import testing

    from tests.copier_shortcuts import render_many

    monkeypatch.setattr(testing, "render_many", render_many)
