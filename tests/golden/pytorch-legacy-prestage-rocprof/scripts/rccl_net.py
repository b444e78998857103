"""Which network RCCL finally chose between nodes, read from its init log (NCCL_DEBUG=INFO).

One implementation for every job: scripts/run.sh starts `watch` beside rank 0 of a
multi-node step (training, profiling, preflight), and jobs/preflight.sbatch runs `check` on
every rank's log after the benchmark. Standard library only; run by the image's Python.

  python scripts/rccl_net.py check --fast PATTERN --tcp PATTERN --name NAME --fix TEXT LOG...
      exit 0: the fast network; 1: TCP sockets (in any log); 3: no log names a network.
  python scripts/rccl_net.py watch --pid PID --wait SECONDS --fast ... --tcp ... --name ... --fix ... LOG
      polls LOG while process PID lives: TCP stops PID (SIGTERM) and exits 1; the fast
      network exits 0; no network line within SECONDS is reported (exit 3), PID runs on.
  python scripts/rccl_net.py busbw --reference GBS --size BYTES --tolerance FRACTION
         --nodes N --job-nodes N --shape TEXT --source KEY TABLE
      the preflight's verdict: the bus bandwidth of all_reduce_perf's table (or
      allreduce_bench.py's) at BYTES against a published figure; exit 1 below it.

The rule: the last line that names a network decides. RCCL tries its network plugin first
and falls back to sockets when the plugin loads but fails, so an OFI line ("NET/OFI ...
initialization failed") followed by a Socket line means TCP; a line of the fast pattern that
reports a failure never counts as the fast network.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time

FAST, TCP, NONE = "fast", "tcp", "none"
FAILED = re.compile(r"fail|error|unable|could not", re.IGNORECASE)
STATUS = {FAST: 0, TCP: 1, NONE: 3}


def verdict(text: str, fast: str, tcp: str) -> str:
    """FAST, TCP or NONE for one rank's log: the last line naming a network decides."""
    fast_re, tcp_re = re.compile(fast), re.compile(tcp)
    found = NONE
    for line in text.splitlines():
        if tcp_re.search(line):
            found = TCP
        elif fast_re.search(line) and not FAILED.search(line):
            found = FAST
    return found


def read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def verdicts(paths: list[str], fast: str, tcp: str) -> dict[str, str]:
    return {path: verdict(read(path), fast, tcp) for path in paths}


def overall(found: dict[str, str]) -> str:
    """TCP when any rank uses sockets, else FAST when any rank names the fast network."""
    values = set(found.values())
    return TCP if TCP in values else FAST if FAST in values else NONE


def tcp_message(args: argparse.Namespace, found: dict[str, str]) -> str:
    tcp = [path for path, value in found.items() if value == TCP]
    return (f"ERROR: RCCL talks between nodes over TCP sockets, not {args.name}: {len(tcp)} rank(s), e.g. {tcp[0]}. "
            f"Fix: {args.fix}.")


def check(args: argparse.Namespace) -> int:
    found = verdicts(args.logs, args.fast, args.tcp)
    result = overall(found)
    if result == TCP:
        print(tcp_message(args, found), file=sys.stderr)
    elif result == FAST:
        print(f"{args.who}: RCCL uses {args.name} between nodes")
    else:
        print(f"{args.who}: RCCL logged no network setup in {len(args.logs)} log(s) "
              f"(e.g. {args.logs[0] if args.logs else 'none'}): RCCL did not talk between nodes", file=sys.stderr)
    return STATUS[result]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def watch(args: argparse.Namespace) -> int:
    deadline = time.monotonic() + args.wait
    while alive(args.pid):
        found = verdicts(args.logs, args.fast, args.tcp)
        result = overall(found)
        if result == TCP:
            print(tcp_message(args, found) + " Stopping the job; RCCL_NET_CHECK=0 runs anyway.", file=sys.stderr,
                  flush=True)
            os.kill(args.pid, signal.SIGTERM)
            return 1
        if result == FAST:
            print(f"{args.who}: RCCL uses {args.name} between nodes ({args.logs[0]})", flush=True)
            return 0
        if time.monotonic() >= deadline:
            print(f"WARNING: {args.who}: RCCL logged no network line within {args.wait:g} s ({args.logs[0]}): "
                  f"whether it uses {args.name} or TCP sockets is unknown; see scripts/run.sh.", file=sys.stderr,
                  flush=True)
            return 3
        time.sleep(args.interval)
    return 0


def busbw_at(table: str, size: int) -> float | None:
    """The (out-of-place) bus bandwidth at message ``size`` in an all_reduce_perf table
    (size 0: the largest message)."""
    rows = {}
    for line in table.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[0].isdigit():
            try:
                rows[int(fields[0])] = float(fields[7])
            except ValueError:
                continue
    if not rows:
        return None
    return rows.get(size or max(rows))


def busbw(args: argparse.Namespace) -> int:
    size = f"{args.size / 1048576:g} MiB" if args.size else "the largest message"
    got = busbw_at(read(args.table), args.size)
    reference = f"the reference {args.reference:g} GB/s ({args.shape}) [{args.source}]"
    if got is None:
        print(f"preflight: no verdict: the benchmark measured no {size} message, the size of {reference}")
        return 0
    print(f"preflight: bus bandwidth at {size}: {got:g} GB/s, {100 * got / args.reference:.0f}% of {reference}")
    if args.nodes and args.job_nodes != args.nodes:
        print(f"preflight: no verdict: the reference was measured on {args.nodes} nodes, this job has {args.job_nodes}")
        return 0
    least = args.reference * (1 - args.tolerance)
    if got >= least:
        print(f"preflight: PASS (at least {least:g} GB/s: {100 * args.tolerance:g} % below the reference)")
        return 0
    print(f"ERROR: preflight: FAIL: {got:g} GB/s at {size} is below {least:g} GB/s ({100 * args.tolerance:g} % below "
          f"{reference}). Compare the job's RCCL logs and settings with the reference's.", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="rccl_net.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("check", "watch"):
        command = sub.add_parser(name)
        command.add_argument("--fast", required=True, help="regular expression of a fast-network line")
        command.add_argument("--tcp", required=True, help="regular expression of a TCP-socket line")
        command.add_argument("--name", required=True, help="the fast network, for messages")
        command.add_argument("--fix", required=True, help="what to check when RCCL uses TCP")
        command.add_argument("--who", default="preflight" if name == "check" else "rank 0")
        command.add_argument("logs", nargs="+", metavar="LOG")
        if name == "watch":
            command.add_argument("--pid", type=int, required=True, help="the process to stop on TCP")
            command.add_argument("--wait", type=float, required=True, help="seconds to wait for a network line")
            command.add_argument("--interval", type=float, default=2.0, help="seconds between reads")
    command = sub.add_parser("busbw")
    command.add_argument("--reference", type=float, required=True, help="GB/s expected")
    command.add_argument("--size", type=int, required=True, help="the message size of the reference (0: the largest)")
    command.add_argument("--tolerance", type=float, default=0.0, help="fraction below the reference that passes")
    command.add_argument("--nodes", type=int, required=True, help="the node count of the reference (0: any)")
    command.add_argument("--job-nodes", type=int, required=True, help="the node count of this job")
    command.add_argument("--shape", required=True, help="what the reference measured")
    command.add_argument("--source", required=True, help="where it is published")
    command.add_argument("table", help="the benchmark's output")
    args = parser.parse_args(argv)
    return {"check": check, "watch": watch, "busbw": busbw}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
