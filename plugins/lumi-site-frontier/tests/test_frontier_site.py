"""The Frontier site plugin: its data against the fact sheet, and its projects.

Frontier has no central AI image (users pull their own [OLCF-CT]), so the plugin
registers no image and offers every framework with the user's own image
(``container: custom``). Some tests also add a stand-in for an image a group registers
in a plugin of its own; its path and version are test data, not facts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import types
from pathlib import Path

import pytest

import lumi_site_frontier
from lumi_scaffold import ContainerImage, hookimpl
from lumi_scaffold.lint import lint_project
from lumi_scaffold.questions import check_all, choices, default
from lumi_scaffold.testing import (catalogue_fixture, check_conformance, plugin_catalogue, plugin_matrix, project_values,
                                  render_project, template_source)

PLUGIN = "lumi-site-frontier"


@hookimpl
def register_containers(register):
    register(ContainerImage(
        id="standin-frontier-pytorch", site="frontier", framework="pytorch", title="Stand-in for a pulled image",
        path="/lustre/orion/myproject/proj-shared/containers/pytorch.sif", generation="explicit",
        status="recommended", versions={"torch": "0.0.0"},
    ))


STAND_IN = ("standin-image", types.SimpleNamespace(register_containers=register_containers))

catalogue = catalogue_fixture(lumi_site_frontier, STAND_IN)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return template_source(tmp_path_factory.mktemp("template"))


def test_site_matches_the_fact_sheet(catalogue):
    site = catalogue.sites["frontier"]
    assert catalogue.provenance[("site", "frontier")] == PLUGIN
    assert site.container_runtime == "apptainer"
    assert (site.node.gpus, site.node.usable_cores, site.node.cpus_per_gpu) == (8, 56, 7)
    # Same NUMA/GPU map as LUMI, so the same masks. [OLCF-FUG]
    assert site.node.cpu_masks == catalogue.sites["lumi"].node.cpu_masks
    batch, extended, debug = (site.partition(n) for n in ("batch", "extended", "debug"))
    assert [batch.walltime_limit(n) for n in (1, 91, 92, 183, 184, 9472)] == [
        "02:00:00", "02:00:00", "06:00:00", "06:00:00", "12:00:00", "12:00:00"]
    assert (extended.max_nodes, extended.max_walltime) == (64, "1-00:00:00")
    assert (debug.slurm_name, debug.qos, debug.max_walltime) == ("batch", "debug", "02:00:00")
    assert not site.has_partial_nodes
    # rccl-net-plugin is loaded after rocm [OLCF-PT]; neither is a bindings module.
    assert [m.name for m in site.generation("explicit").load_modules] == ["rocm", "rccl-net-plugin"]
    assert not any(m.sets_binds for m in site.generation("explicit").load_modules)
    # How much memory a job may request is not in the fact sheet: no request is made.
    assert (site.node.mem_per_gpu_gb, site.node.mem_per_node_gb) == (None, None)
    assert site.cotainr is None  # the fact sheet describes cotainr on LUMI only
    assert site.storage_area("scratch").resolve("abc123") == "/lustre/orion/abc123/scratch/${USER}"


def test_without_an_image_every_framework_is_offered_with_your_own_image():
    cat = plugin_catalogue(lumi_site_frontier)
    assert cat.frameworks_for("frontier") == ["pytorch", "jax"]
    answers = {"site": "frontier", "account": "abc123", "framework": "pytorch", "project_name": "demo"}
    assert list(choices("container", answers, cat).values()) == ["custom"]  # no recommended, no cotainr
    assert default("container", answers, cat) == "custom"
    assert default("container_path", answers, cat) == "/lustre/orion/abc123/scratch/${USER}/containers/demo.sif"
    for refused, fragment in (("recommended", "has no recommended pytorch image"), ("cotainr", "has no cotainr support")):
        assert any(fragment in p for p in check_all({**answers, "container": refused}, cat)), refused
    # a wrong path is answered with an example on Frontier's file systems, not LUMI's
    problems = check_all({**answers, "container": "custom", "container_path": "/x/image.img"}, cat)
    assert any("e.g. /lustre/orion/abc123/scratch/${USER}/containers/demo.sif" in p for p in problems), problems


def test_every_project_renders_and_lints_clean():
    cat = plugin_catalogue(lumi_site_frontier)
    matrix = plugin_matrix(cat, PLUGIN)
    assert {a["partition"] for a in matrix} == {"batch", "extended", "debug"}
    assert {(a["framework"], a["container"]) for a in matrix} == {("pytorch", "custom"), ("jax", "custom")}
    assert check_conformance(cat, PLUGIN) == []


def test_a_registered_image_becomes_the_recommended_default(catalogue):
    """A group that registers the image it pulled gets it as the default, with its pins.
    The projects of the registered image render and lint clean (those with the user's own
    image are the same bytes as without it: test_every_project_renders_and_lints_clean)."""
    matrix = plugin_matrix(catalogue, PLUGIN)
    assert {a["container"] for a in matrix if a["framework"] == "pytorch"} == {
        "recommended", "standin-frontier-pytorch", "custom"}
    assert {a["container"] for a in matrix if a["framework"] == "jax"} == {"custom"}
    assert check_conformance(catalogue, PLUGIN, matrix=[a for a in matrix if a["container"] != "custom"]) == []


def test_copier_copy_makes_a_frontier_project_with_your_image(template, tmp_path):
    """The real `copier copy` command, with the plugin loaded from its entry point."""
    copier = shutil.which("copier")
    if copier is None:
        pytest.skip("the copier command is not on PATH")
    sif = "/lustre/orion/abc123/proj-shared/containers/pytorch.sif"
    env = {**os.environ, "COPIER_SETTINGS_PATH": os.devnull, "LUMI_SCAFFOLD_PLUGINS": PLUGIN}
    env.pop("LUMI_SCAFFOLD_DISABLE_PLUGINS", None)
    made = subprocess.run(
        [copier, "copy", "--trust", "--defaults", "-d", "site=frontier", "-d", "account=abc123", "-d", "project_name=demo",
         "-d", "nodes=2", "-d", f"container_path={sif}", str(template), str(tmp_path / "demo")],
        capture_output=True, text=True, env=env, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    project = tmp_path / "demo"
    values = project_values(project)
    assert values["modules"] == ["load rocm", "load rccl-net-plugin"]
    # Neither module sets binds.
    assert "sets the container's bind paths" not in (project / "scripts/values.sh").read_text()
    assert values["image"] == sif and values["container_command"] == ["apptainer", "exec"]
    for job in ("jobs/train.sbatch", "jobs/smoke-test.sbatch", "jobs/interactive.sh"):
        assert "--mem" not in (project / job).read_text(), job
    assert "#SBATCH --nodes=2" in (project / "jobs/train.sbatch").read_text()
    assert values["launcher"] == "srun" and values["cpu_bind"]  # the launch the jobs share binds the ranks
    assert "container: custom" in (project / ".copier-answers.yml").read_text()
    assert "Billing:" not in (project / "README.md").read_text()  # the fact sheet gives no billing rule
    assert "on a Frontier login node" in made.stderr and "on a Frontier login node" in (project / "README.md").read_text()
    constraints = [line for line in (project / "constraints.txt").read_text().splitlines() if not line.startswith("#")]
    assert not (project / "container").exists() and constraints == []  # your image: nothing pinned by the catalogue
    assert lint_project(project, plugin_catalogue(lumi_site_frontier)) == []


def test_debug_qos_job_lines(catalogue, template, tmp_path):
    answers = {"site": "frontier", "account": "abc123", "partition": "debug", "nodes": 2, "walltime": "01:30:00"}
    project = render_project(template, tmp_path / "p", answers)
    header = [line for line in (project / "jobs/train.sbatch").read_text().splitlines() if line.startswith("#SBATCH")]
    assert "#SBATCH --partition=batch" in header
    assert "#SBATCH --qos=debug" in header
    assert "#SBATCH --time=01:30:00" in header
    assert not [line for line in header if line.startswith("#SBATCH --mem")] and "#SBATCH --exclusive" not in header
    values = project_values(project)
    assert values["container_command"] == ["apptainer", "exec"]
    assert values["modules"] == ["load rocm", "load rccl-net-plugin"]


@pytest.mark.parametrize(
    ("answers", "error"),
    [
        ({"partition": "debug", "walltime": "02:30:00"}, "exceeds the debug limit of 02:00:00"),
        ({"partition": "batch", "nodes": 91, "walltime": "03:00:00"}, "exceeds the batch limit of 02:00:00 for 91 node(s)"),
        ({"partition": "batch", "nodes": 92, "walltime": "06:00:00"}, None),
        ({"partition": "extended", "nodes": 65, "walltime": "20:00:00"}, "extended allows at most 64 nodes"),
        ({"partition": "extended", "nodes": 64, "walltime": "1-00:00:00"}, None),
    ],
)
def test_walltime_and_node_limits(catalogue, answers, error):
    full = {"site": "frontier", "account": "abc123", "framework": "pytorch", "gpus_per_node": 8, **answers}
    problems = check_all(full, catalogue)
    if error is None:
        assert problems == []
    else:
        assert any(error in p for p in problems), problems

