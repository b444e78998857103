# OWNED BY THE TEMPLATE: `lumi-scaffold update` rewrites this file (`lumi-scaffold doctor` names a change).
"""scripts/values.sh, read from Python (standard library and Python 3.6's grammar:
scripts/sweep.py runs with the login node's own python3): read() gives each name=value, a
string or, for name=(...), a list, with ${NAME} expanded from the environment.
"""

import os
import re
import shlex
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Union

HERE = Path(__file__).resolve().parent
_LINE = re.compile(r"^([a-z_][a-z0-9_]*)=(.*)$")
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand(value: str, env: Optional[Mapping[str, str]] = None) -> str:
    """``value`` with each ``${NAME}`` replaced by that variable (empty when unset), as job.sh's
    ``expand`` does; nothing else in it is interpreted."""
    env = os.environ if env is None else env
    return _REF.sub(lambda m: env.get(m.group(1), ""), value)


def unset(value: str, env: Optional[Mapping[str, str]] = None) -> List[str]:
    """The variables ``${NAME}`` in ``value`` names that are unset or empty."""
    env = os.environ if env is None else env
    return [name for name in _REF.findall(value) if not env.get(name)]


def read(path: Union[Path, str, None] = None, env: Optional[Mapping[str, str]] = None,
         raw: bool = False) -> Dict[str, Union[str, List[str]]]:
    """Every ``name=value`` of values.sh; ``raw``: each ``${NAME}`` left as written (to expand later)."""
    def value(word: str) -> str:
        return word if raw else expand(word, env)

    values = {}  # type: Dict[str, Union[str, List[str]]]
    for line in Path(path or HERE.parent / "values.sh").read_text().splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        name, text = m.groups()
        if text.startswith("(") and text.endswith(")"):
            values[name] = [value(w) for w in shlex.split(text[1:-1])]
        else:
            words = shlex.split(text)
            values[name] = value(words[0]) if words else ""
    return values
