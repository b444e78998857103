"""watch_progress in scripts/lib/job.sh, without Slurm: the framework's collective timeout it
exports for the examples, the heartbeat files' interval, and its checks of the limits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

JOB_SH = Path(__file__).resolve().parent.parent / "project-templates" / "project" / "scripts" / "lib" / "job.sh"


def watch_progress(tmp_path: Path, **limits: str) -> subprocess.CompletedProcess:
    """Runs watch_progress alone (taken out of job.sh) with a stand-in container command
    (`true`: no watchdog process), values.sh's defaults, and prints what it exports."""
    script = f"""set -u
source <(sed -n '/^watch_progress() {{/,/^}}/p' '{JOB_SH}')
PROJECT_DIR='{tmp_path}' LIB='{tmp_path}' SLURM_JOB_ID=7 CONTAINER=(true) DRY_RUN=0
progress_timeout=1200 startup_timeout=1800 phase_timeout=3600 output_timeout=21600
watch_progress || exit $?
echo "collective=$LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT interval=$LUMI_SCAFFOLD_HEARTBEAT_INTERVAL"
"""
    env = {"PATH": "/usr/bin:/bin", **limits}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, env=env)


def exported(result: subprocess.CompletedProcess) -> tuple[int, int]:
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip().splitlines()[-1]
    collective, interval = (int(part.split("=")[1]) for part in line.split())
    return collective, interval


@pytest.mark.parametrize("progress,startup,phase", [
    ("1200", "1800", "3600"),  # the defaults
    ("9", "120", "60"),
    ("7200", "600", "3600"),  # a long PROGRESS_TIMEOUT: no fixed cap
    ("30", "40", "0"),
    ("0", "1800", "3600"),  # the watchdog off
])
def test_the_collective_timeout_is_above_every_allowance_of_the_watchdog(tmp_path, progress, startup, phase):
    """A rank waiting in a collective while rank 0 is in a phase (a checkpoint) must not time
    out before the watchdog would judge that phase: above the largest limit plus the
    heartbeat files' delay (the interval and 2 s), so it grows with the user's limits."""
    collective, interval = exported(watch_progress(tmp_path, PROGRESS_TIMEOUT=progress, STARTUP_TIMEOUT=startup,
                                                   PHASE_TIMEOUT=phase))
    largest = max(int(progress), int(startup), int(phase))
    assert collective >= largest + interval + 2 + 30, (collective, interval)
    p = int(progress)
    assert interval == (max(p // 3, 1) if p < 30 else max(10, p // 20))
    if (progress, startup, phase) == ("1200", "1800", "3600"):
        assert (collective, interval) == (3722, 60)


def test_the_limits_default_and_are_checked(tmp_path):
    result = watch_progress(tmp_path)  # (scripts/values.sh's defaults)
    assert exported(result) == (3722, 60)
    assert result.stdout.startswith("watchdog: until the command imports heartbeat.py it is judged by its "
                                    "output alone: stopped when the job's output does not grow for "
                                    "OUTPUT_TIMEOUT=21600 s;")
    off = watch_progress(tmp_path, PROGRESS_TIMEOUT="600", STARTUP_TIMEOUT="60", OUTPUT_TIMEOUT="0")
    assert "judged by its output alone: no limit (OUTPUT_TIMEOUT=0);" in off.stdout
    for name in ("OUTPUT_TIMEOUT", "PHASE_TIMEOUT"):
        bad = watch_progress(tmp_path, PROGRESS_TIMEOUT="600", STARTUP_TIMEOUT="60", **{name: "6h"})
        assert bad.returncode == 2
        assert bad.stderr == f"{name}='6h' is not a number of seconds: e.g. {name}=1800 sbatch ... (0: no limit)\n"


def test_the_pytorch_examples_timeout_reaches_process_groups_made_later(tmp_path):
    """dist.new_group() without timeout= gets the backend's default, not init's: the example's
    collective_timeout() makes the job's timeout that default (gloo, one process)."""
    pytest.importorskip("torch")
    example = Path(__file__).resolve().parent / "golden" / "pytorch-2node" / "src" / "demo"
    code = f"""import sys, os, torch
sys.path[:0] = [{str(example)!r}, {str(example.parents[1] / "scripts/lib/python")!r}]
import train
import torch.distributed as dist
dist.init_process_group("gloo", rank=0, world_size=1, timeout=train.collective_timeout())
group = dist.new_group([0])
for g in (dist.group.WORLD, group):
    print(int(g._get_backend(torch.device("cpu")).options._timeout.total_seconds()))
"""
    env = {**os.environ, "LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT": "4321", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": "29517"}
    env.pop("LUMI_SCAFFOLD_HEARTBEAT", None)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["4321", "4321"]
