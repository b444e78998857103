# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""Progress for the job's watchdog (scripts/lib/watchdog.py), imported by train.py.

On import this process prints its stacks on SIGUSR2 (faulthandler: the watchdog sends it
before it stops a job) and, in a job, announces that it beats: the watchdog then judges the
job by heartbeats, not by its output. ``Heartbeat().beat(step)`` records the step;
``with heartbeat.phase("checkpoint"):`` marks a part that may be silent for longer than
PROGRESS_TIMEOUT (PHASE_TIMEOUT applies), ``heartbeat.phase("first step")`` alone lasts until
this rank's next beat.

Each rank keeps its record in node-local storage (LUMI_SCAFFOLD_HEARTBEAT_LOCAL); one rank
of the node at a time, from a background thread (so the steps before a hang get out too),
copies the node's records into the node's one shared file, at most every
LUMI_SCAFFOLD_HEARTBEAT_INTERVAL seconds and at once when a phase begins or ends. Outside a
job (no LUMI_SCAFFOLD_HEARTBEAT) it writes nothing.
"""

from __future__ import annotations

import atexit
import faulthandler
import fcntl
import os
import re
import signal
import threading
import time

from jobfiles import NODE_PREFIX, RANK_NAME, RECORD, beat_line  # scripts/lib/python/jobfiles.py

if hasattr(signal, "SIGUSR2"):
    faulthandler.register(signal.SIGUSR2, all_threads=True)

LOCAL_EVERY = 1.0  # seconds between writes of a rank's node-local record


class _Node:
    """This rank's record, and the node's file the records are copied into."""

    def __init__(self, identity: str) -> None:
        match = RANK_NAME.fullmatch(os.path.basename(identity))
        self.rank = int(match.group(1)) if match else int(os.environ.get("RANK", "0"))
        self.node = match.group(2) if match else os.uname().nodename
        self.shared = os.path.join(os.path.dirname(identity), NODE_PREFIX + self.node)
        self.local = os.environ.get("LUMI_SCAFFOLD_HEARTBEAT_LOCAL") or os.path.join(
            os.environ.get("TMPDIR", "/tmp"), f"heartbeat-{os.path.basename(os.path.dirname(identity))}")
        self.interval = max(float(os.environ.get("LUMI_SCAFFOLD_HEARTBEAT_INTERVAL", "10")), 0.5)
        self.step, self.time, self.phase, self.since = -1, time.time(), "-", 0.0
        self.recorded, self.written, self.changed = 0.0, 0.0, True
        self.lock = threading.Lock()
        self.mine = os.path.join(self.local, f"rank{self.rank}")
        self.stamp = os.path.join(self.local, "published")  # its time: when the records were last read
        os.makedirs(self.local, exist_ok=True)

    def record(self) -> None:
        """This rank's line, into node-local storage (replaced whole: the copier never reads half)."""
        self.recorded = time.time()
        with open(self.mine + ".tmp", "w", encoding="utf-8") as handle:
            handle.write(beat_line(self.rank, self.step, self.time, self.phase, self.since) + "\n")
        os.replace(self.mine + ".tmp", self.mine)
        self.written, self.changed = time.monotonic(), False

    def published(self) -> float:
        try:
            return os.stat(self.stamp).st_mtime
        except FileNotFoundError:
            return 0.0

    def publish(self, force: bool = False) -> bool:
        """Copy the node's records into its shared file, unless another rank of the node is
        doing so or did within the interval (forced: did after this rank's record)."""
        with open(os.path.join(self.local, "lock"), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | (0 if force else fcntl.LOCK_NB))
            except BlockingIOError:
                return False
            published = self.published()
            if (published > self.recorded) if force else (time.time() - published < self.interval):
                return False
            listed, lines = time.time(), []
            for name in sorted(os.listdir(self.local)):
                if name.startswith("rank") and not name.endswith(".tmp"):
                    try:
                        with open(os.path.join(self.local, name), encoding="utf-8") as handle:
                            lines.append(handle.read().strip()[:RECORD - 1].ljust(RECORD - 1) + "\n")
                    except OSError:
                        continue
            lines.sort(key=lambda line: int(line.split()[0]))
            # Rewritten in place: no rename or truncate on the shared file system (the
            # records only grow in number, and each is RECORD bytes).
            fd = os.open(self.shared, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, "".join(lines).encode(), 0)
            finally:
                os.close(fd)
            with open(self.stamp, "w"):
                pass
            os.utime(self.stamp, (listed, listed))
            return True

    def copier(self) -> None:
        while True:
            time.sleep(max(self.published() + self.interval - time.time(), 0.5))
            try:
                with self.lock:
                    if self.changed:
                        self.record()
                self.publish()
            except OSError:
                pass


_node: _Node | None = None
_copying = False


def _this_node() -> _Node | None:
    global _node
    identity = os.environ.get("LUMI_SCAFFOLD_HEARTBEAT")
    if _node is None and identity:
        try:
            _node = _Node(identity)
        except OSError:
            return None
    return _node


def _announce() -> None:
    """This rank's first record (step -1), and the node's file if no rank wrote it yet. A
    data-loader worker that imports this module again (same RANK) finds the record: no write."""
    node = _this_node()
    if node is None or os.path.exists(node.mine):
        return
    node.record()
    if not node.published():
        node.publish(force=True)


try:
    _announce()
except OSError:  # the watchdog then judges this job by its output
    pass


class Heartbeat:
    def __init__(self) -> None:
        global _copying
        self.node = _this_node()
        self._ends_at_beat = False
        if self.node and not _copying:
            _copying = True
            node = self.node
            atexit.register(lambda: node.record() if node.changed else None)  # (node-local: the last step)
            threading.Thread(target=node.copier, name="heartbeat", daemon=True).start()

    def beat(self, step: int) -> None:
        node = self.node
        if not node:
            return
        with node.lock:
            first = node.step < 0
            node.step, node.time, node.changed = step, time.time(), True
            try:  # (a heartbeat never stops the training: a write that fails is left out)
                if self._ends_at_beat:  # a phase begun without `with` ends at this beat
                    node.phase, self._ends_at_beat = "-", False
                    node.record()
                    node.publish(force=True)
                elif first or time.monotonic() - node.written >= LOCAL_EVERY:
                    node.record()
            except OSError:
                pass

    def phase(self, name: str) -> _Phase:
        return _Phase(self, re.sub(r"\s+", "-", name.strip()) or "phase")

    def _set_phase(self, name: str) -> str:
        """Enters phase ``name`` ("-": none); returns the phase it replaces."""
        node = self.node
        if not node:
            return "-"
        with node.lock:
            before = node.phase
            node.phase, node.time = name, time.time()
            node.since = node.time if name != "-" else 0.0
            try:
                node.record()
                node.publish(force=True)
            except OSError:
                pass
            return before


class _Phase:
    def __init__(self, heartbeat: Heartbeat, name: str) -> None:
        self.heartbeat = heartbeat
        heartbeat._ends_at_beat = True
        self.before = heartbeat._set_phase(name)

    def __enter__(self) -> _Phase:
        self.heartbeat._ends_at_beat = False  # `with`: it ends with the block, not at a beat
        return self

    def __exit__(self, *exc: object) -> None:
        self.heartbeat._set_phase(self.before)  # (the enclosing phase, if any)
