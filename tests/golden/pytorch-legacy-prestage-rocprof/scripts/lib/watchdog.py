"""The progress watchdog of the training and profiling jobs: a job whose ranks stopped
making progress (a collective that never returns, a rank that hangs) ends itself instead of
holding its nodes until the time limit, and a healthy job is never stopped for being slow
in a phase it declared, nor for not using our helpers. Standard library only; run by the
image's Python.

How a job is judged depends on what its training script tells the watchdog:

* a script that never imports scripts/lib/python/heartbeat.py (your own train.py) is judged by
  its output alone: it is stopped when the job's output did not grow for --output-timeout
  seconds (OUTPUT_TIMEOUT; 0: never);
* once a rank imported heartbeat.py (it announces itself: our examples, and any script that
  imports it), the limit is --startup (STARTUP_TIMEOUT: container start, RCCL init, the
  first batch) until the first heartbeat, during which output counts as progress too;
* after the first heartbeat only heartbeats count (a hung job that keeps logging is still
  a hung job), with the limit --timeout (PROGRESS_TIMEOUT), or --phase-timeout
  (PHASE_TIMEOUT) where it is larger while any rank is in a phase it declared
  (``with heartbeat.phase("checkpoint"):``).

heartbeat.py writes one file per node, DIR/node@<node>: one line per rank of the node,
"RANK STEP TIME PHASE SINCE" (STEP -1: announced, no beat yet; PHASE -: none), at most every
--slack seconds. A file DIR/rank<R>@<node> holding a step (what scripts written for
lumi-scaffold 0.3 write) counts as that rank's heartbeat, its time the file's.

  python scripts/lib/watchdog.py watch --dir DIR --timeout S --startup S --phase-timeout S
                                   --output-timeout S --slack S --notify PID [--output FILE...]
      polls while process PID (the batch shell) lives. When nothing made progress within
      the limit that applies (plus --slack, the heartbeat files' delay), it prints one line
      naming that limit, the last rank and node that made progress and the rank furthest
      behind, writes DIR/stalled (key=value lines: node=, rank=, step=, limit=), sends
      SIGUSR2 to PID and exits 3.
  python scripts/lib/watchdog.py dump --dir DIR
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

from rccl_net import alive  # scripts/lib/rccl_net.py, beside this file

BEAT = re.compile(r"rank(\d+)@(.+)")  # a rank's own file (lumi-scaffold 0.3), and the ranks' names
NODE = re.compile(r"node@(.+)")
DUMP_SIGNAL = signal.SIGUSR2


class Beat(NamedTuple):
    rank: int
    node: str
    step: int  # -1: announced, no beat yet
    time: float  # its last beat, or when it entered or left a phase
    phase: str = ""  # "" outside a phase
    since: float = 0.0  # when it entered the phase


class Stall(NamedTuple):
    idle: float
    limit: float
    name: str  # the limit's name: OUTPUT_TIMEOUT, STARTUP_TIMEOUT, PROGRESS_TIMEOUT or PHASE_TIMEOUT
    last: Beat | None
    behind: Beat | None


def node_records(path: str, node: str) -> list[Beat]:
    found = []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    for line in lines:
        fields = line.split()
        try:
            rank, step, when, phase, since = int(fields[0]), int(fields[1]), float(fields[2]), fields[3], float(fields[4])
        except (IndexError, ValueError):
            continue  # (a line being rewritten)
        found.append(Beat(rank, node, step, when, "" if phase == "-" else phase, since))
    return found


def beats(directory: str) -> list[Beat]:
    """Every rank's newest record in ``directory``."""
    found: dict[int, Beat] = {}
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for name in names:
        path = os.path.join(directory, name)
        node = NODE.fullmatch(name)
        if node:
            for beat in node_records(path, node.group(1)):
                if beat.rank not in found or beat.time > found[beat.rank].time:
                    found[beat.rank] = beat
            continue
        match = BEAT.fullmatch(name)
        if not match:
            continue
        try:
            mtime = os.stat(path).st_mtime
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read().strip()
        except OSError:
            continue
        rank = int(match.group(1))
        if rank not in found or mtime > found[rank].time:
            found[rank] = Beat(rank, match.group(2), int(text) if text.isdigit() else -1, mtime)
    return list(found.values())


def newest_output(paths: list[str]) -> float:
    times = [0.0]
    for path in paths:
        try:
            times.append(os.stat(path).st_mtime)
        except OSError:
            pass
    return max(times)


class Limits(NamedTuple):
    progress: float  # PROGRESS_TIMEOUT
    startup: float  # STARTUP_TIMEOUT
    phase: float = 0.0  # PHASE_TIMEOUT
    output: float = 0.0  # OUTPUT_TIMEOUT (0: a script that never beats is never stopped)
    slack: float = 0.0  # how late the heartbeat files may be


def mode(found: list[Beat]) -> str:
    """Which limit judges the job now: output (no rank announced itself), startup (announced,
    no beat yet) or progress."""
    if not found:
        return "output"
    return "progress" if any(b.step >= 0 for b in found) else "startup"


def stalled(now: float, started: float, found: list[Beat], output: float, limits: Limits) -> Stall | None:
    """A Stall when nothing made progress within the limit that applies now, else None."""
    current = mode(found)
    if current == "output":
        if not limits.output:
            return None
        idle = now - max(started, output)
        return Stall(idle, limits.output, "OUTPUT_TIMEOUT", None, None) if idle > limits.output else None
    last = max(found, key=lambda b: b.time)
    in_phase = [b for b in found if b.phase]
    if current == "startup":
        limit, name, since = limits.startup, "STARTUP_TIMEOUT", max(started, output, last.time)
    else:  # after the first heartbeat, output is no progress
        limit, name, since = limits.progress, "PROGRESS_TIMEOUT", last.time
    if in_phase and limits.phase > limit:
        limit, name = limits.phase, "PHASE_TIMEOUT"
    idle = now - since
    if idle <= limit + limits.slack:
        return None
    beating = [b for b in found if b.step >= 0]
    behind = min(beating, key=lambda b: (b.step, b.time)) if beating else None
    return Stall(idle, limit, name, last, behind)


def describe(stall: Stall, now: float) -> str:
    if stall.name == "OUTPUT_TIMEOUT":
        return (f"watchdog: the job's output did not grow for {stall.idle:.0f} s (OUTPUT_TIMEOUT={stall.limit:g}; "
                "the training script never imported heartbeat.py, so its output is all the watchdog can judge). "
                "Stopping the step.")
    last, behind = stall.last, stall.behind
    assert last is not None
    where = f"rank {last.rank} on {last.node}" + (f" (step {last.step}, " if last.step >= 0 else " (no step yet, ")
    where += f"{now - last.time:.0f} s ago" + (f", in {last.phase}" if last.phase else "") + ")"
    if stall.name == "STARTUP_TIMEOUT" or (stall.name == "PHASE_TIMEOUT" and behind is None):
        text = (f"watchdog: no rank made its first step within the startup allowance ({stall.name}={stall.limit:g}): "
                f"no heartbeat yet and no output for {stall.idle:.0f} s; last news: {where}")
    else:
        text = f"watchdog: no progress for {stall.idle:.0f} s ({stall.name}={stall.limit:g}); last progress: {where}"
        if behind is not None and behind != last:
            text += f"; furthest behind: rank {behind.rank} on {behind.node} (step {behind.step})"
    return text + ". Stopping the step."


def watch(args: argparse.Namespace) -> int:
    started = time.time()
    limits = Limits(args.timeout, args.startup, args.phase_timeout, args.output_timeout, args.slack)
    told = False
    while alive(args.notify):
        now = time.time()
        found = beats(args.dir)
        if found and not told:
            told = True
            first = min(found, key=lambda b: b.time)
            print(f"watchdog: rank {first.rank} on {first.node} imported heartbeat.py: from now on heartbeats judge "
                  f"this job (STARTUP_TIMEOUT={args.startup:g} s before the first, PROGRESS_TIMEOUT={args.timeout:g} s "
                  f"after it, PHASE_TIMEOUT={args.phase_timeout:g} s in a phase), not OUTPUT_TIMEOUT",
                  file=sys.stderr, flush=True)
        stall = stalled(now, started, found, newest_output(args.output), limits)
        if stall:
            print(describe(stall, now), file=sys.stderr, flush=True)
            where = stall.behind or stall.last
            with open(os.path.join(args.dir, "stalled"), "w", encoding="utf-8") as handle:
                if where:
                    handle.write(f"node={where.node}\nrank={where.rank}\nstep={where.step}\n")
                handle.write(f"limit={stall.name}\n")
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


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (SigCgt in /proc/PID/status)."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def dump(args: argparse.Namespace) -> int:
    node = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
    pyspy = shutil.which("py-spy")
    found = [(pid, name) for pid, name in ranks_here(args.dir) if name.endswith("@" + node)]
    signalled = False
    if not found:
        print(f"watchdog: no rank process on {node}", flush=True)
    for pid, name in found:
        if pyspy:
            print(f"watchdog: stacks of {name} (pid {pid}), py-spy dump:", flush=True)
            subprocess.run([pyspy, "dump", "--pid", str(pid)], check=False, timeout=60)
        elif not catches(pid, DUMP_SIGNAL):
            # SIGUSR2 would end it: it has no handler for it (heartbeat.py registers faulthandler's).
            print(f"watchdog: no stacks of {name} (pid {pid}): it has no handler for SIGUSR2 (importing heartbeat.py "
                  "gives it one) and the image has no py-spy", flush=True)
        else:
            print(f"watchdog: stacks of {name} (pid {pid}): SIGUSR2, the rank prints them (faulthandler)",
                  flush=True)
            signalled = True
            try:
                os.kill(pid, DUMP_SIGNAL)
            except ProcessLookupError:
                pass
    if signalled:
        time.sleep(args.settle)  # the ranks write their stacks
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="watchdog.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    command = sub.add_parser("watch")
    command.add_argument("--dir", required=True, help="the heartbeat directory")
    command.add_argument("--timeout", type=float, required=True, help="seconds without progress (PROGRESS_TIMEOUT)")
    command.add_argument("--startup", type=float, required=True, help="seconds before the first heartbeat")
    command.add_argument("--phase-timeout", type=float, default=0.0, help="seconds in a phase (PHASE_TIMEOUT)")
    command.add_argument("--output-timeout", type=float, default=0.0,
                         help="seconds without output, for a script that never beats (OUTPUT_TIMEOUT; 0: no limit)")
    command.add_argument("--slack", type=float, default=0.0, help="how late the heartbeat files may be")
    command.add_argument("--notify", type=int, required=True, help="the process to send SIGUSR2 (the batch shell)")
    command.add_argument("--output", nargs="*", default=[], help="the job's output files (their growth is progress until the first heartbeat)")
    command.add_argument("--interval", type=float, default=5.0, help="seconds between looks")
    command = sub.add_parser("dump")
    command.add_argument("--dir", required=True, help="the heartbeat directory")
    command.add_argument("--settle", type=float, default=3.0, help="seconds for the ranks to print their stacks")
    args = parser.parse_args(argv)
    return watch(args) if args.command == "watch" else dump(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
