"""Plugin packages as users get them: installed with pip, offered by the questionnaire,
gone when switched off; the plugin template and the tutorial plugin, installed into a
fresh virtual environment, pass their own tests.

Needs the example plugins installed in this Python (the README's test command does it):
    pip install -e plugins/lumi-site-frontier -e plugins/lumi-framework-deepspeed
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import types
from pathlib import Path

import pytest

from lumi_scaffold import ContainerImage, cli, hookimpl, plugins
from lumi_scaffold.lint import lint_project
from lumi_scaffold.questions import check, choices
from lumi_scaffold.testing import check_conformance, isolated_catalogue, plugin_catalogue, plugin_matrix, render_project

from .copier_shortcuts import ENV as SHORTCUTS_ENV
from .helpers import REPO, values, write_plugin_dist
from .lint_memo import MEMO_ENV
from .venvs import nested_venv

FRONTIER, DEEPSPEED = "lumi-site-frontier", "lumi-framework-deepspeed"
TUTORIAL = REPO / "docs" / "plugins" / "tutorial-plugin"


@pytest.fixture(autouse=True)
def _example_plugins_installed(monkeypatch):
    for name in (plugins.ENV_LOAD, plugins.ENV_DISABLE):  # every installed plugin, whatever conftest chose
        monkeypatch.delenv(name, raising=False)
    installed = {ep.name for ep in importlib.metadata.entry_points(group=plugins.ENTRY_POINT_GROUP)}
    missing = sorted({FRONTIER, DEEPSPEED} - installed)
    if missing:
        message = f"not installed: {missing}; pip install -e plugins/lumi-site-frontier -e plugins/lumi-framework-deepspeed"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI must install them (.ci/run)
        pytest.skip(message)
    plugins.reset()
    yield
    plugins.reset()


@hookimpl
def register_containers(register):
    # Stands in for an image a Frontier user pulled: test data, not a fact about Frontier.
    register(ContainerImage(
        id="standin-frontier-pytorch", site="frontier", framework="pytorch", title="Stand-in for a pulled image",
        path="/lustre/orion/abc123/proj-shared/containers/pytorch.sif", generation="explicit",
        status="recommended", versions={"torch": "0.0.0"},
    ))


STAND_IN = ("standin-image", types.SimpleNamespace(register_containers=register_containers))


def _values(options: dict) -> list:
    return list(options.values())


# ---------------------------------------------------------------- installed plugins


def test_installed_plugins_add_their_choices():
    cat = plugins.get_catalogue()
    assert "frontier" in _values(choices("site", {}, cat))
    assert "deepspeed" in _values(choices("framework", {"site": "lumi"}, cat))
    # DeepSpeed runs on the PyTorch images (runs_on): LUMI's are offered for it.
    assert "laif-multitorch-20260513" in _values(choices("container", {"site": "lumi", "framework": "deepspeed"}, cat))
    assert [p for p in cat.problems if p.plugin in (FRONTIER, DEEPSPEED)] == []
    versions = cat.plugin_versions()
    assert (versions[FRONTIER], versions[DEEPSPEED]) == ("0.2.0", "0.3.0")
    # No central Frontier image [OLCF-CT]: every framework, each with the user's own image.
    assert _values(choices("framework", {"site": "frontier"}, cat)) == ["pytorch", "jax", "deepspeed"]
    assert _values(choices("container", {"site": "frontier", "framework": "deepspeed"}, cat)) == ["custom"]


def test_switching_a_plugin_off_removes_its_choices(monkeypatch):
    monkeypatch.setenv(plugins.ENV_DISABLE, FRONTIER)
    plugins.reset()
    cat = plugins.get_catalogue()
    assert "frontier" not in _values(choices("site", {}, cat))
    assert "install the site's plugin" in check("site", "frontier", {"site": "frontier"}, cat)
    assert "deepspeed" in cat.frameworks_for("lumi")  # the other one stays

    monkeypatch.setenv(plugins.ENV_DISABLE, f"{FRONTIER},{DEEPSPEED}")
    plugins.reset()
    cat = plugins.get_catalogue()
    assert "deepspeed" not in _values(choices("framework", {"site": "lumi"}, cat))
    assert "laif-deepspeed-20260513" not in cat.containers and "ds_config.json" not in [f.name for f in cat.files]
    assert check("framework", "deepspeed", {"site": "lumi"}, cat).startswith("site 'lumi' has no container image")


def test_a_broken_plugin_beside_them_is_reported_and_they_still_work(fake_site_packages):
    write_plugin_dist(fake_site_packages, "lumi-broken", {"broken": "fakeplug_broken"},
                      {"fakeplug_broken": "import no_such_module_anywhere\n"})
    cat = plugins.get_catalogue()
    assert [p.plugin for p in cat.problems] == ["broken"]
    assert "frontier" in cat.sites and "deepspeed" in cat.frameworks_for("lumi")


@pytest.mark.slow
def test_every_combination_where_they_meet_renders_and_lints_clean(monkeypatch):
    # Each plugin's own tests render its whole matrix (plugins/*/tests, with the built-ins;
    # Frontier's with a stand-in image as well). What only this test renders: the projects
    # where the two plugins, written apart, meet (DeepSpeed on Frontier), with every plugin
    # installed, through the matrix's shortcuts.
    from lumi_scaffold import testing

    from .copier_shortcuts import render_many

    monkeypatch.setattr(testing, "render_many", render_many)
    cat = plugin_catalogue(STAND_IN, installed=True)
    deepspeed = plugin_matrix(cat, DEEPSPEED)
    # PyTorch's images (runs_on) are covered by "recommended": 3 containers x 3 areas x 2 x 3 profilers x 4 shapes
    assert len([a for a in deepspeed if a["site"] == "lumi"]) == 216
    # On Frontier DeepSpeed runs on the (stand-in) PyTorch image there, or the user's own: the
    # two plugins do not know each other (runs_on).
    assert {a["container"] for a in deepspeed if a["site"] == "frontier"} == {"recommended", "custom"}
    assert {a["partition"] for a in plugin_matrix(cat, FRONTIER)} == {"batch", "extended", "debug"}

    def where_they_meet(catalogue, plugin):
        found = [a for a in plugin_matrix(catalogue, DEEPSPEED) if a["site"] == "frontier"]
        assert found and {a["partition"] for a in found} == {"batch", "extended", "debug"}
        return found if plugin == DEEPSPEED else []  # (the same projects: rendered once)

    monkeypatch.setattr(testing, "plugin_matrix", where_they_meet)
    # (DeepSpeed's example script, which conformance runs too, is run where DeepSpeed is
    # installed by tests/test_script_contract.py: not three times more here.)
    assert check_conformance(cat, DEEPSPEED, run_examples=False) == []
    assert check_conformance(cat, FRONTIER) == []
    assert check_conformance(plugins.get_catalogue(), DEEPSPEED, run_examples=False) == []  # no image on Frontier: the user's own


# ---------------------------------------------------------------- Frontier job lines


def _header(path: Path) -> dict[str, str]:
    found = re.findall(r"^#SBATCH --([a-z-]+)(?:=(\S+))?$", path.read_text(), re.M)
    return dict(found)


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ({"partition": "debug", "walltime": "02:00:00"}, {"partition": "batch", "qos": "debug", "time": "02:00:00"}),
        ({"partition": "batch", "nodes": 92, "walltime": "06:00:00"}, {"partition": "batch", "time": "06:00:00", "nodes": "92"}),
        ({"partition": "extended", "nodes": 64, "walltime": "1-00:00:00"}, {"partition": "extended", "time": "1-00:00:00"}),
    ],
)
def test_frontier_project_has_the_right_partition_qos_and_time(template, tmp_path, answers, expected):
    with isolated_catalogue(STAND_IN, installed=True) as cat:
        project = render_project(template, tmp_path / "p", {"site": "frontier", "account": "abc123", "nodes": 2, **answers})
        assert lint_project(project, cat) == []
    train, smoke = _header(project / "jobs/train.sbatch"), _header(project / "jobs/smoke-test.sbatch")
    assert {k: train.get(k) for k in expected} == expected
    assert ("qos" in train) == ("qos" in expected)
    assert (train["cpus-per-task"], train["gpus-per-node"]) == ("7", "8")
    assert "mem" not in train and "mem-per-gpu" not in smoke  # no memory figure in the fact sheet
    assert (smoke["partition"], smoke["qos"], smoke["time"]) == ("batch", "debug", "00:10:00")


@pytest.mark.parametrize(
    ("answers", "fragment"),
    [
        ({"partition": "debug", "walltime": "02:00:01"}, "exceeds the debug limit of 02:00:00"),
        ({"partition": "batch", "nodes": 91, "walltime": "02:30:00"}, "exceeds the batch limit of 02:00:00 for 91 node(s)"),
        ({"partition": "extended", "nodes": 65}, "extended allows at most 64 nodes"),
    ],
)
def test_frontier_limits_are_enforced_when_generating(template, tmp_path, capsys, answers, fragment):
    data = [f"--data={k}={v}" for k, v in {"site": "frontier", "account": "abc123", **answers}.items()]
    with isolated_catalogue(STAND_IN, installed=True):
        code = cli.main(["new", str(tmp_path / "p"), "--defaults", "--quiet", "--template", str(template), *data])
    err = capsys.readouterr().err
    assert code == 1 and fragment in err and "Traceback" not in err


# ---------------------------------------------------------------- new-plugin and the tutorial


def test_new_plugin_refuses_bad_input_cleanly(tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    assert cli.main(["new-plugin", str(tmp_path / "taken"), "--defaults"]) == 1
    assert cli.main(["new-plugin", str(tmp_path / "a"), "--defaults", "-d", "name=My_Cluster"]) == 1
    assert cli.main(["new-plugin", str(tmp_path / "b"), "--defaults", "-d", "kind=framework", "-d", "name=jax"]) == 1
    assert cli.main(["new-plugin", str(tmp_path / "c"), "--defaults", "-d", "kindname"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4 and all(line.startswith("lumi-scaffold: error: ") for line in lines), lines
    assert "exists and is not an empty directory" in lines[0]
    assert lines[1].startswith("lumi-scaffold: error: name: My_Cluster is not a valid name")
    assert "built into lumi-scaffold" in lines[2] and "NAME=VALUE" in lines[3]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh virtual environment that sees this Python's packages (lumi-scaffold, pytest, pip, setuptools)."""
    return nested_venv(tmp_path_factory.mktemp("venv") / "venv")


def _pip_install(python: Path, package: Path) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", str(package)],
                   check=True, capture_output=True, text=True)


def _pytest(python: Path, tests: Path, memo: Path) -> subprocess.CompletedProcess:
    """The plugin's own tests, with the suite's shellcheck memo (tests/lint_memo.py) and Copier
    shortcuts (tests/copier_shortcuts.py) as plugins."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update({MEMO_ENV: str(memo), SHORTCUTS_ENV: "1",
                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))})
    return subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.lint_memo",
                           "-p", "tests.copier_shortcuts", str(tests)], capture_output=True, text=True, env=env,
                          cwd=tests.parent)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["site", "framework"])
def test_new_plugin_package_installs_and_passes_its_tests(venv, tmp_path, kind, _shellcheck_memo_dir):
    dest = tmp_path / "plugin"
    assert cli.main(["new-plugin", str(dest), "--defaults", "-q", "-d", f"kind={kind}", "-d", "name=demo"]) == 0
    package = f"lumi_{kind}_demo"
    assert (dest / "pyproject.toml").read_text().count(f'lumi-{kind}-demo = "{package}"') == 1
    _pip_install(venv, dest)
    shutil.copytree(dest / "tests", tmp_path / "tests")  # run them away from the source tree
    result = _pytest(venv, tmp_path / "tests", _shellcheck_memo_dir)
    assert result.returncode == 0, result.stdout[-3000:]
    assert re.search(r"\b3 passed\b", result.stdout), result.stdout[-500:]
    # The framework's conformance ran its example (check_example: no warning that it could
    # not): the one test of the new-plugin example's training-script contract.
    assert "example not run" not in result.stdout, result.stdout[-3000:]


def _tutorial_blocks() -> list[tuple[str, str]]:
    text = (REPO / "docs" / "plugins" / "tutorial.md").read_text()
    return re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```\n", text, re.S)


def test_tutorial_shows_the_files_of_the_tutorial_plugin_exactly():
    blocks = dict(_tutorial_blocks())
    kept = sorted(str(p.relative_to(TUTORIAL)) for p in TUTORIAL.rglob("*")
                  if p.suffix in (".py", ".toml", ".yaml") and not {"build", "__pycache__"} & set(p.parts))
    assert sorted(blocks) == kept
    for rel, shown in blocks.items():
        assert shown == (TUTORIAL / rel).read_text(), rel


def test_tutorial_error_message_is_the_real_one(tmp_path):
    from lumi_scaffold import Site, load_data_file
    from lumi_scaffold.errors import DataFileError

    text = (REPO / "docs" / "plugins" / "tutorial.md").read_text()
    shown = re.search(r"`(campus\.yaml:\d+:\d+: node: mask (0x[0-9a-f]+) \(rank 0\)[^`]*)`", text)
    bad = tmp_path / "campus.yaml"
    bad.write_text((TUTORIAL / "lumi_site_campus/campus.yaml").read_text().replace("'0x000000fe'", f"'{shown.group(2)}'"))
    with pytest.raises(DataFileError) as error:
        load_data_file(bad, Site)
    assert str(error.value) == str(bad.parent / shown.group(1))


@pytest.mark.slow
def test_tutorial_plugin_installs_and_works_as_written(venv, tmp_path, template, _shellcheck_memo_dir):
    source = shutil.copytree(TUTORIAL, tmp_path / "source", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    _pip_install(venv, source)  # from a copy: building writes build/ and *.egg-info beside the sources
    shutil.copytree(TUTORIAL / "tests", tmp_path / "tests")
    result = _pytest(venv, tmp_path / "tests", _shellcheck_memo_dir)
    assert result.returncode == 0 and re.search(r"\b3 passed\b", result.stdout), result.stdout[-3000:]

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(venv), "-m", "lumi_scaffold.cli", *args], capture_output=True, text=True)

    listing = cli("plugins").stdout
    assert "lumi-site-campus (lumi-site-campus 0.1.0)" in listing and "sites: campus" in listing
    assert "containers: campus-pytorch-2.10" in listing
    made = cli("new", str(tmp_path / "campus-demo"), "--defaults", "-q", "--template", str(template),
               "-d", "site=campus", "-d", "account=mlgroup", "-d", "nodes=2")
    assert made.returncode == 0, made.stderr
    sbatch = (tmp_path / "campus-demo/jobs/train.sbatch").read_text()
    assert "#SBATCH --partition=gpu-large" in sbatch and "#SBATCH --ntasks-per-node=4" in sbatch
    assert values(tmp_path / "campus-demo")["cpu_bind"] == "verbose,mask_cpu:0x000000fe,0x00007f00,0x00fe0000,0x7f000000"
    refused = cli("new", str(tmp_path / "too-long"), "--defaults", "-q", "--template", str(template),
                  "-d", "site=campus", "-d", "account=mlgroup", "-d", "nodes=3", "-d", "walltime=1-00:00:00")
    assert refused.returncode == 1 and "gpu-large limit of 12:00:00 for 3 node(s)" in refused.stderr


def test_plugin_docs_links_resolve():
    for page in sorted((REPO / "docs" / "plugins").glob("*.md")):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target:
                assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_new_plugin_needs_what_made_it_and_says_so(tmp_path, capsys):
    """The scaffolded package declares the plugin API and lumi-scaffold series that made it
    (0.3's scaffold asked for lumi-scaffold>=0.2), and the output names them instead of
    Copier's "template version None"; plain `copier copy` of the plugin template gets the
    same values from its defaults."""
    import yaml

    from lumi_scaffold import PLUGIN_API, __version__
    from lumi_scaffold.newplugin import TEMPLATE_DIR

    api, series = f"{PLUGIN_API[0]}.{PLUGIN_API[1]}", ".".join(__version__.split(".")[:2])
    defaults = yaml.safe_load((TEMPLATE_DIR / "copier.yml").read_text())
    assert (defaults["plugin_api"]["default"], defaults["lumi_scaffold_min"]["default"]) == (api, series)
    dest = tmp_path / "plugin"
    assert cli.main(["new-plugin", str(dest), "--defaults"]) == 0
    err = capsys.readouterr().err
    assert "version None" not in err
    assert f"made by lumi-scaffold {__version__} for plugin API {api}" in err
    assert f'dependencies = ["lumi-scaffold>={series}"]' in (dest / "pyproject.toml").read_text()
    assert f'LUMI_SCAFFOLD_API = "{api}"' in (dest / "lumi_site_mycluster" / "__init__.py").read_text()
