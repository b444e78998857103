"""Compiler caches that survive jobs (scripts/lib/caches.sh): MIOpen's and, for PyTorch,
Triton's and TorchInductor's caches live in node-local tmp during a job; the jobs restore
them from the project's cache area (one set per image) on every node when they start and
save them from the first node after the training step has ended, never while it runs (MIOpen
may be writing), so the next job in the same image finds the first one's kernels. On the local Slurm with 2 emulated nodes; a stand-in training script plays the
compiler (it lists the cache directories when it starts and writes a "kernel" into them).
"""

from __future__ import annotations

import os
import re
import tarfile
import time
from pathlib import Path

import pytest

from lumi_scaffold.plugins import get_catalogue

from .helpers import render
from .jobs import job_env, log_of, run_job

LOCAL = {"site": "local", "account": "local", "partition": "batch", "gpus_per_node": 2}
CACHE_VARS = ("MIOPEN_CUSTOM_CACHE_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")
# Caches whose defaults are under $HOME (the AI Guide's list [AIG-I112] and the framework's).
OFF_HOME = CACHE_VARS + ("TORCH_EXTENSIONS_DIR", "TORCH_HOME", "HF_HOME")

# TEST STAND-IN for a framework that compiles kernels: local rank 0 of each node prints what
# its node's caches hold when it starts, then "compiles" one kernel into each.
FAKE_COMPILER = """import os, time
rank, job, node = os.environ["RANK"], os.environ["SLURM_JOB_ID"], os.environ["SLURM_NODEID"]
for var in {off_home!r}:
    print(f"rank {{rank}} env {{var}}={{os.environ.get(var, '')}}", flush=True)
for var in {vars!r}:
    d = os.environ[var]
    if os.environ["LOCAL_RANK"] == "0":
        print(f"rank {{rank}} node {{node}} {{var}} at start: {{sorted(os.listdir(d)) if os.path.isdir(d) else []}}", flush=True)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"kernel-{{job}}"), "w") as f:
            f.write("compiled")
time.sleep(float(os.environ.get("FAKE_TRAIN_SECONDS", "0")))
print(f"rank {{rank}} trained", flush=True)
""".format(vars=CACHE_VARS, off_home=OFF_HOME)


def at_start(log: str) -> dict[tuple[str, str], str]:
    """(rank, variable) -> the listing printed when the rank started."""
    return {(r, v): listing for r, v, listing in re.findall(r"^rank (\d) node \d (\w+) at start: (.*)$", log, re.M)}


def archived(store: Path, name: str) -> list[str]:
    with tarfile.open(store / f"{name}.tar") as tar:
        return sorted(Path(n).name for n in tar.getnames() if Path(n).name.startswith("kernel-"))


def test_second_job_finds_the_first_jobs_kernel_caches(slurm_cluster_local2n, template, tmp_path, site_root):
    if "local" not in get_catalogue().sites:
        pytest.skip("plugins/lumi-site-local is not installed")
    cluster = slurm_cluster_local2n
    project = render(template, tmp_path / "p", **LOCAL, nodes=2)
    (project / "src/demo/train.py").write_text(FAKE_COMPILER)
    # Node-local tmp of the emulated nodes: a directory of this test, not the host's /tmp
    # (job ids restart with every cluster, so /tmp could hold an older session's files).
    node_tmp = tmp_path / "node-local"
    node_tmp.mkdir()
    # The MIOpen (two variables), Triton and TorchInductor directories, as run.sh sets them and caches.sh
    # carries them (and pip's cache), and run.sh's per-job TMPDIR (node_tmp): scripts/values.sh.
    values = project / "scripts/values.sh"
    text = values.read_text()
    assert text.count("/tmp/${USER}-") == 8 and text.count("\nnode_tmp='/tmp'\n") == 1
    values.write_text(text.replace("/tmp/${USER}-", f"{node_tmp}/${{USER}}-").replace("\nnode_tmp='/tmp'\n", f"\nnode_tmp='{node_tmp}'\n"))
    env = job_env(cluster, tmp_path, site_root)
    store = Path(env["KERNEL_CACHE_STORE"]) / "image"  # keyed by the image, $SIF = .../image.sif

    # Job 1 finds nothing, compiles, and saves node 0's caches when training ends.
    first, result = run_job(cluster, project, env, "jobs/train.sbatch", timeout=300)
    log = log_of(project, first)
    assert result.state == "COMPLETED", log
    starts = at_start(log)
    assert sorted(starts) == [(r, v) for r in "02" for v in sorted(CACHE_VARS)], log  # node 0, node 1
    assert set(starts.values()) == {"[]"}, log
    # Every rank's caches are set, none under $HOME: node-local tmp or the project's cache area.
    home = os.path.realpath(os.path.expanduser("~"))
    seen = dict(((r, v), value) for r, v, value in re.findall(r"^rank (\d) env (\w+)=(.*)$", log, re.M))
    assert sorted(seen) == sorted((r, v) for r in "0123" for v in OFF_HOME), log
    for (r, var), value in seen.items():
        assert value.startswith("/") and not os.path.realpath(value).startswith(home + "/"), (r, var, value)
        assert value.startswith(str(node_tmp)) == (var in CACHE_VARS), (r, var, value)
    assert "caches: node 0 (nid005000): no miopen cache saved yet" in log
    assert "caches: node 1 (nid005001): no triton cache saved yet" in log
    assert f"caches: miopen saved to {store}/miopen.tar" in log and f"caches: triton saved to {store}/triton.tar" in log
    assert archived(store, "miopen") == archived(store, "triton") == [f"kernel-{first}"]

    # Job 2: both nodes find job 1's kernels when it starts. Slurm's time-limit warning (USR1
    # to the batch shell, sent here by hand) while the training step still runs saves nothing:
    # the caches are archived once the step has ended.
    second = cluster.sbatch(["jobs/train.sbatch"], cwd=project, env={**env, "FAKE_TRAIN_SECONDS": "25"})
    deadline = time.monotonic() + 180
    while len(at_start(log_of(project, second))) < 4:
        assert time.monotonic() < deadline, log_of(project, second)
        time.sleep(1)
    cluster.run(["scancel", "--batch", "--signal=USR1", str(second)], check=True)
    while not re.search(r"^time limit in \d+ s", log_of(project, second), re.M):
        assert time.monotonic() < deadline, log_of(project, second)
        time.sleep(0.5)
    time.sleep(5)
    assert cluster.job_info(second)["JobState"] == "RUNNING" and "trained" not in log_of(project, second)
    assert archived(store, "miopen") == [f"kernel-{first}"]  # nothing saved beside the running step
    result = cluster.wait(second, timeout=180)
    log = log_of(project, second)
    assert result.state == "COMPLETED", log
    assert set(at_start(log).values()) == {f"['kernel-{first}']"}, log
    assert "caches: node 1 (nid005001): miopen restored from" in log
    assert log.count("caches: triton saved to") == 1, log
    assert log.rindex("caches: triton saved to") > log.rindex("rank 0 trained"), log  # after the step
    assert archived(store, "triton") == [f"kernel-{first}", f"kernel-{second}"]
    assert sorted(p.name for p in store.iterdir()) == ["inductor.tar", "miopen.tar", "triton.tar"]  # no temporary files left

    # A job in another image finds none of them, and keeps its own beside them.
    other = tmp_path / "other-image.sif"
    other.write_bytes(b"")
    fourth, result = run_job(cluster, project, {**env, "SIF": str(other)}, "jobs/train.sbatch", timeout=300)
    log = log_of(project, fourth)
    assert result.state == "COMPLETED", log
    assert set(at_start(log).values()) == {"[]"}, log
    assert f"no miopen cache saved yet ({store.parent}/other-image/miopen.tar)" in log
    assert archived(store.parent / "other-image", "miopen") == [f"kernel-{fourth}"]
    assert archived(store, "miopen") == [f"kernel-{first}", f"kernel-{second}"]

    # KEEP_KERNEL_CACHES=0: nothing restored, nothing saved.
    third, result = run_job(cluster, project, {**env, "KEEP_KERNEL_CACHES": "0"}, "jobs/train.sbatch", timeout=300)
    log = log_of(project, third)
    assert result.state == "COMPLETED", log
    assert set(at_start(log).values()) == {"[]"} and "caches:" not in log, log
    assert archived(store, "miopen") == [f"kernel-{first}", f"kernel-{second}"]


def test_jax_projects_carry_only_miopens_cache(template, tmp_path):
    """JAX does not compile with Triton: no TRITON_CACHE_DIR, and the caches' values and
    comments name MIOpen's cache alone."""
    project = render(template, tmp_path / "p", framework="jax", nodes=2)
    run_sh = (project / "scripts/lib/run.sh").read_text()
    values = (project / "scripts/values.sh").read_text()
    assert "TRITON" not in run_sh and "triton" not in values.lower()
    assert "# Compiler caches that survive jobs: MIOpen's kernel cache.\n" in values
    assert "\nkernel_cache_dirs=('miopen=/tmp/${USER}-miopen-cache-${SLURM_JOB_ID}-${SLURM_NODEID}')\n" in values
    assert "# 1: the jobs restore the kernel caches from the project's cache area" in values
    torch_values = (render(template, tmp_path / "t", nodes=2) / "scripts/values.sh").read_text()
    assert "'TRITON_CACHE_DIR=/tmp/${USER}-triton-cache-${SLURM_JOB_ID}-${SLURM_NODEID}'" in torch_values
