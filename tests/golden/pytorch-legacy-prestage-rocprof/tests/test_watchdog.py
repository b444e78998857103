"""scripts/lib/watchdog.py, the progress watchdog of the training and profiling jobs: when it
fires, what it names, and how it finds and dumps the ranks of a node."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def test_a_script_that_never_beats_is_judged_by_its_output_alone(watchdog):
    """No rank announced itself: STARTUP_TIMEOUT and PROGRESS_TIMEOUT do not apply, only
    OUTPUT_TIMEOUT (0: never stopped)."""
    limits = watchdog.Limits(progress=30, startup=40, phase=100, output=600)
    assert watchdog.stalled(now=500, started=0, found=[], output=0, limits=limits) is None
    assert watchdog.stalled(now=5000, started=0, found=[], output=4900, limits=limits) is None  # printed lately
    stall = watchdog.stalled(now=700, started=0, found=[], output=60, limits=limits)
    assert stall and stall.name == "OUTPUT_TIMEOUT" and stall.limit == 600 and stall.idle == 640
    assert watchdog.describe(stall, 700).startswith(
        "watchdog: the job's output did not grow for 640 s (OUTPUT_TIMEOUT=600; the training script never imported "
        "heartbeat.py")
    assert watchdog.stalled(now=10**6, started=0, found=[], output=0, limits=limits._replace(output=0)) is None


def test_startup_allowance_from_the_announcement_to_the_first_heartbeat(watchdog):
    announced = [watchdog.Beat(0, "nid1", -1, 10.0)]
    limits = watchdog.Limits(progress=10, startup=200, slack=3)
    assert watchdog.stalled(now=150, started=0, found=announced, output=0, limits=limits) is None
    stall = watchdog.stalled(now=250, started=0, found=announced, output=0, limits=limits)
    assert stall and stall.name == "STARTUP_TIMEOUT" and stall.idle == 240 and stall.behind is None
    # output before the first heartbeat counts as progress
    assert watchdog.stalled(now=250, started=0, found=announced, output=100, limits=limits) is None
    # a first step declared as a phase gets PHASE_TIMEOUT when that is larger
    compiling = [watchdog.Beat(0, "nid1", -1, 10.0, "first-step", 10.0)]
    assert watchdog.stalled(now=250, started=0, found=compiling, output=0, limits=limits._replace(phase=600)) is None
    assert "(STARTUP_TIMEOUT=200)" in watchdog.describe(stall, 250)


def test_after_the_first_heartbeat_only_heartbeats_count(watchdog):
    found = [watchdog.Beat(0, "nid1", 5, 100.0), watchdog.Beat(1, "nid2", 4, 98.0)]
    limits = watchdog.Limits(progress=10, startup=200, phase=60, slack=2)
    assert watchdog.stalled(now=111, started=0, found=found, output=0, limits=limits) is None  # within the slack
    stall = watchdog.stalled(now=113, started=0, found=found, output=0, limits=limits)
    assert stall and stall.limit == 10 and stall.last == found[0] and stall.behind == found[1]
    # a hung job that keeps logging is still hung
    assert watchdog.stalled(now=113, started=0, found=found, output=112, limits=limits) == stall
    line = watchdog.describe(stall, 113)
    assert line == ("watchdog: no progress for 13 s (PROGRESS_TIMEOUT=10); last progress: rank 0 on nid1 "
                    "(step 5, 13 s ago); furthest behind: rank 1 on nid2 (step 4). Stopping the step.")


def test_a_phase_gets_its_own_allowance(watchdog):
    """Rank 0 in a checkpoint, the others waiting: PHASE_TIMEOUT, not PROGRESS_TIMEOUT."""
    found = [watchdog.Beat(0, "nid1", 50, 100.0, "checkpoint", 100.0), watchdog.Beat(1, "nid2", 50, 99.0)]
    limits = watchdog.Limits(progress=10, startup=200, phase=60, slack=2)
    assert watchdog.stalled(now=150, started=0, found=found, output=0, limits=limits) is None
    stall = watchdog.stalled(now=170, started=0, found=found, output=0, limits=limits)
    assert stall and stall.name == "PHASE_TIMEOUT" and stall.limit == 60
    assert watchdog.describe(stall, 170) == (
        "watchdog: no progress for 70 s (PHASE_TIMEOUT=60); last progress: rank 0 on nid1 (step 50, 70 s ago, "
        "in checkpoint); furthest behind: rank 1 on nid2 (step 50). Stopping the step.")
    # PHASE_TIMEOUT below PROGRESS_TIMEOUT never shortens it
    assert watchdog.stalled(now=105, started=0, found=found, output=0, limits=limits._replace(phase=1)) is None


def test_heartbeat_files(watchdog, tmp_path):
    """One file per node (heartbeat.py); a line being rewritten, and any other file (0.3's
    per-rank rank<R>@<node>, which no helper of this project writes), are no heartbeat."""
    (tmp_path / "node@nid005000").write_text("0 12 1000.5 - 0.0".ljust(95) + "\n" +
                                              "1 11 999.0 checkpoint 990.0".ljust(95) + "\n" + "2 1")
    (tmp_path / "node@nid005001").write_text("3 10 1001.0 first-step 1000.0".ljust(95) + "\n")
    (tmp_path / "rank13@nid005001").write_text("11\n")
    (tmp_path / "stalled").write_text("node=x\n")
    found = sorted(watchdog.beats(str(tmp_path)))
    assert [(b.rank, b.node, b.step, b.phase) for b in found] == [
        (0, "nid005000", 12, ""), (1, "nid005000", 11, "checkpoint"), (3, "nid005001", 10, "first-step")]
    assert found[0].time == 1000.5 and found[1].since == 990.0
    assert watchdog.beats(str(tmp_path / "missing")) == []


def node_file(path, *lines):
    path.write_text("".join(line.ljust(95) + "\n" for line in lines))


def batch_shell():
    """A stand-in for the job's batch shell: prints "stalled" and ends on SIGUSR2."""
    return subprocess.Popen(["bash", "-c", "trap 'echo stalled; exit 0' USR2; while :; do sleep 0.1; done"],
                            stdout=subprocess.PIPE, text=True)


def watch(watchdog, directory, *options):
    """scripts/lib/watchdog.py watch on ``directory``, as the job starts it."""
    return subprocess.run([sys.executable, watchdog.__file__, "watch", "--dir", str(directory), *map(str, options)],
                          capture_output=True, text=True, timeout=30)


def dump(watchdog, directory):
    """scripts/lib/watchdog.py dump on node nid1, with no py-spy on PATH (faulthandler's way)."""
    path = os.environ.get("PATH", "")
    without_pyspy = os.pathsep.join(p for p in path.split(os.pathsep) if not (Path(p) / "py-spy").exists())
    return subprocess.run([sys.executable, watchdog.__file__, "dump", "--dir", str(directory), "--settle", "1"],
                          capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PATH": without_pyspy, "SLURMD_NODENAME": "nid1"})


def test_watch_signals_the_batch_shell_and_names_the_stalled_node(watchdog, tmp_path):
    """A stand-in batch shell waits for SIGUSR2; rank 1 stopped at step 4, rank 0 at 5."""
    shell = batch_shell()
    now = time.time()
    node_file(tmp_path / "node@nid005000", f"0 5 {now:.1f} - 0.0")
    node_file(tmp_path / "node@nid005001", f"1 4 {now - 3:.1f} - 0.0")
    started = time.monotonic()
    result = watch(watchdog, tmp_path, "--timeout", 2, "--startup", 30, "--notify", shell.pid, "--interval", 0.2)
    assert shell.communicate(timeout=10)[0] == "stalled\n"
    assert result.returncode == 3 and time.monotonic() - started < 10
    assert "watchdog: rank 1 on nid005001 imported heartbeat.py" in result.stderr
    assert "furthest behind: rank 1 on nid005001 (step 4)" in result.stderr
    assert (tmp_path / "stalled").read_text() == "node=nid005001\nrank=1\nstep=4\nlimit=PROGRESS_TIMEOUT\n"


def test_watch_stops_a_silent_script_at_its_output_limit(watchdog, tmp_path):
    shell = batch_shell()
    (tmp_path / "job.out").write_text("epoch 1\n")
    result = watch(watchdog, tmp_path, "--timeout", 1, "--startup", 1, "--output-timeout", 2, "--notify", shell.pid,
                   "--interval", 0.2, "--output", tmp_path / "job.out")
    assert shell.communicate(timeout=10)[0] == "stalled\n"
    assert result.returncode == 3 and "(OUTPUT_TIMEOUT=2;" in result.stderr
    assert (tmp_path / "stalled").read_text() == "limit=OUTPUT_TIMEOUT\n"


def test_watch_ends_with_the_batch_shell(watchdog, tmp_path):
    done = subprocess.Popen(["true"])
    done.wait()
    result = watch(watchdog, tmp_path, "--timeout", 1, "--startup", 1, "--notify", done.pid)
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
        result = dump(watchdog, beat_dir)
        assert result.returncode == 0
        assert result.stdout == (f"watchdog: stacks of rank3@nid1 (pid {ours.pid}): SIGUSR2, the rank prints them "
                                 "(faulthandler)\n")
    finally:
        for process in (ours, other):
            process.send_signal(signal.SIGTERM)
    assert "in stuck_in_a_collective" in ours.communicate(timeout=10)[1]
    assert "stuck_in_a_collective" not in other.communicate(timeout=10)[1]


def test_dump_sends_no_sigusr2_to_a_rank_without_a_handler(watchdog, tmp_path):
    """A script that never imported heartbeat.py has no SIGUSR2 handler: the signal would end
    it, so dump names it instead and leaves it running."""
    beat_dir = tmp_path / "heartbeat-44"
    beat_dir.mkdir()
    code = "import time\nprint('ready', flush=True)\ntime.sleep(30)"
    rank = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "LUMI_SCAFFOLD_HEARTBEAT": f"{beat_dir}/rank0@nid1"})
    try:
        assert rank.stdout.readline() == "ready\n"
        result = dump(watchdog, beat_dir)
        assert result.returncode == 0
        assert result.stdout == (f"watchdog: no stacks of rank0@nid1 (pid {rank.pid}): it has no handler for SIGUSR2 "
                                 "(importing heartbeat.py gives it one) and the image has no py-spy\n")
        assert rank.poll() is None  # still running
    finally:
        rank.kill()
        rank.wait()
