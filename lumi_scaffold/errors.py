"""Errors that lumi-scaffold reports to users as one clear message, and the record of a
plugin problem.

Every error raised on purpose derives from :class:`LumiScaffoldError`; the
``lumi-scaffold`` command prints its message after ``lumi-scaffold: error:`` and exits 1
(130 for :class:`Interrupted`, Ctrl-C), never with a traceback. :class:`PluginProblem` is
not an exception: plugin loading collects one per problem and carries on with the other
plugins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DataFileError",
    "Interrupted",
    "LumiScaffoldError",
    "PluginDataError",
    "PluginProblem",
    "PluginTemplateError",
    "SlurmUnreachable",
    "UsageError",
    "UserMessageError",
    "copier_message",
    "one_line",
]


class LumiScaffoldError(Exception):
    """Root of every error raised on purpose by lumi-scaffold."""

    exit_code = 1  # of the lumi-scaffold command

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UserMessageError(LumiScaffoldError):
    """An error whose text is shown to the user as it is (CLI exit code 1)."""


class UsageError(UserMessageError):
    """A command was given input it cannot use (an argument, a destination, an answer)."""


class Interrupted(UserMessageError):
    """The user pressed Ctrl-C; the message says what was left behind (exit code 130)."""

    exit_code = 130


class DataFileError(UserMessageError, ValueError):
    """A YAML data file (site, framework, containers) failed to load or validate.

    ``lines`` holds one ``file:line:col: field: message`` entry per problem, all of the
    file's problems at once.
    """

    def __init__(self, path: str, lines: list[str]) -> None:
        self.path = path
        self.lines = lines
        super().__init__("\n".join(lines))


class RefusedAnswer(UserMessageError, ValueError):
    """An answer given with --data (or -d) that its question refuses, worded as Copier words
    its own validation errors ("Validation error for question 'NAME': ...")."""


class PluginTemplateError(UserMessageError):
    """Jinja text a plugin supplied (a template file, a framework's example or smoke test)
    failed to render; the message names the plugin, the file and the line."""

    def __init__(self, plugin: str, file: str, line: int | None, reason: str, fix: str) -> None:
        self.plugin, self.file, self.line, self.reason = plugin, file, line, reason
        where = f"{file}, line {line}" if line else file
        super().__init__(f"plugin {plugin!r}: {where}: {reason}. Fix: {fix}")


class PluginDataError(UserMessageError, ValueError):
    """plugin_data (from --data or an answers file) failed validation: ``field`` names the
    first bad field (``plugin_data.site.cpu_masks.3``), ``value`` holds its value (None
    where it is missing); the message says both, the reason and the fix, on one line."""

    def __init__(self, message: str, field: str = "plugin_data", value: Any = None) -> None:
        self.field, self.value = field, value
        super().__init__(message)


class SlurmUnreachable(UserMessageError):
    """sbatch is installed but no Slurm controller answers (not a login node of a cluster);
    ``reason`` is what ``scontrol ping`` said. ``doctor`` reports it as a note."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class PluginProblem:
    """One thing one plugin did wrong: an import error, a bad hook, invalid data, a duplicate
    name. A record, not an exception: ``lumi-scaffold plugins`` lists them."""

    plugin: str
    message: str
    kind: str = "error"

    def __str__(self) -> str:
        return f"plugin {self.plugin!r}: {self.message}"


def copier_message(exc: BaseException) -> str:
    """Copier's validation and choice errors, as 'question: message'."""
    text = str(exc).strip()
    match = re.match(r"(?:Validation error for question|Invalid choice for) '([^']+)': (.*)", text, re.S)
    if match:
        return f"{match.group(1)}: {match.group(2)}"
    return text or type(exc).__name__


def one_line(text: str) -> str:
    """``text`` with its lines joined: Copier's and pydantic's messages span several."""
    return "; ".join(line.strip() for line in str(text).strip().splitlines() if line.strip()) or "unknown error"
