"""Running generated projects' jobs on the local Slurm: the site model, datasets, the
environment a user has at sbatch time, logs.

Singularity cannot be installed on the CI machines: tests/slurm/fakebin/singularity stands
in for it (runs the command on the host after checking the image and every bind source), and
`module`, `rocprof`, `rocprofv3` and `rocm-smi` have stand-ins too. The LUMI file systems that
binds name (/pfs, /opt/cray, ...) are modelled under a test directory
(FAKE_SINGULARITY_SITE_ROOT), so a bind the model lacks fails the job like on LUMI.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import numpy as np

# What LUMI binds name, as directories (and one file) under the site model.
LUMI_PATHS = ["pfs", "scratch", "projappl", "project", "flash", "appl", "var/spool/slurmd", "opt/cray"]


def make_site_root(root: Path) -> Path:
    """A model of the LUMI paths that binds name, under ``root``."""
    for rel in LUMI_PATHS:
        (root / rel).mkdir(parents=True, exist_ok=True)
    (root / "usr/lib64").mkdir(parents=True, exist_ok=True)
    (root / "usr/lib64/libcxi.so.1").write_bytes(b"")
    return root


def shards(rng: np.random.Generator, count: int = 2, rows: int = 256) -> dict[str, bytes]:
    """``count`` .npz shards (x float32 N x 32, y int64), as the examples read them."""
    out = {}
    for shard in range(count):
        x = rng.standard_normal((rows, 32)).astype(np.float32)
        buffer = io.BytesIO()
        np.savez(buffer, x=x, y=x[:, :4].argmax(axis=1))
        out[f"shard-{shard}.npz"] = buffer.getvalue()
    return out


def make_dataset(root: Path) -> tuple[Path, Path]:
    """A dataset as a directory of shards and as a .tar of the same shards (for pre-staging)."""
    files = shards(np.random.default_rng(1))
    directory = root / "dataset"
    directory.mkdir(parents=True, exist_ok=True)
    archive = root / "train.tar"
    with tarfile.open(archive, "w") as tar:
        for name, data in files.items():
            (directory / name).write_bytes(data)
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return directory, archive


# TEST STAND-IN for a training script: each step it beats as the examples do (heartbeat.py,
# from scripts/lib/python on the jobs' PYTHONPATH) and waits for every rank (a collective, through files); rank 0
# saves the step as its checkpoint and a new job resumes from it. FAKE_FAULT=hang|die makes
# the last rank hang (in code of its own, a collective that never returns) or exit at step 5,
# on every node or only on FAKE_BAD_NODE; FAKE_FAULT=stall makes it stop where the others wait
# (their barrier), before it beats step 5: a node that stopped, whose stacks look like every
# other rank's (as py-spy shows them) and whose heartbeat is behind; FAKE_FAULT=hang-all makes
# every rank wait at step 5 (a software hang: no rank behind another), except in the job that replaces a hung one
# (LUMI_SCAFFOLD_STALLED_BEFORE set). It registers faulthandler on SIGUSR2 as the examples do.
STAND_IN_TRAIN = """import argparse, faulthandler, os, signal, sys, time
from heartbeat import Heartbeat
faulthandler.register(signal.SIGUSR2, all_threads=True)
parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
args, _ = parser.parse_known_args()
output = os.environ["RUN_DIR"]
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
node = os.environ["SLURMD_NODENAME"]
if os.environ.get("NCCL_DEBUG_FILE"):
    with open(os.environ["NCCL_DEBUG_FILE"], "a") as log:
        log.write("nid005000:1:1 [0] NCCL INFO NET/OFI Selected Provider is cxi (found 4 nics)\\n")
barrier = os.path.join(output, "barrier-" + os.environ["SLURM_JOB_ID"])
os.makedirs(barrier, exist_ok=True)
checkpoint = os.path.join(output, "checkpoint")
start = int(open(checkpoint).read()) if os.path.exists(checkpoint) else 0
if rank == 0:
    print(f"rank 0 on {node}: resumed at step {start}" if start else f"rank 0 on {node}: new run", flush=True)
fault = os.environ.get("FAKE_FAULT")
faulty = os.environ.get("FAKE_BAD_NODE", node) == node and rank == world - 1
if fault == "hang-all":
    faulty, fault = not os.environ.get("LUMI_SCAFFOLD_STALLED_BEFORE"), "hang"
heartbeat = Heartbeat()  # (it writes nothing with PROGRESS_TIMEOUT=0: no LUMI_SCAFFOLD_HEARTBEAT)

def collective_that_never_returns():
    while True:
        time.sleep(1)

for step in range(start + 1, args.steps + 1):
    if faulty and step == 5 and fault == "hang":
        collective_that_never_returns()
    if faulty and step == 5 and fault == "die":
        print(f"rank {rank}: dying at step 5", flush=True)
        sys.exit(7)
    stalled = faulty and step == 5 and fault == "stall"
    if not stalled:
        heartbeat.beat(step)
        open(os.path.join(barrier, f"{step}-{rank}"), "w").close()
    while stalled or sum(name.startswith(f"{step}-") for name in os.listdir(barrier)) < world:
        time.sleep(0.2)
    if rank == 0:
        with open(checkpoint + ".tmp", "w") as saved:
            saved.write(str(step))
        os.replace(checkpoint + ".tmp", checkpoint)
    time.sleep(0.3)
if rank == 0:
    print(f"done: {args.steps} steps on {node}", flush=True)
"""


def sleep_in(train: Path, anchor: str, indent: str, step: int = 5) -> None:
    """Makes a rendered example's rank 1 sleep for good when it reaches ``step`` of a run's first
    job (``start == 0``), at ``anchor`` (the line before its heartbeat of that step). The
    examples carry no test hook: the sleep goes into the project's copy."""
    text = train.read_text()
    assert text.count(anchor) == 1, f"{train}: the example changed; {anchor!r} is where the test puts its hang"
    train.write_text(text.replace(anchor, f"{anchor}{indent}if rank == 1 and step == {step} and start == 0:\n"
                                          f"{indent}    time.sleep(10**6)\n", 1))


def job_env(cluster, work: Path, site_root: Path, **extra: str) -> dict[str, str]:
    """Environment a user would have at sbatch time, plus the stand-ins' logs."""
    work.mkdir(parents=True, exist_ok=True)
    image = work / "image.sif"
    image.write_bytes(b"")
    return cluster.env_with({
        "SIF": str(image),
        "FAKE_SINGULARITY_SITE_ROOT": str(site_root),
        "FAKE_SINGULARITY_LOG": str(work / "singularity.jsonl"),
        "FAKE_MODULE_LOG": str(work / "module.log"),
        "FAKE_PROFILER_LOG": str(work / "profiler.log"),
        "OUTPUT_ROOT": str(work / "outputs"),
        "DATA_DIR": str(work / "no-data"),
        "NODE_TMP": str(work / "node-tmp"),
        "KERNEL_CACHE_STORE": str(work / "kernel-caches"),  # (the default is on the site's /scratch)
        # One compute thread per rank: up to 8 ranks share this machine's 2 cores, and
        # OpenMP's spinning threads would otherwise take turns with every other test.
        "OMP_NUM_THREADS": "1",
        **extra,
    })


# A time-limit chain's steps: 300 of 0.2 s is 60 s of training, more than the first job's
# 1-minute limit, so that job can end only at Slurm's warning (or be killed at its limit:
# TIMEOUT fails the test). Slurm may send the warning ~30 s late.
TIME_LIMIT_CHAIN_STEPS = 300


def submit_time_limit_chain(cluster, template: Path, work: Path, site_root: Path, answers: dict[str, Any]
                            ) -> tuple[Path, dict[str, str], int]:
    """A chain of 2 (CHAIN=2) of the example whose first job has a 1-minute limit and Slurm's warning
    45 s before it (--signal=B:USR1@45, as the job file's own, sooner): (project, env, first job)."""
    from .helpers import render

    project = render(template, work / "p", **answers, walltime="00:05:00")
    env = job_env(cluster, work, site_root)
    first = cluster.sbatch(["--time=00:01:00", "--signal=B:USR1@45", "jobs/train.sbatch", 
                            "--steps", str(TIME_LIMIT_CHAIN_STEPS), "--seconds-per-step", "0.2",
                            "--checkpoint-every", "37", "--keep-checkpoints", "20"], cwd=project, env={**env, "CHAIN": "2"})
    return project, env, first


def image_env(directory: Path, **variables: str) -> dict[str, str]:
    """The stand-in image's own environment (its %environment: WITH_CONDA in the former LUST
    images), as the variable that points the stand-in container at it."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "image-environment"
    path.write_text("".join(f"{name}={value}\n" for name, value in variables.items()))
    return {"FAKE_SINGULARITY_IMAGE_ENV": str(path)}


def run_job(cluster, project: Path, env: dict, script: str = "jobs/train.sbatch", *args: str, timeout: float = 240):
    job_id = cluster.sbatch([script, *args], cwd=project, env=env)
    return job_id, cluster.wait(job_id, timeout=timeout)


def heartbeats(project: Path, job_id: int, node_tmp: Path = Path("/tmp")) -> dict[int, tuple[str, int]]:
    """rank -> (node, step) from the progress watchdog's heartbeat records of a job's last
    watched step: each rank's record in node-local storage (the job's TMPDIR under
    ``node_tmp``, a directory heartbeat-<start>@<node> that scripts/lib/run.sh names, which the
    job keeps only when submitted with KEEP_NODE_TMP=1; the shared directory in logs/ is gone
    after a clean job)."""
    found: dict[str, dict[int, tuple[str, int]]] = {}
    for path in node_tmp.glob(f"*-tmp-{job_id}-*/heartbeat-*@*/rank*"):
        if path.name.endswith(".tmp"):
            continue
        started, node = path.parent.name.removeprefix("heartbeat-").split("@")
        rank, step = path.read_text().split()[:2]
        found.setdefault(started, {})[int(rank)] = (node, int(step))
    assert (project / "logs").is_dir()
    return found[max(found, key=int)] if found else {}


def log_of(project: Path, job_id: int) -> str:
    return "\n".join(p.read_text() for p in sorted((project / "logs").glob(f"*-{job_id}.out")))
