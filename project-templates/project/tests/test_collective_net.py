"""scripts/lib/collective_net.py, the RCCL network check that the preflight and training share, read
against real RCCL/NCCL init logs (NCCL_DEBUG=INFO) from public issues: the fast network
here is the OFI plugin on libfabric's cxi provider, RCCL's final `Using network` line
decides, nothing before it stops a job, and the preflight gives a bandwidth verdict only
where it measured as the reference was measured."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

# ---- Real log excerpts (each as its source prints it; lines only left out, never changed) ----

# aws/aws-ofi-nccl#801 (2025-03-05, aws-ofi-nccl 1.6.0 on a system with cxi NICs): cxi,
# then NCCL's final choice.
OFI_801_CXI = ["NCCL INFO NET/OFI Selected Provider is cxi (found 8 nics)",
               "[0] NCCL INFO Using non-device net plugin version 0",
               "[0] NCCL INFO Using network AWS Libfabric"]
# The plugin loads on libfabric's tcp provider: the provider line is aws/aws-ofi-nccl#850's
# (review of 2025-04-10); after it NCCL logs the plugin's name, "Using network AWS Libfabric",
# as after any provider (the final line of aws/aws-ofi-nccl#715's log, 2024-12-04): that line
# alone cannot tell tcp from cxi.
OFI_TCP_PROVIDER = ["NCCL INFO NET/OFI Selected provider is tcp, fabric is 172.31.64.0/20 (found 1 nics)",
                    "algo-1:18057:18130 [0] NCCL INFO Using non-device net plugin version 0",
                    "algo-1:18057:18130 [0] NCCL INFO Using network AWS Libfabric"]
# aws/aws-ofi-nccl#889 (2025-05-16): the plugin selects a provider, fails to create its
# endpoint, and NCCL falls back to sockets. The OFI lines are process 79's, the fallback
# process 86's, of the same run on the same node (the issue's log interleaves them).
OFI_889_THEN_SOCKET = [
    "ip-10-36-29-253:79:2547 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 4 nics)",
    "ip-10-36-29-253:79:2547 [0] NCCL INFO NET/OFI Creating one domain per process",
    "ip-10-36-29-253:79:2547 [0] platform_config_endpoint:626 NCCL WARN NET/OFI GDR disabled on GDR-supported "
    "instance type p4d.24xlarge",
    "ip-10-36-29-253:79:2547 [0] nccl_net_ofi_domain_get_ep:969 NCCL WARN NET/OFI Creating new endpoint for domain "
    "0x7f876fa992c0 failed: Invalid argument",
    "ip-10-36-29-253:86:2554 [0] nccl_net_ofi_create_plugin:335 NCCL WARN NET/OFI aws-ofi-nccl initialization failed",
    "ip-10-36-29-253:86:2554 [0] nccl_net_ofi_init:155 NCCL WARN NET/OFI Initializing plugin failed",
    "ip-10-36-29-253:86:2554 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
    "ip-10-36-29-253:86:2554 [0] NCCL INFO NET/IB : No device found.",
    "ip-10-36-29-253:86:2554 [0] NCCL INFO NET/Socket : Using [0]eth0:10.36.29.253<0>",
    "ip-10-36-29-253:86:2554 [0] NCCL INFO Using non-device net plugin version 0",
    "ip-10-36-29-253:86:2554 [0] NCCL INFO Using network Socket"]
# ROCm/rccl-tests#163 (RCCL 2.21.5, ROCm 6.3.3): no plugin, sockets.
RCCL_163_SOCKET = [
    "z292:58192:58192 [0] NCCL INFO NET/Plugin: No plugin found (librccl-net.so)",
    "z292:58192:58200 [2] NCCL INFO Failed to open libibverbs.so[.1]",
    "z292:58192:58200 [2] NCCL INFO NET/Socket : Using [0]eno2np1:192.168.2.194<0>",
    "z292:58192:58200 [2] NCCL INFO Using non-device net plugin version 0",
    "z292:58192:58200 [2] NCCL INFO Using network Socket"]
# The same log before RCCL chose (its bootstrap line): no network yet.
RCCL_163_BOOTSTRAP = ["z292:58192:58192 [0] NCCL INFO Bootstrap : Using eno2np1:192.168.2.194<0>"]

# The check as a site with the cxi network sets it (its site data; the job files pass it on:
# scripts/lib/run.sh, jobs/preflight.sbatch). lumi-scaffold's own tests keep it equal to its
# built-in site's.
FAST = "NET/OFI Selected (P|p)rovider is cxi"
TCP = "NET/Socket|Using network Socket|NET/OFI Selected (P|p)rovider is (tcp|sockets)"
FINAL = "Using network"
PATTERNS = (FAST, TCP, FINAL)
ARGS = ["--fast", FAST, "--tcp", TCP, "--final", FINAL, "--name", "the cxi network", "--fix", "bind the CXI libraries",
        "--collectives", "RCCL"]
CASES = [(OFI_801_CXI, "fast", 0), (OFI_TCP_PROVIDER, "tcp", 1), (OFI_889_THEN_SOCKET, "tcp", 1),
         (RCCL_163_SOCKET, "tcp", 1), (RCCL_163_BOOTSTRAP, "none", 3)]
IDS = ["ofi801-cxi", "ofi850-tcp-provider", "ofi889-then-socket", "rccl-tests163-socket", "bootstrap-only"]


def text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("lines, expected, status", CASES, ids=IDS)
def test_verdict_on_real_logs(collective_net, lines, expected, status):
    """Fast only with the cxi provider; the tcp provider, a fallback to sockets, and no
    plugin at all are TCP; a log with no final choice decides nothing."""
    assert collective_net.verdict(text(lines), *PATTERNS) == expected


def test_the_final_line_alone_is_no_verdict_and_nothing_before_it_is_one(collective_net):
    """`Using network AWS Libfabric` reads the same on tcp and cxi: the provider line before
    it decides. Before the final line, neither a cxi nor a tcp line decides anything."""
    assert collective_net.verdict(text(OFI_TCP_PROVIDER[2:]), *PATTERNS) == "other"
    assert collective_net.verdict(text(OFI_TCP_PROVIDER[:2]), *PATTERNS) == "none"
    assert collective_net.verdict(text(OFI_801_CXI[:2]), *PATTERNS) == "none"
    assert collective_net.verdict(text(OFI_889_THEN_SOCKET[:-1]), *PATTERNS) == "none"
    # an efa provider (aws-ofi-nccl#889's first line) is not the cxi network, whatever follows
    assert collective_net.verdict(text(OFI_889_THEN_SOCKET[:1] + OFI_801_CXI[2:]), *PATTERNS) == "other"


def test_one_communicator_on_tcp_makes_the_rank_tcp(collective_net):
    """Each `Using network` line is one communicator's choice (PyTorch makes several)."""
    assert collective_net.verdict(text(OFI_801_CXI + RCCL_163_SOCKET[2:]), *PATTERNS) == "tcp"
    assert collective_net.verdict(text(OFI_801_CXI + OFI_801_CXI[2:]), *PATTERNS) == "fast"


def test_site_data_without_a_final_pattern_keeps_the_0_3_rule(collective_net):
    """A site plugin written before lumi-scaffold 0.4 (no `final`): the last network line
    decides at once."""
    old = ("NET/OFI", "NET/Socket")
    assert collective_net.verdict(text(OFI_801_CXI), *old) == "fast"
    assert collective_net.verdict(text(RCCL_163_SOCKET), *old) == "tcp"
    assert collective_net.verdict(text(OFI_889_THEN_SOCKET), *old) == "tcp"
    assert collective_net.verdict(OFI_889_THEN_SOCKET[4], *old) == "none"  # an OFI failure is not the fast network


@pytest.mark.parametrize("lines, expected, status", CASES, ids=IDS)
def test_check_reads_every_rank_and_names_the_culprit(collective_net, tmp_path, capsys, lines, expected, status):
    """One rank on TCP is enough to fail; the message names the rank's log and its line."""
    good = tmp_path / "rccl-1-rank0.txt"
    good.write_text(text(OFI_801_CXI if expected != "none" else RCCL_163_BOOTSTRAP))
    other = tmp_path / "rccl-1-rank1.txt"
    other.write_text(text(lines))
    assert collective_net.main(["check", *ARGS, str(good), str(other)]) == status
    out, err = capsys.readouterr()
    if expected == "tcp":
        assert err.startswith("ERROR: RCCL talks between nodes over TCP sockets, not the cxi network: 1 rank(s), "
                              f"e.g. {other} ")
        assert err.endswith(". Fix: bind the CXI libraries.\n")
    elif expected == "fast":
        assert out == "preflight: RCCL uses the cxi network between nodes\n" and not err
    else:
        assert "RCCL made no final choice of network in 2 log(s)" in err
    if lines is OFI_TCP_PROVIDER:
        assert "('Using network AWS Libfabric after NET/OFI Selected provider is tcp, fabric is 172.31.64.0/20 " in err
    if lines is RCCL_163_SOCKET:
        assert "('Using network Socket')" in err


def test_check_fails_a_final_choice_that_is_neither(collective_net, tmp_path, capsys):
    log = tmp_path / "rccl-1-rank0.txt"
    log.write_text(text(OFI_889_THEN_SOCKET[:1] + OFI_801_CXI[2:]))  # efa provider, plugin chosen
    assert collective_net.main(["check", *ARGS, str(log)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ERROR: RCCL's final choice of network is not the cxi network, and no line says TCP "
                          "sockets either: 1 rank(s)")
    assert "rccl-1-rank0.txt ('Using network AWS Libfabric')" in err


class Training:
    """The watcher beside a stand-in training process (sleep) whose log RCCL fills later."""

    def __init__(self, script: str, tmp_path: Path, wait: str = "20"):
        self.log = tmp_path / "rccl.txt"
        self.training = subprocess.Popen(["sleep", "60"])
        self.watcher = subprocess.Popen(
            [sys.executable, script, "watch", "--pid", str(self.training.pid), "--wait", wait, "--interval", "0.1",
             *ARGS, str(self.log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def write(self, data: str, pause: float = 0.3) -> None:
        with open(self.log, "a") as handle:  # as RCCL writes: a line at a time, flushed
            handle.write(data)
            handle.flush()
        time.sleep(pause)

    def running(self) -> bool:
        return self.training.poll() is None and self.watcher.poll() is None

    def finish(self) -> tuple[int, str, str, int | None]:
        out, err = self.watcher.communicate(timeout=30)
        try:
            training_status = self.training.wait(timeout=0.5)  # (the watcher has ended: any SIGTERM came)
        except subprocess.TimeoutExpired:  # still training: the watcher left it alone
            self.training.kill()
            self.training.wait()
            training_status = None
        return self.watcher.returncode, out, err, training_status


@pytest.mark.parametrize("lines", [OFI_TCP_PROVIDER, OFI_889_THEN_SOCKET], ids=["tcp-provider", "ofi-then-socket"])
def test_watch_stops_the_training_at_the_final_choice_not_before(collective_net, tmp_path, lines):
    """A line a time with pauses the watcher polls through: up to the last line nothing has
    decided (the job trains on); `Using network ...` ends it. Before lumi-scaffold 0.4 an
    OFI line passed the job at once (`NET/OFI` was the fast network), so neither fallback
    was ever read."""
    job = Training(collective_net.__file__, tmp_path)
    for line in lines[:-1]:
        job.write(line + "\n")
        assert job.running(), job.finish()
    job.write(lines[-1] + "\n", pause=0)
    code, out, err, training_status = job.finish()
    assert code == 1 and training_status == -15, (out, err)  # SIGTERM
    assert "over TCP sockets, not the cxi network" in err and "RCCL_NET_CHECK=0 runs anyway" in err and not out


def test_watch_reads_a_line_only_once_it_is_whole(collective_net, tmp_path):
    """The cxi line, then the final line half written: `Using network Sock` must not read
    as the plugin's final line."""
    job = Training(collective_net.__file__, tmp_path)
    job.write(OFI_801_CXI[0] + "\n" + RCCL_163_SOCKET[-1][:-3], pause=1.0)
    assert job.running(), job.finish()
    job.write("ket\n", pause=0)
    code, out, err, training_status = job.finish()
    assert code == 1 and training_status == -15, (out, err)


def test_watch_passes_the_fast_network_and_the_training_goes_on(collective_net, tmp_path):
    job = Training(collective_net.__file__, tmp_path)
    for line in OFI_801_CXI:
        job.write(line + "\n", pause=0.2)
    code, out, err, training_status = job.finish()
    assert code == 0 and training_status is None and not err
    assert out.startswith("rank 0: RCCL uses the cxi network between nodes")


def test_watch_warns_when_no_final_choice_comes(collective_net, tmp_path):
    job = Training(collective_net.__file__, tmp_path, wait="1.5")
    job.write(text(OFI_TCP_PROVIDER[:1]), pause=0)  # a tcp provider, but RCCL has not chosen yet
    code, out, err, training_status = job.finish()
    assert code == 3 and training_status is None and not out
    assert err.startswith("WARNING: rank 0: RCCL logged no final choice of network within 1.5 s")


def test_watch_ends_with_the_training(collective_net, tmp_path):
    done = subprocess.Popen(["true"])
    done.wait()
    result = subprocess.run([sys.executable, collective_net.__file__, "watch", "--pid", str(done.pid), "--wait", "60", *ARGS,
                             str(tmp_path / "none.txt")], capture_output=True, text=True, timeout=20)
    assert result.returncode == 0 and not result.stdout and not result.stderr
    assert not os.path.exists(tmp_path / "none.txt")


# ---- The preflight's bandwidth verdict ----

# all_reduce_perf's table, out-of-place and in-place columns (sizes of the reference's range)
TABLE = """#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
   67108864      33554432      half     sum      -1   1400.0   47.94   89.88      0   1400.0   47.94   89.88      0
  134217728      67108864      half     sum      -1   3100.0   43.30   79.00      0   3100.0   43.30   81.18      0
 2147483648    1073741824      half     sum      -1  50000.0   42.95   80.53      0  50000.0   42.95   80.60      0
"""
# A site's reference as its data gives it (lumi-scaffold's own tests keep it equal to its
# built-in site's): 85 GB/s in-place busbw at 128 MiB on 2 nodes, 5 % below allowed.
REF_ARGS = "-b 2M -e 2048M -f 2 -g 1 -z 1 -t 1 -R 1 -n 80 -w 5 -d half"
BUSBW = ["--reference", "85", "--size", "134217728", "--tolerance", "0.05", "--nodes", "2", "--column", "in-place",
         "--shape", "2 nodes x 8 GCDs", "--source", "site data", f"--reference-args={REF_ARGS}"]
REFERENCE = "the reference 85 GB/s (2 nodes x 8 GCDs) [site data]"


def test_options_read_as_all_reduce_perf_reads_them(collective_net):
    """Long forms, `=`, sizes with units, and the last of a repeated option."""
    assert collective_net.options(REF_ARGS.split()) == collective_net.options(
        "-b 2M -e 2048M -f 2 -g 1 -d half -n 80 -w 5 -z 1 -t 1 -R 1".split())
    assert collective_net.options("--minbytes=2M --maxbytes 2G -n 5 -n 80".split()) == {
        "-b": str(2 << 20), "-e": str(2 << 30), "-n": "80"}


def test_busbw_verdict_when_measured_as_the_reference(collective_net, tmp_path, capsys):
    """81.18 GB/s in-place at 128 MiB passes 85 GB/s with 5 % tolerance (80.75); 80.5 does
    not. The out-of-place column (79.00) is not the one the reference reads."""
    assert collective_net.busbw_at(TABLE, 134217728, "in-place") == 81.18
    table = tmp_path / "preflight.txt"
    table.write_text(TABLE)
    ran = ["--benchmark", "all_reduce_perf", f"--ran={REF_ARGS}", "--job-nodes", "2"]
    assert collective_net.main(["busbw", *BUSBW, *ran, str(table)]) == 0
    out, err = capsys.readouterr()
    assert out == (f"preflight: bus bandwidth at 128 MiB (in-place): 81.18 GB/s, 96% of {REFERENCE}\n"
                   "preflight: PASS (at least 80.75 GB/s: 5 % below the reference)\n") and not err
    table.write_text(TABLE.replace("81.18", "80.50"))
    assert collective_net.main(["busbw", *BUSBW, *ran, str(table)]) == 1
    assert "ERROR: preflight: FAIL: 80.5 GB/s at 128 MiB is below 80.75 GB/s" in capsys.readouterr().err
    # the same options in another order, long forms and 2G for 2048M: still the reference's
    same = "--datatype half -R 1 -t 1 -z 1 -w 5 -n 80 -g 1 -f 2 --maxbytes=2G -b 2M"
    assert collective_net.main(["busbw", *BUSBW, *ran, f"--ran={same}", str(table)]) == 1


@pytest.mark.parametrize("ran, why", [
    (["--benchmark", "allreduce_bench.py", "--ran=-b 2M -e 2048M -f 2 -n 80 -w 5 -d half", "--job-nodes", "2"],
     "allreduce_bench.py, not all_reduce_perf"),
    (["--benchmark", "all_reduce_perf", f"--ran={REF_ARGS} -n 5", "--job-nodes", "2"], f"options {REF_ARGS} -n 5"),
    (["--benchmark", "all_reduce_perf", "--ran=-b 2M -e 2048M -f 2 -g 1 -d half", "--job-nodes", "2"],
     "options -b 2M -e 2048M -f 2 -g 1 -d half"),
    (["--benchmark", "all_reduce_perf", f"--ran={REF_ARGS}", "--job-nodes", "4"], "4 nodes, not 2"),
], ids=["framework-benchmark", "other-iterations", "0.3-options", "other-node-count"])
def test_busbw_no_verdict_but_both_figures_when_measured_otherwise(collective_net, tmp_path, capsys, ran, why):
    """Another benchmark, other options or another node count: one WARNING line with both
    figures, and no failure, however low the figure (here 60 GB/s)."""
    table = tmp_path / "preflight.txt"
    table.write_text(TABLE.replace("81.18", "60.00"))
    assert collective_net.main(["busbw", *BUSBW, *ran, str(table)]) == 0
    out, err = capsys.readouterr()
    assert not out and err.count("\n") == 1
    assert err.startswith(f"WARNING: preflight: no verdict: 60 GB/s in-place busbw at 128 MiB beside {REFERENCE}, "
                          f"the in-place busbw of all_reduce_perf {REF_ARGS}: this run differs (")
    assert why in err


def test_busbw_framework_table_has_one_column(collective_net, tmp_path, capsys):
    """allreduce_bench.py prints one set of columns (as all_reduce_perf's out-of-place): its
    figure is shown as that, beside the reference, with no verdict."""
    table = tmp_path / "preflight.txt"
    table.write_text("#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
                     "   134217728      67108864      half     sum      -1   3100.0   43.30   70.00      0\n")
    ran = ["--benchmark", "allreduce_bench.py", "--ran=-b 2M", "--job-nodes", "2"]
    assert collective_net.main(["busbw", *BUSBW, *ran, str(table)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("WARNING: preflight: no verdict: 70 GB/s out-of-place busbw at 128 MiB beside")
    assert "this run differs (allreduce_bench.py, not all_reduce_perf)" in err


def test_busbw_verdict_only_in_the_reference_image_with_its_settings(collective_net, tmp_path, capsys, monkeypatch):
    """The job's image (its file name) and the settings the benchmark ran with (this
    process's environment, as the preflight runs it) must be the reference's too."""
    table = tmp_path / "preflight.txt"
    table.write_text(TABLE)
    ran = ["--benchmark", "all_reduce_perf", f"--ran={REF_ARGS}", "--job-nodes", "2"]
    where = ["--reference-image=site-image.sif", "--reference-env=NCCL_NET_GDR_LEVEL=3"]

    def differs(*args: str) -> str:
        assert collective_net.main(["busbw", *BUSBW, *ran, *args, str(table)]) == 0
        out, err = capsys.readouterr()
        assert not out and err.count("\n") == 1, (out, err)
        return err.split("this run differs (")[1].rstrip(").\n")

    monkeypatch.setenv("NCCL_NET_GDR_LEVEL", "3")
    assert collective_net.main(["busbw", *BUSBW, *ran, *where, "--image=/images/site-image.sif", str(table)]) == 0
    assert "preflight: PASS" in capsys.readouterr().out
    assert differs(*where, "--image=/scratch/mine.sif") == "in the image mine.sif, the reference in site-image.sif"
    assert differs("--image=/images/site-image.sif") == "in the image site-image.sif, the reference in no image it names"
    monkeypatch.setenv("NCCL_NET_GDR_LEVEL", "PHB")
    assert differs(*where, "--image=site-image.sif") == "NCCL_NET_GDR_LEVEL=PHB, the reference NCCL_NET_GDR_LEVEL=3"
    monkeypatch.delenv("NCCL_NET_GDR_LEVEL")
    assert differs(*where, "--image=site-image.sif") == "NCCL_NET_GDR_LEVEL unset, the reference NCCL_NET_GDR_LEVEL=3"


def test_busbw_reference_without_options_gives_no_verdict(collective_net, tmp_path, capsys):
    """A site reference that does not say how it was measured (a plugin written before
    lumi-scaffold 0.4, without benchmark_args): the figure beside it, no verdict."""
    table = tmp_path / "preflight.txt"
    table.write_text(TABLE)
    args = [a for a in BUSBW if not a.startswith("--reference-args")]
    assert collective_net.main(["busbw", *args, "--benchmark", "all_reduce_perf", "--ran=-b 1M -e 1G -f 2 -g 1",
                          "--job-nodes", "2", str(table)]) == 0
    assert "this run differs (the reference's options are not given)" in capsys.readouterr().err
    assert collective_net.busbw_at(TABLE, 0) == 80.53 and collective_net.busbw_at(TABLE, 0, "in-place") == 80.60
