"""What a site maintainer needs, on a Setonix-like test site (tests/fixtures/setonix-like.yaml,
test data): a partition with its own nodes, the project taken from the account, per-user
areas, --gres requests, memory that follows the GPUs, extra sbatch/srun options, an image
users pull, README sections from the plugin, and a framework with legacy images only."""

from __future__ import annotations

from pathlib import Path

import pytest

from lumi_scaffold import plugins
from lumi_scaffold.datafile import load_data_file
from lumi_scaffold.models import ContainerImage, Site
from lumi_scaffold.assemble import resolve
from lumi_scaffold.known_issues import notices
from lumi_scaffold.questions import check, choices, default
from lumi_scaffold.testing import lint_projects

from .helpers import render, values

FIXTURES = Path(__file__).parent / "fixtures"
ANSWERS = {"project_name": "demo", "site": "setonix-like", "account": "pawsey0001-gpu"}


def setonix_like(**changes) -> plugins.Catalogue:
    real = plugins.get_catalogue()
    site = load_data_file(FIXTURES / "setonix-like.yaml", Site)
    site = site.model_copy(update=changes) if changes else site
    images = load_data_file(FIXTURES / "setonix-like-images.yaml", ContainerImage, many=True)
    return plugins.Catalogue(**{**vars(real), "sites": {**real.sites, site.name: site},
                                "containers": {**real.containers, **{i.id: i for i in images}}})


@pytest.fixture
def cat(monkeypatch) -> plugins.Catalogue:
    cat = setonix_like()
    monkeypatch.setattr(plugins, "get_catalogue", lambda: cat)
    return cat


def test_the_project_comes_from_the_account_and_per_user_areas_get_one_user(cat):
    data = resolve({**ANSWERS, "framework": "pytorch"}, cat)
    assert data["data_dir"] == "/scratch/pawsey0001/${USER}"
    assert data["output_root"] == "/scratch/pawsey0001/${USER}/demo/outputs"  # not .../${USER}/${USER}/...
    assert {s["name"]: s["path"] for s in data["storage"]}["software"] == "/software/projects/pawsey0001"
    assert all(c["value"].startswith("/scratch/pawsey0001/${USER}/cache/") for c in data["caches"])
    assert "scratch: /scratch/pawsey0001/${USER}" in next(iter(choices("data_location", ANSWERS, cat)))


@pytest.mark.parametrize("user_level, expected", [(True, "${WORKDIR}"), (None, "${WORKDIR}/${USER}")])
def test_an_area_under_a_per_user_variable_gets_no_second_user_level(monkeypatch, user_level, expected):
    """$WORKDIR is each user's own directory on some sites: an area that says so
    (user_level: true) gets no /${USER} (before 0.4.0: ${WORKDIR}/${USER}/...). Test data:
    the Setonix-like scratch moved under a variable."""
    site = setonix_like().sites["setonix-like"]
    storage = [a.model_copy(update={"path": "${WORKDIR}", "user_level": user_level}) if a.name == "scratch" else a
               for a in site.storage]
    cat = setonix_like(storage=storage)
    monkeypatch.setattr(plugins, "get_catalogue", lambda: cat)
    data = resolve({**ANSWERS, "framework": "pytorch"}, cat)
    assert data["output_root"] == f"{expected}/demo/outputs"
    assert all(c["value"].startswith(f"{expected}/cache/") for c in data["caches"])


def test_gres_requests_no_memory_and_the_partitions_own_options(cat):
    data = resolve({**ANSWERS, "framework": "pytorch", "partition": "gpu-highmem"}, cat)
    train = data["job"]["slurm"]["train"]
    assert "--gres=gpu:8" in train and not any(o.startswith(("--gpus-per-node", "--mem")) for o in train)
    assert train[-1] == "--mail-type=FAIL"  # the site's option; gpu-highmem adds none to sbatch
    assert data["job"]["srun_options"] == ["--gpu-bind=closest"]
    assert data["job"]["slurm"]["smoke"][6] == "--gres=gpu:1"
    assert data["job"]["slurm"]["smoke"][-2:] == ["--mail-type=FAIL", "--exclude=nid001000"]  # site's, then gpu's


def test_a_partition_with_its_own_nodes_sets_the_jobs_memory(monkeypatch):
    cat = setonix_like(memory_follows_gpus=False)
    highmem = resolve({**ANSWERS, "framework": "pytorch", "partition": "gpu-highmem"}, cat)
    gpu = resolve({**ANSWERS, "framework": "pytorch", "partition": "gpu"}, cat)
    assert "--mem=512G" in highmem["job"]["slurm"]["train"] and highmem["site"]["mem_per_node_gb"] == 512
    assert "--mem=256G" in gpu["job"]["slurm"]["train"]
    one = resolve({**ANSWERS, "framework": "pytorch", "partition": "gpu-highmem", "gpus_per_node": 1}, cat)
    assert "--mem-per-gpu=64G" in one["job"]["slurm"]["train"] and "--mem-per-gpu=32G" in one["job"]["slurm"]["smoke"]


def test_gpus_are_checked_against_the_partitions_nodes(monkeypatch):
    cat = setonix_like()
    small = cat.sites["setonix-like"].partitions[1].node.model_copy(update={
        "gpus": 4, "cpu_masks": ["0x00000000000000ff", "0x000000000000ff00", "0x0000000000ff0000", "0x00000000ff000000"]})
    site = cat.sites["setonix-like"]
    parts = [site.partitions[0], site.partitions[1].model_copy(update={"node": small})]
    cat.sites["setonix-like"] = site.model_copy(update={"partitions": parts})
    answers = {**ANSWERS, "framework": "pytorch", "gpus_per_node": 8}
    assert check("partition", "gpu-highmem", answers, cat) == (
        "8 GPUs per node is out of range: gpu-highmem nodes have 4 GPUs (GCDs). Use gpus_per_node=4.")
    assert check("partition", "gpu-highmem", {**answers, "gpus_per_node": 4}, cat) == ""
    data = resolve({**answers, "gpus_per_node": 4, "partition": "gpu-highmem"}, cat)
    assert data["job"]["whole_node"] is True and data["job"]["cpu_bind"].count("0x") == 4


def test_a_framework_with_legacy_images_only_is_offered_with_its_status(cat):
    assert "jax: JAX (jax.distributed) (legacy images only)" in " ".join(choices("framework", ANSWERS, cat))
    answers = {**ANSWERS, "framework": "jax"}
    assert default("container", answers, cat) == "setonix-like-jax-old"
    assert "recommended" not in choices("container", answers, cat).values()
    data = resolve({**answers, "container": "setonix-like-jax-old"}, cat)
    assert data["container"]["status"] == "legacy"
    assert notices(data, cat) == ["Container image setonix-like-jax-old is legacy."]
    assert not [p for p in cat.problems if "setonix" in str(p)]


@pytest.mark.parametrize("extra", [
    {"framework": "pytorch", "partition": "gpu-highmem", "nodes": 2, "profiler": "rocprofv3"},
    {"framework": "pytorch", "gpus_per_node": 1, "launcher": "torchrun"},
    {"framework": "jax", "container": "setonix-like-jax-old", "prestage": True},
], ids=["2-node-highmem", "1-gpu-torchrun", "jax-legacy"])
def test_projects_render_and_lint_clean(template, cat, tmp_path, extra):
    project = render(template, tmp_path / "p", **{**ANSWERS, **extra})
    assert lint_projects([project], cat) == []
    train = (project / "jobs" / "train.sbatch").read_text()
    assert "#SBATCH --gres=gpu:" in train and "#SBATCH --mail-type=FAIL" in train and "--mem" not in train
    readme = (project / "README.md").read_text()
    assert "## Test-site notes\n\nJobs here ask for GPUs with `--gres`; memory follows them." in readme
    if extra["framework"] == "pytorch":
        assert ("## 2. Pull the container\n\n    singularity pull /software/projects/pawsey0001/containers/pytorch.sif "
                "docker://quay.io/pawsey/pytorch:2.7.1-rocm6.3.3\n") in readme
        assert "## 3. Create the venv" in readme
    else:
        assert "Pull the container" not in readme and "This image is legacy" in readme
    if extra.get("prestage"):
        assert "use more GPUs per node (memory follows them)" in (project / "scripts" / "values.sh").read_text()
    comment = "memory follows the GPUs" + ("." if extra.get("gpus_per_node") == 1 else "")
    assert comment in train
    v = values(project)
    assert ("--gpu-bind=closest" in v["srun_options"]) == (extra.get("partition") == "gpu-highmem")
    assert v["dataset_dir"] == "/scratch/pawsey0001/${USER}/datasets/demo"


def test_site_options_may_not_repeat_what_the_answers_give():
    with pytest.raises(ValueError, match="--time comes from the project's answers"):
        setonix_like(sbatch_options=["--time=01:00:00"]).sites["setonix-like"].model_validate(
            {**setonix_like().sites["setonix-like"].model_dump(), "sbatch_options": ["--time=01:00:00"]})
    with pytest.raises(ValueError, match="must be one long option"):
        Site.model_validate({**setonix_like().sites["setonix-like"].model_dump(), "srun_options": ["--x=$(id)"]})
    with pytest.raises(ValueError, match="exactly one group"):
        Site.model_validate({**setonix_like().sites["setonix-like"].model_dump(),
                             "account": {"pattern": "p[0-9]+", "example": "p1", "help": "h", "project": "p[0-9]+"}})
    with pytest.raises(ValueError, match="docker://, oras://"):
        ContainerImage(id="x", site="s", framework="f", title="t", path="/x.sif", generation="g", status="recommended",
                       pull_from="docker://x; touch y")


def test_two_entries_on_one_slurm_partition_are_linted_by_entry(template, monkeypatch, tmp_path):
    """Two catalogue entries share one Slurm partition (and QOS), as docs/catalogue.md allows:
    a project's job is checked against its own entry, not the first with that Slurm name
    (before 0.4.0: `gpu-whole is whole-node but the job asks for 2 GPUs` for a project on
    `gpu`). Test data: a whole-node entry put first on the Setonix-like `gpu` partition."""
    base = setonix_like().sites["setonix-like"]
    whole = base.partition("gpu").model_copy(update={"name": "gpu-whole", "slurm_partition": "gpu",
                                                      "allocation": "whole-node"})
    cat = setonix_like(partitions=[whole, *base.partitions])
    monkeypatch.setattr(plugins, "get_catalogue", lambda: cat)
    shared = render(template, tmp_path / "shared", **{**ANSWERS, "framework": "pytorch", "partition": "gpu", "gpus_per_node": 2})
    assert "#SBATCH --partition=gpu\n" in (shared / "jobs" / "train.sbatch").read_text()
    assert lint_projects([shared], cat) == []
    # A job that fits no entry of its Slurm partition is refused for its own entry, with a fix.
    train = shared / "jobs" / "train.sbatch"
    train.write_text(train.read_text().replace("#SBATCH --nodes=1", "#SBATCH --nodes=9"))
    problems = lint_projects([shared], cat)
    assert [p.split("train.sbatch: ")[1] for p in problems] == [
        "a job on 9 nodes uses whole nodes: gpu nodes have 8 GPUs, not 2 (the catalogue installed now). "
        "Fix: lumi-scaffold update -d gpus_per_node=8, or lumi-scaffold update -d nodes=1",
        "gpu allows at most 8 nodes, not 9 (the catalogue installed now). Fix: lumi-scaffold update -d nodes=8"]
