"""One entry per question: copier.yml's lumi_* calls and ``when:`` match the registry."""

from __future__ import annotations

import itertools
import re

import jinja2
import pytest

from lumi_scaffold.defaults import Answers
from lumi_scaffold.plugins import get_catalogue
from lumi_scaffold.questions import QUESTIONS, check, choices, default

from .test_questions import BASE, _copier_questions

# copier.yml field -> the lumi_* function it calls -> the registry entry's part.
_FIELDS = {"choices": "choices", "default": "default", "validator": "check"}
_CALL = re.compile(r"lumi_(choices|default|check)\('([a-z_]+)'\)")


def _called_parts() -> dict[str, set[str]]:
    """Per copier.yml question: the parts it asks the package for (lumi_choices, ...)."""
    out: dict[str, set[str]] = {}
    for name, q in _copier_questions().items():
        for field, part in _FIELDS.items():
            for kind, asked in _CALL.findall(str(q.get(field, ""))):
                assert (kind, asked) == (part, name), f"copier.yml {name}.{field} calls lumi_{kind}({asked!r})"
                out.setdefault(name, set()).add(part)
    return out


def test_every_question_that_calls_the_package_has_one_entry_with_exactly_those_parts():
    registered = {name: {part for part in _FIELDS.values() if getattr(q, part) is not None} for name, q in QUESTIONS.items()}
    assert registered == _called_parts()


def test_the_entries_when_is_copier_yml_s_when():
    questions = _copier_questions()
    env = jinja2.Environment()
    samples = [dict(zip(("container", "prestage", "profiler"), values))
               for values in itertools.product(("custom", "recommended", "cotainr"), (True, False), ("none", "rocprofv3"))]
    for name, entry in QUESTIONS.items():
        when = questions[name].get("when")
        if not isinstance(when, str):  # none, or a literal (plugin_data: never asked)
            assert entry.when is None, name
            continue
        assert entry.when is not None, f"copier.yml asks {name} only when {when}; its entry has no when"
        for sample in samples:
            asked = env.from_string(when).render(**sample) == "True"
            assert entry.asked(Answers(sample, get_catalogue())) is asked, (name, sample)


def test_a_question_not_asked_is_not_checked():
    cat = get_catalogue()
    assert check("container_path", "relative.sif", {**BASE, "container": "recommended"}, cat) == ""
    assert "/containers/demo.sif" in check("container_path", "relative.sif", {**BASE, "container": "custom"}, cat)


@pytest.mark.parametrize("ask", [choices, default])
def test_an_unknown_question_or_part_fails_loudly(ask):
    for name in ("no_such_question", "project_name"):
        with pytest.raises(KeyError, match=name):
            ask(name, BASE, get_catalogue())
