"""The compiled-code cache (lumi_scaffold/_codecache.py) changes nothing but the time: in
memory always, on disk only when LUMI_SCAFFOLD_CACHE_DIR asks for it."""

from __future__ import annotations

import jinja2
import pytest

from lumi_scaffold import _codecache
from lumi_scaffold._codecache import share_compiled_code

from .helpers import read_tree, render


@pytest.fixture
def no_shipped(monkeypatch):
    """As without lumi_scaffold/_template_code.py: every Jinja string and file is compiled
    (the disk cache's tests)."""
    monkeypatch.setattr(_codecache, "_shipped_table", [("", {}, ((), ()))])


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


def test_second_process_reuses_code_from_disk(template, tmp_path, monkeypatch, no_shipped):
    cache = tmp_path / "cache"
    monkeypatch.setenv(_codecache.CACHE_ENV, str(cache))
    monkeypatch.setattr(_codecache, "COMPILED", {})  # a fresh process: nothing in memory
    compiled = _count_compiles(monkeypatch)
    first = read_tree(render(template, tmp_path / "a"))
    assert len(compiled) > 50
    assert len(list((cache / "jinja-code").iterdir())) > 50

    monkeypatch.setattr(_codecache, "COMPILED", {})
    compiled.clear()
    second = read_tree(render(template, tmp_path / "b"))
    assert compiled == []
    assert second == first


def test_damaged_or_unwritable_cache_is_ignored(template, tmp_path, monkeypatch, no_shipped):
    cache = tmp_path / "cache"
    monkeypatch.setenv(_codecache.CACHE_ENV, str(cache))
    monkeypatch.setattr(_codecache, "COMPILED", {})
    expected = read_tree(render(template, tmp_path / "a"))
    entries = list((cache / "jinja-code").iterdir())
    for entry in entries:
        entry.write_bytes(b"\x00not marshal data")
    monkeypatch.setattr(_codecache, "COMPILED", {})
    assert read_tree(render(template, tmp_path / "b")) == expected
    assert all(e.read_bytes() != b"\x00not marshal data" for e in entries)  # rewritten

    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would go")
    monkeypatch.setenv(_codecache.CACHE_ENV, str(blocked))
    monkeypatch.setattr(_codecache, "COMPILED", {})
    assert read_tree(render(template, tmp_path / "c")) == expected


@pytest.mark.parametrize("setting", [None, ""], ids=["unset", "empty"])
def test_disk_cache_is_opt_in(template, tmp_path, monkeypatch, no_shipped, setting):
    """Without LUMI_SCAFFOLD_CACHE_DIR (or with it empty) nothing is written anywhere."""
    if setting is None:
        monkeypatch.delenv(_codecache.CACHE_ENV)
    else:
        monkeypatch.setenv(_codecache.CACHE_ENV, setting)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(_codecache, "COMPILED", {})
    compiled = _count_compiles(monkeypatch)
    render(template, tmp_path / "p")
    assert len(compiled) > 50  # compiled, and kept in memory only
    assert _codecache.code_dir() is None
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
    assert _codecache.env_signature(base) != _codecache.env_signature(other)
    same = jinja2.Environment()
    same.filters["f"] = plain
    assert _codecache.env_signature(base) == _codecache.env_signature(same)


def _run(tmp_path, script: str, *args: str) -> str:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path,
                            env={**__import__("os").environ, _codecache.CACHE_ENV: str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


FOLD = """
import sys, jinja2
from lumi_scaffold._codecache import share_compiled_code
sys.path.insert(0, ".")
from myfilters import f
env = jinja2.Environment()
env.filters["f"] = f
share_compiled_code(env)
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
from lumi_scaffold._codecache import share_compiled_code
env = jinja2.Environment(loader=jinja2.FileSystemLoader(sys.argv[1]))
share_compiled_code(env)
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


PLAIN = ["a", "abc\n", "multi\nline\n\n", "'quote\" \\ back", "{ braces }", "}} %} #}", "x" * 1000, "ünï ☃", "\n", "",
         "\n\n", "a\r\nb", "a\rb", "-%}", "tab\there ", _codecache._PLACEHOLDER, "{{ x }}", "{% if 1 %}y{% endif %}"]


@pytest.mark.parametrize("keep_trailing_newline", [True, False])
def test_plain_strings_render_as_jinja_renders_them(monkeypatch, keep_trailing_newline):
    """Strings without Jinja get the code of one compiled plain string with their text in
    it: what they render and generate (chunk by chunk) is what Jinja's own code gives."""
    from copier._jinja_ext import YieldExtension
    from jinja2.sandbox import SandboxedEnvironment

    def env():
        return SandboxedEnvironment(extensions=[YieldExtension, "jinja2_ansible_filters.AnsibleCoreFiltersExtension"],
                                    keep_trailing_newline=keep_trailing_newline)

    plain = env()
    expected = [(plain.from_string(t).render(x=1), list(plain.from_string(t).generate(x=1))) for t in PLAIN]
    monkeypatch.setattr(_codecache, "COMPILED", {})
    compiled = _count_compiles(monkeypatch)
    shared = env()
    share_compiled_code(shared)
    got = [(shared.from_string(t).render(x=1), list(shared.from_string(t).generate(x=1))) for t in PLAIN]
    assert got == expected
    jinja_free = [t for t in PLAIN
                  if "{{" not in t and "{%" not in t and "\r" not in t and t not in ("", "\n", _codecache._PLACEHOLDER)]
    assert not set(jinja_free) & set(compiled)  # made from the one compiled placeholder
    assert _codecache._PLACEHOLDER in compiled


def test_plain_strings_with_other_markers_are_compiled(monkeypatch):
    """An environment with other delimiters: "{{" is text there, "[[" is Jinja."""
    monkeypatch.setattr(_codecache, "COMPILED", {})
    env = jinja2.Environment(variable_start_string="[[", variable_end_string="]]")
    share_compiled_code(env)
    assert env.from_string("{{ x }} [[ x ]]").render(x=1) == "{{ x }} 1"
    assert env.from_string("{{ y }}").render() == "{{ y }}"


# --- the code shipped with the package (lumi_scaffold/_template_code.py) ----------------


def test_the_shipped_code_is_this_templates():
    """It holds Jinja's code for every file and Jinja string of this checkout's template,
    made in the environment Copier builds (the code itself compared where this machine's
    Jinja and Copier extension are the ones it was made with)."""
    from lumi_scaffold import _template_code

    from .helpers import REPO

    signature, made, used = _codecache.shipped_code_for(REPO)
    fix = "a template changed: remake the shipped code with `python -m lumi_scaffold._codecache`"
    assert sorted(made) == sorted(_template_code.CODE) and used == _template_code.USED, fix
    if signature == _template_code.SIGNATURE:
        assert made == _template_code.CODE, fix


def test_a_copy_takes_the_shipped_code_and_writes_the_same_files(template, tmp_path, monkeypatch):
    """A default copy (no disk cache) compiles none of our files and Jinja strings, and
    writes the same bytes as one that compiles them all."""
    monkeypatch.delenv(_codecache.CACHE_ENV)
    monkeypatch.setattr(_codecache, "COMPILED", {})
    compiled = _count_compiles(monkeypatch)
    shipped = read_tree(render(template, tmp_path / "a"))
    assert [s for s in compiled if "{{" in s or "{%" in s] == []

    monkeypatch.setattr(_codecache, "COMPILED", {})
    monkeypatch.setattr(_codecache, "_shipped_table", [("", {}, ((), ()))])  # no shipped code
    compiled.clear()
    assert read_tree(render(template, tmp_path / "b")) == shipped
    assert len([s for s in compiled if "{{" in s or "{%" in s]) > 50


def test_shipped_code_is_not_used_in_another_environment(monkeypatch):
    """Code made for Copier's environment is not taken by one with other settings: there
    the string is compiled."""
    from copier._jinja_ext import YieldExtension
    from jinja2.sandbox import SandboxedEnvironment

    from lumi_scaffold import _template_code

    source = "{{ lumi_check('nodes') }}"  # a validator in copier.yml
    assert _codecache._shipped_key(source, None, False) in _template_code.CODE
    monkeypatch.setattr(_codecache, "COMPILED", {})
    compiled = _count_compiles(monkeypatch)
    env = SandboxedEnvironment(extensions=[YieldExtension], trim_blocks=True)
    share_compiled_code(env)
    assert _codecache.shipped_signature(env) != _template_code.SIGNATURE
    env.from_string(source)
    assert compiled == [source]


def test_the_shipped_code_outlives_a_newer_module_the_template_does_not_use(tmp_path, monkeypatch):
    """The template uses no filter of markupsafe's (escape): a newer markupsafe, which a
    user's install may well bring, keeps the shipped code in use. A change to the module of
    a filter it uses (Jinja's own) does not."""
    import os
    import shutil

    import jinja2.filters
    import markupsafe
    from copier._main import Worker

    from lumi_scaffold import _template_code

    from .helpers import REPO

    shutil.copy2(REPO / "copier.yml", tmp_path / "copier.yml")  # (the environment comes from copier.yml)
    env = Worker(src_path=str(tmp_path), dst_path=tmp_path / "out", defaults=True, unsafe=True, quiet=True).jinja_env
    assert _codecache.shipped_signature(env) == _template_code.SIGNATURE
    assert "escape" not in _template_code.USED[0] and "join" in _template_code.USED[0]
    real = os.stat

    def grown(module):
        def stat(path, *args, **kwargs):
            info = real(path, *args, **kwargs)
            return os.stat_result((*info[:6], info.st_size + 1, *info[7:])) if path == module.__file__ else info
        return stat

    monkeypatch.setattr(os, "stat", grown(markupsafe))
    assert _codecache.shipped_signature(env) == _template_code.SIGNATURE
    monkeypatch.setattr(os, "stat", grown(jinja2.filters))
    assert _codecache.shipped_signature(env) != _template_code.SIGNATURE
