"""What generated jobs DO, for every job kind, launcher and framework (the behavioural matrix).

Each case renders a project, replaces its training script and smoke test with
tests/behaviour/probe.py, and submits the project's own job files to the local Slurm through
the stand-in container: the real sbatch headers, job-env.sh, run.sh, run-profile.sh and
prestage.sh run; only the Python program is the probe. Every process the job starts writes
one record of its world (rank, local rank, world size, GCD, CPUs, workers, data, output
directory, environment, profiler), and the tests below assert on those records.

Two clusters: LUMI shapes (2 nodes x 64 advertised CPUs x 8 GPUs, task/none: masks are
checked as requested, since this machine has 2 CPUs) and the local site (2 nodes x 2 real
CPUs, task/affinity: binding is real and checked in each process's affinity).

The full product (site shape x launcher x framework x container x pre-staging x profiler x
job kind) is too large for CI; CASES samples it so that every launcher x job kind x framework
triple and every shape, pre-stage and profiler value occurs (test_cases_cover_the_pairs).
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from lumi_scaffold import plugins
from lumi_scaffold.plugins import get_catalogue
from lumi_scaffold.script_contract import job_command

from .helpers import DEFAULTS, render
from .jobs import image_env, job_env, log_of
from .venvs import nested_venv

pytestmark = pytest.mark.slurm

PROBE = Path(__file__).parent / "behaviour" / "probe.py"
ACCOUNT = "project_465001234"  # a LUMI project, not the example (whose smoke job sbatch refuses)
KINDS = ("smoke", "train", "train2", "profile", "interactive")


@dataclass(frozen=True)
class Case:
    name: str
    answers: dict[str, Any]
    kinds: tuple[str, ...]
    cluster: str = "lumi"  # "lumi": LUMI shapes, task/none; "local": the local site, real binding
    venv: bool = False  # give the project a venv (scripts/lib/run.sh activates it)

    @property
    def framework(self) -> str:
        return self.answers.get("framework", "pytorch")

    @property
    def launcher(self) -> str:
        return self.answers.get("launcher", "srun")


LEGACY_PT = {"container": "lust-pytorch-2.7.1"}  # torchrun without --numa-binding (PyTorch 2.7)
CASES = [
    # PyTorch, srun
    Case("pt-srun-node", {}, ("smoke", "train", "train2", "interactive"), venv=True),
    Case("pt-srun-2node-prestage-rocprofv3", {"nodes": 2, "prestage": True, "profiler": "rocprofv3", "profile_rank": 9},
         ("train", "profile")),
    Case("pt-srun-1gcd-framework", {"gpus_per_node": 1, "profiler": "framework"}, ("smoke", "train", "profile")),
    Case("pt-srun-partial-legacy-prestage", {"gpus_per_node": 4, "prestage": True, **LEGACY_PT}, ("train", "interactive")),
    Case("pt-srun-node-smallg-custom", {"partition": "small-g", "container": "custom", "profiler": "rocprof",
                                        "profile_rank": 7}, ("profile",)),
    # PyTorch, torchrun
    Case("pt-torchrun-node-rocprof", {"launcher": "torchrun", "profiler": "rocprof", "profile_rank": 5, **LEGACY_PT},
         ("smoke", "train", "train2", "profile", "interactive"), venv=True),
    Case("pt-torchrun-2node-prestage-framework", {"launcher": "torchrun", "nodes": 2, "container": "custom",
                                                  "prestage": True, "profiler": "framework", "profile_rank": 12},
         ("train", "profile")),
    Case("pt-torchrun-partial-cotainr-rocprofv3", {"launcher": "torchrun", "gpus_per_node": 4, "container": "cotainr",
                                                   "profiler": "rocprofv3", "profile_rank": 2}, ("train", "profile")),
    Case("pt-torchrun-1gcd-prestage", {"launcher": "torchrun", "gpus_per_node": 1, "prestage": True, **LEGACY_PT},
         ("train", "interactive")),
    # JAX (srun only)
    Case("jax-srun-node-rocprofv3", {"framework": "jax", "profiler": "rocprofv3", "profile_rank": 3},
         ("smoke", "train", "profile", "interactive")),
    Case("jax-srun-2node-prestage-framework", {"framework": "jax", "nodes": 2, "prestage": True,
                                               "profiler": "framework", "profile_rank": 15}, ("train", "profile")),
    Case("jax-srun-1gcd-prestage-rocprof", {"framework": "jax", "gpus_per_node": 1, "prestage": True,
                                            "profiler": "rocprof"}, ("smoke", "train", "profile")),
    Case("jax-srun-partial-legacy", {"framework": "jax", "gpus_per_node": 4, "container": "lust-jax-0.4.28"},
         ("train", "train2")),
    # DeepSpeed (the example plugin; srun only)
    Case("ds-srun-node-prestage-framework", {"framework": "deepspeed", "prestage": True, "profiler": "framework",
                                             "profile_rank": 6}, ("smoke", "train", "profile", "interactive")),
    Case("ds-srun-2node-rocprofv3", {"framework": "deepspeed", "nodes": 2, "profiler": "rocprofv3", "profile_rank": 8},
         ("train", "profile")),
    Case("ds-srun-partial-prestage", {"framework": "deepspeed", "gpus_per_node": 4, "prestage": True},
         ("smoke", "train")),
    # The local site: real CPU binding on two nodes with 2 CPUs each.
    Case("local-pt-srun-node", {"site": "local", "account": "local", "partition": "batch", "gpus_per_node": 2},
         ("train",), cluster="local"),
    Case("local-pt-srun-2node-prestage-rocprof", {"site": "local", "account": "local", "partition": "batch",
                                                  "nodes": 2, "gpus_per_node": 2, "prestage": True,
                                                  "profiler": "rocprof", "profile_rank": 3},
         ("train", "profile"), cluster="local"),
    Case("local-pt-torchrun-2node", {"site": "local", "account": "local", "partition": "batch", "nodes": 2,
                                     "gpus_per_node": 2, "launcher": "torchrun"}, ("train",), cluster="local"),
    Case("local-jax-srun-2node", {"site": "local", "account": "local", "partition": "batch", "nodes": 2,
                                  "gpus_per_node": 2, "framework": "jax"}, ("train",), cluster="local"),
]
RUNS = [(case, kind) for case in CASES for kind in case.kinds]


@dataclass
class Run:
    case: Case
    kind: str
    project: Path
    env: dict[str, str]
    answers: dict[str, Any]
    job_id: int | None = None
    state: str = ""
    log: str = ""
    records: list[dict[str, Any]] = field(default_factory=list)

    @functools.cached_property
    def plugin_data(self) -> dict[str, Any]:
        return yaml.safe_load((self.project / ".copier-answers.yml").read_text())["plugin_data"]


def _answers(case: Case, dataset_archive: Path) -> dict[str, Any]:
    answers = {"account": ACCOUNT, **case.answers}  # (the example account's smoke job is not submitted)
    if answers.get("prestage"):
        answers["dataset_archive"] = str(dataset_archive)
    if answers.get("container") == "custom":
        answers["container_path"] = f"/project/{ACCOUNT}/containers/demo.sif"
    return answers


def _probe_project(template: Path, dest: Path, answers: dict[str, Any]) -> Path:
    project = render(template, dest, **answers)
    package = project / "src" / DEFAULTS["project_name"].replace("-", "_")
    for script in ("train.py", "smoke_test.py"):
        shutil.copyfile(PROBE, package / script)
    return project


def _submit(cluster, run: Run) -> subprocess.Popen | None:
    """Submit one run; interactive runs start salloc in the background (returned)."""
    if run.kind == "interactive":
        # What a user does: an allocation in the training shape, then the training job's own
        # script run directly inside it (README, jobs/interactive.sh).
        return subprocess.Popen(["bash", "jobs/interactive.sh", "bash", "jobs/train.sbatch", "--steps", "1"],
                                cwd=run.project, env=run.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
    script = {"smoke": "jobs/smoke-test.sbatch", "profile": "jobs/profile.sbatch"}.get(run.kind, "jobs/train.sbatch")
    args = [] if run.kind == "smoke" else ["--steps", "1"]
    run.job_id = cluster.sbatch([script, *args], cwd=run.project, env=run.env)
    return None


def _run_all(clusters: dict[str, Any], runs: dict[str, list[Run]], timeout: float = 420) -> None:
    """Submit every run to its cluster at once (Slurm packs them onto the nodes, and the
    clusters run side by side), then wait for all."""
    background = {id(run): _submit(clusters[name], run) for name in clusters for run in runs[name]}
    deadline = time.monotonic() + timeout
    for cluster, run in [(clusters[name], run) for name in clusters for run in runs[name]]:
        proc = background[id(run)]
        if proc is not None:
            try:
                run.log, _ = proc.communicate(timeout=max(deadline - time.monotonic(), 1))
            except subprocess.TimeoutExpired:
                proc.kill()
                run.log, _ = proc.communicate()
            run.state = "COMPLETED" if proc.returncode == 0 else f"FAILED rc={proc.returncode}"
            match = re.search(r"Granted job allocation (\d+)", run.log)
            run.job_id = int(match.group(1)) if match else None
        else:
            result = cluster.wait(run.job_id, timeout=max(deadline - time.monotonic(), 1))
            run.state = result.state if result.exit_code == 0 else f"{result.state} rc={result.exit_code}"
            run.log = log_of(run.project, run.job_id)
        probe_dir = Path(run.env["PROBE_DIR"])
        run.records = [json.loads(p.read_text()) for p in sorted(probe_dir.glob("*.json"))]


@pytest.fixture(scope="module")
def runs(template, tmp_path_factory, request, slurm_cluster_2nodes, dataset, site_root) -> dict[tuple[str, str], Run]:
    """Every (case, kind) of CASES, run on its cluster; keyed by (case name, kind)."""
    data_dir, archive = dataset
    with pytest.MonkeyPatch.context() as mp:
        # The DeepSpeed example plugin takes part here (tests/conftest.py disables it elsewhere).
        mp.setenv(plugins.ENV_DISABLE, "lumi-site-frontier,lumi-site-leonardo")
        mp.delenv(plugins.ENV_LOAD, raising=False)
        plugins.reset()
        catalogue = get_catalogue()
        wanted = [c for c in CASES if c.framework in catalogue.frameworks
                  and c.answers.get("site", "lumi") in catalogue.sites]
        projects = {}
        for case in wanted:
            work = tmp_path_factory.mktemp(case.name)
            projects[case.name] = (work, _probe_project(template, work / "demo", _answers(case, archive)))
    plugins.reset()
    clusters = {"lumi": slurm_cluster_2nodes}
    if any(c.cluster == "local" for c in wanted):
        clusters["local"] = request.getfixturevalue("slurm_cluster_local2n")
    by_cluster: dict[str, list[Run]] = {name: [] for name in clusters}
    out: dict[tuple[str, str], Run] = {}
    for case in wanted:
        work, project = projects[case.name]
        if case.venv:
            nested_venv(project / "venv")
        for kind in case.kinds:
            probe_dir = work / "probe" / kind
            probe_dir.mkdir(parents=True)
            env = job_env(clusters[case.cluster], work, site_root, PROBE_DIR=str(probe_dir), DATA_DIR=str(data_dir),
                          RCCL_DEBUG_FILES="1", **image_env(work, WITH_CONDA="export PROBE_ACTIVATED=1"))
            run = Run(case, kind, project, env, _answers(case, archive))
            by_cluster[case.cluster].append(run)
            out[(case.name, kind)] = run
    started = time.monotonic()
    _run_all(clusters, by_cluster)
    print(f"behaviour matrix: {len(out)} runs in {time.monotonic() - started:.0f} s")
    return out


# ------------------------------------------------------------------ expectations


def _expected_ranks(run: Run) -> int:
    if run.kind == "smoke":
        return 1
    return int(run.answers.get("nodes", 1)) * int(run.answers.get("gpus_per_node", _site_gpus(run)))


def _site_gpus(run: Run) -> int:
    return run.plugin_data["site"]["gpus_per_node"]


def _world(run: Run, record: dict[str, Any]) -> dict[str, Any]:
    """The record's world as the case's framework reads it."""
    return record["jax" if run.case.framework == "jax" else "torch"]


def _mask_cpus(mask: str) -> list[int]:
    bits = int(mask, 16)
    return [cpu for cpu in range(bits.bit_length()) if bits >> cpu & 1]


def _get(runs, case: Case, kind: str) -> Run:
    run = runs.get((case.name, kind))
    if run is None:
        pytest.skip(f"{case.name}: its framework or site plugin is not installed")
    return run


def _ids(item) -> str:
    return f"{item[0].name}:{item[1]}"


@pytest.mark.parametrize("case,kind", RUNS, ids=[_ids(r) for r in RUNS])
def test_every_rank_runs_once_with_its_own_world(runs, case, kind):
    run = _get(runs, case, kind)
    assert run.state == "COMPLETED", f"{run.state}\n{run.log}"
    n = _expected_ranks(run)
    worlds = [_world(run, r) for r in run.records]
    assert sorted(w["rank"] for w in worlds) == list(range(n)), (
        f"ranks seen: {[(w['rank'], w['world'], w['local_rank']) for w in worlds]}\n{run.log}")
    assert {w["world"] for w in worlds} == {n}
    nodes = int(run.answers.get("nodes", 1)) if kind != "smoke" else 1
    assert len({r["node"] for r in run.records}) == nodes
    per_node = n // nodes
    for node in {r["node"] for r in run.records}:
        here = [_world(run, r) for r in run.records if r["node"] == node]
        assert sorted(w["local_rank"] for w in here) == list(range(per_node)), node
        gcds = [w["gcd"] for w in here]
        assert None not in gcds and len(set(gcds)) == per_node, f"GCDs on {node}: {gcds}"


@pytest.mark.parametrize("case,kind", RUNS, ids=[_ids(r) for r in RUNS])
def test_cpus_and_workers_per_rank(runs, case, kind):
    run = _get(runs, case, kind)
    site = run.plugin_data["site"]
    whole_node = int(run.answers.get("gpus_per_node", site["gpus_per_node"])) == site["gpus_per_node"]
    for record in run.records:
        # DataLoader workers: the cores this rank owns minus one, whatever the launcher. [AIG-05]
        assert record["workers"] == site["cpus_per_gpu"] - 1, (record["workers"], record["env"].get("SLURM_CPUS_PER_TASK"))
    if kind == "smoke" or case.launcher != "srun" or not whole_node:
        return
    masks = site["cpu_masks"]
    for record in run.records:
        bind = record["env"].get("SLURM_CPU_BIND_LIST", "")
        assert [int(m, 16) for m in bind.split(",") if m] == [int(m, 16) for m in masks], bind
    if case.cluster == "local":  # task/affinity: the binding is real
        for node in {r["node"] for r in run.records}:
            here = sorted((r for r in run.records if r["node"] == node), key=lambda r: _world(run, r)["local_rank"])
            assert [r["affinity"] for r in here] == [_mask_cpus(m) for m in masks[: len(here)]]


@pytest.mark.parametrize("case,kind", [r for r in RUNS if r[1] != "smoke"], ids=[_ids(r) for r in RUNS if r[1] != "smoke"])
def test_training_reads_the_data_and_writes_the_run_directory(runs, case, kind, dataset):
    run = _get(runs, case, kind)
    data_dir, _ = dataset
    expected = {p.name: p.stat().st_size for p in data_dir.iterdir()}
    for record in run.records:
        assert record["data_files"] == expected, (record["data"], record["data_files"])
        if run.answers.get("prestage"):
            assert record["data"].startswith(run.env["NODE_TMP"] + "/"), record["data"]
        else:
            assert record["data"] == run.env["DATA_DIR"]
    outputs = {r["output"] for r in run.records}
    assert len(outputs) == 1, outputs
    # Every rank starts in WORKDIR, the project directory (srun --chdir), with the arguments
    # the user wrote and nothing else: the job file's COMMAND, then what was given to sbatch.
    assert {r["cwd"] for r in run.records} == {str(run.project.resolve())}
    job_file = "jobs/profile.sbatch" if kind == "profile" else "jobs/train.sbatch"
    command = job_command(run.project, Path(next(iter(outputs))), job_file)
    given = command[3:] + ["--steps", "1"]  # (after python -u SCRIPT)
    assert all(r["argv"] == given for r in run.records), ({tuple(r["argv"]) for r in run.records}, given)
    # The log holds the whole step line (what support asks for), the user's command at its end.
    steps = re.findall(r"^step: (srun .*)$", run.log, re.M)
    assert len(steps) == 1 and steps[0].endswith(" ".join(["/scripts/lib/run.sh" if kind != "profile" else
                                                            "/scripts/lib/run-profile.sh", *command, "--steps", "1"])), steps
    if kind in ("train", "train2", "interactive"):
        # One run directory for every job of the run, so the next job resumes. [issue 12.4]
        assert outputs == {f"{run.env['OUTPUT_ROOT']}/{DEFAULTS['project_name']}"}
    if run.answers.get("prestage"):
        nodes = int(run.answers.get("nodes", 1))
        assert len(re.findall(r"^prestage: node \d+: extracted", run.log, re.M)) == nodes, run.log


@pytest.mark.parametrize("case", [c for c in CASES if "train2" in c.kinds], ids=lambda c: c.name)
def test_a_second_job_continues_the_same_run(runs, case):
    first, second = _get(runs, case, "train"), _get(runs, case, "train2")
    assert {r["output"] for r in first.records} == {r["output"] for r in second.records}


@pytest.mark.parametrize("case", [c for c in CASES if "profile" in c.kinds], ids=lambda c: c.name)
def test_profile_job_launches_like_training_and_wraps_one_rank(runs, case):
    run = _get(runs, case, "profile")
    rank = int(run.answers.get("profile_rank", 0))
    profiled = [r for r in run.records if r["env"].get("FAKE_PROFILER") or r["env"].get("LUMI_SCAFFOLD_PROFILE_DIR")]
    assert [_world(run, r)["rank"] for r in profiled] == [rank], [_world(run, r) for r in run.records]
    # A profile run starts from step 0 in a directory of its own, never in the training run's
    # (resuming a finished run would profile nothing). Its data: the data test above.
    outputs = {r["output"] for r in run.records}
    assert len(outputs) == 1 and f"{run.env['OUTPUT_ROOT']}/{DEFAULTS['project_name']}" not in outputs, outputs


@pytest.mark.parametrize("case,kind", RUNS, ids=[_ids(r) for r in RUNS])
def test_environment_inside_the_container(runs, case, kind):
    run = _get(runs, case, kind)
    data = run.plugin_data
    for record in run.records:
        env = record["env"]
        assert env.get("PYTHONNOUSERSITE") == "1"
        for setting in data["env"]:
            expected = None if setting.get("scope") == "off" else setting["value"]
            assert env.get(setting["name"]) == expected, setting["name"]
        for setting in data.get("env_left_out", []):  # a known issue's (LAIF: NCCL_NET_GDR_LEVEL)
            assert setting["name"] not in env, setting["name"]
        if data["site"].get("miopen_cache"):
            assert env["MIOPEN_USER_DB_PATH"].startswith("/tmp/") and env["MIOPEN_USER_DB_PATH"].endswith(
                f"-{env['SLURM_NODEID']}")
        if data["container"]["activate_var"]:
            assert env.get("PROBE_ACTIVATED") == "1", "the image's activation did not run"
        if case.venv:
            assert record["prefix"] == str(run.project / "venv"), record["prefix"]
        if data["framework"]["needs_master_addr"] and case.launcher == "srun":
            # (torchrun gives its workers a MASTER_ADDR of its own; the job's is its rendezvous.)
            first = next(r["node"] for r in run.records if r["env"].get("SLURM_NODEID") == "0")
            assert env.get("MASTER_ADDR") == first
    # RCCL_DEBUG_FILES=1: RCCL's debug output goes to one file per rank. [WS-09]
    files = [r["env"].get("NCCL_DEBUG_FILE") for r in run.records]
    assert None not in files and len(set(files)) == len(files), files
    # One report line per rank in the job's log: rank, node, local rank, GPU, CPUs (torchrun
    # projects: for the workers torchrun starts, so not in the one-task smoke test). [WS-ref]
    n = _expected_ranks(run) if kind != "smoke" or case.launcher == "srun" else 0
    reports = re.findall(rf"^rank (\d+)/{n} node (\S+) local_rank (\d+) gpu (\S+) cpus (\S+)$", run.log, re.M)
    assert sorted(int(r[0]) for r in reports) == list(range(n)), run.log
    for rank, node, local_rank, gpu, _ in reports:
        record = next(r for r in run.records if _world(run, r)["rank"] == int(rank))
        assert (node, gpu) == (record["node"], _world(run, record)["gcd"])


def test_cases_cover_the_pairs():
    """Every launcher x job kind x framework triple the catalogue offers, and every shape,
    pre-stage and profiler value, occurs in CASES."""
    seen = {(c.launcher, kind, c.framework) for c in CASES for kind in c.kinds if kind != "train2"}
    wanted = {("srun", k, f) for k in ("smoke", "train", "profile", "interactive") for f in ("pytorch", "jax", "deepspeed")}
    wanted |= {("torchrun", k, "pytorch") for k in ("smoke", "train", "profile", "interactive")}
    assert wanted <= seen, sorted(wanted - seen)
    lumi = [c for c in CASES if c.cluster == "lumi"]
    shapes = {(c.answers.get("nodes", 1), c.answers.get("gpus_per_node", 8)) for c in lumi}
    assert {(1, 1), (1, 4), (1, 8), (2, 8)} <= shapes
    assert {c.answers.get("profiler", "none") for c in CASES} == {"none", "rocprof", "rocprofv3", "framework"}
    for launcher in ("srun", "torchrun"):
        assert {bool(c.answers.get("prestage")) for c in CASES if c.launcher == launcher} == {True, False}
