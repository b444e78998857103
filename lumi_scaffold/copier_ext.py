"""Jinja extension that connects the catalogue to copier.yml and the templates.

Listed in copier.yml under ``_jinja_extensions`` (which is why ``--trust`` is needed).
Globals are prefixed ``lumi_`` so no answer can shadow them, and they only ever grow:
``copier update`` renders old template versions with today's extension.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from jinja2 import pass_context
from jinja2.ext import Extension
from jinja2.runtime import Context

from . import plugins, questions, sources

_warned = False
# Compiled template code shared across Jinja environments. Copier builds a new
# environment for every copy (three for an update) and compiles the same question
# strings, paths and files each time; the code only depends on the source and on the
# environment settings in the key below. The code is also kept on disk (like .pyc files),
# because a user's `copier copy` is one render per process: see _code_dir().
_COMPILED: dict[tuple, Any] = {}
_COMPILED_MAX = 8192
CACHE_ENV = "LUMI_SCAFFOLD_CACHE_DIR"
_CACHE_MAX_AGE = 30 * 24 * 3600  # entries neither read nor written for this long are removed
_pruned: list[bool] = []  # prune once per process, at the first write


def _env_signature(env) -> tuple:
    autoescape = env.autoescape

    # Jinja decides at compile time whether a filter or test gets the context (the
    # @pass_context mark), and with `optimized` it runs filters and tests on constant
    # arguments while compiling. So their names and marks, and the files they come from
    # (changed by any upgrade), are part of what the code depends on; so are the
    # extensions, which take part in parsing.
    def callables(table):
        return tuple(sorted((name, str(getattr(func, "jinja_pass_arg", ""))) for name, func in table.items()))

    code_from = [*env.filters.values(), *env.tests.values(), *map(type, env.extensions.values()), env.finalize]

    return (
        env.block_start_string, env.block_end_string, env.variable_start_string,
        env.variable_end_string, env.comment_start_string, env.comment_end_string,
        env.line_statement_prefix, env.line_comment_prefix, env.trim_blocks,
        env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline,
        env.optimized, env.is_async, env.finalize is None, type(env).__qualname__,
        tuple(sorted(env.extensions)),
        autoescape if not callable(autoescape) else getattr(autoescape, "__qualname__", "callable"),
        callables(env.filters), callables(env.tests), str(getattr(env.finalize, "jinja_pass_arg", "")),
        _module_stamps(code_from),
    )


def _module_stamps(objects) -> tuple:
    """(module, file size, file mtime) of the modules defining ``objects``."""
    import os

    stamps = set()
    for name in {getattr(obj, "__module__", None) for obj in objects} - {None, "builtins"}:
        path = getattr(sys.modules.get(name), "__file__", None)
        try:
            info = os.stat(path) if path else None
        except OSError:
            info = None
        stamps.add((name, info.st_size, info.st_mtime_ns) if info else (name, None, None))
    return tuple(sorted(stamps, key=repr))


def _code_dir():
    """Where compiled code is kept across processes: ``$LUMI_SCAFFOLD_CACHE_DIR`` (empty:
    no disk cache), else ``$XDG_CACHE_HOME/lumi-scaffold/jinja-code`` or
    ``~/.cache/lumi-scaffold/jinja-code``. Entries are keyed by a hash of everything the
    code depends on, so a new template or Jinja version simply misses."""
    import os
    from pathlib import Path

    if CACHE_ENV in os.environ:
        value = os.environ[CACHE_ENV]
        return Path(value) / "jinja-code" if value else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lumi-scaffold" / "jinja-code"


def _code_file(directory, key: tuple):
    import hashlib

    import jinja2

    signature, source, name, _filename, defer_init = key
    # The filename is left out: for a template from git it is a fresh temp clone's path on
    # every run. Jinja's tracebacks take the path from the Template object, not the code.
    text = repr((signature, source, name, defer_init, jinja2.__version__, sys.version, sys.implementation.cache_tag))
    return directory / hashlib.sha256(text.encode()).hexdigest()


def _code_from_disk(key: tuple):
    import marshal
    import types

    directory = _code_dir()
    if directory is None:
        return None
    try:
        code = marshal.loads(_code_file(directory, key).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None  # absent, unreadable or damaged: compile again
    if not isinstance(code, types.CodeType):
        return None
    filename = key[3]
    return _with_filename(code, "<template>" if filename is None else filename)  # Jinja's default name


def _with_filename(code, filename: str):
    """``code`` with this run's template path, as a fresh compile would have it: Jinja's
    Template.filename and tracebacks take it from the code objects."""
    import types

    consts = tuple(_with_filename(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _code_to_disk(key: tuple, code) -> None:
    """Write one entry (temp file + rename, so readers never see half a file) and drop
    entries unused for a month. A cache that cannot be written only loses the speed-up."""
    import marshal
    import os
    import tempfile
    import time

    directory = _code_dir()
    if directory is None:
        return
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        try:
            os.fchmod(fd, 0o644)  # like .pyc files (mkstemp makes 0600)
            with os.fdopen(fd, "wb") as out:
                out.write(marshal.dumps(code))
            os.replace(tmp, _code_file(directory, key))
        except BaseException:
            os.unlink(tmp)
            raise
        if not _pruned:
            _pruned.append(True)
            cutoff = time.time() - _CACHE_MAX_AGE
            for entry in os.scandir(directory):
                info = entry.stat()
                if max(info.st_atime, info.st_mtime) < cutoff:
                    os.unlink(entry.path)
    except (OSError, ValueError):
        pass


def _share_compiled_code(env) -> None:
    original = env.compile
    signature: list[tuple] = []  # computed at first use: the environment is still being built now

    def compile(source, name=None, filename=None, raw=False, defer_init=False):
        if raw or not isinstance(source, str):
            return original(source, name, filename, raw, defer_init)
        if not signature:
            signature.append(_env_signature(env))
        key = (signature[0], source, name, filename, defer_init)
        code = _COMPILED.get(key)
        if code is None:
            code = _code_from_disk(key)
            if code is not None:
                _remember(key, code)
        if code is not None:
            # Extensions' preprocess hooks have side effects (Copier's yield tag resets its
            # state there), so they run on a cache hit too; only parsing and codegen are saved.
            env.preprocess(source, name, filename)
        else:
            code = original(source, name, filename, raw, defer_init)
            _code_to_disk(key, code)
            _remember(key, code)
        return code

    env.compile = compile


def _remember(key: tuple, code) -> None:
    if len(_COMPILED) >= _COMPILED_MAX:
        _COMPILED.clear()
    _COMPILED[key] = code


def _catalogue() -> plugins.Catalogue:
    global _warned
    cat = plugins.get_catalogue()
    if cat.problems and not _warned:
        _warned = True
        for problem in cat.problems:
            print(f"lumi-scaffold: warning: {problem}", file=sys.stderr)
    return cat


def _answers(ctx: Context) -> dict[str, Any]:
    return {k: v for k, v in ctx.get_all().items() if not k.startswith("_") and not callable(v)}


@pass_context
def lumi_choices(ctx: Context, name: str) -> dict[str, Any]:
    return questions.choices(name, _answers(ctx), _catalogue())


@pass_context
def lumi_default(ctx: Context, name: str) -> Any:
    return questions.default(name, _answers(ctx), _catalogue())


@pass_context
def lumi_check(ctx: Context, name: str) -> str:
    answers = _answers(ctx)
    return questions.check(name, answers.get(name), answers, _catalogue())


@pass_context
def lumi_resolve(ctx: Context) -> dict[str, Any]:
    return questions.resolve(_answers(ctx), _catalogue())


def lumi_notices(plugin_data: Any) -> list[str]:
    return questions.notices(plugin_data if isinstance(plugin_data, dict) else {}, _catalogue())


@pass_context
def lumi_framework_text(ctx: Context, what: str) -> str:
    """The framework's smoke test or example script, rendered with the answers."""
    fw = _catalogue().frameworks.get(str(ctx.get("framework")))
    if fw is None or what not in ("smoke_test", "example"):
        return ""
    return ctx.environment.from_string(getattr(fw, what)).render(ctx.get_all())


@pass_context
def lumi_plugin_files(ctx: Context, directory: str) -> list[dict[str, str]]:
    """Plugin-supplied files for ``directory`` that belong to this project's site or framework."""
    owners = {"site": str(ctx.get("site")), "framework": str(ctx.get("framework"))}
    files = [f for f in _catalogue().files if f.directory == directory and owners[f.owner] == f.owner_name]
    return [{"name": f.name, "content": f.content} for f in sorted(files, key=lambda f: f.name)]


@pass_context
def lumi_sources(ctx: Context) -> list[dict[str, str]]:
    """The sources behind this project: the keys its template files cite (in any branch),
    its plugin files and the framework's scripts cite, and the catalogue data it was made
    from (plugin_data's source fields); each with title, address and date read."""
    env, values = ctx.environment, ctx.get_all()
    root = str(ctx["_copier_conf"]["src_path"])
    texts = []
    for name, text in sources.template_texts(root):
        if "yield" in name:  # plugin files: their contents below
            continue
        try:
            path = env.from_string(name).render(values)
        except Exception:  # noqa: BLE001 (a path this context cannot render is not this project's)
            continue
        if all(path.split("/")):
            texts.append(text)
    texts += [f["content"] for d in ("scripts", "config") for f in lumi_plugin_files(ctx, d)]
    fw = _catalogue().frameworks.get(str(ctx.get("framework")))
    texts += [fw.example, fw.smoke_test] if fw else []
    # The texts' keys as lumi_cite leaves them for this site; the data's all (the site's own).
    return sources.cited_in(texts, ctx.get("plugin_data"), site=str(ctx.get("site")))


@pass_context
def lumi_cite(ctx: Context, text: str) -> str:
    """``text`` with the [KEY] citations this project's site does not cite left out (a
    LUMI source in a Frontier project), and an emptied citation with the blank before it:
    ``sentence.{{ ' [AIG-05], [TM-Bind]' | lumi_cite }}``. Empty when nothing is left, so
    ``{% if '[WS-ref]' | lumi_cite %}`` keeps prose that names such a source to its site."""
    return sources.cite(str(text), str(ctx.get("site")))


@pass_context
def lumi_render(ctx: Context, text: str) -> str:
    """Render plugin-supplied template text with the project's answers."""
    return ctx.environment.from_string(text).render(ctx.get_all())


# Text both YAML emitters write alike (found by differential tests against Copier's
# to_nice_yaml): printable characters of the Basic Multilingual Plane and newlines, but no
# space next to a newline (that forces the double-quoted style, which the two fold
# differently). Keys: printable ASCII, shorter than 128 (the simple-key limit).
_SAME_TEXT = re.compile(r"(?:[\n\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd](?<! \n)(?<!\n ))*\Z")
_SAME_KEY = re.compile(r"[\x20-\x7e]{1,127}\Z")


def _same_in_libyaml(data: Any) -> bool:
    todo = [data]
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is dict:
            if not all(type(k) is str and _SAME_KEY.match(k) for k in item):
                return False
            todo.extend(item.values())
        elif kind is list:
            todo.extend(item)
        elif kind is str:
            if not _SAME_TEXT.match(item):
                return False
        elif kind not in (int, float, bool, type(None)):
            return False
    return True


def lumi_py_text(value: Any) -> str:
    """Text for the inside of a double-quoted Python string or docstring: backslashes and
    double quotes escaped, so catalogue text (a site's title) cannot end the string."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"')


def lumi_yaml(data: Any) -> str:
    """What Copier's ``to_nice_yaml`` writes, byte for byte: block style, 4-space indents.

    Through libyaml's emitter when the data is plain JSON-like data in which both emitters
    agree (see _same_in_libyaml), else through the same pure-Python emitter as
    ``to_nice_yaml``. The answers file holds the whole ``plugin_data`` snapshot; the
    pure-Python emitter took 5-10 ms of each render."""
    import yaml

    fast = isinstance(data, (dict, list)) and getattr(yaml, "CDumper", None)
    dumper = fast if fast and _same_in_libyaml(data) else yaml.Dumper
    return yaml.dump(data, Dumper=dumper, indent=4, allow_unicode=True, default_flow_style=False)


class LumiExtension(Extension):
    """Registers the ``lumi_*`` globals and filters on Copier's Jinja environment."""

    def __init__(self, environment) -> None:
        super().__init__(environment)
        environment.globals.update(
            lumi_choices=lumi_choices,
            lumi_default=lumi_default,
            lumi_check=lumi_check,
            lumi_resolve=lumi_resolve,
            lumi_notices=lumi_notices,
            lumi_framework_text=lumi_framework_text,
            lumi_plugin_files=lumi_plugin_files,
            lumi_sources=lumi_sources,
        )
        environment.filters["lumi_render"] = lumi_render
        environment.filters["lumi_yaml"] = lumi_yaml
        environment.filters["lumi_py_text"] = lumi_py_text
        environment.filters["lumi_cite"] = lumi_cite
        _share_compiled_code(environment)
