# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""The files a job's helpers share, each format and rule written once: the heartbeat records
(heartbeat.py writes them, watchdog.py and fault.py read them), the job report (runlog.py
writes it, fault.py completes it, reports.py reads it), the GPU-hours billed and the energy
the nodes used (from nodes.sh's records). Standard library and Python 3.6's grammar: fault.py,
reports.py and this file's command run with the node's own python3:

  python3 scripts/lib/python/jobfiles.py energy --run-dir DIR --job ID --records DIR
          --counters PATH --nodes N
      puts the energy of the job's nodes (nodes.sh's records in --records) into the job
      report where there is one, and prints one line.
"""

import collections
import json
import os
import re
import time

# scripts/lib/run.sh names every rank DIR/rank<R>@<node> (LUMI_SCAFFOLD_HEARTBEAT; the
# watchdog's dump finds the ranks by it). heartbeat.py writes one file per node, DIR/node@<node>:
# a line per rank, "RANK STEP TIME PHASE SINCE" (STEP -1: announced, no beat yet; PHASE -: none).
RANK_NAME = re.compile(r"rank(\d+)@(.+)")
NODE_PREFIX = "node@"
RECORD = 96  # bytes per line of a node's file: fixed, so a rewrite in place leaves no old bytes
Beat = collections.namedtuple("Beat", "rank node step time phase since")  # phase "": none
Beat.__new__.__defaults__ = ("", 0.0)


def beat_line(rank, step, when, phase, since):
    return "{} {} {:.1f} {} {:.1f}".format(rank, step, when, (phase or "-")[:24], since)


def heartbeats(directory):
    """{rank: Beat}: each rank's newest record in the node files of ``directory``."""
    found = {}
    try:
        names = sorted(os.listdir(directory)) if directory else []
    except OSError:
        names = []
    for name in (n for n in names if n.startswith(NODE_PREFIX)):
        try:
            with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:
            continue
        for line in lines:
            f = line.split()
            try:
                beat = Beat(int(f[0]), name[len(NODE_PREFIX):], int(f[1]), float(f[2]), "" if f[3] == "-" else f[3],
                            float(f[4]))
            except (IndexError, ValueError):
                continue  # (a line being rewritten)
            if beat.rank not in found or beat.time > found[beat.rank].time:
                found[beat.rank] = beat
    return found


# ---------------------------------------------------------------- the job report

def billing(done):
    """(seconds since the job started, the report's "billing") by the site's rule: one node's
    rate (scripts/lib/job.sh's report_job exports LUMI_SCAFFOLD_BILLING_PER_NODE and _UNIT)
    times the nodes Slurm gave the job (both of the site's rule forms bill each node alike).
    ``done``: the steps the job trained (None: not reported)."""
    start = os.environ.get("LUMI_SCAFFOLD_JOB_START", "")
    seconds = max(time.time() - int(start), 0.0) if start.isdigit() else 0.0
    nodes = os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or "1"
    try:
        rate = float(os.environ.get("LUMI_SCAFFOLD_BILLING_PER_NODE", "")) * (int(nodes) if nodes.isdigit() else 1)
    except ValueError:
        return seconds, {"unit": "", "per_hour": None, "billed": None, "per_1000_steps": None}
    billed = rate * seconds / 3600
    return seconds, {"unit": os.environ.get("LUMI_SCAFFOLD_BILLING_UNIT", ""), "per_hour": rate,
                     "billed": round(billed, 4), "per_1000_steps": round(billed * 1000 / done, 4) if done else None}


def new_report(job, run_dir, by, steps):
    """What every report says of its job. ``by``: who wrote it, "runlog" (the training
    script's RunLog) or "job" (the job alone: the script reported no steps)."""
    return {"job": job, "by": by, "kind": os.environ.get("LUMI_SCAFFOLD_JOB_KIND", "train"),
            "run": os.environ.get("RUN_NAME") or os.path.basename(os.path.abspath(run_dir)),
            "sweep": os.environ.get("LUMI_SCAFFOLD_SWEEP", ""), "nodes": os.environ.get("SLURM_JOB_NODELIST", ""),
            "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "steps": steps}


def report_path(run_dir, job):
    return os.path.join(str(run_dir), "reports", "{}.json".format(job))


def write_report(run_dir, report):
    path = report_path(run_dir, report["job"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as handle:
        json.dump(report, handle, indent=1)
    os.replace(path + ".tmp", path)  # never a half-written report
    return path


def read_report(path):
    """A job report; None for a file that is none (or not yet: being written). Steps the
    script did not report are None, also in a report 0.4 wrote (by the job alone: no
    "by", no samples_per_s, steps done 0)."""
    try:
        with open(str(path)) as handle:
            report = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(report, dict) or not isinstance(report.get("steps"), dict):
        return None
    report.setdefault("by", "runlog" if "samples_per_s" in report else "job")
    if report["by"] == "job":
        report["steps"].update(first=None, done=None)
    return report


def complete_report(run_dir, job, status, cause, ended, stopped_by, last_step):
    """After the step: the script's report (runlog's figures stay) or the job's own (steps
    not reported; the last one a heartbeat names), with the job's wall time, billing, exit
    and stopped_by. ``ended`` replaces a script's running or stopped."""
    report = read_report(report_path(run_dir, job)) or dict(
        new_report(job, run_dir, "job", {"first": None, "last": last_step, "done": None}), loss={"last": None, "best": None})
    if report.get("ended") in (None, "running", "stopped"):
        report["ended"] = ended
    seconds, report["billing"] = billing(report["steps"].get("done"))
    report["seconds"] = dict(report.get("seconds") or {}, job=round(seconds, 1))
    report.update(written=time.strftime("%Y-%m-%dT%H:%M:%S%z"), exit={"status": status, "cause": cause},
                  stopped_by=stopped_by)
    return write_report(run_dir, report)


# ---------------------------------------------------------------- energy

# scripts/lib/nodes.sh's record of a node's counters: "time EPOCH", then one line per counter
# file as the node shows it, "NAME VALUE UNIT [TIMESTAMP us]": HPE Cray EX's pm_counters
# (e.g. "energy 123456 J 1734094386462336 us"; freshness, generation and startup: a count),
# or "error WHAT" where the directory or a file could not be read.
ENERGY_FILE = re.compile(r"(energy|(accel|cpu)\d*_energy|memory_energy)$")
NOT_MEASURED = "not measured"


def read_counters(text):
    """{name: int} of a record's text (energy files in joules), "time", and "error": the
    first problem ('' for none)."""
    found, error = {}, ""
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "error":
            error = error or " ".join(fields[1:])
            continue
        try:
            value = int(fields[1])
        except (IndexError, ValueError):
            error = error or "{}: {!r} is not a count".format(fields[0], " ".join(fields[1:]))
            continue
        if ENERGY_FILE.match(fields[0]) and fields[2:3] != ["J"]:
            error = error or "{}: {!r} is not in joules".format(fields[0], " ".join(fields[1:]))
            continue
        found[fields[0]] = value
    found["error"] = error
    return found


def node_energy(start, end):
    """(a node's figures, '') from its start and end readings (read_counters), or (None, why
    not): joules of the node's energy counter and of each part the node counts (accelerators,
    CPU, memory), and the seconds between the readings."""
    why = start["error"] or end["error"]
    if why:
        return None, why
    if "energy" not in start or "energy" not in end:
        return None, "no node energy counter (energy)"
    if start.get("startup") != end.get("startup"):
        return None, "the counters restarted during the job (startup changed)"
    if "freshness" in start and end.get("freshness", 0) <= start["freshness"]:
        return None, "the counters were not updated during the job (freshness unchanged)"
    parts = {name: end[name] - start[name] for name in sorted(start) if ENERGY_FILE.match(name) and name in end}
    if any(value < 0 for value in parts.values()):
        return None, "a counter went back during the job"
    return {"joules": parts.pop("energy"), "parts": parts, "seconds": end.get("time", 0) - start.get("time", 0)}, ""


def energy(records, counters, nodes):
    """The report's "energy": joules (every node's, summed; None: not measured), each node's
    figures, and where not measured, why ("not measured: ..."). ``counters``: the directory the
    job read ('' where the site names none); ``nodes``: the job's node count."""
    figures = {"joules": None, "counters": counters, "nodes": {}}
    if not counters:
        return dict(figures, not_measured=NOT_MEASURED + ": the site names no energy counters (energy_counters in "
                    "scripts/values.sh)")
    readings = {}
    for name in sorted(os.listdir(records)) if records and os.path.isdir(records) else []:
        node, _, when = name.rpartition(".")
        if when in ("start", "end"):
            try:
                with open(os.path.join(records, name), encoding="utf-8", errors="replace") as handle:
                    readings.setdefault(node, {})[when] = read_counters(handle.read())
            except OSError:
                continue
    problems = []
    for node, read in sorted(readings.items()):
        if "start" not in read or "end" not in read:
            found, why = None, "no reading at the job's {}".format("start" if "start" not in read else "end")
        else:
            found, why = node_energy(read["start"], read["end"])
        figures["nodes"][node] = found or {"not_measured": why}
        if why:
            problems.append("{}: {}".format(node, why))
    if len(readings) < nodes:
        problems.append("readings from {} of the job's {} node(s)".format(len(readings), nodes))
    if problems:
        return dict(figures, not_measured=NOT_MEASURED + ": " + "; ".join(problems))
    figures["joules"] = sum(n["joules"] for n in figures["nodes"].values())
    return figures


def energy_text(figures):
    """One human phrase of a report's "energy" (a report without one: not measured)."""
    if not figures or figures.get("joules") is None:
        return (figures or {}).get("not_measured") or NOT_MEASURED
    nodes = figures["nodes"]
    return "{:.3f} kWh on {} node(s) ({:,} J; {})".format(
        figures["joules"] / 3.6e6, len(nodes), figures["joules"],
        ", ".join("{} {:,} J".format(node, n["joules"]) for node, n in sorted(nodes.items())))


def add_energy(args):
    figures = energy(args.records, args.counters, args.nodes)
    path = report_path(args.run_dir, args.job)
    report = read_report(path)
    if report is not None:
        report["energy"] = figures
        write_report(args.run_dir, report)
    print("energy: job {}: {}".format(args.job, energy_text(figures)), flush=True)
    return 0


def main(argv):
    import argparse

    parser = argparse.ArgumentParser(prog="jobfiles.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    command = sub.add_parser("energy")
    for name in ("run-dir", "job", "records", "counters"):
        command.add_argument("--" + name, default="")
    command.add_argument("--nodes", type=int, default=1)
    args = parser.parse_args(argv)
    if args.command == "energy":
        return add_energy(args)
    parser.print_help()
    return 2


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
