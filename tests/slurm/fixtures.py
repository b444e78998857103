"""pytest fixtures for the local Slurm cluster (session-scoped, started on first use).

Make them visible to a test module with ``from tests.slurm.fixtures import slurm_cluster``
(or to every test by listing ``"tests.slurm.fixtures"`` in ``pytest_plugins`` of the
top-level conftest.py). When Slurm cannot be started here the fixtures skip the test, unless
``LUMI_SCAFFOLD_REQUIRE_SLURM=1`` (CI), where they fail it instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.slurm.harness import SlurmCluster, SlurmError, ensure_tool, short_directory, slurm_available

REQUIRE_ENV = "LUMI_SCAFFOLD_REQUIRE_SLURM"
# Session cluster: 64 advertised CPUs per node and task/none so full LUMI-G job shapes
# (8 tasks x 7 CPUs, LUMI CPU masks) are accepted; MinJobAge 300 s keeps finished jobs
# visible to SlurmCluster.wait() long after they end.
DEFAULT_KNOBS: dict[str, object] = {"cpus": 64, "task_plugin": "task/none", "min_job_age": 300}
TWO_NODE_KNOBS: dict[str, object] = {**DEFAULT_KNOBS, "nodes": 2}
# The time-limit job's cluster: its job ends within the first minutes of the Slurm group and
# is asked about at the end of it, so it stays visible for an hour.
TIME_LIMIT_KNOBS: dict[str, object] = {**DEFAULT_KNOBS, "min_job_age": 3600}
# Two nodes with this machine's real CPUs and task/affinity: CPU binding is real (the local
# site's masks 0x1, 0x2), and names nid005000/nid005001 resolve for real 2-node trainings.
LOCAL_TWO_NODE_KNOBS: dict[str, object] = {"nodes": 2, "cpus": 2, "task_plugin": "task/affinity", "min_job_age": 300}


def slurm_required() -> bool:
    """True when LUMI_SCAFFOLD_REQUIRE_SLURM=1: a missing Slurm is a failure, not a skip."""
    return os.environ.get(REQUIRE_ENV, "") == "1"


def _unavailable(reason: str) -> None:
    if slurm_required():
        pytest.fail(f"{REQUIRE_ENV}=1 but the local Slurm cluster is unavailable: {reason}",
                    pytrace=False)
    pytest.skip(f"local Slurm cluster unavailable: {reason}")


def start_or_skip(directory: str | os.PathLike[str], **knobs: object) -> SlurmCluster:
    """Start a cluster under ``directory`` (or a short /tmp dir if that path is too long for
    Unix sockets); skip the test (fail it under LUMI_SCAFFOLD_REQUIRE_SLURM=1) when Slurm is
    unavailable or does not come up."""
    ok, reason = slurm_available()
    if not ok:
        _unavailable(reason)
    cluster = SlurmCluster(short_directory(directory), **knobs)
    try:
        return cluster.start()
    except (SlurmError, OSError) as exc:
        _unavailable(str(exc))
        raise  # not reached: _unavailable always raises


def need_tool(tool: str, package: str, log: Path, search_path: str | None = None) -> str:
    """``tool``'s path, installed from the Debian ``package`` where missing by
    tests/slurm/ensure-tools.sh (which installs Slurm too); where it cannot be (no apt-get, not
    root), skips the test with the installer's reason, or fails it under
    LUMI_SCAFFOLD_REQUIRE_SLURM=1 (.ci/run, which installs both)."""
    path, reason = ensure_tool(tool, package, log, search_path)
    if path is None:
        if slurm_required():
            pytest.fail(f"{REQUIRE_ENV}=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def mksquashfs(tmp_path_factory: pytest.TempPathFactory) -> str:
    """mksquashfs (squashfs-tools) for the packed-venv test (need_tool)."""
    return need_tool("mksquashfs", "squashfs-tools", tmp_path_factory.mktemp("apt") / "apt.log")


# One cluster per name and process, even when the fixtures are registered twice (e.g.
# imported by tests/conftest.py and by a test module: pytest then has two session fixture
# definitions with the same function, which would otherwise start two clusters).
_SHARED: dict[str, list] = {}


def _session_cluster(tmp_path_factory: pytest.TempPathFactory, name: str,
                     knobs: dict[str, object]) -> Iterator[SlurmCluster]:
    entry = _SHARED.get(name)
    if entry is None:
        directory: Path = tmp_path_factory.mktemp(name)
        entry = _SHARED[name] = [start_or_skip(directory, **knobs), 0]
    entry[1] += 1
    try:
        yield entry[0]
    finally:
        entry[1] -= 1
        if entry[1] == 0:
            del _SHARED[name]
            entry[0].stop()


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One-node cluster ("localhost", 64 CPUs, 8 mi250 GPUs, task/none) for the session."""
    yield from _session_cluster(tmp_path_factory, "slurm", DEFAULT_KNOBS)


@pytest.fixture(scope="session")
def slurm_cluster_2nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """Two-node cluster (nid005000, nid005001; other ports), started only when requested."""
    yield from _session_cluster(tmp_path_factory, "slurm2n", TWO_NODE_KNOBS)


@pytest.fixture(scope="session")
def slurm_cluster_timelimit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A cluster like slurm_cluster, for the jobs that wait on Slurm's clock (the harness's
    time-limit job, the examples' time-limit chains: tests/conftest.py, _OVERLAPPED). They are
    submitted at the start of the Slurm group and would keep exclusive (standard-g) jobs of
    slurm_cluster waiting."""
    yield from _session_cluster(tmp_path_factory, "slurmtl", TIME_LIMIT_KNOBS)


@pytest.fixture(scope="session")
def time_limit_job(slurm_cluster_timelimit: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> int:
    """A job over its 1-minute limit (Slurm kills it 60-95 s after it starts). tests/conftest.py
    requests it in the first test of the Slurm group and runs test_time_limit_kills_job last,
    so the wait overlaps the whole group instead of adding to it."""
    work = tmp_path_factory.mktemp("timelimit")
    (work / "logs").mkdir()
    script = work / "overtime.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --job-name=overtime\n#SBATCH --output=logs/%x_%j.out\n"
                      "#SBATCH --time=00:01:00\n#SBATCH --ntasks=1\n"
                      "echo started\nsleep 300\necho not-reached\n")
    return slurm_cluster_timelimit.sbatch([str(script)], cwd=work)


@pytest.fixture(scope="session")
def slurm_cluster_local2n(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """Two-node cluster with real binding (2 CPUs per node, task/affinity), started when requested."""
    yield from _session_cluster(tmp_path_factory, "slurmlocal2n", LOCAL_TWO_NODE_KNOBS)
