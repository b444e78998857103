"""lumi_scaffold ships py.typed and type-checks clean with the mypy settings in pyproject.toml."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import re
import sys

import pytest

from .helpers import REPO


def test_py_typed_is_in_the_package_and_its_package_data():
    assert (REPO / "lumi_scaffold" / "py.typed").is_file()
    config = (REPO / "pyproject.toml").read_text()  # (tomllib is Python 3.11+)
    assert re.search(r'^"lumi_scaffold" = \[.*"py\.typed"', config, re.M)
    assert re.search(r'^test = \[[^]]*"mypy', config, re.M | re.S)


@pytest.mark.slow
def test_mypy_is_clean():
    if importlib.util.find_spec("mypy") is None:
        if os.environ.get("CI"):
            pytest.fail("mypy is not installed: pip install -e '.[test]'")
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    # pyproject.toml's [tool.mypy] names the files and the settings
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert "Success: no issues found" in result.stdout
