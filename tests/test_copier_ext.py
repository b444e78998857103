"""The Jinja extension's speed-ups change nothing but the time: the answers-file filter and
the compiled-code cache (in memory and on disk)."""

from __future__ import annotations

import jinja2
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


def _count_compiles(monkeypatch) -> list[str]:
    """Records every template string Jinja really compiles (parse + codegen)."""
    seen: list[str] = []
    original = jinja2.Environment.compile

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        if not raw and isinstance(source, str):
            seen.append(source)
        return original(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(jinja2.Environment, "compile", compile)
    return seen


def test_second_process_reuses_code_from_disk(template, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(copier_ext.CACHE_ENV, str(cache))
    monkeypatch.setattr(copier_ext, "_COMPILED", {})  # a fresh process: nothing in memory
    compiled = _count_compiles(monkeypatch)
    first = read_tree(render(template, tmp_path / "a"))
    assert len(compiled) > 50
    assert len(list((cache / "jinja-code").iterdir())) > 50

    monkeypatch.setattr(copier_ext, "_COMPILED", {})
    compiled.clear()
    second = read_tree(render(template, tmp_path / "b"))
    assert compiled == []
    assert second == first


def test_damaged_or_unwritable_cache_is_ignored(template, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(copier_ext.CACHE_ENV, str(cache))
    monkeypatch.setattr(copier_ext, "_COMPILED", {})
    expected = read_tree(render(template, tmp_path / "a"))
    entries = list((cache / "jinja-code").iterdir())
    for entry in entries:
        entry.write_bytes(b"\x00not marshal data")
    monkeypatch.setattr(copier_ext, "_COMPILED", {})
    assert read_tree(render(template, tmp_path / "b")) == expected
    assert all(e.read_bytes() != b"\x00not marshal data" for e in entries)  # rewritten

    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would go")
    monkeypatch.setenv(copier_ext.CACHE_ENV, str(blocked))
    monkeypatch.setattr(copier_ext, "_COMPILED", {})
    assert read_tree(render(template, tmp_path / "c")) == expected


def test_empty_cache_setting_turns_the_disk_cache_off(template, tmp_path, monkeypatch):
    monkeypatch.setenv(copier_ext.CACHE_ENV, "")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(copier_ext, "_COMPILED", {})
    render(template, tmp_path / "p")
    assert not (tmp_path / "home").exists()
    assert not (tmp_path / "jinja-code").exists()


def test_default_cache_location(monkeypatch, tmp_path):
    monkeypatch.delenv(copier_ext.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert copier_ext._code_dir() == tmp_path / "lumi-scaffold" / "jinja-code"


@pytest.mark.parametrize("change", ["pass_context", "other_filter", "trim_blocks"])
def test_cache_key_follows_what_the_code_depends_on(change):
    def plain(value):
        return value

    @jinja2.pass_context
    def with_context(ctx, value):
        return value

    base = jinja2.Environment()
    base.filters["f"] = plain
    other = jinja2.Environment()
    if change == "pass_context":
        other.filters["f"] = with_context
    elif change == "other_filter":
        other.filters["f"] = plain
        other.filters["g"] = plain
    else:
        other.filters["f"] = plain
        other.trim_blocks = True
    assert copier_ext._env_signature(base) != copier_ext._env_signature(other)
    same = jinja2.Environment()
    same.filters["f"] = plain
    assert copier_ext._env_signature(base) == copier_ext._env_signature(same)
