"""The Jinja extension's answers-file filter writes what Copier's to_nice_yaml writes.
(In-process sharing of compiled code: test_compiled_code_is_shared_and_changes_nothing.)"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from jinja2_ansible_filters.core_filters import to_nice_yaml

from lumi_scaffold import copier_ext

from .helpers import read_tree, render

ODD_STRINGS = [
    "", "plain", "yes", "no", "on", "null", "~", "0x1F", "007", "1e3", "2026-05-13", "3-00:00:00",
    "a: b", "- item", "#comment", "trailing ", " leading", "multi\nline\n", "tab\there", "ünïcödé ☃",
    "quote ' and \"", "{braces}", "[brackets]", "x" * 300, "long words " * 40, "\\backslash", "%percent", "@at", "`tick`",
]


def test_lumi_yaml_writes_what_to_nice_yaml_writes(template, tmp_path):
    project = render(template, tmp_path / "p")
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    samples = [answers, {"strings": ODD_STRINGS, "nested": {"a": [1, 2.5, True, None, {"b": ODD_STRINGS}]}}, [], {}, "x", 5]
    for data in samples:
        assert copier_ext.lumi_yaml(data) == to_nice_yaml(data)


def test_answers_file_reads_back(template, tmp_path):
    project = render(template, tmp_path / "p", project_name="odd")
    answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert answers["project_name"] == "odd"
    assert answers["plugin_data"]["site"]["name"] == "lumi"


# --- found in review --------------------------------------------------------------------

REVIEW_DATA = [
    {"description": "My project \U0001F680"}, {"k": "echo\t" * 30}, {"é" * 100: 1}, {"": 1}, {"\r": 1},
    {"k": "a\x85b"}, {"k": "a\u2028b"}, {"k": "a \nb"}, {"k": "a\n b"}, {"a": (1, 2)}, {1: "int key"},
    {"k": "x" * 200}, {"k": ("word " * 40).strip()}, {"k": "multi\nline\n"},
]


@pytest.mark.parametrize("data", REVIEW_DATA, ids=range(len(REVIEW_DATA)))
def test_lumi_yaml_review_cases(data):
    assert copier_ext.lumi_yaml(data) == to_nice_yaml(data)


def test_lumi_yaml_differential(template, tmp_path):
    import random

    rng = random.Random(20261122)
    alphabet = list("ab -:#\n'\"\\!&*?|>%@`,[]{}=~.019xyz") + ["é", "中", "\xa0", "  ", "yes", "null", "- ", ": ", " #"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) * rng.choice([1, 1, 1, 5])
        key = "".join(rng.choice("ab -:#'\"!&*?|>%@`,[]{}=~.019") for _ in range(rng.randint(1, 20)))
        data = {"k": text, key: [text, {"n": text}], "list": [text, 1, 2.5, None, True]}
        assert copier_ext.lumi_yaml(data) == to_nice_yaml(data), data
    project = render(template, tmp_path / "p")
    data = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert copier_ext.lumi_yaml(data) == to_nice_yaml(data)


def _count_compiles(monkeypatch) -> list[str]:
    """Every template string Jinja really compiles (parse and code generation)."""
    import jinja2

    seen: list[str] = []
    original = jinja2.Environment.compile

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        if not raw and isinstance(source, str):
            seen.append(source)
        return original(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(jinja2.Environment, "compile", compile)
    return seen


def test_compiled_code_is_shared_and_changes_nothing(template, tmp_path, monkeypatch):
    """A second copy in one process compiles nothing and writes the same bytes as the first
    (compiled fresh, nothing shared)."""
    monkeypatch.setattr(copier_ext, "_COMPILED", {})
    compiled = _count_compiles(monkeypatch)
    first = read_tree(render(template, tmp_path / "a"))
    assert len(compiled) > 50
    compiled.clear()
    second = read_tree(render(template, tmp_path / "b"))
    assert compiled == []
    assert second == first


def test_plugin_data_is_computed_once_a_copy_and_again_for_other_answers(template, tmp_path, monkeypatch):
    """Copier renders plugin_data's default twice a copy, with the same answers: lumi_resolve
    computes it once; a copy with other answers in the same process computes its own."""
    from lumi_scaffold import assemble

    computed: list[dict[str, Any]] = []
    resolve = assemble.resolve

    def counting(answers, cat):
        computed.append(dict(answers))
        return resolve(answers, cat)

    monkeypatch.setattr(assemble, "resolve", counting)
    one = render(template, tmp_path / "one")
    two = render(template, tmp_path / "two", nodes=2)
    assert [a["nodes"] for a in computed] == [1, 2]
    assert "#SBATCH --nodes=2" in (two / "jobs/train.sbatch").read_text()
    assert "#SBATCH --nodes=1" in (one / "jobs/train.sbatch").read_text()


def test_shared_code_follows_the_filters_of_each_environment(monkeypatch):
    """Jinja runs filters on constants while compiling: an environment whose filter of the
    same name is another function does not get the other's code."""
    import jinja2

    monkeypatch.setattr(copier_ext, "_COMPILED", {})

    def env(f):
        e = jinja2.Environment()
        e.filters["f"] = f
        copier_ext._share_compiled_code(e)
        return e

    assert env(str.upper).from_string('{{ "Hello"|f }}').render() == "HELLO"
    assert env(str.lower).from_string('{{ "Hello"|f }}').render() == "hello"


def test_the_matrix_shortcut_writes_the_answers_file_entry_by_entry_as_lumi_yaml_writes_it_whole():
    """tests/copier_shortcuts.py's "answers": the same bytes for the review cases and odd
    strings at every depth it splits, on first writing and from its memo, and data it
    cannot split (a shared list: an anchor; a tuple; a kept block scalar) written whole."""
    from .copier_shortcuts import _AnswersByEntry

    calls: list[Any] = []

    def whole(data):
        calls.append(data)
        return copier_ext.lumi_yaml(data)

    split = _AnswersByEntry(whole)
    values: list[Any] = [*ODD_STRINGS, *[next(iter(d.values())) for d in REVIEW_DATA], 0.0, -0.0, 1, True, None, [], {}]
    for depth_data in range(2):
        for value in values:
            for data in ({"a": value, "plugin_data": {"job": {"shapes": {"train": {"x": value, "y": [value]}}, "k": value},
                                                        "yes": {"on": value}, "n": 1}, "z": "end"},
                         {"plugin_data": {"site": value}}, {"x" * 50: {"y": value}}):
                assert split(data) == copier_ext.lumi_yaml(data), (depth_data, data)
    shared = [1, 2]
    for data in ({"a": shared, "b": shared}, {"a": (1, 2)}, {"a": {"b": "kept\n\n"}, "c": 1}, {1: "a", "b": 2}):
        calls.clear()
        assert split(data) == copier_ext.lumi_yaml(data)
        assert calls[-1] == data  # written whole
