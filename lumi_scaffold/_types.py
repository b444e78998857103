"""Small validated types shared by the catalogue models, the recorded ``plugin_data`` and the
questionnaire: each check is written once, here, so that render accepts what plugin load
accepted and the other way round."""

from __future__ import annotations

import re
from typing import Annotated, Callable, Literal

from pydantic import AfterValidator

# The forms sbatch(1) lists for --time: minutes, minutes:seconds, hours:minutes:seconds,
# days-hours, days-hours:minutes, days-hours:minutes:seconds. ASCII digits only, the whole
# string (no spaces, no trailing newline): the value is written into #SBATCH --time= lines.
_SLURM_TIME = re.compile(r"(?:(?P<d>[0-9]+)-(?P<dh>[0-9]+)(?::(?P<dm>[0-9]+)(?::(?P<ds>[0-9]+))?)?"
                         r"|(?P<h>[0-9]+):(?P<hm>[0-9]+):(?P<hs>[0-9]+)"
                         r"|(?P<m>[0-9]+)(?::(?P<ms>[0-9]+))?)")
_SLUG = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
_IDENT = re.compile(r"^[a-z][a-z0-9]*(?:[-.][a-z0-9]+)*$")
# Characters a plugin-supplied shell word may contain. `${NAME}` references are
# allowed separately; anything else ($(...), quotes, ;, spaces, globs) is refused so
# that data from a plugin cannot inject shell into generated scripts.
_SHELL_WORD = re.compile(r"^(?:[A-Za-z0-9_,./:=+@%-]|\$\{[A-Za-z_][A-Za-z0-9_]*\})*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ONE_LINE = re.compile(r"^[^\n\r\x00-\x1f]*$")
VERSION = re.compile(r"^[A-Za-z0-9_.+*!-]+$")
PACKAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# A requirement as the questionnaire takes it (extra_requirements), as catalogue images and
# frameworks give it, and as requirements.txt gets it.
REQUIREMENT = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[A-Za-z0-9,._-]+\])?"
    r"(?:(?:[=<>!~]=?|===)[A-Za-z0-9.*+!-]+(?:,(?:[=<>!~]=?)[A-Za-z0-9.*+!-]+)*)?$"
)
_SLURM_OPTION = re.compile(r"^--[a-z][a-z-]*(?:=[A-Za-z0-9_.,:@%+-]+)?$")
_CPU_MASK = re.compile(r"^0x[0-9a-fA-F]+$")
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_PYTHON_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

# A node's GPU vendor, and the container runtime's flags that give a container the GPUs
# (lumi_scaffold.gpu_vendors says what each vendor needs).
GpuVendorName = Literal["amd", "nvidia"]
ContainerGpuFlag = Literal["", "--nv", "--nvccli", "--rocm"]


def slurm_time_seconds(value: str) -> int:
    """Seconds in a Slurm time, in any form sbatch(1) lists (``90`` is minutes, ``120:00:00``
    hours, ``2-12`` days and hours); ValueError when malformed (spaces, newlines and
    non-ASCII digits included)."""
    match = _SLURM_TIME.fullmatch(value) if isinstance(value, str) and value.isascii() else None
    if not match:
        raise ValueError(f"{value!r} is not a Slurm time; write minutes (90), HH:MM:SS (120:00:00) or D-HH:MM:SS "
                         "(1-12:00:00) with ASCII digits and no spaces")
    g = {k: int(v) if v else 0 for k, v in match.groupdict().items()}
    if g["dh"] > 23 or max(g["dm"], g["ds"], g["hm"], g["hs"], g["ms"]) > 59:
        raise ValueError(f"{value!r} is not a Slurm time: after the first number, hours must be below 24 and "
                         "minutes and seconds below 60")
    return (g["d"] * 24 + g["dh"]) * 3600 + g["dm"] * 60 + g["ds"] + g["h"] * 3600 + g["hm"] * 60 + g["hs"] + g["m"] * 60 + g["ms"]


def slurm_time_normal(value: str) -> str:
    """A Slurm time written back as ``HH:MM:SS``, or ``D-HH:MM:SS`` from one day on
    (``90``: ``01:30:00``; ``120:00:00``: ``5-00:00:00``); ValueError when malformed."""
    seconds = slurm_time_seconds(value)
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def _check_slurm_time(value: str) -> str:
    if slurm_time_seconds(value) <= 0:
        raise ValueError(f"{value!r} must be longer than zero")
    return value


def matching(pattern: re.Pattern[str], message: str) -> Callable[[str], str]:
    """A check that returns a value ``pattern`` matches, or raises ValueError with
    ``message`` (``{!r}`` stands for the value)."""
    def check(value: str) -> str:
        if not pattern.match(value):
            raise ValueError(message.format(value))
        return value
    return check


_check_slug = matching(_SLUG, "{!r} must be lowercase letters, digits and single dashes, starting with a letter")
_check_ident = matching(_IDENT, "{!r} must be lowercase letters, digits, single dashes or dots, starting with a letter")
_check_env_name = matching(_ENV_NAME, "{!r} is not a valid environment variable name")
check_package = matching(PACKAGE, "{!r} is not a package name")
check_version = matching(VERSION, "{!r} is not a version (letters, digits, _ . + * ! -)")
check_requirement = matching(REQUIREMENT, "{!r} is not a pip requirement like name or name==1.2")
# One long Slurm option, --name or --name=value, safe to write unquoted.
check_slurm_option = matching(_SLURM_OPTION, "{!r} must be one long option like --network=disable_rdzv_get (letters, "
                              "digits, _ . , : @ % + - after the =; it is written into job scripts)")
_check_python_name = matching(_PYTHON_NAME, "{!r} is not a Python package name (lowercase letters, digits, _)")
_check_plain_name = matching(_PLAIN_NAME, "{!r} must be a plain name: letters, digits, _ . -, starting with a letter or digit")


check_shell_word = matching(_SHELL_WORD, "{!r} may only contain letters, digits, _,./:=+@%- and ${{NAME}} references "
                            "(no spaces, quotes, $(...), ; or globs)")


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


# A path a user gives as an answer (their image, their dataset archive): letters of any
# script, digits, spaces and _,./:=+@%-, and ${NAME} references. Every file it reaches
# quotes it (values.sh in single quotes, the library's expansions in double quotes, the
# README in backticks), so only these are refused: quotes, $ outside ${NAME}, $(...), `,
# ;, &, |, <, >, globs, backslashes, ~ and control characters.
_ANSWER_PATH = re.compile(r"^(?:[^\W]|[ ,./:=+@%-]|\$\{[A-Za-z_][A-Za-z0-9_]*\})*$")


def check_answer_path(value: str) -> str:
    """:func:`check_abs_path` for a path a user answers, or one recorded from such an answer
    (plugin_data's container path): spaces and non-ASCII letters are allowed too."""
    if not isinstance(value, str):
        raise ValueError(f"{value!r} must be a path (a string)")
    value = brace_variable(value)
    if not _ANSWER_PATH.match(value):
        raise ValueError(f"{value!r} may only contain letters, digits, spaces, _,./:=+@%- and ${{NAME}} references "
                         "(no quotes, $(...), ; or globs)")
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


def check_one_line(value: str) -> str:
    if not _ONE_LINE.match(value):
        raise ValueError("must be a single line of text (it is written into shell comments)")
    return value


def check_cpu_mask(value: str) -> str:
    """A --cpu-bind=mask_cpu mask: hex, and not empty (0x0 would bind a rank to no core)."""
    if not _CPU_MASK.match(value) or int(value, 16) == 0:
        raise ValueError(f"mask {value!r} must be a non-zero hex number like 0x00fe000000000000")
    return value


def check_plain_name_or_empty(value: str) -> str:
    """A plain word written unquoted (partition, QOS, GRES type), or empty for none."""
    return _check_plain_name(value) if value else value


def check_plain_word(value: str) -> str:
    """A word written unquoted into scripts: a shell word with no ``${NAME}`` references."""
    check_shell_word(value)
    if "$" in value or not value:
        raise ValueError(f"{value!r} is written unquoted into scripts: give a plain word with no ${{NAME}} references")
    return value


def check_name_word(value: str) -> str:
    """A name written unquoted after a command (``module load``, ``cotainr build``): a plain
    word that starts with a letter or digit. Lmod's ``name/version`` (``rocm/6.2.4``) is one."""
    check_plain_word(value)
    if not value[:1].isalnum():
        raise ValueError(f"{value!r} is a name written unquoted after a command (module load, cotainr build): "
                         "it must start with a letter or digit, not look like an option")
    return value


def _name_word_or_empty(value: str) -> str:
    return check_name_word(value) if value else value


def _abs_path_or_empty(value: str) -> str:
    return check_abs_path(value) if value else value


SlurmTime = Annotated[str, AfterValidator(_check_slurm_time)]
Slug = Annotated[str, AfterValidator(_check_slug)]
Ident = Annotated[str, AfterValidator(_check_ident)]
ShellWord = Annotated[str, AfterValidator(check_shell_word)]
AbsPath = Annotated[str, AfterValidator(check_abs_path)]
EnvName = Annotated[str, AfterValidator(_check_env_name)]
AbsPathOrEmpty = Annotated[str, AfterValidator(_abs_path_or_empty)]
OneLine = Annotated[str, AfterValidator(check_one_line)]
Package = Annotated[str, AfterValidator(check_package)]
Version = Annotated[str, AfterValidator(check_version)]
Requirement = Annotated[str, AfterValidator(check_requirement)]
SlurmOption = Annotated[str, AfterValidator(check_slurm_option)]
CpuMask = Annotated[str, AfterValidator(check_cpu_mask)]
PlainNameOrEmpty = Annotated[str, AfterValidator(check_plain_name_or_empty)]
PythonName = Annotated[str, AfterValidator(_check_python_name)]
NameWord = Annotated[str, AfterValidator(check_name_word)]
NameWordOrEmpty = Annotated[str, AfterValidator(_name_word_or_empty)]
# A Slurm partition or QOS name as a site gives it (Slurm allows dots, digits first,
# capitals and _ there): the same type at plugin load and in plugin_data.
SlurmName = Annotated[str, AfterValidator(_check_plain_name)]
# A partition's name in answers: Slurm's own spelling (boost_usr_prod), so that users type the
# name the site's documentation uses.
PartitionName = SlurmName


# The Slurm options lumi-scaffold writes itself: jobs.Shape.options() from the answers, and
# the job templates' --output and --signal. A site, partition or image may not give them
# again (models.base's ExtraOption); any other option is theirs (jobs.Shape.extra). Here, in
# the bottom layer, so that the models need nothing of jobs.py.
OWN_OPTIONS = ("job-name", "account", "partition", "time", "nodes", "ntasks-per-node", "gpus-per-node", "gres",
               "cpus-per-task", "mem", "mem-per-gpu", "exclusive", "qos", "output", "signal")
