"""The progress watchdog through the generated job files on the local Slurm (2 emulated
nodes): a rank that hangs stops the job within PROGRESS_TIMEOUT (plus the time to notice),
not at its time limit, with the stacks of every rank and the rank furthest behind named; a
rank that dies still fails the job; in a chain, the run goes on from its checkpoint without
the node that stalled, once.
"""

from __future__ import annotations

import re
import time

import pytest

from .helpers import render
from .jobs import job_env, log_of, run_job

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

# TEST STAND-IN for a training script: each step it writes its heartbeat as the examples do
# (LUMI_SCAFFOLD_HEARTBEAT) and waits for every rank (a collective, through files); rank 0
# saves the step as its checkpoint and a new job resumes from it. FAKE_FAULT=hang|die makes
# the last rank hang (a collective that never returns) or exit at step 5, on every node or
# only on FAKE_BAD_NODE. It registers faulthandler on SIGUSR2 as the examples do.
FAKE_TRAIN = """import argparse, faulthandler, os, signal, sys, time
faulthandler.register(signal.SIGUSR2, all_threads=True)
parser = argparse.ArgumentParser()
parser.add_argument("--output")
parser.add_argument("--steps", type=int, default=30)
args, _ = parser.parse_known_args()
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
node = os.environ["SLURMD_NODENAME"]
if os.environ.get("NCCL_DEBUG_FILE"):
    with open(os.environ["NCCL_DEBUG_FILE"], "a") as log:
        log.write("nid005000:1:1 [0] NCCL INFO NET/OFI Selected Provider is cxi (found 4 nics)\\n")
barrier = os.path.join(args.output, "barrier-" + os.environ["SLURM_JOB_ID"])
os.makedirs(barrier, exist_ok=True)
checkpoint = os.path.join(args.output, "checkpoint")
start = int(open(checkpoint).read()) if os.path.exists(checkpoint) else 0
if rank == 0:
    print(f"rank 0 on {node}: resumed at step {start}" if start else f"rank 0 on {node}: new run", flush=True)
faulty = os.environ.get("FAKE_BAD_NODE", node) == node and rank == world - 1

def collective_that_never_returns():
    while True:
        time.sleep(1)

for step in range(start + 1, args.steps + 1):
    if faulty and step == 5 and os.environ.get("FAKE_FAULT") == "hang":
        collective_that_never_returns()
    if faulty and step == 5 and os.environ.get("FAKE_FAULT") == "die":
        print(f"rank {rank}: dying at step 5", flush=True)
        sys.exit(7)
    if os.environ.get("LUMI_SCAFFOLD_HEARTBEAT"):  # (not with PROGRESS_TIMEOUT=0)
        with open(os.environ["LUMI_SCAFFOLD_HEARTBEAT"], "w") as beat:
            beat.write(f"{step}\\n")
    open(os.path.join(barrier, f"{step}-{rank}"), "w").close()
    while sum(name.startswith(f"{step}-") for name in os.listdir(barrier)) < world:
        time.sleep(0.2)
    if rank == 0:
        with open(checkpoint + ".tmp", "w") as saved:
            saved.write(str(step))
        os.replace(checkpoint + ".tmp", checkpoint)
    time.sleep(0.3)
if rank == 0:
    print(f"done: {args.steps} steps on {node}", flush=True)
"""
LIMITS = {"PROGRESS_TIMEOUT": "5", "STARTUP_TIMEOUT": "60"}


def project_with_stand_in(template, tmp_path, **answers):
    project = render(template, tmp_path / "p", **answers)
    (project / "src/demo/train.py").write_text(FAKE_TRAIN)
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
    assert "watchdog: on (PROGRESS_TIMEOUT=5 s, STARTUP_TIMEOUT=60 s before the first heartbeat)" in log
    if fault == "die":
        assert "rank 15: dying at step 5" in log and "watchdog: no progress" not in log, log
        assert elapsed < 60, log
        return
    # Stopped within PROGRESS_TIMEOUT + the startup allowance (and the queue), not at 1 h.
    assert elapsed < 5 + 60 + 30, (elapsed, log)
    line = re.search(r"^watchdog: no progress for (\d+) s \(PROGRESS_TIMEOUT=5\); last progress: rank (\d+) on "
                     r"(nid00500[01]) \(step 5, \d+ s ago\); furthest behind: rank 15 on nid005001 \(step 4\)\. "
                     r"Stopping the step\.$", log, re.M)
    assert line and 5 <= int(line.group(1)) <= 12, log
    # every rank's stacks: the hung one in its collective, the others waiting for it
    assert log.count("watchdog: stacks of rank") == 16, log
    assert "watchdog: stacks of rank15@nid005001 (pid" in log
    assert re.search(r'File "\S+/train\.py", line \d+ in collective_that_never_returns', log), log
    assert len(re.findall(r"^Current thread 0x|^Thread 0x", log, re.M)) >= 16, log
    assert (project / "logs" / f"rccl-{job_id}-rank0.txt").exists()  # RCCL's logs stay
    assert "done:" not in log


def test_a_chain_goes_on_without_the_node_that_stalled_once(slurm_cluster_2nodes, template, tmp_path, site_root):
    """--chain 2 on one node (8 ranks) pinned to nid005000, where rank 7 hangs: the watchdog
    stops the job; a job excluding nid005000 resumes from the checkpoint on nid005001 and
    finishes; the chain's next job is cancelled."""
    project = project_with_stand_in(template, tmp_path, walltime="01:00:00")
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, FAKE_FAULT="hang", FAKE_BAD_NODE="nid005000", **LIMITS)
    first = slurm_cluster_2nodes.sbatch(["--nodelist=nid005000", "jobs/train.sbatch", "--chain", "2", "--steps", "12"],
                                        cwd=project, env=env)
    result = slurm_cluster_2nodes.wait(first, timeout=180)
    log = log_of(project, first)
    assert result.state == "FAILED", log
    assert re.search(r"^watchdog: no progress .* furthest behind: rank 7 on nid005000 \(step 4\)", log, re.M), log
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


def test_the_pytorch_example_with_a_hung_rank_stops_before_the_time_limit(slurm_cluster, template, tmp_path, site_root):
    """The example itself (DDP over gloo, 2 ranks on small-g, 1 h limit), rank 1 sleeping
    forever at step 5: rank 0's all-reduce ends at the collective timeout the job set below
    PROGRESS_TIMEOUT (two thirds of 9 s: 6 s), and the job fails within a minute."""
    project = render(template, tmp_path / "p", partition="small-g", gpus_per_node=2, walltime="01:00:00")
    train = project / "src/demo/train.py"
    train.write_text(train.read_text().replace(
        "            step += 1\n",
        "            step += 1\n            if rank == 1 and step == 5:\n                time.sleep(10**6)\n", 1))
    env = job_env(slurm_cluster, tmp_path, site_root, PROGRESS_TIMEOUT="9", STARTUP_TIMEOUT="120")
    started = time.monotonic()
    job_id, result = run_job(slurm_cluster, project, env, "jobs/train.sbatch", "--steps", "50", "--num-workers", "0",
                             timeout=180)
    log = log_of(project, job_id)
    assert result.state == "FAILED" and time.monotonic() - started < 90, log
    assert "done:" not in log
    # the framework's own timeout, set below the watchdog, ends it first with its error
    assert "Timed out waiting 6000ms" in log and "watchdog: no progress" not in log, log
