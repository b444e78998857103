"""Generated projects train for real on a Slurm controller on localhost.

The container is the stand-in (tests/jobs.py says what it checks); PyTorch runs on the CPU
with gloo and JAX on the CPU with gloo collectives. Two-node jobs run on two slurmd of one
host whose node names resolve (tests/slurm/start-slurm.sh), so MASTER_ADDR, torchrun's
rendezvous and JAX's coordinator work as on a cluster. What each rank of every job shape is
given (its world, CPUs, data, environment) is asserted in tests/test_job_behaviour.py; here
the examples train, resume and chain.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lumi_scaffold.explain import explain_project
from lumi_scaffold.plugins import get_catalogue
from lumi_scaffold.questions import check
from lumi_scaffold.runs import read_runs

from .helpers import need_module, render
from .jobs import heartbeats, image_env, job_env, log_of, run_job
from .slurm.fixtures import LOCAL_TWO_NODE_KNOBS, slurm_required, start_or_skip
from .test_runlog import mlflow_runs_tagged, mlflow_steps, wandb_steps

pytestmark = pytest.mark.slurm
# CI: a missing torch must fail the run, not skip the job tests
need_module("torch", "the job tests train with CPU PyTorch (pip install torch==2.13.0)", required=slurm_required())

LOCAL = {"site": "local", "account": "local", "partition": "batch", "gpus_per_node": 2}
ACCOUNT = "project_465001234"  # a LUMI project, not the example (whose smoke job sbatch refuses)


def needs_local_site() -> None:
    if "local" not in get_catalogue().sites:
        pytest.skip("plugins/lumi-site-local is not installed")


def needs_jax() -> None:  # (CI installs it; a missing JAX must fail there)
    need_module("jax", "the JAX job tests need CPU JAX (pip install jax)", required=slurm_required())


# ------------------------------------------------------------------ a chain (started first)


@pytest.fixture(scope="module")
def chained_run(tmp_path_factory, template, site_root, dataset):
    """A 1-node run (2 ranks, pre-staged data) submitted with CHAIN=3 whose first job runs
    out of time (its own --time=1 min on the sbatch command line; the chained jobs have the
    header's 5 min): on a cluster of its own, so it runs while the other tests use theirs.
    (Training across 2 nodes: test_pytorch_trains_across_two_nodes.) Returns (cluster, first
    job id, project, env)."""
    if "local" not in get_catalogue().sites:
        yield None
        return
    cluster = start_or_skip(tmp_path_factory.mktemp("slurm-chain"), **LOCAL_TWO_NODE_KNOBS)
    work = tmp_path_factory.mktemp("chain")
    project = render(template, work / "p", **LOCAL, walltime="00:05:00", prestage=True,
                     dataset_archive=str(dataset[1]), tracking="mlflow")
    env = job_env(cluster, work, site_root)
    # 120 s of training: more than a 1-minute job gets (Slurm ends it 60-95 s in), less than
    # the first job's share plus a 5-minute one.
    job_id = cluster.sbatch(["--time=00:01:00", "jobs/train.sbatch", "--steps", "240",
                             "--seconds-per-step", "0.5", "--checkpoint-every", "5"], cwd=project, env={**env, "CHAIN": "3"})
    yield cluster, job_id, project, env
    cluster.stop()


# ------------------------------------------------------------------ sbatch --test-only

REPRESENTATIVE = {
    "lumi-1node": {},
    "lumi-1gpu-jax": {"framework": "jax", "gpus_per_node": 1},
    "lumi-smallg-exclusive-profile": {"partition": "small-g", "profiler": "rocprofv3", "profile_rank": 7},
    "lumi-devg-torchrun": {"partition": "dev-g", "gpus_per_node": 4, "launcher": "torchrun", "walltime": "03:00:00"},
    "lumi-prestage": {"gpus_per_node": 2, "prestage": True, "walltime": "3-00:00:00", "partition": "small-g"},
    "local-batch": {**LOCAL, "profiler": "rocprof"},
}


@pytest.mark.parametrize("name", sorted(REPRESENTATIVE))
def test_slurm_accepts_every_generated_sbatch_file(slurm_cluster, template, tmp_path, name, chained_run):
    # (chained_run is requested here so its first job starts early and runs alongside.)
    answers = REPRESENTATIVE[name]
    if answers.get("site") == "local":
        needs_local_site()
    project = render(template, tmp_path / name, **{"account": ACCOUNT, **answers})
    scripts = sorted((project / "jobs").glob("*.sbatch"))
    assert len(scripts) >= 2
    for script in scripts:
        ok, message = slurm_cluster.test_only(script, cwd=project)
        assert ok, f"{script.name}: {message}"


def test_sbatch_refuses_the_example_accounts_smoke_job_before_queueing_it(slurm_cluster, template, tmp_path):
    """A project left with LUMI's example account (copier copy --defaults): sbatch refuses
    its smoke job while reading the header, and the line it prints names the fix. The other
    jobs, and the smoke job of a real account, are not held back by it."""
    project = render(template, tmp_path / "p")  # (DEFAULTS: the example account)
    ok, message = slurm_cluster.test_only(project / "jobs/smoke-test.sbatch", cwd=project)
    assert not ok
    assert message.splitlines()[0] == ("sbatch: unrecognized option '--placeholder-account=project_465000000 is LUMI's "
                                       "example, not your project. Fix: lumi-scaffold update -d account=<your project>'")
    assert slurm_cluster.test_only(project / "jobs/train.sbatch", cwd=project)[0]
    mine = render(template, tmp_path / "mine", account=ACCOUNT)
    ok, message = slurm_cluster.test_only(mine / "jobs/smoke-test.sbatch", cwd=mine)
    assert ok, message


def test_slurm_accepts_two_node_jobs(slurm_cluster_2nodes, template, tmp_path):
    project = render(template, tmp_path / "p", nodes=2, profiler="rocprofv3")
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


def test_doctor_asks_slurm_about_every_job(slurm_cluster, template, tmp_path):
    """`lumi-scaffold doctor` on a login node: sbatch --test-only on each job file, per job."""
    project = render(template, tmp_path / "p", gpus_per_node=2, profiler="rocprofv3", account=ACCOUNT)
    train = project / "jobs/train.sbatch"
    train.write_text(train.read_text().replace("#SBATCH --time=01:00:00", "#SBATCH --time=3-00:00:01"))
    run = slurm_cluster.run([sys.executable, "-c", "from lumi_scaffold.cli import main; raise SystemExit(main())",
                             "doctor", str(project)], timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines, run.stderr
    assert any(line.startswith("ok: jobs/smoke-test.sbatch: sbatch --test-only: sbatch: Job") for line in lines), lines
    assert any(line.startswith("ok: jobs/profile.sbatch: sbatch --test-only:") for line in lines), lines
    assert any(line.startswith("problem: jobs/train.sbatch: sbatch --test-only:") and "time limit" in line
               for line in lines), lines
    assert any(line.startswith("problem: train.sbatch: '3-00:00:01' exceeds the small-g limit of 3-00:00:00") for line in lines)


# ------------------------------------------------------------------ real runs


def test_lumi_project_trains_on_eight_ranks(slurm_cluster, template, tmp_path, site_root):
    """The LUMI-shaped project as generated: 8 tasks, LAIF image, module, MASTER_ADDR. The
    login shell's bind paths and SINGULARITYENV_ variables (from modules loaded by hand) do
    not reach the container: the job starts from a clean state."""
    project = render(template, tmp_path / "p")
    env = job_env(slurm_cluster, tmp_path, site_root, SINGULARITY_BIND="/not/on/this/site",
                  SINGULARITYENV_FROM_LOGIN="1", APPTAINER_BINDPATH="/nor/this")
    submitted = time.time()
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", "--steps", "20", "--num-workers", "0")
    waited = time.time() - submitted
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    for rank in range(8):
        assert re.search(rf"^rank {rank}/8 local_rank {rank} device cpu backend gloo cpus \[", log, re.M), log
    assert "done: 20 steps on 8 process(es)" in log
    # The job report: the log's steps, and GPU-hours by LUMI's rule for this job (explain's
    # rate: a whole standard-g node, 4 GPU-hours per hour) for the time the job ran.
    report = json.loads((tmp_path / "outputs/demo/reports" / f"{job_id}.json").read_text())
    assert report["ended"] == "finished" and report["steps"] == {"first": 1, "last": 20, "done": 20}, report
    assert report["world"] == 8 and report["samples_per_step"] == 8 * 64 and report["kind"] == "train"
    rate = next(j for j in explain_project(project)["jobs"] if j["kind"] == "train")["billed_per_hour"]
    assert rate == 4 and report["billing"]["per_hour"] == rate and report["billing"]["unit"] == "GPU-hours"
    assert 0 < report["seconds"]["training"] < report["seconds"]["job"] < waited + 1, (report, waited)
    # (The report rounds the job's seconds to 0.1 and what it billed to 4 places, each from the
    # unrounded time: the two may differ by both roundings, 0.05 s of the rate and 0.00005.)
    rounding = rate * 0.05 / 3600 + 0.00005
    assert report["billing"]["billed"] == pytest.approx(rate * report["seconds"]["job"] / 3600, abs=rounding * 1.001)
    assert re.search(rf"^report: job {job_id} finished · steps 1-20 \(20\) · .* GPU-hours billed", log, re.M), log
    assert (tmp_path / "outputs" / "demo" / "checkpoints" / "checkpoint-00000020.pt").exists()
    calls = [json.loads(line) for line in (tmp_path / "singularity.jsonl").read_text().splitlines()]
    assert {c["verb"] for c in calls} == {"run"} and all(c["error"] is None for c in calls)
    # one per rank, one for the progress watchdog beside them, and one that reads the image's
    # torch version for the Flight Recorder's variable names (flight_recorder in job-env.sh)
    probes = [c for c in calls if "importlib.metadata" in " ".join(c["cmd"])]
    assert len(probes) == 1, calls
    assert sorted("scripts/lib/watchdog.py" in " ".join(c["cmd"]) for c in calls if c not in probes) == [False] * 8 + [True], calls
    assert calls[0]["bind_specs"] == ["/pfs"] and "FROM_LOGIN" not in calls[0]["env_names"]
    # No Local-LAIF here: the LAIF modules' directory by `module use`. [UG-PR315]
    assert (tmp_path / "module.log").read_text().splitlines() == [
        "module purge", "module is-avail Local-LAIF", "module use /appl/local/laifs/modules",
        "module load lumi-aif-singularity-bindings"]
    # The ranks' temporary files went to the job's own directory in node-local /tmp [LAIF-T],
    # which the job removed when it ended (scripts/lib/nodes.sh).
    assert not Path(f"/tmp/{os.environ.get('USER') or getpass.getuser()}-tmp-{job_id}-0").exists()
    # LUMI's nodes show their energy counters in /sys/cray/pm_counters; this host has none.
    assert report["energy"] == {"joules": None, "counters": "/sys/cray/pm_counters", "nodes": {
        "localhost": {"not_measured": "/sys/cray/pm_counters is not a directory here"}},
        "not_measured": "not measured: localhost: /sys/cray/pm_counters is not a directory here"}, report


def test_failing_rank_fails_the_job_and_ends_the_chain(slurm_cluster, template, tmp_path, site_root, dataset):
    """Legacy image ($WITH_CONDA), pre-staged data; rank 1 dies after checkpoints were
    written: the job fails, the checkpoints are in the run directory, and the next job of
    the chain is cancelled (it would fail the same way)."""
    project = render(template, tmp_path / "p", container="lust-pytorch-2.7.1", gpus_per_node=2, prestage=True,
                     dataset_archive=str(dataset[1]), walltime="00:10:00")
    train = project / "src/demo/train.py"
    train.write_text(train.read_text().replace(
        "            step += 1\n",
        "            step += 1\n            if rank == 1 and step == 12:\n                raise RuntimeError('injected failure')\n", 1))
    env = job_env(slurm_cluster, tmp_path, site_root, **image_env(tmp_path, WITH_CONDA="echo conda env activated"))
    job_id, result = run_job(slurm_cluster, project, {**env, "CHAIN": "2"}, "jobs/train.sbatch", "--steps", "200",
                             "--checkpoint-every", "5", "--num-workers", "0")
    log = log_of(project, job_id)
    assert result.state == "FAILED" and result.exit_code != 0, log
    assert "injected failure" in log
    # $WITH_CONDA ran inside the container on each rank, and for the progress watchdog
    assert log.count("conda env activated") == 3
    assert "prestage: node 0: extracted" in log and "data: 512 samples from" in log and "/node-tmp/" in log
    assert (tmp_path / "outputs" / "demo" / "checkpoints" / "checkpoint-00000010.pt").exists(), log
    assert re.search(r"^chain: job (\d+) continues run demo", log, re.M), log
    next_job = int(re.search(r"^chain: job (\d+) continues run demo", log, re.M).group(1))
    assert re.search(rf"training failed \(status \d+\) before Slurm's time-limit warning.*cancelling job {next_job}", log), log
    assert slurm_cluster.wait(next_job, timeout=30).state == "CANCELLED"
    calls = [json.loads(line) for line in (tmp_path / "singularity.jsonl").read_text().splitlines()]
    assert {c["verb"] for c in calls} == {"exec"}
    assert calls[0]["bind_specs"] == ["/pfs", "/scratch", "/projappl", "/project", "/flash", "/appl"]  # one node: no CPE binds


_HELD = """#!/bin/bash
# Stands in for the helper step's own script: the step stays running until the job releases it.
touch "${HOLD}/started-$(basename "$0")-${SLURMD_NODENAME}"
for _ in $(seq 600); do
    [ -e "${HOLD}/release" ] && exit 0
    sleep 0.2
done
exit 1
"""

_BESIDE_HELPERS = """
set -euo pipefail
source "${SLURM_SUBMIT_DIR:-.}/scripts/lib/job.sh"
stage_data &
restore_caches &
for _ in $(seq 150); do  # both helpers on both nodes, or 30 s
    [ "$(find "${HOLD}" -name 'started-*' | wc -l)" -ge 4 ] && break
    sleep 0.2
done
echo "helpers running: $(find "${HOLD}" -name 'started-*' | wc -l) of 4"
status=0
timeout 30 srun bash -c 'echo "step ran on ${SLURMD_NODENAME}"' || status=$?
touch "${HOLD}/release"
wait
echo "step status ${status}"
"""


@pytest.mark.parametrize("launcher", ["srun", "torchrun"])
def test_helper_steps_hold_none_of_the_resources_the_training_step_asks_for(slurm_cluster_2nodes, template, tmp_path,
                                                                             site_root, launcher):
    """stage_data's and restore_caches' helper steps (one task per node) must not hold the job's
    CPUs, memory and GPUs: Slurm frees a step's resources node by node after it ends, and a
    step that asks for all of them (srun takes the job's --mem and --gpus-per-node from the
    environment, job-env.sh passes --cpus-per-task on) on a node not yet freed was refused
    ("Memory required by task is not available", torchrun's 56 CPUs per task) or kept
    waiting (srun's 7 per task). Here both helpers are kept running on both nodes while a
    step with the training step's request starts: it must start at once."""
    project = render(template, tmp_path / "p", nodes=2, prestage=True, launcher=launcher,
                     dataset_archive="/scratch/project_465000000/train.tar")
    assert (project / "scripts/lib/caches.sh").is_file()  # restore_caches starts its step
    for helper in ("prestage.sh", "caches.sh"):
        (project / "scripts" / "lib" / helper).write_text(_HELD)
    header = [line for line in (project / "jobs/train.sbatch").read_text().splitlines() if line.startswith("#SBATCH")]
    assert "#SBATCH --mem=480G" in header or any(line.startswith("#SBATCH --mem-per-gpu=") for line in header), header
    (project / "jobs/beside-helpers.sbatch").write_text("\n".join(["#!/bin/bash", *header]) + _BESIDE_HELPERS)
    hold = tmp_path / "hold"
    hold.mkdir()
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, HOLD=str(hold))
    job_id, result = run_job(slurm_cluster_2nodes, project, env, "jobs/beside-helpers.sbatch", timeout=180)
    log = log_of(project, job_id)
    assert "helpers running: 4 of 4" in log, log
    assert sorted(p.name for p in hold.glob("started-*")) == [
        f"started-{helper}-{node}" for helper in ("caches.sh", "prestage.sh") for node in ("nid005000", "nid005001")]
    assert "step status 0" in log and "Memory required by task is not available" not in log, log
    assert {"step ran on nid005000", "step ran on nid005001"} <= set(log.splitlines()), log
    assert result.ok, log


def test_a_job_that_cannot_stage_its_data_queues_no_next_job(slurm_cluster, template, tmp_path, site_root):
    """The chain's next job is queued only once the data is staged: a missing archive ends
    the run at its first job instead of failing N times."""
    project = render(template, tmp_path / "p", gpus_per_node=1, prestage=True,
                     dataset_archive="/scratch/project_465000000/missing.tar")
    env = job_env(slurm_cluster, tmp_path, site_root)
    job_id, result = run_job(slurm_cluster, project, {**env, "CHAIN": "3"}, "jobs/train.sbatch")
    log = log_of(project, job_id)
    assert result.state == "FAILED", log
    assert "missing.tar does not exist. Fix:" in log and "chain: job" not in log
    queued = slurm_cluster.run(["squeue", "-h", "-o", "%i %E"]).stdout
    assert f"afterany:{job_id}" not in queued, queued  # no next job of this chain


def test_a_dev_g_job_refuses_a_chain(slurm_cluster, template, tmp_path, site_root):
    """dev-g is for debugging only [UG-part]: its training job refuses a chain in one line
    naming the partition and its purpose (the site's data), before it stages data, trains or queues anything."""
    project = render(template, tmp_path / "p", partition="dev-g", gpus_per_node=1, walltime="00:10:00")
    env = job_env(slurm_cluster, tmp_path, site_root)
    job_id, result = run_job(slurm_cluster, project, {**env, "CHAIN": "2"}, "jobs/train.sbatch", "--steps", "20")
    log = log_of(project, job_id)
    assert (result.state, result.exit_code) == ("FAILED", 2), log
    assert log.strip().splitlines() == [
        "CHAIN=2: dev-g takes no chains of jobs; dev-g: Debugging and quick tests only (2 jobs, 1 running); "
        "abuse can suspend the account. "
        "Fix: train long runs on another partition (lumi-scaffold update -d partition=<name>)"], log
    assert not (tmp_path / "outputs").exists()
    queued = slurm_cluster.run(["squeue", "-h", "-o", "%i %E"]).stdout
    assert f"afterany:{job_id}" not in queued, queued


# TEST STAND-IN for the example in a profile job, without a framework: its steps (0.2 s each),
# heartbeats, lines ("step N loss", "done: N steps") and job report (scripts/lib/python/runlog.py,
# on the jobs' PYTHONPATH), called as the example calls them; the profile job's machinery (which
# rank the profiler wraps, where the profile and the report go, the time-limit warning) is what
# the profile tests check. The ranks do not talk: each decides time_to_stop alone, as rank 0 of
# the example decides for all (a rank that stopped fails the step: --kill-on-bad-exit).
PROFILED_STAND_IN = """import argparse, os, time
import runlog
from heartbeat import Heartbeat
parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=200)
args, _ = parser.parse_known_args()
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
heartbeat = Heartbeat()
log = runlog.RunLog(rank=rank, world=world, output=os.environ["RUN_DIR"], start_step=0, last_step=args.steps,
                    samples_per_step=world, config=vars(args))
step, stopped = 0, False
while step < args.steps and not stopped:
    time.sleep(0.2)
    step += 1
    heartbeat.beat(step)
    log.step(step, data_wait=0.0, metrics=lambda: {"loss": 1 / step, "lr": 0.1})
    if rank == 0 and (step % 20 == 0 or step == args.steps):
        print(f"step {step} loss {1 / step:.4f}", flush=True)
    stopped = log.time_to_stop(step, lambda values: values)
if rank == 0:
    print(f"time limit: stopped at step {step}" if stopped else f"done: {step} steps on {world} process(es)", flush=True)
log.finish(finished=not stopped)
if stopped:
    runlog.RunLog.exit_at_time_limit()
"""


def profile_project(template, tmp_path, **answers):
    project = render(template, tmp_path / "p", gpus_per_node=2, profiler="rocprofv3", **answers)
    (project / "src/demo/train.py").write_text(PROFILED_STAND_IN)
    return project


def test_profiler_wraps_only_the_chosen_rank(slurm_cluster, template, tmp_path, site_root):
    project = profile_project(template, tmp_path, profile_rank=1)
    env = job_env(slurm_cluster, tmp_path, site_root)
    job_id, result = run_job(slurm_cluster, project, env, "jobs/profile.sbatch", "--steps", "10", "--num-workers", "0")
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    lines = (tmp_path / "profiler.log").read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocprofv3 rank=1 --hip-trace --kernel-trace"), lines
    assert (tmp_path / "outputs" / "profiles" / str(job_id) / "rank-1").is_dir()  # (under the output root)
    assert not (tmp_path / "outputs" / "profiles" / str(job_id) / "rank-0").exists() and not (project / "profiles").exists()
    assert "done: 10 steps" in log and not (tmp_path / "outputs" / "demo").exists()  # not the training run
    report = json.loads((tmp_path / "outputs" / f"profile-{job_id}" / "reports" / f"{job_id}.json").read_text())
    assert report["kind"] == "profile" and report["ended"] == "finished" and report["steps"]["done"] == 10, report


def test_the_profile_job_reports_at_its_time_limit_warning(slurm_cluster, template, tmp_path, site_root):
    """The profile job has its own time limit and Slurm's warning before it (USR1 to the batch
    shell, sent here by hand): it says so, and rank 0's report says 'time limit' at once."""
    project = profile_project(template, tmp_path)
    env = job_env(slurm_cluster, tmp_path, site_root)
    job_id = slurm_cluster.sbatch(["jobs/profile.sbatch", "--steps", "100000", "--num-workers", "0"], cwd=project, env=env)
    deadline = time.monotonic() + 180
    while not re.search(r"^step \d+ loss", log_of(project, job_id), re.M):
        assert time.monotonic() < deadline, log_of(project, job_id)
        time.sleep(0.5)
    slurm_cluster.run(["scancel", "--batch", "--signal=USR1", str(job_id)], check=True)
    report_file = tmp_path / "outputs" / f"profile-{job_id}" / "reports" / f"{job_id}.json"
    while not (report_file.exists() and json.loads(report_file.read_text())["ended"] == "time limit"):
        assert time.monotonic() < deadline, log_of(project, job_id)
        time.sleep(0.5)
    assert slurm_cluster.job_info(job_id)["JobState"] == "RUNNING"  # reported at the warning, before the end
    slurm_cluster.run(["scancel", str(job_id)], check=True)
    slurm_cluster.wait(job_id, timeout=60)
    log = log_of(project, job_id)
    # (the warning sent by hand, minutes before the limit: the job says the time Slurm holds left)
    left = re.search(r"^time limit in (\d+) s: the profile will end unfinished$", log, re.M)
    assert left and 60 < int(left.group(1)) <= 20 * 60, log
    assert re.search(rf"^report: job {job_id} time limit · steps 1-\d+ ", log, re.M), log
    assert json.loads(report_file.read_text())["kind"] == "profile"


def test_jax_project_trains_on_two_processes(slurm_cluster, template, tmp_path, site_root):
    """jax.distributed.initialize() finds the Slurm step itself; legacy image, $WITH_CONDA;
    the gradient is reduced on the devices, so both processes end with the same parameters."""
    needs_jax()
    project = render(template, tmp_path / "p", framework="jax", gpus_per_node=2, tracking="wandb")
    train = (project / "src/demo/train.py").read_text()
    # the gradient is reduced on the devices: the host gathers only the two numbers the
    # processes agree on at the time-limit warning (agree)
    assert train.count("process_allgather") == 1 and "def agree(" in train
    assert "process_allgather" in train[train.index("def agree("):]
    env = job_env(slurm_cluster, tmp_path, site_root, **image_env(tmp_path, WITH_CONDA="true"), WANDB_X_DISABLE_STATS="true")
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", "--steps", "20")
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert re.search(r"^rank 0/2 devices", log, re.M) and re.search(r"^rank 1/2 devices", log, re.M), log
    assert "done: 20 steps on 2 process(es)" in log
    assert (tmp_path / "outputs" / "demo" / "checkpoints" / "params-00000020.npz").exists()
    report = json.loads((tmp_path / "outputs/demo/reports" / f"{job_id}.json").read_text())
    assert report["steps"]["done"] == 20 and report["world"] == 2 and report["ended"] == "finished", report
    # A second job resumes the run and its W&B run (offline, by process 0): one run id, each step once.
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", "--steps", "30")
    assert result.state == "COMPLETED" and "at step 20" in log_of(project, job_id), log_of(project, job_id)
    assert wandb_steps(tmp_path / "outputs/demo") == [10, 20, 30]
    sums = dict(re.findall(r"^rank (\d): parameter checksum (\S+)$", log, re.M))
    assert len(sums) == 2 and sums["0"] == sums["1"], log


# ------------------------------------------------------------------ two nodes


@pytest.mark.parametrize("launcher", ["srun", "torchrun"])
def test_pytorch_trains_across_two_nodes(slurm_cluster_local2n, template, tmp_path, site_root, launcher):
    """DDP over gloo on 2 emulated nodes x 2 ranks; MASTER_ADDR (srun) or torchrun's c10d
    rendezvous (torchrun) is the first node's name, which resolves; torchrun's rank 0 logs
    to MLflow. (Resuming: under srun the chain's second job, in the same MLflow run,
    test_chain_resumes_after_the_time_limit_and_stops_when_training_ends; under torchrun
    the example's hang chain, test_example_hang_jobs.py.)"""
    needs_local_site()
    tracking = "mlflow" if launcher == "torchrun" else "none"
    project = render(template, tmp_path / "p", **LOCAL, nodes=2, launcher=launcher, tracking=tracking)
    env = job_env(slurm_cluster_local2n, tmp_path, site_root, KEEP_NODE_TMP="1")  # (heartbeats() reads them)
    job_id, result = run_job(slurm_cluster_local2n, project, env, "jobs/train.sbatch", "--steps", "20")
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert "done: 20 steps on 4 process(es)" in log
    ranks = re.findall(r"^rank (\d)/4 node (nid00500[01]) local_rank (\d) gpu", log, re.M)
    assert sorted(r for r, _, _ in ranks) == ["0", "1", "2", "3"], log
    for node in ("nid005000", "nid005001"):  # (torchrun numbers the nodes in the order they join)
        assert sorted(local for _, n, local in ranks if n == node) == ["0", "1"], log
    beats = heartbeats(project, job_id)  # every rank wrote its step for the progress watchdog
    assert sorted(beats) == [0, 1, 2, 3] and all(1 <= step <= 20 for _, step in beats.values()), beats
    assert sorted(beats[int(r)][0] == n for r, n, _ in ranks) == [True] * 4, (beats, ranks)
    assert "0 DataLoader worker(s) per rank" in log  # 1 CPU per rank on this site, minus the rank's own
    if launcher == "torchrun":
        assert mlflow_steps(tmp_path / "outputs" / "mlruns") == [10, 20]  # one run in the file store, each step once


def test_jax_trains_across_two_nodes(slurm_cluster_local2n, template, tmp_path, site_root):
    """jax.distributed across 2 emulated nodes x 2 processes (coordinator: the first node's
    name); the on-device reduction leaves every process with the same parameters. (A second
    job's resume: test_jax_project_trains_on_two_processes.)"""
    needs_local_site()
    needs_jax()
    project = render(template, tmp_path / "p", **LOCAL, nodes=2, framework="jax")
    env = job_env(slurm_cluster_local2n, tmp_path, site_root, KEEP_NODE_TMP="1")  # (heartbeats() reads them)
    job_id, result = run_job(slurm_cluster_local2n, project, env, "jobs/train.sbatch", "--steps", "20")
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert "done: 20 steps on 4 process(es)" in log
    sums = dict(re.findall(r"^rank (\d): parameter checksum (\S+)$", log, re.M))
    assert sorted(sums) == ["0", "1", "2", "3"] and len(set(sums.values())) == 1, log
    beats = heartbeats(project, job_id)  # every process wrote its step for the progress watchdog
    assert sorted(beats) == [0, 1, 2, 3] and all(1 <= step <= 20 for _, step in beats.values()), beats


def test_chain_resumes_after_the_time_limit_and_stops_when_training_ends(chained_run):
    """CHAIN=3: job 1 gets Slurm's time-limit warning (its 1-minute limit is shorter than
    the warning's lead: at once), saves and ends itself; job 2 resumes from its newest
    checkpoint and finishes; job 3 is cancelled before it starts. Only the newest
    checkpoints are kept."""
    if chained_run is None:
        pytest.skip("plugins/lumi-site-local is not installed")
    cluster, first, project, env = chained_run
    result = cluster.wait(first, timeout=200)
    log = log_of(project, first)
    assert (result.state, result.exit_code) == ("FAILED", 75), log  # (runlog.TIME_LIMIT_EXIT)
    assert re.search(r"^time limit in \d+ s: job \d+ continues the run", log, re.M), log
    second = int(re.search(r"^chain: job (\d+) continues run demo", log, re.M).group(1))
    result = cluster.wait(second, timeout=200)
    log2 = log_of(project, second)
    assert result.state == "COMPLETED", log2
    resumed = int(re.search(r"resumed from \S+ at step (\d+)", log2).group(1))
    assert 1 <= resumed < 240 and "done: 240 steps on 2 process(es)" in log2, log2
    third = int(re.search(r"^chain: job (\d+) continues run demo", log2, re.M).group(1))
    assert f"training finished; cancelling job {third}" in log2
    info = cluster.wait(third, timeout=30)
    assert info.state == "CANCELLED" and not log_of(project, third), "the third job must not run"
    run_dir = Path(env["OUTPUT_ROOT"]) / "demo"
    saved = run_dir / "checkpoints"  # (CHECKPOINT_DIR)
    assert sorted(p.name for p in saved.glob("checkpoint-*.pt"))[-1] == "checkpoint-00000240.pt"
    assert len(list(saved.glob("checkpoint-*.pt"))) == 3  # --keep-checkpoints 3 (the default)
    assert len((run_dir / "jobs.txt").read_text().splitlines()) == 2
    import torch  # (here, not at import: the test worker imports no framework)

    assert torch.load(saved / "checkpoint-00000240.pt")["step"] == 240
    # One tracked run across the chain (MLflow's file store: one run of the experiment),
    # every 10th step once (job 2 resumed from an older checkpoint than job 1's last logged
    # step, and did not log those steps again). (TensorBoard's across jobs: the DeepSpeed
    # example's CPU test; W&B's: test_jax_project_trains_on_two_processes.)
    assert mlflow_steps(Path(env["OUTPUT_ROOT"]) / "mlruns") == list(range(10, 241, 10))
    # Each job's report: job 1's at the time-limit warning, job 2's at the end.
    one = json.loads((run_dir / "reports" / f"{first}.json").read_text())
    two = json.loads((run_dir / "reports" / f"{second}.json").read_text())
    assert one["ended"] == "time limit" and one["steps"]["first"] == 1 and one["steps"]["last"] >= resumed, one
    assert re.search(rf"^report: job {first} time limit · steps 1-\d+ ", log, re.M), log
    assert two["ended"] == "finished" and two["steps"] == {"first": resumed + 1, "last": 240, "done": 240 - resumed}, two
    assert one["world"] == two["world"] == 2 and two["billing"]["billed"] is None  # (no billing rule at this site)
    runs = read_runs(Path(env["OUTPUT_ROOT"]))  # lumi-scaffold explain --runs
    assert [r["run"] for r in runs] == ["demo"] and [j["job"] for j in runs[0]["jobs"]] == [str(first), str(second)]
    assert runs[0]["last_step"] == 240 and runs[0]["steps"] == one["steps"]["done"] + two["steps"]["done"]


def test_a_sweep_is_a_throttled_job_array_with_a_run_per_trial(slurm_cluster, template, tmp_path, site_root):
    """3 trials of one rank each on the partial-node partition, at most 2 at once (and 2 at
    once: the node has room for all 3, so the throttle is what holds the third back): 3 run
    directories (each trial its own, through jobs/train.sbatch), one MLflow run each in the
    project's experiment, and scripts/sweep.py's summary has a row per trial."""
    needs_local_site()
    project = render(template, tmp_path / "p", **{**LOCAL, "partition": "debug", "gpus_per_node": 1}, tracking="mlflow")
    (project / "sweeps/small.txt").write_text("# three trials\n--lr 0.01\n\n--lr 0.1\n--lr 0.5 --steps 15\n")
    env = job_env(slurm_cluster, tmp_path, site_root)
    submit = subprocess.run([sys.executable, "scripts/sweep.py", "submit", "sweeps/small.txt", "--throttle", "2",
                             "--steps", "10", "--num-workers", "0"], cwd=project, env=env, capture_output=True, text=True)
    assert submit.returncode == 0, submit.stderr
    assert submit.stdout.startswith("sweep small: 3 trial(s), at most 2 at once"), submit.stdout
    array = int(re.search(r"^job array (\d+)", submit.stdout, re.M).group(1))
    shown = subprocess.run(["scontrol", "show", "job", str(array)], env=env, capture_output=True, text=True).stdout
    assert "ArrayTaskThrottle=2" in shown, shown
    root = Path(env["OUTPUT_ROOT"])
    deadline = time.time() + 240
    while time.time() < deadline and len(list(root.glob("small-*/reports/*.json"))) < 3:
        time.sleep(2)
    runs = sorted(p.name for p in root.glob("small-*"))
    assert runs == ["small-001", "small-002", "small-003"], runs
    for index, steps in ((1, 10), (2, 10), (3, 15)):  # the trial's own arguments come last
        report = json.loads(next((root / f"small-{index:03d}/reports").glob("*.json")).read_text())
        assert report["steps"]["last"] == steps and report["sweep"] == "small" and report["run"] == f"small-{index:03d}"
    # Never more than 2 trials at once: each trial's start (jobs.txt) and end (its report).
    spans = []
    for run in runs:
        start = (root / run / "jobs.txt").read_text().split()[0]
        end = json.loads(next((root / run / "reports").glob("*.json")).read_text())["written"]
        spans.append((time.mktime(time.strptime(start[:19], "%Y-%m-%dT%H:%M:%S")),
                      time.mktime(time.strptime(end[:19], "%Y-%m-%dT%H:%M:%S"))))
    assert max(sum(s <= start < e for s, e in spans) for start, _ in spans) == 2, spans
    summary = subprocess.run([sys.executable, "scripts/sweep.py", "summary", "sweeps/small.txt"], cwd=project, env=env,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    assert summary[0] == f"sweep small in {root}:" and summary[1].split()[:3] == ["trial", "arguments", "final"], summary
    rows = [line.split() for line in summary[2:]]
    assert [r[0] for r in rows] == ["1", "2", "3"] and [r[1:3] for r in rows] == [["--lr", "0.01"], ["--lr", "0.1"],
                                                                                     ["--lr", "0.5"]], summary
    assert [r[-3] for r in rows] == ["10", "10", "15"], summary  # steps
    assert all(re.fullmatch(r"\d+\.\d+", r[-5]) for r in rows), summary  # a final loss for each trial
    # The project's summary (login-node python3, no lumi-scaffold) and explain --runs read the same reports alike.
    seen = {run["run"]: run for run in read_runs(root)}
    trials = [seen[f"small-{i:03d}"] for i in (1, 2, 3)]
    assert [[format(t["loss"]["last"], ".4g"), format(t["loss"]["best"], ".4g"), str(t["last_step"])] for t in trials] == [
        r[-5:-2] for r in rows], summary  # final loss, best loss, steps
    assert mlflow_runs_tagged(root / "mlruns", "small") == ["small-001", "small-002", "small-003"]


# TEST STAND-IN for RCCL: a training script that writes the network lines RCCL's init log
# has (NCCL_DEBUG=INFO) to NCCL_DEBUG_FILE, then trains for a while (sleeps).
FAKE_RCCL = """import os, time
if os.environ.get("NCCL_DEBUG_FILE"):
    with open(os.environ["NCCL_DEBUG_FILE"], "a") as log:
        log.write(os.environ["FAKE_RCCL_LINE"] + "\\n")
time.sleep(8)
print("rank", os.environ["RANK"], "trained", flush=True)
"""
# (line shapes of the real logs in tests/test_collective_net.py and the project's tests/test_collective_net.py,
# project-templates/project/tests/, with a LUMI host prefix)
OFI_LINES = ["nid005000:1:1 [0] NCCL INFO NET/OFI Using aws-ofi-rccl 1.4.0",
             "nid005000:1:1 [0] NCCL INFO NET/OFI Selected Provider is cxi (found 4 nics)",
             "nid005000:1:1 [0] NCCL INFO Using network AWS Libfabric"]
OFI_FAILED = "nid005000:1:1 [0] NCCL WARN NET/OFI aws-ofi-rccl initialization failed"
SOCKET_LINES = ["nid005000:1:1 [0] NCCL INFO NET/Socket : Using [0]hsn0:10.253.1.1<0>",
                "nid005000:1:1 [0] NCCL INFO Using network Socket"]
TCP_PROVIDER = ["nid005000:1:1 [0] NCCL INFO NET/OFI Selected provider is tcp, fabric is 10.253.0.0/16 (found 1 nics)",
                "nid005000:1:1 [0] NCCL INFO Using network AWS Libfabric"]
NO_NET_LINE = "nid005000:1:1 [0] NCCL INFO Bootstrap : Using hsn0:10.253.1.1<0>"


@pytest.mark.parametrize("lines, state", [
    (OFI_LINES, "COMPLETED"),
    ([OFI_LINES[0], OFI_FAILED, *SOCKET_LINES], "FAILED"),
    (SOCKET_LINES, "FAILED"),
    (TCP_PROVIDER, "FAILED"),
    ([NO_NET_LINE], "COMPLETED"),
], ids=["slingshot", "ofi-failed-then-socket", "tcp", "tcp-provider", "no-network-line"])
def test_two_node_job_stops_when_rccl_falls_back_to_tcp(slurm_cluster_2nodes, template, tmp_path, site_root, lines,
                                                        state):
    """Without the OFI plugin RCCL uses TCP sockets between nodes and says so only in its
    init log [WS-09]: rank 0's watcher (scripts/lib/collective_net.py) reads what RCCL finally chose
    (its `Using network` line) and stops the job with the reason, also when the plugin
    loaded and failed first, or runs on libfabric's tcp provider; a log with no final
    choice is reported. The 1-GPU smoke test logs no RCCL setup at all."""
    project = render(template, tmp_path / "p", nodes=2, account=ACCOUNT)
    (project / "src/demo/train.py").write_text(FAKE_RCCL)
    line = "\n".join(lines)
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, FAKE_RCCL_LINE=line, RCCL_NET_CHECK_WAIT="3")
    job_id, result = run_job(slurm_cluster_2nodes, project, env, "jobs/train.sbatch", timeout=120)
    log = log_of(project, job_id)
    assert result.state == state, log
    if state == "COMPLETED":
        assert log.count(" trained") == 16
    else:
        assert "ERROR: RCCL talks between nodes over TCP sockets, not Slingshot" in log and "Fix: the image" in log
        assert "rank 0 trained" not in log and "RCCL uses Slingshot" not in log
    if lines == OFI_LINES:
        assert "rank 0: RCCL uses Slingshot (aws-ofi-rccl plugin, cxi provider) between nodes" in log
    elif lines == [NO_NET_LINE]:
        assert "WARNING: rank 0: RCCL logged no final choice of network within 3 s" in log and "RCCL uses" not in log
    assert (tmp_path / "outputs" / "logs" / f"rccl-{job_id}-rank0.txt").read_text().strip() == line
    assert sorted(p.name for p in (tmp_path / "outputs" / "logs").glob("rccl-*")) == [f"rccl-{job_id}-rank0.txt"]
    assert not list((project / "logs").glob("rccl-*"))
    if lines != OFI_LINES:
        return  # (the smoke test's check below is the same for every log line: once is enough)
    (project / "src/demo/smoke_test.py").write_text(FAKE_RCCL)
    smoke, result = run_job(slurm_cluster_2nodes, project, env, "jobs/smoke-test.sbatch", timeout=120)
    assert result.state == "COMPLETED" and not list((project / "logs").glob(f"rccl-{smoke}-*")), log_of(project, smoke)


# ------------------------------------------------------------------ attach


def test_attach_opens_steps_beside_a_running_job_on_any_node(slurm_cluster_local2n, template, tmp_path, site_root):
    needs_local_site()
    project = render(template, tmp_path / "p", **LOCAL, nodes=2)
    attach = project / "scripts/attach.sh"
    env = slurm_cluster_local2n.env
    help_text = subprocess.run(["bash", str(attach), "--help"], capture_output=True, text=True, env=env)
    assert help_text.returncode == 0 and help_text.stdout.startswith("Usage: scripts/attach.sh JOBID [NODE]")
    bad = subprocess.run(["bash", str(attach), "not-a-job"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "not a job id" in bad.stderr
    # A job holding both nodes, as a training would.
    job = slurm_cluster_local2n.sbatch(["--partition=batch", "--nodes=2", "--ntasks-per-node=1", "--time=00:05:00",
                                        "--output=/dev/null", "--wrap=srun sleep 300"], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while slurm_cluster_local2n.job_info(job)["JobState"] != "RUNNING":
            assert time.monotonic() < deadline, "the job did not start"
            time.sleep(0.2)
        command = ["--", "bash", "-c", 'echo "$SLURMD_NODENAME $SLURM_STEP_ID"; sleep 2']
        # Two at once on the first node, one on the second: all beside the running step.
        procs = [subprocess.Popen(["bash", str(attach), str(job), *where, *command], env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for where in ([], [], ["nid005001"])]
        outputs = [p.communicate(timeout=60) for p in procs]
        assert all(p.returncode == 0 for p in procs), outputs
        nodes = [out.split()[0] for out, _ in outputs]
        assert nodes == ["nid005000", "nid005000", "nid005001"], outputs
        assert len({out.split()[1] for out, _ in outputs}) == 3  # three steps of their own
    finally:
        slurm_cluster_local2n.cancel(job)
