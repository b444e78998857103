"""scripts/lib/fault.py against a Flight Recorder dump and a log that PyTorch itself wrote, on a
real GPU with real NCCL (tests/data/flight-recorder-h100/README.md says how they were made),
not against dumps made here in the format we expect."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

from tests.helpers import load_module

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "flight-recorder-h100"


@pytest.fixture(scope="module")
def fault():
    return load_module("real_dump_fault", REPO / "project-templates" / "project" / "scripts" / "lib" / "fault.py")


def real_dump() -> dict:
    with open(DATA / "rank-0", "rb") as file:
        return pickle.load(file)


def test_the_dump_pytorch_wrote_is_read_as_a_collective_every_rank_waits_in(fault, capsys):
    found = fault.dumps(str(DATA))
    assert list(found) == [0]
    assert fault.align(found) == [("0", 5, "nccl:all_reduce", [0], [])]
    assert fault.main(["flight", str(DATA)]) == 0
    assert capsys.readouterr().out == ("flight: process group 0: collective 5 (nccl:all_reduce): waiting: rank(s) 0; "
                                       "never entered: no rank\n")


def test_the_real_watchdog_line_ends_the_job_as_a_collective_timeout_with_no_rank_to_blame(fault, tmp_path, capsys):
    out = tmp_path / "decision"
    argv = ["end", "--status", "1", "--log", str(DATA / "job.log"), "--run-dir", str(tmp_path / "run"),
            "--job", "7", "--out", str(out), "--flight", str(DATA), "--chain", "1"]
    assert fault.main(argv) == 0
    line = capsys.readouterr().out
    assert line.startswith("fault: hang (collective timeout): no rank to blame (NCCL watchdog: ALLREDUCE #5 timed out on rank 0)")
    assert "Flight Recorder (1 dump(s)): no rank missing from a collective" in line
    decision = dict(row.split("=", 1) for row in out.read_text().splitlines())
    assert decision["exclude"] == ""  # no evidence against a node: none is excluded
    report = json.loads((tmp_path / "run" / "reports" / "7.json").read_text())
    assert report["stopped_by"]["cause"] == "collective timeout"


def test_a_rank_whose_real_dump_stops_a_collective_earlier_is_the_one_named(fault, tmp_path):
    """Rank 1's dump is rank 0's real one without its last collective: the shape a rank that
    never reached all_reduce #5 leaves (its ring buffer ends at #4, completed)."""
    shutil.copy(DATA / "rank-0", tmp_path / "rank-0")
    behind = real_dump()
    behind["entries"] = [e for e in behind["entries"] if e["collective_seq_id"] < 5]
    behind["pg_config"]["0"]["ranks"] = "[0, 1]"
    (tmp_path / "rank-1").write_bytes(pickle.dumps(behind))
    assert fault.align(fault.dumps(str(tmp_path))) == [("0", 5, "nccl:all_reduce", [0], [1])]
    assert fault.flight_evidence(str(tmp_path))[0] == [1]


PIPE = REPO / "tests" / "data" / "flight-recorder-pipe-h200"


@pytest.mark.parametrize("how", ["pipe", "timeout"])
def test_the_dumps_two_real_nccl_ranks_wrote_name_the_rank_that_never_entered_the_collective(fault, how):
    """Two NCCL ranks on an H200, rank 1 asleep before all_reduce #3: asked through their dump
    pipes by the template's watchdog.py, or dumped at NCCL's own timeout, PyTorch's dumps say
    rank 0 waits in #3 and rank 1 never entered it."""
    assert fault.align(fault.dumps(str(PIPE / how))) == [("0", 3, "nccl:all_reduce", [0], [1])]
    assert fault.flight_evidence(str(PIPE / how)) == (
        [1], "Flight Recorder: rank(s) 1 never entered collective 3 (nccl:all_reduce, process group 0) "
             "that rank(s) 0 wait in")


def test_a_stall_with_the_real_watchdog_evidence_and_dumps_names_the_rank_and_its_node(fault, tmp_path, capsys):
    """The job's end on the real path: the output-stall line, then what watchdog.py dump
    printed on the GPU machine (the pipes asked, both ranks' faulthandler stacks), then the
    dumps it had PyTorch write: the line names rank 1 by the Flight Recorder, on its node."""
    printed = (PIPE / "make_dumps.log").read_text()
    evidence = printed.split("--- watchdog dump", 1)[1].split("\n", 1)[1].split("--- files:", 1)[0]
    assert "asked rank(s) 0, 1 on gpunode through their dump pipes; 2 dump(s) written" in evidence
    log = tmp_path / "job.log"
    log.write_text("rank 0/2 node gpunode local_rank 0 gpu 0\nrank 1/2 node gpunode local_rank 0 gpu 0\n"
                   "watchdog: the job's output did not grow for 61 s (OUTPUT_TIMEOUT=60; the script never beats). "
                   "Stopping the step.\n" + evidence)
    out = tmp_path / "decision"
    assert fault.main(["end", "--status", "1", "--log", str(log), "--flight", str(PIPE / "pipe"), "--out", str(out),
                       "--chain", "1"]) == 0
    line = capsys.readouterr().out
    assert line.startswith("fault: hang (output stall): rank 1 on gpunode"), line
    assert "Flight Recorder: rank(s) 1 never entered collective 3 (nccl:all_reduce, process group 0)" in line, line
    assert "exclude=gpunode" in out.read_text()  # (the Flight Recorder speaks against the node)


def test_a_real_nccl_timeout_of_two_ranks_is_a_collective_timeout_naming_the_absent_rank(fault, tmp_path, capsys):
    """What the two ranks printed when NCCL's own 20 s timeout ran out (their logs as
    make_dumps.log holds them), with their dumps: rank 1 is named, by the Flight Recorder."""
    printed = (PIPE / "make_dumps.log").read_text().split("=== timeout", 1)[1]
    log = tmp_path / "job.log"
    log.write_text(printed.split("--- rank 0 log", 1)[1])
    assert "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE" in log.read_text()
    assert fault.main(["end", "--status", "1", "--log", str(log), "--flight", str(PIPE / "timeout"), "--chain", "1"]) == 0
    line = capsys.readouterr().out
    assert line.startswith("fault: hang (collective timeout): rank 1 (NCCL watchdog: ALLREDUCE #3 timed out on rank 0); "
                           "Flight Recorder: rank(s) 1 never entered collective 3"), line
