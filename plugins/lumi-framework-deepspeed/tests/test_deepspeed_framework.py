"""The DeepSpeed framework plugin: registration, every project it adds, the example script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lumi_framework_deepspeed
from lumi_scaffold.testing import (catalogue_fixture, check_conformance, plugin_matrix, project_values, render_project,
                                  template_source)

PLUGIN = "lumi-framework-deepspeed"
PACKAGE = Path(lumi_framework_deepspeed.__file__).parent
# A Python with DeepSpeed installed, to run the example on the CPU (skipped without one,
# failed without one when LUMI_SCAFFOLD_REQUIRE_DEEPSPEED is set, as .ci/run sets it).
DEEPSPEED_PYTHON = os.environ.get("LUMI_SCAFFOLD_DEEPSPEED_PYTHON", sys.executable)

catalogue = catalogue_fixture(lumi_framework_deepspeed)


@pytest.fixture(scope="module")
def project(catalogue, tmp_path_factory) -> Path:
    template = template_source(tmp_path_factory.mktemp("template"))
    answers = {"site": "lumi", "framework": "deepspeed", "account": "project_465000000", "nodes": 2}
    return render_project(template, tmp_path_factory.mktemp("projects") / "demo", answers)


def test_registers_framework_image_and_config(catalogue):
    registered = next(p for p in catalogue.plugins if p.name == PLUGIN).registered
    assert registered == {"framework": ["deepspeed"], "container": ["laif-deepspeed-20260513"],
                          "template file": ["ds_config.json"]}
    assert catalogue.frameworks["deepspeed"].launchers == ["srun"]
    assert "deepspeed" in catalogue.frameworks_for("lumi")


def test_it_runs_on_the_pytorch_images_and_follows_them(catalogue):
    """DeepSpeed runs on the images sites register for PyTorch (runs_on): the recommended
    one is PyTorch's, so it moves when lumi-scaffold moves PyTorch's; the entry this plugin
    copied until 0.3 is retired, and names the same image under its PyTorch id."""
    deepspeed, pytorch = (catalogue.recommended_image("lumi", f) for f in ("deepspeed", "pytorch"))
    assert deepspeed is pytorch
    assert [c.id for c in catalogue.images("lumi", "deepspeed")] == [c.id for c in catalogue.images("lumi", "pytorch")]
    retired = catalogue.containers["laif-deepspeed-20260513"]
    assert retired.status == "removed" and retired.replaced_by == "laif-multitorch-20260513"
    assert retired.path == catalogue.containers[retired.replaced_by].path


def test_every_project_renders_and_lints_clean(catalogue):
    matrix = plugin_matrix(catalogue, PLUGIN)
    assert {a["framework"] for a in matrix} == {"deepspeed"}
    # PyTorch's images are covered by "recommended" (PyTorch's own matrix renders each one).
    assert {a["container"] for a in matrix} == {"recommended", "custom", "cotainr"}
    assert len(matrix) == 216  # 3 containers x 3 data areas x 2 prestage x 3 profilers x 4 job shapes
    assert check_conformance(catalogue, PLUGIN) == []


def test_project_has_config_launch_and_pins(project):
    config = (project / "config" / "ds_config.json").read_text()
    assert json.loads(config) == json.loads((PACKAGE / "ds_config.json").read_text())
    train = (project / "src" / "demo" / "train.py").read_text()
    assert "deepspeed.init_distributed(" in train and "Distributed training example for demo" in train
    assert "it ships: torch 2.10.* (exact version UNCONFIRMED)" in (project / "constraints.txt").read_text()
    values = project_values(project)
    assert values["launcher"] == "srun" and values["cpu_bind"].startswith("verbose,mask_cpu:")
    # The AI guide's arguments [AIG-05], from the framework's train_args, written into the
    # job file's command where the user sees them (lumi-scaffold 0.5), with the run directory
    # as --output, which this example takes (it reads DATA_DIR where --data is not given).
    assert ('COMMAND=(python -u src/demo/train.py --deepspeed --deepspeed_config config/ds_config.json '
            '--output "${RUN_DIR}")\n') in (project / "jobs" / "train.sbatch").read_text()
    assert 'add_argument("--output"' in train and 'add_argument("--data"' in train
    assert values["rendezvous"] == "1"  # MASTER_ADDR and MASTER_PORT for deepspeed.init_distributed



def test_jit_builds_and_compiler_caches_are_off_home(project, tmp_path):
    """DeepSpeed builds its ops just in time into TORCH_EXTENSIONS_DIR (default ~/.cache);
    run.sh points it and the compiler caches of the AI Guide's list [AIG-I112] off $HOME."""
    names = ("TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")
    home = tmp_path / "home"
    # RCCL_NET_CHECK=0: no RCCL watcher (2 nodes), which would hold the output open.
    env = {**os.environ, "HOME": str(home), "USER": "tester", "RCCL_NET_CHECK": "0"}
    env = {k: v for k, v in env.items() if not k.startswith(("SLURM_", "TORCH", "TRITON"))}
    result = subprocess.run(["bash", "scripts/lib/run.sh", "bash", "-c", " ".join(f'echo "${n}";' for n in names)],
                            cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    values = result.stdout.split()
    assert len(values) == len(names) and all(v.startswith("/") and not v.startswith(str(home)) for v in values), values
    assert values[0] == "/scratch/project_465000000/tester/cache/torch_extensions_dir"
    assert values[1:] == [f"/tmp/tester-{c}-cache-0-0" for c in ("triton", "inductor")]


def test_profile_job_passes_the_same_arguments(catalogue, tmp_path_factory):
    template = template_source(tmp_path_factory.mktemp("template"))
    answers = {"site": "lumi", "framework": "deepspeed", "account": "project_465000000", "profiler": "rocprofv3"}
    project = render_project(template, tmp_path_factory.mktemp("projects") / "demo", answers)
    assert "profile_job" in (project / "jobs" / "profile.sbatch").read_text()
    # The profile job's command has the framework's arguments too, in its own job file.
    assert ('COMMAND=(python -u src/demo/train.py --deepspeed --deepspeed_config config/ds_config.json '
            '--output "${RUN_DIR}" --steps 40)\n') in (project / "jobs" / "profile.sbatch").read_text()


def test_example_without_deepspeed_stops_with_a_message(project, tmp_path):
    (tmp_path / "deepspeed.py").write_text("raise ImportError('no deepspeed here')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run([sys.executable, str(project / "src/demo/train.py")], capture_output=True, text=True, env=env)
    assert result.returncode == 1
    assert "train.py needs DeepSpeed" in result.stderr and "Traceback" not in result.stderr


def _has_deepspeed() -> bool:
    probe = subprocess.run([DEEPSPEED_PYTHON, "-c", "import deepspeed"], capture_output=True)
    return probe.returncode == 0


def _need_deepspeed() -> None:
    if not _has_deepspeed():
        why = f"{DEEPSPEED_PYTHON} cannot import deepspeed (set LUMI_SCAFFOLD_DEEPSPEED_PYTHON)"
        if os.environ.get("LUMI_SCAFFOLD_REQUIRE_DEEPSPEED"):
            pytest.fail(why + "; LUMI_SCAFFOLD_REQUIRE_DEEPSPEED is set, so it must run")
        pytest.skip(why + "; `pip install --no-build-isolation deepspeed` after torch")


def _example(project: Path, out: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """The example as one rank of a job on the CPU, writing to ``out``."""
    base = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR")}
    base["MASTER_PORT"] = str(20000 + os.getpid() % 10000)
    # runlog and heartbeat: on the ranks' PYTHONPATH, as scripts/lib/run.sh puts them (lumi-scaffold 0.5)
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [base.get("PYTHONPATH"), str(project / "scripts/lib/python")]))
    cmd = [DEEPSPEED_PYTHON, str(project / "src/demo/train.py"), "--output", str(out), "--num-workers", "0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env={**base, **env}, timeout=600)


@pytest.fixture(scope="module")
def trained(project, tmp_path_factory) -> tuple[Path, list[subprocess.CompletedProcess]]:
    """The example's output directory and its three runs, each as rank 0 of a job on the
    CPU: 30 steps with --lr 0.0005 and TensorBoard tracking; then as job 78, whose
    time-limit warning has come (the flag file the job's USR1 trap creates), asked for 100;
    then as job 77, to 40 steps, tracked again. Each later run starts only where the one
    before it did what it should."""
    _need_deepspeed()
    work = tmp_path_factory.mktemp("trained")
    out, time_up = work / "out", work / "time-up"
    tracking = {"LUMI_SCAFFOLD_TRACKING": "tensorboard"}  # (scripts/lib/python/runlog.py: tracking, and the job report in a job)
    every = ("--checkpoint-every", "10")
    runs = [_example(project, out, *every, "--steps", "30", "--lr", "0.0005", **tracking)]
    if runs[-1].returncode == 0:
        time_up.touch()  # Slurm's warning came (time_is_up in scripts/lib/job.sh)
        runs.append(_example(project, out, *every, "--steps", "100", LUMI_SCAFFOLD_TRACKING="none", SLURM_JOB_ID="78",
                             LUMI_SCAFFOLD_JOB_KIND="train", LUMI_SCAFFOLD_TIME_UP=str(time_up)))
        time_up.unlink()
    if runs[-1].returncode == 75:
        runs.append(_example(project, out, *every, "--steps", "40", SLURM_JOB_ID="77", **tracking))
    return out, runs


@pytest.mark.slow
def test_example_saves_at_the_time_limit_warning_and_resumes_there(trained):
    """The second run resumes at step 30, stops at its first agreement (runlog.time_to_stop,
    deepspeed.comm's all-reduce), saves that step, not a multiple of --checkpoint-every,
    and exits 75 (its report says so); the third resumes from it."""
    out, runs = trained
    assert runs[0].returncode == 0, runs[0].stderr[-2000:]
    assert "done: 30 steps on 1 process(es)" in runs[0].stdout and ", lr 0.0005" in runs[0].stdout
    stopped = runs[1]
    assert stopped.returncode == 75, stopped.stdout[-2000:] + stopped.stderr[-2000:]
    assert "at step 30" in stopped.stdout, stopped.stdout
    assert "time limit: stopped at step 31 on every rank, saved it" in stopped.stdout, stopped.stdout
    assert json.loads((out / "reports/78.json").read_text())["ended"] == "time limit"
    third = runs[2]
    assert third.returncode == 0, third.stderr[-2000:]
    assert "at step 31" in third.stdout and "done: 40 steps" in third.stdout, third.stdout


@pytest.mark.slow
def test_example_trains_and_resumes_on_the_cpu(trained):
    """Across the three runs: one TensorBoard run, every 10th step once, with the first
    run's learning rate (resumed from the checkpoints); the last job's report counts its
    own steps."""
    out, runs = trained
    assert [run.returncode for run in runs] == [0, 75, 0], runs[-1].stderr[-2000:]
    report = json.loads((out / "reports/77.json").read_text())
    assert report["steps"] == {"first": 32, "last": 40, "done": 9} and report["samples_per_step"] == 64, report
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    assert [e.step for e in events.Scalars("loss")] == [10, 20, 30, 40]
    assert [e.value for e in events.Scalars("lr")] == pytest.approx([0.0005] * 4)  # (resumed: the checkpoint's)
