"""The job shapes check_conformance renders: a multi-node one wherever the site runs one."""

from __future__ import annotations

import types

import pytest

from lumi_scaffold import hookimpl, testing
from lumi_scaffold.lint import lint_project
from lumi_scaffold.plugins import get_catalogue
from lumi_scaffold.testing import job_shapes, plugin_catalogue, plugin_matrix


def _shared_nodes_site():
    """LUMI without its whole-node partition: every partition shares nodes, two allow
    several nodes (small-g up to 4, dev-g up to 32)."""
    lumi = get_catalogue().sites["lumi"]
    return lumi.model_copy(update={
        "name": "shared", "cotainr": None, "own_image_frameworks": "all", "whole_node_partition": "small-g",
        "partitions": [p for p in lumi.partitions if p.allocation == "by-resource"],
    })


@hookimpl
def register_sites(register):
    register(_shared_nodes_site())


SHARED = ("lumi-site-shared", types.SimpleNamespace(register_sites=register_sites))


def test_lumi_shapes_include_two_whole_nodes():
    assert job_shapes(get_catalogue().sites["lumi"]) == [
        ("standard-g", 2, 8), ("small-g", 1, 2), ("dev-g", 1, 2), ("small-g", 1, 8)]


def test_a_site_of_shared_nodes_gets_a_multi_node_shape():
    site = _shared_nodes_site()
    assert job_shapes(site) == [("small-g", 1, 2), ("dev-g", 1, 2), ("small-g", 1, 8), ("small-g", 2, 8)]


def test_one_node_partitions_get_no_multi_node_shape_and_no_repeats():
    lumi = get_catalogue().sites["lumi"]
    small = lumi.partition("small-g").model_copy(update={"max_nodes": 1})
    site = lumi.model_copy(update={"partitions": [small], "node": lumi.node.model_copy(update={"gpus": 2})})
    assert job_shapes(site) == [("small-g", 1, 2)]


def test_check_conformance_renders_the_multi_node_shape(template, tmp_path, monkeypatch):
    """What check_conformance hands to the renderer holds a 2-node job on the plugin's site,
    and that project renders and lints clean."""
    cat = plugin_catalogue(SHARED)
    handed: list[dict] = []

    def recording(template, root, matrix, workers=2):
        handed.extend(matrix)
        return [(str(root / f"{i:05d}"), "not rendered in this test") for i in range(len(matrix))]

    monkeypatch.setattr(testing, "render_many", recording)
    problems = testing.check_conformance(cat, "lumi-site-shared", template=template, workers=1)
    assert handed == plugin_matrix(cat, "lumi-site-shared")
    multi = [a for a in handed if a["nodes"] == 2]
    assert multi and {a["partition"] for a in multi} == {"small-g"}
    assert problems and all(line.startswith("does not render") or line.startswith("...") for line in problems)
    with testing.use_catalogue(cat):
        project = testing.render_project(template, tmp_path / "p", multi[0])
        assert lint_project(project, cat, "shared") == []
    assert "#SBATCH --nodes=2" in (project / "jobs/train.sbatch").read_text()


def test_check_conformance_renders_the_matrix_it_is_given(template):
    """matrix= replaces plugin_matrix: a sample is rendered and linted (and nothing else),
    and an answer set in it that cannot render is named with its answers."""
    cat = plugin_catalogue(SHARED)
    whole = plugin_matrix(cat, "lumi-site-shared")
    sample = [whole[0], whole[-1]]
    assert testing.check_conformance(cat, "lumi-site-shared", template=template, workers=1, matrix=sample) == []
    bad = {**whole[0], "nodes": 99}  # more nodes than any partition of the site allows
    problems = testing.check_conformance(cat, "lumi-site-shared", template=template, workers=1,
                                         matrix=[whole[0], bad], run_examples=False)
    assert len(problems) == 1 and problems[0].startswith("does not render (") and " nodes=99 " in problems[0], problems


def test_answer_matrix_covers_every_shape():
    cat = get_catalogue()
    shapes = {(a["partition"], a["nodes"], a["gpus_per_node"]) for a in testing.answer_matrix(cat, sites=["lumi"])}
    assert shapes == set(job_shapes(cat.sites["lumi"]))


def test_new_plugin_tests_report_conformance_before_the_matrix(tmp_path, monkeypatch):
    """The generated package's test checks conformance first: a plugin that does not load
    fails with check_conformance's reason, not with "adds no project"."""
    import importlib
    import sys

    from lumi_scaffold.newplugin import new_plugin

    dest = new_plugin(tmp_path / "lumi-site-demo", {"kind": "site", "name": "demo"}, defaults=True, quiet=True)
    monkeypatch.syspath_prepend(str(dest))
    monkeypatch.syspath_prepend(str(dest / "tests"))
    module = importlib.import_module("test_lumi_site_demo")
    try:
        with pytest.raises(AssertionError) as failed:
            module.test_every_project_it_adds_renders_and_lints_clean(plugin_catalogue())  # the plugin is not in it
    finally:
        for name in [m for m in sys.modules if m.startswith(("test_lumi_site_demo", "lumi_site_demo"))]:
            del sys.modules[name]
    assert "is not loaded" in str(failed.value)
