"""A training script we did not write, through the generated job files on the local Slurm.

Users replace train.py with their own (the README's "Bring your own training script"). The
job must run such a script as it is: give it its rank variables, start it in the run
directory so that what it writes by relative path lands there (on scratch, not on the small
/project quota), and give it --output and --data only when it defines them, so a script that
parses its arguments strictly is not refused.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from .helpers import render
from .jobs import TIME_LIMIT_CHAIN_STEPS, job_env, log_of, run_job
from .slurm.fixtures import slurm_required

pytestmark = pytest.mark.slurm
if slurm_required():  # CI: a missing torch must fail the run, not skip the job tests
    import torch  # noqa: F401
else:
    pytest.importorskip("torch", reason="the job tests train with CPU PyTorch (pip install torch==2.13.0)")

LOCAL = {"site": "local", "account": "local", "partition": "batch", "gpus_per_node": 2}

# TEST STAND-IN, our own: a script that parses its arguments strictly (parse_args; an
# unknown option ends it with "unrecognized arguments"), takes no --output and no --data,
# prints one line per epoch and writes by relative path, as scripts written for a laptop do.
STRICT = """import argparse, json, os, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--notes", help="a file of the project, by relative path")
args = parser.parse_args()
rank = int(os.environ["RANK"])
for epoch in range(args.epochs):
    time.sleep(0.5)
    if rank == 0:
        print(f"epoch {epoch + 1} done", flush=True)
with open(args.notes) as notes, open(f"seen-rank{rank}.json", "w") as seen:
    json.dump({"argv": sys.argv[1:], "cwd": os.getcwd(), "notes": notes.read(),
               "env": {name: os.environ.get(name) for name in ("RUN_DIR", "DATA_DIR", "RANK", "LOCAL_RANK",
                                                               "WORLD_SIZE", "LUMI_SCAFFOLD_CPUS_PER_RANK")}}, seen)
"""


def test_a_strict_script_runs_in_the_run_directory(slurm_cluster, template, tmp_path, site_root, dataset):
    """A strict argparse script completes (not 'unrecognized arguments: --output'); its
    files written by relative path land in RUN_DIR; a relative path to a project file that
    the user passes still names that file; the job's data is in DATA_DIR, not in --data."""
    project = render(template, tmp_path / "p", **LOCAL)
    (project / "src/demo/train.py").write_text(STRICT)
    (project / "notes.txt").write_text("the project's notes\n")
    env = job_env(slurm_cluster, tmp_path, site_root, DATA_DIR=str(dataset[0]))
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", "--epochs", "2", "--notes", "notes.txt")
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert "unrecognized arguments" not in log and "epoch 2 done" in log, log
    run_dir = Path(env["OUTPUT_ROOT"]) / "demo"
    assert f"launch: in {run_dir}, these arguments name the project's files by absolute path: notes.txt" in log, log
    assert not list(project.rglob("seen-rank*.json")), "written into the project directory"
    for rank in (0, 1):
        seen = json.loads((run_dir / f"seen-rank{rank}.json").read_text())
        assert seen["cwd"] == str(run_dir) and seen["env"]["RUN_DIR"] == str(run_dir), seen
        assert seen["argv"] == ["--epochs", "2", "--notes", str(project / "notes.txt")], seen
        assert seen["notes"] == "the project's notes\n"
        assert seen["env"]["DATA_DIR"] == str(dataset[0])
        assert seen["env"]["RANK"] == str(rank) and seen["env"]["WORLD_SIZE"] == "2", seen
        assert seen["env"]["LOCAL_RANK"] == str(rank) and int(seen["env"]["LUMI_SCAFFOLD_CPUS_PER_RANK"]) >= 1, seen


# ------------------------------------------------------------------ the LUMI AI Guide's DDP script

# The script: the LUMI AI Guide's data-parallel example (PyTorch DDP, a ViT-B/16 on ImageNet
# from an HDF5 file), which prints one line per epoch and saves its weights by relative path.
# Its code is not copied into this repository: the test reads it from a clone of the Guide
# that LUMI_AI_GUIDE names (a work tree, or a bare git directory), at this commit.
GUIDE_REPO = "https://github.com/Lumi-supercomputer/LUMI-AI-Guide"
GUIDE_PATH = "05-multi-gpu-and-node/ddp_visiontransformer.py"
GUIDE_COMMIT = "a7e33871ec2987a3c2775bc78e4546fbf279221e"

# What we change in it, each asserted to apply. The CPU machines running this test have no
# GPUs: gloo in place of NCCL (RCCL on LUMI), no cuda device, DDP without device_ids. No
# download: the model from the stand-in below, without pretrained weights. Two epochs, not 10.
GUIDE_PATCHES = [
    ('dist.init_process_group(backend="nccl")', 'dist.init_process_group(backend="gloo")'),
    ("torch.cuda.set_device(local_rank)", "pass  # (no GPU here)"),
    ('vit_b_16(weights="DEFAULT").to(local_rank)', "vit_b_16(weights=None)"),
    ("DistributedDataParallel(model, device_ids=[local_rank])", "DistributedDataParallel(model)"),
    ("epochs=10", "epochs=2"),
]

# TEST STAND-IN for the Guide's dataset module (resources/hdf5_dataset.py, which reads the
# ImageNet subset the Guide downloads into an HDF5 file): the same class, on synthetic images.
STAND_IN_DATASET = """import torch
from torch.utils.data import Dataset


class HDF5Dataset(Dataset):
    def __init__(self, file_path, transform=None):
        self.transform = transform

    def __enter__(self):
        generator = torch.Generator().manual_seed(0)
        self.images = torch.rand(80, 3, 64, 64, generator=generator)
        self.labels = torch.randint(0, 10, (80,), generator=generator)
        return self

    def __exit__(self, *exc):
        pass

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        image = self.images[idx]
        return (self.transform(image) if self.transform else image), self.labels[idx]
"""

# TEST STAND-IN for the three torchvision names the script imports: PyPI has no CPU build of
# torchvision for torch 2.13.0 (its 0.28.0 wheel is built against the CUDA torch, and with the
# CPU torch importing it fails: "operator torchvision::nms does not exist"), and a real
# ViT-B/16 would take hours on these CPUs. The transforms do the same on tensors; vit_b_16 is
# a one-layer patch model with ViT-B/16's input (224 x 224, 16 x 16 patches) and 1000 classes.
STAND_IN_TORCHVISION = {
    "__init__.py": "",
    "transforms.py": """import torch
import torch.nn.functional as F


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, image):
        for transform in self.transforms:
            image = transform(image)
        return image


class Resize:
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        h, w = image.shape[-2:]
        scale = self.size / min(h, w)
        return F.interpolate(image[None], size=(round(h * scale), round(w * scale)), mode="bilinear")[0]


class CenterCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        h, w = image.shape[-2:]
        top, left = (h - self.size) // 2, (w - self.size) // 2
        return image[..., top:top + self.size, left:left + self.size]


class ToTensor:
    def __call__(self, image):
        return image.float()


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = torch.tensor(mean)[:, None, None], torch.tensor(std)[:, None, None]

    def __call__(self, image):
        return (image - self.mean) / self.std
""",
    "models.py": """from torch import nn


def vit_b_16(weights=None):
    assert weights is None, "no downloads in this test"
    return nn.Sequential(nn.Conv2d(3, 16, kernel_size=16, stride=16), nn.Flatten(2), nn.AdaptiveAvgPool1d(1),
                         nn.Flatten(), nn.Linear(16, 1000))
""",
}


def guide_script() -> str:
    """The Guide's script at GUIDE_COMMIT from the clone LUMI_AI_GUIDE names."""
    clone = os.environ.get("LUMI_AI_GUIDE", "")
    why = f"LUMI_AI_GUIDE names no clone of {GUIDE_REPO} (git clone it and export LUMI_AI_GUIDE=<its path>)"
    if clone:
        git_dir = Path(clone) / ".git" if (Path(clone) / ".git").exists() else Path(clone)
        shown = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{GUIDE_COMMIT}:{GUIDE_PATH}"],
                               capture_output=True, text=True)
        if shown.returncode == 0:
            return shown.stdout
        why = f"LUMI_AI_GUIDE={clone}: no {GUIDE_PATH} at {GUIDE_COMMIT} ({shown.stderr.strip()})"
    if os.environ.get("LUMI_SCAFFOLD_REQUIRE_AI_GUIDE"):
        pytest.fail(why + "; LUMI_SCAFFOLD_REQUIRE_AI_GUIDE is set, so it must run")
    pytest.skip(why)


def test_the_lumi_ai_guide_ddp_script_trains_in_the_run_directory(slurm_cluster, template, tmp_path, site_root):
    """The Guide's DDP script as train.py (2 ranks, srun): it completes, it got the rank
    variables it reads (LOCAL_RANK, RANK, and WORLD_SIZE, MASTER_ADDR, MASTER_PORT for
    init_process_group), it prints one line per epoch, and its weights, saved by relative
    path, land in the run directory, not in the project directory."""
    script = guide_script()
    for old, new in GUIDE_PATCHES:
        assert script.count(old) == 1, f"the Guide's script changed: {old!r} (update GUIDE_COMMIT and the patches)"
        script = script.replace(old, new)
    project = render(template, tmp_path / "p", **LOCAL)
    (project / "src/demo/train.py").write_text(script)
    (project / "src/resources").mkdir()
    (project / "src/resources/hdf5_dataset.py").write_text(STAND_IN_DATASET)
    (project / "src/demo/torchvision").mkdir()  # (beside train.py: first on its sys.path)
    for name, text in STAND_IN_TORCHVISION.items():
        (project / "src/demo/torchvision" / name).write_text(text)
    env = job_env(slurm_cluster, tmp_path, site_root)
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", timeout=300)
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert re.search(r"^rank 0/2 node \S+ local_rank 0 ", log, re.M) and re.search(r"^rank 1/2 node \S+ local_rank 1 ", log, re.M), log
    assert re.search(r"^Epoch 1, Training Loss: ", log, re.M) and re.search(r"^Epoch 2, Training Loss: ", log, re.M), log
    assert "Validation Accuracy: " in log and "Time elapsed (s): " in log, log
    run_dir = Path(env["OUTPUT_ROOT"]) / "demo"
    weights = run_dir / "vit_b_16_imagenet.pth"
    assert weights.is_file() and "module.4.weight" in torch_load(weights), list(run_dir.iterdir())
    assert not list(project.rglob("*.pth")), "weights written into the project directory"


def torch_load(path: Path) -> dict:
    import torch

    return torch.load(path, map_location="cpu")


# ------------------------------------------------------------------ saving at the time-limit warning


@pytest.mark.parametrize("framework", ["pytorch", "jax"])
def test_the_examples_save_at_the_time_limit_warning_and_the_next_job_resumes_there(
        slurm_cluster_timelimit, time_limit_chains, framework):
    """(Submitted by the session fixture time_limit_chains, tests/conftest.py.) At Slurm's
    warning both ranks stop at the same step S, rank 0 saves S and the job
    exits with 75 (runlog.TIME_LIMIT_EXIT) before its limit; the second job resumes from S,
    not from the last periodic checkpoint (every 37 steps), and finishes."""
    if framework not in time_limit_chains:
        pytest.importorskip("jax", reason="the JAX job tests need CPU JAX (pip install jax)")
    project, env, first = time_limit_chains[framework]
    slurm_cluster = slurm_cluster_timelimit
    result = slurm_cluster.wait(first, timeout=300)
    log = log_of(project, first)
    assert (result.state, result.exit_code) == ("FAILED", 75), log  # (not TIMEOUT: it ended itself)
    assert re.search(r"^time limit in \d+ s: job \d+ continues the run", log, re.M), log
    stopped = int(re.search(r"^time limit: stopped at step (\d+) on every (rank|process), saved it", log, re.M).group(1))
    run_dir = Path(env["OUTPUT_ROOT"]) / "demo"
    report = json.loads((run_dir / "reports" / f"{first}.json").read_text())
    assert report["ended"] == "time limit" and report["steps"]["last"] == stopped, report
    second = int(re.search(r"^chain: job (\d+) continues run demo", log, re.M).group(1))
    result = slurm_cluster.wait(second, timeout=300)
    log2 = log_of(project, second)
    assert result.state == "COMPLETED" and f"done: {TIME_LIMIT_CHAIN_STEPS} steps on 2 process(es)" in log2, log2
    assert int(re.search(r"resumed from \S+ at step (\d+)", log2).group(1)) == stopped, log2
    saved = sorted(int(re.search(r"(\d+)", p.name).group(1)) for p in run_dir.glob("*-0*.*") if p.suffix in (".pt", ".npz"))
    periodic = [step for step in saved if step < stopped]
    assert stopped in saved and periodic == list(range(37, stopped, 37)), saved
