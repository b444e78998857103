"""The sources generated files and the catalogue cite: ``[KEY]`` in comments, ``source:``
fields in plugin data. The bibliography is ``sources.yaml`` beside this file;
``docs/sources.md`` is made from it (:func:`markdown`), and each generated README lists
the sources its project cites (:func:`cited_in`, through the Copier extension).

A source about one site (``sites:`` in the bibliography: LUMI's user guide, Frontier's) is
cited by the shared templates only in that site's projects (:func:`cite`, the
``lumi_cite`` filter); a site's own catalogue data cites what it likes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


BIBLIOGRAPHY = Path(__file__).with_name("sources.yaml")
# [KEY] or [KEY, KEY]: a key starts with two capitals or digits (WS-09, AIG-05, TM-Slurm,
# PYPI), which a character range such as [A-Za-z0-9] does not.
_KEY = r"[A-Z][A-Z0-9]+(?:-[A-Za-z0-9]+)*"
_KEYS = rf"{_KEY}(?:, {_KEY})*"
_CITATION = re.compile(rf"\[({_KEYS})\]")
# A run of citations ("[AIG-05], [TM-Bind]") and the blanks before it.
_CITATION_RUN = re.compile(rf"(?P<lead>[ \t]*)(?P<run>\[{_KEYS}\](?:, \[{_KEYS}\])*)")
_SOURCE_FIELDS = ("source", "packages_source")


@functools.lru_cache(maxsize=1)
def bibliography() -> dict[str, dict[str, str]]:
    """key -> {title, url, read}, read by ruamel (YAML 1.2, safe), the package's one YAML parser."""
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(BIBLIOGRAPHY.read_text(encoding="utf-8"))


def citable(key: str, site: str) -> bool:
    """Whether the shared templates cite ``key`` in a project for ``site``: a key with
    ``sites`` only there; any other key (one the bibliography does not know too: a
    plugin's own) everywhere."""
    sites = bibliography().get(key, {}).get("sites")
    return not sites or site in sites


def cite(text: str, site: str) -> str:
    """``text`` without the keys a project for ``site`` does not cite: "[AIG-05], [SL-x]"
    keeps "[SL-x]"; a citation left with no key goes, with the blanks or ", " before it."""

    def run(match: re.Match[str]) -> str:
        groups = []
        for group in _CITATION.findall(match["run"]):
            kept = [key for key in group.split(", ") if citable(key, site)]
            if kept:
                groups.append(f"[{', '.join(kept)}]")
        return match["lead"] + ", ".join(groups) if groups else ""

    return _CITATION_RUN.sub(run, text)


def field_for_site(value: str, site: str) -> str:
    """A ``source:`` field without the keys a project for ``site`` does not cite."""
    parts = [part.strip() for part in value.split(",") if part.strip()]
    return ", ".join(part for part in parts if citable(re.sub(r"\s*\(.*?\)", "", part), site))


def keys_in_text(text: str) -> set[str]:
    """Every [KEY] citation in ``text`` (known or not)."""
    return {key for match in _CITATION.finditer(text) for key in match.group(1).split(", ")}


@functools.lru_cache(maxsize=1024)
def _keys_in(text: str) -> frozenset[str]:
    """:func:`keys_in_text`, once per text: a project's README cites the keys of every
    template file, and most of those texts are the same objects from project to project
    (template_texts), whose hash Python keeps."""
    return frozenset(keys_in_text(text))


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


def cited_in(texts: Iterable[str], data: Any = None, site: str | None = None,
             registered: Mapping[str, Mapping[str, str]] | None = None) -> list[dict[str, str]]:
    """The known sources cited in ``texts`` (only those :func:`citable` for ``site``, when
    given) and ``data``, sorted by key, each as {key, title, url, read}; ``registered``:
    the plugins' own sources (register_sources), beside the bibliography."""
    known = {**(registered or {}), **bibliography()}
    keys = {key for text in texts for key in _keys_in(text) if site is None or citable(key, site)}
    keys |= keys_in_data(data)
    return [{"key": key, "title": known[key]["title"], "url": known[key]["url"], "read": known[key]["read"]}
            for key in sorted(keys) if key in known]


def markdown() -> str:
    """docs/sources.md."""
    lines = [
        "# Sources",
        "",
        "The keys that generated files and the catalogue cite (`[WS-09]` in a comment, `source:` in",
        "plugin data), with what each is and when it was read. Made from",
        "`lumi_scaffold/sources.yaml` (tests/test_sources.py checks that this page matches it and",
        "that every cited key is in it); each generated README lists the ones its project cites.",
        "A source about one site (column *sites*) is cited in the templates' comments only in",
        "projects for that site; elsewhere the comment keeps its words and drops the key.",
        "",
        "| key | source | read | sites |",
        "|---|---|---|---|",
    ]
    for key, entry in sorted(bibliography().items()):
        sites = ", ".join(entry.get("sites", [])) or "all"
        lines.append(f"| {key} | [{entry['title']}]({entry['url']}) | {entry['read']} | {sites} |")
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=8)
def template_texts(root: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The files under ``root``/project-templates: the texts of those whose path has no
    Jinja (every project has them), and (relative path, text) of the others (a project
    has one where its path renders with no empty part)."""
    base = Path(root)
    files = sorted(p for p in (base / "project-templates").rglob("*") if p.is_file())
    named = [(str(p.relative_to(base)), p.read_text(encoding="utf-8", errors="replace")) for p in files]
    return tuple(text for name, text in named if "{" not in name), tuple(e for e in named if "{" in e[0])
