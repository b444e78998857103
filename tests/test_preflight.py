"""The network preflight (jobs/preflight.sbatch) on the local Slurm with 2 emulated nodes:
the project's torch.distributed benchmark really runs over gloo across the nodes where the
image has no all_reduce_perf; a stand-in all_reduce_perf on the stand-in image's PATH is
preferred where it has one; and the job fails with the reason when RCCL's logs show TCP
sockets between the nodes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lumi_scaffold.plugins import get_catalogue

from .helpers import need_module, render
from .jobs import image_env, job_env, log_of, run_job
from .slurm.fixtures import slurm_required

pytestmark = pytest.mark.slurm

LOCAL = {"site": "local", "account": "local", "partition": "batch", "gpus_per_node": 2}

# TEST STAND-IN for rccl-tests' all_reduce_perf, on the stand-in image's PATH only. It logs
# FAKE_RCCL_LINE to NCCL_DEBUG_FILE as RCCL's init would, and prints all_reduce_perf's
# table: rank 0 for all ranks when MPI gave it the ranks (PMI_RANK: srun --mpi=pmi2),
# else every process as the rank 0 of its own world, as an MPI program started without
# its MPI launch does.
FAKE_ALL_REDUCE_PERF = """#!/usr/bin/env python3
import os, sys
if sys.argv[1:] == ["-h"]:  # its usage, the options this version knows (FAKE_USAGE; none: unknown)
    print(os.environ.get("FAKE_USAGE", ""))
    sys.exit(0)
if os.environ.get("NCCL_DEBUG_FILE"):
    with open(os.environ["NCCL_DEBUG_FILE"], "a") as log:
        log.write(os.environ.get("FAKE_RCCL_LINE", "") + "\\n")
mpi = "PMI_RANK" in os.environ
rank, n = (int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"])) if mpi else (0, 1)
if rank == 0:
    ran = " ".join(["# fake all_reduce_perf", *sys.argv[1:], "NCCL_DEBUG_SUBSYS=" + os.environ.get("NCCL_DEBUG_SUBSYS", "")])
    print(ran)
    with open(os.environ["FAKE_RAN"], "w") as record:  # (what ran, apart from srun's merged output)
        record.write(ran + "\\n")
    for r in range(n):
        print(f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on nid00500{r // 8} device {r % 8} [0xc1] AMD Instinct MI250X")
    print("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
    # out-of-place busbw, then in-place: FAKE_BUSBW_128M is the in-place figure at 128 MiB
    for size, out, busbw in ((1 << 20, "18.75", "18.75"), (128 << 20, "70.00", os.environ.get("FAKE_BUSBW_128M", "81.18")),
                             (1 << 30, "19.75", "18.75")):
        print(f"{size:12d}  {size // 4:12d}     float     sum      -1    100.0   10.00   {out}      0    100.0   10.00   {busbw}      0")
    print("# Out of bounds values : 0 OK")
    print("# Avg bus bandwidth    : 19.2500")
"""
# RCCL's lines as the real logs of project-templates/project/tests/test_collective_net.py have them
# (with a LUMI host prefix): the provider, then NCCL's final choice.
OFI = ("nid005000:1:1 [0] NCCL INFO NET/OFI Selected Provider is cxi (found 4 nics)\n"
       "nid005000:1:1 [0] NCCL INFO Using network AWS Libfabric")
TCP_PROVIDER = ("nid005000:1:1 [0] NCCL INFO NET/OFI Selected provider is tcp, fabric is 10.253.0.0/16 (found 1 nics)\n"
                "nid005000:1:1 [0] NCCL INFO Using network AWS Libfabric")
SOCKET = ("nid005000:1:1 [0] NCCL INFO NET/Socket : Using [0]hsn0:10.253.1.1<0>\n"
          "nid005000:1:1 [0] NCCL INFO Using network Socket")


def needs_local_site() -> None:
    if "local" not in get_catalogue().sites:
        pytest.skip("plugins/lumi-site-local is not installed")


def image_with_all_reduce_perf(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """The stand-in image's environment with all_reduce_perf on its PATH (not the host's)."""
    bindir = tmp_path / "image-bin"
    bindir.mkdir()
    fake = bindir / "all_reduce_perf"
    fake.write_text(FAKE_ALL_REDUCE_PERF)
    fake.chmod(0o755)
    return image_env(tmp_path / "image", PATH=f"{bindir}:{env['PATH']}", FAKE_RAN=str(tmp_path / "ran.txt"))


def ran(tmp_path: Path) -> str:
    """The line the fake all_reduce_perf's rank 0 wrote: its options and NCCL_DEBUG_SUBSYS. (Read
    from its file: in the step's output, merged by srun from 16 tasks, CI twice missed it.)"""
    return (tmp_path / "ran.txt").read_text()


@pytest.mark.parametrize("framework", ["pytorch", "jax"])
def test_framework_benchmark_runs_across_two_nodes(slurm_cluster_local2n, template, tmp_path, site_root, framework):
    """No all_reduce_perf in the image: scripts/lib/allreduce_bench.py (torch.distributed
    over gloo, or JAX's psum with gloo collectives) runs on the 4 ranks of 2 nodes and
    reports the bus bandwidth; the local site has no reference figure: no verdict."""
    needs_local_site()
    if framework == "jax" and not slurm_required():
        need_module("jax", "the JAX job tests need CPU JAX (pip install jax)")
    project = render(template, tmp_path / "p", **LOCAL, nodes=2, framework=framework)
    assert not (render(template, tmp_path / "one", **LOCAL, framework=framework) / "jobs/preflight.sbatch").exists()
    env = job_env(slurm_cluster_local2n, tmp_path, site_root)
    job_id, result = run_job(slurm_cluster_local2n, project, env, "jobs/preflight.sbatch",
                             "-b", "64K", "-e", "1M", "-f", "4", "-n", "3", "-w", "1", timeout=300)
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert "preflight: no all_reduce_perf in the image; scripts/lib/allreduce_bench.py instead" in log
    table = dict(re.findall(r"^#  Rank +(\d) Group  0 Pid +\d+ on +(nid00500[01]) ", log, re.M))
    assert table == {"0": "nid005000", "1": "nid005000", "2": "nid005001", "3": "nid005001"}, log
    rows = re.findall(r"^ +(\d+) +\d+ +float +sum +-1 +([\d.]+) +([\d.]+) +([\d.]+) +0$", log, re.M)
    assert [int(size) for size, _, _, _ in rows] == [65536, 262144, 1048576], log
    for size, micros, algbw, busbw in rows:  # a measured time; algbw = size / time; busbw = algbw * 2 (n - 1) / n, n = 4
        # (on a loaded 2-core machine gloo may move 64 KiB at under 0.005 GB/s, printed as 0.00: the time is the measurement)
        assert float(micros) > 0, log
        assert float(algbw) == pytest.approx(int(size) / (float(micros) * 1e3), rel=0.01, abs=0.006), log
        assert float(busbw) == pytest.approx(float(algbw) * 1.5, abs=0.011), log
    assert "preflight: 2 nodes, 4 ranks (4 in the benchmark's table)" in log
    assert re.search(r"^preflight: bus bandwidth 1 MiB: [\d.]+ GB/s \(largest message\), average [\d.]+ GB/s$", log, re.M), log
    assert "no published all-reduce figure for local to compare with (no verdict)" in log
    assert (project / "logs" / f"preflight-{job_id}.txt").read_text().count("float     sum") == 3


REFERENCE = ("the reference 85 GB/s (2 nodes x 8 GCDs, half, measured with the system ROCm and aws-ofi-rccl "
             "outside a container) [RF-RCCL]")


# How a LUMI job differs from where LUMI's reference was measured [RF-RCCL]: the stand-in
# image (tests/jobs.py's job_env), and two settings the project does not export.
ELSEWHERE = ("in the image image.sif, the reference in no image it names; NCCL_ENABLE_DMABUF_SUPPORT unset, the "
             "reference NCCL_ENABLE_DMABUF_SUPPORT=1; NCCL_NET_GDR_LEVEL unset, the reference NCCL_NET_GDR_LEVEL=3")


# OFI-then-Socket is judged by the same check (project-templates/project/tests/test_collective_net.py)
# and stops a training job on the local Slurm (tests/test_slurm_jobs.py): one 2-node job less here.
@pytest.mark.parametrize("line, busbw, state", [
    (OFI, "81.18", "COMPLETED"), (OFI, "80.50", "FAILED"), (SOCKET, "81.18", "FAILED"),
    (TCP_PROVIDER, "81.18", "FAILED")],
    ids=["slingshot", "slow", "tcp", "tcp-provider"])
def test_image_all_reduce_perf_is_preferred_and_tcp_fails_the_job(slurm_cluster_2nodes, template, tmp_path, site_root,
                                                                  line, busbw, state):
    """A LUMI project on 2 nodes x 8 GPUs (LAIF image): the image's all_reduce_perf runs as
    one MPI job (srun --mpi=pmi2) with the options of LUMI's own RCCL check, RCCL logs one
    file per rank, and the job reports the bandwidth, and fails when RCCL's final choice is
    not the cxi provider [WS-09]. LUMI's check measured its 85 GB/s of in-place busbw at
    128 MiB on 2 nodes outside any container, with settings the job lacks [RF-RCCL]: in the
    image, both figures and no verdict. A site whose figure was measured in this image with
    settings the job has (here: the project's values.sh says so) gets one: it fails below
    85 GB/s less 5 % (80.75 GB/s)."""
    project = render(template, tmp_path / "p", nodes=2)
    if busbw == "80.50":
        values = project / "scripts/values.sh"
        text = values.read_text()
        for name, value in (("image", "'image.sif'"), ("env", "('NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3')")):
            text, found = re.subn(rf"^preflight_reference_{name}=.*$", f"preflight_reference_{name}={value}", text,
                                  flags=re.M)
            assert found == 1, text
        values.write_text(text)
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, FAKE_RCCL_LINE=line, FAKE_BUSBW_128M=busbw)
    env.update(image_with_all_reduce_perf(tmp_path, env))
    job_id, result = run_job(slurm_cluster_2nodes, project, env, "jobs/preflight.sbatch", timeout=300)
    log = log_of(project, job_id)
    assert result.state == state, log
    bench = re.search(r"^preflight: all_reduce_perf in the image: (\S+)$", log, re.M)
    assert bench and bench.group(1) == str(tmp_path / "image-bin" / "all_reduce_perf"), log
    assert "allreduce_bench.py" not in log.replace("scripts/lib/allreduce_bench.py instead", "")
    for rank in range(16):
        path = tmp_path / "outputs" / "logs" / f"rccl-{job_id}-rank{rank}.txt"
        # On TCP rank 0's watcher may stop the step before another rank has written its log
        # (seen in CI: rank 1's was missing, and once empty); rank 0's own is always there.
        if line == OFI or rank == 0:
            assert path.read_text().strip() == line, log
        elif path.exists():
            assert line.startswith(path.read_text().strip()), (path, log)
    if line == OFI:  # (on TCP, rank 0's watcher may stop the benchmark before it prints)
        # (each with the whole log as its message: pytest shortens a long string in the middle)
        assert ran(tmp_path) == ("# fake all_reduce_perf -b 2M -e 2048M -f 2 -g 1 -z 1 -t 1 -R 1 -n 80 -w 5 -d half "
                                 "NCCL_DEBUG_SUBSYS=INIT,NET\n"), log
        assert "preflight: 2 nodes, 16 ranks (16 in the benchmark's table)" in log, log
        assert "preflight: bus bandwidth 1024 MiB: 19.75 GB/s (largest message), average 19.2500 GB/s" in log, log
        assert "preflight: RCCL uses Slingshot (aws-ofi-rccl plugin, cxi provider) between nodes" in log, log
        if state == "FAILED":  # (measured as the reference: its share of it)
            assert f"preflight: bus bandwidth at 128 MiB (in-place): 80.5 GB/s, 95% of {REFERENCE}" in log
    if state == "COMPLETED":
        warning = [line for line in log.splitlines() if line.startswith("WARNING: preflight: no verdict:")]
        assert warning == [f"WARNING: preflight: no verdict: 81.18 GB/s in-place busbw at 128 MiB beside {REFERENCE}, "
                           "the in-place busbw of all_reduce_perf -b 2M -e 2048M -f 2 -g 1 -z 1 -t 1 -R 1 -n 80 -w 5 "
                           f"-d half: this run differs ({ELSEWHERE})."], log
        assert "PASS" not in log and "FAIL" not in log
    elif line == OFI:
        assert f"ERROR: preflight: FAIL: 80.5 GB/s at 128 MiB is below 80.75 GB/s (5 % below {REFERENCE})" in log
    else:
        assert re.search(r"^ERROR: RCCL talks between nodes over TCP sockets, not Slingshot .*: (16|1) rank\(s\), "
                         r"e\.g\. \S+/logs/rccl-\d+-rank\d+\.txt \('Using network .+'\)\. "
                         r"Fix: the image must ship aws-ofi-rccl", log, re.M), log
        assert "RCCL uses Slingshot" not in log  # (1 rank: rank 0's watcher stopped the benchmark first)


def test_arguments_of_your_own_give_both_figures_and_no_verdict(slurm_cluster_2nodes, template, tmp_path, site_root):
    """-n 5 is not how LUMI's check measured: however low the figure, one WARNING line with
    both figures, and the job passes on Slingshot."""
    project = render(template, tmp_path / "p", nodes=2)
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, FAKE_RCCL_LINE=OFI, FAKE_BUSBW_128M="40.00")
    env.update(image_with_all_reduce_perf(tmp_path, env))
    job_id, result = run_job(slurm_cluster_2nodes, project, env, "jobs/preflight.sbatch", "-n", "5", timeout=300)
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert ran(tmp_path).startswith("# fake all_reduce_perf -b 2M -e 2048M -f 2 -g 1 -z 1 -t 1 -R 1 -n 80 -w 5 -d half -n 5 ")
    warning = [line for line in log.splitlines() if line.startswith("WARNING: preflight: no verdict:")]
    assert warning == [f"WARNING: preflight: no verdict: 40 GB/s in-place busbw at 128 MiB beside {REFERENCE}, the "
                       "in-place busbw of all_reduce_perf -b 2M -e 2048M -f 2 -g 1 -z 1 -t 1 -R 1 -n 80 -w 5 -d half: "
                       "this run differs (options -b 2M -e 2048M -f 2 -g 1 -z 1 -t 1 -R 1 -n 80 -w 5 -d half -n 5; "
                       f"{ELSEWHERE})."], log
    assert "PASS" not in log and "FAIL" not in log


# The usage of an rccl-tests without -R (its options as ROCm/rccl-tests' src/common.cu of
# commit 043eef6 lists them)
OLD_USAGE = ("USAGE: all_reduce_perf [-t,--nthreads <num threads>] [-g,--ngpus <gpus per thread>] "
             "[-b,--minbytes <min size in bytes>] [-e,--maxbytes <max size in bytes>] [-i,--stepbytes <increment size>] "
             "[-f,--stepfactor <increment factor>] [-n,--iters <iteration count>] "
             "[-m,--agg_iters <aggregated iteration count>] [-w,--warmup_iters <warmup iteration count>] "
             "[-p,--parallel_init <0/1>] [-c,--check <0/1>] [-o,--op <sum/prod/min/max/all>] "
             "[-d,--datatype <nccltype/all>] [-r,--root <root>] [-z,--blocking <0/1>] "
             "[-y,--memory_type <coarse/fine/host>] [-h,--help]")


def test_an_option_the_image_lacks_is_left_out_with_no_verdict(slurm_cluster_2nodes, template, tmp_path, site_root):
    """An rccl-tests without -R (LUMI's check runs with -R 1 [RF-RCCL]): the benchmark runs
    without it rather than stop at "invalid option", and gives its figure with no verdict."""
    project = render(template, tmp_path / "p", nodes=2)
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, FAKE_RCCL_LINE=OFI, FAKE_USAGE=OLD_USAGE)
    env.update(image_with_all_reduce_perf(tmp_path, env))
    job_id, result = run_job(slurm_cluster_2nodes, project, env, "jobs/preflight.sbatch", timeout=300)
    log = log_of(project, job_id)
    assert result.state == "COMPLETED", log
    assert f"preflight: {tmp_path}/image-bin/all_reduce_perf has no -R option: left out" in log
    assert ran(tmp_path).startswith("# fake all_reduce_perf -b 2M -e 2048M -f 2 -g 1 -z 1 -t 1 -n 80 -w 5 -d half NCCL_DEBUG_SUBSYS")
    assert f"this run differs (options -b 2M -e 2048M -f 2 -g 1 -z 1 -t 1 -n 80 -w 5 -d half; {ELSEWHERE})." in log
    assert "PASS" not in log


def test_all_reduce_perf_started_without_mpi_is_refused(slurm_cluster_2nodes, template, tmp_path, site_root):
    """An image whose generation gives no MPI launch (the former LUST images): 16 singleton
    all_reduce_perf processes are no measurement; the job says so and how to get one."""
    project = render(template, tmp_path / "p", nodes=2, container="lust-pytorch-2.7.1")
    assert "\npreflight_mpi=()\n" in (project / "scripts/values.sh").read_text()
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, FAKE_RCCL_LINE=OFI)
    env.update(image_with_all_reduce_perf(tmp_path, env))
    image = Path(env["FAKE_SINGULARITY_IMAGE_ENV"])
    image.write_text(image.read_text() + "WITH_CONDA=true\n")  # the former images' activation
    job_id, result = run_job(slurm_cluster_2nodes, project, env, "jobs/preflight.sbatch", timeout=300)
    log = log_of(project, job_id)
    assert result.state == "FAILED", log
    assert "ERROR: the benchmark ran as 1 group(s), not one of 16 ranks" in log and "ALL_REDUCE_PERF=none" in log


def test_a_setting_known_to_be_bad_with_the_image_stops_jobs_before_they_queue_or_stage(slurm_cluster_2nodes, template,
                                                                                         tmp_path, site_root):
    """NCCL_NET_GDR_LEVEL=PHB in the submitting shell, which a LAIF image's known issue leaves
    out of the project [LAIF-I30]: the preflight stops before its benchmark, and a chain of
    2 with pre-staging stops before it queues its next job or stages anything."""
    project = render(template, tmp_path / "p", nodes=2, prestage=True)
    env = job_env(slurm_cluster_2nodes, tmp_path, site_root, FAKE_RCCL_LINE=OFI, NCCL_NET_GDR_LEVEL="PHB")
    env.update(image_with_all_reduce_perf(tmp_path, env))
    for job_file, extra in (("jobs/preflight.sbatch", {}), ("jobs/train.sbatch", {"CHAIN": "2"})):
        job_id = slurm_cluster_2nodes.sbatch([job_file], cwd=project, env={**env, **extra})
        result = slurm_cluster_2nodes.wait(job_id, timeout=120)
        log = log_of(project, job_id)
        assert result.state == "FAILED", log
        assert "NCCL_NET_GDR_LEVEL=PHB is set, and it is known to be bad with this image: exporting it (PHB or SYS)" \
               in log, log
        # (no archive is given: staging would fail with its own "prestage: ..." line)
        assert "step:" not in log and "chain:" not in log and "prestage:" not in log, log
