"""Errors that lumi-scaffold reports to users as one clear message."""

from __future__ import annotations

__all__ = [
    "AnswerError",
    "DataFileError",
    "LumiScaffoldError",
    "PluginProblem",
    "UserMessageError",
]


class LumiScaffoldError(Exception):
    """Root of every error raised on purpose by lumi-scaffold."""


class UserMessageError(LumiScaffoldError):
    """An error whose text is shown to the user as it is (CLI exit code 1)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AnswerError(UserMessageError, ValueError):
    """An answer to the questionnaire is invalid.

    The message names the question, the value and how to fix it.
    """

    def __init__(self, *, question: str, value: object, reason: str, fix: str = "") -> None:
        self.question = question
        self.value = value
        self.reason = reason
        self.fix = fix
        text = f"{question}={value!r}: {reason}"
        if fix:
            text += f" Fix: {fix}"
        super().__init__(text)


class DataFileError(UserMessageError, ValueError):
    """A YAML data file (site, framework, containers) failed to load or validate.

    ``lines`` holds one ``file:line:col: field: message`` entry per problem.
    """

    def __init__(self, path: str, lines: list[str]) -> None:
        self.path = path
        self.lines = lines
        super().__init__("\n".join(lines))


class PluginProblem(LumiScaffoldError):
    """Something one plugin did wrong: import error, bad hook, invalid data, duplicate."""

    def __init__(self, plugin: str, message: str, *, kind: str = "error") -> None:
        self.plugin = plugin
        self.kind = kind
        self.message = message
        super().__init__(f"plugin {plugin!r}: {message}")
