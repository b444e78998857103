"""The templates' contract with the plugin_data model: every ``plugin_data.<path>`` that a
template, copier.yml or a plugin's rendered example reads names a field of
:class:`lumi_scaffold.plugin_data.PluginData` (or a method of the value there). Copier
renders an undefined name as empty text, so without this a misspelt field would quietly
drop a line from every generated project.

What the scan cannot see: a path reached through a variable (``{% set job =
plugin_data.job %}`` then ``job.x``) is checked up to the variable only.
"""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from lumi_scaffold.plugin_data import PluginData

REPO = Path(__file__).resolve().parents[1]
TAG = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
PATH = re.compile(r"(?<![\w.])plugin_data((?:\.[A-Za-z_]\w*)+)")


def template_files() -> list[Path]:
    """The files Jinja renders with plugin_data in scope: the project template, copier.yml,
    the built-in plugins' examples and the example plugins' data and examples (their text
    fields go through ``lumi_render``)."""
    found = [p for p in (REPO / "project-templates").rglob("*") if p.is_file()] + [REPO / "copier.yml"]
    found += sorted((REPO / "lumi_scaffold/default_plugins").rglob("*.py")) + sorted(
        (REPO / "lumi_scaffold/default_plugins").glob("*.yaml"))
    found += [p for p in (REPO / "plugins").rglob("*") if p.is_file() and p.suffix in (".py", ".yaml", ".jinja", ".md")
              and "tests" not in p.parts]
    return sorted(found)


def used_paths(text: str) -> set[tuple[str, ...]]:
    return {tuple(m.group(1)[1:].split(".")) for tag in TAG.findall(text) for m in PATH.finditer(tag)}


def _options(tp) -> list:
    """The types a field may hold: Optional and unions split, Annotated unwrapped."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _options(typing.get_args(tp)[0])
    if origin in (typing.Union, types.UnionType):
        return [o for arg in typing.get_args(tp) if arg is not type(None) for o in _options(arg)]
    return [tp]


def problem(tp, names: tuple[str, ...], seen: str = "plugin_data") -> str | None:
    """None when ``names`` can be read from a value of type ``tp``, else why not."""
    if not names:
        return None
    name, rest = names[0], names[1:]
    reasons = []
    for option in _options(tp):
        origin = typing.get_origin(option)
        if isinstance(option, type) and issubclass(option, BaseModel):
            fields = {f.alias or n: f for n, f in option.model_fields.items()} | option.model_fields
            if name in fields:
                reason = problem(fields[name].annotation, rest, f"{seen}.{name}")
            elif callable(getattr(option, name, None)) and not name.startswith("_"):
                reason = None  # a method of the model (the dict Copier gives templates has none, though)
            else:
                reason = f"{seen} ({option.__name__}) has no field {name!r}"
        elif origin is dict:
            key_type, value_type = typing.get_args(option)
            if name in ("items", "keys", "values", "get"):
                reason = None
            else:
                try:
                    TypeAdapter(key_type).validate_python(name)
                    reason = problem(value_type, rest, f"{seen}.{name}")
                except ValidationError:
                    reason = f"{seen} takes no key {name!r}"
        elif origin is list:
            reason = None if hasattr(list, name) else f"{seen} is a list: no {name!r}"
        elif origin is typing.Literal or option is str:
            reason = None if hasattr(str, name) else f"{seen} is text: no {name!r}"
        elif option is typing.Any:
            reason = None
        else:
            reason = f"{seen} is {getattr(option, '__name__', option)}: no {name!r}"
        if reason is None:
            return None
        reasons.append(reason)
    return "; ".join(reasons)


def test_the_scan_sees_the_templates():
    """Guards the scan itself: it finds the paths the templates read. (Since the runtime
    became a static library, the job files' values are computed in lumi_scaffold/values.py,
    which mypy checks against the model; the templates read fewer paths.)"""
    paths = {p for f in template_files() for p in used_paths(_read(f))}
    assert len(paths) > 50
    assert ("job", "signal_lead") in paths and ("container", "path") in paths and ("partition", "chains") in paths


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def files_that_read_plugin_data() -> list[Path]:
    """The files of :func:`template_files` with at least one plugin_data path: a file that
    reads none has nothing to check, so it is no case of the test below."""
    return [p for p in template_files() if used_paths(_read(p))]


@pytest.mark.parametrize("path", files_that_read_plugin_data(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_plugin_data_path_a_template_reads_exists(path):
    wrong = {".".join(names): why for names in used_paths(_read(path)) if (why := problem(PluginData, names))}
    assert not wrong, f"{path.relative_to(REPO)} reads plugin_data paths the model does not have: {wrong}"


@pytest.mark.parametrize(("text", "verdict"), [
    ("{{ plugin_data.job.signal_lead }}", None),
    ("{{ plugin_data.job.signal_laed }}", "plugin_data.job (JobFields) has no field 'signal_laed'"),
    ("{% for k, c in plugin_data.job.cost.items() %}", None),
    ("{{ plugin_data.job.shapes.train.nodes }}", None),
    ("{{ plugin_data.job.shapes.train.nodez }}", "plugin_data.job.shapes.train (Shape) has no field 'nodez'"),
    ("{{ plugin_data.site.rccl_check.name }}", None),
    ("{{ plugin_data.partition.purpose.rstrip('.') }}", None),
    ("{{ plugin_data.container.modules.name }}", "plugin_data.container.modules is a list: no 'name'"),
    ("{{ plugin_data.tracking.nmae }}", "plugin_data.tracking (TrackingFacts) has no field 'nmae'"),
])
def test_a_misspelt_path_is_found(text, verdict):
    [names] = used_paths(text)
    assert problem(PluginData, names) == verdict


# Issue 30: the project's runtime is a static library; templates print values, nothing more.
CONTROL = re.compile(r"\{%-?\s*(if|for|elif|else|set|macro|include|import|from|with|call|filter|block|raw|yield)\b")
MAX_CONTROL_TAGS = 250
# Issue 41: a job file also holds the user's command, where they read and change it (60 at most).
MAX_TEMPLATED_SHELL_LINES = 60
ARITHMETIC = {"+", "-", "*", "/", "//", "%", "**"}


def project_templates() -> list[Path]:
    """The files Jinja renders: .jinja files and the imported parts in _shared/ (other
    files are copied as they are)."""
    root = REPO / "project-templates"
    return sorted(p for p in root.rglob("*") if p.is_file() and (p.suffix == ".jinja" or "_shared" in p.parts))


def _tag_tokens(text: str) -> list[list[tuple[str, str]]]:
    """The tokens of each Jinja tag of ``text``, one list per tag."""
    from jinja2 import Environment

    tags, current = [], None
    for _, kind, value in Environment().lex(text):
        if kind in ("block_begin", "variable_begin"):
            current = []
        elif kind in ("block_end", "variable_end"):
            tags.append(current or [])
            current = None
        elif current is not None and kind != "whitespace":
            current.append((kind, value))
    return tags


def test_templates_are_few_tags():
    counts = {str(p.relative_to(REPO)): len(CONTROL.findall(p.read_text(encoding="utf-8"))) for p in project_templates()}
    assert sum(counts.values()) <= MAX_CONTROL_TAGS, sorted(counts.items(), key=lambda kv: -kv[1])[:8]


def test_no_templated_shell_file_is_long():
    """A templated shell file holds what Slurm must read from the file (the #SBATCH header)
    and calls the static library; its logic lives in static files."""
    long = {}
    for p in project_templates():
        name = p.name[:-len(".jinja")] if p.name.endswith(".jinja") else p.name
        if p.suffix == ".jinja" and (name.endswith((".sh", ".sbatch")) or name.endswith(("sh{% endif %}", "sbatch{% endif %}"))):
            lines = p.read_text(encoding="utf-8").count("\n")
            if lines > MAX_TEMPLATED_SHELL_LINES:
                long[str(p.relative_to(REPO))] = lines
    assert long == {}


def test_no_template_computes_or_tests_job_kinds():
    """Numbers are computed in Python (lumi_scaffold.values, jobs, plugin_data), and a
    template never branches on a job kind's name."""
    from lumi_scaffold.jobs import JOB_KINDS

    found = []
    for p in project_templates():
        for tokens in _tag_tokens(p.read_text(encoding="utf-8")):
            if ARITHMETIC & {v for k, v in tokens if k == "operator"}:
                found.append(f"{p.relative_to(REPO)}: arithmetic in {' '.join(v for _, v in tokens)}")
            for i, (kind, value) in enumerate(tokens):
                near = [v for _, v in tokens[max(i - 3, 0):i + 3]]
                if kind == "string" and value.strip("'\"") in JOB_KINDS and {"==", "!=", "in"} & set(near):
                    found.append(f"{p.relative_to(REPO)}: tests the job kind {value} in {' '.join(v for _, v in tokens)}")
    assert found == []


def test_the_contract_scans_see_violations():
    assert CONTROL.findall("{% if a %}{%- for x in y %}{% endif %}") == ["if", "for"]
    [tokens] = _tag_tokens("{{ cost.per_hour / nodes }}")
    assert ("operator", "/") in tokens
    [tokens] = _tag_tokens("{% if kind in ('train', 'profile') %}")
    assert ("string", "'train'") in tokens and ("name", "in") in tokens
