"""The progress watchdog through the generated job files on the local Slurm (2 emulated
nodes): a rank that hangs stops the job within PROGRESS_TIMEOUT (plus the time to notice),
not at its time limit, with the stacks of every rank and the rank furthest behind named; a
rank that dies still fails the job; in a chain, the run goes on from its checkpoint without
the node that stalled, once.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest

from .helpers import render
from .jobs import STAND_IN_TRAIN, job_env, log_of, run_job

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

LIMITS = {"PROGRESS_TIMEOUT": "5", "STARTUP_TIMEOUT": "60"}


def project_with_stand_in(template, tmp_path, **answers):
    project = render(template, tmp_path / "p", **answers)
    (project / "src/demo/train.py").write_text(STAND_IN_TRAIN)
    return project


@pytest.mark.parametrize("fault", ["hang", "die"])
def test_a_hung_rank_stops_the_job_and_a_dying_rank_still_fails_it(slurm_cluster_2nodes, template, tmp_path,
                                                                    site_root, fault):
    """16 ranks on 2 nodes (LUMI, 1 h time limit); rank 15 hangs (or dies) at step 5."""
    project = project_with_stand_in(template, tmp_path, nodes=2, walltime="01:00:00")
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, FAKE_FAULT=fault, **LIMITS)
    started = time.monotonic()
    job_id, result = run_job(slurm_cluster_2nodes, project, env, "jobs/train.sbatch", "--steps", "30", timeout=180)
    elapsed = time.monotonic() - started
    log = log_of(project, job_id)
    assert result.state == "FAILED", log
    assert ("watchdog: for a time limit of 3600 s on 2 node(s): STARTUP_TIMEOUT=60 s (set), PROGRESS_TIMEOUT=5 s "
            "(set), PHASE_TIMEOUT=216 s, OUTPUT_TIMEOUT=720 s; then up to 90 s to gather evidence and stop the step") in log
    if fault == "die":
        assert "rank 15: dying at step 5" in log and "watchdog: no progress" not in log, log
        assert elapsed < 60, log
        return
    # Stopped within PROGRESS_TIMEOUT + the startup allowance (and the queue), not at 1 h.
    assert elapsed < 5 + 60 + 30, (elapsed, log)
    line = re.search(r"^watchdog: no progress for (\d+) s \(PROGRESS_TIMEOUT=5\); last progress: rank (\d+) on "
                     r"(nid00500[01]) \(step 5, \d+ s ago\); furthest behind: rank 15 on nid005001 \(step 4\)\. "
                     r"Stopping the step\.$", log, re.M)
    assert line and 5 <= int(line.group(1)) <= 14, log  # (5 s, and the heartbeat files' slack: 3 s)
    # every rank's stacks: the hung one in its collective, the others waiting for it
    assert log.count("watchdog: stacks of rank") == 16, log
    assert "watchdog: stacks of rank15@nid005001 (pid" in log
    if shutil.which("py-spy"):  # (the stand-in container runs on this host: its PATH decides)
        assert re.search(r"^ +collective_that_never_returns \(\S*train\.py:\d+\)$", log, re.M), log
        assert len(re.findall(r"^Thread \d+ ", log, re.M)) >= 16, log
    else:
        assert re.search(r'File "\S+/train\.py", line \d+ in collective_that_never_returns', log), log
        assert len(re.findall(r"^Current thread 0x|^Thread 0x", log, re.M)) >= 16, log
    assert (tmp_path / "outputs" / "logs" / f"rccl-{job_id}-rank0.txt").exists()  # RCCL's logs stay
    assert "done:" not in log


def test_a_chain_goes_on_without_the_node_that_stalled_once(slurm_cluster_2nodes, template, tmp_path, site_root):
    """CHAIN=2 on one node (8 ranks) pinned to nid005000, where rank 7 stalls at step 5 in the
    collective the others wait in (a node that stopped: the same stacks, its heartbeat behind;
    with or without py-spy on PATH): the watchdog stops the job; a job excluding nid005000
    resumes from the checkpoint on nid005001 and finishes; the chain's next job is cancelled."""
    project = project_with_stand_in(template, tmp_path, walltime="01:00:00")
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, FAKE_FAULT="stall", FAKE_BAD_NODE="nid005000", **LIMITS)
    first = slurm_cluster_2nodes.sbatch(["--nodelist=nid005000", "jobs/train.sbatch", "--steps", "12"],
                                        cwd=project, env={**env, "CHAIN": "2"})
    result = slurm_cluster_2nodes.wait(first, timeout=180)
    log = log_of(project, first)
    assert result.state == "FAILED", log
    assert re.search(r"^watchdog: no progress .* furthest behind: rank 7 on nid005000 \(step 4\)", log, re.M), log
    fault = re.search(r"^fault: hang .*$", log, re.M)
    assert fault and "heartbeats: rank(s) 7 at step 4, the others at step 5" in fault.group(0), log
    assert "stacks: rank(s)" not in fault.group(0), fault.group(0)  # (with py-spy: "every rank in <module> ...")
    queued = re.search(r"^chain: job (\d+) continues run demo", log, re.M)
    retry = re.search(r"^chain: job (\d+) resumes run demo from its newest checkpoint, without node nid005000$",
                      log, re.M)
    assert queued and retry, log
    assert f"chain: the watchdog stopped this job; a job without nid005000 replaces it; cancelling job {queued.group(1)}" in log
    result = slurm_cluster_2nodes.wait(int(retry.group(1)), timeout=180)
    log2 = log_of(project, int(retry.group(1)))
    assert result.state == "COMPLETED", log2
    assert "rank 0 on nid005001: resumed at step 4" in log2 and "done: 12 steps on nid005001" in log2, log2
    assert slurm_cluster_2nodes.job_info(int(retry.group(1)))["ExcNodeList"] == "nid005000"
    assert slurm_cluster_2nodes.wait(int(queued.group(1)), timeout=30).state == "CANCELLED"


# TEST STAND-IN for a training script that uses heartbeat.py as the examples do: a few
# steps, a silent evaluation inside heartbeat.phase("eval") (FAKE_EVAL_SECONDS), more steps.
EVAL_TRAIN = """import os, time
from heartbeat import Heartbeat
beat = Heartbeat()
rank = int(os.environ["RANK"])
for step in range(1, 4):
    beat.beat(step)
    time.sleep(0.5)
with beat.phase("eval"):
    if rank == 0:
        print("eval: silent for a while", flush=True)
    time.sleep(float(os.environ["FAKE_EVAL_SECONDS"]))
for step in range(4, 7):
    beat.beat(step)
    time.sleep(0.5)
if rank == 0:
    print("done: 6 steps", flush=True)
"""

# TEST STAND-IN for a script nobody wrote for us: no heartbeat.py, one line per epoch from
# rank 0 (FAKE_EPOCHS epochs of FAKE_EPOCH_SECONDS), nothing else.
OUTPUT_ONLY_TRAIN = """import os, time
rank = int(os.environ["RANK"])
for epoch in range(int(os.environ["FAKE_EPOCHS"])):
    time.sleep(float(os.environ["FAKE_EPOCH_SECONDS"]))
    if rank == 0:
        print(f"epoch {epoch} done", flush=True)
if rank == 0:
    print("done: all epochs", flush=True)
"""


def small_project(template, tmp_path, script):
    project = render(template, tmp_path / "p", partition="small-g", gpus_per_node=2, walltime="01:00:00")
    (project / "src/demo/train.py").write_text(script)
    return project


def test_a_silent_evaluation_in_a_phase_longer_than_the_progress_limit_completes(slurm_cluster, template, tmp_path,
                                                                                   site_root):
    """After the first heartbeats, 12 s of silence (3 x PROGRESS_TIMEOUT) inside
    heartbeat.phase("eval"), PHASE_TIMEOUT=60: the job completes, and its heartbeat
    directory is gone afterwards."""
    project = small_project(template, tmp_path, EVAL_TRAIN)
    env = job_env(slurm_cluster, tmp_path, site_root, PROGRESS_TIMEOUT="4", STARTUP_TIMEOUT="30", PHASE_TIMEOUT="60",
                  FAKE_EVAL_SECONDS="12")
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", timeout=120)
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert "eval: silent for a while" in log and "done: 6 steps" in log and "watchdog: no progress" not in log, log
    assert re.search(r"^watchdog: rank [01] on \S+ imported heartbeat\.py: from now on heartbeats judge", log,
                     re.M), log
    assert not (tmp_path / "outputs" / "logs" / f"heartbeat-{job_id}").exists()


def test_a_script_that_never_beats_is_judged_by_its_output(slurm_cluster, template, tmp_path, site_root):
    """No heartbeat.py, one line per epoch, epochs of 12 s with PROGRESS_TIMEOUT=6 and
    STARTUP_TIMEOUT=8 (the issue's 60 s, 30 s and 40 s, over 5): it completes, and the
    job's first watchdog line says that its output judges it."""
    project = small_project(template, tmp_path, OUTPUT_ONLY_TRAIN)
    env = job_env(slurm_cluster, tmp_path, site_root, PROGRESS_TIMEOUT="6", STARTUP_TIMEOUT="8",
                  FAKE_EPOCHS="2", FAKE_EPOCH_SECONDS="12")
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", timeout=120)
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert "epoch 1 done" in log and "done: all epochs" in log and "watchdog: no" not in log, log
    assert re.search(r"^watchdog: for a time limit of \d+ s on 1 node\(s\): .*OUTPUT_TIMEOUT=\d+ s;", log, re.M), log
    assert "watchdog: a command is judged by its output alone (OUTPUT_TIMEOUT; 0: no limit) until it imports " \
           "heartbeat.py" in log
    assert not (tmp_path / "outputs" / "logs" / f"heartbeat-{job_id}").exists()
    # the job's own report (scripts/lib/fault.py), although the script never imported runlog.py
    report = json.loads((Path(env["OUTPUT_ROOT"]) / "demo" / "reports" / f"{job_id}.json").read_text())
    assert report["exit"] == {"status": 0, "cause": "finished"} and report["stopped_by"] is None, report
    assert report["seconds"]["job"] >= 24 and report["billing"]["billed"] > 0, report


def test_a_silent_script_that_never_beats_is_stopped_at_its_output_limit(slurm_cluster, template, tmp_path,
                                                                          site_root):
    """No heartbeat.py and no output for 60 s, OUTPUT_TIMEOUT=6: stopped within seconds, by a
    line that names OUTPUT_TIMEOUT; its ranks, which registered no SIGUSR2 handler themselves,
    give their stacks through the step's sitecustomize.py (faulthandler, to a node-local file
    the watchdog prints), and are not ended by the signal."""
    project = small_project(template, tmp_path, OUTPUT_ONLY_TRAIN)
    env = job_env(slurm_cluster, tmp_path, site_root, PROGRESS_TIMEOUT="30", STARTUP_TIMEOUT="40", OUTPUT_TIMEOUT="6",
                  FAKE_EPOCHS="1", FAKE_EPOCH_SECONDS="60")
    started = time.monotonic()
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", timeout=120)
    log = log_of(project, job_id)
    assert result.state == "FAILED" and time.monotonic() - started < 50, log
    assert re.search(r"^watchdog: the job's output did not grow for \d+ s \(OUTPUT_TIMEOUT=6; the training script "
                     r"never imported heartbeat\.py", log, re.M), log
    if shutil.which("py-spy"):
        assert "watchdog: stacks of rank0@" in log and "py-spy dump:" in log, log
    else:
        for rank in (0, 1):
            assert re.search(rf"^watchdog: stacks of rank{rank}@\S+ \(pid \d+\) follow\nCurrent thread 0x", log, re.M), log
    assert "done:" not in log and "signal 12" not in log, log
    # (both ranks in the same line of the script: nothing names one of them)
    assert re.search(r"^fault: hang \(output stall\): no rank to blame .*; stacks: every rank in ", log, re.M), log
    report = json.loads((Path(env["OUTPUT_ROOT"]) / "demo" / "reports" / f"{job_id}.json").read_text())
    assert report["stopped_by"]["cause"] == "output stall" and report["ended"] == "hang", report


def test_rank_0_in_a_long_checkpoint_does_not_time_the_others_out(slurm_cluster, template, tmp_path, site_root):
    """The PyTorch example (DDP over gloo, 2 ranks): rank 0 spends 14 s in its checkpoint at
    step 10, inside heartbeat.phase("checkpoint"), while rank 1 waits in the next step's
    all-reduce. PROGRESS_TIMEOUT=9: the old collective timeout (two thirds of it, 6 s) ended
    this job; the watchdog's limit alone would have too. It completes."""
    project = render(template, tmp_path / "p", partition="small-g", gpus_per_node=2, walltime="01:00:00")
    train = project / "src/demo/train.py"
    text = train.read_text()
    assert "    path = os.path.join(CHECKPOINT_DIR, f\"checkpoint-{step:08d}.pt\")\n" in text
    train.write_text(text.replace(
        "    path = os.path.join(CHECKPOINT_DIR, f\"checkpoint-{step:08d}.pt\")\n",
        "    path = os.path.join(CHECKPOINT_DIR, f\"checkpoint-{step:08d}.pt\")\n    if step == 10:\n        time.sleep(14)\n", 1))
    env = job_env(slurm_cluster, tmp_path, site_root, PROGRESS_TIMEOUT="9", STARTUP_TIMEOUT="120", PHASE_TIMEOUT="60")
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", "--steps", "14", "--checkpoint-every",
                             "10", "--num-workers", "0", timeout=180)
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert "done: 14 steps on 2 process(es)" in log and "Timed out" not in log and "watchdog: no" not in log, log
    assert not (tmp_path / "outputs" / "logs" / f"heartbeat-{job_id}").exists()
