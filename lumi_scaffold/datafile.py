"""Load catalogue data from YAML files with ``file:line:col: field: message`` errors.

Plugin authors write sites and frameworks as YAML and load them with
:func:`load_data_file`; a mistake is reported at the line where it was made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from .errors import DataFileError

__all__ = ["load_data_file", "locate", "validation_lines"]

M = TypeVar("M", bound=BaseModel)


def _yaml() -> YAML:
    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    return yaml


def locate(root: Any, loc: tuple[Any, ...]) -> tuple[int, int]:
    """1-based (line, column) of the node a pydantic error ``loc`` points at."""
    node = root
    pos = (root.lc.line, root.lc.col) if hasattr(root, "lc") else (0, 0)
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            child = node[part]
            nested = isinstance(child, (CommentedMap, CommentedSeq))
            pos = node.lc.key(part) if nested else node.lc.value(part)
            node = child
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            pos = node.lc.item(part)
            node = node[part]
        else:
            break  # a missing key: report the mapping that lacks it
    return pos[0] + 1, pos[1] + 1


def validation_lines(path: str, data: Any, error: ValidationError, *, prefix: tuple[Any, ...] = ()) -> list[str]:
    """One ``file:line:col: field: message`` line per pydantic error."""
    lines = []
    for err in error.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        line, col = locate(data, prefix + loc)
        field = ".".join(str(p) for p in prefix + loc) or "(top level)"
        message = err["msg"].removeprefix("Value error, ")
        lines.append(f"{path}:{line}:{col}: {field}: {message}")
    return lines


def load_data_file(path: str | Path, model: type[M], *, many: bool = False, **overrides: Any) -> Any:
    """Load ``path`` and validate it as ``model`` (or, with ``many``, a list of them).

    ``overrides`` are merged into the mapping before validation (e.g. text read from a
    file beside the YAML). Raises :class:`DataFileError` with located messages.
    """
    path = Path(path)
    shown = str(path)
    try:
        data = _yaml().load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataFileError(shown, [f"{shown}: cannot read: {exc.strerror}"]) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark else shown
        raise DataFileError(shown, [f"{where}: not valid YAML: {exc.problem}"]) from None
    if many:
        if not isinstance(data, CommentedSeq):
            raise DataFileError(shown, [f"{shown}:1:1: expected a list of {model.__name__} entries"])
        items, problems = [], []
        for index, item in enumerate(data):
            try:
                items.append(_validate(model, item, overrides))
            except ValidationError as exc:
                problems += validation_lines(shown, data, exc, prefix=(index,))
        if problems:
            raise DataFileError(shown, problems)
        return items
    if not isinstance(data, CommentedMap):
        raise DataFileError(shown, [f"{shown}:1:1: expected a mapping of {model.__name__} fields"])
    try:
        return _validate(model, data, overrides)
    except ValidationError as exc:
        raise DataFileError(shown, validation_lines(shown, data, exc)) from None


def _validate(model: type[M], data: Any, overrides: dict[str, Any]) -> M:
    if overrides and isinstance(data, dict):
        data = {**data, **overrides}
    return model.model_validate(data)
