"""Small validated types shared by the catalogue models and the questionnaire."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

# ASCII digits only, the whole string (no spaces, no trailing newline): the value is
# written verbatim into #SBATCH --time= lines.
_SLURM_TIME = re.compile(r"(?:([0-9]+)-)?([0-9]{1,2}):([0-9]{2}):([0-9]{2})")
_SLUG = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
_IDENT = re.compile(r"^[a-z][a-z0-9]*(?:[-.][a-z0-9]+)*$")
# Characters a plugin-supplied shell word may contain. `${NAME}` references are
# allowed separately; anything else ($(...), quotes, ;, spaces, globs) is refused so
# that data from a plugin cannot inject shell into generated scripts.
_SHELL_WORD = re.compile(r"^(?:[A-Za-z0-9_,./:=+@%-]|\$\{[A-Za-z_][A-Za-z0-9_]*\})*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def slurm_time_seconds(value: str) -> int:
    """Seconds in a Slurm time ``[D-]HH:MM:SS``; ValueError when malformed (spaces,
    newlines and non-ASCII digits included)."""
    match = _SLURM_TIME.fullmatch(value) if isinstance(value, str) else None
    if not match:
        raise ValueError(f"{value!r} is not a Slurm time; write D-HH:MM:SS or HH:MM:SS with ASCII digits "
                         "and no spaces, e.g. 1-12:00:00")
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    if minutes > 59 or seconds > 59 or (days and hours > 23):
        raise ValueError(f"{value!r} is not a Slurm time: minutes and seconds must be below 60")
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _check_slurm_time(value: str) -> str:
    if slurm_time_seconds(value) <= 0:
        raise ValueError(f"{value!r} must be longer than zero")
    return value


def _check_slug(value: str) -> str:
    if not _SLUG.match(value):
        raise ValueError(f"{value!r} must be lowercase letters, digits and single dashes, starting with a letter")
    return value


def _check_ident(value: str) -> str:
    if not _IDENT.match(value):
        raise ValueError(f"{value!r} must be lowercase letters, digits, single dashes or dots, starting with a letter")
    return value


def check_shell_word(value: str) -> str:
    if not _SHELL_WORD.match(value):
        raise ValueError(
            f"{value!r} may only contain letters, digits, _,./:=+@%- and ${{NAME}} references "
            "(no spaces, quotes, $(...), ; or globs)"
        )
    return value


# A path that starts with an environment variable: $NAME/... or ${NAME}/... (Pawsey keeps
# images under $MYSOFTWARE). Group 1 or 2 is the name, group 3 the rest.
_VAR_PREFIX = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))(/.*)?$")


def check_abs_path(value: str) -> str:
    """The one check of a path from a plugin or an answer, at plugin load and at render alike:
    an absolute path, or one that starts with an environment variable (``$NAME/...`` or
    ``${NAME}/...``, written back as ``${NAME}/...``); the rest a shell word (letters,
    digits, _,./:=+@%- and ``${NAME}`` references), so that inside double quotes only the
    variables expand. Returns the path with its leading variable in braces."""
    if not isinstance(value, str):
        raise ValueError(f"{value!r} must be a path (a string)")
    given, value = value, brace_variable(value)
    if not _SHELL_WORD.match(value):
        check_shell_word(given)
        check_shell_word(value)
    if not value.startswith(("/", "${")):
        raise ValueError(f"{value!r} must be an absolute path, or start with an environment variable "
                         "($NAME/... or ${NAME}/...)")
    return value


def brace_variable(value: str) -> str:
    """``$NAME/rest`` written as ``${NAME}/rest``; any other value unchanged."""
    match = _VAR_PREFIX.match(value)
    return "${" + (match.group(1) or match.group(2)) + "}" + (match.group(3) or "") if match else value


def path_variable(value: str) -> str:
    """The environment variable a path starts with ('' for an absolute path)."""
    match = _VAR_PREFIX.match(value)
    return (match.group(1) or match.group(2)) if match else ""


def _check_env_name(value: str) -> str:
    if not _ENV_NAME.match(value):
        raise ValueError(f"{value!r} is not a valid environment variable name")
    return value


SlurmTime = Annotated[str, AfterValidator(_check_slurm_time)]
Slug = Annotated[str, AfterValidator(_check_slug)]
Ident = Annotated[str, AfterValidator(_check_ident)]
ShellWord = Annotated[str, AfterValidator(check_shell_word)]
AbsPath = Annotated[str, AfterValidator(check_abs_path)]
EnvName = Annotated[str, AfterValidator(_check_env_name)]

