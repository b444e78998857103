"""Generated jobs on a real Slurm controller on localhost.

Singularity cannot be installed on the CI machines: tests/slurm/fakebin/singularity
stands in for it (runs the command on the host after checking the image and every bind
source), and `module`, `rocprof` and `rocprofv3` have stand-ins too. The LUMI file systems
that binds name (/pfs, /opt/cray, ...) are modelled under a test directory
(FAKE_SINGULARITY_SITE_ROOT), so a bind the model lacks fails the job like on LUMI.
PyTorch runs on the CPU with the gloo backend.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import numpy as np
import pytest

from lumi_scaffold.plugins import get_catalogue
from lumi_scaffold.questions import check

from .helpers import render
from .slurm.fixtures import DEFAULT_KNOBS, slurm_required, start_or_skip

pytestmark = pytest.mark.slurm
if slurm_required():  # CI: a missing torch must fail the run, not skip the job tests
    import torch
else:
    torch = pytest.importorskip("torch", reason="the job tests train with CPU PyTorch (pip install torch==2.13.0)")

# What LUMI binds name, as directories (and one file) under the site model.
LUMI_PATHS = ["pfs", "scratch", "projappl", "project", "flash", "appl", "var/spool/slurmd", "opt/cray"]


@pytest.fixture(scope="module")
def site_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lumi-site")
    for rel in LUMI_PATHS:
        (root / rel).mkdir(parents=True)
    (root / "usr/lib64").mkdir(parents=True)
    (root / "usr/lib64/libcxi.so.1").write_bytes(b"")
    return root


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A .tar of two .npz shards, like a group's packed dataset."""
    root = tmp_path_factory.mktemp("dataset")
    archive = root / "train.tar"
    rng = np.random.default_rng(1)
    with tarfile.open(archive, "w") as tar:
        for shard in range(2):
            x = rng.standard_normal((256, 32)).astype(np.float32)
            buffer = io.BytesIO()
            np.savez(buffer, x=x, y=x[:, :4].argmax(axis=1))
            info = tarfile.TarInfo(f"shard-{shard}.npz")
            info.size = buffer.getbuffer().nbytes
            buffer.seek(0)
            tar.addfile(info, buffer)
    return archive


def job_env(cluster, work: Path, site_root: Path, **extra: str) -> dict[str, str]:
    """Environment a user would have at sbatch time, plus the stand-ins' logs."""
    work.mkdir(parents=True, exist_ok=True)
    image = work / "image.sif"
    image.write_bytes(b"")
    return cluster.env_with(
        SIF=str(image),
        FAKE_SINGULARITY_SITE_ROOT=str(site_root),
        FAKE_SINGULARITY_LOG=str(work / "singularity.jsonl"),
        FAKE_MODULE_LOG=str(work / "module.log"),
        FAKE_PROFILER_LOG=str(work / "profiler.log"),
        OUTPUT_ROOT=str(work / "outputs"),
        DATA_DIR=str(work / "no-data"),
        NODE_TMP=str(work / "node-tmp"),
        **extra,
    )


def run_job(cluster, project: Path, env: dict, script: str = "jobs/train.sbatch", *args: str, timeout: float = 240):
    job_id = cluster.sbatch([script, *args], cwd=project, env=env)
    return job_id, cluster.wait(job_id, timeout=timeout)


def log_of(project: Path, job_id: int) -> str:
    return "\n".join(p.read_text() for p in sorted((project / "logs").glob(f"*-{job_id}.out")))


# ------------------------------------------------------------------ time limit (started first)


@pytest.fixture(scope="module")
def timeout_job(tmp_path_factory, template, site_root, dataset):
    """A pre-staging job that hits its 1-minute limit, on its own cluster so it runs while the
    other tests use the shared one. Returns (cluster, job id, project, env)."""
    cluster = start_or_skip(tmp_path_factory.mktemp("slurm-timeout"), **DEFAULT_KNOBS)
    work = tmp_path_factory.mktemp("timeout")
    project = render(template, work / "p", gpus_per_node=1, walltime="00:01:00", prestage=True,
                     dataset_archive=str(dataset))
    env = job_env(cluster, work, site_root)
    job_id = cluster.sbatch(["jobs/train.sbatch", "--steps", "100000", "--seconds-per-step", "0.5",
                             "--checkpoint-every", "5"], cwd=project, env=env)
    yield cluster, job_id, project, env
    cluster.stop()


# ------------------------------------------------------------------ sbatch --test-only

REPRESENTATIVE = {
    "lumi-1node": {},
    "lumi-1gpu-jax": {"framework": "jax", "gpus_per_node": 1},
    "lumi-smallg-exclusive-profile": {"partition": "small-g", "profiler": "rocprofv3", "profile_rank": 7},
    "lumi-devg-torchrun": {"partition": "dev-g", "gpus_per_node": 4, "launcher": "torchrun", "walltime": "03:00:00"},
    "lumi-prestage": {"gpus_per_node": 2, "prestage": True, "walltime": "3-00:00:00", "partition": "small-g"},
    "local-batch": {"site": "local", "account": "local", "partition": "batch", "gpus_per_node": 2, "profiler": "rocprof"},
}


@pytest.mark.parametrize("name", sorted(REPRESENTATIVE))
def test_slurm_accepts_every_generated_sbatch_file(slurm_cluster, template, tmp_path, name, timeout_job):
    # (timeout_job is requested here so the 1-minute job starts early and runs alongside.)
    answers = REPRESENTATIVE[name]
    if answers.get("site") == "local" and "local" not in get_catalogue().sites:
        pytest.skip("plugins/lumi-site-local is not installed")
    project = render(template, tmp_path / name, **answers)
    scripts = sorted((project / "jobs").glob("*.sbatch"))
    assert len(scripts) >= 2
    for script in scripts:
        ok, message = slurm_cluster.test_only(script, cwd=project)
        assert ok, f"{script.name}: {message}"


def test_slurm_accepts_two_node_jobs(slurm_cluster_2nodes, template, tmp_path):
    project = render(template, tmp_path / "p", nodes=2, profiler="rocprof")
    for script in sorted((project / "jobs").glob("*.sbatch")):
        ok, message = slurm_cluster_2nodes.test_only(script, cwd=project)
        assert ok or script.name == "smoke-test.sbatch", f"{script.name}: {message}"


def test_header_over_the_limit_is_refused_by_slurm_and_by_us(slurm_cluster, template, tmp_path):
    project = render(template, tmp_path / "p", gpus_per_node=2)
    train = project / "jobs/train.sbatch"
    train.write_text(train.read_text().replace("#SBATCH --time=01:00:00", "#SBATCH --time=3-00:00:01"))
    ok, message = slurm_cluster.test_only(train, cwd=project)
    assert not ok and "Requested time limit is invalid" in message
    answers = {"site": "lumi", "partition": "small-g", "walltime": "3-00:00:01"}
    assert "exceeds the small-g limit of 3-00:00:00" in check("walltime", "3-00:00:01", answers, get_catalogue())
    train.write_text(train.read_text().replace("--time=3-00:00:01", "--time=01:00:00").replace("--nodes=1", "--nodes=5"))
    ok, message = slurm_cluster.test_only(train, cwd=project)
    assert not ok, message


# ------------------------------------------------------------------ real runs


def test_lumi_project_trains_on_eight_ranks(slurm_cluster, template, tmp_path, site_root):
    """The LUMI-shaped project as generated: 8 tasks, LAIF image, module, MASTER_ADDR."""
    project = render(template, tmp_path / "p")
    env = job_env(slurm_cluster, tmp_path, site_root)
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", "--steps", "20", "--num-workers", "0")
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    for rank in range(8):
        assert re.search(rf"^rank {rank}/8 local_rank {rank} device cpu backend gloo cpus \[", log, re.M), log
    assert "done: 20 steps on 8 process(es)" in log
    assert (tmp_path / "outputs" / str(job_id) / "checkpoint-00000020.pt").exists()
    calls = [json.loads(line) for line in (tmp_path / "singularity.jsonl").read_text().splitlines()]
    assert len(calls) == 8 and {c["verb"] for c in calls} == {"run"} and all(c["error"] is None for c in calls)
    assert calls[0]["bind_specs"] == ["/pfs"]
    assert (tmp_path / "module.log").read_text().splitlines() == [
        "module use /appl/local/laifs/modules", "module load lumi-aif-singularity-bindings"]


def test_local_project_binds_each_rank_to_its_own_cpu(tmp_path_factory, template, tmp_path, site_root):
    """The local site's masks 0x1,0x2 with real binding (task/affinity, the machine's 2 CPUs)."""
    if "local" not in get_catalogue().sites:
        pytest.skip("plugins/lumi-site-local is not installed")
    cluster = start_or_skip(tmp_path_factory.mktemp("slurm-local"), cpus=2, task_plugin="task/affinity", min_job_age=300)
    try:
        project = render(template, tmp_path / "p", site="local", account="local", partition="batch", gpus_per_node=2)
        assert "--cpu-bind=verbose,mask_cpu:0x1,0x2" in (project / "jobs/train.sbatch").read_text()
        env = job_env(cluster, tmp_path, site_root)
        job_id, result = run_job(cluster, project, env, "jobs/train.sbatch", "--steps", "20")
        log = log_of(project, job_id)
        assert result.state == "COMPLETED", log
        assert re.search(r"^rank 0/2 .* cpus \[0\]$", log, re.M), log
        assert re.search(r"^rank 1/2 .* cpus \[1\]$", log, re.M), log
        assert "cpu-bind=MASK" in log  # srun's verbose report of the binding it applied
        assert "done: 20 steps on 2 process(es)" in log
    finally:
        cluster.stop()


def test_failing_rank_fails_the_job_and_copied_outputs_survive(slurm_cluster, template, tmp_path, site_root, dataset):
    """Legacy image ($WITH_CONDA), pre-staged data; rank 1 dies after a checkpoint was written."""
    project = render(template, tmp_path / "p", container="lust-pytorch-2.7.1", gpus_per_node=2, prestage=True,
                     dataset_archive=str(dataset), walltime="00:10:00")
    train = project / "src/demo/train.py"
    train.write_text(train.read_text().replace(
        "            step += 1\n",
        "            step += 1\n            if rank == 1 and step == 12:\n                raise RuntimeError('injected failure')\n", 1))
    env = job_env(slurm_cluster, tmp_path, site_root, SINGULARITYENV_WITH_CONDA="echo conda env activated")
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", "--steps", "200", "--checkpoint-every", "5")
    log = log_of(project, job_id)
    assert result.state == "FAILED" and result.exit_code != 0, log
    assert "injected failure" in log
    assert log.count("conda env activated") == 2  # $WITH_CONDA ran inside the container on each rank
    assert "prestage: node 0: extracted" in log and "data: 512 samples from" in log and "/node-tmp/" in log
    copied = tmp_path / "outputs" / str(job_id)
    assert (copied / "checkpoint-00000010.pt").exists(), log
    calls = [json.loads(line) for line in (tmp_path / "singularity.jsonl").read_text().splitlines()]
    assert {c["verb"] for c in calls} == {"exec"}
    assert calls[0]["bind_specs"] == ["/pfs", "/scratch", "/projappl", "/project", "/flash", "/appl"]  # one node: no CPE binds


def test_profiler_wraps_only_the_chosen_rank(slurm_cluster, template, tmp_path, site_root):
    project = render(template, tmp_path / "p", gpus_per_node=2, profiler="rocprof", profile_rank=1)
    env = job_env(slurm_cluster, tmp_path, site_root)
    job_id, result = run_job(slurm_cluster, project, env, "jobs/profile.sbatch", "--steps", "10")
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    lines = (tmp_path / "profiler.log").read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocprof rank=1 --hip-trace --stats -d "), lines
    assert (project / "profiles" / str(job_id) / "rank-1").is_dir()
    assert not (project / "profiles" / str(job_id) / "rank-0").exists()


def test_time_limit_still_copies_the_checkpoints_back(timeout_job):
    cluster, job_id, project, env = timeout_job
    result = cluster.wait(job_id, timeout=200)
    log = log_of(project, job_id)
    assert result.state == "TIMEOUT", log
    assert "DUE TO TIME LIMIT" in log and "copy_back:" in log
    checkpoints = sorted(Path(env["OUTPUT_ROOT"], str(job_id)).glob("checkpoint-*.pt"))
    assert checkpoints, log
    assert torch.load(checkpoints[-1])["step"] >= 5


def test_jax_project_trains_on_two_processes(slurm_cluster, template, tmp_path, site_root):
    """jax.distributed.initialize() finds the Slurm step itself; legacy image, $WITH_CONDA."""
    if slurm_required():
        import jax  # noqa: F401  (CI installs it; a missing JAX must fail there)
    else:
        pytest.importorskip("jax", reason="the JAX job test needs CPU JAX (pip install jax)")
    project = render(template, tmp_path / "p", framework="jax", gpus_per_node=2)
    env = job_env(slurm_cluster, tmp_path, site_root, SINGULARITYENV_WITH_CONDA="true")
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", "--steps", "20")
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert re.search(r"^rank 0/2 devices", log, re.M) and re.search(r"^rank 1/2 devices", log, re.M), log
    assert "done: 20 steps on 2 process(es)" in log
    assert (tmp_path / "outputs" / str(job_id) / "params-00000020.npz").exists()
