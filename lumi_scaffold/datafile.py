"""Load catalogue data from YAML files with ``file:line:col: field: message`` errors.

Plugin authors write sites and frameworks as YAML and load them with
:func:`load_data_file`; a mistake is reported at the line where it was made.

One parser: ruamel.yaml's round-trip loader (YAML 1.2), which keeps every node's
position for the error messages. (Until 0.4 a libyaml fast path read the simple files
first and had to type every scalar as ruamel does; the 60 ms it saved per catalogue build
served a retired copy-speed goal, docs/performance.md.)
"""

from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import DataFileError

__all__ = ["error_messages", "load_data_file", "locate", "validation_lines", "value_at"]

M = TypeVar("M", bound=BaseModel)


def _yaml():
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    return yaml


def locate(root: Any, loc: tuple[Any, ...], *, at_key: bool = False) -> tuple[int, int]:
    """1-based (line, column) of the node a pydantic error ``loc`` points at (with
    ``at_key``, of the key of the last mapping entry, e.g. an unknown key)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    node = root
    pos = (root.lc.line, root.lc.col) if hasattr(root, "lc") else (0, 0)
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            child = node[part]
            nested = isinstance(child, (CommentedMap, CommentedSeq))
            pos = node.lc.key(part) if nested or at_key else node.lc.value(part)
            node = child
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            pos = node.lc.item(part)
            node = node[part]
        else:
            break  # a missing key: report the mapping that lacks it
    return pos[0] + 1, pos[1] + 1


def _model_at(model: Any, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that validates the mapping at ``loc`` below ``model``, if one does."""
    tp = model
    for part in (*loc, None):
        while True:  # unwrap Annotated[...] and X | None
            origin, args = typing.get_origin(tp), typing.get_args(tp)
            if origin is typing.Annotated:
                tp = args[0]
            elif origin in (typing.Union, types.UnionType):
                arms = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
                if len(arms) != 1:
                    return None
                tp = arms[0]
            else:
                break
        if part is None:
            return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if part not in tp.model_fields:
                return None
            tp = tp.model_fields[part].annotation
        elif origin in (list, tuple, set, frozenset) and isinstance(part, int) and args:
            tp = args[0]
        elif origin is dict and len(args) == 2:
            tp = args[1]
        else:
            return None
    return None  # not reached


def value_at(data: Any, loc: tuple[Any, ...], missing: Any = None) -> Any:
    """The value at ``loc`` (keys and list indexes, as a validation error names it) in
    ``data``, or ``missing`` where there is none."""
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return missing
    return data


def error_messages(model: Any, data: Any, error: ValidationError) -> list[tuple[tuple[Any, ...], str, str, Any]]:
    """(location, pydantic's error type, message, input) per pydantic error of ``model`` validating ``data``. An unknown
    key gets "did you mean" (or the list of known keys); a missing field that such a
    suggestion names is not reported again."""
    found = []
    for err in error.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        found.append((loc, err["type"], err["msg"].removeprefix("Value error, "), err.get("input")))
    suggested = set()
    messages = []
    for loc, kind, message, value in found:
        if kind == "extra_forbidden" and loc and model is not None:
            parent, key = loc[:-1], str(loc[-1])
            owner = _model_at(model, parent)
            if owner is not None:
                present = value_at(data, parent)
                fields = [f for f in owner.model_fields if not (isinstance(present, dict) and f in present)]
                close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
                if close:
                    message = f"unknown key; did you mean {close[0]!r}?"
                    suggested.add((*parent, close[0]))
                else:
                    message = f"unknown key; {owner.__name__} has {', '.join(owner.model_fields)}"
        messages.append((loc, kind, message, value))
    return [m for m in messages if not (m[1] == "missing" and m[0] in suggested)]


def validation_lines(path: str, data: Any, error: ValidationError, *, prefix: tuple[Any, ...] = (),
                     model: Any = None) -> list[str]:
    """One ``file:line:col: field: message`` line per pydantic error (``model``, when given,
    adds "did you mean" to unknown keys)."""
    lines = []
    for loc, kind, message, _value in error_messages(model, value_at(data, prefix), error):
        line, col = locate(data, prefix + loc, at_key=kind == "extra_forbidden")
        field = ".".join(str(p) for p in prefix + loc) or "(top level)"
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
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFileError(shown, [f"{shown}: cannot read: {exc.strerror}"]) from None
    except UnicodeDecodeError as exc:
        raise DataFileError(shown, [f"{shown}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"]) from None
    return _load(text, shown, model, many, overrides)


def _load(text: str, shown: str, model: type[M], many: bool, overrides: dict[str, Any]) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.error import MarkedYAMLError

    try:
        data = _yaml().load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{shown}:{mark.line + 1}:{mark.column + 1}" if mark else shown
        raise DataFileError(shown, [f"{where}: not valid YAML: {exc.problem}"]) from None
    except (RecursionError, ValueError, LookupError, TypeError) as exc:  # ruamel's own slips, e.g. `a: -_`
        raise DataFileError(shown, [f"{shown}: not valid YAML ({type(exc).__name__}: {exc})"]) from None
    if many:
        if not isinstance(data, CommentedSeq):
            raise DataFileError(shown, [f"{shown}:1:1: expected a list of {model.__name__} entries"])
        items, problems = [], []
        for index, item in enumerate(data):
            try:
                items.append(_validate(model, item, overrides))
            except ValidationError as exc:
                problems += validation_lines(shown, data, exc, prefix=(index,), model=model)
        if problems:
            raise DataFileError(shown, problems)
        return items
    if not isinstance(data, CommentedMap):
        raise DataFileError(shown, [f"{shown}:1:1: expected a mapping of {model.__name__} fields"])
    try:
        return _validate(model, data, overrides)
    except ValidationError as exc:
        raise DataFileError(shown, validation_lines(shown, data, exc, model=model)) from None


def _validate(model: type[M], data: Any, overrides: dict[str, Any]) -> M:
    if overrides and isinstance(data, dict):
        data = {**data, **overrides}
    return model.model_validate(data)
