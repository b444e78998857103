"""Shortcuts through Copier's internals for the repository's own render matrix.

Not for plugin authors: lumi_scaffold.testing renders with plain Copier. These patch
private Copier functions (each only where Copier still has it, each undone on exit) to
skip work that cannot change a fresh render from a template in a plain directory; a test
in test_render.py renders with and without them and compares the trees byte for byte.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lumi_scaffold.testing import _render_many

__all__ = ["copier_shortcuts", "render_many"]


@contextlib.contextmanager
def copier_shortcuts() -> Iterator[list[str]]:
    """Skip work Copier does on every run that cannot change a fresh render from a
    template in a plain directory; yields the names of the shortcuts taken.

    Used by the full-matrix test (tests/test_render.py) and the matrix benchmark, where
    together they halve Copier's time per project (docs/performance.md):

    - ``filemode``: ``Worker._sync_git_index_executable_bit`` runs ``git config`` once per
      written file, and only acts on files git already tracks; a fresh destination has none;
    - ``bundle``: ``is_git_bundle`` runs ``git init`` and ``git bundle verify`` for every
      template path, but a bundle is a file, never a directory;
    - ``config``: ``load_template_config`` parses copier.yml with pure-Python YAML on every
      render; it is parsed once per (path, mtime, size) and deep-copied;
    - ``choices``: choices rendered with ``| tojson`` are parsed back with pure-Python YAML;
      JSON is tried first (JSON is YAML, so the result is the same);
    - ``plain``: Copier renders every string of every question (help, default, when...)
      and every part of every path with Jinja; most contain no Jinja at all and are
      returned as they are (only when the environment would render them unchanged, and
      after the extensions' preprocess hooks, which reset Copier's yield state);
    - ``context``: ``Worker._render_context`` rebuilds the whole Jinja context (all answers
      merged, the answers file's subset recomputed) for every path part and every file,
      ~130 times per project, and renders the answers file's path ~45 times; in the
      render phase the answers are final, so both are built once per project (the
      context is copied for each caller);
    - ``answers``: the answers file is PyYAML's pure-Python emitter over ~800 nodes (a
      third of a render); most of its entries (the site, the image, a job's shape) recur
      from project to project, so each entry is written once per process, with its own
      key path above it so it is indented and wrapped as in the whole file, and the
      entries are joined. Data with a shared object (which PyYAML writes as an anchor), a
      type other than plain dicts, lists and scalars, or an entry that ends its document
      is written whole, as before.

    Each patch is applied only where Copier still has the function it replaces, so a
    Copier upgrade can only lose a speed-up; everything is restored on exit. A test renders
    with and without them and compares the trees byte for byte.
    """
    taken: list[str] = []
    saved: list[tuple[Any, str, Any]] = []

    def patch(name: str, module_name: str, owner_name: str | None, attr: str, make) -> None:
        try:
            module = importlib.import_module(module_name)
            owner = getattr(module, owner_name) if owner_name else module
            original = getattr(owner, attr)
        except (ImportError, AttributeError):
            return
        saved.append((owner, attr, original))
        setattr(owner, attr, make(original))
        if name not in taken:
            taken.append(name)

    def no_filemode_sync(original):
        return lambda self, dst_relpath, src_mode: None

    def bundles_are_files(original):
        return lambda path: Path(path).is_file() and original(path)

    def config_once(original):
        parsed: dict[tuple, Any] = {}

        def load(conf_path, quiet=False):
            info = Path(conf_path).stat()
            key = (str(conf_path), info.st_mtime_ns, info.st_size, quiet)
            if key not in parsed:
                parsed[key] = original(conf_path, quiet)
            return copy.deepcopy(parsed[key])

        return load

    # JSON that YAML 1.1 (PyYAML) reads otherwise: exponents without a dot, NaN and
    # Infinity, surrogate pairs
    not_yaml_alike = re.compile(r"[0-9][eE]|NaN|Infinity|\\u[dD][89a-fA-F]")

    def json_first(original):
        def parse(string):
            if string[:1] in ("[", "{") and not not_yaml_alike.search(string):
                try:
                    return json.loads(string)
                except ValueError:
                    pass
            return original(string)

        return parse

    def context_once_per_render(original):
        from copier._types import LazyDict, Phase

        def context(self):
            if Phase.current() is not Phase.RENDER:
                return original(self)
            cached = self.__dict__.get("_lumi_render_context")
            if cached is None:
                cached = self.__dict__["_lumi_render_context"] = original(self)
            # What Copier builds afresh per call, each caller gets afresh: the top-level
            # dicts (Copier writes into _copier_conf, see Worker.answers_relpath), the
            # LazyDict filled from the shared one, the answers file's mapping copied.
            conf = cached["_copier_conf"]
            return {**cached, "_copier_conf": LazyDict({k: functools.partial(conf.__getitem__, k) for k in conf}),
                    "_copier_answers": dict(cached["_copier_answers"])}

        return context

    def answers_path_once_per_render(original):
        from copier._types import Phase

        def answers_relpath(self):
            if Phase.current() is not Phase.RENDER:
                return original.fget(self)
            if "_lumi_answers_relpath" not in self.__dict__:
                self.__dict__["_lumi_answers_relpath"] = original.fget(self)
            return self.__dict__["_lumi_answers_relpath"]

        return property(answers_relpath)

    def plain_strings_as_they_are(original):
        def render_value(self, value, extra_answers=None):
            if isinstance(value, str) and _renders_to_itself(self.jinja_env, value):
                return value
            return original(self, value, extra_answers)

        return render_value

    def plain_paths_as_they_are(original):
        def render_string(self, string, extra_context=None):
            env = self.jinja_env
            if isinstance(string, str) and _renders_to_itself(env, string):
                env.preprocess(string)  # what compiling it would do: extensions reset their state
                return string
            return original(self, string, extra_context)

        return render_string

    patch("filemode", "copier._main", "Worker", "_sync_git_index_executable_bit", no_filemode_sync)
    patch("plain", "copier._user_data", "Question", "render_value", plain_strings_as_they_are)
    patch("plain", "copier._main", "Worker", "_render_string", plain_paths_as_they_are)
    patch("context", "copier._main", "Worker", "_render_context", context_once_per_render)
    patch("context", "copier._main", "Worker", "answers_relpath", answers_path_once_per_render)
    patch("bundle", "copier._vcs", None, "is_git_bundle", bundles_are_files)
    patch("config", "copier._template", None, "load_template_config", config_once)
    patch("choices", "copier._user_data", None, "parse_yaml_string", json_first)
    filters = importlib.import_module("lumi_scaffold.copier_ext")._FILTERS
    if "lumi_yaml" in filters:
        saved.append((filters, "lumi_yaml", filters["lumi_yaml"]))
        filters["lumi_yaml"] = _AnswersByEntry(filters["lumi_yaml"])
        taken.append("answers")
    try:
        yield taken
    finally:
        for owner, attr, original in reversed(saved):
            if isinstance(owner, dict):
                owner[attr] = original
            else:
                setattr(owner, attr, original)




def active() -> bool:
    """Whether the shortcuts are taken now (in this process)."""
    return isinstance(importlib.import_module("lumi_scaffold.copier_ext")._FILTERS.get("lumi_yaml"), _AnswersByEntry)


def _renders_to_itself(env, text: str) -> bool:
    """True when Jinja would render ``text`` as it is: no delimiter of any kind, and no
    newline that the environment would change (a trailing one dropped, or \n rewritten)."""
    marks = (env.block_start_string, env.variable_start_string, env.comment_start_string,
             env.line_statement_prefix, env.line_comment_prefix)
    if any(mark and mark in text for mark in marks) or "\r" in text:
        return False
    if "\n" in text and (env.newline_sequence != "\n" or (text.endswith("\n") and not env.keep_trailing_newline)):
        return False
    return True


def render_many(template: Path, root: Path, matrix: list[dict[str, Any]], workers: int = 2) -> list[tuple[str, str]]:
    """lumi_scaffold.testing.render_many with the shortcuts taken in every worker."""
    return _render_many(template, root, matrix, workers, around=copier_shortcuts)


# In the suite (the root conftest.py) and in a pytest it starts (a plugin package's own
# tests in a fresh venv: `-p tests.copier_shortcuts` with this variable set to 1), the
# plugins' matrices (check_conformance's render_many) render with the shortcuts too: the
# same bytes (test_render.py), in about half the time. Plugin authors' own runs do not.
ENV = "LUMI_SCAFFOLD_TESTS_COPIER_SHORTCUTS"


def pytest_configure(config) -> None:
    if os.environ.get(ENV) == "1":
        from lumi_scaffold import testing

        testing.render_many = render_many


class _AnswersByEntry:
    """lumi_yaml (block style, keys sorted) written entry by entry, each entry once per
    process: the text of ``{a: {b: {key: value}}}`` less its first two lines is the text of
    that entry inside the whole file, as long as no object is shared (an anchor names it
    across entries) and no entry ends its document ("..." after a kept block scalar)."""

    _NAME = re.compile(r"[a-z_][a-z0-9_]{0,39}\Z")  # a key written on one line of its own
    _DEPTH = 3  # dicts split into entries down to this depth (plugin_data.job.shapes)
    _MAX = 50_000

    def __init__(self, whole) -> None:
        self.whole = whole
        self.memo: dict[tuple, str] = {}

    def __call__(self, data: Any) -> str:
        try:
            if type(data) is not dict or not data:
                raise _Whole
            _fingerprint(data, set())  # _Whole if an object is shared anywhere in it
            return "".join(self._entries((), data, self._DEPTH))
        except (_Whole, TypeError):
            return self.whole(data)

    def _entries(self, path: tuple[str, ...], mapping: dict, depth: int) -> Iterator[str]:
        for key in sorted(mapping):
            value = mapping[key]
            if depth and type(value) is dict and value and isinstance(key, str) and self._NAME.match(key):
                head = self._text(path, key, {})
                if not head.endswith(": {}\n"):
                    raise _Whole
                yield head[:-4] + "\n"
                yield from self._entries(path + (key,), value, depth - 1)
            else:
                yield self._text(path, key, value)

    def _text(self, path: tuple[str, ...], key: Any, value: Any) -> str:
        memo_key = (path, _fingerprint(key, set()), _fingerprint(value, set()))
        text = self.memo.get(memo_key)
        if text is None:
            nested: Any = {key: value}
            for name in reversed(path):
                nested = {name: nested}
            lines = self.whole(nested).splitlines(keepends=True)
            text = "".join(lines[len(path):])
            if text.endswith("...\n") or any(not line.startswith("    " * len(path)) for line in lines[len(path):]):
                raise _Whole
            if len(self.memo) >= self._MAX:
                self.memo.clear()
            self.memo[memo_key] = text
        return text


class _Whole(Exception):
    """The data is written whole (what _AnswersByEntry cannot split safely)."""


def _fingerprint(value: Any, seen: set[int]) -> Any:
    """value as a hashable tree that tells apart everything PyYAML writes differently
    (types included: True and 1, a str subclass); _Whole for a shared or other object."""
    kind = type(value)
    if kind is dict or kind is list:
        if id(value) in seen:
            raise _Whole
        seen.add(id(value))
        if kind is dict:
            return (dict, tuple((_fingerprint(k, seen), _fingerprint(v, seen)) for k, v in value.items()))
        return (list, tuple(_fingerprint(v, seen) for v in value))
    if kind is float:
        return (kind, repr(value))  # 0.0 and -0.0 are equal, and written apart
    if kind in (str, int, bool, type(None)):
        return (kind, value)
    raise _Whole
