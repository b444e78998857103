"""Generated scripts that run outside a Slurm job: setup-venv.sh, run.sh, prestage.sh,
attach.sh.

The container runtime is the test stand-in tests/slurm/fakebin/singularity (Singularity
cannot be installed on the CI machines); `python` inside it is this machine's Python.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lumi_scaffold.lint import lint_project
from lumi_scaffold.plugins import get_catalogue

from .helpers import render
from .slurm.harness import FAKEBIN
from .venvs import container_python


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    site = tmp_path / "site"
    for rel in ("pfs", "scratch", "projappl", "project", "flash", "appl"):
        (site / rel).mkdir(parents=True, exist_ok=True)
    image = tmp_path / "image.sif"
    image.write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SINGULARITY"))}
    python_dir = container_python(tmp_path / "container-python")
    env.update(PATH=f"{FAKEBIN}:{python_dir}:{env['PATH']}", SIF=str(image), FAKE_SINGULARITY_SITE_ROOT=str(site),
               PIP_CACHE_DIR=str(tmp_path / "pip-cache"), PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull, **extra)
    return env


def test_setup_venv_builds_on_the_container_python_and_keeps_the_framework(template, tmp_path):
    torch = pytest.importorskip("torch")
    project = render(template, tmp_path / "p", extra_requirements="numpy")
    result = subprocess.run(["bash", "scripts/setup-venv.sh"], cwd=project, env=env_for(tmp_path),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"venv ready; the container's versions are intact:\ntorch=={torch.__version__}" in result.stdout
    venv_python = project / "venv/bin/python"
    assert "include-system-site-packages = true" in (project / "venv/pyvenv.cfg").read_text()
    check = subprocess.run([str(venv_python), "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
    assert check.stdout.strip() == torch.__version__  # the container's framework, seen through the venv


@pytest.mark.parametrize("image", [{}, {"container": "custom", "container_path": "/project/p/own.sif"}], ids=["catalogue", "custom"])
def test_setup_venv_refuses_a_requirement_that_replaces_the_framework(template, tmp_path, image):
    """A fake 'torch' wheel in a local index stands in for pip pulling a generic build. With
    a custom image nothing is pinned, but the framework's packages are still checked."""
    pytest.importorskip("torch")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    dist = tmp_path / "faketorch"
    (dist / "torch").mkdir(parents=True)
    (dist / "torch/__init__.py").write_text("__version__ = '99.0'\n")
    (dist / "pyproject.toml").write_text('[project]\nname = "torch"\nversion = "99.0"\n[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(dist)],
                           capture_output=True, text=True, env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    assert built.returncode == 0, built.stderr
    project = render(template, tmp_path / "p", extra_requirements="torch==99.0", **image)
    (project / "constraints.txt").write_text("# the user removed the pins\n")
    result = subprocess.run(["bash", "scripts/setup-venv.sh"], cwd=project,
                            env=env_for(tmp_path, PIP_FIND_LINKS=str(wheels)), capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "ERROR: installing requirements changed the container's framework:" in result.stderr
    assert "> torch==99.0" in result.stderr and "Fix:" in result.stderr


def test_constraints_stop_pip_from_replacing_the_framework(template, tmp_path):
    project = render(template, tmp_path / "p", extra_requirements="torch==99.0")
    result = subprocess.run(["bash", "scripts/setup-venv.sh"], cwd=project, env=env_for(tmp_path),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "The user requested (constraint) torch==2.10.*" in output and "torch==99.0" in output  # pip names the clash


def test_run_sh_works_outside_slurm(template, tmp_path):
    project = render(template, tmp_path / "p", container="lust-pytorch-2.7.1")
    env = env_for(tmp_path, WITH_CONDA="echo activated", USER="tester")
    result = subprocess.run(["scripts/run.sh", "bash", "-c", 'echo "$RANK $WORLD_SIZE $MIOPEN_USER_DB_PATH $PYTHONNOUSERSITE"'],
                            cwd=project, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["activated", "0 1 /tmp/tester-miopen-cache-0-0 1"]
    del env["WITH_CONDA"]
    result = subprocess.run(["scripts/run.sh", "true"], cwd=project, env=env, capture_output=True, text=True)
    assert result.returncode != 0 and "this image should define WITH_CONDA" in result.stderr


@pytest.mark.parametrize("shape, limit", [
    ({"gpus_per_node": 4, "partition": "small-g"}, "small-g gives jobs on a shared node about 64 GB of /tmp"),
    ({"gpus_per_node": 8, "partition": "small-g"}, "the job may use 368640 MiB of its memory for it"),
])
def test_prestage_checks_the_archive_against_the_partitions_tmp_limit(template, tmp_path, shape, limit):
    """On small-g a job that shares the node gets about 64 GB of /tmp whatever its memory
    [AIG-04] (4 GCDs x 60G would allow 180 GB); with the whole node it is its memory."""
    archive = tmp_path / "data.tar"
    with open(archive, "wb") as handle:  # sparse: 65 GB of size, no space on disk
        handle.truncate(65 * 10**9)
    project = render(template, tmp_path / "p", prestage=True, dataset_archive=str(archive), **shape)
    gpus = shape["gpus_per_node"]
    env = {**os.environ, "DATASET_ARCHIVE": str(archive), "NODE_TMP": str(tmp_path), "STAGE_DIR": str(tmp_path / "stage"),
           "SLURM_NODEID": "0", "SLURM_GPUS_ON_NODE": str(gpus)}
    env.update({"SLURM_MEM_PER_GPU": "61440"} if gpus < 8 else {"SLURM_MEM_PER_NODE": "491520"})
    result = subprocess.run(["bash", "scripts/prestage.sh"], cwd=project, env=env, capture_output=True, text=True)
    if gpus == 8 and result.returncode == 0:
        return  # the whole node's memory allows 65 GB, and this disk had room for it
    assert result.returncode == 1 and "needs 61988 MiB" in result.stderr, result.stderr
    assert limit in result.stderr, result.stderr


def test_jax_projects_say_nothing_about_pytorch(template, tmp_path):
    project = render(template, tmp_path / "p", framework="jax", nodes=2, profiler="rocprof")
    for name in ("scripts/run.sh", "scripts/job-env.sh", "scripts/run-profile.sh", "jobs/train.sbatch",
                 "jobs/profile.sbatch", "jobs/smoke-test.sbatch", "jobs/interactive.sh", "README.md"):
        text = (project / name).read_text()
        assert not re.search(r"torch|DDP|DataLoader", text), (name, re.findall(r".*(?:torch|DDP|DataLoader).*", text))


def test_attach_requires_a_job_id_and_has_help(template, tmp_path):
    project = render(template, tmp_path / "p")
    result = subprocess.run(["scripts/attach.sh"], cwd=project, capture_output=True, text=True)
    assert result.returncode == 2 and result.stderr.startswith("Usage: scripts/attach.sh JOBID")
    result = subprocess.run(["scripts/attach.sh", "--help"], cwd=project, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("Usage: scripts/attach.sh JOBID")
    for bad in (["12x"], ["1234", "nid005001", "--frob"], ["1234", "--"]):
        result = subprocess.run(["scripts/attach.sh", *bad], cwd=project, capture_output=True, text=True)
        assert result.returncode == 2 and "See --help." in result.stderr, bad


def test_lint_command_finds_a_broken_header(template, tmp_path):
    project = render(template, tmp_path / "p", gpus_per_node=2)
    assert lint_project(project, get_catalogue()) == []
    train = project / "jobs/train.sbatch"
    train.write_text(train.read_text().replace("--time=01:00:00", "--time=4-00:00:00").replace('"${RUN_DIR}"', "${RUN_DIR}"))
    problems = lint_project(project, get_catalogue())
    assert any("time 4-00:00:00 exceeds small-g's 3-00:00:00" in p for p in problems)
    assert any("SC2086" in p for p in problems)
