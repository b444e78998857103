#!/usr/bin/env python
"""What the progress watchdog's heartbeats cost the shared file system: file operations per
node per second, for a job of 128 nodes x 8 ranks, simulated in one process.

    python benchmarks/heartbeat_cost.py            # 128 x 8 ranks, 10 simulated minutes (~1 min)
    python benchmarks/heartbeat_cost.py --quick    # 16 x 8 ranks, 5 simulated minutes
    python benchmarks/heartbeat_cost.py --check    # exit 1 when a target is missed

Every rank runs the project's own scripts/lib/python/heartbeat.py (its _Node: the node-local
record and the copy to the node's shared file) on a simulated clock: a step every
--step seconds (a beat), the background copier's wake-ups at the times the real one
sleeps to, and a checkpoint of --checkpoint-seconds every --checkpoint-every seconds on
rank 0 (a phase, which writes the node's file at once). Files are real, under a temp
directory; every call heartbeat.py makes (open, os.open, pwrite, stat, listdir, replace,
utime ...) is counted, split into the shared heartbeat directory (Lustre on the machine)
and node-local storage (memory). The same job with the heartbeat of lumi-scaffold 0.3
(every rank rewrites its own file in the shared directory at most once a second) is
simulated beside it, so the ratio compares like with like. The write interval is the one
scripts/lib/job.sh gives: max(10 s, PROGRESS_TIMEOUT/20).

Targets (--check): at most one file per node in the shared directory; at most one write
of a node's file per interval by the copiers (the announcement at import and a phase's start
and end are written at once besides, and shown); and the shared-file-system operations, all
included, at most 1/50 of the 0.3 heartbeat's.
"""

from __future__ import annotations

import argparse
import builtins
import heapq
import importlib.util
import os
import shutil
import sys
import tempfile
import time as real_time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
HEARTBEAT = REPO / "project-templates" / "project" / "scripts" / "lib" / "python" / "heartbeat.py"

TARGETS = {
    "files per node": 1,
    "node file writes per interval": 1.0,  # (by the copiers)
    "shared ops vs 0.3": 1 / 50,
}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        raise AssertionError("the simulation never sleeps")


class Counted:
    """os and open as heartbeat.py calls them, each call counted by where its path lies."""

    def __init__(self, shared: str) -> None:
        self.shared, self.counts = shared, Counter()
        self.fds: dict[int, str] = {}
        counted = self

        class OsProxy(SimpleNamespace):
            def __getattr__(self, name):
                return getattr(os, name)

        def wrap(name, path_arg=0):
            real = getattr(os, name)

            def call(*args, **kwargs):
                path = args[path_arg] if args and isinstance(args[path_arg], (str, os.PathLike)) else None
                if path is None and args and isinstance(args[0], int):
                    path = counted.fds.get(args[0], "")
                counted.count(name, str(path or ""))
                result = real(*args, **kwargs)
                if name == "open":
                    counted.fds[result] = str(path)
                return result
            return call

        self.os = OsProxy(path=os.path, environ=os.environ, uname=os.uname,
                          **{name: wrap(name) for name in ("open", "pwrite", "close", "stat", "listdir", "replace",
                                                           "utime", "makedirs")})

    def count(self, name: str, path: str) -> None:
        where = "shared" if path.startswith(self.shared) else "local"
        self.counts[where, name] += 1

    def open(self, path, mode="r", *args, **kwargs):
        self.count("open", str(path))
        return builtins.open(path, mode, *args, **kwargs)

    def shared_ops(self) -> int:
        return sum(n for (where, _), n in self.counts.items() if where == "shared")


def load(clock: Clock, counted: Counted):
    sys.path.insert(0, str(HEARTBEAT.parent))  # (its jobfiles.py)
    spec = importlib.util.spec_from_file_location("bench_heartbeat", HEARTBEAT)
    module = importlib.util.module_from_spec(spec)
    saved = os.environ.pop("LUMI_SCAFFOLD_HEARTBEAT", None)
    try:
        spec.loader.exec_module(module)  # (no job: it announces nothing on import here)
    finally:
        if saved is not None:
            os.environ["LUMI_SCAFFOLD_HEARTBEAT"] = saved
    module.time = clock
    module.os = counted.os
    module.open = counted.open
    module.fcntl = SimpleNamespace(flock=lambda *a: None, LOCK_EX=0, LOCK_NB=0)  # one process: no contention
    return module


def simulate_new(args, work: Path) -> tuple[Counted, int, int]:
    """The ranks of this version's heartbeat.py; returns the counts, the number of shared
    files and how many times the copiers wrote a node's file (the rest: the announcement
    and the phases, written at once)."""
    shared = work / "new" / "heartbeat-1"
    shared.mkdir(parents=True)
    clock, counted = Clock(), Counted(str(shared))
    module = load(clock, counted)
    interval = max(10.0, args.progress_timeout / 20)
    os.environ["LUMI_SCAFFOLD_HEARTBEAT_INTERVAL"] = str(interval)
    ranks = []
    for node in range(args.nodes):
        os.environ["LUMI_SCAFFOLD_HEARTBEAT_LOCAL"] = str(work / "new" / f"local-{node}")
        for local in range(args.ranks):
            rank = node * args.ranks + local
            state = module._Node(f"{shared}/rank{rank}@nid{node:06d}")
            state.record()  # the announcement at import
            if not state.published():
                state.publish(force=True)
            beat = module.Heartbeat.__new__(module.Heartbeat)
            beat.node, beat._ends_at_beat = state, False
            ranks.append(beat)
    end = clock.now + args.seconds
    events: list[tuple[float, int, str]] = []
    for index, beat in enumerate(ranks):
        heapq.heappush(events, (clock.now + args.step, index, "beat"))
        heapq.heappush(events, (beat.node.published() + interval, index, "copy"))
    step, copies = Counter(), 0
    while events:
        when, index, kind = heapq.heappop(events)
        if when > end:
            break
        clock.now = when
        beat = ranks[index]
        if kind == "beat":
            step[index] += 1
            beat.beat(step[index])
            if index == 0 and args.checkpoint_every and step[index] % round(args.checkpoint_every / args.step) == 0:
                with beat.phase("checkpoint"):
                    clock.now += args.checkpoint_seconds  # (the other ranks wait in their next step)
                heapq.heappush(events, (clock.now + args.step, index, "beat"))
            else:
                heapq.heappush(events, (when + args.step, index, "beat"))
        else:  # the copier thread's loop body, at the time it wakes
            with beat.node.lock:
                if beat.node.changed:
                    beat.node.record()
            copies += beat.node.publish()
            heapq.heappush(events, (max(beat.node.published() + interval - clock.now, 0.5) + clock.now, index, "copy"))
    return counted, len(os.listdir(shared)), copies


def simulate_old(args, work: Path) -> Counted:
    """lumi-scaffold 0.3's heartbeat: each rank rewrites DIR/rank<R>@<node> at most once a second."""
    shared = work / "old" / "heartbeat-1"
    shared.mkdir(parents=True)
    clock, counted = Clock(), Counted(str(shared))
    last = [0.0] * (args.nodes * args.ranks)
    beats = int(args.seconds / args.step)
    for index in range(len(last)):
        node = index // args.ranks
        path = f"{shared}/rank{index}@nid{node:06d}"
        for step in range(1, beats + 1):
            clock.now = step * args.step
            if clock.now - last[index] >= 1.0:
                counted.count("open", path)  # open(path, "w"): create or truncate
                counted.count("write", path)
                counted.count("close", path)
                last[index] = clock.now
    return counted


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--ranks", type=int, default=8, help="ranks per node")
    parser.add_argument("--seconds", type=float, default=600, help="simulated seconds")
    parser.add_argument("--step", type=float, default=0.5, help="seconds per training step")
    parser.add_argument("--progress-timeout", type=float, default=1200, help="PROGRESS_TIMEOUT (the interval: /20)")
    parser.add_argument("--checkpoint-every", type=float, default=300, help="seconds between rank 0's checkpoints")
    parser.add_argument("--checkpoint-seconds", type=float, default=20)
    parser.add_argument("--quick", action="store_true", help="16 nodes, 5 simulated minutes")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if args.quick:
        args.nodes, args.seconds = 16, 300
    interval = max(10.0, args.progress_timeout / 20)
    work = Path(tempfile.mkdtemp(prefix="heartbeat-cost-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        started = real_time.perf_counter()
        new, files, copies = simulate_new(args, work)
        old = simulate_old(args, work)
        took = real_time.perf_counter() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per_node_s = args.nodes * args.seconds
    writes = new.counts["shared", "pwrite"]
    results = {
        "files per node": files / args.nodes,
        "node file writes per interval": copies / args.nodes / (args.seconds / interval),
        "shared ops vs 0.3": new.shared_ops() / old.shared_ops(),
    }
    print(f"{args.nodes} nodes x {args.ranks} ranks, {args.seconds:g} simulated s, a step every {args.step:g} s, "
          f"PROGRESS_TIMEOUT={args.progress_timeout:g} s (interval {interval:g} s), a {args.checkpoint_seconds:g}-s "
          f"checkpoint every {args.checkpoint_every:g} s; simulated in {took:.1f} s")
    print(f"  shared file system, this version: {new.shared_ops() / per_node_s:.4f} operations per node per second "
          f"({new.shared_ops() / args.seconds:.2f}/s for the job): "
          + ", ".join(f"{name} {n}" for (where, name), n in sorted(new.counts.items()) if where == "shared"))
    print(f"  shared file system, 0.3 heartbeat: {old.shared_ops() / per_node_s:.4f} operations per node per second "
          f"({old.shared_ops() / args.seconds:.2f}/s for the job)")
    print(f"  writes of the node files: {writes}, {copies} by the copiers, the rest at once (the announcements, "
          "a phase's start and end)")
    print(f"  node-local storage, this version: "
          f"{sum(n for (w, _), n in new.counts.items() if w == 'local') / per_node_s:.2f} operations per node per second")
    missed = []
    for name, target in TARGETS.items():
        ok = results[name] <= target
        missed += [] if ok else [name]
        print(f"  {name}: {results[name]:.4g} (target <= {target:.4g}) {'ok' if ok else 'MISSED'}")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
