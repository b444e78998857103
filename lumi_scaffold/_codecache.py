"""Compiled template code shared across Jinja environments (private to lumi_scaffold).

Copier builds a new Jinja environment for every copy (three for an update) and compiles
the same question strings, paths and files each time; the code only depends on the source
and on the environment settings in the key below. Within a process the code is always
shared (the test matrix, check_conformance, an update). Across processes (a user's
`copier copy` is one render per process) it is kept on disk only when asked for, with
``LUMI_SCAFFOLD_CACHE_DIR``: see :func:`code_dir`.

Jinja's own bytecode cache does not serve here: it keys on the template's path (a new
temporary clone on every copy from git) and skips ``from_string``, which Copier uses for
every question string and path (docs/performance.md).
"""

from __future__ import annotations

import re
import sys
from typing import Any

__all__ = ["CACHE_ENV", "code_dir", "env_signature", "share_compiled_code", "shipped_code_for", "shipped_signature"]

COMPILED: dict[tuple, Any] = {}
_COMPILED_MAX = 8192
CACHE_ENV = "LUMI_SCAFFOLD_CACHE_DIR"
_CACHE_MAX_AGE = 30 * 24 * 3600  # entries neither read nor written for this long are removed
_pruned: list[bool] = []  # prune once per process, at the first write


def env_signature(env) -> tuple:
    """What compiled code depends on besides its source: the settings, and the files of the
    modules defining the filters, tests and extensions (changed by any upgrade)."""
    return _settings(env) + (_module_stamps(_code_from(env)),)


def _code_from(env) -> list:
    return [*env.filters.values(), *env.tests.values(), *map(type, env.extensions.values()), env.finalize]


def _settings(env) -> tuple:
    autoescape = env.autoescape

    # Jinja decides at compile time whether a filter or test gets the context (the
    # @pass_context mark), and with `optimized` it runs filters and tests on constant
    # arguments while compiling. So their names and marks, and the files they come from
    # (changed by any upgrade), are part of what the code depends on; so are the
    # extensions, which take part in parsing.
    def callables(table):
        return tuple(sorted((name, str(getattr(func, "jinja_pass_arg", ""))) for name, func in table.items()))

    return (
        env.block_start_string, env.block_end_string, env.variable_start_string,
        env.variable_end_string, env.comment_start_string, env.comment_end_string,
        env.line_statement_prefix, env.line_comment_prefix, env.trim_blocks,
        env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline,
        env.optimized, env.is_async, env.finalize is None, type(env).__qualname__,
        tuple(sorted(env.extensions)),
        autoescape if not callable(autoescape) else getattr(autoescape, "__qualname__", "callable"),
        callables(env.filters), callables(env.tests), str(getattr(env.finalize, "jinja_pass_arg", "")),
    )


def _module_stamps(objects) -> tuple:
    """(module, file size, file mtime) of the modules defining ``objects``."""
    import os

    stamps = set()
    for name in {getattr(obj, "__module__", None) for obj in objects} - {None, "builtins"}:
        path = getattr(sys.modules.get(name), "__file__", None)  # type: ignore[arg-type]  # None is taken out above
        try:
            info = os.stat(path) if path else None
        except OSError:
            info = None
        stamps.add((name, info.st_size, info.st_mtime_ns) if info else (name, None, None))
    return tuple(sorted(stamps, key=repr))


def code_dir():
    """Where compiled code is kept across processes: ``$LUMI_SCAFFOLD_CACHE_DIR/jinja-code``,
    or None (no disk cache) when that is unset or empty. Opt-in: the cache saves a
    ``copier copy`` ~0.15 s of compiling, and loads code from that directory, so it must be
    one only its user can write (like ``__pycache__``). Entries are keyed by a hash of
    everything the code depends on, so a new template or Jinja version simply misses."""
    import os
    from pathlib import Path

    value = os.environ.get(CACHE_ENV)
    return Path(value) / "jinja-code" if value else None


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

    directory = code_dir()
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

    directory = code_dir()
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


def share_compiled_code(env) -> None:
    original = env.compile
    signature: list[tuple] = []  # computed at first use: the environment is still being built now
    shipped: list[str] = []  # the same for the code shipped with the package

    def compile(source, name=None, filename=None, raw=False, defer_init=False):
        if raw or not isinstance(source, str):
            return original(source, name, filename, raw, defer_init)
        if not signature:
            signature.append(env_signature(env))
        key = (signature[0], source, name, filename, defer_init)
        code = COMPILED.get(key)
        if code is not None:
            # Extensions' preprocess hooks have side effects (Copier's yield tag resets its
            # state there), so they run on a cache hit too; only parsing and codegen are saved.
            env.preprocess(source, name, filename)
            return code
        if name is None and filename is None and not defer_init and _plain(env, source):
            shape = _kept((signature[0], _PLACEHOLDER, None, None, False), lambda: original(_PLACEHOLDER))
            code = _plain_text_code(env, source, shape)
            if code is not None:
                _remember(key, code)
                return code
        code = _code_from_disk(key)  # opted in: also saves Python's compile of shipped code
        if code is not None:
            env.preprocess(source, name, filename)
            _remember(key, code)
            return code
        if _SHIPPED_MARKERS.search(source):
            if not shipped:
                shipped.append(shipped_signature(env))
            code = _shipped_code(env, shipped[0], source, name, filename, defer_init)
        if code is None:
            code = original(source, name, filename, raw, defer_init)
        _code_to_disk(key, code)
        _remember(key, code)
        return code

    env.compile = compile


def _kept(key: tuple, make) -> Any:
    """The code for ``key`` from memory or disk, or ``make()`` kept there."""
    code = COMPILED.get(key)
    if code is None:
        code = _code_from_disk(key)
        if code is None:
            code = make()
            _code_to_disk(key, code)
        _remember(key, code)
    return code


# Copier renders ~100 strings per copy that hold no Jinja at all (choice labels and values,
# path parts such as "README.md", plain defaults). Jinja's code for such a string is the
# same for every text but the text: it yields it. So one is compiled, and the others are
# that code with their text put in place of the first one's (~0.3 ms of lexing, parsing,
# code generation and Python's compile saved per string). Strings this cannot be sure
# about (a line break other than \n, line statements, extensions that filter tokens, an
# empty text) are compiled as usual.
_PLACEHOLDER = "lumi-scaffold: plain text 0c5e9b1d"


def _plain(env, source: str) -> bool:
    return (env.line_statement_prefix is None and env.line_comment_prefix is None and env.newline_sequence == "\n"
            and "\r" not in source
            and not any(m in source for m in (env.block_start_string, env.variable_start_string, env.comment_start_string))
            and all(type(ext).filter_stream is _extension_filter_stream() for ext in env.extensions.values()))


def _extension_filter_stream():
    from jinja2.ext import Extension

    return Extension.filter_stream


def _count_placeholder(code) -> int:
    import types

    return sum(_count_placeholder(c) if isinstance(c, types.CodeType) else int(type(c) is str and c == _PLACEHOLDER)
               for c in code.co_consts)


def _plain_text_code(env, source: str, shape) -> Any:
    """The code of ``source``, plain text, made from ``shape``; None to compile it as usual.
    The extensions' preprocess hooks run once, as in a compile."""
    if _count_placeholder(shape) != 1 or source in ("", "\n"):
        return None  # not the code this expects; no output at all, or maybe none
    text = env.preprocess(source, None, None)
    if text != source and (not _plain(env, text) or text in ("", "\n")):
        return None  # an extension made it something else (its hook then runs again in the compile)
    if not env.keep_trailing_newline and text.endswith("\n"):
        text = text[:-1]  # what Jinja's lexer drops
    return _with_text(shape, text)


def _with_text(code, text: str):
    import types

    consts = tuple(_with_text(c, text) if isinstance(c, types.CodeType)
                   else (text if type(c) is str and c == _PLACEHOLDER else c) for c in code.co_consts)
    return code.replace(co_consts=consts)


def _remember(key: tuple, code) -> None:
    if len(COMPILED) >= _COMPILED_MAX:
        COMPILED.clear()
    COMPILED[key] = code


# Code shipped with the package (lumi_scaffold/_template_code.py): the Python that Jinja
# generates for this template's files, the Jinja strings of copier.yml, the Jinja parts of
# its paths and the built-in frameworks' scripts, in Copier's environment, made by
# `python -m lumi_scaffold._codecache` (a test fails when a template changed and it was
# not run). Every user's copy then skips Jinja's lexing, parsing and code generation for
# them (Python's compile of that code stays): ~60 ms of CPU per copy, read-only, nothing
# written, like the package's own .py files. An entry is used for the same source and name
# only, and only in an environment with the same signature as the one it was made in: its
# settings, filters, tests and extensions as the code cache keys them, Jinja's version,
# and the sizes of the other modules defining the extensions and the filters and tests the
# template uses (Copier's extension, Jinja's filters; constant filter calls are folded into
# the code). Modules of filters it does not use (markupsafe's escape) are left out, so a
# newer release of them, which a user's install may well bring, keeps the shipped code in
# use. lumi_scaffold's own filters come with the table in the same release, and the test
# compares the code itself. Any other text (an older template version during `copier
# update`, a template changed since the release) is compiled as usual.
_SHIPPED_MARKERS = re.compile(r"\{[{%#]")
Used = tuple[tuple[str, ...], tuple[str, ...]]  # the names of the filters and tests a template uses
_shipped_table: list[tuple[str, dict[str, str], Used]] = []


def shipped_used() -> Used:
    """The names of the filters and tests the shipped code's template uses."""
    return _shipped()[2]


def _shipped() -> tuple[str, dict[str, str], Used]:
    if not _shipped_table:
        entry: tuple[str, dict[str, str], Used]
        try:
            from ._template_code import CODE, SIGNATURE, USED

            entry = (SIGNATURE, CODE, USED)
        except ImportError:  # a checkout where it was never made: compile as usual
            entry = ("", {}, ((), ()))
        _shipped_table.append(entry)
    return _shipped_table[0]


def shipped_signature(env, used: Used | None = None) -> str:
    """The environment's signature for shipped code that uses these filters and tests
    (default: the shipped code's)."""
    import hashlib
    import os

    import jinja2

    filters, tests = shipped_used() if used is None else used
    code = [*(env.filters[n] for n in filters if n in env.filters), *(env.tests[n] for n in tests if n in env.tests),
            *map(type, env.extensions.values()), env.finalize]
    sizes = []
    for module in sorted({getattr(obj, "__module__", None) or "" for obj in code}):
        path = getattr(sys.modules.get(module), "__file__", None)
        if module and module != "builtins" and not module.startswith("lumi_scaffold"):
            try:
                sizes.append((module, os.stat(path).st_size if path else None))
            except OSError:
                sizes.append((module, None))
    return hashlib.sha256(repr((_settings(env), jinja2.__version__, sizes, filters, tests)).encode()).hexdigest()


def _shipped_key(source: str, name: str | None, defer_init: bool) -> str:
    import hashlib

    return hashlib.sha256(repr((source, name, defer_init)).encode()).hexdigest()


def _shipped_code(env, signature: str, source: str, name, filename, defer_init: bool) -> Any:
    made_for, table, _ = _shipped()
    python = table.get(_shipped_key(source, name, defer_init)) if signature == made_for else None
    if python is None:
        return None
    env.preprocess(source, name, filename)  # as in a compile (hooks with side effects)
    return compile(python, "<template>" if filename is None else filename, "exec")  # as Jinja compiles its code


def shipped_code_for(template: Any) -> tuple[str, dict[str, str], Used]:
    """What lumi_scaffold/_template_code.py holds for the template at ``template`` (a
    directory with copier.yml): the signature of the environment Copier builds for it,
    {key: Jinja's Python source} in that environment, and the filters and tests it uses."""
    import shutil
    import tempfile
    from pathlib import Path

    import yaml
    from copier._main import Worker

    root = Path(template)
    config = yaml.safe_load((root / "copier.yml").read_text(encoding="utf-8"))
    suffix = config.get("_templates_suffix", ".jinja")
    strings = {value for key, value in config.items() if key.startswith("_message_") and isinstance(value, str)}
    for key, question in config.items():
        if not key.startswith("_") and isinstance(question, dict):
            strings |= {v for v in question.values() if isinstance(v, str)}
    strings |= _builtin_framework_texts()
    base = root / config.get("_subdirectory", "")
    for path in base.rglob("*"):
        for i, part in enumerate(path.relative_to(base).parts):
            last = i == len(path.relative_to(base).parts) - 1
            strings.add(part[: -len(suffix)] if last and path.is_file() and part.endswith(suffix) else part)
    # Copier names a file by its path from the template's root (imports too: _shared/).
    under = base.parent if base != root else root
    files = {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in under.rglob(f"*{suffix}") if p.is_file()}
    with tempfile.TemporaryDirectory() as tmp:
        # A plain directory (no git), so that Copier takes the files as they are on disk.
        copy = Path(tmp) / "template"
        copy.mkdir()
        shutil.copy2(root / "copier.yml", copy / "copier.yml")
        shutil.copytree(under, copy / under.relative_to(root), ignore=shutil.ignore_patterns("__pycache__", "*.py[co]"),
                        dirs_exist_ok=True)
        env = Worker(src_path=str(copy), dst_path=Path(tmp) / "out", defaults=True, unsafe=True, quiet=True).jinja_env
        sources = [(name, text) for name, text in sorted(files.items())]
        sources += [(None, text) for text in sorted(strings) if _SHIPPED_MARKERS.search(text)]
        table = {_shipped_key(text, name, False): env.compile(text, name, None, raw=True) for name, text in sources}
        used = _used(env, [text for _, text in sources])
        return shipped_signature(env, used), dict(sorted(table.items())), used


def _used(env, sources: list[str]) -> Used:
    """The filters and tests these sources call, by name."""
    from jinja2 import nodes

    filters: set[str] = set()
    tests: set[str] = set()
    for text in sources:
        tree = env.parse(text)
        filters |= {node.name for node in tree.find_all(nodes.Filter)}
        tests |= {node.name for node in tree.find_all(nodes.Test)}
    return tuple(sorted(filters)), tuple(sorted(tests))


def _builtin_framework_texts() -> set[str]:
    """The built-in frameworks' example and smoke-test scripts (Jinja, rendered into every
    project of theirs by lumi_framework_text)."""
    import os

    from .plugins import DEFAULT_PLUGINS, ENV_DISABLE, ENV_LOAD, build_catalogue, make_plugin_manager

    saved = {name: os.environ.pop(name, None) for name in (ENV_DISABLE, ENV_LOAD)}
    os.environ[ENV_LOAD] = ""  # the built-ins alone, whatever the shell says
    try:
        pm, infos, problems = make_plugin_manager()
        cat = build_catalogue(pm, infos, problems)
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value
    return {text for fw in cat.frameworks.values() if cat.provenance.get(("framework", fw.name)) in DEFAULT_PLUGINS
            for text in (fw.example, fw.smoke_test)}


def _write(template: Any, out: Any) -> int:
    signature, table, used = shipped_code_for(template)
    lines = ['"""Made by `python -m lumi_scaffold._codecache` from copier.yml and project-templates/:',
             "Jinja's Python for this template (see _codecache). Do not edit; remake it after",
             'changing a template (tests/test_codecache.py says when)."""', "",
             f"SIGNATURE = {signature!r}", f"USED = {used!r}", "CODE = {"]
    lines += [f"    {key!r}: {python!r}," for key, python in table.items()]
    lines += ["}", ""]
    out.write_text("\n".join(lines), encoding="utf-8")
    return len(table)


if __name__ == "__main__":
    from pathlib import Path

    here = Path(__file__).resolve().parent
    count = _write(here.parent, here / "_template_code.py")
    print(f"lumi_scaffold/_template_code.py: {count} entries")
