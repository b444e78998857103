"""scripts/lib/python/runlog.py, the job report and experiment tracking of the examples, run as a
job's rank 0 runs it: a driver below stands in for train.py's loop (its steps take known
times); the report it writes is read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

# A job's training loop: steps START+1..STOP, each SLEEP s (a tenth of it waiting for data);
# KILL: the job is ended there with SIGTERM, as Slurm ends it at its time limit.
# TIME_UP_CHECK_S: how often rank 0 looks for the time-limit flag (runlog's own unless set).
DRIVER = """
import os, signal, sys, time
sys.path.insert(0, os.environ["RUNLOG_DIR"])
import runlog
runlog.TIME_UP_CHECK_S = float(os.environ.get("TIME_UP_CHECK_S", runlog.TIME_UP_CHECK_S))
runlog.check()
start, stop, kill = (int(os.environ[k]) for k in ("START", "STOP", "KILL"))
sleep = float(os.environ.get("SLEEP", "0"))
log = runlog.RunLog(rank=0, world=4, output=os.environ["OUT"], start_step=start, last_step=stop,
                    samples_per_step=32, config={"steps": stop, "lr": 0.1}, peak_memory=lambda: 2_500_000_000)
for step in range(start + 1, stop + 1):
    time.sleep(sleep)
    log.step(step, data_wait=sleep / 10, metrics=lambda: {"loss": 1.0 / step, "lr": 0.1})
    if step == kill:
        os.kill(os.getpid(), signal.SIGTERM)  # as Slurm ends a job at its time limit
log.finish(finished=True)
"""


def run_driver(runlog_dir: Path, tmp_path: Path, start: int, stop: int, kill: int = 0, job: str = "7",
               **env: str) -> subprocess.CompletedProcess[str]:
    """The driver as rank 0 of job ``job`` (none: outside a job), writing under tmp_path/run."""
    outside = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "LUMI_SCAFFOLD_"))}
    environment = {**outside, "RUNLOG_DIR": str(runlog_dir), "OUT": str(tmp_path / "run"), "START": str(start),
                   "STOP": str(stop), "KILL": str(kill), "SLURM_JOB_ID": job, "SLURM_JOB_NUM_NODES": "1",
                   "RUN_NAME": "demo", "LUMI_SCAFFOLD_PROJECT": "demo", "LUMI_SCAFFOLD_LOG_EVERY": "5", **env}
    return subprocess.run([sys.executable, "-c", DRIVER], env=environment, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


def test_a_missing_tracker_package_is_one_line_at_start(package_dir, tmp_path):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "mlflow.py").write_text("raise ImportError(\"No module named 'mlflow'\")\n")  # TEST STAND-IN: not installed
    result = run_driver(package_dir, tmp_path, 0, 10, LUMI_SCAFFOLD_TRACKING="mlflow", PYTHONPATH=str(hidden))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "tracking: mlflow needs the package mlflow-skinny" in result.stderr and "requirements.txt" in result.stderr
    assert not (tmp_path / "run").exists()  # stopped before the first step


def test_the_job_report_adds_up(package_dir, tmp_path):
    """Steps of 0.05 s (a tenth waiting for data) on 4 ranks of 32 samples a step, on 2
    nodes billed at 1 GPU-hour per node-hour from a start 360 s ago: 0.2 GPU-hours so far."""
    start = str(int(time.time()) - 360)
    result = run_driver(package_dir, tmp_path, 10, 30, SLEEP="0.05", LUMI_SCAFFOLD_BILLING_PER_NODE="1",
                        SLURM_JOB_NUM_NODES="2", LUMI_SCAFFOLD_BILLING_UNIT="GPU-hours",
                        LUMI_SCAFFOLD_JOB_START=start)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "run/reports/7.json").read_text())
    assert report["ended"] == "finished" and report["steps"] == {"first": 11, "last": 30, "done": 20}
    assert report["by"] == "runlog" and report["run"] == "demo" and report["kind"] == "train"
    assert 0.05 <= report["step_time_s"]["p50"] <= report["step_time_s"]["p95"] < 0.2
    assert 0.08 <= report["data_wait_share"] <= 0.1
    assert report["samples_per_s"] == pytest.approx(32 / report["step_time_s"]["p50"], rel=0.3)
    assert report["samples_per_s_per_gpu"] == pytest.approx(report["samples_per_s"] / 4, abs=0.01)
    assert report["billing"]["per_hour"] == 2
    assert report["billing"]["billed"] == pytest.approx(2 * report["seconds"]["job"] / 3600, abs=1e-4)
    assert 0.2 <= report["billing"]["billed"] < 0.21
    assert report["billing"]["per_1000_steps"] == pytest.approx(report["billing"]["billed"] * 1000 / 20, rel=1e-3)
    assert report["loss"] == {"last": 1 / 30, "best": 1 / 30}
    assert report["lr"] == 0.1  # (the metrics' "lr": the learning rate the steps trained with)
    line = result.stdout.strip().splitlines()[-1]
    assert line.startswith("report: job 7 finished · steps 11-30 (20) · ") and "GPU-hours billed" in line, line


def test_the_time_limit_warning_writes_the_report_at_once(package_dir, tmp_path):
    """The job's USR1 trap creates LUMI_SCAFFOLD_TIME_UP; rank 0 reports at its next look
    for the flag (every TIME_UP_CHECK_S: 0.5 s here) and goes on (the job may still be
    killed before its end)."""
    flag = tmp_path / "time-up"
    flag.touch()
    result = run_driver(package_dir, tmp_path, 0, 60, kill=40, SLEEP="0.04", TIME_UP_CHECK_S="0.5",
                        LUMI_SCAFFOLD_TIME_UP=str(flag), LUMI_SCAFFOLD_TRACKING="none")
    assert result.returncode == 143, result.stderr
    reports = [line for line in result.stdout.splitlines() if line.startswith("report: job 7 time limit")]
    assert len(reports) == 2 and " · steps 1-40 (40) · " in reports[1], result.stdout  # the warning, then the end
    first = int(reports[0].split(" · steps 1-")[1].split(" ")[0])
    assert 5 <= first < 40, reports  # within 0.5 s of the start, not at once
    report = json.loads((tmp_path / "run/reports/7.json").read_text())
    assert report["ended"] == "time limit" and report["steps"]["last"] == 40, report


def test_outside_a_job_nothing_is_written(package_dir, tmp_path):
    result = run_driver(package_dir, tmp_path, 0, 10, job="")
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "run/reports").exists() and "report:" not in result.stdout


def test_at_the_time_limit_warning_every_rank_stops_at_the_same_step(package_dir, tmp_path, monkeypatch):
    """RunLog.time_to_stop in a training job, two ranks in one process: they agree (the
    collective below checks that both call it at the same steps) about every AGREE_EVERY_S
    seconds of steps, not every step; once the job's USR1 trap has created the flag, both
    stop at the same step, the next agreement, and rank 0 reports 'time limit'. A profile
    job never stops early."""
    import importlib.util
    import signal

    spec = importlib.util.spec_from_file_location("runlog_under_test", package_dir / "runlog.py")
    runlog = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runlog)
    flag = tmp_path / "time-up"
    for name, value in {"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "1", "LUMI_SCAFFOLD_JOB_KIND": "train",
                        "LUMI_SCAFFOLD_TIME_UP": str(flag), "LUMI_SCAFFOLD_TRACKING": "none"}.items():
        monkeypatch.setenv(name, value)
    # (1 s of 0.01-s steps: ~100 steps between agreements; a busy machine's slow step, up to
    # 0.3 s, still leaves 3: runlog agrees more often after a slow step, as it should)
    monkeypatch.setattr(runlog, "AGREE_EVERY_S", 1.0)
    handler = signal.getsignal(signal.SIGTERM)
    try:
        ranks = [runlog.RunLog(rank=rank, world=2, output=str(tmp_path / "run"), start_step=0, last_step=10_000,
                               samples_per_step=2, config={}) for rank in (0, 1)]
    finally:
        signal.signal(signal.SIGTERM, handler)  # (rank 0's report on SIGTERM: not in pytest's process)
    given: dict[int, list[int]] = {}  # step -> what rank 0 gave (rank 1 gives zeros)

    def collective(rank: int, step: int):
        def agree(values: list[int]) -> list[int]:
            if rank == 0:
                given[step] = values
            else:
                assert values == [0, 0] and step in given, (step, sorted(given))
            return [max(a, b) for a, b in zip(given[step], [0, 0])]
        return agree

    stopped: dict[int, int] = {}
    for step in range(1, 10_000):
        time.sleep(0.01)
        for rank, log in enumerate(ranks):
            log.step(step, data_wait=0.0, metrics=lambda: {})
            if log.time_to_stop(step, collective(rank, step)):
                stopped[rank] = step
        if step == 30:
            flag.touch()
        if stopped:
            break
    assert stopped[0] == stopped[1] > 30, stopped
    assert len(given) < stopped[0] / 3, sorted(given)  # (about every 1 s of 0.01-s steps)
    report = json.loads((tmp_path / "run" / "reports" / "7.json").read_text())
    assert report["ended"] == "time limit" and report["steps"]["last"] >= 30, report
    monkeypatch.setenv("LUMI_SCAFFOLD_JOB_KIND", "profile")
    assert not ranks[0].time_to_stop(stopped[0] + 100, lambda values: pytest.fail("a profile job agrees on nothing"))
