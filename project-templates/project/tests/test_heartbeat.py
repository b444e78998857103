"""scripts/lib/python/heartbeat.py, the progress the examples write for the job's watchdog: it
announces itself on import, prints stacks on SIGUSR2, keeps every rank's record node-local
and writes one file per node, at most once an interval (at once for a phase)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def copy(package_dir, tmp_path):
    for name in ("heartbeat.py", "jobfiles.py"):
        shutil.copy(package_dir / name, tmp_path / name)


def run(package_dir, tmp_path, code, rank=0, node="nid1", interval="30", **env):
    copy(package_dir, tmp_path)
    beats = tmp_path / "heartbeat-42"
    beats.mkdir(exist_ok=True)
    environment = {**os.environ, "LUMI_SCAFFOLD_HEARTBEAT": f"{beats}/rank{rank}@{node}",
                   "LUMI_SCAFFOLD_HEARTBEAT_LOCAL": str(tmp_path / f"local-{node}"),
                   "LUMI_SCAFFOLD_HEARTBEAT_INTERVAL": interval, "PYTHONPATH": str(tmp_path), **env}
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env=environment)
    assert result.returncode == 0, result.stderr
    return result, beats


def records(path):
    """(rank, step, phase) of each line of a node's file."""
    return [(int(f[0]), int(f[1]), f[3]) for f in (line.split() for line in path.read_text().splitlines())]


def test_importing_it_announces_the_rank_and_prints_stacks_on_sigusr2(package_dir, tmp_path):
    code = """import os, signal
import heartbeat
os.kill(os.getpid(), signal.SIGUSR2)
"""
    result, beats = run(package_dir, tmp_path, code, rank=3)
    assert result.stderr.startswith("Current thread 0x") and 'File "<string>", line 3 in <module>' in result.stderr
    # one file for the node, the rank announced with no step yet; nothing else in the shared directory
    assert sorted(p.name for p in beats.iterdir()) == ["node@nid1"]
    assert records(beats / "node@nid1") == [(3, -1, "-")]


def test_the_ranks_of_a_node_share_one_file_written_at_most_once_an_interval(package_dir, tmp_path):
    """Rank 0 and 1 of one node beat 30 times each; with a 30 s interval the node's file is
    written once (the announcement); a phase writes it at once, with every rank's step."""
    code = """import time
from heartbeat import Heartbeat
beat = Heartbeat()
for step in range(1, 31):
    beat.beat(step)
time.sleep(1.1); beat.beat(31)
"""
    run(package_dir, tmp_path, code, rank=1)
    _, beats = run(package_dir, tmp_path, code, rank=0)
    assert records(beats / "node@nid1") == [(1, -1, "-")]  # only the first announcement: within the interval
    code = """from heartbeat import Heartbeat
beat = Heartbeat()
beat.beat(40)
with beat.phase("checkpoint"):
    import os
    print(open(os.path.dirname(os.environ["LUMI_SCAFFOLD_HEARTBEAT"]) + "/node@nid1").read())
"""
    during, _ = run(package_dir, tmp_path, code, rank=0)
    assert [(int(f[0]), int(f[1]), f[3]) for f in (line.split() for line in during.stdout.split("\n") if line)] == \
        [(0, 40, "checkpoint"), (1, 31, "-")]
    assert records(beats / "node@nid1") == [(0, 40, "-"), (1, 31, "-")]  # the phase's end, at once
    assert sorted(p.name for p in beats.iterdir()) == ["node@nid1"]


def test_a_phase_without_with_ends_at_the_next_beat_and_the_copier_publishes_the_last_step(package_dir, tmp_path):
    """heartbeat.phase("first step") lasts until the first beat; with a 1 s interval the
    background copier writes the last steps although the rank then stops beating (a hang)."""
    code = """import os, time
from heartbeat import Heartbeat
beat = Heartbeat()
beat.phase("first step")
shared = os.path.dirname(os.environ["LUMI_SCAFFOLD_HEARTBEAT"]) + "/node@nid7"
print(open(shared).read().split()[3])
beat.beat(1)
print(open(shared).read().split()[3])
for step in range(2, 6):
    beat.beat(step)
time.sleep(2.5)  # a hang: no more beats
print(open(shared).read().split()[1])
"""
    result, beats = run(package_dir, tmp_path, code, rank=5, node="nid7", interval="1")
    assert result.stdout.split() == ["first-step", "-", "5"]


def test_a_data_loader_worker_importing_it_again_keeps_the_ranks_record(package_dir, tmp_path):
    code = """import os, subprocess, sys
from heartbeat import Heartbeat
beat = Heartbeat()
with beat.phase("eval"):
    subprocess.run([sys.executable, "-c", "import heartbeat"], check=True)
    print(open(os.environ["LUMI_SCAFFOLD_HEARTBEAT_LOCAL"] + "/rank2").read().split()[3])
"""
    result, _ = run(package_dir, tmp_path, code, rank=2)
    assert result.stdout == "eval\n"


def test_outside_a_job_it_writes_nothing(package_dir, tmp_path):
    copy(package_dir, tmp_path)
    code = "from heartbeat import Heartbeat; b = Heartbeat(); b.beat(1)\nwith b.phase('eval'): pass"
    outside = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                             env={k: v for k, v in os.environ.items() if not k.startswith("LUMI_SCAFFOLD_HEARTBEAT")})
    assert outside.returncode == 0, outside.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == ["heartbeat.py", "jobfiles.py"]


def test_a_heartbeat_that_cannot_write_never_stops_the_training(package_dir, tmp_path):
    """The job's heartbeat directory gone (or unwritable): beats and phases go on silently."""
    code = """import os, shutil
from heartbeat import Heartbeat
beat = Heartbeat()
shutil.rmtree(os.path.dirname(os.environ["LUMI_SCAFFOLD_HEARTBEAT"]))
beat.phase("first step")
beat.beat(1)
with beat.phase("checkpoint"):
    pass
print("trained")
"""
    result, _ = run(package_dir, tmp_path, code)
    assert result.stdout == "trained\n"
