"""The Leonardo site plugin: its data against its sources, and its projects.

Each assertion on the site's data names its source key (registered by the plugin from
``lumi_site_leonardo/sources.yaml``). Leonardo documents no central AI image, so the plugin
registers none and offers every framework with the user's own image (``container:
custom``).

Cost: the plugin's full conformance matrix is 180 projects (3 framework x launcher pairs,
2 data areas, pre-staging on and off, 2 profilers, 5 job shapes). ``check_conformance``
renders and lints them all in about 32 CPU-seconds with the repository suite's Copier
shortcuts, and 65 with plain Copier on a busy machine where this file took 25-30. This
file renders 9 projects with the same functions (``render_many``, ``lint_projects``): one
per job shape, with every value of every other axis among them, and the shapes below; it
checks the rest of what ``check_conformance`` checks on the catalogue itself. About 20
CPU-seconds on a quiet machine, most of them shellcheck on the ~25 distinct shell files a
project has, whatever the number of projects (in the repository's suite, which memoises
shellcheck, the full check below lints the same files). The full check runs too: every
combination renders and lints, as for the other example plugins.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import lumi_site_leonardo
from lumi_scaffold import testing
from lumi_scaffold.questions import check_all, choices, default
from lumi_scaffold.testing import catalogue_fixture, check_conformance, plugin_matrix, project_values, scratch_dir

PLUGIN = "lumi-site-leonardo"
PARTITIONS = ("boost_usr_prod", "boost_qos_dbg", "boost_qos_bprod", "boost_qos_lprod")
# AMD's words (the list). The jobs' shared library names both vendors' libraries
# where it means either ("NCCL/RCCL", "NCCL, or RCCL on AMD GPUs"): such a line passes;
# and the project's own tests/ keep the public RCCL logs they read (docs/plugins/gpu-vendors.md).
AMD = re.compile(r"ROCR_VISIBLE_DEVICES|rocm-smi|RCCL|MIOpen|MI250X|GCD")
NVIDIA = re.compile(r"NCCL|CUDA_VISIBLE_DEVICES|nvidia-smi")

catalogue = catalogue_fixture(lumi_site_leonardo)


def _answers(**given):
    return {"project_name": "demo", "site": "leonardo", "account": "abc123", "framework": "pytorch",
            "container": "custom", "container_path": "/leonardo_work/abc123/containers/pytorch.sif", **given}


# The shapes the issue asks for, beyond the matrix's: the smoke test of every project
# runs on boost_qos_dbg with 1 GPU (smoke_partition).
SHAPES = {
    "dbg-1gpu": _answers(partition="boost_qos_dbg", nodes=1, gpus_per_node=1),
    "1node-4gpus": _answers(partition="boost_usr_prod", nodes=1, gpus_per_node=4, launcher="torchrun"),
    "2nodes": _answers(partition="boost_usr_prod", nodes=2, gpus_per_node=4, data_location="fast", prestage=True),
    "bprod-128": _answers(partition="boost_qos_bprod", nodes=128, gpus_per_node=4, framework="jax"),
}


def _sample(matrix: list[dict]) -> list[dict]:
    """One project per job shape, the framework x launcher pairs in turn (so the multi-node
    shape gets torchrun), the other axes (data area, pre-staging, profiler) turned in step
    so that each value appears."""
    shapes = list(dict.fromkeys((a["partition"], a["nodes"], a["gpus_per_node"]) for a in matrix))
    pairs = list(dict.fromkeys((a["framework"], a["launcher"]) for a in matrix))
    areas, profilers = sorted({a["data_location"] for a in matrix}), sorted({a["profiler"] for a in matrix})
    sample = []
    for i, shape in enumerate(shapes):
        pair = pairs[i % len(pairs)]
        answers = next(dict(a) for a in matrix if (a["partition"], a["nodes"], a["gpus_per_node"]) == shape
                       and (a["framework"], a["launcher"]) == pair)
        answers.update(data_location=areas[i % len(areas)], prestage=bool(i // 2 % 2),
                       profiler=profilers[i // 2 % len(profilers)])
        answers.pop("profile_rank", None)
        if answers["profiler"] != "none":
            answers["profile_rank"] = answers["nodes"] * answers["gpus_per_node"] - 1
        sample.append(answers)
    return sample


@pytest.fixture(scope="module")
def projects(catalogue, tmp_path_factory):
    """The sample and SHAPES, rendered and linted together: {name: (project, answers)}, lint."""
    template = testing.template_source(tmp_path_factory.mktemp("template"))
    wanted = {f"{i:03d}": a for i, a in enumerate(_sample(plugin_matrix(catalogue, PLUGIN)))} | SHAPES
    with scratch_dir(tmp_path_factory.mktemp("projects")) as scratch:
        root = Path(scratch)
        failed = dict(testing.render_many(template, root, list(wanted.values())))
        # render_many names each project by its place in the matrix.
        made = {name: (root / f"{i:05d}", a) for i, (name, a) in enumerate(wanted.items())}
        assert not failed, failed
        lint = testing.lint_projects([p for p, _ in made.values()], catalogue, answers=[a for _, a in made.values()])
        yield made, lint


def test_site_matches_the_sources(catalogue):
    site = catalogue.sites["leonardo"]
    assert catalogue.provenance[("site", "leonardo")] == PLUGIN
    assert [p for p in catalogue.problems if p.plugin == PLUGIN] == []  # every cited key is registered
    assert {key for kind, key in catalogue.provenance if kind == "source" and catalogue.provenance[(kind, key)] == PLUGIN} == {
        "CINECA-BS", "CINECA-UG", "CINECA-ACC", "CINECA-ACCD", "CINECA-STOR", "AIAT5", "AIAT6", "OT-LEO", "WARPX-JOB"}
    usr, dbg, bprod, lprod = (site.partition(name) for name in PARTITIONS)
    # boost_usr_prod, QOS normal: at most 64 nodes, 24 h [CINECA-BS]
    assert (usr.slurm_name, usr.qos, usr.max_nodes, usr.max_walltime) == ("boost_usr_prod", "normal", 64, "1-00:00:00")
    # boost_qos_dbg: 2 nodes [CINECA-BS] (a newer secondary source: 8; the stricter), 30 min [CINECA-BS]
    assert (dbg.slurm_name, dbg.qos, dbg.max_nodes, dbg.max_walltime) == ("boost_usr_prod", "boost_qos_dbg", 2, "00:30:00")
    # boost_qos_bprod: 65 [CINECA-BS] or 128 [OT-LEO] to 256 whole nodes, 24 h: the stricter minimum
    assert (bprod.slurm_name, bprod.qos, bprod.min_nodes, bprod.max_nodes, bprod.max_walltime, bprod.allocation) == (
        "boost_usr_prod", "boost_qos_bprod", 128, 256, "1-00:00:00", "whole-node")
    # boost_qos_lprod: 3 nodes [CINECA-BS] (AI Factory Austria's guide: 8; the stricter), 4 days [CINECA-BS]
    assert (lprod.slurm_name, lprod.qos, lprod.max_nodes, lprod.max_walltime) == (
        "boost_usr_prod", "boost_qos_lprod", 3, "4-00:00:00")
    # Nodes are shared between jobs: a job may take part of one [CINECA-BS]; the smoke test on the debug QOS
    assert (usr.allocation, dbg.allocation, lprod.allocation) == ("by-resource",) * 3
    assert (site.partial_node_partition, site.whole_node_partition, site.smoke_partition) == (
        "boost_usr_prod", "boost_usr_prod", "boost_qos_dbg")
    # 4 A100 per node, 32 cores [CINECA-UG]; 8 CPUs per GPU task [CINECA-UG, AIAT5]
    assert (site.node.gpus, site.node.gpu_vendor, site.node.cores, site.node.usable_cores, site.node.cpus_per_gpu) == (
        4, "nvidia", 32, 32, 8)
    # all 4 GPUs have affinity to cores 0-15 [CINECA-UG]: no per-GPU mask is claimed, nor NUMA node
    assert site.node.cpu_masks == ["0xff", "0xff00", "0xff0000", "0xff000000"] and site.node.gpu_numa == []
    assert "HDR100" in site.node.nic_note.text  # 2x dual-port HDR100 per node [CINECA-UG]
    # How much memory a job may request is not in the sources: no figure, no --mem
    assert (site.node.mem_per_gpu_gb, site.node.mem_per_node_gb) == (None, None)
    # each GPU billed as 8 cores, the larger of the two, in standard core hours [CINECA-ACC, CINECA-ACCD]
    rule = usr.billing_rule
    assert (rule.unit, rule.per_slice_hour, rule.slice_cores, rule.slice_gpus, rule.slice_mem_gb) == (
        "standard core hours", 8, 8, 1, None)
    assert all(site.partition(name).billing_rule == rule for name in PARTITIONS)
    # $TMPDIR: a fixed 10 GB in RAM on diskless nodes [CINECA-UG]
    assert {site.partition(name).shared_node_tmp_gb for name in ("boost_usr_prod", "boost_qos_dbg", "boost_qos_lprod")} == {10}
    # Storage by CINECA's variables [CINECA-STOR]; scratch not offered for data (its variable is UNCONFIRMED)
    assert [(s.name, s.path, s.kind, s.data) for s in site.storage] == [
        ("work", "${WORK}", "parallel", True), ("fast", "${FAST}", "flash", True),
        ("scratch", "${CINECA_SCRATCH}", "parallel", False), ("home", "${HOME}", "home", False)]
    # Singularity; --nv is the NVIDIA default [AIAT6]; no module, no image, no cotainr
    assert (site.container_runtime, site.container_gpu_flag, site.cotainr) == ("singularity", None, None)
    assert site.generation("explicit").load_modules == [] and site.generation("explicit").binds == ["${WORK}", "${FAST}"]
    assert not [i for i in catalogue.containers.values() if i.site == "leonardo"]


def test_every_framework_is_offered_with_your_own_image(catalogue):
    assert catalogue.frameworks_for("leonardo") == ["pytorch", "jax"]  # own_image_frameworks: all [AIAT6]
    for framework in ("pytorch", "jax"):
        answers = {"site": "leonardo", "account": "abc123", "framework": framework, "project_name": "demo"}
        assert list(choices("container", answers, catalogue).values()) == ["custom"]
        assert default("container", answers, catalogue) == "custom"
        assert default("container_path", answers, catalogue) == "${WORK}/containers/demo.sif"


@pytest.mark.parametrize(("given", "fragment"), [
    ({"partition": "boost_qos_dbg", "nodes": 10},
     "boost_qos_dbg allows at most 2 nodes, not 10. Use partition=boost_usr_prod or nodes=2."),
    ({"partition": "boost_qos_bprod", "nodes": 65}, "boost_qos_bprod takes jobs of at least 128 nodes, not 65. Use nodes=128."),
    ({"partition": "boost_usr_prod", "nodes": 65}, "boost_usr_prod allows at most 64 nodes, not 65."),
    ({"partition": "boost_qos_dbg", "walltime": "00:45:00"}, "exceeds the boost_qos_dbg limit of 00:30:00"),
    ({"partition": "boost_qos_bprod", "nodes": 128, "gpus_per_node": 4}, None),
])
def test_node_and_time_limits_are_refused_in_one_line(catalogue, given, fragment):
    problems = check_all(_answers(**given), catalogue)
    if fragment is None:
        assert problems == []
    else:
        assert len(problems) == 1 and fragment in problems[0] and given["partition"] in problems[0], problems


def test_projects_lint_clean(projects):
    made, lint = projects
    assert lint == []  # bash -n, shellcheck and the #SBATCH checks
    axes = [a for _, a in made.values()]
    assert {a["partition"] for a in axes} == set(PARTITIONS)
    assert {(a["framework"], a.get("launcher")) for a in axes} >= {("pytorch", "srun"), ("pytorch", "torchrun"), ("jax", "srun")}
    assert {a.get("data_location") for a in axes} >= {"work", "fast"} and {a.get("prestage") for a in axes} >= {False, True}
    assert {a.get("profiler") for a in axes} >= {"none", "framework"}


def test_projects_run_singularity_with_nv_and_name_nothing_of_amd(projects):
    made, _ = projects
    for name, (project, answers) in made.items():
        values = project_values(project)
        assert values["container_command"] == ["singularity", "exec", "--nv"], name
        assert values["gpu_devices_variable"] == "CUDA_VISIBLE_DEVICES" and values["collectives"] == "NCCL", name
        amd = [f"{path.relative_to(project)}: {line.strip()}" for path in project.rglob("*")
               if path.is_file() and not {".git", "tests"} & set(path.relative_to(project).parts)
               for line in path.read_text(errors="replace").splitlines() if AMD.search(line) and not NVIDIA.search(line)]
        assert amd == [], (name, amd[:5])


def test_sbatch_lines_use_the_partition_and_qos_spellings(projects, catalogue):
    made, _ = projects
    site = catalogue.sites["leonardo"]
    for name, (project, answers) in made.items():
        partition = site.partition(answers["partition"])
        train = [line for line in (project / "jobs/train.sbatch").read_text().splitlines() if line.startswith("#SBATCH")]
        assert "#SBATCH --partition=boost_usr_prod" in train and f"#SBATCH --qos={partition.qos}" in train, name
        assert f"#SBATCH --nodes={answers['nodes']}" in train, name
        assert not [line for line in train if line.startswith("#SBATCH --mem")], name  # no figure in the sources
        smoke = (project / "jobs/smoke-test.sbatch").read_text()
        assert "#SBATCH --qos=boost_qos_dbg" in smoke and "#SBATCH --gpus-per-node=1" in smoke, name
    one_node = [line for line in (made["1node-4gpus"][0] / "jobs/train.sbatch").read_text().splitlines()
                if line.startswith("#SBATCH")]
    assert "#SBATCH --exclusive" in one_node and "#SBATCH --gpus-per-node=4" in one_node  # a whole node of a shared partition
    assert "#SBATCH --cpus-per-task=32" in one_node  # torchrun: one task per node, 4 x 8 cores
    dbg = (made["dbg-1gpu"][0] / "jobs/train.sbatch").read_text()
    assert "#SBATCH --time=00:30:00" in dbg and "#SBATCH --exclusive" not in dbg
    values = project_values(made["2nodes"][0])
    assert values["cpu_bind"] == "verbose,mask_cpu:0xff,0xff00,0xff0000,0xff000000" and values["node_tmp"] == "/tmp"
    assert values["storage_variables"] == ["FAST", "WORK"] and values["binds"] == "${WORK},${FAST}"


def test_full_conformance(catalogue):
    """Every combination, as check_conformance renders and lints it (the projects above
    lint from the suite's shellcheck memo where this ran first)."""
    assert check_conformance(catalogue, PLUGIN) == []
