"""Load catalogue data from YAML files with ``file:line:col: field: message`` errors.

Plugin authors write sites and frameworks as YAML and load them with
:func:`load_data_file`; a mistake is reported at the line where it was made.

Two parsers, one meaning. ruamel.yaml's round-trip loader keeps every node's position,
which the error messages need, but it is pure Python and was most of the catalogue's
build time (63 of 85 ms, docs/performance.md). So a file is first read with libyaml
(PyYAML's ``CSafeLoader``, when present) through a resolver that types plain scalars
exactly as ruamel's YAML 1.2 loader does for the simple cases and *declines* everything
else (``0o17``, ``1_000``, dates, ``.inf``, merge keys, duplicate keys, odd tags...).
When it declines, when the file is not what the model wants, or when validation
fails, the file is parsed again with ruamel and everything is reported from there.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import DataFileError

__all__ = ["load_data_file", "locate", "validation_lines"]

M = TypeVar("M", bound=BaseModel)


def _yaml():
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt", pure=True)
    yaml.allow_duplicate_keys = False
    return yaml


# Plain scalars the fast path types itself, with the same result as ruamel's YAML 1.2
# core schema: true/false, null/~/empty, decimal ints without leading zeros or "_",
# and decimal floats of the form 1.5.
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_SIMPLE_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")
_SIMPLE_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\.[0-9]+\Z")
# What else ruamel may type (a superset, to be safe): ints in other bases or with "_"
# or leading zeros, other floats, .inf/.nan, anything starting like a date, "<<", "=".
_MAYBE_TYPED = re.compile(
    r"[-+]?(?:0[bBoOxX]?[0-9a-fA-F_]*|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?"
    r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?|\.(?:inf|Inf|INF|nan|NaN|NAN))\Z"
    r"|[0-9]{4}-[0-9]|<<\Z|=\Z"
)
# Private tags: only what the resolver below produced is constructed, so any tag written
# in the file (!!str, !!binary, !custom...) has no constructor and is declined.
_STR, _INT, _FLOAT, _BOOL, _NULL, _MAP, _SEQ = (f"lumi-fast:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq"))
_KEY_TYPES = (str, int, float, bool, type(None))


class _Decline(Exception):
    """The fast path leaves this file to ruamel."""


_FAST_LOADER: list[Any] = []


def _fast_loader() -> Any:
    """A ``yaml.CSafeLoader`` subclass with the resolver above, or None without libyaml."""
    if _FAST_LOADER:
        return _FAST_LOADER[0]
    try:
        import yaml

        base = yaml.CSafeLoader
    except (ImportError, AttributeError):
        _FAST_LOADER.append(None)
        return None

    scalars = {_STR: str, _INT: int, _FLOAT: float, _BOOL: _BOOLS.__getitem__, _NULL: lambda value: None}

    def scalar(loader, node) -> Any:
        return scalars[node.tag](node.value)

    def mapping(loader, node):
        data: dict[Any, Any] = {}
        yield data
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, _KEY_TYPES) or key in data:
                raise _Decline(f"complex or duplicate key {key!r}")
            data[key] = loader.construct_object(value_node, deep=True)

    def sequence(loader, node):
        data: list[Any] = []
        yield data
        data.extend(loader.construct_object(child, deep=True) for child in node.value)

    def undefined(loader, node):
        raise _Decline(f"tag {node.tag}")

    class Yaml12Loader(base):  # type: ignore[misc,valid-type]
        yaml_constructors = {**dict.fromkeys(scalars, scalar), _MAP: mapping, _SEQ: sequence, None: undefined}

        def resolve(self, kind, value, implicit):
            if kind is yaml.MappingNode:
                return _MAP
            if kind is yaml.SequenceNode:
                return _SEQ
            if not implicit[0]:  # quoted
                return _STR
            if value in _BOOLS:
                return _BOOL
            if value in _NULLS:
                return _NULL
            if _SIMPLE_INT.match(value):
                return _INT
            if _SIMPLE_FLOAT.match(value):
                return _FLOAT
            if _MAYBE_TYPED.match(value):
                raise _Decline(f"plain scalar {value!r}")
            return _STR

    _FAST_LOADER.append(Yaml12Loader)
    return Yaml12Loader


_DECLINED = object()


def _fast_load(text: str) -> Any:
    """The data in ``text`` as plain dicts and lists, or ``_DECLINED``."""
    loader = _fast_loader()
    if loader is None:
        return _DECLINED
    import yaml

    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader with core tags only
    except (yaml.YAMLError, _Decline, RecursionError):
        return _DECLINED


def locate(root: Any, loc: tuple[Any, ...]) -> tuple[int, int]:
    """1-based (line, column) of the node a pydantic error ``loc`` points at."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

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
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFileError(shown, [f"{shown}: cannot read: {exc.strerror}"]) from None
    except UnicodeDecodeError as exc:
        raise DataFileError(shown, [f"{shown}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"]) from None
    fast = _fast_load(text)
    if fast is not _DECLINED and isinstance(fast, list if many else dict):
        try:
            if many:
                return [_validate(model, item, overrides) for item in fast]
            return _validate(model, fast, overrides)
        except ValidationError:
            pass  # parsed again below, for messages with line numbers
    return _load_careful(text, shown, model, many, overrides)


def _load_careful(text: str, shown: str, model: type[M], many: bool, overrides: dict[str, Any]) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.error import MarkedYAMLError

    try:
        data = _yaml().load(text)
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
