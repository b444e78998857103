"""The sources generated files and the catalogue cite: ``[KEY]`` in comments, ``source:``
fields in plugin data. The bibliography is ``sources.yaml`` beside this file;
``docs/sources.md`` is made from it (:func:`markdown`), and each generated README lists
the sources its project cites (:func:`cited_in`, through the Copier extension).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

BIBLIOGRAPHY = Path(__file__).with_name("sources.yaml")
# [KEY] or [KEY, KEY]: a key starts with two capitals or digits (WS-09, AIG-05, TM-Slurm,
# PYPI), which a character range such as [A-Za-z0-9] does not.
_KEY = r"[A-Z][A-Z0-9]+(?:-[A-Za-z0-9]+)*"
_CITATION = re.compile(rf"\[({_KEY}(?:, {_KEY})*)\]")
_SOURCE_FIELDS = ("source", "packages_source")


@functools.lru_cache(maxsize=1)
def bibliography() -> dict[str, dict[str, str]]:
    """key -> {title, url, read}."""
    return yaml.safe_load(BIBLIOGRAPHY.read_text(encoding="utf-8"))


def keys_in_text(text: str) -> set[str]:
    """Every [KEY] citation in ``text`` (known or not)."""
    return {key for match in _CITATION.finditer(text) for key in match.group(1).split(", ")}


def keys_in_field(value: str) -> set[str]:
    """The keys of a ``source:`` field: 'UG-part, TM-Slurm (sinfo Apr 2026), UG-bill'."""
    return {re.sub(r"\s*\(.*?\)", "", part).strip() for part in value.split(",") if part.strip()}


def keys_in_data(data: Any) -> set[str]:
    """The keys of every ``source`` field in nested plugin data."""
    if isinstance(data, Mapping):
        found = set()
        for name, value in data.items():
            if name in _SOURCE_FIELDS and isinstance(value, str):
                found |= keys_in_field(value)
            else:
                found |= keys_in_data(value)
        return found
    if isinstance(data, list):
        return set().union(*(keys_in_data(item) for item in data)) if data else set()
    return set()


def cited_in(texts: Iterable[str], data: Any = None) -> list[dict[str, str]]:
    """The known sources cited in ``texts`` and ``data``, sorted by key, each as
    {key, title, url, read}."""
    known = bibliography()
    keys = set().union(*(keys_in_text(t) for t in texts)) | keys_in_data(data)
    return [{"key": key, **known[key]} for key in sorted(keys) if key in known]


def markdown() -> str:
    """docs/sources.md."""
    lines = [
        "# Sources",
        "",
        "The keys that generated files and the catalogue cite (`[WS-09]` in a comment, `source:` in",
        "plugin data), with what each is and when it was read. Made from",
        "`lumi_scaffold/sources.yaml` (tests/test_sources.py checks that this page matches it and",
        "that every cited key is in it); each generated README lists the ones its project cites.",
        "",
        "| key | source | read |",
        "|---|---|---|",
    ]
    for key, entry in sorted(bibliography().items()):
        lines.append(f"| {key} | [{entry['title']}]({entry['url']}) | {entry['read']} |")
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=8)
def template_texts(root: str) -> tuple[tuple[str, str], ...]:
    """(relative path, text) of every file under ``root``/project-templates."""
    base = Path(root)
    files = sorted(p for p in (base / "project-templates").rglob("*") if p.is_file())
    return tuple((str(p.relative_to(base)), p.read_text(encoding="utf-8", errors="replace")) for p in files)
