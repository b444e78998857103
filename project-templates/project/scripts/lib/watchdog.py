# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""The progress watchdog of the training and profiling jobs: a job whose ranks stopped making
progress ends itself instead of holding its nodes until the time limit. Run by the image's
Python. A job is judged by its output alone (OUTPUT_TIMEOUT; 0: never) until a rank imports
scripts/lib/python/heartbeat.py; then by STARTUP_TIMEOUT until the first heartbeat (output
counts too), after it by heartbeats alone (PROGRESS_TIMEOUT; PHASE_TIMEOUT where larger
while any rank is in a phase it declared).

  python scripts/lib/watchdog.py watch --dir DIR --timeout S --startup S --phase-timeout S
                   --output-timeout S --slack S --notify PID [--interval S] [--output FILE...]
      looks every --interval (5) s while PID lives. When nothing made progress within the
      limit that applies (plus --slack, the heartbeat files' delay) it prints one line naming
      the limit, the last rank that made progress and the rank furthest behind, writes
      DIR/stalled (node=, rank=, step=, limit=), sends SIGUSR2 to PID and exits 3.
  python scripts/lib/watchdog.py dump --dir DIR [--settle S] [--flight-wait S]
      the evidence of this job's rank processes on this node (found by LUMI_SCAFFOLD_HEARTBEAT
      in their environment): each rank's Flight Recorder dump, asked through its dump pipe
      (TORCH_NCCL_DEBUG_INFO_PIPE_FILE<rank>.pipe, where PyTorch's NCCL/RCCL process group made
      one; up to --flight-wait (15) s for the files); each process's state (a stopped rank
      answers nothing); its stacks: py-spy where the image has it, else SIGUSR2
      (faulthandler; then --settle (3) s for them to print).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import NamedTuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from jobfiles import Beat, heartbeats  # noqa: E402  (scripts/lib/python/jobfiles.py)
from collective_net import alive  # noqa: E402  (scripts/lib/collective_net.py, beside this file)


class Stall(NamedTuple):
    idle: float
    limit: float
    name: str  # OUTPUT_TIMEOUT, STARTUP_TIMEOUT, PROGRESS_TIMEOUT or PHASE_TIMEOUT
    last: Beat | None
    behind: Beat | None


class Limits(NamedTuple):
    progress: float
    startup: float
    phase: float = 0.0
    output: float = 0.0  # 0: a script that never beats is never stopped
    slack: float = 0.0  # how late the heartbeat files may be


def beats(directory: str) -> list[Beat]:
    return list(heartbeats(directory).values())


def newest_output(paths: list[str]) -> float:
    times = [0.0]
    for path in paths:
        try:
            times.append(os.stat(path).st_mtime)
        except OSError:
            pass
    return max(times)


def stalled(now: float, started: float, found: list[Beat], output: float, limits: Limits) -> Stall | None:
    """A Stall when nothing made progress within the limit that applies now, else None."""
    if not found:  # no rank announced itself: its output judges it
        idle = now - max(started, output)
        return Stall(idle, limits.output, "OUTPUT_TIMEOUT", None, None) if limits.output and idle > limits.output else None
    last = max(found, key=lambda b: b.time)
    beating = [b for b in found if b.step >= 0]
    if not beating:
        limit, name, since = limits.startup, "STARTUP_TIMEOUT", max(started, output, last.time)
    else:
        limit, name, since = limits.progress, "PROGRESS_TIMEOUT", last.time
    if any(b.phase for b in found) and limits.phase > limit:
        limit, name = limits.phase, "PHASE_TIMEOUT"
    idle = now - since
    if idle <= limit + limits.slack:
        return None
    return Stall(idle, limit, name, last, min(beating, key=lambda b: (b.step, b.time)) if beating else None)


def describe(stall: Stall, now: float) -> str:
    if stall.name == "OUTPUT_TIMEOUT":
        return (f"watchdog: the job's output did not grow for {stall.idle:.0f} s (OUTPUT_TIMEOUT={stall.limit:g}; "
                "the training script never imported heartbeat.py, so its output is all the watchdog can judge). "
                "Stopping the step.")
    last, behind = stall.last, stall.behind
    assert last is not None
    where = f"rank {last.rank} on {last.node}" + (f" (step {last.step}, " if last.step >= 0 else " (no step yet, ")
    where += f"{now - last.time:.0f} s ago" + (f", in {last.phase}" if last.phase else "") + ")"
    if behind is None:  # (STARTUP_TIMEOUT, or PHASE_TIMEOUT before the first step)
        text = (f"watchdog: no rank made its first step within the startup allowance ({stall.name}={stall.limit:g}): "
                f"no heartbeat yet and no output for {stall.idle:.0f} s; last news: {where}")
    else:
        text = f"watchdog: no progress for {stall.idle:.0f} s ({stall.name}={stall.limit:g}); last progress: {where}"
        if behind != last:
            text += f"; furthest behind: rank {behind.rank} on {behind.node} (step {behind.step})"
    return text + ". Stopping the step."


def watch(args: argparse.Namespace) -> int:
    started, told = time.time(), False
    limits = Limits(args.timeout, args.startup, args.phase_timeout, args.output_timeout, args.slack)
    while alive(args.notify):
        now, found = time.time(), beats(args.dir)
        if found and not told:
            told, first = True, min(found, key=lambda b: b.time)
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


def read_proc_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def read_proc(pid: int | str, name: str) -> str:
    return read_proc_file(f"/proc/{pid}/{name}")


def ranks_here(directory: str) -> list[tuple[int, str]]:
    """(pid, heartbeat file name) of the rank processes whose LUMI_SCAFFOLD_HEARTBEAT is in
    ``directory``: the Python processes whose parent is not one of them (not their data
    loaders' workers, not a profiler wrapping a rank)."""
    prefix = "LUMI_SCAFFOLD_HEARTBEAT=" + os.path.abspath(directory) + "/"
    found = {}
    for pid in (int(e) for e in os.listdir("/proc") if e.isdigit() and int(e) != os.getpid()):
        for variable in read_proc(pid, "environ").split("\0"):
            if variable.startswith(prefix) and read_proc(pid, "comm").startswith("python"):
                found[pid] = os.path.basename(variable[len(prefix):])

    def parent(pid: int) -> int:
        fields = read_proc(pid, "stat").rsplit(")", 1)[-1].split()
        return int(fields[1]) if len(fields) > 1 else 0

    return [(pid, name) for pid, name in sorted(found.items()) if parent(pid) not in found]


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (SigCgt in /proc/PID/status)."""
    for line in read_proc(pid, "status").splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


# A process state (/proc/PID/stat) in which a rank can answer neither a dump nor a stack request.
FROZEN = {"T": "stopped (SIGSTOP, or a debugger holds it)", "t": "stopped by a debugger", "Z": "dead (a zombie)"}


def state(pid: int) -> str:
    fields = read_proc(pid, "stat").rsplit(")", 1)[-1].split()
    return fields[0] if fields else ""


def ask_flight_recorder(node: str, wait: float) -> None:
    """Asks every rank on this node for its Flight Recorder dump: PyTorch's NCCL/RCCL process
    group reads a byte from <TORCH_NCCL_DEBUG_INFO_PIPE_FILE><rank>.pipe and then writes its
    dump to <TORCH_FR_DUMP_TEMP_FILE><rank>. Waits up to ``wait`` s for the files to be whole."""
    prefix = os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "")
    if os.environ.get("LUMI_SCAFFOLD_FLIGHT") != "1" or not prefix:
        return
    asked = []
    for path in sorted(glob.glob(glob.escape(prefix) + "*.pipe")):
        rank = path[len(prefix):-len(".pipe")]
        try:
            pipe = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO: no process reads it any more
        except OSError:
            continue
        try:
            os.write(pipe, b"1")
            asked.append(rank)
        except OSError:
            pass
        finally:
            os.close(pipe)
    if not asked:
        print(f"watchdog: Flight Recorder: no rank on {node} has a dump pipe (PyTorch's NCCL/RCCL process group "
              "makes one; gloo, JAX and scripts without torch.distributed have none)", flush=True)
        return
    target = os.environ.get("TORCH_FR_DUMP_TEMP_FILE") or os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "")
    files, sizes, deadline = [target + rank for rank in asked], None, time.time() + wait
    while time.time() < deadline:
        time.sleep(1)
        now = [os.path.getsize(f) if os.path.exists(f) else -1 for f in files]
        if now == sizes and min(now) > 0:  # every file there, and none grew in the last second
            break
        sizes = now
    written = [rank for rank, f in zip(asked, files) if os.path.exists(f)]
    print(f"watchdog: Flight Recorder: asked rank(s) {', '.join(asked)} on {node} through their dump pipes; "
          f"{len(written)} dump(s) written", flush=True)


def dump(args: argparse.Namespace) -> int:
    node = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
    ask_flight_recorder(node, args.flight_wait)
    pyspy, signalled = shutil.which("py-spy"), []
    found = [(pid, name) for pid, name in ranks_here(args.dir) if name.endswith("@" + node)]
    if not found:
        print(f"watchdog: no rank process on {node}", flush=True)
    for pid, name in found:
        frozen = FROZEN.get(state(pid))
        if frozen:
            rank = name.split("@")[0].removeprefix("rank")
            print(f"watchdog: rank {rank} (pid {pid}) on {node} is {frozen}: it can give no stacks", flush=True)
        elif pyspy:
            print(f"watchdog: stacks of {name} (pid {pid}), py-spy dump:", flush=True)
            subprocess.run([pyspy, "dump", "--pid", str(pid)], check=False, timeout=30)
        elif not catches(pid, signal.SIGUSR2):  # the signal would end it
            print(f"watchdog: no stacks of {name} (pid {pid}): it has no handler for SIGUSR2 (importing heartbeat.py "
                  "gives it one) and the image has no py-spy", flush=True)
        else:
            print(f"watchdog: stacks of {name} (pid {pid}): SIGUSR2, the rank prints them (faulthandler)", flush=True)
            signalled.append((pid, name))
            try:
                os.kill(pid, signal.SIGUSR2)
            except ProcessLookupError:
                pass
    if signalled:
        time.sleep(args.settle)  # the ranks write their stacks
    for pid, name in signalled:  # (where scripts/lib/python/sitecustomize.py had them written to a file)
        text = read_proc_file(os.path.join(os.environ.get("TMPDIR") or "/tmp", f"stacks-{pid}"))
        if text.strip():
            print(f"watchdog: stacks of {name} (pid {pid}) follow\n{text.rstrip()}", flush=True)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="watchdog.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    command = sub.add_parser("watch")  # (its arguments: the module's docstring)
    command.add_argument("--dir", required=True)
    command.add_argument("--timeout", type=float, required=True)
    command.add_argument("--startup", type=float, required=True)
    for name, default in (("--phase-timeout", 0.0), ("--output-timeout", 0.0), ("--slack", 0.0), ("--interval", 5.0)):
        command.add_argument(name, type=float, default=default)
    command.add_argument("--notify", type=int, required=True)
    command.add_argument("--output", nargs="*", default=[])
    command = sub.add_parser("dump")
    command.add_argument("--dir", required=True)
    command.add_argument("--settle", type=float, default=3.0)
    command.add_argument("--flight-wait", type=float, default=15.0)
    args = parser.parse_args(argv)
    return watch(args) if args.command == "watch" else dump(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
