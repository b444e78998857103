"""watch_progress in scripts/lib/job.sh, without Slurm: the framework's collective timeout it
exports for the examples, the heartbeat files' interval, and its checks of the limits."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lumi_scaffold.jobs import WATCHDOG_RULE

from .helpers import need_module

JOB_SH = Path(__file__).resolve().parent.parent / "project-templates" / "project" / "scripts" / "lib" / "job.sh"


FUNCTIONS = ("time_limit_seconds", "default_limit", "watch_progress")


def watch_progress(tmp_path: Path, time_limit: str = "01:00:00", nodes: str = "1", **limits: str
                   ) -> subprocess.CompletedProcess:
    """Runs watch_progress alone (taken out of job.sh, with the functions it calls) in a job
    whose time limit Slurm holds as ``time_limit`` (a stand-in scontrol), with a stand-in
    container command (`true`: no watchdog process) and values.sh's rules, and prints what it
    exports."""
    rules = "\n".join(f"{name}=({' '.join(map(str, rule))})" for name, rule in WATCHDOG_RULE.items())
    functions = "\n".join(f"source <(sed -n '/^{name}() {{/,/^}}/p' '{JOB_SH}')" for name in FUNCTIONS)
    script = f"""set -u
{functions}
source <(sed -n '/^EVIDENCE_SECONDS=/,/^STOP_SECONDS=/p' '{JOB_SH}')
scontrol() {{ echo "   RunTime=00:00:01 TimeLimit={time_limit} TimeMin=N/A"; }}
PROJECT_DIR='{tmp_path}' LIB='{tmp_path}' LUMI_SCAFFOLD_LOG_DIR='{tmp_path}' SLURM_JOB_ID=7 SLURM_JOB_NUM_NODES={nodes} CONTAINER=(true) DRY_RUN=0
{rules}
watch_progress || exit $?
echo "collective=$LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT interval=$LUMI_SCAFFOLD_HEARTBEAT_INTERVAL"
"""
    env = {"PATH": "/usr/bin:/bin", **limits}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, env=env)


def limits_line(result: subprocess.CompletedProcess) -> dict[str, int]:
    """NAME -> seconds from the limits line the job prints, and "stop": what stopping takes."""
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("watchdog: for a time limit of "))
    found = {name: int(seconds) for name, seconds in re.findall(r"(\w+_TIMEOUT)=(\d+) s", line)}
    found["stop"] = int(re.search(r"then up to (\d+) s", line).group(1))
    return found


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
    assert exported(watch_progress(tmp_path)) == (216 + 12 + 60, 10)  # (1 h: 216 s the largest default)


# What a hang costs at most with the default limits, by time limit (docs/jobs.md, "What a
# hang costs"): (STARTUP, PROGRESS, PHASE, OUTPUT) on 1 node, and the worst with heartbeats.
DEFAULTS = {
    "00:10:00": (182, 60, 180, 300),
    "00:20:00": (182, 60, 180, 300),
    "01:00:00": (216, 108, 216, 720),
    "12:00:00": (1800, 1200, 2592, 7200),
    "2-00:00:00": (1800, 1200, 3600, 7200),
}


@pytest.mark.parametrize("time_limit", list(DEFAULTS))
def test_the_default_limits_are_a_share_of_the_time_limit_slurm_holds(tmp_path, time_limit):
    """A hang with heartbeats costs at most the largest limit, the heartbeat files' delay and a
    look (under 20 s), and the evidence and the stop (90 s): under 10 % of a 1-hour job and
    less of longer ones; the floors hold in short ones."""
    found = limits_line(watch_progress(tmp_path, time_limit=time_limit))
    assert tuple(found[f"{n}_TIMEOUT"] for n in ("STARTUP", "PROGRESS", "PHASE", "OUTPUT")) == DEFAULTS[time_limit]
    assert found["stop"] == 90
    worst = max(DEFAULTS[time_limit][:3]) + 20 + found["stop"]
    seconds = {"01:00:00": 3600, "12:00:00": 43200, "2-00:00:00": 172800}.get(time_limit)
    if seconds:
        assert worst / seconds <= {3600: 0.10, 43200: 0.07, 172800: 0.025}[seconds]


def test_the_limits_grow_with_nodes_and_yours_win(tmp_path):
    found = limits_line(watch_progress(tmp_path, nodes="64"))  # 180 s + 2 s per node before the first heartbeat
    assert found["STARTUP_TIMEOUT"] == 308 and found["PROGRESS_TIMEOUT"] == 108
    result = watch_progress(tmp_path, time_limit="UNLIMITED", PROGRESS_TIMEOUT="600")
    assert "watchdog: for a time limit of <none> s on 1 node(s): STARTUP_TIMEOUT=1800 s, PROGRESS_TIMEOUT=600 s " \
           "(set), PHASE_TIMEOUT=3600 s, OUTPUT_TIMEOUT=7200 s; then up to 90 s" in result.stdout


def test_the_limits_are_checked(tmp_path):
    off = watch_progress(tmp_path, PROGRESS_TIMEOUT="600", STARTUP_TIMEOUT="60", OUTPUT_TIMEOUT="0")
    assert limits_line(off)["OUTPUT_TIMEOUT"] == 0
    for name in ("OUTPUT_TIMEOUT", "PHASE_TIMEOUT"):
        bad = watch_progress(tmp_path, PROGRESS_TIMEOUT="600", STARTUP_TIMEOUT="60", **{name: "6h"})
        assert bad.returncode == 2
        assert bad.stderr == f"{name}='6h' is not a number of seconds: e.g. {name}=1800 sbatch ... (0: no limit)\n"


def test_the_pytorch_examples_timeout_reaches_process_groups_made_later(tmp_path):
    """dist.new_group() without timeout= gets the backend's default, not init's: the example's
    collective_timeout() makes the job's timeout that default (gloo, one process)."""
    need_module("torch", "the example's process group needs PyTorch (pip install torch)")
    example = Path(__file__).resolve().parent / "golden" / "pytorch-2node" / "src" / "demo"
    library = Path(__file__).resolve().parents[1] / "project-templates/project/scripts/lib/python"  # (copied as it is)
    code = f"""import sys, os, torch
sys.path[:0] = [{str(example)!r}, {str(library)!r}]
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
