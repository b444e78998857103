"""The progress watchdog of the training and profiling jobs: a job whose ranks stopped
making progress (a collective that never returns, a rank that hangs) ends itself instead of
holding its nodes until the time limit. Standard library only; run by the image's Python.

A rank makes progress when it writes a heartbeat (the examples write their step into the
file LUMI_SCAFFOLD_HEARTBEAT, which scripts/run.sh names DIR/rank<R>@<node>, every step)
or when the job's output grows.

  python scripts/watchdog.py watch --dir DIR --timeout S --startup S --notify PID [--output FILE...]
      polls while process PID (the batch shell) lives. Before the first heartbeat the
      limit is --startup (container start, RCCL init, first batch), then --timeout: when
      nothing made progress for that long it prints one line naming the last rank and
      node that made progress and the rank furthest behind, writes DIR/stalled (key=value
      lines: node=, rank=, step=), sends SIGUSR2 to PID and exits 3.
  python scripts/watchdog.py dump --dir DIR
      on one node: the stack of every rank process of this job there (found by
      LUMI_SCAFFOLD_HEARTBEAT in its environment): with py-spy where the image has it,
      else SIGUSR2, on which the examples print their stacks (faulthandler).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import NamedTuple

from rccl_net import alive  # scripts/rccl_net.py, beside this file

BEAT = re.compile(r"rank(\d+)@(.+)")
DUMP_SIGNAL = signal.SIGUSR2


class Beat(NamedTuple):
    rank: int
    node: str
    step: int
    time: float


class Stall(NamedTuple):
    idle: float
    limit: float
    last: Beat | None
    behind: Beat | None


def beats(directory: str) -> list[Beat]:
    """Every rank's newest heartbeat in ``directory``."""
    found = []
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for name in names:
        match = BEAT.fullmatch(name)
        if not match:
            continue
        path = os.path.join(directory, name)
        try:
            mtime = os.stat(path).st_mtime
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read().strip()
        except OSError:
            continue
        found.append(Beat(int(match.group(1)), match.group(2), int(text) if text.isdigit() else -1, mtime))
    return found


def newest_output(paths: list[str]) -> float:
    times = [0.0]
    for path in paths:
        try:
            times.append(os.stat(path).st_mtime)
        except OSError:
            pass
    return max(times)


def stalled(now: float, started: float, found: list[Beat], output: float, timeout: float,
            startup: float) -> Stall | None:
    """A Stall when nothing made progress within the limit that applies now, else None."""
    if found:
        last = max(found, key=lambda b: b.time)
        limit, since = timeout, max(last.time, output)
        behind = min(found, key=lambda b: (b.step, b.time))
    else:
        last = behind = None
        limit, since = startup, max(started, output)
    idle = now - since
    return Stall(idle, limit, last, behind) if idle > limit else None


def describe(stall: Stall, now: float) -> str:
    if stall.last is None:
        return (f"watchdog: no rank made progress within the startup allowance ({stall.limit:g} s, "
                "STARTUP_TIMEOUT): no heartbeat yet and no output for "
                f"{stall.idle:.0f} s. Stopping the step.")
    last, behind = stall.last, stall.behind
    assert behind is not None
    text = (f"watchdog: no progress for {stall.idle:.0f} s (PROGRESS_TIMEOUT={stall.limit:g}); "
            f"last progress: rank {last.rank} on {last.node} (step {last.step}, {now - last.time:.0f} s ago)")
    if behind != last:
        text += f"; furthest behind: rank {behind.rank} on {behind.node} (step {behind.step})"
    return text + ". Stopping the step."


def watch(args: argparse.Namespace) -> int:
    started = time.time()
    while alive(args.notify):
        now = time.time()
        stall = stalled(now, started, beats(args.dir), newest_output(args.output), args.timeout, args.startup)
        if stall:
            print(describe(stall, now), file=sys.stderr, flush=True)
            where = stall.behind or stall.last
            with open(os.path.join(args.dir, "stalled"), "w", encoding="utf-8") as handle:
                if where:
                    handle.write(f"node={where.node}\nrank={where.rank}\nstep={where.step}\n")
            os.kill(args.notify, signal.SIGUSR2)
            return 3
        time.sleep(args.interval)
    return 0


def ranks_here(directory: str) -> list[tuple[int, str]]:
    """(pid, heartbeat file name) of the processes whose LUMI_SCAFFOLD_HEARTBEAT is in
    ``directory``: the job's ranks (dump keeps those whose name ends in @this node)."""
    prefix = b"LUMI_SCAFFOLD_HEARTBEAT=" + os.path.abspath(directory).encode() + b"/"
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                variables = handle.read().split(b"\0")
        except OSError:
            continue
        for variable in variables:
            if variable.startswith(prefix):
                found.append((int(entry), os.path.basename(variable[len(prefix):].decode(errors="replace"))))
    return topmost_python(sorted(found))


def topmost_python(found: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The rank processes themselves: the Python processes among ``found`` whose parent is
    not one of them (not their data-loader workers; not a profiler wrapping a rank)."""
    def parent(pid: int) -> int:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                return int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return 0

    def is_python(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
                return handle.read().startswith("python")
        except OSError:
            return False

    pythons = {pid for pid, _ in found if is_python(pid)}
    return [(pid, name) for pid, name in found if pid in pythons and parent(pid) not in pythons]


def dump(args: argparse.Namespace) -> int:
    node = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
    pyspy = shutil.which("py-spy")
    found = [(pid, name) for pid, name in ranks_here(args.dir) if name.endswith("@" + node)]
    if not found:
        print(f"watchdog: no rank process on {node}", flush=True)
    for pid, name in found:
        if pyspy:
            print(f"watchdog: stacks of {name} (pid {pid}), py-spy dump:", flush=True)
            subprocess.run([pyspy, "dump", "--pid", str(pid)], check=False, timeout=60)
        else:
            print(f"watchdog: stacks of {name} (pid {pid}): SIGUSR2, the rank prints them (faulthandler)",
                  flush=True)
            try:
                os.kill(pid, DUMP_SIGNAL)
            except ProcessLookupError:
                pass
    if found and not pyspy:
        time.sleep(args.settle)  # the ranks write their stacks
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="watchdog.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    command = sub.add_parser("watch")
    command.add_argument("--dir", required=True, help="the heartbeat directory")
    command.add_argument("--timeout", type=float, required=True, help="seconds without progress (PROGRESS_TIMEOUT)")
    command.add_argument("--startup", type=float, required=True, help="seconds before the first heartbeat")
    command.add_argument("--notify", type=int, required=True, help="the process to send SIGUSR2 (the batch shell)")
    command.add_argument("--output", nargs="*", default=[], help="the job's output files (their growth is progress)")
    command.add_argument("--interval", type=float, default=5.0, help="seconds between looks")
    command = sub.add_parser("dump")
    command.add_argument("--dir", required=True, help="the heartbeat directory")
    command.add_argument("--settle", type=float, default=3.0, help="seconds for the ranks to print their stacks")
    args = parser.parse_args(argv)
    return watch(args) if args.command == "watch" else dump(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
