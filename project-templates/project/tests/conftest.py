"""Tests of the project's runtime helpers: scripts/watchdog.py, scripts/rccl_net.py,
scripts/image_packages.py and src/<package>/heartbeat.py and runlog.py, read as the files
they are. Standard library and pytest only (no framework, no GPU, no Slurm):

  python -m pytest            # from the project root, with the image's Python
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"


def load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def package_dir() -> Path:
    """src/<package>/, the one package under src/ with heartbeat.py."""
    found = sorted(path.parent for path in (ROOT / "src").glob("*/heartbeat.py"))
    assert len(found) == 1, f"one package with heartbeat.py under {ROOT / 'src'}, not {found}"
    return found[0]


@pytest.fixture(scope="session")
def rccl_net() -> ModuleType:
    return load("rccl_net", SCRIPTS / "rccl_net.py")


@pytest.fixture(scope="session")
def watchdog(rccl_net) -> ModuleType:
    # watchdog.py imports rccl_net (beside it when it runs as a script). No sys.path
    # change here: scripts/watchdog.py would shadow the PyPI package of that name.
    sys.modules.setdefault("rccl_net", rccl_net)
    return load("project_watchdog", SCRIPTS / "watchdog.py")


@pytest.fixture(scope="session")
def image_packages() -> ModuleType:
    return load("image_packages", SCRIPTS / "image_packages.py")
