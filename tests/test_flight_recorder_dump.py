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
