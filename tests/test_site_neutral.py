"""Projects for other sites say nothing about LUMI: a Setonix-like test site renders, in
every combination it offers, with no LUMI wording, no LUMI-only source key, and clean
shell (bash -n, shellcheck, #SBATCH checks).

The test site's values are TEST DATA shaped like Pawsey's Setonix (account pawsey0001,
partitions gpu and gpu-highmem, 8 GCDs per node, /scratch and /software/projects,
Singularity, no site modules). They are not facts about Setonix: limits, memory, masks and
the image path are made up where the fact sheet has none. To cover more of the site (memory
per partition, --gres, ...), extend SETONIX below; the checks read the rendered projects.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

import pytest

from lumi_scaffold import ContainerImage, Site, sources
from lumi_scaffold.testing import answer_matrix, lint_projects, render_project, scratch_dir, use_catalogue
from lumi_scaffold.testing import plugin_catalogue

from .copier_shortcuts import render_many  # the full matrix's: the same bytes, about half the time
from .helpers import render, site_plugin, values

SITE = "setonix-like"
SETONIX = {  # TEST DATA, not facts about Setonix (see the module docstring)
    "name": SITE,
    "title": "Setonix-like test site (MI250X, Singularity)",
    "display_name": "Setonix-like",
    "account": {"pattern": "pawsey[0-9]{4}", "example": "pawsey0001", "help": "Test data: a Pawsey-style project id."},
    "partitions": [
        {"name": "gpu", "allocation": "by-resource", "max_nodes": 8, "max_walltime": "1-00:00:00",
         "purpose": "Test data: jobs on part of a node."},
        {"name": "gpu-highmem", "allocation": "whole-node", "max_nodes": 2, "max_walltime": "1-00:00:00",
         "purpose": "Test data: whole nodes with more memory."},
    ],
    "partial_node_partition": "gpu",
    "whole_node_partition": "gpu-highmem",
    "node": {
        "gpus": 8, "cpus": 128, "cores": 64, "cpus_per_gpu": 8,
        "cpu_masks": [f"0x{0xff << (8 * i):016x}" for i in range(8)],
        "mem_per_gpu_gb": 28, "mem_per_node_gb": 230,
    },
    "storage": [
        {"name": "scratch", "path": "/scratch/{account}/${USER}", "kind": "parallel", "data": True},
        {"name": "software", "path": "/software/projects/{account}", "kind": "parallel"},
        {"name": "home", "path": "/home/${USER}", "kind": "home"},
    ],
    "node_local_tmp": "/tmp",
    "container_runtime": "singularity",
    "own_image_frameworks": "all",
    "generations": [{"name": "explicit", "title": "An image you built or pulled, binds given explicitly",
                     "run_verb": "exec", "binds": ["/scratch", "/software"]}],
    "miopen_cache": "/tmp/${USER}-miopen-cache-${SLURM_JOB_ID}-${SLURM_NODEID}",
    "cache_area": "scratch",
}


IMAGE = ContainerImage(  # TEST DATA: a made-up path and version
    id="setonix-like-pytorch", site=SITE, framework="pytorch", title="Test image for the Setonix-like site",
    path="/software/projects/pawsey0001/containers/pytorch-test.sif", generation="explicit",
    status="recommended", versions={"torch": "0.0.0"},
)
PLUGIN = site_plugin("test-setonix-like", Site.model_validate(SETONIX), IMAGE)

# What a project for another site must not say. The tool's own name (lumi-scaffold,
# LUMI_SCAFFOLD_* variables, plugin packages named lumi-site-*, lumi-framework-*) is not
# about the site and is taken out first.
TOOL_NAME = re.compile(r"lumi[-_](?:scaffold|site-|framework-)|LUMI_SCAFFOLD_", re.I)
LUMI_WORDS = [r"LUMI", r"(?i:lumi-)", r"LUMI_RCCL_DEBUG", r"/appl\b", r"project_46[25]", r"\bsmall-g\b",
              r"\bstandard-g\b", r"\bdev-g\b", r"/pfs\b", r"\bhsn\d", r"Slingshot", r"\bLAIF\b", r"\bLUST\b",
              r"workshop", r"AI guide", r"\bCCD", r"aws-ofi-rccl", r"lumi-aif"]
LUMI_ONLY_KEYS = sorted(k for k, e in sources.bibliography().items() if e.get("sites") == ["lumi"])
# (The keys in one group behind one lookbehind: a lookbehind per key made every search 25x slower.)
MARKERS = re.compile("|".join(LUMI_WORDS + [r"(?<![\w-])(?:" + "|".join(map(re.escape, LUMI_ONLY_KEYS)) + r")(?![\w-])"]))


def lumi_wording(project: Path) -> list[str]:
    """'file: line' for every line of the project that names LUMI."""
    return [f"{path.relative_to(project)}: {line}"
            for path in sorted(p for p in project.rglob("*") if p.is_file())
            for line in _lumi_lines(path.read_bytes())]


@functools.lru_cache(maxsize=4096)
def _lumi_lines(content: bytes) -> tuple[str, ...]:
    """The lines of a file's content that name LUMI, stripped. Most files of a matrix are
    the same in every project (the runtime library, its tests): each content is searched
    once."""
    text = content.decode(errors="replace")
    return tuple(line.strip() for line in text.splitlines() if MARKERS.search(TOOL_NAME.sub("", line)))


@pytest.fixture(scope="module")
def catalogue():
    cat = plugin_catalogue(PLUGIN)
    assert not cat.problems, cat.problems
    return cat


@pytest.fixture
def scratch(tmp_path):
    with scratch_dir(tmp_path) as directory:
        yield directory


def test_every_setonix_like_project_is_free_of_lumi_and_lints_clean(template, catalogue, scratch):
    matrix = list(answer_matrix(catalogue, sites=[SITE]))
    assert {a["framework"] for a in matrix} == {"pytorch", "jax"}
    assert {a["launcher"] for a in matrix} == {"srun", "torchrun"}
    assert {a["profiler"] for a in matrix} == {"none", "rocprof", "rocprofv3", "framework"}
    assert {a["container"] for a in matrix} == {"recommended", "setonix-like-pytorch", "custom"}
    assert {(a["partition"], a["nodes"]) for a in matrix} == {("gpu", 1), ("gpu-highmem", 2)}
    with use_catalogue(catalogue):
        assert render_many(template, scratch, matrix, workers=1 if os.cpu_count() == 1 else 2) == []
        projects = sorted(scratch.iterdir())
        assert lint_projects(projects, catalogue, answers=matrix) == []
    wording = {line for project in projects for line in lumi_wording(project)}
    assert not wording, sorted(wording)[:20]


def test_the_marker_check_finds_lumi_in_a_lumi_project(template, tmp_path):
    """The check above can fail: a LUMI project trips it in its scripts and its README."""
    project = render(template, tmp_path / "p", nodes=2, prestage=True, profiler="rocprofv3",
                     dataset_archive="/scratch/project_465000000/d.tar")
    files = {line.split(":")[0] for line in lumi_wording(project)}
    assert {"README.md", "scripts/values.sh", "jobs/train.sbatch", "src/demo/train.py", ".copier-answers.yml"} <= files, files


def _setonix_project(template, tmp_path, catalogue, **answers):
    with use_catalogue(catalogue):
        return render_project(template, tmp_path / "s", {"project_name": "demo", "site": SITE,
                                                         "account": "pawsey0001", **answers})


def test_site_prose_comes_from_the_site_data(template, tmp_path, catalogue):
    project = _setonix_project(template, tmp_path, catalogue, nodes=2, partition="gpu-highmem")
    readme = (project / "README.md").read_text()
    # No reserved cores here: the README does not say the masks avoid any.
    assert "with `--cpu-bind=mask_cpu` to the cores of its GPU.\n" in readme and "reserves" not in readme
    assert "built without ROCm support." in readme  # no interconnect given
    assert "RCCL/libfabric settings" not in readme  # the site gives none
    # The templates cite only LUMI's sources, and this test site's data none.
    assert readme.endswith("## Sources\n\nNeither this project's files nor the catalogue data it was made from "
                           "cite a source.\n"), readme[-300:]
    # attach.sh: no power figures without the site's; its help still works.
    attach = subprocess.run(["scripts/attach.sh", "--help"], cwd=project, capture_output=True, text=True)
    assert attach.returncode == 0 and "rocm-smi every second\n" in attach.stdout and " W " not in attach.stdout
    # RCCL_DEBUG_FILES alone: the site names no older variable for it.
    assert values(project)["debug_files_alias"] == "" and "LUMI_RCCL_DEBUG" not in (project / "scripts/values.sh").read_text()


def test_lumi_prose_keeps_its_facts(template, tmp_path):
    project = render(template, tmp_path / "p", nodes=2)
    readme = (project / "README.md").read_text()
    assert "reserves, the first core of each CCD [TM-LN]; a mask touching one" in readme
    assert "built without ROCm or Slingshot support." in readme
    attach = subprocess.run(["scripts/attach.sh", "--help"], cwd=project, capture_output=True, text=True)
    assert "use: ~300 W one busy GCD, ~500 W both GCDs of an MI250X) [AIG-06]" in attach.stdout


@pytest.mark.parametrize(("site", "env", "debug_file"), [
    ("lumi", {"RCCL_DEBUG_FILES": "1"}, True),
    ("lumi", {"LUMI_RCCL_DEBUG": "1"}, True),  # the name before 0.3
    ("lumi", {"LUMI_RCCL_DEBUG": "1", "RCCL_DEBUG_FILES": "0"}, False),  # the new name wins
    ("lumi", {}, False),
    (SITE, {"RCCL_DEBUG_FILES": "1"}, True),
    (SITE, {"LUMI_RCCL_DEBUG": "1"}, False),
])
def test_rccl_debug_files_variable(template, tmp_path, catalogue, site, env, debug_file):
    """RCCL_DEBUG_FILES=1 gives each rank its RCCL debug file; LUMI projects still read
    LUMI_RCCL_DEBUG=1."""
    if site == "lumi":
        project = render(template, tmp_path / "p", container="custom", container_path="/project/x.sif")
    else:
        project = _setonix_project(template, tmp_path, catalogue, container="custom", container_path="/scratch/x.sif")
    expected = f"{project}/out/logs/rccl-42-rank3.txt" if debug_file else "none"
    assert _debug_file(project, env) == expected


def _debug_file(project, env) -> str:
    """Rank 3's NCCL_DEBUG_FILE after scripts/lib/run.sh with ``env`` ('none' where unset)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "NCCL_")) and "RCCL_DEBUG" not in k}
    result = subprocess.run(["scripts/lib/run.sh", "bash", "-c", 'echo "${NCCL_DEBUG_FILE:-none}"'], cwd=project,
                            env={**clean, "USER": "tester", "SLURM_JOB_ID": "42", "SLURM_PROCID": "3",
                                 "LUMI_SCAFFOLD_LOG_DIR": f"{project}/out/logs", **env},
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[-1]


def test_the_old_debug_variable_name_comes_from_the_site_data(template, tmp_path):
    """run.sh and the README read the site's rccl_debug_alias, not its name: a site that
    gives one (TEST DATA: a made-up old name) gets the LUMI behaviour with its own name."""
    aliased = Site.model_validate({**SETONIX, "rccl_debug_alias": "OLD_RCCL_DEBUG"})
    plugin = site_plugin("test-aliased", aliased, IMAGE)
    project = _setonix_project(template, tmp_path, plugin_catalogue(plugin), container="custom",
                               container_path="/scratch/x.sif")
    assert "(`OLD_RCCL_DEBUG=1`, the name before lumi-scaffold 0.3, works too)" in (project / "README.md").read_text()
    assert _debug_file(project, {"OLD_RCCL_DEBUG": "1"}) == f"{project}/out/logs/rccl-42-rank3.txt"


def test_frontier_projects_cite_frontier_sources_only(template, tmp_path):
    """The Frontier plugin's projects: its own OLCF sources, nothing of LUMI's."""
    frontier = pytest.importorskip("lumi_site_frontier")
    answers = {"project_name": "demo", "site": "frontier", "account": "abc123", "nodes": 2, "profiler": "rocprofv3",
               "prestage": True, "dataset_archive": "/lustre/orion/abc123/proj-shared/d.tar",
               "container_path": "/lustre/orion/abc123/proj-shared/pytorch.sif"}
    with use_catalogue(plugin_catalogue(frontier)):
        project = render_project(template, tmp_path / "f", answers)
    assert lumi_wording(project) == []
    readme = (project / "README.md").read_text()
    assert set(re.findall(r"^- \*\*([A-Za-z0-9-]+)\*\*: \[", readme, re.M)) == {"OLCF-FUG", "OLCF-PT"}


def test_the_deepspeed_example_names_lumi_only_in_lumi_projects(template, tmp_path):
    """The DeepSpeed plugin's example guards its LUMI sources and wording (lumi_cite where
    lumi-scaffold has it): none in a Frontier project, all of them in a LUMI one."""
    frontier = pytest.importorskip("lumi_site_frontier")
    deepspeed = pytest.importorskip("lumi_framework_deepspeed")
    with use_catalogue(plugin_catalogue(frontier, deepspeed)):
        theirs = render_project(template, tmp_path / "f", {
            "project_name": "demo", "site": "frontier", "account": "abc123", "framework": "deepspeed",
            "container": "custom", "container_path": "/lustre/orion/abc123/proj-shared/ds.sif"})
        ours = render_project(template, tmp_path / "l", {"project_name": "demo", "framework": "deepspeed"})
    assert lumi_wording(theirs) == []
    train = (ours / "src" / "demo" / "train.py").read_text()
    assert "[AIG-05]" in train and "Slingshot-11" in train and "The LUMI AI Factory" in train


def test_the_site_with_gres_partition_nodes_and_pulled_images_is_free_of_lumi_too(template, scratch):
    """The test site of tests/test_site_needs.py (tests/fixtures/setonix-like.yaml: --gres,
    gpu-highmem with its own nodes, memory that follows the GPUs, the project taken from the
    account, an image users pull, a framework with legacy images only): every combination
    renders and lints clean, and none names LUMI."""
    from lumi_scaffold.datafile import load_data_file

    fixtures = Path(__file__).parent / "fixtures"

    cat = plugin_catalogue(site_plugin("test-setonix-like-needs", load_data_file(fixtures / "setonix-like.yaml", Site),
                                       *load_data_file(fixtures / "setonix-like-images.yaml", ContainerImage, many=True)))
    assert not cat.problems, cat.problems
    # One profiler: their wording is the same on every site (the test above).
    matrix = [a for a in answer_matrix(cat, sites=[SITE]) if a["profiler"] == "none"]
    assert {a["partition"] for a in matrix} == {"gpu", "gpu-highmem"} and {a["framework"] for a in matrix} == {"pytorch", "jax"}
    with use_catalogue(cat):
        assert render_many(template, scratch, matrix, workers=1 if os.cpu_count() == 1 else 2) == []
        projects = sorted(scratch.iterdir())
        assert lint_projects(projects, cat, answers=matrix) == []
    assert all("#SBATCH --gres=gpu:" in (p / "jobs" / "train.sbatch").read_text() for p in projects)
    wording = {line for project in projects for line in lumi_wording(project)}
    assert not wording, sorted(wording)[:20]
