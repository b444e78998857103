"""scripts/lib/python/sitecustomize.py in a real Python process: on SIGUSR2 a watched process
writes its stacks to $TMPDIR/stacks-<pid> (what the watchdog prints), and a process that ends
of itself leaves no file behind (outside a job nobody cleans /tmp)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "project-templates" / "project" / "scripts" / "lib" / "python"


def watched(tmp_path: Path, code: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SITE), "TMPDIR": str(tmp_path), "LUMI_SCAFFOLD_HEARTBEAT": "rank0@x"}
    env.pop("LUMI_SCAFFOLD_HELPER", None)
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)


def test_a_process_that_ends_leaves_no_stacks_file(tmp_path):
    process = watched(tmp_path, "import os; print(os.path.exists(os.path.join(os.environ['TMPDIR'], f'stacks-{os.getpid()}')))")
    out, _ = process.communicate(timeout=60)
    assert out.strip() == "True"  # the file was there while it ran
    assert not list(tmp_path.glob("stacks-*"))


def test_sigusr2_writes_the_stacks_of_a_running_process(tmp_path):
    # "up" is printed inside waiting_here, so the signal finds the process in it (a CI run
    # signalled a process that printed "up" before the call, between the two lines).
    process = watched(tmp_path, "import time\ndef waiting_here():\n    print('up', flush=True)\n    time.sleep(60)\n"
                                "waiting_here()\n")
    try:
        assert process.stdout.readline().strip() == "up"
        process.send_signal(signal.SIGUSR2)
        stacks = tmp_path / f"stacks-{process.pid}"
        deadline = time.monotonic() + 30
        while "waiting_here" not in stacks.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "waiting_here" in stacks.read_text()
    finally:
        process.kill()
        process.wait()
