"""The guard where users are (issue 44), through the generated job files on the local Slurm:
with no limit set, a hang ends a 10-minute job (and its profile job) within 3 minutes, the
limits coming from the time limit Slurm holds; before the stop the watchdog asks every rank
for its Flight Recorder dump through its dump pipe; a script that knows nothing of our
helpers still has its stopped rank and its killed rank named, under srun and torchrun.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from .helpers import need_module, render
from .jobs import job_env, log_of, run_job, sleep_in
from .slurm.fixtures import slurm_required
from .test_own_script_jobs import with_command

pytestmark = [pytest.mark.slurm, pytest.mark.slow]
# CI: a missing torch must fail the run, not skip the job tests
need_module("torch", "the job tests train with CPU PyTorch (pip install torch==2.13.0)", required=slurm_required())

LOCAL = {"site": "local", "account": "local", "partition": "batch", "gpus_per_node": 2}

# TEST STAND-IN, ours, for a training script that knows nothing of our helpers (no
# heartbeat.py, no faulthandler, no signal handler): 4 ranks over gloo, one all_reduce and one
# line per step. FAULT=stop|kill|hang: rank 1 stops itself (SIGSTOP), is killed (SIGKILL) or
# sleeps for good at step 3, before that step's all_reduce. STAND_IN_PIPE=1: each rank also
# plays PyTorch's NCCL process group's Flight Recorder (which gloo lacks): it makes the dump
# pipe TORCH_NCCL_DEBUG_INFO_PIPE_FILE<rank>.pipe, and when a byte arrives writes its record
# of collectives (the format fault.py reads, as PyTorch writes it) to TORCH_FR_DUMP_TEMP_FILE<rank>.
FOREIGN = """import os, pickle, signal, sys, threading, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
entered, done = [], [0]
def play_flight_recorder():
    pipe = os.environ["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] + str(rank) + ".pipe"
    if os.path.exists(pipe):  # (as PyTorch's DumpPipe: a pipe left by another process goes)
        os.unlink(pipe)
    os.mkfifo(pipe)
    fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    while True:
        try:
            if os.read(fd, 128):
                break
        except BlockingIOError:
            pass
        time.sleep(0.2)
    print(f"stand-in: rank {rank} asked for its dump", flush=True)
    entries = [{"collective_seq_id": seq, "state": "completed" if seq <= done[0] else "scheduled",
                "profiling_name": "nccl:all_reduce", "process_group": ("0", "default_pg"), "is_p2p": False}
               for seq in entered]
    record = {"entries": entries, "pg_config": {"0": {"ranks": str(list(range(world)))}}}
    with open(os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank), "wb") as dump:
        pickle.dump(record, dump)
if os.environ.get("STAND_IN_PIPE") == "1":
    threading.Thread(target=play_flight_recorder, daemon=True).start()
t = torch.ones(1)
for step in range(1, 30):
    if rank == 1 and step == 3:
        fault = os.environ.get("FAULT")
        if fault == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        if fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if fault == "hang":
            time.sleep(10**6)
    entered.append(step)
    dist.all_reduce(t)
    done[0] = step
    if rank == 0:
        print(f"step {step}", flush=True)
    time.sleep(0.3)
"""


def foreign_job(cluster, template, tmp_path, site_root, launcher, **variables):
    project = render(template, tmp_path / "p", nodes=2, launcher=launcher, **LOCAL)
    (project / "foreign.py").write_text(FOREIGN)
    with_command(project, "python -u foreign.py")
    # OUTPUT_TIMEOUT: the script has no heartbeats, so its output judges it (30 s: importing
    # torch on 4 ranks of a busy 2-core machine must fit in it).
    env = job_env(cluster, tmp_path, site_root, OUTPUT_TIMEOUT="30", **variables)
    job_id, result = run_job(cluster, project, env, "jobs/train.sbatch", timeout=240)
    log = log_of(project, job_id)
    report = json.loads((tmp_path / "outputs/demo/reports" / f"{job_id}.json").read_text())
    return result, log, report["stopped_by"]


@pytest.mark.parametrize("launcher,fault", [("srun", "stop"), ("torchrun", "kill")])
def test_a_stopped_or_killed_rank_of_a_script_without_our_helpers_is_named(slurm_cluster_2nodes, template, tmp_path,
                                                                          site_root, launcher, fault):
    """A rank frozen with SIGSTOP: its output stops, the watchdog finds it in process state T
    (it can give no stacks; the others give theirs, through the startup hook that registers
    faulthandler in every Python process of the step), and the line names it without
    excluding its node. A rank killed with SIGKILL under torchrun: named by torchrun's
    root-cause record (global rank), not as srun's task 0 (the node's torchrun)."""
    result, log, stopped = foreign_job(slurm_cluster_2nodes, template, tmp_path, site_root, launcher, FAULT=fault)
    assert result.state == "FAILED", log
    nodes = dict(re.findall(r"^rank (\d+)/4 node (\S+) local_rank", log, re.M))
    if fault == "stop":
        assert re.search(rf"^watchdog: rank 1 \(pid \d+\) on {nodes['1']} is stopped \(SIGSTOP, or a debugger holds "
                         r"it\): it can give no stacks$", log, re.M), log
        # (through faulthandler, or py-spy's dump where this Python has py-spy: fault.py reads both)
        stacks = re.findall(r"^watchdog: stacks of rank[023]@\S+ \(pid \d+\)(?: follow|, py-spy dump:)$", log, re.M)
        assert len(stacks) == 3, log
        line = re.search(r"^fault: hang \(output stall\): rank 1 on (\S+) .*; process state: rank 1 on \1 stopped "
                         r".*Next: resume: the evidence names rank 1 but nothing against its node", log, re.M)
        assert line and line.group(1) == nodes["1"], log
        assert (stopped["cause"], stopped["rank"], stopped["exclude"]) == ("output stall", 1, None), stopped
    else:
        assert "local_rank: 1" in log and "exitcode  : -9" in log, log  # (torchrun's own record)
        assert re.search(rf"^fault: rank died: rank 1 on {nodes['1']} \(torchrun: local_rank 1 exited with -9 SIGKILL\)",
                         log, re.M), log
        assert (stopped["cause"], stopped["rank"], stopped["node"]) == ("rank died", 1, nodes["1"]), stopped


def test_the_dump_pipe_is_asked_before_the_step_is_cancelled_and_its_dump_names_the_rank(
        slurm_cluster_2nodes, template, tmp_path, site_root):
    """Rank 1 sleeps at step 3 before its all_reduce; every rank reads a stand-in dump pipe.
    The watchdog writes to each pipe, waits for the dumps, then cancels the step; fault.py
    reads them: rank 1 never entered collective 3, which the others wait in."""
    result, log, stopped = foreign_job(slurm_cluster_2nodes, template, tmp_path, site_root, "srun",
                                       FAULT="hang", STAND_IN_PIPE="1")
    assert result.state == "FAILED", log
    for node in ("nid005000", "nid005001"):
        assert re.search(rf"^watchdog: Flight Recorder: asked rank\(s\) \d, \d on {node} through their dump pipes; "
                         r"2 dump\(s\) written$", log, re.M), log
    assert log.count("stand-in: rank") == 4, log
    asked, cancelled = log.index("watchdog: Flight Recorder: asked"), log.index("watchdog: cancelled step")
    assert asked < cancelled, log
    assert re.search(r"^fault: hang \(output stall\): rank 1 on nid005000 .*Flight Recorder: rank\(s\) 1 never "
                     r"entered collective 3 \(nccl:all_reduce, process group 0\) that rank\(s\) 0, 2, 3 wait in", log,
                     re.M), log
    assert (stopped["rank"], stopped["exclude"]) == (1, "nid005000"), stopped


def default_limit_project(template: Path, work: Path) -> Path:
    project = render(template, work / "p", gpus_per_node=2, profiler="rocprofv3", walltime="01:00:00")
    sleep_in(project / "src/demo/train.py", "            step += 1\n", "            ", step=3)
    return project


def submit_default_limit_hangs(cluster, template: Path, work: Path, site_root: Path) -> dict[str, tuple]:
    """(For tests/conftest.py's _OVERLAPPED: the jobs wait on the watchdog's own minutes.) The
    training and the profile job of the PyTorch example whose rank 1 sleeps at step 3, with
    no limit set and sbatch --time=00:10:00 over the job files' 1 hour: {kind: (project, job, submitted at)}."""
    jobs = {}
    for kind in ("train", "profile"):
        project = default_limit_project(template, work / kind)
        env = job_env(cluster, work / kind, site_root)
        jobs[kind] = (project, cluster.sbatch(["--time=00:10:00", f"jobs/{kind}.sbatch", "--num-workers", "0"],
                                              cwd=project, env=env), time.monotonic())
    return jobs


@pytest.mark.parametrize("kind", ["train", "profile"])
def test_with_no_limit_set_a_hang_ends_a_10_minute_job_within_3_minutes(slurm_cluster_timelimit, default_limit_hangs,
                                                                         kind):
    """The limits come from the 10 minutes Slurm holds, not the header's hour: PROGRESS_TIMEOUT
    60 s (its floor), so the hang at step 3 ends the job about 80 s after it, with the line
    naming rank 1; the profile job is guarded the same way."""
    project, job_id, submitted = default_limit_hangs[kind]
    result = slurm_cluster_timelimit.wait(job_id, timeout=400)
    log = log_of(project, job_id)
    assert result.state == "FAILED", log
    assert "watchdog: for a time limit of 600 s on 1 node(s): STARTUP_TIMEOUT=182 s, PROGRESS_TIMEOUT=60 s, " \
           "PHASE_TIMEOUT=180 s, OUTPUT_TIMEOUT=300 s; then up to 90 s" in log, log
    assert re.search(r"^watchdog: no progress for \d+ s \(PROGRESS_TIMEOUT=60\); last progress: rank 0 on \S+ "
                     r"\(step 3, \d+ s ago\); furthest behind: rank 1 on \S+ \(step 2\)", log, re.M), log
    info = slurm_cluster_timelimit.job_info(job_id)
    ran = int(info["RunTime"].split(":")[-2]) * 60 + int(info["RunTime"].split(":")[-1])
    assert ran < 60 + 180, (info["RunTime"], log)  # (the start, 3 steps, then at most 3 minutes)
    if kind == "train":
        assert re.search(r"^fault: hang \(heartbeat stall\): rank 1 on \S+ after step 2", log, re.M), log


def test_a_job_submitted_by_hand_leaves_a_node_in_the_ledger_and_an_expired_entry_is_not_applied(
        slurm_cluster_2nodes, template, tmp_path, site_root):
    """The ledger holds nid005000 (in force) and nid005001 (expired). A job submitted by hand
    onto nid005000 says so in its first lines and queues its replacement with
    --exclude=nid005000 (Slurm's ExcNodeList shows it), which runs on nid005001 and completes."""
    project = render(template, tmp_path / "p", **LOCAL)
    (project / "foreign.py").write_text("print('trained', flush=True)\n")
    with_command(project, "python -u foreign.py")
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root)
    now = int(time.time())
    (tmp_path / "outputs").mkdir(exist_ok=True)
    (tmp_path / "outputs" / "node-ledger.tsv").write_text(
        f"nid005000\t{now + 86400}\t11\t2026-11-28T09:00:00\tfault: hang (heartbeat stall): rank 1 on nid005000\n"
        f"nid005001\t{now - 60}\t10\t2026-11-20T09:00:00\tfault: hang (heartbeat stall): rank 3 on nid005001\n")
    job_id = slurm_cluster_2nodes.sbatch(["--nodelist=nid005000", "jobs/train.sbatch"], cwd=project, env=env)
    result = slurm_cluster_2nodes.wait(job_id, timeout=120)
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert re.search(r"^ledger: nid005000 excluded until .* \(job 11 at 2026-11-28T09:00:00: fault: hang", log, re.M), log
    assert "nid005001 excluded" not in log, log
    replaced = re.search(r"^ledger: this job landed on nid005000: job (\d+) replaces it without nid005000 ", log, re.M)
    assert replaced and "trained" not in log, log
    second = int(replaced.group(1))
    assert slurm_cluster_2nodes.job_info(second)["ExcNodeList"] == "nid005000"
    result = slurm_cluster_2nodes.wait(second, timeout=120)
    log2 = log_of(project, second)
    assert result.state == "COMPLETED" and "trained" in log2, log2
    assert "ledger: this job runs on nid005001, none of them" in log2, log2
