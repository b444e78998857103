"""scripts/lib/fault.py, the one fault model of the training job: each way a job stops ends in
one `fault:` line, one stopped_by in the job report and one chain decision. Read against
real log lines from public issues (each cited where it is used) and against Flight Recorder
dumps made here in the format PyTorch writes (a pickled dict with "version", "pg_config"
and "entries"; torch/distributed/flight_recorder/components/loader.py reads the same keys).
(lumi-scaffold's own suite reads a dump that PyTorch wrote on a GPU with this file:
tests/test_flight_recorder_dump.py there.)"""

from __future__ import annotations

import importlib.util
import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

FAULT_PY = Path(__file__).resolve().parents[1] / "scripts" / "lib" / "fault.py"


@pytest.fixture(scope="module")
def fault():
    spec = importlib.util.spec_from_file_location("project_fault", FAULT_PY)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- Real log lines (as their sources print them) ----

# gloo's collective timeout, as PyTorch raises it on the rank that waited:
# Intellindust-AI-Lab/DEIMv2#65 (2025-10-22); the `[rank0]:` prefix is what torch >= 2.2
# puts before every line of a rank's traceback (the form our own CPU test prints).
GLOO_TIMEOUT = ("[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
                "Timed out waiting 1800000ms for recv operation to complete")
# NCCL's watchdog on every rank that entered the collective: XPixelGroup/BasicSR#737 (2025-06-26).
NCCL_TIMEOUT = [
    "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran "
    "for 600020 milliseconds before timing out.",
    "[rank1]:[E626 06:24:44.906457629 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank 1] Exception "
    "(either an error or timeout) detected by watchdog at work: 808, last enqueued NCCL work: 811, last completed "
    "NCCL work: 807.",
]
# An older PyTorch's form of the same line: OFA-Sys/OFA#271 (2022-10-21).
NCCL_TIMEOUT_OLD = ("[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: "
                    "WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds "
                    "before timing out.")
# scripts/lib/run.sh's line per rank, and srun's when a task ends first (Slurm's own wording).
RANKS = ["rank 0/4 node nid005000 local_rank 0 gpu 0 cpus 1-7", "rank 1/4 node nid005000 local_rank 1 gpu 1 cpus 9-15",
         "rank 2/4 node nid005001 local_rank 0 gpu 0 cpus 1-7", "rank 3/4 node nid005001 local_rank 1 gpu 1 cpus 9-15"]
SRUN_DIED = ["srun: error: nid005001: task 3: Exited with exit code 7",
             "srun: Terminating StepId=12.0",
             "srun: error: nid005000: tasks 0-1: Killed"]


def beats(tmp_path, steps):
    """A heartbeat directory as heartbeat.py writes it: node@<node>, a line per rank of the node."""
    directory = tmp_path / "heartbeat"
    directory.mkdir()
    for rank, (node, step) in steps.items():
        with open(directory / f"node@{node}", "a") as handle:
            handle.write(f"{rank} {step} 1700000000.0 - 0.0".ljust(95) + "\n")
    return directory


def end(fault, tmp_path, log, status=1, **extra):
    (tmp_path / "job.out").write_text("\n".join(log) + "\n")
    out = tmp_path / "decision"
    argv = ["end", "--status", str(status), "--log", str(tmp_path / "job.out"), "--run-dir", str(tmp_path / "run"),
            "--job", "12", "--out", str(out)]
    for key, value in extra.items():
        argv += ["--" + key.replace("_", "-"), str(value)]
    assert fault.main(argv) == 0
    decision = dict(line.split("=", 1) for line in out.read_text().splitlines())
    report = json.loads((tmp_path / "run" / "reports" / "12.json").read_text())
    return decision, report


def test_a_gloo_timeout_is_a_hang_named_by_the_rank_behind(fault, tmp_path, capsys):
    """Rank 3 (on nid005001) beat step 4, the others step 5; gloo timed out on rank 0: a hang,
    rank 3 the culprit, gloo has no Flight Recorder, and nid005001 is excluded on evidence."""
    hb = beats(tmp_path, {0: ("nid005000", 5), 1: ("nid005000", 5), 2: ("nid005001", 5), 3: ("nid005001", 4)})
    decision, report = end(fault, tmp_path, RANKS + [GLOO_TIMEOUT, "srun: error: nid005000: task 0: Exited with exit code 1"],
                           heartbeats=hb, chain=2)
    line = capsys.readouterr().out.strip()
    assert line.startswith("fault: hang (collective timeout): rank 3 on nid005001 after step 4 "), line
    assert "Flight Recorder: none (only a NCCL/RCCL process group of PyTorch has one" in line
    assert "heartbeats: rank(s) 3 at step 4, the others at step 5" in line
    assert decision == {"cause": "collective timeout", "decision": "resume-elsewhere", "exclude": "nid005001",
                        "reason": decision["reason"]}
    assert report["stopped_by"]["cause"] == "collective timeout" and report["stopped_by"]["hang"] is True
    assert (report["stopped_by"]["rank"], report["stopped_by"]["node"], report["stopped_by"]["step"]) == (3, "nid005001", 4)
    assert report["ended"] == "hang" and report["exit"] == {"status": 1, "cause": "collective timeout"}


def test_a_hang_with_every_rank_at_one_step_is_a_software_hang_resubmitted_unchanged(fault, tmp_path, capsys):
    hb = beats(tmp_path, {0: ("nid005000", 5), 1: ("nid005000", 5), 2: ("nid005001", 5), 3: ("nid005001", 5)})
    decision, _ = end(fault, tmp_path, RANKS + NCCL_TIMEOUT, heartbeats=hb, chain=3,
                      known_issues="the first collective on a second process group hangs (an issue of the image)")
    line = capsys.readouterr().out
    assert decision["decision"] == "resume" and decision["exclude"] == ""
    assert "software hang suspected" in line and "the image's known issues: the first collective on a second process group hangs" in line and "no Flight Recorder dump" in line
    assert "NCCL watchdog: ALLREDUCE #808 timed out on rank 1" in line


def test_the_older_nccl_line_is_a_collective_timeout_too(fault):
    assert fault.classify(NCCL_TIMEOUT_OLD, 1, 0)[0] == "collective timeout"


def test_a_second_hang_in_a_chain_stops_it(fault, tmp_path):
    decision, report = end(fault, tmp_path, RANKS + [GLOO_TIMEOUT], hung_before="nid005001")
    assert decision["decision"] == "stop" and "the second hang of this chain (the first: nid005001)" in decision["reason"]
    assert report["stopped_by"]["decision"] == "stop"


def test_a_rank_that_dies_is_named_by_srun_and_stops_the_chain(fault, tmp_path, capsys):
    decision, report = end(fault, tmp_path, RANKS + SRUN_DIED, status=7)
    assert capsys.readouterr().out.startswith("fault: rank died: rank 3 on nid005001 (Exited with exit code 7)")
    assert decision["decision"] == "stop" and report["stopped_by"]["rank"] == 3


# A rank that died of its GPU's uncorrectable ECC error, as PyTorch raises it (the form of
# jade-hpc-gpu/jade-hpc-gpu.github.io#194, a node its site found faulty), with the [rank3]: prefix
# torch.distributed puts before a rank's traceback lines; ROCm's runtime's line for the same event
# (ROCm/ROCR-Runtime, runtime.cpp's HwExceptionHandler), which has no rank prefix.
ECC_LINE = "[rank3]: RuntimeError: CUDA error: uncorrectable ECC error encountered"
ROCR_ECC = "HW Exception by GPU node-2 (Agent handle: 0x55d0c0a4e2b0) reason :ECC"


def test_a_hardware_message_of_the_rank_that_died_puts_its_node_in_the_ledger(fault, tmp_path, capsys, monkeypatch):
    """Rank 3 (on nid005001) died first with an uncorrectable ECC error: its node is excluded by
    the job that replaces this one and goes into the project's ledger, with the message."""
    monkeypatch.setenv("OUTPUT_ROOT", str(tmp_path / "out"))
    decision, report = end(fault, tmp_path, RANKS + [ECC_LINE] + SRUN_DIED, chain=2, ledger_days=7)
    out = capsys.readouterr().out
    line = out.splitlines()[0]
    assert line.startswith("fault: rank died: rank 3 on nid005001 (Exited with exit code 7); hardware message of rank 3 "
                           "(on nid005001): " + ECC_LINE + ". Next: resume elsewhere: a hardware fault of nid005001"), line
    assert decision == {"cause": "rank died", "decision": "resume-elsewhere", "exclude": "nid005001",
                        "reason": decision["reason"]}
    assert report["stopped_by"]["exclude"] == "nid005001" and report["stopped_by"]["hang"] is False
    rows = (tmp_path / "out" / "node-ledger.tsv").read_text().splitlines()
    assert len(rows) == 1 and rows[0].split("\t")[0] == "nid005001" and ECC_LINE in rows[0], rows
    assert "Suspect node nid005001: job 12 at " in out and "uncorrectable ECC error encountered" in out
    # the same message without a prefix is tied to the node of the rank that ended first; ROCm's line too
    for message in (ECC_LINE[len("[rank3]: "):], ROCR_ECC):
        cause, facts = fault.classify("\n".join(RANKS + [message] + SRUN_DIED), 7, 0)
        assert fault.culprit(cause, facts, "\n".join(RANKS + [message] + SRUN_DIED), {}, "") == "nid005001", message
        assert "ended first" in facts["evidence"] and message in facts["evidence"]
    # on a job of one node, any rank's message is that node's
    one = "\n".join(RANKS[:2] + [ROCR_ECC])
    cause, facts = fault.classify(one, 134, 0)
    assert fault.culprit(cause, facts, one, {}, "") == "nid005000" and "the job's only node" in facts["evidence"]
    # a second replacement in one chain stops it
    assert fault.decide("rank died", {}, "nid005001", "nid005000", "", 1, 2)[0] == "stop"


def test_a_hardware_message_tied_to_no_node_blames_none(fault, tmp_path, capsys, monkeypatch):
    """A message without a rank prefix in a log that names no rank that ended first, on two
    nodes: nothing ties it to one, and no node is blamed."""
    monkeypatch.setenv("OUTPUT_ROOT", str(tmp_path / "out"))
    decision, report = end(fault, tmp_path, RANKS + [ECC_LINE[len("[rank3]: "):]], chain=2, ledger_days=7)
    line = capsys.readouterr().out
    assert "hardware message not tied to one node (no [rankN]: prefix, and no rank named as the one that ended first; " \
           "no node blamed): RuntimeError: CUDA error: uncorrectable ECC error encountered" in line, line
    assert decision["decision"] == "stop" and decision["exclude"] == "" and report["stopped_by"]["exclude"] is None
    assert not (tmp_path / "out" / "node-ledger.tsv").exists()
    # prefixes of ranks on two nodes do not tie it either
    text = "\n".join(RANKS + ["[rank0]: RuntimeError: CUDA error: uncorrectable ECC error encountered", ECC_LINE] + SRUN_DIED)
    cause, facts = fault.classify(text, 7, 0)
    assert fault.culprit(cause, facts, text, {}, "") == "" and "ran on nid005000, nid005001" in facts["evidence"]


def test_a_software_death_blames_no_node(fault, tmp_path, capsys, monkeypatch):
    """A Python exception, a bad address (ROCm's memory access fault, "Page not present": the line
    of ROCm/legacy-rocm-build#2804), a GPU hang the runtime reports (ROCm/legacy-rocm-build#4021's line) and CUDA's illegal
    memory access: no hardware message, no node blamed, no ledger."""
    monkeypatch.setenv("OUTPUT_ROOT", str(tmp_path / "out"))
    software = ["[rank3]: Traceback (most recent call last):", "[rank3]: ValueError: shapes do not match",
                "Memory access fault by GPU node-2 (Agent handle: 0x5640a8bb1980) on address 0x7feea09c5000. "
                "Reason: Page not present or supervisor privilege.",
                "HW Exception by GPU node-9 (Agent handle: 0x631351bb5a20) reason :GPU Hang",
                "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered"]
    decision, report = end(fault, tmp_path, RANKS + software + SRUN_DIED, chain=2, ledger_days=7)
    line = capsys.readouterr().out
    assert line.startswith("fault: rank died: rank 3 on nid005001 (Exited with exit code 7). Next: stop: "), line
    assert "hardware" not in line and decision["exclude"] == "" and decision["decision"] == "stop"
    assert not (tmp_path / "out" / "node-ledger.tsv").exists()


def test_the_watchdogs_stall_line_a_network_fallback_and_the_time_limit(fault, tmp_path):
    stall = ("watchdog: no progress for 31 s (PROGRESS_TIMEOUT=30); last progress: rank 3 on nid005000 (step 5, 31 s "
             "ago); furthest behind: rank 15 on nid005001 (step 4). Stopping the step.")
    cause, facts = fault.classify(stall, 1, 0)
    assert cause == "heartbeat stall" and (facts["rank"], facts["node"], facts["step"]) == (15, "nid005001", 4)
    assert fault.classify("watchdog: no rank made progress within the startup allowance (40 s, STARTUP_TIMEOUT)", 1, 0)[0] \
        == "no heartbeat"
    net = ("ERROR: RCCL talks between nodes over TCP sockets, not the fast network: 1 rank(s), e.g. x ('NET/Socket'). Fix: y. "
           "Stopping the job; RCCL_NET_CHECK=0 runs anyway.")
    assert fault.classify(net + "\n" + SRUN_DIED[0], 143, 0)[0] == "network fallback"
    assert fault.classify("srun: error: nid005000: task 0: Terminated", 143, 1)[0] == "time limit"
    assert fault.classify("", 0, 0)[0] == "finished"
    assert fault.classify("Traceback ...\nValueError: x", 1, 0)[0] == "failed"


def test_the_report_keeps_what_the_training_script_wrote(fault, tmp_path, monkeypatch):
    """runlog.py's report (losses, step times) is completed, not replaced; wall time and
    GPU-hours are the job's."""
    monkeypatch.setenv("LUMI_SCAFFOLD_BILLING_PER_NODE", "4")
    monkeypatch.setenv("LUMI_SCAFFOLD_BILLING_UNIT", "GPU-hours")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "2")
    monkeypatch.setenv("LUMI_SCAFFOLD_JOB_START", str(int(__import__("time").time()) - 3600))
    (tmp_path / "run" / "reports").mkdir(parents=True)
    (tmp_path / "run" / "reports" / "12.json").write_text(json.dumps(
        {"job": "12", "by": "runlog", "ended": "finished", "steps": {"first": 1, "last": 50, "done": 50},
         "loss": {"last": 0.5, "best": 0.4}, "step_time_s": {"p50": 0.1}, "seconds": {"job": 10.0, "training": 9.0}}))
    decision, report = end(fault, tmp_path, RANKS, status=0)
    assert decision["decision"] == "finished" and report["stopped_by"] is None
    assert report["loss"] == {"last": 0.5, "best": 0.4} and report["step_time_s"] == {"p50": 0.1}
    assert report["ended"] == "finished" and report["seconds"]["training"] == 9.0 and report["by"] == "runlog"
    assert 3599 <= report["seconds"]["job"] <= 3700
    assert 7.99 <= report["billing"]["billed"] <= 8.3 and report["billing"]["per_1000_steps"] > 0


def flight_dump(entries, ranks="[0, 1, 2, 3]"):
    """One rank's dump as PyTorch pickles it (the keys its own reader uses)."""
    return {"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": ranks}},
            "pg_status": {}, "entries": entries}


def entry(seq, state, name="nccl:all_reduce"):
    return {"record_id": seq, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": seq,
            "p2p_seq_id": 0, "op_id": seq, "profiling_name": name, "time_created_ns": 0, "state": state,
            "is_p2p": False, "input_sizes": [[4]], "output_sizes": [[4]], "timeout_ms": 600000, "frames": []}


def test_flight_recorder_dumps_name_the_rank_that_never_entered_the_collective(fault, tmp_path, capsys):
    """Ranks 0, 1, 3 wait in all_reduce #6; rank 2's newest collective is #5: rank 2 is the
    culprit, and its node (nid005001, from run.sh's lines) is excluded on that evidence."""
    flight = tmp_path / "flight"
    flight.mkdir()
    for rank in range(4):
        done = [entry(seq, "completed") for seq in range(1, 6)]
        waiting = [] if rank == 2 else [entry(6, "started")]
        (flight / f"rank-{rank}").write_bytes(pickle.dumps(flight_dump(done + waiting)))
    assert fault.align(fault.dumps(str(flight))) == [("0", 6, "nccl:all_reduce", [0, 1, 3], [2])]
    hb = beats(tmp_path, {r: ("nid005000" if r < 2 else "nid005001", 5) for r in range(4)})
    decision, report = end(fault, tmp_path, RANKS + NCCL_TIMEOUT, heartbeats=hb, flight=flight, chain=2)
    line = capsys.readouterr().out
    assert "rank 2 on nid005001" in line
    assert "Flight Recorder: rank(s) 2 never entered collective 6 (nccl:all_reduce, process group 0) that rank(s) 0, 1, 3 wait in" in line
    assert decision["decision"] == "resume-elsewhere" and decision["exclude"] == "nid005001"
    assert report["stopped_by"]["evidence"].startswith("Flight Recorder: rank(s) 2")
    # the command line reader says the same
    assert fault.main(["flight", str(flight)]) == 0
    assert "collective 6 (nccl:all_reduce): waiting: rank(s) 0, 1, 3; never entered: 2" in capsys.readouterr().out


def test_a_dump_that_names_a_class_is_refused_not_run(fault, tmp_path):
    flight = tmp_path / "flight"
    flight.mkdir()
    (flight / "rank-0").write_bytes(pickle.dumps(flight_dump([entry(1, "started")]) | {"x": Path("/")}))
    assert fault.dumps(str(flight)) == {}


def test_it_runs_as_a_script(tmp_path):
    log = tmp_path / "job.out"
    log.write_text("\n".join(RANKS + [GLOO_TIMEOUT]) + "\n")
    result = subprocess.run([sys.executable, str(FAULT_PY), "end", "--status", "1", "--log", str(log),
                             "--run-dir", str(tmp_path / "run"), "--job", "5", "--out", str(tmp_path / "d")],
                            capture_output=True, text=True, check=True)
    assert result.stdout.startswith("fault: hang (collective timeout): no rank to blame (gloo: timed out waiting 1800000 ms for a recv on rank 0); "), result.stdout
    assert "rank 0 on nid005000 timed out waiting; the rank it waited for is not named" in result.stdout
    report = json.loads((tmp_path / "run/reports/5.json").read_text())
    assert report["by"] == "job" and report["steps"] == {"first": None, "last": None, "done": None}, report


def test_the_runs_reader_reads_a_report_only_the_job_wrote(fault, tmp_path):
    """A script without runlog: scripts/lib/reports.py (sweep.py, explain --runs) reads the job's
    own report, and the run says why its newest job stopped."""
    spec = importlib.util.spec_from_file_location("project_reports", FAULT_PY.parent / "reports.py")
    assert spec and spec.loader
    reports = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reports)
    end(fault, tmp_path, RANKS + SRUN_DIED, status=7, heartbeats=beats(tmp_path, {0: ("nid005000", 200)}))
    run = reports.run(tmp_path / "run")
    assert run and [j["job"] for j in run["jobs"]] == ["12"] and run["stopped_by"]["cause"] == "rank died"
    # its steps are not reported (None), not 0; its last heartbeat is its last step
    assert (run["steps"], run["unreported"], run["last_step"], run["per_1000_steps"]) == (None, 1, 200, None), run
    assert run["jobs"][0]["ended"] == "rank died" and run["jobs"][0]["by"] == "job"


def test_a_report_0_4_wrote_for_a_job_alone_reads_as_steps_not_reported(fault, tmp_path):
    """lumi-scaffold 0.4's fault.py wrote steps done 0 for a script without runlog (no "by");
    runlog's reports of any release keep their steps."""
    spec = importlib.util.spec_from_file_location("project_reports", FAULT_PY.parent / "reports.py")
    assert spec and spec.loader
    reports = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reports)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "3.json").write_text(json.dumps(
        {"job": "3", "ended": "finished", "written": "1", "steps": {"first": None, "last": None, "done": 0},
         "billing": {"billed": 2.0}, "seconds": {"job": 10}}))
    (tmp_path / "reports" / "4.json").write_text(json.dumps(
        {"job": "4", "ended": "finished", "written": "2", "steps": {"first": 1, "last": 50, "done": 50},
         "samples_per_s": 3.0, "billing": {"billed": 1.0}, "seconds": {"job": 10}}))
    run = reports.run(tmp_path)
    assert [j["by"] for j in run["jobs"]] == ["job", "runlog"] and run["jobs"][0]["steps"]["done"] is None
    assert (run["steps"], run["unreported"], run["last_step"], run["per_1000_steps"]) == (50, 1, 50, None), run


def test_it_is_python_3_6(tmp_path):
    """The node's own python3 runs it and the module it imports (SUSE Linux Enterprise 15's
    python3 is 3.6): no grammar newer than 3.6."""
    import ast

    for path in (FAULT_PY, FAULT_PY.parent / "python" / "jobfiles.py"):
        ast.parse(path.read_text(), feature_version=(3, 6))
        assert "from __future__ import annotations" not in path.read_text()


def test_it_reads_the_lines_of_this_projects_watchdog(fault, watchdog, tmp_path):
    """fault.py parses each stop line scripts/lib/watchdog.py prints (it cannot import it: it
    runs with the node's python3; both read the heartbeat files with jobfiles.py)."""
    last, behind = watchdog.Beat(0, "nid005000", 5, 100.0), watchdog.Beat(2, "nid005001", 4, 90.0)
    stall = watchdog.describe(watchdog.Stall(40, 30, "PROGRESS_TIMEOUT", last, behind), 140)
    cause, facts = fault.classify(stall, 1, 0)
    assert cause == "heartbeat stall" and (facts["rank"], facts["node"], facts["step"]) == (2, "nid005001", 4), stall
    starting = watchdog.describe(watchdog.Stall(50, 40, "STARTUP_TIMEOUT", watchdog.Beat(3, "nid005001", -1, 1.0), None), 60)
    assert fault.classify(starting, 1, 0)[0] == "no heartbeat", starting
    silent = watchdog.describe(watchdog.Stall(70, 60, "OUTPUT_TIMEOUT", None, None), 80)
    cause, facts = fault.classify(silent, 143, 0)
    assert cause == "output stall" and "70 s" in facts["detail"], silent


def test_a_silent_script_that_never_beats_is_a_hang_with_no_rank_to_blame(fault, tmp_path, capsys):
    silent = ("watchdog: the job's output did not grow for 61 s (OUTPUT_TIMEOUT=60; the training script never imported "
              "heartbeat.py, so its output is all the watchdog can judge). Stopping the step.")
    decision, report = end(fault, tmp_path, RANKS + [silent], status=143, chain=2)
    line = capsys.readouterr().out
    assert line.startswith("fault: hang (output stall): no rank to blame"), line
    assert decision["decision"] == "resume" and decision["exclude"] == "" and "software hang suspected" in decision["reason"]
    assert report["stopped_by"]["cause"] == "output stall" and report["ended"] == "hang"


def test_a_cancelled_job_says_so_and_its_report_records_it(fault, tmp_path, capsys):
    """The batch script's trap (scripts/lib/job.sh, stop_train) passes the signal: SIGTERM
    before Slurm's time-limit warning is a cancel (scancel), which stops the chain; after the
    warning it is the time limit itself. The report runlog wrote on SIGTERM keeps its steps."""
    (tmp_path / "run" / "reports").mkdir(parents=True)
    (tmp_path / "run" / "reports" / "12.json").write_text(json.dumps(
        {"job": "12", "by": "runlog", "ended": "stopped", "steps": {"first": 1, "last": 37, "done": 37}}))
    decision, report = end(fault, tmp_path, RANKS + ["srun: error: nid005000: tasks 0-1: Terminated"], status=143,
                           signal="TERM", chain=2, next="13")
    line = capsys.readouterr().out
    assert line == ("fault: cancelled (SIGTERM: scancel, or Slurm ended the job). Next: stop: the job was cancelled; "
                    "submitting again resumes the run from its newest checkpoint.\n"), line
    assert decision["decision"] == "stop" and decision["cause"] == "cancelled"
    assert report["ended"] == "cancelled" and report["steps"]["done"] == 37, report
    assert (report["stopped_by"]["cause"], report["stopped_by"]["hang"], report["exit"]) \
        == ("cancelled", False, {"status": 143, "cause": "cancelled"}), report
    assert fault.classify("", 130, 0, "INT") == ("cancelled", {"detail": "SIGINT: Ctrl-C"})
    assert fault.classify("", 143, 1, "TERM")[0] == "time limit"



def test_stacks_from_faulthandler_and_from_py_spy_name_the_rank_elsewhere(fault):
    """The watchdog gives each rank's stacks as faulthandler wrote them, or as py-spy dumps
    them where the image has py-spy; either way the innermost frame of the main thread is
    compared (py-spy's header as py-spy 0.4 prints it, here on the local Slurm)."""
    def faulthandler(rank, function, line):
        return (f"watchdog: stacks of rank{rank}@nid005000 (pid 10{rank}) follow\n"
                f'Current thread 0x00007f (most recent call first):\n  File "/p/src/demo/{function}.py", line {line} in '
                f"{function}\n  File \"/p/src/demo/train.py\", line 9 in <module>\n")

    def py_spy(rank, function, line):
        return (f"watchdog: stacks of rank{rank}@nid005001 (pid 20{rank}), py-spy dump:\n"
                f"Process 20{rank}: python -u src/demo/train.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
                f'Thread 20{rank} (idle): "MainThread"\n    {function} (demo/{function}.py:{line})\n'
                "    <module> (demo/train.py:9)\n")

    text = faulthandler(0, "all_reduce", 30) + faulthandler(1, "all_reduce", 30) + py_spy(2, "all_reduce", 30) \
        + py_spy(3, "load_batch", 12)
    assert fault.odd_stacks(text) == ([3], "stacks: rank(s) 3 in load_batch (load_batch.py:12), the other 3 in "
                                           "all_reduce (all_reduce.py:30)")
    assert fault.odd_stacks(py_spy(0, "main", 4) + py_spy(1, "main", 4)) == ([], "stacks: every rank in main (main.py:4)")
