"""The project's node ledger (scripts/lib/ledger.py) without Slurm: an entry from a hang's
evidence, its report for the site's support, its expiry, clearing it, and doctor's list. The
jobs that obey it run in tests/test_guard_jobs.py."""

from __future__ import annotations

import subprocess
import sys
import time

from lumi_scaffold.doctor import ledger_notes

from .helpers import REPO, load_module, render

LIB = REPO / "project-templates" / "project" / "scripts" / "lib"


def test_an_entry_is_reported_expires_and_clears(tmp_path, capsys):
    ledger = load_module("ledger_under_test", LIB / "ledger.py")
    file = str(tmp_path / "node-ledger.tsv")
    now = time.time()
    ledger.add("nid005001", "77", "fault: hang (heartbeat stall): rank 9\ton nid005001\n...", days=7,
               support="https://example.org/help", file=file, now=now - 8 * 86400)  # expired by now
    ledger.add("nid005002", "78", "fault: hang (collective timeout): rank 3 on nid005002", days=7, file=file, now=now)
    out = capsys.readouterr().out
    assert "ledger: nid005001 is excluded from this project's jobs until " in out
    assert "Report it to the site's support (https://example.org/help):\n  Suspect node nid005001: job 77 at " in out
    assert "Evidence: fault: hang (heartbeat stall): rank 9 on nid005001 ..." in out  # (one line, no tab)
    assert [e[0] for e in ledger.entries(file)] == ["nid005002"]  # (an expired entry goes when one is added)
    assert [e[0] for e in ledger.in_force(file, now=now)] == ["nid005002"]
    assert ledger.in_force(file, now=now + 7 * 86400 + 1) == []
    assert ledger.clear("nid005009", file) == 1 and ledger.clear("nid005002", file) == 0
    assert ledger.entries(file) == []


def test_fault_writes_the_node_the_evidence_names_and_doctor_lists_it(tmp_path, monkeypatch):
    """fault.py end, on a heartbeat stall whose heartbeats put rank 1 behind (the node's only
    rank): the node goes into OUTPUT_ROOT/node-ledger.tsv; doctor's note names it and how to
    clear it. Evidence that names no node (every rank at one step) writes nothing."""
    project = render(REPO, tmp_path / "p")
    outputs = tmp_path / "outputs"
    log = tmp_path / "job.log"
    log.write_text("rank 0/2 node nid005000 local_rank 0 gpu 0 cpus 1\nrank 1/2 node nid005001 local_rank 0 gpu 0 cpus 1\n"
                   "watchdog: no progress for 70 s (PROGRESS_TIMEOUT=60); last progress: rank 0 on nid005000 (step 5, "
                   "70 s ago); furthest behind: rank 1 on nid005001 (step 4). Stopping the step.\n")
    env = {"PATH": "/usr/bin:/bin", "OUTPUT_ROOT": str(outputs)}
    done = subprocess.run([sys.executable, str(project / "scripts/lib/fault.py"), "end", "--status", "1", "--log", str(log),
                           "--job", "41", "--run-dir", str(outputs / "demo"), "--ledger-days", "7", "--support", "here"],
                          capture_output=True, text=True, env=env, check=True)
    assert "fault: hang (heartbeat stall): rank 1 on nid005001 after step 4" in done.stdout, done.stdout
    assert "ledger: nid005001 is excluded from this project's jobs until" in done.stdout, done.stdout
    assert (outputs / "node-ledger.tsv").read_text().startswith("nid005001\t")
    monkeypatch.setenv("OUTPUT_ROOT", str(outputs))
    notes = ledger_notes(project)
    assert len(notes) == 1 and notes[0].startswith("nid005001 excluded until ") and notes[0].endswith(
        "(clear: python3 scripts/lib/ledger.py clear nid005001)"), notes


def test_a_rank_that_died_with_a_hardware_message_puts_its_node_in_the_ledger(tmp_path):
    """fault.py end, run as the job runs it, on a rank killed by its GPU's uncorrectable ECC error
    (CUDA's text, with torch.distributed's rank prefix): its node goes into the ledger, with the
    message as the evidence, and the decision excludes it; a Python traceback in its place
    writes nothing."""
    outputs = tmp_path / "outputs"
    ranks = "rank 0/2 node nid005000 local_rank 0 gpu 0 cpus 1\nrank 1/2 node nid005001 local_rank 0 gpu 0 cpus 1\n"
    env = {"PATH": "/usr/bin:/bin", "OUTPUT_ROOT": str(outputs)}
    for death, blamed in (("[rank1]: RuntimeError: CUDA error: uncorrectable ECC error encountered", True),
                          ("[rank1]: ValueError: the batch has 3 dimensions", False)):
        log = tmp_path / "job.log"
        log.write_text(ranks + death + "\nsrun: error: nid005001: task 1: Exited with exit code 1\n")
        done = subprocess.run([sys.executable, str(LIB / "fault.py"), "end", "--status", "1", "--log", str(log), "--chain", "2",
                               "--job", "42", "--run-dir", str(outputs / "demo"), "--out", str(tmp_path / "decision"),
                               "--ledger-days", "7"], capture_output=True, text=True, env=env, check=True)
        decision = (tmp_path / "decision").read_text()
        assert done.stdout.startswith("fault: rank died: rank 1 on nid005001 (Exited with exit code 1)"), done.stdout
        if blamed:
            assert "hardware message of rank 1 (on nid005001): " + death in done.stdout, done.stdout
            assert "decision=resume-elsewhere\nexclude=nid005001\n" in decision, decision
            row = (outputs / "node-ledger.tsv").read_text().split("\t")
            assert row[0] == "nid005001" and row[2] == "42" and death in row[4], row
        else:
            assert "decision=stop\nexclude=\n" in decision and "hardware" not in done.stdout, done.stdout
            assert len((outputs / "node-ledger.tsv").read_text().splitlines()) == 1  # (the first death's entry alone)
