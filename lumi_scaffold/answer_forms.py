"""How an answer typed as text reads as a whole number or a yes, shared by ``-d``
(:mod:`lumi_scaffold.cli_data`) and the questionnaire (:mod:`lumi_scaffold.questions`, whose
registry says which questions take which); imports nothing, as the command's start-up needs."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["NO", "WHOLE", "YES", "whole_number_problem"]

WHOLE = re.compile(r"-?[0-9]+")
# The yes and no answers -d takes (each reads as Copier casts it: copier/_tools.py cast_to_bool).
YES = frozenset({"true", "yes", "y", "on", "1"})
NO = frozenset({"false", "no", "n", "off", "0"})


def whole_number_problem(name: str, value: Any) -> str:
    """Why ``value`` is no answer to a whole-number question ('' when it is one): the reason
    ``-d`` and the questionnaire give alike (copier.yml asks these as text, so that `yes`
    reaches this check instead of Copier's bare 'Invalid input'; the templates get an int,
    lumi_scaffold.questions.normalise)."""
    if type(value) is int or isinstance(value, str) and WHOLE.fullmatch(value.strip()):
        return ""
    return f"not a whole number. Fix: give one, e.g. {name}={1 if name != 'profile_rank' else 0}"
