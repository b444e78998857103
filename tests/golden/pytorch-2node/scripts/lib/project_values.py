"""scripts/values.sh, read from Python: the helpers in scripts/ take the project's values
from the same file as the jobs' bash library (standard library only, and Python 3.6's
grammar: scripts/sweep.py runs with the login node's own python3).

    from project_values import read
    values = read()              # {'image': '/path/to/image.sif', 'modules': ['load x', ...], ...}
    values['output_root']        # ${NAME} in a value expanded from the environment
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
    """``value`` with each ``${NAME}`` replaced by that variable (empty when unset), as
    ``expand`` in scripts/lib/job.sh does; nothing else in it is interpreted."""
    env = os.environ if env is None else env
    return _REF.sub(lambda m: env.get(m.group(1), ""), value)


def unset(value: str, env: Optional[Mapping[str, str]] = None) -> List[str]:
    """The variables ``${NAME}`` in ``value`` names that are unset or empty (``expand``
    would leave nothing for them)."""
    env = os.environ if env is None else env
    return [name for name in _REF.findall(value) if not env.get(name)]


def read(path: Union[Path, str, None] = None, env: Optional[Mapping[str, str]] = None,
         raw: bool = False) -> Dict[str, Union[str, List[str]]]:
    """Every ``name=value`` of values.sh: a string, or a list for ``name=(...)``;
    ``raw``: with each ``${NAME}`` as it is written (to expand later)."""
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
