"""One fault model, through the generated job files on the local Slurm (2 emulated nodes):
however a training step stops making progress, the job prints one `fault:` line naming the
hang, the rank and the step, writes stopped_by into its report, and the chain resumes
(without a node only on evidence) instead of ending as "training failed". A stalled step is
ended by scancel of the step.

Before lumi-scaffold 0.4 (issue 33) a framework collective timeout (the PyTorch example's
gloo `Timed out waiting ...`) was "training failed" and ended the chain, and a hang with
every rank at one step excluded a node picked by heartbeat age.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from .helpers import render
from .jobs import STAND_IN_TRAIN, job_env, log_of, sleep_in

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def test_the_pytorch_example_hung_at_step_5_is_named_and_the_chain_resumes(slurm_cluster_2nodes, template, tmp_path,
                                                                          site_root):
    """The example (DDP over gloo on the CPU, 2 ranks on one node, CHAIN=2), rank 1 asleep
    at step 5 of the first job (after its optimizer step, before its heartbeat): the job
    stops well before its 1 h limit, by the watchdog (the collective timeout is above its
    allowances: scripts/lib/job.sh), with one line naming a hang, rank 1 and step 4 (its last
    heartbeat; rank 0 beat step 5); the report says so; a job without that node replaces it,
    resumes from the checkpoint of step 4 and finishes."""
    project = render(template, tmp_path / "p", partition="small-g", gpus_per_node=2, walltime="01:00:00")
    sleep_in(project / "src/demo/train.py", "            step += 1\n", "            ")
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, PROGRESS_TIMEOUT="6", STARTUP_TIMEOUT="120")
    started = time.monotonic()
    first = slurm_cluster_2nodes.sbatch(["jobs/train.sbatch", "--steps", "8", "--checkpoint-every", "2",
                                         "--num-workers", "0", "--seconds-per-step", "0.5"], cwd=project, env={**env, "CHAIN": "2"})
    result = slurm_cluster_2nodes.wait(first, timeout=180)
    log = log_of(project, first)
    assert result.state == "FAILED" and time.monotonic() - started < 120, log
    line = re.search(r"^fault: hang \((collective timeout|heartbeat stall)\): rank 1 on (nid00500[01]) after step 4\b"
                     r".*heartbeats: rank\(s\) 1 at step 4, the others at step 5.*Next: resume elsewhere: ", log, re.M)
    assert line, log
    node = line.group(2)
    if line.group(1) == "collective timeout":
        assert "Timed out waiting 6000ms" in log and "Flight Recorder: none for gloo" in log, log
    else:  # the watchdog's own line names the limit, the last progress and rank 1 as furthest behind
        assert re.search(r"^watchdog: no progress for \d+ s \(PROGRESS_TIMEOUT=6\); last progress: rank 0 on (\S+) "
                         r"\(step 5, \d+ s ago\); furthest behind: rank 1 on \1 \(step 4\)", log, re.M), log
    assert log.count("fault: ") == 1, log
    report = json.loads((tmp_path / "outputs/demo/reports" / f"{first}.json").read_text())
    stopped = report["stopped_by"]
    assert (stopped["hang"], stopped["rank"], stopped["node"], stopped["step"], stopped["decision"], stopped["exclude"]) \
        == (True, 1, node, 4, "resume-elsewhere", node), report
    assert report["exit"]["status"] != 0 and report["seconds"]["job"] > 0 and report["billing"]["billed"] > 0
    queued = re.search(r"^chain: job (\d+) continues run demo", log, re.M)
    retry = re.search(rf"^chain: job (\d+) resumes run demo from its newest checkpoint, without node {node}$", log, re.M)
    assert queued and retry, log
    assert "training failed" not in log
    result = slurm_cluster_2nodes.wait(int(retry.group(1)), timeout=180)
    log2 = log_of(project, int(retry.group(1)))
    assert result.state == "COMPLETED", log2
    assert re.search(r"^resumed from \S+checkpoint-00000004\.pt at step 4$", log2, re.M), log2
    assert "done: 8 steps on 2 process(es)" in log2 and "fault:" not in log2
    assert slurm_cluster_2nodes.job_info(int(retry.group(1)))["ExcNodeList"] == node
    assert slurm_cluster_2nodes.wait(int(queued.group(1)), timeout=30).state == "CANCELLED"
    report2 = json.loads((tmp_path / "outputs/demo/reports" / f"{retry.group(1)}.json").read_text())
    assert report2["ended"] == "finished" and report2["stopped_by"] is None and report2["loss"]["last"] is not None


def test_a_hang_with_no_rank_behind_is_resubmitted_unchanged_and_its_step_is_scancelled(slurm_cluster_2nodes, template,
                                                                                         tmp_path, site_root):
    """8 ranks on one node, all waiting at step 5: the watchdog stops the step by scancel of
    the step; no node is excluded (no evidence against any); the line says "software hang
    suspected"; the job that replaces it resumes after step 4 and finishes."""
    project = render(template, tmp_path / "p", walltime="01:00:00")
    (project / "src/demo/train.py").write_text(STAND_IN_TRAIN)
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, PROGRESS_TIMEOUT="5", STARTUP_TIMEOUT="60",
                  FAKE_FAULT="hang-all")
    first = slurm_cluster_2nodes.sbatch(["jobs/train.sbatch", "--steps", "8"], cwd=project, env={**env, "CHAIN": "2"})
    result = slurm_cluster_2nodes.wait(first, timeout=180)
    log = log_of(project, first)
    assert result.state == "FAILED", log
    assert re.search(rf"^watchdog: cancelled step {first}\.\d+ \(scancel\)$", log, re.M), log
    assert re.search(r"^fault: hang \(heartbeat stall\): no rank to blame after step 4; .*heartbeats: every rank at step 4\. "
                     r"Next: resume: software hang suspected", log, re.M), log
    assert "chain: the watchdog stopped this job; a job on any nodes replaces it (software hang suspected)" in log
    retry = re.search(r"^chain: job (\d+) resumes run demo from its newest checkpoint$", log, re.M)
    assert retry, log
    report = json.loads((tmp_path / "outputs/demo/reports" / f"{first}.json").read_text())
    assert report["stopped_by"]["cause"] == "heartbeat stall" and report["stopped_by"]["exclude"] is None
    assert report["ended"] == "hang" and report["steps"]["last"] == 4  # the job's own report: no runlog here
    result = slurm_cluster_2nodes.wait(int(retry.group(1)), timeout=180)
    log2 = log_of(project, int(retry.group(1)))
    assert result.state == "COMPLETED", log2
    assert "resumed at step 4" in log2 and "done: 8 steps" in log2
    assert slurm_cluster_2nodes.job_info(int(retry.group(1)))["ExcNodeList"] in ("", "(null)")


# TEST STAND-IN for a training script whose ranks die or whose RCCL logs a network: rank 0
# logs FAKE_RCCL_LINE to RCCL's debug file; FAKE_DIE=R makes rank R exit 7 after 2 s.
NET_OR_DIE = """import os, sys, time
if os.environ.get("NCCL_DEBUG_FILE") and os.environ.get("FAKE_RCCL_LINE"):
    with open(os.environ["NCCL_DEBUG_FILE"], "a") as log:
        log.write(os.environ["FAKE_RCCL_LINE"] + "\\n")
time.sleep(2)
if os.environ.get("FAKE_DIE") == os.environ["RANK"]:
    print("rank", os.environ["RANK"], "dying", flush=True)
    sys.exit(7)
time.sleep(8)
print("rank", os.environ["RANK"], "trained", flush=True)
"""


@pytest.mark.parametrize("fault", ["network", "die"])
def test_a_network_fallback_and_a_dying_rank_are_named_and_stop_the_chain(slurm_cluster_2nodes, template, tmp_path,
                                                                         site_root, fault):
    """2 nodes, CHAIN=2: RCCL on TCP sockets (rank 0's check stops the job), or rank 11
    (on nid005001) exits 7: one `fault:` line with the cause, the report's stopped_by, and
    the chain's next job cancelled with that reason."""
    project = render(template, tmp_path / "p", nodes=2, walltime="01:00:00")
    (project / "src/demo/train.py").write_text(NET_OR_DIE)
    extra = ({"FAKE_RCCL_LINE": "nid005000:1:1 [0] NCCL INFO NET/Socket : Using [0]hsn0:10.253.1.1<0>\n"
                                "nid005000:1:1 [0] NCCL INFO Using network Socket"} if fault == "network"
             else {"FAKE_DIE": "11", "RCCL_NET_CHECK": "0"})
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, **extra)
    first = slurm_cluster_2nodes.sbatch(["jobs/train.sbatch"], cwd=project, env={**env, "CHAIN": "2"})
    result = slurm_cluster_2nodes.wait(first, timeout=120)
    log = log_of(project, first)
    assert result.state == "FAILED", log
    assert log.count("fault: ") == 1, log
    queued = re.search(r"^chain: job (\d+) continues run demo", log, re.M)
    assert queued, log
    report = json.loads((tmp_path / "outputs/demo/reports" / f"{first}.json").read_text())
    if fault == "network":
        assert re.search(r"^fault: network fallback: rank 0 on nid005000 \(ERROR: RCCL talks between nodes over TCP "
                         r"sockets.*Next: stop: RCCL fell back to TCP sockets", log, re.M), log
        assert f"chain: RCCL fell back to TCP sockets: the next job would too (the fix above); cancelling job {queued.group(1)}" in log
    else:
        assert re.search(r"^fault: rank died: rank 11 on nid005001 \(Exited with exit code 7\)\. Next: stop: training failed "
                         r"\(status \d+\) before Slurm's time-limit warning: rank 11 on nid005001 first", log, re.M), log
        assert re.search(rf"^chain: training failed .* cancelling job {queued.group(1)}$", log, re.M), log
        assert (report["stopped_by"]["rank"], report["stopped_by"]["node"]) == (11, "nid005001")
    assert report["stopped_by"]["decision"] == "stop" and report["exit"]["status"] != 0
    # the job's own report (no runlog here): its steps are not reported, not 0
    assert report["by"] == "job" and report["steps"]["done"] is None and report["seconds"]["job"] > 0, report
    assert slurm_cluster_2nodes.wait(int(queued.group(1)), timeout=30).state == "CANCELLED"


# TEST STAND-IN for a training script whose rank 1 dies once with CUDA's text for an
# uncorrectable ECC error (torch.distributed's [rank1]: prefix), the first time it runs in
# the run: a marker in RUN_DIR says it did.
DIES_ONCE_WITH_ECC = """import os, sys, time
marker = os.path.join(os.environ["RUN_DIR"], "died-once")
time.sleep(1)
if os.environ["RANK"] == "1" and not os.path.exists(marker):
    open(marker, "w").close()
    sys.stderr.write("[rank1]: RuntimeError: CUDA error: uncorrectable ECC error encountered\\n")
    sys.stderr.flush()
    sys.exit(1)
time.sleep(3)
print("rank", os.environ["RANK"], "trained", flush=True)
"""


def test_a_rank_that_dies_with_a_hardware_message_puts_its_node_in_the_ledger_and_the_chain_goes_on_without_it(
        slurm_cluster_2nodes, template, tmp_path, site_root):
    """A 1-node job of 2 ranks, CHAIN=2, on 2 nodes: rank 1 dies with an uncorrectable ECC
    error. One `fault:` line names the rank, its node and the message; the node goes into the
    ledger with a report for the site's support; a job without that node replaces this one
    (job.sh's chain, as after a hang with node evidence) and finishes; the queued one is
    cancelled."""
    project = render(template, tmp_path / "p", partition="small-g", gpus_per_node=2, walltime="01:00:00")
    (project / "src/demo/train.py").write_text(DIES_ONCE_WITH_ECC)
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root)
    first = slurm_cluster_2nodes.sbatch(["jobs/train.sbatch"], cwd=project, env={**env, "CHAIN": "2"})
    result = slurm_cluster_2nodes.wait(first, timeout=120)
    log = log_of(project, first)
    assert result.state == "FAILED", log
    line = re.search(r"^fault: rank died: rank 1 on (nid00500[01]) \(Exited with exit code 1\); hardware message of "
                     r"rank 1 \(on \1\): \[rank1\]: RuntimeError: CUDA error: uncorrectable ECC error encountered\. "
                     r"Next: resume elsewhere: a hardware fault of \1", log, re.M)
    assert line and log.count("fault: ") == 1, log
    node = line.group(1)
    assert re.search(rf"^ledger: {node} is excluded from this project's jobs until .*\n  Suspect node {node}: job {first} "
                     r"at \S+\. Evidence: .*uncorrectable ECC error", log, re.M), log
    assert (tmp_path / "outputs/node-ledger.tsv").read_text().startswith(f"{node}\t"), log
    report = json.loads((tmp_path / "outputs/demo/reports" / f"{first}.json").read_text())
    assert (report["stopped_by"]["rank"], report["stopped_by"]["node"], report["stopped_by"]["decision"],
            report["stopped_by"]["exclude"]) == (1, node, "resume-elsewhere", node), report
    queued = re.search(r"^chain: job (\d+) continues run demo", log, re.M)
    retry = re.search(rf"^chain: job (\d+) resumes run demo from its newest checkpoint, without node {node}$", log, re.M)
    assert queued and retry and f"a rank of this job died with a hardware message; a job without {node} replaces it" in log, log
    assert slurm_cluster_2nodes.wait(int(retry.group(1)), timeout=120).state == "COMPLETED", log_of(project, int(retry.group(1)))
    assert slurm_cluster_2nodes.job_info(int(retry.group(1)))["ExcNodeList"] == node
    log2 = log_of(project, int(retry.group(1)))
    assert "rank 1 trained" in log2 and "fault:" not in log2 and f"ledger: {node} excluded until " in log2, log2
    assert slurm_cluster_2nodes.wait(int(queued.group(1)), timeout=30).state == "CANCELLED"


def test_a_job_ended_by_scancel_says_so_and_its_report_records_stopped_by(slurm_cluster, template, tmp_path,
                                                                           site_root):
    """The PyTorch example (2 ranks) in a chain of 2, cancelled with `scancel` while it trains:
    SIGTERM to the batch script (the harness's KillWait: SIGKILL 5 s later); its trap ends the
    chain and prints one `fault: cancelled` line; the report rank 0 wrote on SIGTERM is
    completed with stopped_by, its steps kept."""
    project = render(template, tmp_path / "p", partition="small-g", gpus_per_node=2, walltime="01:00:00")
    env = job_env(slurm_cluster, tmp_path, site_root)
    job_id = slurm_cluster.sbatch(["jobs/train.sbatch", "--steps", "100000", "--num-workers", "0"],
                                  cwd=project, env={**env, "CHAIN": "2"})
    deadline = time.monotonic() + 120
    while not re.search(r"^step \d+ loss", log_of(project, job_id), re.M):
        assert time.monotonic() < deadline, log_of(project, job_id)
        time.sleep(0.5)
    slurm_cluster.run(["scancel", str(job_id)], check=True)
    assert slurm_cluster.wait(job_id, timeout=60).state == "CANCELLED"
    log = log_of(project, job_id)
    queued = re.search(r"^chain: job (\d+) continues run demo", log, re.M)
    assert queued and f"chain: this job was cancelled; cancelling job {queued.group(1)}" in log, log
    assert re.search(r"^fault: cancelled: after step \d+ \(SIGTERM: scancel, or Slurm ended the job\)\. Next: stop: "
                     r"the job was cancelled; submitting again resumes the run", log, re.M), log
    assert log.count("fault: ") == 1, log
    # the Flight Recorder's variables under the names this torch (2.13) reads: no warning per rank
    assert "is deprecated; use TORCH_FR_" not in log and "rank 1/2 local_rank 1" in log, log
    report = json.loads((tmp_path / "outputs/demo/reports" / f"{job_id}.json").read_text())
    assert report["ended"] == "cancelled" and report["steps"]["done"] >= 20, report  # (runlog's figures, kept)
    assert (report["stopped_by"]["cause"], report["stopped_by"]["decision"], report["exit"]["status"]) \
        == ("cancelled", "stop", 143), report
    assert slurm_cluster.wait(int(queued.group(1)), timeout=30).state == "CANCELLED"
