"""Sweeps of demo: submit one as a Slurm job array, and summarise its trials.

    python3 scripts/sweep.py submit sweeps/example.txt [--throttle N] [train.py arguments]
    python3 scripts/sweep.py summary sweeps/example.txt

A sweep file has one trial per line: train.py's arguments, separated by spaces (no quotes;
lines that are empty or start with # are skipped). `submit` checks the file, says what the
sweep costs at the time limit, and runs sbatch --array=1-<trials>%<throttle>
jobs/sweep.sbatch; each trial trains in its own run directory, <file name>-<trial>
(example-001, ...). `summary` reads the job reports the trials wrote there
(reports/<job id>.json) and prints one row per trial; it needs no tracker and no Slurm.
Runs with the login node's own python3 (standard library only).
"""

import argparse
import getpass
import json
import os
import re
import subprocess
import sys

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What one trial of jobs/sweep.sbatch is billed at its time limit, by the site's rule.
TRIAL_COST = (4.0, "01:00:00")
UNIT = "GPU-hours"
REFUSED = ""  # (small-g takes job arrays)
OUTPUT_ROOT = "/scratch/project_465000000/${USER}/demo/outputs"  # scripts/job-env.sh's default
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def fail(message):
    sys.exit("sweep: " + message)


def trials(path):
    """The trials of a sweep file: each a list of train.py arguments."""
    try:
        with open(path) as handle:
            lines = [line.strip() for line in handle]
    except OSError as exc:
        fail("cannot read the sweep file {} ({}): give one like sweeps/example.txt".format(path, exc.strerror))
    found = [line.split() for line in lines if line and not line.startswith("#")]
    if not found:
        fail("{} has no trials: one line of train.py arguments per trial".format(path))
    return found


def sweep_name(path):
    name = os.path.basename(path)
    name = name[:-4] if name.endswith(".txt") else name
    if not NAME.match(name):
        fail("{!r} is not a plain name (it names the trials' run directories): rename the file to letters, "
             "digits, . _ -".format(name))
    return name


def submit(args, extra):
    if REFUSED:
        fail(REFUSED + ". Fix: sweep on another partition (lumi-scaffold update -d partition=<name>)")
    found = trials(args.file)
    name = sweep_name(args.file)
    if args.throttle < 1:
        fail("--throttle {} must be 1 or more (trials running at once)".format(args.throttle))
    path = os.path.relpath(os.path.abspath(args.file), PROJECT_DIR)
    if path.startswith(".."):
        fail("{} is outside the project: keep sweep files in sweeps/".format(args.file))
    line = "sweep {}: {} trial(s), at most {} at once".format(name, len(found), args.throttle)
    if TRIAL_COST:
        at_limit, hours = TRIAL_COST
        line += "; each up to {}: {:g} {} per trial at the time limit, {:g} in all".format(
            hours, at_limit, UNIT, round(at_limit * len(found), 4))
    print(line)
    command = ["sbatch", "--parsable", "--array=1-{}%{}".format(len(found), args.throttle),
               "--job-name=demo-sweep-" + name, "jobs/sweep.sbatch", path] + extra
    result = subprocess.run(command, cwd=PROJECT_DIR, stdout=subprocess.PIPE, universal_newlines=True)
    if result.returncode:
        sys.exit(result.returncode)
    print("job array {}: logs/demo-sweep-{}-<job id>.out; python3 scripts/sweep.py summary {}".format(
        result.stdout.strip(), name, args.file))


def reports(run_dir):
    folder = os.path.join(run_dir, "reports")
    out = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        try:
            with open(os.path.join(folder, name)) as handle:
                out.append(json.load(handle))
        except (OSError, ValueError):
            continue  # (being written)
    return sorted(out, key=lambda r: (str(r.get("written", "")), str(r.get("job", ""))))


def number(value, spec="g"):
    return "-" if value is None else format(value, spec)


def summary(args, extra):
    found = trials(args.file)
    name = sweep_name(args.file)
    os.environ.setdefault("USER", getpass.getuser())  # (as scripts/job-env.sh sets it)
    root = os.environ.get("OUTPUT_ROOT") or os.path.expandvars(OUTPUT_ROOT)
    rows = [("trial", "arguments", "final loss", "best loss", "steps", "wall time", UNIT)]
    for index, words in enumerate(found, 1):
        jobs = reports(os.path.join(root, "{}-{:03d}".format(name, index)))
        if not jobs:
            rows.append((str(index), " ".join(words), "-", "-", "not run yet", "-", "-"))
            continue
        best = [j["loss"]["best"] for j in jobs if (j.get("loss") or {}).get("best") is not None]
        billed = [j["billing"]["billed"] for j in jobs if (j.get("billing") or {}).get("billed") is not None]
        seconds = sum(float((j.get("seconds") or {}).get("job") or 0) for j in jobs)
        rows.append((str(index), " ".join(words), number((jobs[-1].get("loss") or {}).get("last"), ".4g"),
                     number(min(best) if best else None, ".4g"), str(max(int(j["steps"].get("last") or 0) for j in jobs)),
                     "{}:{:02d}:{:02d}".format(int(seconds // 3600), int(seconds % 3600 // 60), int(seconds % 60)),
                     number(round(sum(billed), 4) if billed else None)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print("sweep {} in {}:".format(name, root))
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("submit", help="submit a sweep file as a job array", allow_abbrev=False)
    p.add_argument("file")
    p.add_argument("--throttle", type=int, default=2, help="trials running at once (default: %(default)s)")
    p.set_defaults(func=submit)
    p = sub.add_parser("summary", help="one row per trial, from the job reports the trials wrote", allow_abbrev=False)
    p.add_argument("file")
    p.set_defaults(func=summary)
    args, extra = parser.parse_known_args()
    if not getattr(args, "func", None):
        parser.error("give a command: submit or summary")
    if args.command == "summary" and extra:
        parser.error("summary takes only the sweep file")
    args.func(args, extra)


if __name__ == "__main__":
    main()
