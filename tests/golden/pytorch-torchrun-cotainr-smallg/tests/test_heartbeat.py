"""src/<package>/heartbeat.py, the progress the examples write for the job's watchdog."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys


def test_the_examples_heartbeat_writes_the_step_and_prints_stacks_on_sigusr2(package_dir, tmp_path):
    """heartbeat.py as the examples use it: the step at most once a second, and stacks on
    SIGUSR2 from the moment it is imported (before any Heartbeat exists)."""
    shutil.copy(package_dir / "heartbeat.py", tmp_path / "heartbeat.py")
    code = """import os, signal, sys, time
from heartbeat import Heartbeat
os.kill(os.getpid(), signal.SIGUSR2)
beat = Heartbeat()
beat.beat(1); beat.beat(2)
print(open(os.environ["LUMI_SCAFFOLD_HEARTBEAT"]).read().strip())
time.sleep(1.1); beat.beat(3)
print(open(os.environ["LUMI_SCAFFOLD_HEARTBEAT"]).read().strip())
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                            env={**os.environ, "LUMI_SCAFFOLD_HEARTBEAT": str(tmp_path / "rank0@nid1"),
                                 "PYTHONPATH": str(tmp_path)})
    assert result.returncode == 0 and result.stdout == "1\n3\n", result.stderr
    assert result.stderr.startswith("Current thread 0x") and 'File "<string>", line 3 in <module>' in result.stderr
    outside = subprocess.run([sys.executable, "-c", "from heartbeat import Heartbeat; Heartbeat().beat(1)"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=30,
                             env={k: v for k, v in os.environ.items() if k != "LUMI_SCAFFOLD_HEARTBEAT"})
    assert outside.returncode == 0  # and wrote nothing new
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "__pycache__") == ["heartbeat.py", "rank0@nid1"]
