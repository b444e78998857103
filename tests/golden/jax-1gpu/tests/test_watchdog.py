"""scripts/watchdog.py, the progress watchdog of the training and profiling jobs: when it
fires, what it names, and how it finds and dumps the ranks of a node."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def test_startup_allowance_until_the_first_heartbeat(watchdog):
    assert watchdog.stalled(now=150, started=0, found=[], output=0, timeout=10, startup=200) is None
    stall = watchdog.stalled(now=250, started=0, found=[], output=0, timeout=10, startup=200)
    assert stall and stall.limit == 200 and stall.idle == 250 and stall.last is None
    # output during the startup counts as progress
    assert watchdog.stalled(now=250, started=0, found=[], output=100, timeout=10, startup=200) is None


def test_after_the_first_heartbeat_the_progress_timeout_applies(watchdog):
    found = [watchdog.Beat(0, "nid1", 5, 100.0), watchdog.Beat(1, "nid2", 4, 98.0)]
    assert watchdog.stalled(now=109, started=0, found=found, output=0, timeout=10, startup=200) is None
    stall = watchdog.stalled(now=111, started=0, found=found, output=0, timeout=10, startup=200)
    assert stall and stall.limit == 10 and stall.last == found[0] and stall.behind == found[1]
    assert watchdog.stalled(now=111, started=0, found=found, output=105, timeout=10, startup=200) is None
    line = watchdog.describe(stall, 111)
    assert line == ("watchdog: no progress for 11 s (PROGRESS_TIMEOUT=10); last progress: rank 0 on nid1 "
                    "(step 5, 11 s ago); furthest behind: rank 1 on nid2 (step 4). Stopping the step.")


def test_heartbeat_files(watchdog, tmp_path):
    (tmp_path / "rank0@nid005000").write_text("12\n")
    (tmp_path / "rank13@nid005001").write_text("11\n")
    (tmp_path / "stalled").write_text("node=x\n")
    found = sorted(watchdog.beats(str(tmp_path)))
    assert [(b.rank, b.node, b.step) for b in found] == [(0, "nid005000", 12), (13, "nid005001", 11)]
    assert watchdog.beats(str(tmp_path / "missing")) == []


def test_watch_signals_the_batch_shell_and_names_the_stalled_node(watchdog, tmp_path):
    """A stand-in batch shell waits for SIGUSR2; rank 1 stopped at step 4, rank 0 at 5."""
    shell = subprocess.Popen(["bash", "-c", "trap 'echo stalled; exit 0' USR2; while :; do sleep 0.1; done"],
                             stdout=subprocess.PIPE, text=True)
    (tmp_path / "rank0@nid005000").write_text("5\n")
    (tmp_path / "rank1@nid005001").write_text("4\n")
    old = time.time() - 3
    os.utime(tmp_path / "rank1@nid005001", (old, old))
    started = time.monotonic()
    result = subprocess.run([sys.executable, watchdog.__file__, "watch", "--dir", str(tmp_path), "--timeout", "2",
                             "--startup", "30", "--notify", str(shell.pid), "--interval", "0.2"],
                            capture_output=True, text=True, timeout=30)
    assert shell.communicate(timeout=10)[0] == "stalled\n"
    assert result.returncode == 3 and time.monotonic() - started < 10
    assert "furthest behind: rank 1 on nid005001 (step 4)" in result.stderr
    assert (tmp_path / "stalled").read_text() == "node=nid005001\nrank=1\nstep=4\n"


def test_watch_ends_with_the_batch_shell(watchdog, tmp_path):
    done = subprocess.Popen(["true"])
    done.wait()
    result = subprocess.run([sys.executable, watchdog.__file__, "watch", "--dir", str(tmp_path), "--timeout", "1",
                             "--startup", "1", "--notify", str(done.pid)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and not result.stderr and not (tmp_path / "stalled").exists()


# TEST STAND-IN for a rank: registers faulthandler on SIGUSR2 as the examples do, starts a
# worker process (as a data loader does: same environment, no handler), then hangs.
RANK = """import faulthandler, signal, subprocess, sys, time
faulthandler.register(signal.SIGUSR2, all_threads=True)
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
def stuck_in_a_collective():
    print("ready", flush=True)
    while True:
        time.sleep(0.1)
stuck_in_a_collective()
"""


def test_dump_prints_the_stacks_of_this_jobs_ranks_only(watchdog, tmp_path):
    beat_dir = tmp_path / "heartbeat-42"
    beat_dir.mkdir()
    env = {**os.environ, "LUMI_SCAFFOLD_HEARTBEAT": f"{beat_dir}/rank3@nid1"}
    ours = subprocess.Popen([sys.executable, "-c", RANK], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    other_env = {**os.environ, "LUMI_SCAFFOLD_HEARTBEAT": f"{tmp_path}/heartbeat-43/rank3@nid1"}
    other = subprocess.Popen([sys.executable, "-c", RANK], env=other_env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert ours.stdout.readline() == "ready\n" and other.stdout.readline() == "ready\n"
        path = os.environ.get("PATH", "")
        without_pyspy = os.pathsep.join(p for p in path.split(os.pathsep) if not (Path(p) / "py-spy").exists())
        result = subprocess.run([sys.executable, watchdog.__file__, "dump", "--dir", str(beat_dir), "--settle", "1"],
                                capture_output=True, text=True, timeout=30,
                                env={**os.environ, "PATH": without_pyspy, "SLURMD_NODENAME": "nid1"})
        assert result.returncode == 0
        assert result.stdout == (f"watchdog: stacks of rank3@nid1 (pid {ours.pid}): SIGUSR2, the rank prints them "
                                 "(faulthandler)\n")
    finally:
        for process in (ours, other):
            process.send_signal(signal.SIGTERM)
    assert "in stuck_in_a_collective" in ours.communicate(timeout=10)[1]
    assert "stuck_in_a_collective" not in other.communicate(timeout=10)[1]
