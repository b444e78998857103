"""The tests every generated project carries (project-templates/project/tests/: its runtime
helpers, with pytest and the standard library only) pass in rendered projects, run as a
user runs them: `python -m pytest` from the project root."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import PROJECT, render


def test_the_project_tests_need_only_pytest_and_the_standard_library():
    """A LUMI login node has the image's Python: no lumi-scaffold, no framework."""
    imported: set[str] = set()
    for path in sorted((PROJECT / "tests").glob("*.py")):
        tree = ast.parse(path.read_text())
        imported |= {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported - set(sys.stdlib_module_names) == {"pytest"}, imported


def _read_by_the_tests(project: Path) -> dict[str, bytes]:
    """The files the project's tests read: tests/ and pytest.ini, and the runtime library's
    Python files (scripts/, scripts/lib/, scripts/lib/python/; not allreduce_bench.py, which
    only multi-node projects have and no project test reads)."""
    paths = [*(project / "tests").rglob("*.py"), project / "pytest.ini",
             *(p for p in (project / "scripts").rglob("*.py") if p.name != "allreduce_bench.py")]
    return {str(path.relative_to(project)): path.read_bytes() for path in paths if "__pycache__" not in path.parts}


@pytest.mark.slow
def test_a_rendered_project_passes_its_own_tests(template, tmp_path):
    """No test is skipped or fails, and lumi-scaffold cannot be imported (a stand-in that
    refuses comes first on the path). Plain `python -m pytest` (the project's pytest.ini)
    finds the same tests. They run once, in a two-node PyTorch project: a one-GPU JAX
    project has the same tests and the same files they read, byte for byte (what differs
    by framework, values.sh, train.py, the jobs, no test reads), and collects as many."""
    project = render(template, tmp_path / "pytorch-2node", nodes=2)
    jax = render(template, tmp_path / "jax-1gpu", framework="jax", gpus_per_node=1)
    refuse = tmp_path / "refuse" / "lumi_scaffold"
    refuse.mkdir(parents=True)
    (refuse / "__init__.py").write_text("raise ImportError('the project tests must not need lumi-scaffold')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "LUMI_SCAFFOLD_", "PYTEST_"))}
    env["PYTHONPATH"] = str(refuse.parent)

    def pytest_in(where: Path, *args: str) -> str:
        """pytest's summary line, after it passed."""
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=where,
                                env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
        return result.stdout.strip().splitlines()[-1]

    summary = pytest_in(project, "tests")
    passed = re.fullmatch(r"(\d+) passed in [\d.]+s(?: \([\d:]+\))?", summary)
    assert passed, summary
    for where in (project, jax):
        collected = pytest_in(where, "--collect-only")
        assert collected.startswith(f"{passed.group(1)} tests collected in "), (where.name, collected)
    read = _read_by_the_tests(project)
    assert {"tests/conftest.py", "scripts/lib/watchdog.py", "scripts/lib/python/runlog.py",
            "scripts/lib/python/jobfiles.py"} <= set(read), sorted(read)
    assert _read_by_the_tests(jax) == read
