"""Progress for the job's watchdog (scripts/watchdog.py), imported by train.py.

Importing it makes this process print its stacks on SIGUSR2 (faulthandler: the watchdog
sends it before it stops a stalled job), from the start, so a rank stuck before its first
step (RCCL init, the first batch) shows where too. ``Heartbeat().beat(step)`` writes the step
into the file that scripts/run.sh names in LUMI_SCAFFOLD_HEARTBEAT, at most once a second
(it is a file on the shared file system). Outside a job (no LUMI_SCAFFOLD_HEARTBEAT) it
writes nothing.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import time


if hasattr(signal, "SIGUSR2"):
    faulthandler.register(signal.SIGUSR2, all_threads=True)


class Heartbeat:
    def __init__(self) -> None:
        self.path, self.last = os.environ.get("LUMI_SCAFFOLD_HEARTBEAT"), 0.0

    def beat(self, step: int) -> None:
        now = time.monotonic()
        if self.path and now - self.last >= 1.0:
            with open(self.path, "w") as handle:
                handle.write(f"{step}\n")
            self.last = now
