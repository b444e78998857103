"""Training scripts we did not write, through the generated job files on the local Slurm.

The command is the user's (issue 41): it stands in the job file's COMMAND, runs from WORKDIR
(the project directory by default) with every argument exactly as written, gets its world
from the environment only (RANK..., RUN_DIR, CHECKPOINT_DIR, DATA_DIR), and the job log
prints the whole step line. Job options (CHAIN) never reach the script's arguments.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from .helpers import need_module, render
from .jobs import TIME_LIMIT_CHAIN_STEPS, job_env, log_of, run_job
from .slurm.fixtures import slurm_required

pytestmark = pytest.mark.slurm
# CI: a missing torch must fail the run, not skip the job tests
need_module("torch", "the job tests train with CPU PyTorch (pip install torch==2.13.0)", required=slurm_required())

LOCAL = {"site": "local", "account": "local", "partition": "batch", "gpus_per_node": 2}

# TEST STAND-IN, our own: a script that parses its arguments strictly (parse_args; an
# unknown option ends it with "unrecognized arguments"), with a --data of its own that names
# a dataset, not a directory (choices), a file of the project named by relative path, and its
# own resume: a state file it writes by relative path (--save-dir), as scripts written for a
# laptop do. Each epoch takes EPOCH_SECONDS; one line per epoch.
STRICT = """import argparse, json, os, sys, time
parser = argparse.ArgumentParser()
parser.add_argument("--data", choices=["toy", "mnist"], required=True)
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--notes", help="a file of the project, by relative path")
parser.add_argument("--save-dir", default="saved")
args = parser.parse_args()
rank = int(os.environ["RANK"])
os.makedirs(args.save_dir, exist_ok=True)
state = os.path.join(args.save_dir, "state.json")
start = json.load(open(state))["epoch"] if os.path.exists(state) else 0
if rank == 0:
    print(f"resuming at epoch {start}" if start else "new run", flush=True)
with open(args.notes) as notes, open(f"{args.save_dir}/seen-{os.environ['SLURM_JOB_ID']}-rank{rank}.json", "w") as seen:
    json.dump({"argv": sys.argv[1:], "cwd": os.getcwd(), "notes": notes.read(),
               "env": {name: os.environ.get(name) for name in ("RUN_DIR", "CHECKPOINT_DIR", "DATA_DIR", "RANK",
                                                               "LOCAL_RANK", "WORLD_SIZE", "LUMI_SCAFFOLD_CPUS_PER_RANK")}}, seen)
for epoch in range(start, args.epochs):
    time.sleep(float(os.environ.get("EPOCH_SECONDS", "0.5")))
    if rank == 0:
        with open(state + ".tmp", "w") as saved:
            json.dump({"epoch": epoch + 1}, saved)
        os.replace(state + ".tmp", state)
        print(f"epoch {epoch + 1} done", flush=True)
"""
STRICT_COMMAND = ["--data", "toy", "--epochs", "4", "--notes", "notes.txt"]


def with_command(project: Path, command: str, workdir: str = '"${PROJECT_DIR}"') -> None:
    """The user's edit of jobs/train.sbatch: their command in COMMAND, and where it starts."""
    job = project / "jobs/train.sbatch"
    text = job.read_text()
    assert text.count("\nCOMMAND=(") == 1 and text.count('\nWORKDIR="${PROJECT_DIR}"\n') == 1, text
    text = re.sub(r"\nCOMMAND=\(.*\)\n", f"\nCOMMAND=({command})\n", text)
    job.write_text(text.replace('\nWORKDIR="${PROJECT_DIR}"\n', f"\nWORKDIR={workdir}\n"))


def step_line(log: str) -> str:
    lines = [line for line in log.splitlines() if line.startswith("step: srun ")]
    assert len(lines) == 1, log
    return lines[0]


def test_a_strict_script_with_its_own_data_option_runs_in_a_chain_unchanged(slurm_cluster, template, tmp_path, site_root,
                                                                            dataset):
    """CHAIN=2 with a strict argparse script whose --data means a dataset name: each job gives
    it exactly the arguments of COMMAND (nothing added: no --data DIR, no --output, no chain
    option), starts it in the project directory (its relative --notes and its relative saves
    work as on a laptop), and prints the step line with the user's command at its end. At the
    time-limit warning (sent here as Slurm sends it, then the end of the job) the next job of
    the chain resumes from the script's own state and finishes; its data is in DATA_DIR."""
    project = render(template, tmp_path / "p", **LOCAL)
    (project / "src/demo/train.py").write_text(STRICT)
    (project / "notes.txt").write_text("the project's notes\n")
    with_command(project, "python -u src/demo/train.py " + " ".join(STRICT_COMMAND))
    env = job_env(slurm_cluster, tmp_path, site_root, DATA_DIR=str(dataset[0]), EPOCH_SECONDS="3", CHAIN="2")
    first = slurm_cluster.sbatch(["jobs/train.sbatch"], cwd=project, env=env)
    deadline = time.monotonic() + 120
    while "epoch 1 done" not in log_of(project, first) and time.monotonic() < deadline:
        time.sleep(0.5)
    # Slurm's time-limit warning to the batch shell (--signal=B:USR1), then the end of the job.
    slurm_cluster.run(["scancel", "--batch", "--signal=USR1", str(first)])
    time.sleep(1)
    slurm_cluster.run(["scancel", str(first)])
    slurm_cluster.wait(first, timeout=60)
    log = log_of(project, first)
    second = int(re.search(r"^chain: job (\d+) continues run demo", log, re.M).group(1))
    assert re.search(r"^time limit in \d+ s: job \d+ continues the run", log, re.M), log
    result = slurm_cluster.wait(second, timeout=120)
    log2 = log_of(project, second)
    assert result.state == "COMPLETED" and "unrecognized arguments" not in log + log2, log + log2
    assert re.search(r"^resuming at epoch [1-3]$", log2, re.M) and "epoch 4 done" in log2, log2
    for job, text in ((first, log), (second, log2)):
        assert step_line(text).endswith(f"/scripts/lib/run.sh python -u src/demo/train.py {' '.join(STRICT_COMMAND)}"), text
        assert f" --chdir={project} " in step_line(text)
        for rank in (0, 1):
            seen = json.loads((project / "saved" / f"seen-{job}-rank{rank}.json").read_text())
            assert seen["argv"] == STRICT_COMMAND and seen["cwd"] == str(project), seen
            assert seen["notes"] == "the project's notes\n" and seen["env"]["DATA_DIR"] == str(dataset[0]), seen
            assert seen["env"]["RUN_DIR"] == str(Path(env["OUTPUT_ROOT"]) / "demo"), seen
            assert seen["env"]["RANK"] == str(rank) and seen["env"]["WORLD_SIZE"] == "2", seen


def test_a_command_started_in_the_run_directory_writes_there(slurm_cluster, template, tmp_path, site_root):
    """WORKDIR="${RUN_DIR}" (the job file's other choice): files the script writes by relative
    path land in the run directory, and the project's files are named by absolute path."""
    project = render(template, tmp_path / "p", **LOCAL)
    (project / "src/demo/train.py").write_text(STRICT)
    (project / "notes.txt").write_text("notes\n")
    with_command(project, 'python -u "${PROJECT_DIR}/src/demo/train.py" --data mnist --notes "${PROJECT_DIR}/notes.txt"',
                 workdir='"${RUN_DIR}"')
    env = job_env(slurm_cluster, tmp_path, site_root, EPOCH_SECONDS="0.1")
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch")
    log = log_of(project, job_id)
    run_dir = Path(env["OUTPUT_ROOT"]) / "demo"
    assert result.state == "COMPLETED" and f" --chdir={run_dir} " in step_line(log), log
    assert (run_dir / "saved" / "state.json").is_file() and not (project / "saved").exists()


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


def test_the_lumi_ai_guide_ddp_script_trains_from_the_project_directory(slurm_cluster, template, tmp_path, site_root):
    """The Guide's DDP script as train.py (2 ranks, srun): it completes, it got the rank
    variables it reads (LOCAL_RANK, RANK, and WORLD_SIZE, MASTER_ADDR, MASTER_PORT for
    init_process_group), it prints one line per epoch, and its weights, saved by relative
    path, land where the Guide expects them: in the directory it starts in (WORKDIR)."""
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
    # The Guide's scripts start in their project directory (its README runs them from there),
    # as the jobs' default WORKDIR does: the weights it saves by relative path land there.
    weights = project / "vit_b_16_imagenet.pth"
    assert weights.is_file() and "module.4.weight" in torch_load(weights), sorted(p.name for p in project.iterdir())


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
        need_module("jax", "the JAX job tests need CPU JAX (pip install jax)")
    project, env, first = time_limit_chains[framework]
    slurm_cluster = slurm_cluster_timelimit
    result = slurm_cluster.wait(first, timeout=300)
    log = log_of(project, first)
    assert (result.state, result.exit_code) == ("FAILED", 75), log  # (not TIMEOUT: it ended itself)
    # submitted with --signal=B:USR1@45 over the job file's own lead: the time Slurm holds left,
    # within the 1-minute limit (not the job file's lead of minutes). Not <= 45: Slurm may send
    # the signal up to 60 s before the time asked for (sbatch --signal, its event resolution);
    # a CI run saw "time limit in 46 s".
    left = re.search(r"^time limit in (\d+) s: job \d+ continues the run", log, re.M)
    assert left and int(left.group(1)) <= 60, log
    stopped = int(re.search(r"^time limit: stopped at step (\d+) on every (rank|process), saved it", log, re.M).group(1))
    run_dir = Path(env["OUTPUT_ROOT"]) / "demo"
    report = json.loads((run_dir / "reports" / f"{first}.json").read_text())
    assert report["ended"] == "time limit" and report["steps"]["last"] == stopped, report
    second = int(re.search(r"^chain: job (\d+) continues run demo", log, re.M).group(1))
    result = slurm_cluster.wait(second, timeout=300)
    log2 = log_of(project, second)
    assert result.state == "COMPLETED" and f"done: {TIME_LIMIT_CHAIN_STEPS} steps on 2 process(es)" in log2, log2
    assert int(re.search(r"resumed from \S+ at step (\d+)", log2).group(1)) == stopped, log2
    saved = sorted(int(re.search(r"(\d+)", p.name).group(1)) for p in (run_dir / "checkpoints").glob("*-0*.*") if p.suffix in (".pt", ".npz"))
    periodic = [step for step in saved if step < stopped]
    assert stopped in saved and periodic == list(range(37, stopped, 37)), saved
