"""What a job takes from its nodes and leaves on them (scripts/lib/nodes.sh): the energy its
nodes used, read outside the container at the job's start and end into the job report, and
no directory of the job left in the nodes' node-local storage, after a clean job and after a
cancelled one. On the local Slurm with 2 emulated nodes; the nodes' energy counters are a
directory of the test in HPE Cray EX's pm_counters format (ENERGY_COUNTERS), and the
training command a stand-in that writes into the job's node-local directories and, as a busy
node would, makes the counters grow. The parsing itself: pure-Python tests below.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from lumi_scaffold.plugins import get_catalogue

from .helpers import load_module, render
from .jobs import job_env, log_of, run_job

LOCAL = {"site": "local", "account": "local", "partition": "batch", "gpus_per_node": 2}
JOBFILES = Path(__file__).resolve().parents[1] / "project-templates/project/scripts/lib/python/jobfiles.py"

# The counter files as HPE Cray EX nodes show them: "<joules> J <microseconds> us" [HPE-PM];
# freshness and generation a count.
START = {"energy": 5000, "accel0_energy": 1000, "accel1_energy": 1100, "cpu_energy": 700, "memory_energy": 300}
USED = {"energy": 3600, "accel0_energy": 1500, "accel1_energy": 1400, "cpu_energy": 400, "memory_energy": 100}

# TEST STAND-IN for the training: every rank puts a file into its TMPDIR (Python's tempfile) and
# into its node's kernel caches, says so, and waits; rank 0 makes the nodes' counters grow.
STAND_IN = """import os, tempfile, time
rank = os.environ["RANK"]
tempfile.mkstemp()
for var in ("MIOPEN_USER_DB_PATH", "TRITON_CACHE_DIR"):
    os.makedirs(os.environ[var], exist_ok=True)
    open(os.path.join(os.environ[var], "kernel-" + rank), "w").close()
counters = os.environ.get("ENERGY_COUNTERS", "")
if rank == "0" and counters:
    used = {used!r}
    for name, joules in {start!r}.items():
        with open(os.path.join(counters, name), "w") as f:
            f.write("%d J 1734094400000000 us\\n" % (joules + used[name]))
    with open(os.path.join(counters, "freshness"), "w") as f:
        f.write("1600\\n")
print("rank %s wrote its node-local files" % rank, flush=True)
time.sleep(float(os.environ.get("FAKE_TRAIN_SECONDS", "0")))
""".format(start=START, used=USED)


def fake_counters(directory: Path) -> Path:
    directory.mkdir()
    for name, joules in START.items():
        (directory / name).write_text(f"{joules} J 1734094386462336 us\n")
    (directory / "freshness").write_text("1000\n")
    (directory / "generation").write_text("3\n")
    return directory


def left_on_nodes(node_tmp: Path, job: int) -> list[str]:
    return sorted(p.name for p in node_tmp.iterdir() if str(job) in p.name)


def test_jobs_report_their_energy_and_leave_nothing_on_the_nodes(slurm_cluster_local2n, template, tmp_path, site_root,
                                                                   dataset):
    if "local" not in get_catalogue().sites:
        pytest.skip("plugins/lumi-site-local is not installed")
    cluster = slurm_cluster_local2n
    project = render(template, tmp_path / "p", **LOCAL, nodes=2, prestage=True, dataset_archive=str(dataset[1]))
    (project / "src/demo/train.py").write_text(STAND_IN)
    # The emulated nodes' node-local storage: a directory of this test (run.sh's TMPDIR and the
    # kernel caches' directories under node_tmp, the staged data under NODE_TMP).
    node_tmp = tmp_path / "node-local"
    node_tmp.mkdir()
    values = project / "scripts/values.sh"
    text = values.read_text()
    assert "\nenergy_counters=''\n" in text  # the local site names no counters
    values.write_text(text.replace("/tmp/${USER}-", f"{node_tmp}/${{USER}}-").replace(
        "\nnode_tmp='/tmp'\n", f"\nnode_tmp='{node_tmp}'\n"))
    env = job_env(cluster, tmp_path, site_root, NODE_TMP=str(node_tmp))
    reports = tmp_path / "outputs/demo/reports"

    # A clean job on nodes with counters: each node's energy between the job's start and end.
    counters = fake_counters(tmp_path / "pm_counters")
    job, result = run_job(cluster, project, {**env, "ENERGY_COUNTERS": str(counters)}, "jobs/train.sbatch", timeout=300)
    log = log_of(project, job)
    assert result.state == "COMPLETED", log
    assert log.count("wrote its node-local files") == 4 and "prestage: node 1: extracted" in log, log
    energy = json.loads((reports / f"{job}.json").read_text())["energy"]
    nodes = {"nid005000", "nid005001"}  # (both emulated nodes read the one directory)
    parts = {name: joules for name, joules in USED.items() if name != "energy"}
    assert energy["nodes"].keys() == nodes and energy["counters"] == str(counters), energy
    for figures in energy["nodes"].values():
        assert figures["joules"] == USED["energy"] and figures["parts"] == parts and figures["seconds"] >= 0, energy
    assert energy["joules"] == 2 * USED["energy"] and "not_measured" not in energy, energy
    assert re.search(rf"^energy: job {job}: 0\.002 kWh on 2 node\(s\) \(7,200 J; nid005000 3,600 J, nid005001 3,600 J\)$",
                     log, re.M), log
    assert left_on_nodes(node_tmp, job) == [], left_on_nodes(node_tmp, job)
    assert not (project / f"logs/nodes-{job}").exists()

    # A job cancelled while it trains, on nodes without counters: its directories were there
    # while it ran, none is left, and its report says the energy was not measured.
    job = cluster.sbatch(["jobs/train.sbatch"], cwd=project, env={**env, "FAKE_TRAIN_SECONDS": "300"})
    deadline = time.monotonic() + 180
    while log_of(project, job).count("wrote its node-local files") < 4:
        assert time.monotonic() < deadline, log_of(project, job)
        time.sleep(1)
    there = left_on_nodes(node_tmp, job)
    assert len([d for d in there if "-tmp-" in d]) == 2 and len([d for d in there if "-miopen-" in d]) == 2, there
    cluster.run(["scancel", str(job)], check=True)
    result = cluster.wait(job, timeout=120)
    log = log_of(project, job)
    assert result.state == "CANCELLED", log
    assert left_on_nodes(node_tmp, job) == [], left_on_nodes(node_tmp, job)
    report = json.loads((reports / f"{job}.json").read_text())
    assert report["ended"] == "cancelled" and report["energy"]["joules"] is None, report
    assert report["energy"]["not_measured"].startswith("not measured: the site names no energy counters"), report
    assert f"energy: job {job}: not measured: the site names no energy counters" in log, log
    assert not (project / f"logs/nodes-{job}").exists()

    # The same job on one node (sbatch --nodes=1), cancelled, on nodes with counters: the batch
    # shell reads and cleans its own node, with no helper step and no guard.
    counters = fake_counters(tmp_path / "pm_counters-one-node")
    job = cluster.sbatch(["--nodes=1", "jobs/train.sbatch"], cwd=project,
                         env={**env, "FAKE_TRAIN_SECONDS": "300", "ENERGY_COUNTERS": str(counters)})
    deadline = time.monotonic() + 180
    while log_of(project, job).count("wrote its node-local files") < 2:
        assert time.monotonic() < deadline, log_of(project, job)
        time.sleep(1)
    assert [d for d in left_on_nodes(node_tmp, job) if "-tmp-" in d], left_on_nodes(node_tmp, job)
    cluster.run(["scancel", str(job)], check=True)
    assert cluster.wait(job, timeout=120).state == "CANCELLED"
    assert left_on_nodes(node_tmp, job) == [], left_on_nodes(node_tmp, job)
    energy = json.loads((reports / f"{job}.json").read_text())["energy"]
    assert energy["nodes"].keys() == {"nid005000"} and energy["joules"] == USED["energy"], energy


# ------------------------------------------------------------------ parsing (pure Python)

def record(when: int, **files: str) -> str:
    return "".join([f"time {when}\n", *(f"{name} {line}\n" for name, line in files.items())])


@pytest.fixture(scope="module")
def jobfiles():
    return load_module("jobfiles_energy", JOBFILES)


def test_counter_records_are_read_in_joules(jobfiles):
    read = jobfiles.read_counters(record(100, energy="123456 J 1734094386462336 us", accel0_energy="7 J 1 us",
                                         freshness="42", generation="3"))
    assert read == {"time": 100, "energy": 123456, "accel0_energy": 7, "freshness": 42, "generation": 3, "error": ""}
    assert jobfiles.read_counters(record(1, energy="123 W 1 us"))["error"] == "energy: '123 W 1 us' is not in joules"
    assert jobfiles.read_counters(record(1, energy="n/a"))["error"] == "energy: 'n/a' is not a count"
    assert jobfiles.read_counters("time 1\nerror /x is not a directory on nid1\n")["error"] == "/x is not a directory on nid1"


@pytest.mark.parametrize("start, end, why", [
    ({"freshness": "5"}, {"freshness": "5"}, "the counters were not updated during the job (freshness unchanged)"),
    ({"startup": "1"}, {"startup": "2"}, "the counters restarted during the job (startup changed)"),
    ({"energy": "900 J 1 us"}, {}, "a counter went back during the job"),
])
def test_a_node_whose_counters_cannot_be_trusted_is_not_measured(jobfiles, start, end, why):
    base = {"energy": "500 J 1 us", "cpu_energy": "10 J 1 us"}
    first = jobfiles.read_counters(record(0, **{**base, **start}))
    last = jobfiles.read_counters(record(60, **{**base, "energy": "800 J 2 us", "cpu_energy": "40 J 2 us", **end}))
    assert jobfiles.node_energy(first, last) == (None, why)
    good = jobfiles.node_energy(jobfiles.read_counters(record(0, **base)), jobfiles.read_counters(
        record(60, energy="800 J 2 us", cpu_energy="40 J 2 us")))
    assert good == ({"joules": 300, "parts": {"cpu_energy": 30}, "seconds": 60}, "")


def test_energy_is_not_measured_unless_every_node_was_read(jobfiles, tmp_path):
    assert jobfiles.energy(str(tmp_path), "", 2)["not_measured"].startswith("not measured: the site names no energy")
    (tmp_path / "nid1.start").write_text(record(0, energy="10 J 1 us"))
    (tmp_path / "nid1.end").write_text(record(9, energy="40 J 2 us"))
    (tmp_path / "nid2.start").write_text(record(0, energy="10 J 1 us"))
    figures = jobfiles.energy(str(tmp_path), "/sys/cray/pm_counters", 3)
    assert figures["joules"] is None and figures["nodes"]["nid1"]["joules"] == 30, figures
    assert figures["not_measured"] == ("not measured: nid2: no reading at the job's end; "
                                       "readings from 2 of the job's 3 node(s)")
    assert jobfiles.energy_text(figures) == figures["not_measured"] and jobfiles.energy_text(None) == "not measured"
    (tmp_path / "nid2.end").write_text(record(9, energy="50 J 2 us"))
    figures = jobfiles.energy(str(tmp_path), "/sys/cray/pm_counters", 2)
    assert figures["joules"] == 70 and "not_measured" not in figures
    assert jobfiles.energy_text(figures) == "0.000 kWh on 2 node(s) (70 J; nid1 30 J, nid2 40 J)"


def test_a_job_removes_only_its_own_node_local_directories(template, tmp_path):
    """nodes.sh removes a directory only where its name holds the job id: another job's
    TMPDIR, and a cache directory the site names per node only (the workshop's MIOpen cache
    without the job id), stay; KEEP_NODE_TMP=1 keeps them all."""
    import os
    import subprocess

    project = render(template, tmp_path / "p", prestage=True)
    node_tmp = tmp_path / "node-local"
    node_tmp.mkdir()
    values = project / "scripts/values.sh"
    text = values.read_text().replace("\nnode_tmp='/tmp'\n", f"\nnode_tmp='{node_tmp}'\n")
    text = text.replace("miopen_cache='/tmp/${USER}-miopen-cache-${SLURM_JOB_ID}-${SLURM_NODEID}'",
                        f"miopen_cache='{node_tmp}/${{USER}}-miopen-cache-${{SLURM_NODEID}}'")
    values.write_text(text.replace("/tmp/${USER}-", f"{node_tmp}/${{USER}}-"))
    made = ["u-tmp-77-0", "u-tmp-78-0", "u-miopen-cache-0", "u-triton-cache-77-0", "u-inductor-cache-77-0", "u-demo-77"]
    for name in made:
        (node_tmp / name / "sub").mkdir(parents=True)
    env = {**os.environ, "USER": "u", "SLURM_JOB_ID": "77", "SLURM_NODEID": "0", "STAGE_DIR": str(node_tmp / "u-demo-77"),
           "ENERGY_COUNTERS": "", "LUMI_SCAFFOLD_NODE_RECORDS": ""}
    kept = subprocess.run(["bash", "scripts/lib/nodes.sh", "end"], cwd=project, env={**env, "KEEP_NODE_TMP": "1"},
                          capture_output=True, text=True)
    assert kept.returncode == 0 and sorted(p.name for p in node_tmp.iterdir()) == sorted(made), kept.stderr
    ended = subprocess.run(["bash", "scripts/lib/nodes.sh", "end"], cwd=project, env=env, capture_output=True, text=True)
    assert ended.returncode == 0 and ended.stdout == ended.stderr == "", ended.stderr
    assert sorted(p.name for p in node_tmp.iterdir()) == ["u-miopen-cache-0", "u-tmp-78-0"]
