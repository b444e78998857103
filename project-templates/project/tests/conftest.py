"""Tests of the project's runtime library (scripts/lib/, owned by `lumi-scaffold update`):
watchdog.py, collective_net.py, image_packages.py, fault.py and python/heartbeat.py and runlog.py,
read as the files they are. Standard library and pytest only (no framework, no GPU, no Slurm):

  python -m pytest            # from the project root, with the image's Python
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts" / "lib"


def load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def package_dir() -> Path:
    """scripts/lib/python/: heartbeat.py and runlog.py, which the jobs put on every rank's PYTHONPATH."""
    return SCRIPTS / "python"


@pytest.fixture(scope="session")
def collective_net() -> ModuleType:
    return load("collective_net", SCRIPTS / "collective_net.py")


@pytest.fixture(scope="session")
def watchdog(collective_net) -> ModuleType:
    # watchdog.py imports collective_net (beside it when it runs as a script). No sys.path
    # change here: scripts/lib/watchdog.py would shadow the PyPI package of that name.
    sys.modules.setdefault("collective_net", collective_net)
    return load("project_watchdog", SCRIPTS / "watchdog.py")


@pytest.fixture(scope="session")
def image_packages() -> ModuleType:
    return load("image_packages", SCRIPTS / "image_packages.py")
