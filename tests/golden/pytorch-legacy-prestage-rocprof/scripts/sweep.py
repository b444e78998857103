# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""Sweeps of this project: submit one as a Slurm job array, and summarise its trials.

    python3 scripts/sweep.py submit sweeps/example.txt [--throttle N] [arguments for every trial]
    python3 scripts/sweep.py summary sweeps/example.txt

A sweep file has one trial per line: words added to the COMMAND of jobs/train.sbatch,
separated by spaces (no quotes; lines that are empty or start with # are skipped). `submit`
checks the file, says what the sweep costs at the time limit, and runs SWEEP=<file> sbatch
--array=1-<trials>%<throttle> jobs/sweep.sbatch; each trial trains in its own run directory,
<file name>-<trial> (example-001, ...). `summary` reads the job reports the trials wrote
there (reports/<job id>.json, with scripts/lib/reports.py) and prints one row per trial; it needs no
tracker and no Slurm. The project's name, the sweep's time limit and cost and whether its
partition takes job arrays come from scripts/values.sh. Runs with the login node's own
python3 (standard library only).
"""

import argparse
import getpass
import os
import re
import subprocess
import sys

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(PROJECT_DIR, "scripts", "lib"))
import project_values  # noqa: E402  (scripts/lib/, the library)
import reports  # noqa: E402
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def fail(message):
    sys.exit("sweep: " + message)


def trials(path):
    """The trials of a sweep file: each a list of words added to the command."""
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError as exc:
        fail("cannot read the sweep file {} ({}): give one like sweeps/example.txt".format(path, exc.strerror))
    found = reports.sweep_trials(text)
    if not found:
        fail("{} has no trials: one line of arguments per trial".format(path))
    return found


def sweep_name(path):
    name = os.path.basename(path)
    name = name[:-4] if name.endswith(".txt") else name
    if not NAME.match(name):
        fail("{!r} is not a plain name (it names the trials' run directories): rename the file to letters, "
             "digits, . _ -".format(name))
    return name


def submit(args, extra, values):
    if values["sweep_refused"]:
        fail(values["sweep_refused"] + ". Fix: sweep on another partition (lumi-scaffold update -d partition=<name>)")
    found = trials(args.file)
    name = sweep_name(args.file)
    if args.throttle < 1:
        fail("--throttle {} must be 1 or more (trials running at once)".format(args.throttle))
    path = os.path.relpath(os.path.abspath(args.file), PROJECT_DIR)
    if path.startswith(".."):
        fail("{} is outside the project: keep sweep files in sweeps/".format(args.file))
    line = "sweep {}: {} trial(s), at most {} at once".format(name, len(found), args.throttle)
    if values["sweep_at_limit"]:  # (what one trial is billed at its time limit, by the site's rule)
        at_limit = float(values["sweep_at_limit"])
        line += "; each up to {}: {:g} {} per trial at the time limit, {:g} in all".format(
            values["sweep_time_limit"], at_limit, values["sweep_unit"], round(at_limit * len(found), 4))
    print(line)
    project = values["project_name"]
    command = ["sbatch", "--parsable", "--array=1-{}%{}".format(len(found), args.throttle),
               "--job-name={}-sweep-{}".format(project, name), "jobs/sweep.sbatch"] + extra
    print("SWEEP={} {}".format(path, " ".join(command)))
    result = subprocess.run(command, cwd=PROJECT_DIR, stdout=subprocess.PIPE, universal_newlines=True,
                            env=dict(os.environ, SWEEP=path))
    if result.returncode:
        sys.exit(result.returncode)
    print("job array {}: logs/{}-sweep-{}-<job id>.out; python3 scripts/sweep.py summary {}".format(
        result.stdout.strip(), project, name, args.file))


def output_root(values, file):
    """Where the trials' run directories are: $OUTPUT_ROOT, else the project's, as the jobs
    expand it (scripts/lib/job.sh)."""
    if os.environ.get("OUTPUT_ROOT"):
        return os.environ["OUTPUT_ROOT"]
    env = dict(os.environ)
    env.setdefault("USER", getpass.getuser())  # (as scripts/lib/job.sh sets it)
    missing = project_values.unset(values["output_root"], env)
    if missing:
        fail("the output root {} needs ${{{}}}, which is not set here. Fix: set it, or OUTPUT_ROOT=DIR python3 "
             "scripts/sweep.py summary {}".format(values["output_root"], missing[0], file))
    return project_values.expand(values["output_root"], env)


def summary(args, extra, values):
    found = trials(args.file)
    name = sweep_name(args.file)
    root = output_root(values, args.file)
    unit = values["sweep_unit"]
    rows = [("trial", "arguments", "final loss", "best loss", "steps", "wall time", unit)]
    for index, words in enumerate(found, 1):
        run = reports.run(os.path.join(root, "{}-{:03d}".format(name, index)))
        if not run:
            rows.append((str(index), " ".join(words), "-", "-", "not run yet", "-", "-"))
            continue
        rows.append((str(index), " ".join(words), reports.number(run["loss"]["last"], ".4g"),
                     reports.number(run["loss"]["best"], ".4g"),
                     reports.number(run["last_step"], "d", reports.NOT_REPORTED),
                     reports.duration(run["seconds"]), reports.number(run["billed"])))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print("sweep {} in {}:".format(name, root))
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def main():
    values = project_values.read(raw=True)  # (${NAME} in the output root: expanded as the summary needs it)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("this project", values["project_name"]))
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
    args.func(args, extra, values)


if __name__ == "__main__":
    main()
