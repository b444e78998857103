# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""The project's node ledger: nodes with evidence against them (a hang its ranks were named in
by the Flight Recorder or by heartbeats, a rank that died with a hardware message tied to
it: scripts/lib/fault.py), which every later job of the project excludes
until the entry expires. One line per entry in OUTPUT_ROOT/node-ledger.tsv, tab-separated:
node, expiry (seconds since the epoch), job, time, evidence. Standard library and Python
3.6's grammar (it runs with the node's own python3, and on the login node).

  python3 scripts/lib/ledger.py [list]        the entries in force (lumi-scaffold doctor runs it)
  python3 scripts/lib/ledger.py in-force      their nodes, comma-separated (scripts/lib/job.sh)
  python3 scripts/lib/ledger.py clear NODE    removes NODE's entries (after the site fixed it)
  python3 scripts/lib/ledger.py add NODE JOB EVIDENCE [--days N] [--support TEXT]
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import project_values  # noqa: E402  (scripts/lib/project_values.py: scripts/values.sh)

NAME = "node-ledger.tsv"


def path():
    """OUTPUT_ROOT/node-ledger.tsv: OUTPUT_ROOT from the environment (as the jobs have it), else
    values.sh's output_root."""
    root = os.environ.get("OUTPUT_ROOT") or str(project_values.read().get("output_root", ""))
    return os.path.join(root, NAME)


def entries(file=None):
    """[(node, until, job, when, evidence)] of every entry, expired ones included."""
    found = []
    try:
        with open(file or path(), encoding="utf-8") as handle:
            for line in handle:
                fields = line.rstrip("\n").split("\t")
                if len(fields) == 5 and fields[1].isdigit():
                    found.append((fields[0], int(fields[1]), fields[2], fields[3], fields[4]))
    except OSError:
        pass
    return found


def in_force(file=None, now=None):
    now = time.time() if now is None else now
    return [e for e in entries(file) if e[1] > now]


def _write(rows, file=None):
    target = file or path()
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    with open(target + ".tmp", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write("\t".join(str(x) for x in row) + "\n")
    os.replace(target + ".tmp", target)


def _day(seconds):
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def add(node, job, evidence, days=7, support="", file=None, now=None):
    """Records NODE (expired entries dropped) and prints a report ready to send to the site."""
    now = time.time() if now is None else now
    evidence = " ".join(evidence.split())  # (one line, no tabs)
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now))
    until = int(now + days * 86400)
    rows = [e for e in entries(file) if e[1] > now] + [(node, until, job, when, evidence)]
    _write(rows, file)
    print("ledger: {} is excluded from this project's jobs until {} ({}; `python3 scripts/lib/ledger.py clear {}` "
          "ends it). Report it to the site's support{}:".format(node, _day(until), file or path(), node,
                                                                " (" + support + ")" if support else ""))
    print("  Suspect node {}: job {} at {}. Evidence: {}".format(node, job, when, evidence))


def clear(node, file=None):
    rows = entries(file)
    kept = [e for e in rows if e[0] != node]
    if len(kept) == len(rows):
        print("ledger: no entry for {} in {}".format(node, file or path()))
        return 1
    _write(kept, file)
    print("ledger: {} cleared ({} entr{} removed)".format(node, len(rows) - len(kept),
                                                          "y" if len(rows) - len(kept) == 1 else "ies"))
    return 0


def main(argv):
    command = argv[0] if argv else "list"
    if command == "in-force":
        print(",".join(sorted({e[0] for e in in_force()})))
        return 0
    if command == "clear" and len(argv) == 2:
        return clear(argv[1])
    if command == "add" and len(argv) >= 4:
        options = dict(zip(argv[4::2], argv[5::2]))
        add(argv[1], argv[2], argv[3], int(options.get("--days", 7)), options.get("--support", ""))
        return 0
    if command == "list" and len(argv) <= 1:
        rows = in_force()
        if not rows:
            print("ledger: no node excluded ({})".format(path()))
        for node, until, job, when, evidence in rows:
            print("ledger: {} excluded until {} (job {} at {}: {})".format(node, _day(until), job, when, evidence))
        return 0
    print(__doc__.split("\n\n", 1)[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
