"""Public training scripts nobody here wrote, through the generated job files on the local Slurm.

What a user does with issue 41's job file: render a project, put their training code in the
project directory, write their command in COMMAND (and, to resume, a line or two of bash before
train_job), and submit. Here the code is four public scripts (tests/public_scripts.py: each
one's repository, commit, the patches this CPU-only machine forces, our stand-ins and synthetic
data), laid out in the project directory as in their repositories, so that their relative
paths work from WORKDIR (the project directory). Each test checks what the user sees: the job
completes (or, in a chain, the next job goes on from the script's own checkpoint), every job's
log prints one step line ending with exactly the words of COMMAND and the arguments given to
sbatch, and the script got those words and nothing else.

These tests skip where the clones are missing: in CI (no GitHub access there) they skip with
why_missing()'s reason, e.g. "no clone of https://github.com/pytorch/examples under
LUMI_SCAFFOLD_PUBLIC_REPOS=''". To run them: clone pytorch/examples, karpathy/nanoGPT,
karpathy/nanochat and thuml/OpenLTM into <dir>/<owner>+<name>, export
LUMI_SCAFFOLD_PUBLIC_REPOS=<dir>, and pip install numpy pandas scikit-learn matplotlib einops
rustbpe tiktoken pyarrow (what the scripts import); LUMI_SCAFFOLD_REQUIRE_PUBLIC_SCRIPTS=1 turns
a skip into a failure.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from .helpers import need_module, render
from .jobs import job_env, log_of, run_job
from .public_scripts import SCRIPTS, job_env as script_env, materialize, skip_or_fail
from .slurm.fixtures import slurm_required
from .test_own_script_jobs import LOCAL, step_line, with_command

pytestmark = pytest.mark.slurm
# CI: a missing torch must fail the run, not skip the job tests
need_module("torch", "the job tests train with CPU PyTorch (pip install torch==2.13.0)", required=slurm_required())

# Where each script comes from (repository, the file COMMAND runs, commit): the same as
# tests/public_scripts.py, which fetches, patches and lays them out; checked in public_project.
ORIGINS = {
    "multinode": ("pytorch/examples", "distributed/ddp-tutorial-series/multinode.py",
                  "77f55b912142e11fcfdf5b530231fb9c52f181e8"),
    "nanogpt": ("karpathy/nanoGPT", "train.py", "3adf61e154c3fe3fca428ad6bc3818b27a3b8291"),
    "nanochat": ("karpathy/nanochat", "scripts/base_train.py", "92d63d4e8bb4df75c3b71618f31ddde2378b2bcd"),
    "openltm": ("thuml/OpenLTM", "run.py", "0b3005099d380ecc00d512f72553c7fe8fccca99"),
}


def public_project(name: str, template: Path, tmp_path: Path, **answers) -> Path:
    """A project on the test-only local site with script `name`'s repository files (patched,
    with stand-ins and data: tests/public_scripts.py) at their places in its directory."""
    skip_or_fail(name)
    script = SCRIPTS[name]
    repo, path, commit = ORIGINS[name]
    assert (script.repo, script.commit) == (repo, commit), f"{name}: tests/public_scripts.py names another source"
    assert any(path == p or path.startswith(p + "/") for p in script.paths), (path, script.paths)
    project = render(template, tmp_path / "p", **LOCAL, **answers)
    materialize(name, project)
    assert (project / path).is_file() and (project / "scripts/lib/job.sh").is_file()  # (nothing of ours replaced)
    return project


def write_job(project: Path, command: list[str], resume: str = "") -> None:
    """The user's edit of jobs/train.sbatch: COMMAND, and what makes a chain's next job resume,
    in bash before train_job (the job file runs in the project directory, as sbatch was)."""
    with_command(project, shlex.join(command))
    if resume:
        job = project / "jobs/train.sbatch"
        text = job.read_text()
        assert text.count('\ntrain_job "$@"\n') == 1, text
        job.write_text(text.replace('\ntrain_job "$@"\n', f'\n{resume}\n\ntrain_job "$@"\n'))


def assert_step(log: str, project: Path, words: list[str], launcher: str = "srun") -> None:
    """The log's one step line starts COMMAND in the project directory and ends with exactly
    `words` (COMMAND, then the arguments given to sbatch): nothing added, nothing dropped."""
    step = shlex.split(step_line(log).removeprefix("step: "))
    run_sh = f"{project}/scripts/lib/run.sh"
    at = [i for i, word in enumerate(step) if word == run_sh]
    assert step[:3] == ["srun", "--kill-on-bad-exit=1", f"--chdir={project}"], step
    if launcher == "torchrun":
        assert len(at) == 2 and step[at[0] + 1:at[0] + 4] == ["python", "-m", "torch.distributed.run"], step
        assert step[at[1] - 1] == "--no-python", step
    else:
        assert len(at) == 1, step
    assert step[at[-1] + 1:] == words, f"step line: {step[at[-1] + 1:]}\nwritten:   {words}"


def container_commands(env: dict[str, str]) -> list[list[str]]:
    """What each container started ran (the stand-in singularity's log): run.sh, then its arguments."""
    return [record["cmd"] for record in map(json.loads, Path(env["FAKE_SINGULARITY_LOG"]).read_text().splitlines())]


def wait_for(check, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.1)


def saved(path: Path, key: str):
    """`key` of the checkpoint a script saved with torch.save, once it is whole; else None."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)[key]
    except Exception:  # not there yet, or being written
        return None


# Slurm's time-limit warning comes at a time of its own (--signal=B:USR1@300: 300 s before the
# limit), and these scripts do not act on it: they train and save on until the job ends at its
# limit. The tests send the warning as soon as the job file has set its trap (it has queued the
# chain's next job), wait until the script has saved, and end the job at once: a job's end
# right after a save, well before the next, so that no save is cut short (these scripts'
# torch.save writes the file in place, as many do).
def time_limit_warning(cluster, project: Path, job: int) -> None:
    """Slurm's warning to the batch shell, as --signal=B:USR1 sends it."""
    wait_for(lambda: re.search(r"^chain: job \d+ continues run demo", log_of(project, job), re.M), f"chain line in job {job}'s log")
    cluster.run(["scancel", "--batch", "--signal=USR1", str(job)])
    wait_for(lambda: re.search(r"^time limit in \d+ s: job \d+ continues the run", log_of(project, job), re.M),
             f"time-limit line in job {job}'s log", timeout=30)


def time_limit_ends(cluster, project: Path, job: int) -> tuple[str, int]:
    """The end of a warned job, as at its time limit; its log and the chain's next job."""
    cluster.run(["scancel", str(job)])
    result = cluster.wait(job, timeout=60)
    log = log_of(project, job)
    assert result.state == "CANCELLED", (result, log)  # (not COMPLETED: it was still training)
    assert "fault: time limit" in log and "cancelling job" not in log, log
    found = re.search(r"^chain: job (\d+) continues run demo", log, re.M)
    assert found, log
    return log, int(found.group(1))


# ------------------------------------------------------------------ 1. positional arguments, its own snapshot


def test_positional_arguments_and_the_scripts_own_snapshot_resume_in_a_chain(slurm_cluster, template, tmp_path, site_root):
    """pytorch/examples distributed/ddp-tutorial-series/multinode.py (`TOTAL_EPOCHS SAVE_EVERY
    --batch_size N`: positional arguments, strict argparse) with CHAIN=2, --batch_size given
    to sbatch after the job file: both jobs' step lines end with COMMAND and that argument; the
    first saves snapshot.pt by relative path in the project directory and ends at its time
    limit, after the warning; the second (the same job file and arguments) resumes from the
    snapshot by itself, with nothing in the job file for it, and completes."""
    project = public_project("multinode", template, tmp_path)
    # ADAPTATION: 6 epochs of batch 8 (128 steps, under 1 s here), a snapshot every 2, not
    # the README's `50 10`: the first job is still training after its second snapshot.
    command = ["python", "distributed/ddp-tutorial-series/multinode.py", "6", "2"]
    arguments = ["--batch_size", "8"]
    write_job(project, command)
    env = job_env(slurm_cluster, tmp_path, site_root, CHAIN="2")
    first = slurm_cluster.sbatch(["jobs/train.sbatch", *arguments], cwd=project, env=env)
    time_limit_warning(slurm_cluster, project, first)
    # (EPOCHS_RUN: the epoch just trained, where a resumed run starts again; 0, 2, 4)
    wait_for(lambda: (saved(project / "snapshot.pt", "EPOCHS_RUN") or 0) >= 2, "a second snapshot in the project directory")
    log, second = time_limit_ends(slurm_cluster, project, first)
    result = slurm_cluster.wait(second, timeout=180)
    log2 = log_of(project, second)
    assert result.state == "COMPLETED", log2
    for text in (log, log2):
        assert_step(text, project, command + arguments)
    resumed = {int(n) for n in re.findall(r"Resuming training from snapshot at Epoch (\d+)", log2)}
    assert len(resumed) == 1 and resumed <= {2, 4}, log2  # (both ranks load it)
    epochs = [int(n) for n in re.findall(r"\[GPU0\] Epoch (\d+) \| Batchsize: 8 \| Steps: 128", log2)]
    assert epochs == list(range(min(resumed), 6)), log2
    assert re.search(r"\[GPU1\] Epoch 5 \| Batchsize: 8 \| Steps: 128", log2), log2
    ran = [cmd for cmd in container_commands(env) if "distributed/ddp-tutorial-series/multinode.py" in cmd]
    assert len(ran) == 4 and all(cmd[1:] == command + arguments for cmd in ran), ran


# ------------------------------------------------------------------ 2. --key=value, relative reads, a resume line


def test_configurator_arguments_relative_reads_and_a_resume_line_in_the_job_file(slurm_cluster, template, tmp_path, site_root):
    """karpathy/nanoGPT train.py (`config/FILE.py --key=value ...`, read by its configurator.py,
    and its data from data/shakespeare_char/, all by relative path) with CHAIN=2: both jobs
    read them from the project directory; the first saves out-shakespeare-char/ckpt.pt and
    ends at its time limit, after the warning; the user's line before train_job adds
    --init_from=resume where the checkpoint is, so only the second job's step line has it at
    its end, and that job goes on from the checkpoint and completes."""
    project = public_project("nanogpt", template, tmp_path)
    script = SCRIPTS["nanogpt"]
    # ADAPTATION: tests/public_scripts.py's command (CPU, gloo, a 1-layer model), with 100
    # iterations and an evaluation and a checkpoint every 25 (about 1 s apart here), so that
    # the first job is still training after its first checkpoint.
    command = [word for word in script.command if not word.startswith(("--max_iters=", "--lr_decay_iters=",
                                                                        "--eval_interval=", "--log_interval="))]
    command += ["--max_iters=100", "--lr_decay_iters=100", "--eval_interval=25", "--log_interval=5"]
    # The user's lines (tests/public_scripts.py: NANOGPT.resume).
    resume = "# nanoGPT goes on from its checkpoint only when told\n" + script.resume
    write_job(project, command, resume)
    env = job_env(slurm_cluster, tmp_path, site_root, CHAIN="2", **script_env("nanogpt", project))
    first = slurm_cluster.sbatch(["jobs/train.sbatch"], cwd=project, env=env)
    time_limit_warning(slurm_cluster, project, first)
    wait_for(lambda: saved(project / "out-shakespeare-char/ckpt.pt", "iter_num"), "out-shakespeare-char/ckpt.pt")
    log, second = time_limit_ends(slurm_cluster, project, first)
    result = slurm_cluster.wait(second, timeout=180)
    log2 = log_of(project, second)
    assert result.state == "COMPLETED", log2
    assert_step(log, project, command)
    assert_step(log2, project, command + ["--init_from=resume"])
    for text in (log, log2):  # (both ranks)
        assert text.count("Overriding config with config/train_shakespeare_char.py") == 2, text
        assert text.count("found vocab_size = 30 (inside data/shakespeare_char/meta.pkl)") == 2, text
    assert "Resuming training from out-shakespeare-char" in log2, log2
    iters = [int(n) for n in re.findall(r"iter (\d+): loss ", log2)]
    assert iters[0] in (25, 50, 75) and iters[-1] == 100, log2  # (from the checkpoint, to the end)
    ran = [cmd for cmd in container_commands(env) if "train.py" in cmd]
    assert [cmd[1:] for cmd in ran] == [command] * 2 + [command + ["--init_from=resume"]] * 2, ran


# ------------------------------------------------------------------ 3. python -m, a package of the project


def test_python_dash_m_of_a_package_in_the_project_directory(slurm_cluster, template, tmp_path, site_root):
    """karpathy/nanochat `python -m scripts.base_train ...` (its README runs it from the
    repository root: nanochat.* and scripts.* import from there), its data, tokenizer and
    checkpoints in NANOCHAT_BASE_DIR from the environment: the job completes, both ranks in
    one process group of 2, and its step line ends with exactly the words of COMMAND."""
    project = public_project("nanochat", template, tmp_path)
    script = SCRIPTS["nanochat"]
    command = list(script.command)  # (its arguments: tests/public_scripts.py, for a CPU and seconds)
    # The user's lines for a next job (tests/public_scripts.py: NANOCHAT.resume): nothing
    # added in this one, which finds no checkpoint.
    write_job(project, command, "# go on from nanochat's newest checkpoint\n" + script.resume)
    # ADAPTATION (tests/public_scripts.py): NANOCHAT_BASE_DIR in the project, torch.compile off.
    env = job_env(slurm_cluster, tmp_path, site_root, **script_env("nanochat", project))
    job, result = run_job(slurm_cluster, project, env, timeout=180)
    log = log_of(project, job)
    assert result.state == "COMPLETED", log
    assert_step(log, project, command)
    assert re.search(r"step 00005/00006 \(", log) and re.search(r"Step 00006 \| Validation bpb: ", log), log
    saved = project / "nanochat_base/base_checkpoints/d2"
    assert {p.name for p in saved.glob("optim_000006_rank*.pt")} == {"optim_000006_rank0.pt", "optim_000006_rank1.pt"}
    assert "Distributed world size: 2" in log, log
    ran = [cmd for cmd in container_commands(env) if "scripts.base_train" in cmd]
    assert len(ran) == 2 and all(cmd[1:] == command for cmd in ran), ran
    # The next job would resume from step 6: the job file's dry run (lumi-scaffold explain's) prints its step.
    dry = subprocess.run(["bash", "jobs/train.sbatch"], cwd=project, env={**env, "LUMI_SCAFFOLD_DRY_RUN": "1"},
                         capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert shlex.split(step_line(dry.stdout))[-len(command) - 1:] == [*command, "--resume-from-step=6"], dry.stdout


# ------------------------------------------------------------------ 4. strict argparse with its own --data


def test_a_strict_public_script_with_its_own_data_option_runs_unchanged_in_a_chain(slurm_cluster, template, tmp_path,
                                                                                   site_root):
    """thuml/OpenLTM run.py (strict argparse; --data is its dataset TYPE, --root_path and
    --data_path its files; --ddp reads RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)
    with its command unchanged, CHAIN=2: the first job starts training and ends at the
    time-limit warning; the script has no resume, so the second runs it again from the start
    and completes. Both jobs ran exactly the words of COMMAND on both ranks, and no
    "unrecognized arguments"."""
    project = public_project("openltm", template, tmp_path)
    # Its README's arguments (tests/public_scripts.py), with our CSV in ./dataset/, a model
    # of seconds, and --num_workers 1 (ADAPTATION there: its DDP loaders need a worker).
    command = list(SCRIPTS["openltm"].command)
    write_job(project, command)
    env = job_env(slurm_cluster, tmp_path, site_root, CHAIN="2")
    first = slurm_cluster.sbatch(["jobs/train.sbatch"], cwd=project, env=env)
    time_limit_warning(slurm_cluster, project, first)
    # Its own checkpoint directory (./checkpoints/<setting>/), made when training starts: past parse_args.
    wait_for(lambda: any((project / "checkpoints").glob("forecast_syn_timer_xl_*")), "checkpoints/forecast_syn_timer_xl_*")
    log, second = time_limit_ends(slurm_cluster, project, first)
    result = slurm_cluster.wait(second, timeout=180)
    log2 = log_of(project, second)
    assert result.state == "COMPLETED", log2
    assert "unrecognized arguments" not in log + log2 and "usage: run.py" not in log + log2, log + log2
    for text in (log, log2):
        assert_step(text, project, command)
    for rank in (0, 1):  # ("ip port world rank local_rank gpus", from the environment)
        assert re.search(rf"^\S+ \d+ 2 {rank} {rank} 0$", log2, re.M), log2
    assert re.search(r"Epoch: 2, Steps: \d+ \| Vali Loss: ", log2) and ">>>>>>>testing : forecast_syn_timer_xl_" in log2, log2
    ran = [cmd for cmd in container_commands(env) if "run.py" in cmd]
    assert len(ran) == 4 and all(cmd[1:] == command for cmd in ran), ran


# ------------------------------------------------------------------ 1 again, under torchrun


def test_positional_arguments_under_the_torchrun_launcher(slurm_cluster, template, tmp_path, site_root):
    """multinode.py in a project rendered with launcher=torchrun: one task per node starts
    torchrun, which starts COMMAND through run.sh for each of its 2 workers (RANK and
    LOCAL_RANK from torchrun); the step line ends with exactly COMMAND and the job completes."""
    project = public_project("multinode", template, tmp_path, launcher="torchrun")
    command = list(SCRIPTS["multinode"].command)  # (3 epochs of batch 32, a snapshot each)
    write_job(project, command)
    env = job_env(slurm_cluster, tmp_path, site_root)
    job, result = run_job(slurm_cluster, project, env, timeout=180)
    log = log_of(project, job)
    assert result.state == "COMPLETED", log
    assert_step(log, project, command, launcher="torchrun")
    for rank in (0, 1):
        assert re.search(rf"\[GPU{rank}\] Epoch 2 \| Batchsize: 32 \| Steps: 32", log), log
    assert "Epoch 2 | Training snapshot saved at snapshot.pt" in log and (project / "snapshot.pt").is_file(), log
    [torchrun] = [cmd for cmd in container_commands(env) if "torch.distributed.run" in cmd]
    assert torchrun[-len(command) - 2:] == ["--no-python", f"{project}/scripts/lib/run.sh", *command], torchrun


# ------------------------------------------------------------------ faults from outside (issue 44)


def rank_process(job: int, rank: int) -> int:
    """The pid of rank ``rank`` of job ``job`` on this host: the Python process whose
    environment has both (its data loaders' workers have a parent that has them too)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = dict(v.split("=", 1) for v in (entry / "environ").read_bytes().decode(errors="replace").split("\0") if "=" in v)
            comm = (entry / "comm").read_text().strip()
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if comm.startswith("python") and env.get("SLURM_JOB_ID") == str(job) and env.get("RANK") == str(rank) \
                and env.get("LOCAL_RANK") is not None:
            found[int(entry.name)] = parent
    roots = [pid for pid, parent in found.items() if parent not in found]
    assert len(roots) == 1, (job, rank, found)
    return roots[0]


@pytest.mark.parametrize("launcher,signal_name", [("srun", "SIGSTOP"), ("torchrun", "SIGKILL"),
                                                  ("srun", "SIGKILL"), ("torchrun", "SIGSTOP")])
def test_a_rank_of_a_public_script_frozen_or_killed_from_outside_is_named(slurm_cluster, template, tmp_path, site_root,
                                                                         launcher, signal_name):
    """multinode.py knows nothing of our helpers. Once it trains, the test sends rank 1
    SIGSTOP (a frozen rank: its output stops, the watchdog judges by output) or SIGKILL (a
    dead rank): the job's fault line names rank 1, under srun and under torchrun."""
    import os
    import signal

    project = public_project("multinode", template, tmp_path, launcher=launcher)
    command = ["python", "distributed/ddp-tutorial-series/multinode.py", "400", "100", "--batch_size", "32"]
    write_job(project, command)
    env = job_env(slurm_cluster, tmp_path, site_root, OUTPUT_TIMEOUT="30")
    job = slurm_cluster.sbatch(["jobs/train.sbatch"], cwd=project, env=env)
    wait_for(lambda: re.search(r"\[GPU1\] Epoch 2 ", log_of(project, job)), "rank 1's third epoch", timeout=180)
    os.kill(rank_process(job, 1), getattr(signal, signal_name))
    result = slurm_cluster.wait(job, timeout=240)
    log = log_of(project, job)
    assert result.state == "FAILED", log
    if signal_name == "SIGSTOP":
        assert re.search(r"^fault: hang \(output stall\): rank 1 on \S+ .*; process state: rank 1 on \S+ stopped", log,
                         re.M), log
    elif launcher == "torchrun":
        assert re.search(r"^fault: rank died: rank 1 on \S+ \(torchrun: local_rank 1 exited with -9 SIGKILL\)", log,
                         re.M), log
    else:
        assert re.search(r"^fault: rank died: rank 1 on \S+ \(Killed\)", log, re.M), log
