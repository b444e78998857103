"""The job model (lumi_scaffold.jobs): each decision is made once, and everything that
shows a job (the sbatch files, the README, explain, lint, the costs) follows it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from lumi_scaffold import jobs
from lumi_scaffold.explain import explain_project, format_report
from lumi_scaffold.jobs import JOB_KINDS, Memory, Shape, parse_options
from lumi_scaffold.lint import check_headers, lint_project
from lumi_scaffold.plugin_data import PluginData, validate_plugin_data
from lumi_scaffold.plugins import get_catalogue

from .helpers import REPO, render, values
from .test_render import CANONICAL

FIXTURES = Path(__file__).parent / "fixtures" / "answers-0.3.0"


def header(project: Path, name: str) -> list[str]:
    return [line.split(None, 1)[1] for line in (project / "jobs" / name).read_text().splitlines()
            if line.startswith("#SBATCH ")]


def test_the_memory_rule_is_decided_once_and_everything_follows(tmp_path, monkeypatch):
    """Change the rule in the job model alone (a job on part of a node asks for the whole
    node's memory): the job files, the README, explain's memory and cost, and lint follow."""
    answers = dict(gpus_per_node=1, partition="small-g", walltime="01:00:00", prestage=True, data_location="flash",
                   dataset_archive="/flash/project_465000000/data/d.tar", profiler="rocprofv3")
    before = render(REPO, tmp_path / "before", **answers)
    assert "--mem-per-gpu=60G" in header(before, "train.sbatch")

    def whole_node_memory(site, node, gpus):
        return Memory(form="per-node", gb=node.mem_per_node_gb)

    monkeypatch.setattr(jobs, "memory_rule", whole_node_memory)
    after = render(REPO, tmp_path / "after", **answers)
    for name in ("train.sbatch", "profile.sbatch", "smoke-test.sbatch"):
        opts = header(after, name)
        assert "--mem=480G" in opts and not any(o.startswith("--mem-per-gpu") for o in opts), (name, opts)
    assert "# Part of a node: 480G per node." in (after / "jobs/train.sbatch").read_text()
    readme = (after / "README.md").read_text()
    assert "**Part of a node**: `--mem=480G`" in readme
    # LUMI's small-g bills memory in 64 GB slices [UG-bill]: 480 GB hold 8 slices, 4 GPU-hours per hour.
    report = explain_project(after)
    train = next(j for j in report["jobs"] if j["kind"] == "train")
    assert (train["memory"], train["billed_per_hour"]) == ("--mem=480G", 4.0)
    assert "| Cost | 4 GPU-hours per training job" in readme
    assert "memory --mem=480G" in format_report(report)
    # Before the change the same job is half a GPU-hour.
    old = next(j for j in explain_project(before)["jobs"] if j["kind"] == "train")
    assert (old["memory"], old["billed_per_hour"]) == ("--mem-per-gpu=60G", 0.5)
    # lint reads the headers with the model's own Memory: what the rule writes passes, more than a node has does not.
    cat = get_catalogue()
    assert lint_project(after, cat) == []
    train_file = after / "jobs/train.sbatch"
    train_file.write_text(train_file.read_text().replace("--mem=480G", "--mem=999G"))
    assert check_headers(after, "lumi", cat) == ["train.sbatch: 999 GB of memory per node exceed the 480 GB a small-g node has (the catalogue installed now)."]


def test_every_kind_with_a_shape_renders_its_options_in_one_function(tmp_path):
    project = render(REPO, tmp_path / "p", nodes=2, profiler="rocprofv3")
    data = validate_plugin_data(yaml.safe_load((project / ".copier-answers.yml").read_text())["plugin_data"])
    assert set(data.job.shapes) == {name for name, kind in JOB_KINDS.items() if kind.shape}
    for kind, shape in data.job.shapes.items():
        assert data.job.slurm[kind] == shape.options()
        assert header(project, Path(JOB_KINDS[kind].file).name)[:len(shape.options())] == shape.options()
    # The interactive allocation runs with train's shape.
    interactive = (project / JOB_KINDS["interactive"].file).read_text()
    assert all(f"    {opt}\n" in interactive for opt in data.job.slurm["train"])
    train = data.job.shapes["train"]
    assert (train.seconds, train.ranks, train.memory.per_node_gb(8), train.whole_node) == (3600, 16, 480, True)


def test_a_parsed_header_gives_back_its_shape():
    shape = Shape(name="demo-train", account="project_465000000", partition="standard-g", time="2-00:00:00", nodes=4,
                  tasks_per_node=1, ranks_per_task=8, gpus_per_node=8, gpu_request="gres", gpu_type="mi250",
                  cpus_per_task=56, memory=Memory(form="per-node", gb=480), exclusive=True, whole_node=True,
                  extra=["--hint=nomultithread"])
    back = jobs.shape_from_options(shape.options(), ranks_per_task=8, gpus_on_node=8, follows_gpus=False)
    assert back == shape.model_copy(update={"binding": back.binding})
    assert parse_options(["--exclusive", "not an option", "--time=1:00:00"]) == {"exclusive": "", "time": "1:00:00"}


@pytest.mark.parametrize("name", sorted(CANONICAL))
def test_a_0_3_0_project_is_explained_as_it_was_made(tmp_path, name):
    """plugin_data schema 2 (0.3.0) recorded the options as text only: the shapes read from
    them are the ones the job model computes, so explain says the same for both."""
    project = render(REPO, tmp_path / name, **CANONICAL[name])
    recorded = set(yaml.safe_load((FIXTURES / f"{name}.yml").read_text())["plugin_data"]["job"]["slurm"])
    for kind in JOB_KINDS.values():
        if kind.shape and kind.name not in recorded:  # 0.3.0 made no such job (sweep's shape is new in 0.3.1)
            assert kind.optional, f"projects made before job kind {kind.name} lack {kind.file}: make it optional"
            (project / kind.file).unlink(missing_ok=True)
    (project / "scripts/lib/python/runlog.py").unlink()  # (nor job reports and tracking)
    now = explain_project(project)
    new_answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    shutil.copy(FIXTURES / f"{name}.yml", project / ".copier-answers.yml")
    old_answers = yaml.safe_load((project / ".copier-answers.yml").read_text())
    assert old_answers["plugin_data"]["schema"] == 2 and "shapes" not in old_answers["plugin_data"]["job"]
    old = validate_plugin_data(old_answers["plugin_data"])
    new = validate_plugin_data(new_answers["plugin_data"])
    assert old.job.shapes == {kind: shape for kind, shape in new.job.shapes.items() if kind in recorded}
    assert (old.job.binding, old.job.memory_note) == (new.job.binding, new.job.memory_note)
    then = explain_project(project)
    # (0.5's site data names the energy counters and how to stripe a pre-staging archive; a
    # 0.3.0 answers file has neither field, so explain says "not measured" and no striping,
    # as a 0.3.0 project's jobs and README would)
    assert then.pop("energy")["counters"] == "" and now.pop("energy")["counters"]
    for report in (then, now):
        (report["prestage"] or {}).pop("archive", None)
    assert then == now


def test_a_job_kind_is_one_registry_entry_and_one_template():
    templates = {p.name.split(".jinja")[0] for p in (REPO / "project-templates/project/jobs").iterdir()}
    for kind in JOB_KINDS.values():
        name = Path(kind.file).name
        assert any(name in t for t in templates), (kind.name, templates)
    assert {k.name for k in JOB_KINDS.values() if k.shape is None} == {"interactive"}


# A throwaway job kind for the walk of CONTRIBUTING.md ("Adding a job kind"): its template.
_EVAL_TEMPLATE = """{%- import 'project-templates/_shared/slurm.jinja' as slurm with context -%}
#!/bin/bash
# Evaluation on one node of the training job's shape.
{{- slurm.sbatch_header('eval') }}

set -euo pipefail
# shellcheck source=../scripts/lib/job.sh
source "${SLURM_SUBMIT_DIR:-.}/scripts/lib/job.sh"
mkdir -p "${RUN_DIR}"
run_step launch run.sh "${RUN_DIR}" "$@"
"""


def _eval(r: jobs.Request) -> Shape:
    return jobs._shape(r, "eval", r.part, nodes=1, gpus=r.gpus, launcher=r.launcher, time=r.walltime)


def test_a_new_job_kind_is_its_entry_and_its_template(tmp_path, monkeypatch):
    """The walk: one JobKind entry and one template make a job that renders with its own
    shape, is billed in scripts/values.sh, lints clean and is explained; nothing else."""
    template = tmp_path / "template"
    template.mkdir()
    shutil.copy(REPO / "copier.yml", template)
    shutil.copytree(REPO / "project-templates", template / "project-templates")
    (template / "project-templates/project/jobs/eval.sbatch.jinja").write_text(_EVAL_TEMPLATE)
    monkeypatch.setitem(JOB_KINDS, "eval", jobs.JobKind("eval", "jobs/eval.sbatch", _eval, optional=True))
    project = render(template, tmp_path / "p", nodes=2, walltime="04:00:00")
    data = validate_plugin_data(yaml.safe_load((project / ".copier-answers.yml").read_text())["plugin_data"])
    shape, train = data.job.shapes["eval"], data.job.shapes["train"]
    assert (shape.nodes, shape.gpus_per_node, shape.time, shape.name) == (1, train.gpus_per_node, "04:00:00", "demo-eval")
    assert header(project, "eval.sbatch")[:len(shape.options())] == shape.options()
    assert "--nodes=1" in header(project, "eval.sbatch") and "--nodes=2" in header(project, "train.sbatch")
    billed = values(project)
    assert billed["billing_eval"] == billed["billing_train"] == "4 GPU-hours"  # per node-hour, same partition
    assert data.job.cost["eval"].at_limit == 4 * 4  # one node, four hours
    assert lint_project(project, get_catalogue()) == []
    report = next(j for j in explain_project(project)["jobs"] if j["kind"] == "eval")
    assert (report["file"], report["nodes"], report["billed_at_limit"]) == ("jobs/eval.sbatch", 1, 16)
    from .test_render import unconditional_jobs

    assert "jobs/eval.sbatch" in unconditional_jobs(template)


@pytest.mark.parametrize(("walltime", "train", "profile"), [
    ("12:00:00", 300, 300),  # the profile's own 00:20:00 gets 300 s too
    ("00:40:00", 600, 300),  # training a quarter of 40 minutes, the profile a quarter of its 20
    ("00:10:00", 150, 150),  # the profile takes the shorter training limit, and its warning
])
def test_the_profile_job_is_warned_before_its_own_limit(tmp_path, walltime, train, profile):
    project = render(REPO, tmp_path / "p", profiler="rocprofv3", walltime=walltime)
    headers = {name: (project / "jobs" / f"{name}.sbatch").read_text() for name in ("train", "profile")}
    assert f"#SBATCH --signal=B:USR1@{train}\n" in headers["train"]
    assert f"#SBATCH --signal=B:USR1@{profile}\n" in headers["profile"]
    # profile_job (scripts/lib/job.sh) says so at the warning, with the lead from values.sh.
    assert values(project)["profile_signal_lead"] == str(profile)
    assert ('trap \'echo "time limit in $(seconds_left "${profile_signal_lead}") s: the profile will end unfinished" '
            '>&2; time_is_up\' USR1' in (project / "scripts" / "lib" / "job.sh").read_text())


def _refused(part: str, **shape) -> list[tuple[str, str, tuple]]:
    site = get_catalogue().sites["lumi"]
    return [(r.answer, r.reason, r.fixes) for r in jobs.refusals(site, site.partition(part), **shape)]


def test_the_job_shape_rules_are_one_function_with_their_edges():
    """jobs.refusals holds every shape rule (the questionnaire and lint call it): the edges
    of each, on LUMI's standard-g (whole nodes, 8 GPUs, 1024 nodes, 2 days), small-g (shared
    nodes, 4 nodes, 3 days) and dev-g (whole nodes, 32 nodes, 3 hours)."""
    assert _refused("standard-g", nodes=1, gpus=8, time="2-00:00:00") == []
    assert _refused("standard-g", nodes=1, gpus=9) == [
        ("gpus_per_node", "9 GPUs per node is out of range: standard-g nodes have 8 GPUs (GCDs)", (("gpus_per_node", "8"),))]
    assert _refused("small-g", nodes=1, gpus=0)[0][2] == (("gpus_per_node", "1"),)
    # The whole-node rule: several nodes need all GPUs of each, on any partition.
    assert _refused("small-g", nodes=2, gpus=8) == []
    assert _refused("small-g", nodes=2, gpus=7) == [
        ("gpus_per_node", "a job on 2 nodes uses whole nodes: small-g nodes have 8 GPUs, not 7",
         (("gpus_per_node", "8"), ("nodes", "1")))]
    # A whole-node partition refuses part of a node, unless the kind may use part (the smoke test).
    assert _refused("standard-g", nodes=1, gpus=7) == [
        ("partition", "standard-g allocates (and bills) whole nodes, so 7 of 8 GPUs would waste the rest",
         (("gpus_per_node", "8"), ("partition", "small-g")))]
    assert _refused("standard-g", nodes=1, gpus=1, partial_node=True) == []
    assert _refused("small-g", nodes=4, gpus=8) == []
    assert _refused("small-g", nodes=5, gpus=8) == [
        ("nodes", "small-g allows at most 4 nodes, not 5", (("partition", "standard-g"), ("nodes", "4")))]
    assert _refused("dev-g", nodes=1, gpus=8, time="03:00:00") == []
    assert _refused("dev-g", nodes=1, gpus=8, time="03:00:01") == [
        ("walltime", "'03:00:01' exceeds the dev-g limit of 03:00:00", (("walltime", "03:00:00"),))]
    assert _refused("small-g", nodes=1, gpus=1, memory=Memory(form="per-node", gb=480)) == []
    assert _refused("small-g", nodes=1, gpus=8, memory=Memory(form="per-gpu", gb=60)) == []
    assert _refused("small-g", nodes=1, gpus=8, memory=Memory(form="per-gpu", gb=61)) == [
        ("memory", "488 GB of memory per node exceed the 480 GB a small-g node has", ())]
    assert _refused("small-g", nodes=1, gpus=8, tasks=8, cpus_per_task=7) == []
    assert _refused("small-g", nodes=1, gpus=8, tasks=8, cpus_per_task=8)[0][1] == (
        "8 tasks x 8 CPUs exceed the 56 usable cores of a small-g node")


@pytest.mark.parametrize(("question", "changes", "edit"), [
    ("partition", {"gpus_per_node": 4}, ("--gpus-per-node=8", "--gpus-per-node=4")),
    ("walltime", {"walltime": "2-00:00:01"}, ("--time=01:00:00", "--time=2-00:00:01")),
])
def test_a_shape_the_questionnaire_refuses_lint_refuses_in_the_same_words(tmp_path, question, changes, edit):
    """The questionnaire's check and lint's check of a job file's header are one refusal
    (jobs.refusals), worded once: a rule changed there cannot diverge between them."""
    from lumi_scaffold.questions import check

    from .test_questions import BASE

    cat = get_catalogue()
    answers = dict(BASE)
    asked = check(question, {**answers, **changes}[question], {**answers, **changes}, cat)
    project = render(REPO, tmp_path / "p", **answers)
    train = project / "jobs/train.sbatch"
    assert edit[0] in train.read_text()
    train.write_text(train.read_text().replace(edit[0], edit[1]))
    [linted] = [p for p in check_headers(project, "lumi", cat) if p.startswith("train.sbatch:")]
    reason, _, rest = asked.partition(". Use ")
    fixes, _, hint = rest.partition(". ")  # (a hint after the answers: chains, for a walltime)
    assert asked and linted == f"train.sbatch: {reason} (the catalogue installed now). Fix: " + ", or ".join(
        f"lumi-scaffold update -d {fix}" for fix in fixes.rstrip(".").split(" or ")) + (f". {hint}" if hint else "")


def test_known_issues_take_the_nodes_from_the_model_not_the_recorded_text():
    """A known issue's shape is the training job's nodes as plugin_data's model holds them
    (job.shapes.train.nodes), not a --nodes= read back out of the recorded options."""
    from lumi_scaffold.known_issues import nodes_of
    from lumi_scaffold.assemble import resolve

    from .test_questions import BASE

    data = resolve({**BASE, "nodes": 2}, get_catalogue())
    data["job"]["slurm"]["train"] = [o.replace("--nodes=2", "--nodes=1") for o in data["job"]["slurm"]["train"]]
    # (validate_plugin_data refuses records that disagree: the model alone, to see which one is read)
    assert nodes_of(PluginData.model_validate(data)) == 2
    old = yaml.safe_load((Path(__file__).parent / "fixtures" / "plugin_data-v0.2.json").read_text())
    assert nodes_of(validate_plugin_data(old)) == 1  # 0.1 and 0.2 projects record no job shapes


def test_the_memory_a_job_holds_on_a_node_is_one_rule():
    """Memory.held_gb (explain's pre-staging budget): what the job asks for, or where memory
    follows the GPUs (Setonix), the node's on whole nodes and the GPUs' share on part of one."""
    assert Memory(form="per-gpu", gb=60).held_gb(2, False, 480, 60) == 120
    assert Memory(form="per-node", gb=480).held_gb(8, True, 480, 60) == 480
    assert Memory(form="follows-gpus").held_gb(8, True, 512, 64) == 512
    assert Memory(form="follows-gpus").held_gb(2, False, 512, 64) == 128
    assert Memory(form="follows-gpus").held_gb(2, False, 512, None) is None
    assert Memory(form="none").held_gb(1, False, 480, 60) is None
