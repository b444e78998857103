"""The answers given on the command line (``--data NAME=VALUE``, ``--data-file``): read, and
checked against the template's questions before Copier casts them."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from .answer_forms import NO, YES, whole_number_problem
from .answers import load_yaml
from .errors import UsageError

__all__ = ["bundled_questions", "check_data", "check_site", "check_unasked", "parse_data", "question_types",
           "whole_number_problem"]


def parse_data(pairs: list[str], data_file: str | None) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if data_file:
        loaded = load_yaml(Path(data_file), "--data-file")
        if not isinstance(loaded, dict):
            raise UsageError(f"--data-file {data_file}: expected a mapping of question: answer, "
                             f"found {type(loaded).__name__}. Fix: write `question: answer` lines")
        data.update(loaded)
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--data {pair!r}: write NAME=VALUE, e.g. --data nodes=2")
        data[name] = value
    # Answers are taken trimmed (lumi_scaffold.questions.normalise), and recorded so; not
    # project_name, which the templates write as given (its check names the spaces).
    return {name: value.strip() if isinstance(value, str) and name != "project_name" else value for name, value in data.items()}


def bundled_questions() -> dict[str, str]:
    """Question name -> answer type of the template bundled in this package (a git repository,
    not a directory to read): its copier.yml is written from the question registry."""
    from .questions import QUESTIONS

    return {name: q.kind for name, q in QUESTIONS.items()}


def question_types(template: str) -> dict[str, str] | None:
    """Question name -> type from ``template``'s copier.yml (this package's questions for
    its bundled template); None for another template that is not a local directory (a git
    URL: Copier checks what it can)."""
    from .bundle import is_bundled

    if is_bundled(template):
        return bundled_questions()
    path = Path(template).expanduser() / "copier.yml"
    try:
        if not path.is_file():
            return None
        config = load_yaml(path, "template")
    except (OSError, UsageError):
        return None
    if not isinstance(config, dict):
        return None
    types = {str(k): str(v.get("type", "str")) if isinstance(v, dict) else "str"
             for k, v in config.items() if not str(k).startswith("_")}
    # This package's copier.yml asks its whole numbers as text, so that their check answers `yes`.
    from .questions import INT_QUESTIONS

    return {k: "int" if k in INT_QUESTIONS else v for k, v in types.items()}


def check_data(data: dict[str, Any], types: dict[str, str] | None) -> None:
    """Refuse unknown questions and values of the wrong type, before Copier casts them
    (it truncates 2.5 nodes to 2 and takes any word for a yes). Where the template's questions
    are not known (``types`` None), the whole numbers and yes/no answers of this package's."""
    known = types if types is not None else {n: k for n, k in bundled_questions().items() if k in ("int", "bool")}
    for name, value in data.items():
        if types is not None and name not in types:
            close = difflib.get_close_matches(str(name), types, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise UsageError(f"{name}={value!r}: there is no question {name!r}. Fix: {hint}the questions are {', '.join(types)}")
        kind = known.get(name, "")
        if kind == "int" and (problem := whole_number_problem(name, value)):
            raise UsageError(f"{name}={value!r}: {problem}")
        if kind == "bool" and not (type(value) is bool or isinstance(value, str) and value.lower() in YES | NO):
            raise UsageError(f"{name}={value!r}: not a yes/no answer. Fix: --data {name}=true or --data {name}=false")
        if kind == "json" and isinstance(value, str):
            try:
                json.loads(value)
            except ValueError as exc:
                raise UsageError(f"{name}={value!r}: not JSON ({exc}). Fix: leave {name} out; it is computed") from None
        if kind == "str" and not isinstance(value, str):
            raise UsageError(f"{name}={value!r}: expected text, got a {type(value).__name__}. "
                             f"Fix: quote it in the data file, e.g. {name}: \"{value}\"")


def check_site(data: dict[str, Any]) -> None:
    """The site answer first, with its own message (Copier's would be 'Invalid choice')."""
    if "site" not in data:
        return
    from .plugins import get_catalogue
    from .questions import check

    message = check("site", data["site"], data, get_catalogue())
    if message:
        raise UsageError(f"site={data['site']!r}: {message}")


def check_unasked(data: dict[str, Any]) -> None:
    """An answer for a question these answers do not ask (profile_rank without a profiler)
    is refused (lumi_scaffold.questions.unasked), before Copier drops it silently."""
    from .plugins import get_catalogue
    from .questions import unasked

    if message := unasked(data, get_catalogue()):
        raise UsageError(message)
