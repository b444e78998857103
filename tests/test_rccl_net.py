"""scripts/rccl_net.py, the RCCL network check that preflight and training share: the last
line naming a network decides, an OFI failure followed by sockets is TCP, and a log without
any network line is reported, never passed."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "project-templates/project/scripts/rccl_net.py"
spec = importlib.util.spec_from_file_location("rccl_net", SCRIPT)
assert spec and spec.loader
rccl_net = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rccl_net)

# RCCL init log lines (NCCL_DEBUG=INFO) as LUMI's [WS-09] shows them, and the fallback.
OFI_OK = ["nid005000:1:1 [0] NCCL INFO NET/OFI Using aws-ofi-rccl 1.4.0",
          "nid005000:1:1 [0] NCCL INFO NET/OFI Selected Provider is cxi (found 4 nics)"]
OFI_FAILED = ["nid005000:1:1 [0] NCCL INFO NET/OFI Using aws-ofi-rccl 1.4.0",
              "nid005000:1:1 [0] NCCL INFO NET/OFI aws-ofi-rccl initialization failed",
              "nid005000:1:1 [0] NCCL INFO NET/Socket : Using [0]hsn0:10.253.1.1<0>"]
SOCKET = ["nid005000:1:1 [0] NCCL INFO NET/Socket : Using [0]hsn0:10.253.1.1<0>"]
NOTHING = ["nid005000:1:1 [0] NCCL INFO Bootstrap : Using hsn0:10.253.1.1<0>",
           "nid005000:1:1 [0] NCCL INFO ROCr version 1.1"]
ARGS = ["--fast", "NET/OFI", "--tcp", "NET/Socket", "--name", "Slingshot", "--fix", "bind the CXI libraries"]
CASES = [(OFI_OK, "fast", 0), (OFI_FAILED, "tcp", 1), (SOCKET, "tcp", 1), (NOTHING, "none", 3)]
IDS = ["ofi-ok", "ofi-failed-then-socket", "socket-only", "no-network-line"]


@pytest.mark.parametrize("lines, expected, status", CASES, ids=IDS)
def test_verdict(lines, expected, status):
    assert rccl_net.verdict("\n".join(lines) + "\n", "NET/OFI", "NET/Socket") == expected


def test_an_ofi_failure_alone_is_not_the_fast_network():
    assert rccl_net.verdict(OFI_FAILED[1], "NET/OFI", "NET/Socket") == "none"


@pytest.mark.parametrize("lines, expected, status", CASES, ids=IDS)
def test_check_reads_every_rank(tmp_path, capsys, lines, expected, status):
    """One rank on TCP is enough to fail; the others say the fast network."""
    good = tmp_path / "rccl-1-rank0.txt"
    good.write_text("\n".join(OFI_OK if expected != "none" else NOTHING) + "\n")
    other = tmp_path / "rccl-1-rank1.txt"
    other.write_text("\n".join(lines) + "\n")
    assert rccl_net.main(["check", *ARGS, str(good), str(other)]) == status
    out, err = capsys.readouterr()
    if expected == "tcp":
        assert err == (f"ERROR: RCCL talks between nodes over TCP sockets, not Slingshot: 1 rank(s), e.g. {other}. "
                       "Fix: bind the CXI libraries.\n")
    elif expected == "fast":
        assert out == "preflight: RCCL uses Slingshot between nodes\n" and not err
    else:
        assert "RCCL logged no network setup in 2 log(s)" in err


def watch(tmp_path: Path, lines: list[str], wait: str = "5", delay: float = 0.5):
    """The watcher beside a stand-in training process (sleep) whose log RCCL fills later."""
    log = tmp_path / "rccl.txt"
    training = subprocess.Popen(["sleep", "30"])
    watcher = subprocess.Popen([sys.executable, str(SCRIPT), "watch", "--pid", str(training.pid), "--wait", wait,
                                "--interval", "0.1", *ARGS, str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    time.sleep(delay)
    with open(log, "a") as handle:  # written line by line, as RCCL does
        for line in lines:
            handle.write(line + "\n")
            handle.flush()
    out, err = watcher.communicate(timeout=20)
    try:
        training.wait(timeout=2)
    except subprocess.TimeoutExpired:  # still training: the watcher left it alone
        training.kill()
        training.wait()
        return watcher.returncode, out, err, None
    return watcher.returncode, out, err, training.returncode


@pytest.mark.parametrize("lines, expected, status", CASES, ids=IDS)
def test_watch_stops_training_on_tcp_only(tmp_path, lines, expected, status):
    if expected in ("fast", "none"):
        code, out, err, training_status = watch(tmp_path, lines, wait="1.5")
        assert code == status and training_status is None  # the training goes on
        if expected == "fast":
            assert out.startswith("rank 0: RCCL uses Slingshot between nodes") and not err
        else:
            assert err.startswith("WARNING: rank 0: RCCL logged no network line within 1.5 s")
        return
    code, out, err, training_status = watch(tmp_path, lines)
    assert code == 1 and training_status == -15  # SIGTERM
    assert "over TCP sockets, not Slingshot" in err and "RCCL_NET_CHECK=0 runs anyway" in err


def test_watch_ends_with_the_training(tmp_path):
    done = subprocess.Popen(["true"])
    done.wait()
    result = subprocess.run([sys.executable, str(SCRIPT), "watch", "--pid", str(done.pid), "--wait", "60", *ARGS,
                             str(tmp_path / "none.txt")], capture_output=True, text=True, timeout=20)
    assert result.returncode == 0 and not result.stdout and not result.stderr
    assert not os.path.exists(tmp_path / "none.txt")


# all_reduce_perf's table (two sizes), as in tests/test_preflight.py's stand-in
TABLE = """#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
   67108864      33554432      half     sum      -1   1400.0   47.94   89.88      0   1400.0   47.94   89.88      0
  134217728      67108864      half     sum      -1   3100.0   43.30   81.18      0   3100.0   43.30   81.18      0
 2147483648    1073741824      half     sum      -1  50000.0   42.95   80.53      0  50000.0   42.95   80.53      0
"""
BUSBW = ["--reference", "85", "--size", "134217728", "--tolerance", "0.05", "--nodes", "2",
         "--shape", "2 nodes x 8 GCDs, outside a container", "--source", "RF-RCCL"]


def test_busbw_verdict_at_the_reference_size(tmp_path, capsys):
    """81.18 GB/s at 128 MiB passes 85 GB/s with 5 % tolerance (80.75); 80.5 does not."""
    table = tmp_path / "preflight.txt"
    table.write_text(TABLE)
    assert rccl_net.main(["busbw", *BUSBW, "--job-nodes", "2", str(table)]) == 0
    out = capsys.readouterr().out
    assert out == ("preflight: bus bandwidth at 128 MiB: 81.18 GB/s, 96% of the reference 85 GB/s "
                   "(2 nodes x 8 GCDs, outside a container) [RF-RCCL]\n"
                   "preflight: PASS (at least 80.75 GB/s: 5 % below the reference)\n")
    table.write_text(TABLE.replace("81.18", "80.50"))
    assert rccl_net.main(["busbw", *BUSBW, "--job-nodes", "2", str(table)]) == 1
    assert "ERROR: preflight: FAIL: 80.5 GB/s at 128 MiB is below 80.75 GB/s" in capsys.readouterr().err
    # on 4 nodes: the figure, no verdict; without the size in the table: no verdict
    assert rccl_net.main(["busbw", *BUSBW, "--job-nodes", "4", str(table)]) == 0
    assert "no verdict: the reference was measured on 2 nodes, this job has 4" in capsys.readouterr().out
    table.write_text(TABLE.replace("134217728", "134217729"))
    assert rccl_net.main(["busbw", *BUSBW, "--job-nodes", "2", str(table)]) == 0
    assert "no verdict: the benchmark measured no 128 MiB message" in capsys.readouterr().out
    assert rccl_net.busbw_at(TABLE, 0) == 80.53
