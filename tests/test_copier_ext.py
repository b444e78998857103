"""The Jinja extension's speed-ups change nothing but the time: the answers-file filter and
the compiled-code cache (in memory, and on disk when LUMI_SCAFFOLD_CACHE_DIR asks for it)."""

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
    monkeypatch.setenv(copier_ext._CACHE_ENV, str(cache))
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
    monkeypatch.setenv(copier_ext._CACHE_ENV, str(cache))
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
    monkeypatch.setenv(copier_ext._CACHE_ENV, str(blocked))
    monkeypatch.setattr(copier_ext, "_COMPILED", {})
    assert read_tree(render(template, tmp_path / "c")) == expected


@pytest.mark.parametrize("setting", [None, ""], ids=["unset", "empty"])
def test_disk_cache_is_opt_in(template, tmp_path, monkeypatch, setting):
    """Without LUMI_SCAFFOLD_CACHE_DIR (or with it empty) nothing is written anywhere."""
    if setting is None:
        monkeypatch.delenv(copier_ext._CACHE_ENV)
    else:
        monkeypatch.setenv(copier_ext._CACHE_ENV, setting)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(copier_ext, "_COMPILED", {})
    compiled = _count_compiles(monkeypatch)
    render(template, tmp_path / "p")
    assert len(compiled) > 50  # compiled, and kept in memory only
    assert copier_ext._code_dir() is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]


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


def _run(tmp_path, script: str, *args: str) -> str:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path,
                            env={**__import__("os").environ, copier_ext._CACHE_ENV: str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


FOLD = """
import sys, jinja2
from lumi_scaffold.copier_ext import _share_compiled_code
sys.path.insert(0, ".")
from myfilters import f
env = jinja2.Environment()
env.filters["f"] = f
_share_compiled_code(env)
print(env.from_string('{{ "Hello"|f }} {{ x|f }}').render(x="World"))
"""


def test_cache_misses_when_a_filter_module_changes(tmp_path):
    """Jinja runs filters on constants while compiling: new filter code, new cache key."""
    import os

    module = tmp_path / "myfilters.py"
    module.write_text("def f(value):\n    return value.upper()\n")
    assert _run(tmp_path, FOLD) == "HELLO WORLD"
    module.write_text("def f(value):\n    return value.lower()\n\n")
    os.utime(module, ns=(module.stat().st_atime_ns, module.stat().st_mtime_ns + 10**9))
    assert _run(tmp_path, FOLD) == "hello world"


FILENAME = """
import sys, traceback, jinja2
from lumi_scaffold.copier_ext import _share_compiled_code
env = jinja2.Environment(loader=jinja2.FileSystemLoader(sys.argv[1]))
_share_compiled_code(env)
t = env.get_template("a.txt")
try:
    t.render(x=0)
except ZeroDivisionError:
    print(t.filename, traceback.extract_tb(sys.exc_info()[2])[-1].filename)
"""


def test_cached_code_carries_this_runs_file_name(tmp_path):
    for clone in ("clone1", "clone2"):
        (tmp_path / clone).mkdir()
        (tmp_path / clone / "a.txt").write_text("line1\n{{ 1/x }}\n")
    first = _run(tmp_path, FILENAME, str(tmp_path / "clone1"))
    [entry] = (tmp_path / "cache" / "jinja-code").iterdir()
    written = entry.stat().st_ino
    second = _run(tmp_path, FILENAME, str(tmp_path / "clone2"))
    assert first.split() == [str(tmp_path / "clone1" / "a.txt")] * 2
    assert second.split() == [str(tmp_path / "clone2" / "a.txt")] * 2
    assert entry.stat().st_ino == written  # the second run read the entry (a miss rewrites it)
