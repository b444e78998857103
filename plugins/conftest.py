"""The plugins' own tests, run by lumi-scaffold's suite.

A plugin's author runs its tests with plain Copier (``lumi_scaffold.testing.render_many``).
In this repository's suite the plugins' matrices render through the Copier shortcuts
the full-matrix test uses (tests/copier_shortcuts.py): the same bytes, proven by
tests/test_render.py::test_copier_shortcuts_change_nothing, in about half the time. Plain
Copier is still run by tests/test_render.py::test_public_render_many_runs_plain_copier.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lumi_scaffold import testing

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _matrix_through_the_shortcuts(monkeypatch):
    if str(REPO) not in sys.path:
        monkeypatch.syspath_prepend(str(REPO))
    from tests.copier_shortcuts import render_many

    monkeypatch.setattr(testing, "render_many", render_many)
