"""One entry per question: copier.yml's questions are written from the registry, and each
entry's ``when`` asks in Python what copier.yml's asks in Jinja."""

from __future__ import annotations

import itertools
import subprocess
import sys

import jinja2
import pytest

from lumi_scaffold.defaults import Answers
from lumi_scaffold.plugins import get_catalogue
from lumi_scaffold.questions import COPIER_YML_MARK, QUESTIONS, Question, When, _copier_entry, check, choices, copier_yml, default, unasked

from .helpers import REPO
from .test_questions import BASE


def test_copier_yml_is_written_from_the_registry():
    text = (REPO / "copier.yml").read_text()
    assert COPIER_YML_MARK in text
    assert copier_yml(text) == text, "copier.yml differs from lumi_scaffold.questions.QUESTIONS: run python3 scripts/copier-yml"


def test_an_entry_is_written_as_copier_reads_it():
    added = Question("new_question", "Asked once\nover two lines", when=When("prestage", True), kind="int", literal=3)
    assert "\n".join(_copier_entry(added)) == (
        "new_question:\n  type: str  # a whole number, asked as text: its check says so where `yes` is typed "
        "(Copier's int: a bare 'Invalid input')\n  help: |-\n    Asked once\n    over two lines\n"
        "  when: \"{{ prestage }}\"\n  default: 3")


def test_the_script_refuses_a_stale_copier_yml_with_check_and_rewrites_it_without(tmp_path):
    path = tmp_path / "copier.yml"
    current = (REPO / "copier.yml").read_text()
    path.write_text(current.replace("help: \"Machine-learning framework\"", "help: \"Edited by hand\""))
    script = [sys.executable, str(REPO / "scripts" / "copier-yml")]
    stale = subprocess.run([*script, "--check", str(path)], capture_output=True, text=True)
    assert stale.returncode == 1 and "differs from lumi_scaffold.questions.QUESTIONS" in stale.stderr
    assert subprocess.run([*script, str(path)], capture_output=True, text=True).returncode == 0
    assert path.read_text() == current
    assert subprocess.run([*script, "--check", str(path)], capture_output=True, text=True).returncode == 0


def test_the_entries_when_asks_what_copier_yml_s_when_asks():
    env = jinja2.Environment()
    samples = [dict(zip(("container", "prestage", "profiler"), values))
               for values in itertools.product(("custom", "recommended", "cotainr"), (True, False), ("none", "rocprofv3"))]
    conditional = [entry for entry in QUESTIONS.values() if entry.when]
    assert {q.name for q in conditional} == {"container_path", "dataset_archive", "profile_rank"}
    for entry in conditional:
        for sample in samples:
            asked = env.from_string(entry.when.jinja).render(**sample) == "True"
            assert entry.asked(Answers(sample, get_catalogue())) is asked, (entry.name, sample)


@pytest.mark.parametrize(("prestage", "asked"), [("true", True), ("yes", True), ("false", False), ("0", False), (True, True),
                                                 (False, False)])
def test_a_yes_no_answer_given_as_text_asks_as_copier_reads_it(prestage, asked):
    refusal = unasked({"prestage": prestage, "dataset_archive": "/data/x.tar"}, get_catalogue())
    assert (refusal == "") is asked, refusal
    if not asked:
        assert refusal.startswith("dataset_archive='/data/x.tar' applies only with prestage=true")


def test_a_question_not_asked_is_not_checked():
    cat = get_catalogue()
    assert check("container_path", "relative.sif", {**BASE, "container": "recommended"}, cat) == ""
    assert "/containers/demo.sif" in check("container_path", "relative.sif", {**BASE, "container": "custom"}, cat)


@pytest.mark.parametrize("ask", [choices, default])
def test_an_unknown_question_or_part_fails_loudly(ask):
    for name in ("no_such_question", "project_name"):
        with pytest.raises(KeyError, match=name):
            ask(name, BASE, get_catalogue())
