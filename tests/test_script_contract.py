"""The training-script contract (docs/jobs.md, "The training-script contract") is enforced:
conformance runs a framework's example, and an example that ignores --steps, does not
resume or ignores --lr fails with one line naming the clause; our examples keep it.

The broken examples are written here: a stand-in training loop on the standard library (no
framework to import: they cost a fraction of a second), with the project's own runlog.py
and heartbeat.py, each breaking one clause.
"""

from __future__ import annotations

import shutil
import textwrap
import types
import warnings

import pytest

from lumi_scaffold import hookimpl
from lumi_scaffold.plugins import get_catalogue
from lumi_scaffold.script_contract import LR, MORE, STEPS, run_example
from lumi_scaffold.testing import check_example, isolated_catalogue, project_values

from .helpers import REPO, render

# A training loop that keeps the contract; each broken example changes one line of it.
KEEPS = textwrap.dedent('''\
    import argparse, glob, json, os

    import runlog
    from heartbeat import Heartbeat

    checkpoints = os.environ["CHECKPOINT_DIR"]
    os.makedirs(checkpoints, exist_ok=True)
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    lr = args.lr
    saved = sorted(glob.glob(os.path.join(checkpoints, "step-*.json")))
    step = json.load(open(saved[-1]))["step"] if saved else 0
    last = args.steps
    heartbeat = Heartbeat()
    log = runlog.RunLog(rank=0, world=1, output=os.environ["RUN_DIR"], start_step=step, last_step=last,
                        samples_per_step=1, config=vars(args))
    while step < last:
        step += 1
        heartbeat.beat(step)
        log.step(step, data_wait=0.0, metrics=lambda: {"loss": 1.0 / step, "lr": lr})
    json.dump({"step": step}, open(os.path.join(checkpoints, f"step-{step:08d}.json"), "w"))
    log.finish(finished=True)
''')

BROKEN = {
    "--steps": ("last = args.steps", "last = args.steps + 2"),
    "resume": ("step = json.load(open(saved[-1]))[\"step\"] if saved else 0", "step = 0"),
    "--lr": ("lr = args.lr", "lr = 0.1"),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory, template):
    return render(template, tmp_path_factory.mktemp("contract") / "p")


def _run(project, tmp_path, text):
    """run_example on a copy of ``project`` whose train.py is ``text``."""
    copy = shutil.copytree(project, tmp_path / "p", symlinks=True)
    (copy / "src/demo/train.py").write_text(text)
    return run_example(copy, project_values(copy))


def test_a_script_that_keeps_the_contract_passes(project, tmp_path):
    assert _run(project, tmp_path, KEEPS) == []


@pytest.mark.parametrize("clause", sorted(BROKEN))
def test_a_broken_example_fails_with_the_clause_it_breaks(project, tmp_path, clause):
    old, new = BROKEN[clause]
    assert old in KEEPS
    problems = _run(project, tmp_path, KEEPS.replace(old, new))
    assert len(problems) == 1, problems
    [line] = problems
    assert line.startswith(f"{clause}: ") and "\n" not in line, line
    assert 'docs/jobs.md, "The training-script contract"' in line
    expected = {
        "--steps": f"trained steps 1..{STEPS + 2} by its job report, not 1..{STEPS}",
        "resume": f"trained steps 1..{MORE} by its job report, not {STEPS + 1}..{MORE}",
        "--lr": f"trained with lr 0.1 by its job report, not {LR}",
    }[clause]
    assert expected in line, line


def test_a_script_that_does_not_beat_or_report_is_named(project, tmp_path):
    assert "    heartbeat.beat(step)\n" in KEEPS and "log.finish(finished=True)" in KEEPS
    no_beat = KEEPS.replace("    heartbeat.beat(step)\n", "")
    assert _run(project, tmp_path / "a", no_beat) == [
        f"heartbeat: train.py --steps {STEPS} --lr {LR} never beat, not at its last step {STEPS}: call "
        "heartbeat.Heartbeat().beat(step) after every step (the contract: docs/jobs.md, \"The training-script contract\")"]
    [line] = _run(project, tmp_path / "b", KEEPS.replace("log.finish(finished=True)", "pass"))
    assert line.startswith(f"train.py --steps {STEPS} --lr {LR}: wrote no job report"), line


def _framework_plugin(example: str):
    @hookimpl
    def register_frameworks(register):
        base = get_catalogue().frameworks["pytorch"]
        register(base.model_copy(update={"name": "broken", "title": "Broken (test)", "example": example,
                                                 "runs_on": "pytorch"}))

    return "lumi-framework-broken", types.SimpleNamespace(register_frameworks=register_frameworks)


def test_conformance_fails_a_plugin_whose_example_ignores_steps(template, monkeypatch):
    """Through check_conformance, as a plugin's own tests call it (its matrix of LUMI
    projects is left out here: only the example runs)."""
    from lumi_scaffold import testing

    monkeypatch.setattr(testing, "plugin_matrix", lambda cat, name: [])
    old, new = BROKEN["--steps"]
    with isolated_catalogue(_framework_plugin(KEEPS.replace(old, new)), builtins=["lumi", "pytorch", "profilers"]) as cat:
        problems = testing.check_conformance(cat, "lumi-framework-broken", template=template)
        assert testing.check_conformance(cat, "lumi-framework-broken", template=template, run_examples=False) == []
    assert [p.split(": ")[:2] for p in problems] == [["framework 'broken'", "example"]], problems
    assert problems[0].startswith("framework 'broken': example: --steps: train.py --steps 3"), problems


@pytest.mark.parametrize("framework", ["pytorch", "jax"])
def test_our_examples_keep_the_contract(template, framework):
    assert check_example(get_catalogue(), framework, template=template) == []


# The DeepSpeed example keeps it too: the plugin's own conformance test runs it
# (plugins/lumi-framework-deepspeed/tests: test_every_project_renders_and_lints_clean).


def test_without_the_framework_installed_the_example_is_not_run_and_a_warning_says_so(template):
    @hookimpl
    def register_frameworks(register):
        base = get_catalogue().frameworks["pytorch"]
        register(base.model_copy(update={"name": "needy", "title": "Needy (test)", "runs_on": "pytorch",
                                         "requirements": ["no-such-package-anywhere>=1"]}))

    with isolated_catalogue(("lumi-framework-needy", types.SimpleNamespace(register_frameworks=register_frameworks)),
                            builtins=["lumi", "pytorch", "profilers"]) as cat:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert check_example(cat, "needy", template=template) == []
    assert [str(w.message) for w in caught] == [
        "needy's example not run (the training-script contract is not checked): "
        "no-such-package-anywhere not installed in this Python"]


def test_the_contract_is_one_section_that_the_other_pages_link_to():
    jobs = (REPO / "docs" / "jobs.md").read_text()
    section = jobs[jobs.index("## The training-script contract"):jobs.index("## How this is tested")]
    for clause in ("**`--steps N`**", "**Resume**", "**`--lr X`**", "**Heartbeats**", "**The job report**",
                   "`LUMI_SCAFFOLD_COLLECTIVE_TIMEOUT`", "`RUN_DIR`", "SLURMEnvironment(auto_requeue=False)"):
        assert clause in section, clause
    for page in ("docs/hooks.md", "docs/plugins/index.md", "docs/plugins/testing.md", "docs/plugins/upgrading.md"):
        text = (REPO / page).read_text()
        assert "jobs.md#the-training-script-contract" in text and "example-script-contract" not in text, page


# The new-plugin example keeps it too: its package's own tests run check_conformance, which
# runs it (the slow tests/test_plugin_packages.py::test_new_plugin_package_installs_and_passes_its_tests).
