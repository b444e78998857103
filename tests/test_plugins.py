"""Plugin loading: built-ins first, every third-party plugin isolated, problems named."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from lumi_scaffold import hookimpl, plugins

from .helpers import write_plugin_dist

GOOD_SITE = """
from lumi_scaffold import hookimpl
from lumi_scaffold.datafile import load_data_file
from lumi_scaffold.default_plugins._common import HERE
from lumi_scaffold.models import Site

@hookimpl
def register_sites(register):
    site = load_data_file(HERE / "lumi.yaml", Site).model_dump()
    site["name"], site["title"] = "othersite", "Another MI250X site"
    register(site)
"""


def load():
    pm, infos, problems = plugins.make_plugin_manager()
    return plugins.build_catalogue(pm, infos, problems)


def problem_text(cat) -> str:
    return "\n".join(str(p) for p in cat.problems)


def test_builtins_load_and_register():
    cat = load()
    assert [p.name for p in cat.plugins][:4] == ["lumi", "pytorch", "jax", "profilers"]
    assert cat.problems == []
    assert cat.recommended_image("lumi", "pytorch").generation == "laif"
    assert cat.recommended_image("lumi", "jax").id == "lust-jax-0.4.35"
    assert cat.provenance[("site", "lumi")] == "lumi"


def test_lumi_legacy_images_have_stable_names():
    """/appl/local/containers/sif-images entries are symlinks to the latest build that "can
    change without notice" [EBC-PT]: a venv made for one could not see a swap. Every former
    LUST image is the EasyBuild copy, whose name carries the image's -dockerhash-."""
    cat = load()
    legacy = [c for c in cat.containers.values() if c.site == "lumi" and c.generation == "legacy-sif"]
    assert {c.framework for c in legacy} == {"pytorch", "jax"}
    for c in legacy:
        assert c.path.startswith("/appl/local/containers/easybuild-sif-images/"), (c.id, c.path)
        assert re.search(r"-dockerhash-[0-9a-f]{12}\.sif$", c.path), (c.id, c.path)


def test_third_party_plugin_is_loaded_with_version(fake_site_packages):
    write_plugin_dist(fake_site_packages, "lumi-site-other", {"other": "fakeplug_other"}, {"fakeplug_other": GOOD_SITE}, "2.3")
    cat = load()
    info = next(p for p in cat.plugins if p.name == "other")
    assert (info.distribution, info.version, info.hooks) == ("lumi-site-other", "2.3", ["register_sites"])
    assert info.registered == {"site": ["othersite"]}
    assert "othersite" in cat.sites and cat.problems == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import not_a_module_anywhere\n", "cannot load: ModuleNotFoundError: No module named 'not_a_module_anywhere'"),
        ("raise RuntimeError('boom at import')\n", "cannot load: RuntimeError: boom at import"),
        (
            "from lumi_scaffold import hookimpl\n@hookimpl\ndef register_sites(register, extra):\n    pass\n",
            "cannot load: PluginValidationError: Plugin 'broken' for hook 'register_sites'; hookimpl definition: "
            "register_sites(register, extra); Argument(s) {'extra'} are declared in the hookimpl but can not be found "
            "in the hookspec",
        ),
        (
            "from lumi_scaffold import hookimpl\n@hookimpl\ndef register_site(register):\n    pass\n",
            "implements unknown hook 'register_site'; known hooks:",
        ),
        (
            "from lumi_scaffold import hookimpl\n@hookimpl\ndef register_sites(register):\n    raise KeyError('oops')\n",
            "hook register_sites failed: KeyError: 'oops'",
        ),
        (
            "from lumi_scaffold import hookimpl\n@hookimpl\ndef register_profilers(register):\n"
            "    register({'name': 'nsys', 'title': 't', 'kind': 'command', 'command': ['nsys', 'a b']})\n",
            "profiler 'nsys': command.1: 'a b' may only contain",
        ),
        (
            "from lumi_scaffold import hookimpl\n@hookimpl\ndef register_frameworks(register):\n    register(42)\n",
            "register() for frameworks got int, expected Framework or dict",
        ),
        (
            "from lumi_scaffold import hookimpl\n@hookimpl\ndef register_profilers(register):\n"
            "    register({'name': 'none', 'title': 'again', 'kind': 'none'})\n",
            "profiler 'none' is already registered by plugin 'profilers'; ignored",
        ),
    ],
    ids=["missing-module", "import-error", "bad-signature", "misspelled-hook", "hook-raises", "invalid-data", "wrong-type", "duplicate-name"],
)
def test_broken_plugin_is_named_and_the_rest_load(fake_site_packages, source, expected):
    write_plugin_dist(fake_site_packages, "lumi-broken", {"broken": "fakeplug_broken"}, {"fakeplug_broken": source})
    write_plugin_dist(fake_site_packages, "lumi-site-other", {"other": "fakeplug_other"}, {"fakeplug_other": GOOD_SITE})
    cat = load()
    assert [str(p) for p in cat.problems if p.plugin == "broken"], problem_text(cat)
    assert expected in problem_text(cat)
    assert {"lumi", "othersite"} <= set(cat.sites)
    assert {"pytorch", "jax"} <= set(cat.frameworks)
    assert cat.profilers["none"].title == "No profiling"


def test_duplicate_entry_point_names_are_reported(fake_site_packages):
    write_plugin_dist(fake_site_packages, "dist-a", {"same": "fakeplug_a"}, {"fakeplug_a": GOOD_SITE})
    write_plugin_dist(fake_site_packages, "dist-b", {"same": "fakeplug_b"}, {"fakeplug_b": "x = 1\n"})
    cat = load()
    assert "entry point name 'same' from dist-" in problem_text(cat)
    write_plugin_dist(fake_site_packages, "dist-c", {"lumi": "fakeplug_b"}, {})
    assert "already used by lumi-scaffold (built-in)" in problem_text(load())


def test_hooks_without_hookimpl_are_reported(fake_site_packages):
    """A module whose register_* functions lack @hookimpl registers nothing: say so."""
    unmarked = "def register_sites(register):\n    register({})\n"
    half = GOOD_SITE + "\ndef register_containers(register):\n    pass\n\ndef register_helper():\n    pass\n"
    write_plugin_dist(fake_site_packages, "lumi-none", {"none-marked": "fakeplug_none"}, {"fakeplug_none": unmarked})
    write_plugin_dist(fake_site_packages, "lumi-half", {"half": "fakeplug_half"}, {"fakeplug_half": half})
    cat = load()
    assert [str(p) for p in cat.problems] == [
        "plugin 'half': register_containers is not marked @hookimpl, so pluggy never calls it. "
        "Fix: `from lumi_scaffold import hookimpl` and put @hookimpl above each hook function",
        "plugin 'none-marked': register_sites is not marked @hookimpl, so the plugin registers nothing. "
        "Fix: `from lumi_scaffold import hookimpl` and put @hookimpl above each hook function",
    ]
    assert "othersite" in cat.sites  # the marked hook of the same plugin works


@pytest.mark.parametrize("kind", ["site", "framework"])
def test_a_contested_site_or_framework_name_is_refused_for_every_plugin(fake_site_packages, kind):
    if kind == "site":  # two third-party plugins with the same site name
        first = second = GOOD_SITE
        name, store = "othersite", "sites"
    else:  # a third-party framework named like the built-in one
        first = second = ("from lumi_scaffold import hookimpl\nfrom lumi_scaffold.default_plugins._common import framework\n"
                          "@hookimpl\ndef register_frameworks(register):\n    register(framework('jax'))\n")
        name, store = "jax", "frameworks"
    write_plugin_dist(fake_site_packages, "lumi-a", {"aaa": "fakeplug_a"}, {"fakeplug_a": first})
    write_plugin_dist(fake_site_packages, "lumi-b", {"bbb": "fakeplug_b"}, {"fakeplug_b": second})
    cat = load()
    assert name not in getattr(cat, store)
    contested = [p for p in cat.problems if p.message.startswith(f"{kind} {name!r} refused")]
    owners = ["aaa", "bbb"] if kind == "site" else ["jax", "aaa", "bbb"]
    assert sorted(p.plugin for p in contested) == sorted(owners), problem_text(cat)
    listed = " and ".join(repr(o) for o in owners)
    assert all(f"plugins {listed} {'both' if len(owners) == 2 else 'all'} register it" in p.message for p in contested)
    assert all("LUMI_SCAFFOLD_DISABLE_PLUGINS=bbb" in p.message for p in contested)
    assert all(kind not in info.registered for info in cat.plugins if info.name in owners)
    assert "lumi" in cat.sites and "pytorch" in cat.frameworks  # the rest stays
    if kind == "framework":  # its images go with it, each reported
        assert not cat.images("lumi", "jax", include_removed=True)


def test_every_error_of_a_plugin_data_file_is_reported_at_its_line(fake_site_packages):
    source = """
from pathlib import Path
from lumi_scaffold import hookimpl, load_data_file
from lumi_scaffold.models import Profiler
HERE = Path(__file__).parent
(HERE / "prof.yaml").write_text("name: p\\ntitle: t\\nkind: comand\\ncommand: [rocprof, $(x)]\\nveiw: look\\n")
@hookimpl
def register_profilers(register):
    register(load_data_file(HERE / "prof.yaml", Profiler))
"""
    write_plugin_dist(fake_site_packages, "lumi-prof", {"prof": "fakeplug_prof"}, {"fakeplug_prof": source})
    cat = load()
    path = fake_site_packages / "prof.yaml"
    assert [p.message for p in cat.problems] == [
        f"hook register_profilers failed: {path}:3:7: kind: Input should be 'none', 'command' or 'framework'",
        f"hook register_profilers failed: {path}:4:20: command.1: '$(x)' may only contain letters, digits, "
        "_,./:=+@%- and ${NAME} references (no spaces, quotes, $(...), ; or globs)",
        f"hook register_profilers failed: {path}:5:1: veiw: unknown key; did you mean 'view'?",
    ]


def test_misspelled_key_in_a_registered_dict_gets_did_you_mean(fake_site_packages):
    source = ("from lumi_scaffold import hookimpl\n@hookimpl\ndef register_profilers(register):\n"
              "    register({'name': 'nsys', 'title': 't', 'kind': 'none', 'veiw': 'x'})\n")
    write_plugin_dist(fake_site_packages, "lumi-prof", {"prof": "fakeplug_prof"}, {"fakeplug_prof": source})
    assert [p.message for p in load().problems] == ["profiler 'nsys': veiw: unknown key; did you mean 'view'?"]


def test_environment_switches(fake_site_packages, monkeypatch):
    write_plugin_dist(fake_site_packages, "lumi-site-other", {"other": "fakeplug_other"}, {"fakeplug_other": GOOD_SITE})
    monkeypatch.setenv(plugins.ENV_DISABLE, "other,jax")
    cat = load()
    assert "othersite" not in cat.sites and "jax" not in cat.frameworks and "pytorch" in cat.frameworks
    monkeypatch.delenv(plugins.ENV_DISABLE)
    monkeypatch.setenv(plugins.ENV_LOAD, "")
    assert "othersite" not in load().sites
    monkeypatch.setenv(plugins.ENV_LOAD, "other")
    assert "othersite" in load().sites


def test_cross_checks_drop_inconsistent_images(fake_site_packages):
    source = """
from lumi_scaffold import hookimpl
BASE = dict(site="lumi", framework="pytorch", title="t", generation="laif", versions={"torch": "2.10.*"})
@hookimpl
def register_containers(register):
    register(dict(BASE, id="x-nosite", site="nowhere", path="/a.sif", status="legacy"))
    register(dict(BASE, id="x-nogen", generation="docker", path="/b.sif", status="legacy"))
    register(dict(BASE, id="x-second", path="/c.sif", status="recommended"))
    register(dict(BASE, id="x-nopins", versions={}, path="/d.sif", status="legacy"))
    register(dict(BASE, id="x-badrepl", path="/e.sif", status="legacy", replaced_by="lust-jax-0.4.35"))
"""
    write_plugin_dist(fake_site_packages, "lumi-images", {"images": "fakeplug_images"}, {"fakeplug_images": source})
    cat = load()
    text = problem_text(cat)
    assert "container 'x-nosite': site 'nowhere' is not registered" in text
    assert "container 'x-nogen': generation 'docker' is not one of site 'lumi'" in text
    assert "a second recommended image for lumi/pytorch (first: laif-multitorch-20260513)" in text
    assert "container 'x-nopins': versions lacks ['torch']" in text
    assert "replaced_by='lust-jax-0.4.35' is not an image for the same site and framework" in text
    assert not {"x-nosite", "x-nogen", "x-second", "x-nopins", "x-badrepl"} & set(cat.containers)
    assert cat.recommended_image("lumi", "pytorch").id == "laif-multitorch-20260513"


def test_unknown_own_image_framework_is_reported(fake_site_packages):
    """A typo in own_image_frameworks would silently offer nothing (found in review)."""
    source = GOOD_SITE.replace('site["name"], site["title"] = "othersite", "Another MI250X site"',
                               'site["name"], site["title"] = "othersite", "Another MI250X site"\n'
                               '    site["own_image_frameworks"] = ["pytroch", "jax"]')
    write_plugin_dist(fake_site_packages, "lumi-site-other", {"other": "fakeplug_other"}, {"fakeplug_other": source})
    cat = load()
    assert ("site 'othersite': own_image_frameworks names ['pytroch'], which are not registered frameworks"
            in problem_text(cat))
    assert "othersite" in cat.sites and "jax" in cat.frameworks_for("othersite")


def test_manager_and_catalogue_are_built_once():
    plugins.reset()
    assert plugins.get_plugin_manager() is plugins.get_plugin_manager()
    assert plugins.get_catalogue() is plugins.get_catalogue()


def run_cli(*args, pythonpath=None):
    env = dict(os.environ)
    if pythonpath:  # in front of the caller's path, which may be how this checkout is imported
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "lumi_scaffold.cli", *args], capture_output=True, text=True, env=env)


def test_plugins_command_lists_builtins_and_broken_plugin(fake_site_packages):
    write_plugin_dist(fake_site_packages, "lumi-broken", {"broken": "fakeplug_broken"}, {"fakeplug_broken": "import nope_nope\n"})
    result = run_cli("plugins", pythonpath=fake_site_packages)
    assert result.returncode == 0, result.stderr
    for line in ("lumi (built-in)", "pytorch (built-in)", "jax (built-in)", "  sites: lumi", "  frameworks: pytorch",
                 "  site lumi: data reviewed 2026-11-24"):
        assert line in result.stdout
    assert "BROKEN broken: cannot load: ModuleNotFoundError: No module named 'nope_nope'" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    assert run_cli("plugins", "--strict", pythonpath=fake_site_packages).returncode == 1
    payload = json.loads(run_cli("plugins", "--json", pythonpath=fake_site_packages).stdout)
    assert payload["problems"] == [{"plugin": "broken", "message": "cannot load: ModuleNotFoundError: No module named 'nope_nope'",
                                    "kind": "error"}]
    assert {p["name"] for p in payload["plugins"]} >= {"lumi", "pytorch", "jax", "profilers"}
    assert next(p for p in payload["plugins"] if p["name"] == "lumi")["reviewed"] == {"lumi": "2026-11-24"}


def test_load_plugins_is_public_and_testing_uses_no_private_name():
    """testing.py builds its catalogues with plugins.load_plugins, as get_catalogue does;
    no module of the package imports or reaches into another's private names."""
    import ast
    from pathlib import Path

    from lumi_scaffold import testing

    pm = plugins.new_plugin_manager()
    infos, problems = plugins.load_plugins(pm, installed=False, builtins=["lumi", "profilers"],
                                           extra=[("mine", _Mine(), plugins.PluginInfo("mine", "mine", builtin=False))])
    assert [i.name for i in infos] == ["lumi", "profilers", "mine"] and problems == []
    assert infos[2].hooks == ["register_profilers"]
    cat = testing.plugin_catalogue(("mine", _Mine()), builtins=["lumi", "profilers"])
    assert "mine-prof" in cat.profilers and set(cat.sites) == {"lumi"}
    with testing.use_catalogue(cat):
        assert plugins.get_catalogue() is cat
    assert plugins.get_catalogue() is not cat

    reached = []
    for path in sorted((Path(plugins.__file__).parent).rglob("*.py")):
        tree = ast.parse(path.read_text())
        modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level >= 1:
                reached += [f"{path.name}: import {a.name}" for a in node.names if a.name.startswith("_") and a.name[1] != "_"]
                modules |= {a.asname or a.name for a in node.names} if node.module is None else set()
        reached += [f"{path.name}: {n.value.id}.{n.attr}" for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name) and n.value.id in modules and n.attr.startswith("_")
                    and n.attr[1] != "_"]
    assert reached == []


class _Mine:
    @hookimpl
    def register_profilers(self, register):
        register({"name": "mine-prof", "title": "Mine", "kind": "none"})
