# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""Which network the collective library (--collectives: NCCL, or RCCL on AMD GPUs) finally chose
between nodes, read from its init log (NCCL_DEBUG=INFO);
and the preflight's bus-bandwidth verdict. Standard library; run by the image's Python.

  python scripts/lib/collective_net.py check --fast RE --tcp RE [--final RE] --name NAME --fix TEXT LOG...
      (jobs/preflight.sbatch, on every rank's log) exit 0: the fast network; 1: TCP sockets,
      or a final choice that is neither (in any log); 3: no log shows a final choice.
  python scripts/lib/collective_net.py watch --pid PID --wait SECONDS ... LOG
      (scripts/lib/run.sh, beside rank 0 of a multi-node step) polls LOG while PID lives: TCP
      stops PID (SIGTERM), exit 1; the fast network exits 0; a final choice that is neither
      (exit 4) or none within SECONDS (exit 3) is reported and PID runs on.
  python scripts/lib/collective_net.py busbw --reference GBS --size BYTES ... TABLE
      all_reduce_perf's bus bandwidth at BYTES against a published figure, judged only where
      this run measured as the figure was measured (the same program, options, column, node
      count, image and --reference-env settings, these read from this process's environment,
      which is the benchmark's): exit 1 below it; otherwise one WARNING line with both
      figures, exit 0.

The rule, with --final (NCCL's `Using network <name>`, which NCCL and RCCL print once per communicator
once ncclNetInit has set its network: the plugin first, then IB, then sockets): each final
line decides for its communicator, by itself where it matches a pattern (`Using network
Socket`), else by the last line before it that does (`NET/OFI Selected provider is cxi`).
Nothing before a final line decides, so a job is not stopped while the library may still change its
mind; the last line of a log being written counts once it is whole. One communicator on TCP
makes the rank TCP. Without --final (site data from before lumi-scaffold 0.4) the last line
naming a network decides at once. A fast-pattern line that reports a failure never counts.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time

FAST, TCP, OTHER, NONE = "fast", "tcp", "other", "none"
FAILED = re.compile(r"fail|error|unable|could not", re.IGNORECASE)
STATUS = {FAST: 0, TCP: 1, OTHER: 1, NONE: 3}
PREFIX = re.compile(r"^.*?NCCL (INFO|WARN) ")
RANK = {TCP: 3, OTHER: 2, FAST: 1, NONE: 0}  # which communicator's (or rank's) verdict wins


def said(line: str) -> str:
    """The message of a log line, without NCCL's host:pid:tid [dev] NCCL INFO prefix."""
    line = PREFIX.sub("", line, count=1).strip()
    return line if len(line) <= 100 else line[:97] + "..."


def decide(text: str, fast: str, tcp: str, final: str | None = None) -> tuple[str, str]:
    """(FAST, TCP, OTHER or NONE, the line that decided) for one rank's log."""
    fast_re, tcp_re = re.compile(fast), re.compile(tcp)

    def named(line: str) -> str | None:
        if tcp_re.search(line):
            return TCP
        if fast_re.search(line) and not FAILED.search(line):
            return FAST
        return None

    last, found = (NONE, ""), (NONE, "")
    final_re = re.compile(final) if final else None
    for line in text.splitlines():
        kind = named(line)
        if final_re is None:
            if kind:
                found = (kind, said(line))
            continue
        if final_re.search(line):
            if kind:
                choice = (kind, said(line))
            elif last[0] != NONE:
                choice = (last[0], f"{said(line)} after {last[1]}")
            else:
                choice = (OTHER, said(line))
            if RANK[choice[0]] > RANK[found[0]]:
                found = choice
        elif kind:
            last = (kind, said(line))
    return found


def verdict(text: str, fast: str, tcp: str, final: str | None = None) -> str:
    """FAST, TCP, OTHER or NONE for one rank's log (see the module's rule)."""
    return decide(text, fast, tcp, final)[0]


def read(path: str, whole_lines: bool = False) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return ""
    return text[:text.rfind("\n") + 1] if whole_lines else text


def decisions(paths: list[str], args: argparse.Namespace, whole_lines: bool = False) -> dict[str, tuple[str, str]]:
    return {path: decide(read(path, whole_lines), args.fast, args.tcp, args.final) for path in paths}


def overall(found: dict[str, tuple[str, str]]) -> str:
    """TCP when any rank uses sockets, else OTHER when any rank chose neither, else FAST when
    any rank chose the fast network."""
    return max((value for value, _ in found.values()), key=RANK.get, default=NONE)


def message(args: argparse.Namespace, found: dict[str, tuple[str, str]], kind: str) -> str:
    """What the logs whose verdict is ``kind`` (TCP or OTHER) say, with the fix."""
    paths = [path for path, (value, _) in found.items() if value == kind]
    what = (f"{args.collectives} talks between nodes over TCP sockets, not {args.name}" if kind == TCP else
            f"{args.collectives}'s final choice of network is not {args.name}, and no line says TCP sockets either")
    return f"{what}: {len(paths)} rank(s), e.g. {paths[0]} ('{found[paths[0]][1]}'). Fix: {args.fix}."


def check(args: argparse.Namespace) -> int:
    found = decisions(args.logs, args)
    result = overall(found)
    if result in (TCP, OTHER):
        print("ERROR: " + message(args, found, result), file=sys.stderr)
    elif result == FAST:
        print(f"{args.who}: {args.collectives} uses {args.name} between nodes")
    else:
        what = "made no final choice of network" if args.final else "logged no network setup"
        print(f"{args.who}: {args.collectives} {what} in {len(args.logs)} log(s) "
              f"(e.g. {args.logs[0] if args.logs else 'none'}): {args.collectives} did not talk between nodes",
              file=sys.stderr)
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
        found = decisions(args.logs, args, whole_lines=True)
        result = overall(found)
        if result == TCP:
            print("ERROR: " + message(args, found, TCP) + f" Stopping the job; {args.collectives}_NET_CHECK=0 runs anyway.",
                  file=sys.stderr, flush=True)
            os.kill(args.pid, signal.SIGTERM)
            return 1
        if result == OTHER:
            print(f"WARNING: {args.who}: " + message(args, found, OTHER) + " The job runs on.", file=sys.stderr,
                  flush=True)
            return 4
        if result == FAST:
            print(f"{args.who}: {args.collectives} uses {args.name} between nodes ({args.logs[0]})", flush=True)
            return 0
        if time.monotonic() >= deadline:
            what = "no final choice of network" if args.final else "no network line"
            print(f"WARNING: {args.who}: {args.collectives} logged {what} within {args.wait:g} s ({args.logs[0]}): "
                  f"whether it uses {args.name} or TCP sockets is unknown; see scripts/lib/run.sh.", file=sys.stderr,
                  flush=True)
            return 3
        time.sleep(args.interval)
    return 0


COLUMNS = {"out-of-place": 7, "in-place": 11}  # busbw in all_reduce_perf's rows (size count type redop root, time algbw busbw #wrong, twice)


def busbw_at(table: str, size: int, column: str = "out-of-place") -> float | None:
    """The bus bandwidth at message ``size`` in an all_reduce_perf table (size 0: the
    largest message), from its out-of-place or in-place column."""
    rows = {}
    for line in table.splitlines():
        fields = line.split()
        if len(fields) > COLUMNS[column] and fields[0].isdigit():
            try:
                rows[int(fields[0])] = float(fields[COLUMNS[column]])
            except ValueError:
                continue
    if not rows:
        return None
    return rows.get(size or max(rows))


# all_reduce_perf's long options, as their short ones (src/common.cu of nccl-tests and of rccl-tests, its fork)
LONG = {"--minbytes": "-b", "--maxbytes": "-e", "--stepbytes": "-i", "--stepfactor": "-f", "--ngpus": "-g",
        "--nthreads": "-t", "--iters": "-n", "--warmup_iters": "-w", "--datatype": "-d", "--op": "-o",
        "--blocking": "-z", "--local_register": "-R", "--check": "-c", "--root": "-r", "--cudagraph": "-G",
        "--average": "-a", "--parallel_init": "-p"}
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def options(words: list[str]) -> dict[str, str]:
    """Option -> value as all_reduce_perf reads them (the last one given wins; sizes in bytes)."""
    found, key = {}, None
    for word in words:
        name, _, value = word.partition("=") if word.startswith("--") else (word, "", "")
        if name.startswith("-") and not name.lstrip("-").isdigit():
            key = LONG.get(name, name)
            found[key] = value
            key = None if value else key
        elif key is not None:
            found[key] = word
            key = None
    for key in ("-b", "-e", "-i"):
        value = found.get(key, "").upper()
        if value[-1:] in UNITS and value[:-1].isdigit():
            found[key] = str(int(value[:-1]) * UNITS[value[-1]])
    return found


def busbw(args: argparse.Namespace) -> int:
    size = f"{args.size / 1048576:g} MiB" if args.size else "the largest message"
    reference = f"the reference {args.reference:g} GB/s ({args.shape}) [{args.source}]"
    how = f"{args.column} busbw of all_reduce_perf {args.reference_args}" if args.reference_args else None
    differs = []
    if args.benchmark != "all_reduce_perf":
        differs.append(f"{args.benchmark}, not all_reduce_perf")
    elif how is None:
        differs.append("the reference's options are not given")
    elif options(args.ran.split()) != options(args.reference_args.split()):
        differs.append(f"options {args.ran}")
    if args.nodes and args.job_nodes != args.nodes:
        differs.append(f"{args.job_nodes} nodes, not {args.nodes}")
    if args.image is not None:
        image = os.path.basename(args.image)
        if image != args.reference_image:
            where = f"in {args.reference_image}" if args.reference_image else "in no image it names"
            differs.append(f"{f'in the image {image}' if image else 'in no image'}, the reference {where}")
    for setting in args.reference_env:
        name, _, value = setting.partition("=")
        if os.environ.get(name) != value:
            here = f"{name}={os.environ[name]}" if name in os.environ else f"{name} unset"
            differs.append(f"{here}, the reference {name}={value}")
    table = read(args.table)
    got = busbw_at(table, args.size, args.column)
    column = args.column
    if got is None and not differs:
        differs.append(f"no {args.column} column")
    if got is None:  # (allreduce_bench.py's table has one column, as all_reduce_perf's out-of-place)
        got, column = busbw_at(table, args.size), "out-of-place"
    if got is None:
        print(f"WARNING: preflight: no verdict: the benchmark measured no {size} message, the size of {reference}",
              file=sys.stderr)
        return 0
    here = f"{got:g} GB/s {column} busbw at {size}"
    if differs:
        print(f"WARNING: preflight: no verdict: {here} beside {reference}, the {how or 'busbw'}: "
              f"this run differs ({'; '.join(differs)}).", file=sys.stderr)
        return 0
    print(f"preflight: bus bandwidth at {size} ({column}): {got:g} GB/s, {100 * got / args.reference:.0f}% of {reference}")
    least = args.reference * (1 - args.tolerance)
    if got >= least:
        print(f"preflight: PASS (at least {least:g} GB/s: {100 * args.tolerance:g} % below the reference)")
        return 0
    print(f"ERROR: preflight: FAIL: {got:g} GB/s at {size} is below {least:g} GB/s ({100 * args.tolerance:g} % below "
          f"{reference}). Compare the job's {args.collectives} logs and settings with the reference's.", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="collective_net.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("check", "watch"):
        command = sub.add_parser(name)
        command.add_argument("--fast", required=True, help="a regular expression of a fast-network line")
        command.add_argument("--tcp", required=True, help="... of a TCP-socket line")
        command.add_argument("--final", help="... of the line after which the library keeps its network")
        command.add_argument("--name", required=True, help="the fast network, for messages")
        command.add_argument("--fix", required=True, help="what to check when the library uses TCP")
        command.add_argument("--who", default="preflight" if name == "check" else "rank 0")
        command.add_argument("logs", nargs="+", metavar="LOG")
        if name == "watch":
            command.add_argument("--pid", type=int, required=True, help="the process to stop on TCP")
            command.add_argument("--wait", type=float, required=True, help="seconds to wait for a final choice")
            command.add_argument("--interval", type=float, default=2.0, help="seconds between reads")
    command = sub.add_parser("busbw")
    command.add_argument("--reference", type=float, required=True, help="GB/s expected")
    command.add_argument("--size", type=int, required=True, help="the reference's message size (0: the largest)")
    command.add_argument("--tolerance", type=float, default=0.0, help="fraction below the reference that passes")
    command.add_argument("--nodes", type=int, required=True, help="the reference's node count (0: any)")
    command.add_argument("--job-nodes", type=int, required=True, help="this job's node count")
    command.add_argument("--shape", required=True, help="what the reference measured")
    command.add_argument("--source", required=True, help="where it is published")
    command.add_argument("--column", choices=sorted(COLUMNS), default="out-of-place", help="the reference's busbw column")
    command.add_argument("--benchmark", default="all_reduce_perf", help="the program that printed the table")
    command.add_argument("--ran", default="", help="the options the benchmark ran with, as one string")
    command.add_argument("--reference-args", default="", help="the reference's options, as one string ('': no verdict)")
    command.add_argument("--image", help="this job's image (path or file name; '': none; absent: not compared)")
    command.add_argument("--reference-image", default="", help="the reference's image file name ('': none named)")
    command.add_argument("--reference-env", action="append", default=[], metavar="NAME=VALUE",
                         help="a setting the reference was measured with (again for each)")
    command.add_argument("table", help="the benchmark's output")
    for command in sub.choices.values():
        command.add_argument("--collectives", default="NCCL/RCCL",
                             help="the collective library, for messages (collectives in scripts/values.sh)")
    args = parser.parse_args(argv)
    return {"check": check, "watch": watch, "busbw": busbw}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
