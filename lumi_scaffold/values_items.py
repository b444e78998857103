"""The items of scripts/values.sh: a value with the comment above it, a heading (shared by
lumi_scaffold.values and lumi_scaffold.values_network, which write the file's parts)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Value:
    """One ``name=value`` line, with the comment lines above it."""

    name: str
    value: str | tuple[str, ...]
    comment: tuple[str, ...] = ()


@dataclass(frozen=True)
class Heading:
    """A blank line and a comment that starts a group of values."""

    text: tuple[str, ...]


Item = Value | Heading


def word(value: Any) -> str:
    """One shell word in single quotes (always, so that every value reads the same)."""
    text = str(value)
    return "'" + text.replace("'", "'\\''") + "'"


def absent(heading: str, *names: str | tuple[str]) -> list[Item]:
    """The values of a part this project does not have: a heading that says so, and each
    name empty ('' or, for a name given as a 1-tuple, an empty list)."""
    return [Heading((heading,)), *empty(*names)]


def empty(*names: str | tuple[str]) -> list[Item]:
    """Each name empty ('' or, for a name given as a 1-tuple, an empty list)."""
    return [Value(n[0], ()) if isinstance(n, tuple) else Value(n, "") for n in names]
