"""Plugins written for an older SDK keep working (docs/plugins/compatibility.md).

The Frontier and DeepSpeed example plugins as released with 0.2.0, 0.3.0 and 0.4.0
(tests/fixtures/plugins-0.2.0, plugins-0.3.0 and plugins-0.4.0, each taken unchanged from its release commit;
docs/plugins/compatibility.md: a release that changes that page adds the plugins of the
release before) are installed with pip into a directory of their
own and put first on the path of a fresh Python, beside the SDK of this checkout: they are
found through their entry points and metadata like any installed plugin (they win over the
current example plugins that may be installed in this Python). A project is rendered and
linted with each."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from lumi_scaffold import PLUGIN_API, __version__, plugins

from .helpers import REPO, template_copy, values

NAMES = ("lumi-site-frontier", "lumi-framework-deepspeed")
# Each earlier release whose example plugins are kept, and the versions those plugins had then.
RELEASED = {"0.2.0": ("0.2.0", "0.2.0"), "0.3.0": ("0.2.0", "0.2.0"), "0.4.0": ("0.2.0", "0.3.0")}

# Runs in the fresh Python: renders and lints a project per answers, prints what it found.
SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import lumi_site_frontier, lumi_framework_deepspeed
    from lumi_scaffold import plugins
    from lumi_scaffold.lint import lint_project
    from lumi_scaffold.testing import render_project
    from tests.lint_memo import install_in_process
    install_in_process(sys.argv[-1])

    template, out, cases = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
    cat = plugins.get_catalogue()
    report = {"versions": cat.plugin_versions(), "problems": [str(p) for p in cat.problems],
              "modules": [lumi_site_frontier.__file__, lumi_framework_deepspeed.__file__], "projects": {}}
    for name, answers in cases.items():
        project = render_project(template, out / name, answers)
        report["projects"][name] = {"lint": lint_project(project, cat)}
    print(json.dumps(report))
""")

CASES = {
    "frontier": {"project_name": "demo", "site": "frontier", "account": "abc123", "framework": "pytorch"},
    "deepspeed": {"project_name": "demo", "site": "lumi", "account": "project_465000000", "framework": "deepspeed",
                  "nodes": 2},
    "frontier-deepspeed": {"project_name": "demo", "site": "frontier", "account": "abc123", "framework": "deepspeed"},
}


@pytest.fixture(scope="module", params=sorted(RELEASED))
def released(request, tmp_path_factory) -> tuple[Path, str]:
    """The plugins of one earlier release installed (pip, no dependencies, no build isolation:
    offline) into a target directory, and the version they had; copies are built, so the
    fixtures stay as released."""
    fixtures = Path(__file__).parent / "fixtures" / f"plugins-{request.param}"
    root = tmp_path_factory.mktemp("released")
    sources = [shutil.copytree(fixtures / name, root / "src" / name) for name in NAMES]
    target = root / "site-packages"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-compile", "--disable-pip-version-check", "--target", str(target), *map(str, sources)],
                   check=True, capture_output=True, text=True)
    return target, dict(zip(NAMES, RELEASED[request.param]))


def test_the_plugins_as_released_before_render_and_lint_with_this_sdk(released, tmp_path, _shellcheck_memo_dir):
    released, versions = released
    env = {k: v for k, v in os.environ.items() if k not in (plugins.ENV_DISABLE, plugins.ENV_LOAD)}
    env["PYTHONPATH"] = os.pathsep.join([str(released), str(REPO)])
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(template_copy(tmp_path / "template")), str(tmp_path),
                             json.dumps(CASES), str(_shellcheck_memo_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert all(Path(module).is_relative_to(released) for module in report["modules"]), report["modules"]
    assert {name: report["versions"][name] for name in NAMES} == versions
    assert [p for p in report["problems"] if p.startswith(tuple(f"plugin {n!r}" for n in NAMES))] == []
    for name, project in report["projects"].items():
        assert project["lint"] == [], name
    # What each plugin brings is in the projects: Frontier's modules, DeepSpeed's image.
    assert [m for m in values(tmp_path / "frontier")["modules"] if m.split()[:2] == ["load", "rocm"]]
    image = values(tmp_path / "deepspeed")["image"]
    assert "laif-deepspeed" in image or "lumi-multitorch" in image


def test_the_compatibility_page_lists_what_plugins_may_rely_on():
    """Every hook, Jinja global and filter and lumi_scaffold.testing name is on the page, and
    the page's newest API version is PLUGIN_API: adding one without writing it down fails."""
    import jinja2

    from lumi_scaffold import copier_ext, hookspecs, testing

    page = (REPO / "docs/plugins/compatibility.md").read_text()
    hooks = [name for name in vars(hookspecs) if name.startswith("register_")]
    env = jinja2.Environment(extensions=[copier_ext.LumiExtension])
    globals_ = [name for name in env.globals if name.startswith("lumi_")]
    filters = [name for name in env.filters if name.startswith("lumi_")]
    assert len(hooks) == 6 and len(globals_) >= 9 and len(filters) >= 5
    missing = [name for name in [*hooks, *globals_, *filters, *testing.__all__] if f"`{name}" not in page]
    assert missing == []
    rows = [line for line in page.splitlines() if line.startswith(f"| {PLUGIN_API[0]}.")]
    assert rows and rows[-1].startswith(f"| {PLUGIN_API[0]}.{PLUGIN_API[1]} | ")


@pytest.mark.parametrize("declared, loads", [("1.0", True), ("1.1", True), ("1.2", True), ("1.3", True), ("1.4", False), ("2.0", False)])
def test_a_plugin_that_needs_a_newer_api_is_reported_by_name_not_loaded(tmp_path, monkeypatch, declared, loads):
    from .helpers import write_plugin_dist

    source = (f'LUMI_SCAFFOLD_API = "{declared}"\nfrom lumi_scaffold import hookimpl\n'
              "@hookimpl\ndef register_profilers(register):\n"
              "    register({'name': 'newprof', 'title': 'New', 'kind': 'none'})\n")
    module = f"newer_plugin_{declared.replace('.', '_')}"  # one module per case (imports are cached)
    write_plugin_dist(tmp_path, "lumi-newer", {"newer": module}, {module: source})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(plugins.ENV_LOAD, "newer")
    plugins.reset()
    try:
        cat = plugins.get_catalogue()
    finally:
        plugins.reset()
    assert ("newprof" in cat.profilers) is loads
    have = f"{PLUGIN_API[0]}.{PLUGIN_API[1]}"
    expected = [] if loads else [
        f"plugin 'newer': needs plugin API {declared}, and lumi-scaffold {__version__} has {have}; not loaded. "
        "Fix: upgrade lumi-scaffold (pipx upgrade lumi-scaffold, or uv tool upgrade lumi-scaffold)"]
    assert [str(p) for p in cat.problems] == expected


def test_a_check_that_0_3_warned_about_is_refused_now():
    """0.2 took a registered instance as it was. One changed with model_copy so that only a
    check across its fields fails (a default partition it no longer has) was used by 0.3,
    with a warning that 0.4 would refuse it (docs/plugins/compatibility.md, "Warn first,
    then refuse"). 0.4 refuses it: the site is left out, with one line naming the plugin,
    what is refused and the fix."""
    from lumi_scaffold import hookimpl
    from lumi_scaffold.testing import plugin_catalogue

    lumi = plugin_catalogue().sites["lumi"]

    @hookimpl
    def register_sites(register):
        register(lumi.model_copy(update={"name": "shared", "cotainr": None, "own_image_frameworks": "all",
                                         "partitions": [p for p in lumi.partitions if p.allocation == "by-resource"]}))

    cat = plugin_catalogue(("lumi-site-shared", types.SimpleNamespace(register_sites=register_sites)))
    assert "shared" not in cat.sites
    [problem] = cat.problems
    assert problem.kind == "error" and str(problem) == (
        "plugin 'lumi-site-shared': site 'shared': (object): whole_node_partition='standard-g' is not one of the "
        "partitions ['small-g', 'dev-g']. Refused since lumi-scaffold 0.4 (0.3 warned and used it). Fix: make the "
        "Site with Site(...) or model_validate, not model_construct or model_copy, and correct what the check names")


LMOD_SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import lumi_site_frontier
    from lumi_scaffold import plugins
    from lumi_scaffold.lint import lint_project
    from lumi_scaffold.testing import render_project
    from tests.lint_memo import install_in_process
    install_in_process(sys.argv[-1])

    answers = {"project_name": "demo", "site": "frontier", "account": "abc123", "framework": "pytorch"}
    project = render_project(sys.argv[1], Path(sys.argv[2]) / "lmod", answers)
    print(json.dumps({"problems": [str(p) for p in plugins.get_catalogue().problems], "module": lumi_site_frontier.__file__,
                      "lint": lint_project(project, plugins.get_catalogue())}))
""")


def test_a_0_2_site_whose_modules_are_lmod_name_version_renders(tmp_path, _shellcheck_memo_dir):
    """The Frontier plugin as released with 0.2, its modules written as Lmod's name/version
    (a third party's 0.2 site loaded `singularity/4.1.0-slurm`): it loaded cleanly under
    0.3, then every copy failed (`container.module: must be a plain name`)."""
    fixture = Path(__file__).parent / "fixtures" / "plugins-0.2.0" / "lumi-site-frontier"
    source = shutil.copytree(fixture, tmp_path / "src" / "lumi-site-frontier")
    data = source / "lumi_site_frontier" / "frontier.yaml"
    text = data.read_text()
    assert "      - name: rocm\n" in text and "      - name: rccl-net-plugin\n" in text
    data.write_text(text.replace("      - name: rocm\n", "      - name: rocm/6.2.4\n")
                    .replace("      - name: rccl-net-plugin\n", "      - name: singularity/4.1.0-slurm\n"))
    target = tmp_path / "site-packages"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-compile", "--disable-pip-version-check", "--target", str(target), str(source)],
                   check=True, capture_output=True, text=True)
    env = {k: v for k, v in os.environ.items() if k not in (plugins.ENV_DISABLE, plugins.ENV_LOAD)}
    env["PYTHONPATH"] = os.pathsep.join([str(target), str(REPO)])
    result = subprocess.run([sys.executable, "-c", LMOD_SCRIPT, str(template_copy(tmp_path / "template")), str(tmp_path),
                             str(_shellcheck_memo_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert Path(report["module"]).is_relative_to(target)
    assert [p for p in report["problems"] if "frontier" in p] == []
    assert report["lint"] == []
    modules = values(tmp_path / "lmod")["modules"]
    assert "load rocm/6.2.4" in modules and "load singularity/4.1.0-slurm" in modules
