"""scripts/values.sh, read from Python: the helpers in scripts/ take the project's values
from the same file as the jobs' bash library (standard library only).

    from project_values import read
    values = read()              # {'image': '/appl/...sif', 'modules': ['load x', ...], ...}
    values['output_root']        # ${NAME} in a value expanded from the environment
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

HERE = Path(__file__).resolve().parent
_LINE = re.compile(r"^([a-z_][a-z0-9_]*)=(.*)$")
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand(value: str, env: dict[str, str] | None = None) -> str:
    """``value`` with each ``${NAME}`` replaced by that variable (empty when unset), as
    ``expand`` in scripts/job-env.sh does; nothing else in it is interpreted."""
    env = os.environ if env is None else env
    return _REF.sub(lambda m: env.get(m.group(1), ""), value)


def read(path: Path | str | None = None, env: dict[str, str] | None = None) -> dict[str, str | list[str]]:
    """Every ``name=value`` of values.sh: a string, or a list for ``name=(...)``."""
    values: dict[str, str | list[str]] = {}
    for line in Path(path or HERE / "values.sh").read_text().splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        name, text = m.groups()
        if text.startswith("(") and text.endswith(")"):
            values[name] = [expand(w, env) for w in shlex.split(text[1:-1])]
        else:
            words = shlex.split(text)
            values[name] = expand(words[0], env) if words else ""
    return values
