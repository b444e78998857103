"""The answers of a generated project (``.copier-answers.yml``), read by one function for
every command (new, update, lint, doctor, explain, and the testing helpers).

A YAML problem is one line naming the file, the line and the fix, never a traceback. The
file is read by ruamel (YAML 1.2, safe), the one YAML parser of the package, which words the
errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import UsageError, one_line

if TYPE_CHECKING:
    from .plugin_data import PluginData

__all__ = ["ANSWERS_FILE", "load_yaml", "read_answers", "recorded_plugin_data"]

ANSWERS_FILE = ".copier-answers.yml"

_YAML_FIX = "plain `question: answer` lines, each question once, no !tags"


def load_yaml(path: Path, what: str, fix: str = _YAML_FIX) -> Any:
    """A YAML file (safe: no tags), or one line naming the file, the line and the problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"{what} {path}: cannot read it: {reason}") from None
    return _careful_load(text, f"{what} {path}", fix)


def _careful_load(text: str, shown: str, fix: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        return YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        where, problem = "", str(exc)
        if isinstance(exc, MarkedYAMLError):
            mark = exc.problem_mark or exc.context_mark
            where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
            problem = " ".join(p for p in (exc.context, exc.problem) if p) or problem
        raise UsageError(f"{shown}{where}: not valid YAML: {one_line(problem)}. Fix: {fix}") from None


def read_answers(project: Path, *, missing_ok: bool = False) -> dict[str, Any]:
    """The answers recorded in ``project``: a mapping of question: answer (with Copier's
    ``_src_path`` and ``_commit``). A missing file gives ``{}`` with ``missing_ok``, else
    :class:`UsageError`, as does a file that is not YAML or not a mapping."""
    path = project / ANSWERS_FILE
    if not path.is_file():
        if missing_ok:
            return {}
        raise UsageError(f"{project} has no {ANSWERS_FILE}: not a project made by lumi-scaffold, or the file was "
                         "removed. Fix: give the directory of a generated project (or restore the file from git)")
    answers = load_yaml(path, "answers file", fix=f"undo your edit (git checkout -- {ANSWERS_FILE})")
    if not isinstance(answers, dict):
        raise UsageError(f"answers file {path}: expected a mapping of question: answer. Fix: restore it from git")
    return answers


def recorded_plugin_data(project: Path, answers: dict[str, Any]) -> PluginData:
    """The ``plugin_data`` that ``answers`` (read from ``project``) record, as the validated
    model: the one place where doctor, explain and the update notices turn the recorded dict
    into :class:`~lumi_scaffold.plugin_data.PluginData`. Older projects' data validates
    (schema 1's missing fields have defaults; the model reads schema 2's shapes from its
    options). Data that does not is :class:`~lumi_scaffold.errors.PluginDataError`, one line
    naming the field, its value and the fix; none recorded is :class:`UsageError`."""
    from .plugin_data import validate_plugin_data

    path = project / ANSWERS_FILE
    if "plugin_data" not in answers:
        raise UsageError(f"{path} has no plugin_data: not a project made by lumi-scaffold")
    return validate_plugin_data(answers["plugin_data"], f"{path}: plugin_data")
