"""plugin_data: typed, validated on every render and update, computed job fields.

plugin_data is recorded in the answers file and Copier accepts it with --data, so it is
input; its values reach shell scripts. Each injection case below once wrote a payload
into a generated script (issue 14); now each is refused with one line.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from lumi_scaffold import cli, plugins
from lumi_scaffold.models import NodeLayout
from lumi_scaffold.plugin_data import SCHEMA, PluginData, PluginDataError, validate_plugin_data
from lumi_scaffold.assemble import resolve
from lumi_scaffold.testing import answer_matrix, render_project

from .helpers import DEFAULTS, REPO, render

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA_FILE = REPO / "lumi_scaffold" / "plugin_data.schema.json"
PAYLOAD = "/tmp/lumi-scaffold-injected"


def good() -> dict:
    return resolve({**DEFAULTS, "site": "lumi", "framework": "pytorch", "nodes": 2, "partition": "standard-g",
                    "gpus_per_node": 8, "walltime": "01:00:00", "container": "recommended", "launcher": "srun",
                    "data_location": "scratch", "profiler": "none"}, plugins.get_catalogue())


def tampered(path: str, value) -> dict:
    """good() with one value replaced; ``path`` is dotted, list indexes as numbers."""
    data = good()
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node = data
    for key in parents:
        node = node[key]
    node[last] = value
    return data


# Each case reached a generated file unchecked before: (field, payload, where it is reported).
INJECTIONS = [
    ("container.path", f'/x.sif"; touch {PAYLOAD}; echo "', "container.path"),            # job-env.sh
    ("container.modules.0.name", f"x; touch {PAYLOAD}", "container.modules.0.name"),     # job-env.sh
    ("env.0.value", f"$(touch {PAYLOAD})", "env.0.value"),                               # run.sh
    ("site.display_name", f"LUMI\ntouch {PAYLOAD}", "site.display_name"),               # comments
    ("job.slurm.train.0", f"--job-name=x\ntouch {PAYLOAD}", "job.slurm.train.0"),       # train.sbatch
    ("job.binds.0", f"/pfs,$(touch {PAYLOAD})", "job.binds.0"),                          # job-env.sh
    ("site.module_reset", f"purge; touch {PAYLOAD}", "site.module_reset"),               # job-env.sh
    ("profiler.command", ["rocprof", f"`touch {PAYLOAD}`"], "profiler.command.1"),       # run-profile.sh
    ("requirements", ["--index-url=https://evil.example/simple"], "requirements.0"),     # requirements.txt
    ("package", "demo; touch", "package"),                                               # smoke-test.sbatch
]


@pytest.mark.parametrize("field,payload,reported", INJECTIONS, ids=[c[0] for c in INJECTIONS])
def test_each_injection_is_refused_with_one_line_naming_the_field(field, payload, reported):
    with pytest.raises(PluginDataError) as exc:
        validate_plugin_data(tampered(field, payload))
    message = exc.value.message
    assert "\n" not in message
    assert message.startswith(f"plugin_data.{reported}=") and "Fix: plugin_data is computed" in message, message


# A job recorded twice, as its shape and as what the templates print of it: each record
# changed alone (an answers file edited by hand) -> the field named, and what the shape gives.
DISAGREEMENTS = [
    ("job.slurm.train.4", "--nodes=3", "job.slurm.train", "job.shapes.train renders"),
    ("job.slurm.smoke", ["--job-name=x"], "job.slurm.smoke", "job.shapes.smoke renders"),
    ("job.shapes.preflight.nodes", 3, "job.slurm.preflight", "--nodes=3"),
    ("job.tasks", 15, "job.tasks", "job.shapes.train gives 16"),
    ("job.cpus_per_task", 1, "job.cpus_per_task", "job.shapes.train gives 7"),
    ("job.binding", "slurm", "job.binding", "job.shapes.train gives 'masks'"),
    ("job.memory", "--mem=1G", "job.memory", "job.shapes.train gives '--mem=480G'"),
    ("job.whole_node", False, "job.whole_node", "gives True"),
]


@pytest.mark.parametrize("field,value,reported,reason", DISAGREEMENTS, ids=[c[0] for c in DISAGREEMENTS])
def test_a_job_whose_two_records_disagree_is_refused_naming_the_field(field, value, reason, reported):
    with pytest.raises(PluginDataError) as exc:
        validate_plugin_data(tampered(field, value))
    message = exc.value.message
    assert "\n" not in message and message.startswith(f"plugin_data.{reported}=") and reason in message, message
    assert exc.value.field == f"plugin_data.{reported}"


def test_a_kind_recorded_once_only_is_refused():
    data = good()
    del data["job"]["shapes"]["sweep"]
    with pytest.raises(PluginDataError, match=r"^plugin_data\.job\.slurm\.sweep=\[.*\]: there is no job\.shapes\.sweep"):
        validate_plugin_data(data)
    data = good()
    del data["job"]["slurm"]["sweep"]
    with pytest.raises(PluginDataError, match=r"^plugin_data\.job\.slurm\.sweep=None: job\.shapes\.sweep renders \["):
        validate_plugin_data(data)


def test_an_empty_cpu_mask_is_refused_as_the_catalogue_refuses_it():
    # One CpuMask type: plugin_data once took 0x0, which binds a rank to no core.
    with pytest.raises(PluginDataError, match=r"^plugin_data\.site\.cpu_masks\.3='0x0': mask '0x0' must be a non-zero hex"):
        validate_plugin_data(tampered("site.cpu_masks.3", "0x0"))
    with pytest.raises(ValueError, match="mask '0x00' must be a non-zero hex"):
        NodeLayout(gpus=1, cpus=8, cores=8, cpus_per_gpu=1, cpu_masks=["0x00"])
    assert validate_plugin_data(tampered("site.cpu_masks.3", "0x00000000ff000000")).site.cpu_masks[3] == "0x00000000ff000000"


def test_unknown_and_missing_keys_are_refused():
    with pytest.raises(PluginDataError, match=r"^plugin_data\.hook='x': Extra inputs are not permitted"):
        validate_plugin_data({**good(), "hook": "x"})
    missing = good()
    del missing["container"]["path"]
    with pytest.raises(PluginDataError, match=r"plugin_data\.container\.path: Field required"):
        validate_plugin_data(missing)
    with pytest.raises(PluginDataError, match="expected a mapping, got str"):
        validate_plugin_data("[]")


def test_site_title_with_quotes_stays_inside_the_docstring(template, tmp_path, monkeypatch):
    """A site title is one line of free text: the Python file escapes it for its string."""
    real = plugins.get_catalogue()
    title = 'LUMI """ ; import os ; os.system("touch /tmp/x") ; """ \\ end'
    lumi = real.sites["lumi"].model_copy(update={"title": title})
    cat = plugins.Catalogue(**{**vars(real), "sites": {**real.sites, "lumi": lumi}})
    monkeypatch.setattr(plugins, "get_catalogue", lambda: cat)
    project = render(template, tmp_path / "p")
    source = (project / "src" / "demo" / "__init__.py").read_text()
    tree = ast.parse(source)
    assert len(tree.body) == 1 and ast.get_docstring(tree).endswith(f"for {title}.")


def _new(tmp_path: Path, capsys, data: dict) -> tuple[int, str]:
    dest = tmp_path / "p"
    code = cli.main(["new", str(dest), "--defaults", "-q", "--vcs-ref", "HEAD", "-d", "project_name=demo", "-d", "account=project_465000000",
                     "-d", f"plugin_data={json.dumps(data)}"])
    err = capsys.readouterr().err.strip()
    assert not dest.exists() or not any(dest.iterdir()), "a refused render left files behind"
    return code, err


@pytest.mark.parametrize("field,payload,reported", INJECTIONS[:3], ids=[c[0] for c in INJECTIONS[:3]])
def test_new_refuses_plugin_data_given_with_data(tmp_path, capsys, field, payload, reported):
    code, err = _new(tmp_path, capsys, tampered(field, payload))
    assert code == 1 and len(err.splitlines()) == 1 and f"plugin_data: {reported}=" in err, err


def test_copier_itself_refuses_it(tmp_path):
    """Plain `copier copy --data plugin_data=...` goes through the question's validator."""
    with pytest.raises(ValueError, match=r"'plugin_data': container\.path="):
        render_project(REPO, tmp_path / "p", {**DEFAULTS, "plugin_data": tampered(*INJECTIONS[0][:2])}, vcs_ref="HEAD")
    assert not (tmp_path / "p" / "scripts").exists()


def test_valid_plugin_data_given_with_data_is_accepted(tmp_path, capsys):
    """What `copier update` does for the old render: the recorded plugin_data comes back as data."""
    dest = tmp_path / "q"
    assert cli.main(["new", str(dest), "--defaults", "-q", "--vcs-ref", "HEAD", "-d", "project_name=demo", "-d", "account=project_465000000",
                     "-d", "nodes=2", "-d", f"plugin_data={json.dumps(good())}"]) == 0
    assert (dest / "jobs" / "train.sbatch").is_file()


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def committed_project(tmp_path) -> Path:
    template = tmp_path / "template"
    shutil.copytree(REPO, template, ignore=shutil.ignore_patterns(".git", "tests", "*.egg-info", "__pycache__", "docs"))
    _git(template, "init", "-q")
    _git(template, "add", "-A")
    _git(template, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "t")
    project = tmp_path / "project"
    render_project(template, project, DEFAULTS, vcs_ref="HEAD")
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "generated")
    return project


def test_update_refuses_a_tampered_answers_file_before_copier_runs(committed_project, capsys):
    answers = committed_project / ".copier-answers.yml"
    text = answers.read_text()
    path = good()["container"]["path"]
    assert path in text
    answers.write_text(text.replace(path, f"{path}; touch {PAYLOAD}"))
    _git(committed_project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "colleague's commit")
    before = {p: p.read_bytes() for p in committed_project.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert cli.main(["update", str(committed_project), "-q"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ".copier-answers.yml: plugin_data.container.path=" in err, err
    after = {p: p.read_bytes() for p in committed_project.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before


def test_update_refuses_plugin_data_given_with_data(committed_project, capsys):
    bad = json.dumps(tampered("env.0.value", f"$(touch {PAYLOAD})"))
    assert cli.main(["update", str(committed_project), "-q", "-d", f"plugin_data={bad}"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--data plugin_data.env.0.value=" in err, err


def test_every_combination_validates_and_round_trips():
    """What resolve writes for every combination of the matrix is valid plugin data that
    reads back to the same dict (the answers file holds exactly what the model holds)."""
    cat = plugins.get_catalogue()
    seen = 0
    for answers in answer_matrix():
        data = resolve(answers, cat)
        assert validate_plugin_data(data).dump() == data, answers
        seen += 1
    assert seen > 100


@pytest.mark.parametrize("version", ["v0.1", "v0.2"])
def test_old_answers_files_still_validate(version):
    """plugin_data as lumi-scaffold 0.1 (57c4cd3) and 0.2 (1055597) recorded it (schema 1):
    the fields added since have defaults, so their projects still update."""
    data = json.loads((FIXTURES / f"plugin_data-{version}.json").read_text())
    assert data["schema"] == 1
    parsed = validate_plugin_data(data)
    assert parsed.job.slurm == {} and parsed.package == ""  # computed fields came with schema 2
    assert parsed.container.path == data["container"]["path"]


def test_schema_is_checked_in():
    """lumi_scaffold/plugin_data.schema.json is the model's JSON schema (for plugin authors
    and tools reading answers files). Regenerate with LUMI_SCAFFOLD_UPDATE_GOLDEN=1."""
    schema = json.dumps(PluginData.model_json_schema(by_alias=True), indent=2, sort_keys=True) + "\n"
    if os.environ.get("LUMI_SCAFFOLD_UPDATE_GOLDEN"):
        SCHEMA_FILE.write_text(schema)
    assert SCHEMA_FILE.read_text() == schema, "rerun with LUMI_SCAFFOLD_UPDATE_GOLDEN=1 and review the diff"
    assert json.loads(schema)["properties"]["schema"]["maximum"] == SCHEMA


V02_COMMIT = "1055597"  # "Release 0.2.0" on main (the v0.2.0 tag did not travel with the repository)
V030_COMMIT = "6146c40"  # "Release 0.3.0"
V040_COMMIT = "6b0ff8c"  # "Release 0.4.0"


def _has_commit(commit: str) -> bool:
    return subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True).returncode == 0


def _recorded(release: str) -> tuple[dict, dict]:
    """The answers and the plugin_data a project of this release recorded: 0.2.0's
    fixtures/plugin_data-v0.2.json (schema 1) with the answers it was made with, or an
    answers file 0.3.0 wrote (schema 2)."""
    if release == "0.2.0":
        answers = {"project_name": "demo", "account": "project_465000001", "nodes": 2, "profiler": "rocprofv3",
                   "prestage": True}
        return answers, json.loads((FIXTURES / "plugin_data-v0.2.json").read_text())
    if release == "0.4.0":  # (0.4.0 computes plugin_data with today's SDK: the same schema)
        return {"project_name": "demo", "account": "project_465000001", "nodes": 2}, {}
    recorded = yaml.safe_load((FIXTURES / "answers-0.3.0" / "pytorch-legacy-prestage-rocprof.yml").read_text())
    answers = {k: v for k, v in recorded.items() if not k.startswith("_") and k != "plugin_data"}
    return answers, recorded["plugin_data"]


def _release_and_now(tmp_path: Path, release: str, commit: str) -> Path:
    """A template repository: the release's template tagged v<release>, this checkout's v9.0.0."""
    if not _has_commit(commit):
        pytest.skip(f"needs the repository's history (a shallow clone lacks {release})")
    template = tmp_path / "template"
    template.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "copier.yml", "project-templates"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x"], input=archive, cwd=template, check=True)
    _git(template, "init", "-q")
    _git(template, "add", "-A")
    _git(template, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", release)
    _git(template, "tag", f"v{release}")
    shutil.rmtree(template / "project-templates")
    shutil.copytree(REPO / "project-templates", template / "project-templates")
    shutil.copy2(REPO / "copier.yml", template / "copier.yml")
    _git(template, "add", "-A")
    _git(template, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "now")
    _git(template, "tag", "v9.0.0")
    return template


@pytest.mark.slow
@pytest.mark.parametrize(("release", "commit", "schema"), [("0.2.0", V02_COMMIT, 1), ("0.3.0", V030_COMMIT, 2)])
def test_a_project_made_by_an_older_release_updates_and_keeps_its_edits(tmp_path, release, commit, schema):
    """The release's template, with the plugin_data that release recorded, updated to this
    checkout's template: the old render replays the old shape, the new one computes the
    current schema, the user's edit stays, and the result is what a fresh copy writes."""
    template = _release_and_now(tmp_path, release, commit)

    # Copier takes the computed answer from --data: the project is what the release wrote.
    answers, recorded = _recorded(release)
    assert recorded["schema"] == schema
    project = tmp_path / "project"
    render_project(template, project, {**answers, "plugin_data": recorded}, vcs_ref=f"v{release}")
    from lumi_scaffold.update import ANSWERS_FILE

    assert yaml.safe_load((project / ANSWERS_FILE).read_text())["plugin_data"] == recorded
    train = project / "jobs" / "train.sbatch"
    # (a line of the user's own among the #SBATCH lines, which every release writes alike)
    train.write_text(train.read_text().replace("#SBATCH --output=logs/%x-%j.out\n", "#SBATCH --output=logs/%x-%j.out\n# our own line\n", 1))
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", f"made by {release}, edited")

    assert cli.main(["update", str(project), "-q"]) == 0
    after = yaml.safe_load((project / ANSWERS_FILE).read_text())
    assert after["_commit"] == "v9.0.0" and after["plugin_data"]["schema"] == SCHEMA
    assert "# our own line" in train.read_text() and "<<<<<<<" not in train.read_text()
    assert (project / "scripts" / "sweep.py").is_file()  # a file neither release had
    fresh = tmp_path / "fresh"
    render_project(template, fresh, answers, vcs_ref="v9.0.0")
    assert after["plugin_data"] == yaml.safe_load((fresh / ANSWERS_FILE).read_text())["plugin_data"]
    for name in ("scripts/lib/job.sh", "jobs/profile.sbatch", "README.md"):
        assert (project / name).read_text() == (fresh / name).read_text(), name
    assert train.read_text().replace("# our own line\n", "", 1) == (fresh / "jobs" / "train.sbatch").read_text()


@pytest.mark.slow
@pytest.mark.parametrize(("release", "commit"), [("0.3.0", V030_COMMIT), ("0.4.0", V040_COMMIT)])
def test_an_edit_to_the_old_library_or_job_file_is_named_with_what_to_do(tmp_path, capsys, release, commit):
    """A project whose group edited the binds in scripts/job-env.sh and the last lines of
    jobs/train.sbatch (a shorter PROGRESS_TIMEOUT, an argument after train_job, as 0.4
    allowed), and added an #SBATCH line: 0.5 keeps the library in scripts/lib/ and the
    command in COMMAND=(...). The #SBATCH line stays; the job file conflicts and the update
    says what to keep and where the argument goes; the removed job-env.sh is named, with
    the git command that shows the change."""
    template = _release_and_now(tmp_path, release, commit)
    answers, recorded = _recorded(release)
    project = tmp_path / "project"
    render_project(template, project, {**answers, **({"plugin_data": recorded} if recorded else {})}, vcs_ref=f"v{release}")
    env = project / "scripts" / "job-env.sh"
    text = env.read_text()
    assert 'BINDS="${BINDS:-' in text
    env.write_text(text.replace('BINDS="${BINDS:-', 'BINDS="${BINDS:-/our/lab,', 1))
    train = project / "jobs" / "train.sbatch"
    job = train.read_text().replace("#SBATCH --output=logs/%x-%j.out\n", "#SBATCH --output=logs/%x-%j.out\n#SBATCH --mail-type=END\n")
    job = re.sub(r'^(\s*)train_job "\$@"$', r'\1train_job "$@" --epochs 3', job, count=1, flags=re.M)
    train.write_text(job.replace('PROGRESS_TIMEOUT="${PROGRESS_TIMEOUT:-1200}"', 'PROGRESS_TIMEOUT="${PROGRESS_TIMEOUT:-600}"'))
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", f"made by {release}, edited")

    assert cli.main(["update", str(project), "-q"]) == 1
    err = capsys.readouterr().err
    assert "jobs/train.sbatch: your edit conflicts with 0.5's layout. Fix: keep the new lines; the lines from its `source` on" in err, err
    assert "with the arguments you added after train_job" in err and "CHAIN=N sbatch jobs/train.sbatch, not --chain N" in err
    assert "#SBATCH --mail-type=END\n" in train.read_text() and "<<<<<<<" in train.read_text()
    assert "\nCOMMAND=(python -u src/demo/train.py)\n" in train.read_text()
    assert not env.exists() and "removed scripts/job-env.sh" in err and "git diff HEAD -- scripts/ src/" in err, err
    assert (project / "scripts" / "lib" / "job.sh").is_file() and not (project / "src/demo/runlog.py").exists()


def test_a_value_that_does_not_fit_is_reported_by_field_not_as_a_traceback():
    """plugin_data is built from checked answers and validated plugin data; should a value
    still not fit (here an answer the questionnaire would have asked for is missing), the
    error names the field in one line."""
    answers = {**DEFAULTS, "site": "lumi", "framework": "pytorch", "container": "custom"}
    with pytest.raises(PluginDataError, match=r"^plugin_data\.container\.path='None': .* Fix: report it to the plugin"):
        resolve(answers, plugins.get_catalogue())
