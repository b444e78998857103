"""The generated examples themselves hang, through the generated job files on the local Slurm
(2 emulated nodes): the PyTorch example under torchrun, the JAX example and the DeepSpeed
plugin's example under srun, 2 ranks on one node, rank 1 asleep at step 5 of the first job
of a chain of 2. The fault model (docs/jobs.md, "One fault model") says what each must do:
the watchdog ends the hang (the frameworks' collective timeout lies above its allowances;
XLA's collectives have none), one `fault: hang (heartbeat stall)` line names rank 1 and its
last step, the job report records stopped_by, and the chain resumes from the newest
checkpoint in a job without that node.

The sleep goes into the rendered train.py (tests/jobs.py, sleep_in, as for the PyTorch
example under srun in tests/test_fault_model_jobs.py): the examples carry no test hook.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from lumi_scaffold import plugins

from .helpers import need_module, render
from .jobs import image_env, job_env, log_of, sleep_in

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def hang_and_resume(cluster, project: Path, tmp_path: Path, site_root: Path, extra: list[str], resume: bool = True,
                    within: float = 120, **variables: str) -> tuple[str, str]:
    """Run the chain; assert the fault line, the report and (``resume``) the resumed job;
    return both logs ('' for the second without ``resume``: its job is cancelled instead)."""
    env = job_env(cluster, tmp_path, site_root, PROGRESS_TIMEOUT="6", STARTUP_TIMEOUT="120", **variables)
    started = time.monotonic()
    first = cluster.sbatch(["jobs/train.sbatch", "--steps", "8", "--checkpoint-every", "2", *extra],
                           cwd=project, env={**env, "CHAIN": "2"})
    result = cluster.wait(first, timeout=180)
    log = log_of(project, first)
    assert result.state == "FAILED" and time.monotonic() - started < within, log
    line = re.search(r"^fault: hang \(heartbeat stall\): rank 1 on (nid00500[01]) after step 4\b"
                     r".*heartbeats: rank\(s\) 1 at step 4, the others at step 5.*Next: resume elsewhere: ", log, re.M)
    assert line, log
    node = line.group(1)
    assert re.search(rf"^watchdog: no progress for \d+ s \(PROGRESS_TIMEOUT=6\); last progress: rank 0 on {node} "
                     rf"\(step 5, \d+ s ago\); furthest behind: rank 1 on {node} \(step 4\)\. Stopping the step\.$",
                     log, re.M), log
    assert log.count("fault: ") == 1 and "training failed" not in log and "done:" not in log, log
    report = json.loads((tmp_path / "outputs/demo/reports" / f"{first}.json").read_text())
    stopped = report["stopped_by"]
    assert (stopped["cause"], stopped["hang"], stopped["rank"], stopped["node"], stopped["step"], stopped["decision"],
            stopped["exclude"]) == ("heartbeat stall", True, 1, node, 4, "resume-elsewhere", node), report
    assert report["ended"] == "hang" and report["exit"]["status"] != 0, report
    queued = re.search(r"^chain: job (\d+) continues run demo", log, re.M)
    retry = re.search(rf"^chain: job (\d+) resumes run demo from its newest checkpoint, without node {node}$", log, re.M)
    assert queued and retry, log
    assert cluster.job_info(int(retry.group(1)))["ExcNodeList"] == node
    # the node goes into the project's ledger, with a report ready for the site's support
    assert re.search(rf"^ledger: {node} is excluded from this project's jobs until .*Report it to the site's support"
                     rf"( \(https://\S+\))?:\n  Suspect node {node}: job {first} at \S+\. Evidence: hang \(heartbeat stall\): rank 1 on {node}", log, re.M), log
    assert (tmp_path / "outputs/node-ledger.tsv").read_text().startswith(f"{node}\t")
    if not resume:
        cluster.run(["scancel", retry.group(1)], check=True)
        assert cluster.wait(int(queued.group(1)), timeout=30).state == "CANCELLED"
        return log, ""
    result = cluster.wait(int(retry.group(1)), timeout=180)
    log2 = log_of(project, int(retry.group(1)))
    assert result.state == "COMPLETED", log2
    assert "done: 8 steps on 2 process(es)" in log2 and "fault:" not in log2, log2
    assert re.search(rf"^ledger: {node} excluded until .*\nledger: this job runs on nid00500[01], none of them$", log2,
                     re.M), log2
    assert cluster.wait(int(queued.group(1)), timeout=30).state == "CANCELLED"
    report2 = json.loads((tmp_path / "outputs/demo/reports" / f"{retry.group(1)}.json").read_text())
    assert report2["ended"] == "finished" and report2["stopped_by"] is None, report2
    return log, log2


def test_the_pytorch_example_under_torchrun_hung_at_step_5_is_named_and_the_chain_resumes(
        slurm_cluster_2nodes, template, tmp_path, site_root):
    """torchrun starts both workers of the node (one task); rank 1 sleeps before its heartbeat
    of step 5. The gloo collective timeout is above the watchdog's limits, so the watchdog
    ends the hang; the job without the node resumes from the checkpoint of step 4."""
    project = render(template, tmp_path / "p", partition="small-g", gpus_per_node=2, launcher="torchrun",
                     walltime="01:00:00")
    sleep_in(project / "src/demo/train.py", "            step += 1\n", "            ")
    log, log2 = hang_and_resume(slurm_cluster_2nodes, project, tmp_path, site_root,
                                ["--num-workers", "0", "--seconds-per-step", "0.5"])
    assert "Timed out" not in log, log
    assert re.search(r"^resumed from \S+checkpoint-00000004\.pt at step 4$", log2, re.M), log2


def test_the_jax_example_hung_at_step_5_is_named_and_the_chain_resumes(slurm_cluster_2nodes, template, tmp_path,
                                                                       site_root):
    """The JAX example (srun, 2 processes over gloo on the CPU); rank 1 sleeps before its
    heartbeat of step 5, rank 0 waits in step 6's all-reduce, which has no timeout: the
    watchdog ends it; the job without the node resumes from the save of step 4."""
    need_module("jax", "the JAX job tests need CPU JAX (pip install jax)")
    project = render(template, tmp_path / "p", partition="small-g", gpus_per_node=2, framework="jax",
                     walltime="01:00:00")
    sleep_in(project / "src/demo/train.py", "        loss.block_until_ready()\n", "        ")
    # (LUMI's JAX image is a former LUST one: its %environment defines WITH_CONDA)
    log, log2 = hang_and_resume(slurm_cluster_2nodes, project, tmp_path, site_root, ["--seconds-per-step", "0.5"],
                                **image_env(tmp_path, WITH_CONDA="true"))
    assert re.search(r"^resumed from \S+ at step 4$", log2, re.M), log2


def test_the_deepspeed_example_hung_at_step_5_is_named_and_a_job_without_the_node_queued(slurm_cluster_2nodes, template, tmp_path,
                                                                             site_root, monkeypatch):
    """The DeepSpeed plugin's example (srun, 2 ranks, deepspeed.init_distributed over gloo on
    the CPU); rank 1 sleeps before its heartbeat of step 5 (rank 0 waits in ZeRO's gradient
    all-reduce): the watchdog ends the hang (the example's collective timeout, also given to
    DeepSpeed's own groups, lies above it) and queues the job without the node, which the
    test cancels: resuming from a DeepSpeed checkpoint is the plugin's own test (its first
    start builds DeepSpeed's CPU communication op, hence the longer allowance)."""
    need_module("deepspeed", "deepspeed is not installed here (pip install --no-build-isolation deepspeed)",
                required=bool(os.environ.get("LUMI_SCAFFOLD_REQUIRE_DEEPSPEED")))
    monkeypatch.setenv(plugins.ENV_DISABLE, "lumi-site-frontier,lumi-site-leonardo")  # (tests/conftest.py disables the plugin)
    plugins.reset()
    project = render(template, tmp_path / "p", partition="small-g", gpus_per_node=2, framework="deepspeed",
                     walltime="01:00:00")
    sleep_in(project / "src/demo/train.py", "            step += 1\n", "            ")
    log, _ = hang_and_resume(slurm_cluster_2nodes, project, tmp_path, site_root,
                             ["--num-workers", "0", "--seconds-per-step", "0.5"], resume=False, within=300)
    assert "Timed out" not in log and "allreduce_bucket" in log, log  # (rank 0's stacks: where it waited)
