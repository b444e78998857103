"""Plugins from different authors compose (docs/plugins/composing.md): a site plugin with
its own PyTorch image and a framework plugin that runs on PyTorch images (Lightning-like),
written here without knowing each other, installed together. The framework is offered on
the site with the site's image and pins, its projects render, lint clean and pass
conformance, and when the site moves its image, `lumi-scaffold update` moves the project.

TEST DATA: the site is the Setonix-like fixture (tests/fixtures/setonix-like.yaml) renamed;
its image path and versions are made up.
"""

from __future__ import annotations

import subprocess
import types
from pathlib import Path

import pytest

from lumi_scaffold import ContainerImage, Framework, Site, cli, hookimpl, load_data_file
from lumi_scaffold.testing import check_conformance, isolated_catalogue, lint_projects, render_project

from .helpers import DEFAULTS, REPO, template_copy, values

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = REPO / "lumi_scaffold" / "default_plugins" / "examples"
OLD, NEW = "/software/projects/{p}/containers/torch-2.7.sif", "/software/projects/{p}/containers/torch-2.8.sif"


def site_plugin(image_path: str) -> tuple[str, object]:
    """A site author's plugin: the site and its own PyTorch image (nothing about Lightning)."""

    @hookimpl
    def register_sites(register):
        site = load_data_file(FIXTURES / "setonix-like.yaml", Site)
        register(site.model_copy(update={"name": "campus", "title": "Campus MI250X cluster (test data)",
                                         "display_name": "Campus"}))

    @hookimpl
    def register_containers(register):
        register(ContainerImage(id="campus-pytorch", site="campus", framework="pytorch", title="Campus PyTorch (test)",
                                path=image_path.format(p="pawsey0001"), generation="pulled", status="recommended",
                                versions={"torch": "2.7.1", "numpy": "2.1.3"}))

    return "lumi-site-campus", types.SimpleNamespace(register_sites=register_sites,
                                                     register_containers=register_containers)


def on_images_of(base: str, name: str, title: str, distributed_init: str, requirement: str) -> tuple[str, object]:
    """A framework author's plugin ``lumi-framework-<name>``: a framework that runs on any
    site's ``base`` images (nothing about a site), with ``base``'s example scripts."""

    @hookimpl
    def register_frameworks(register):
        register(Framework(
            name=name, title=title, launchers=["srun"], runs_on=base, distributed_init=distributed_init,
            needs_master_addr=base == "pytorch", pinned_packages=["torch" if base == "pytorch" else base],
            requirements=[requirement], smoke_test=(EXAMPLES / f"{base}_smoke.py").read_text(),
            example=(EXAMPLES / f"{base}_train.py").read_text()))

    return f"lumi-framework-{name}", types.SimpleNamespace(register_frameworks=register_frameworks)


def framework_plugin() -> tuple[str, object]:
    """Lightning-like, on any site's PyTorch images (nothing about the campus site)."""
    return on_images_of("pytorch", "lightning", "Lightning-like (test)",
                        "torch.distributed through the trainer, env:// with MASTER_ADDR", "lightning")


ANSWERS = {"project_name": "demo", "site": "campus", "account": "pawsey0001-gpu", "framework": "lightning"}


def test_the_framework_is_offered_on_the_site_with_its_image_and_pins(tmp_path):
    # Of the built-ins only PyTorch (the base) and the profilers: conformance then renders the
    # framework where this test is about, the campus site (on LUMI: tests/test_plugin_packages.py).
    # (PyTorch's LUMI images are left out with the LUMI site: problems of the built-in.)
    with isolated_catalogue(site_plugin(OLD), framework_plugin(), builtins=["pytorch", "profilers"]) as cat:
        assert [str(p) for p in cat.problems if p.plugin.startswith("lumi-")] == []
        assert "lightning" in cat.frameworks_for("campus")
        assert cat.recommended_image("campus", "lightning").id == "campus-pytorch"
        assert cat.container_options("campus", "lightning") == ["recommended", "campus-pytorch", "custom"]
        project = render_project(template_copy(tmp_path / "t"), tmp_path / "p", ANSWERS)
        assert lint_projects([project], cat) == []
        assert cat.frameworks_for("campus") == ["pytorch", "lightning"]
        assert check_conformance(cat, "lumi-framework-lightning") == []
    assert values(project)["image"] == OLD.format(p="pawsey0001")
    assert "The catalogue says it ships: numpy 2.1.3, torch 2.7.1." in (project / "constraints.txt").read_text()
    assert "lightning" in (project / "requirements.txt").read_text().split()  # the framework's, on top


def test_without_the_base_framework_it_is_a_note_not_broken():
    """A framework on another framework's images, where no plugin registers that one, is
    offered with its own images only; `plugins --strict` does not fail on the note."""
    fw = framework_plugin()[1].register_frameworks

    @hookimpl
    def register_frameworks(register):
        fw(lambda f: register(f.model_copy(update={"runs_on": "mxnet"})))

    with isolated_catalogue(("lumi-framework-lightning", types.SimpleNamespace(register_frameworks=register_frameworks))) as cat:
        [note] = [p for p in cat.problems if p.plugin == "lumi-framework-lightning"]
    assert note.kind == "note" and "runs on 'mxnet' images, and no installed plugin registers 'mxnet'" in note.message


def test_an_optional_image_for_a_site_that_is_not_installed_is_a_note():
    @hookimpl
    def register_containers(register):
        register(ContainerImage(id="adastra-lightning", site="adastra", framework="pytorch", title="x",
                                path="/opt/x.sif", generation="g", status="recommended", optional=True,
                                versions={"torch": "2.7.1"}))

    with isolated_catalogue(("lumi-extra", types.SimpleNamespace(register_containers=register_containers))) as cat:
        [note] = [p for p in cat.problems if p.plugin == "lumi-extra"]
        assert "adastra-lightning" not in cat.containers
    assert note.kind == "note" and "site 'adastra' is not registered (optional" in note.message


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def template_repo(tmp_path) -> Path:
    repo = template_copy(tmp_path / "template")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "v1")
    _git(repo, "tag", "v1.0.0")
    return repo


def test_when_the_site_moves_its_image_an_update_moves_the_project(template_repo, tmp_path):
    project = tmp_path / "p"
    with isolated_catalogue(site_plugin(OLD), framework_plugin()):
        render_project(template_repo, project, {**DEFAULTS, **ANSWERS}, vcs_ref="v1.0.0")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "generated")
    with isolated_catalogue(site_plugin(NEW), framework_plugin()):
        assert cli.main(["update", str(project), "-q"]) == 0
    assert values(project)["image"] == NEW.format(p="pawsey0001")
    assert OLD.format(p="pawsey0001") not in (project / "scripts" / "values.sh").read_text()


def test_a_framework_on_jax_images_inherits_jaxs_preflight_benchmark(tmp_path):
    """A Flax-like framework (runs_on: jax, no MASTER_ADDR) in a two-node LUMI project: where
    the image has no all_reduce_perf the preflight falls back on JAX's psum benchmark, as a
    JAX project's does (0.4 gave it none)."""
    plugin = on_images_of("jax", "flaxlike", "Flax-like (test)", "jax.distributed.initialize() from Slurm's variables", "flax")
    with isolated_catalogue(plugin, builtins=["lumi", "jax", "profilers"]) as cat:
        assert "flaxlike" in cat.frameworks_for("lumi")
        project = render_project(template_copy(tmp_path / "t"), tmp_path / "p", {**DEFAULTS, "framework": "flaxlike", "nodes": 2})
    v = values(project)
    assert v["preflight_benchmark"] == "scripts/lib/allreduce_bench.py"
    assert v["preflight_benchmark_args"][:2] == ["--framework", "jax"]


def test_a_requirement_no_image_version_satisfies_is_refused_at_load_and_the_rest_merge_by_name(tmp_path):
    """A Flax-like framework asking for flax>=0.10 on LUMI's JAX images: the legacy image's
    flax==0.8.3 admits no such version, so that image is not offered for it (one problem
    naming both requirements and both plugins); with the recommended image (flax==0.10.4)
    requirements.txt has one flax line that holds both."""
    plugin = on_images_of("jax", "flaxlike", "Flax-like (test)", "jax.distributed.initialize() from Slurm's variables",
                          "flax>=0.10")
    with isolated_catalogue(plugin, builtins=["lumi", "jax", "profilers"]) as cat:
        problems = [str(p) for p in cat.problems if "flaxlike" in str(p)]
        assert problems == [
            "plugin 'lumi-framework-flaxlike': not offered with container 'lust-jax-0.4.28' (plugin jax): framework "
            "'flaxlike' requires flax>=0.10 and container 'lust-jax-0.4.28' requires flax==0.8.3: flax>=0.10 admits no "
            "0.8.3. Fix: change one of them so that a version satisfies both"]
        assert [c.id for c in cat.images("lumi", "flaxlike")] == ["lust-jax-0.4.35"]
        assert [c.id for c in cat.images("lumi", "jax")] == ["lust-jax-0.4.35", "lust-jax-0.4.28"]  # JAX keeps both
        project = render_project(template_copy(tmp_path / "t"), tmp_path / "p", {**DEFAULTS, "framework": "flaxlike"})
        from lumi_scaffold.questions import check

        assert check("extra_requirements", "optax<0.2 wandb", {**DEFAULTS, "site": "lumi", "framework": "jax"}, cat) == (
            "optax<0.2 conflicts with optax==0.2.5, which the image lust-jax-0.4.35 needs (optax<0.2 admits no 0.2.5). "
            "Leave it out, or give a requirement optax==0.2.5 admits.")
    lines = (project / "requirements.txt").read_text().splitlines()
    assert [line for line in lines if line.startswith("flax")] == ["flax==0.10.4,>=0.10"]
