"""Image paths that start with an environment variable (${MYSOFTWARE}/containers/x.sif, as a
Pawsey group keeps its images): one check at plugin load and at render, a project that
renders and lints with plain Copier, a job that stops with one line when the image is not
there, and doctor's check on a login node. The site plugin is tests/fixtures/mysoftware-plugin
(test data), installed as a distribution with an entry point."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from lumi_scaffold import ContainerImage, cli, copier_ext, doctor, plugins
from lumi_scaffold.lint import lint_project
from lumi_scaffold.plugin_data import PluginDataError, validate_plugin_data

from .helpers import REPO, render, template_copy, values, write_plugin_dist

FIXTURES = Path(__file__).parent / "fixtures"
PLUGIN_DIR = FIXTURES / "mysoftware-plugin"
IMAGE = "${MYSOFTWARE}/containers/pytorch_2.2.0-rocm5.7.3.sif"
ANSWERS = ["project_name=demo", "site=setonix-like", "account=pawsey0001-gpu", "framework=pytorch"]


def image(path: str) -> dict:
    return {"id": "x-pytorch", "site": "s", "framework": "pytorch", "title": "t", "path": path,
            "generation": "g", "status": "recommended"}


def rendered_with(path: str) -> dict:
    data = copy.deepcopy(json.loads((FIXTURES / "plugin_data-v0.2.json").read_text()))
    data["container"]["path"] = path
    return data


@pytest.mark.parametrize("path, kept", [
    (IMAGE, IMAGE),
    ("$MYSOFTWARE/containers/pytorch_2.2.0-rocm5.7.3.sif", IMAGE),  # written back with braces
    ("/software/projects/pawsey0001/containers/x.sif", "/software/projects/pawsey0001/containers/x.sif"),
    ("/scratch/${USER}/x.sif", "/scratch/${USER}/x.sif"),
])
def test_load_and_render_accept_the_same_paths(path, kept):
    assert ContainerImage.model_validate(image(path)).path == kept
    assert validate_plugin_data(rendered_with(path)).container.path == kept


@pytest.mark.parametrize("path", [
    "${MYSOFTWARE}/x.sif; touch /tmp/pwned", "$(id)/x.sif", "${1X}/x.sif", "$MY SOFTWARE/x.sif",
    "containers/x.sif", '${MYSOFTWARE}/x".sif', "~/x.sif",
])
def test_load_and_render_refuse_the_same_paths(path):
    with pytest.raises(ValidationError):
        ContainerImage.model_validate(image(path))
    with pytest.raises(PluginDataError, match="container.path"):
        validate_plugin_data(rendered_with(path))


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The fixture plugin installed as a distribution (entry point mysoftware-site); returns
    the environment a subprocess needs to see it."""
    site = tmp_path / "site-packages"
    write_plugin_dist(site, "mysoftware-site", {"mysoftware-site": "mysoftware_site"}, {})
    for entry in (str(PLUGIN_DIR), str(site)):
        monkeypatch.syspath_prepend(entry)
    monkeypatch.setenv(plugins.ENV_LOAD, "mysoftware-site")
    monkeypatch.delenv("MYSOFTWARE_SITE_IMAGES", raising=False)
    plugins.reset()
    yield {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(site), str(PLUGIN_DIR)])}
    plugins.reset()


def test_a_bad_image_path_is_refused_at_load_naming_plugin_file_and_field(installed, tmp_path, monkeypatch):
    bad = tmp_path / "images.yaml"
    bad.write_text((PLUGIN_DIR / "images.yaml").read_text().replace(IMAGE, '"${MYSOFTWARE}/x.sif; touch /tmp/pwned"'))
    monkeypatch.setenv("MYSOFTWARE_SITE_IMAGES", str(bad))
    cat = plugins.get_catalogue()
    assert "setonix-like-pytorch-2-2" not in cat.containers
    [problem] = [str(p) for p in cat.problems]
    assert problem.startswith("plugin 'mysoftware-site': hook register_containers failed: ")
    assert f"{bad}:6:9: 0.path: '${{MYSOFTWARE}}/x.sif; touch /tmp/pwned' may only contain" in problem


def copier_copy(dest: Path, env: dict, *data: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "copier", "copy", "--trust", "--defaults", "--quiet"]
    for item in data:
        args += ["-d", item]
    return subprocess.run([*args, str(template_copy(dest.parent / "template")), str(dest)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_plain_copier_renders_the_path_so_only_the_variable_expands_and_the_project_lints(installed, tmp_path):
    project = tmp_path / "demo"
    result = copier_copy(project, installed, *ANSWERS)
    assert result.returncode == 0, result.stderr
    assert values(project)["image"] == IMAGE and values(project)["image_variable"] == "MYSOFTWARE"
    assert lint_project(project, plugins.get_catalogue()) == []

    def source(**variables: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k not in ("SIF", "MYSOFTWARE")} | variables
        return subprocess.run(["bash", "-c", 'set -euo pipefail; source scripts/lib/job.sh; echo "SIF=${SIF}"'],
                              cwd=project, env=env, capture_output=True, text=True)

    unset = source()
    assert unset.returncode == 2 and unset.stdout == ""
    assert unset.stderr == (f"No image at {IMAGE} (MYSOFTWARE=<unset>): set MYSOFTWARE, or give the image with "
                            "SIF=/path/to/image.sif\n")
    software = tmp_path / "software"
    empty = source(MYSOFTWARE=str(software))
    assert empty.returncode == 2 and f"(MYSOFTWARE={software})" in empty.stderr
    (software / "containers").mkdir(parents=True)
    (software / "containers/pytorch_2.2.0-rocm5.7.3.sif").write_bytes(b"")
    found = source(MYSOFTWARE=str(software))
    assert found.returncode == 0, found.stderr
    assert found.stdout == f"SIF={software}/containers/pytorch_2.2.0-rocm5.7.3.sif\n"
    # A given SIF wins, and the variable is then not needed.
    own = tmp_path / "own.sif"
    own.write_bytes(b"")
    assert source(SIF=str(own)).stdout == f"SIF={own}\n"


def test_doctor_checks_the_image_on_a_login_node(installed, tmp_path, monkeypatch, capsys):
    project = tmp_path / "demo"
    assert copier_copy(project, installed, *ANSWERS).returncode == 0
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("sbatch", "#!/bin/bash\necho 'sbatch: Job 1 to start' >&2\n"),
                       ("scontrol", "#!/bin/bash\necho 'Slurmctld(primary) at login is UP'\n")):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(doctor, "find_sbatch", lambda: str(bin_dir / "sbatch"))
    monkeypatch.delenv("MYSOFTWARE", raising=False)
    assert cli.main(["doctor", str(project)]) == 1
    assert (f"problem: the image is {IMAGE}, and MYSOFTWARE is not set here: set it (jobs take it from the shell that "
            "submits them), or give the image with SIF=/path/to/image.sif") in capsys.readouterr().out.splitlines()
    software = tmp_path / "software"
    monkeypatch.setenv("MYSOFTWARE", str(software))
    assert cli.main(["doctor", str(project)]) == 1
    assert f"problem: no image at {IMAGE} (MYSOFTWARE={software}, so {software}/containers/" in capsys.readouterr().out
    (software / "containers").mkdir(parents=True)
    (software / "containers/pytorch_2.2.0-rocm5.7.3.sif").write_bytes(b"")
    assert cli.main(["doctor", str(project)]) == 0
    assert "problem" not in capsys.readouterr().out


# ----------------------------------------------------- no traceback from plain Copier


def assert_one_line_and_nothing_written(result: subprocess.CompletedProcess, dest: Path, line: str) -> None:
    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr
    assert line in result.stderr.splitlines(), result.stderr
    assert not dest.exists()


def test_plain_copier_copy_with_a_plugin_that_registers_a_bad_path(installed, tmp_path, monkeypatch):
    bad = tmp_path / "images.yaml"
    bad.write_text((PLUGIN_DIR / "images.yaml").read_text().replace(IMAGE, '"${MYSOFTWARE}/x.sif; touch /tmp/pwned"'))
    dest = tmp_path / "demo"
    result = copier_copy(dest, {**installed, "MYSOFTWARE_SITE_IMAGES": str(bad)}, *ANSWERS)
    assert_one_line_and_nothing_written(
        result, dest, "Validation error for question 'framework': site 'setonix-like' has no container image for "
        "framework 'pytorch' and does not offer it with your own image. Choose one of [].")
    assert f"lumi-scaffold: warning: plugin 'mysoftware-site': hook register_containers failed: {bad}:6:9: 0.path:" in result.stderr


def test_an_image_made_without_validation_is_refused_at_load(installed, tmp_path, monkeypatch):
    """register(ContainerImage.model_construct(...)) skips pydantic: the host checks it again."""
    module = tmp_path / "constructed_image.py"
    module.write_text(
        "from lumi_scaffold import ContainerImage, hookimpl\n\n@hookimpl\ndef register_containers(register):\n"
        "    register(ContainerImage.model_construct(id='shell-pytorch', site='lumi', framework='pytorch', title='t',\n"
        "        path='/x.sif\"; touch /tmp/pwned; \"', generation='laif', status='legacy', versions={'torch': '2.0'},\n"
        "        versions_unconfirmed=[], requirements=[], profilers=None, numa_binding=False, pull_from=None,\n"
        "        replaced_by=None, note='', source=''))\n")
    write_plugin_dist(tmp_path / "site-packages", "constructed", {"constructed": "constructed_image"}, {})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(plugins.ENV_LOAD, "constructed")
    plugins.reset()
    cat = plugins.get_catalogue()
    assert "shell-pytorch" not in cat.containers
    assert [str(p) for p in cat.problems] == [
        "plugin 'constructed': container 'shell-pytorch': path: '/x.sif\"; touch /tmp/pwned; \"' may only contain "
        "letters, digits, _,./:=+@%- and ${NAME} references (no spaces, quotes, $(...), ; or globs) "
        "(got '/x.sif\"; touch /tmp/pwned; \"')"]


@pytest.mark.parametrize("answer, line", [
    ("container_path=/x/$(id).sif", "Validation error for question 'container_path': '/x/$(id).sif' may only contain"),
    ("dataset_archive=/x/a'b.tar", "Validation error for question 'dataset_archive': \"/x/a'b.tar\" may only contain"),
    ("profile_rank=3", "profile_rank='3' applies only with a profiler"),  # no question asks it: refused, not dropped
])
def test_plain_copier_copy_refuses_a_bad_answer_in_one_line(tmp_path, answer, line):
    dest = tmp_path / "demo"
    result = copier_copy(dest, {**os.environ, "PYTHONPATH": str(REPO)}, "project_name=demo", "container=custom",
                         "prestage=true", answer)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert any(text.startswith(line) for text in result.stderr.splitlines()), result.stderr
    assert not dest.exists()


def test_errors_from_the_extension_are_copiers_user_errors(template, tmp_path, monkeypatch):
    """What resolve refuses at render (here: a stand-in refusal) is Copier's one-line user
    error, and still the lumi-scaffold error it was (lumi-scaffold new reports it so)."""
    from copier.errors import UserMessageError

    from lumi_scaffold import assemble
    from lumi_scaffold.testing import render_project

    def refuse(*_args, **_kwargs):
        raise PluginDataError("plugin_data.container.path='x': must be an absolute path")

    monkeypatch.setattr(assemble, "resolve", refuse)
    with pytest.raises(PluginDataError) as info:
        render_project(template, tmp_path / "demo", {"project_name": "demo"})
    assert isinstance(info.value, UserMessageError) and info.value.message.startswith("plugin_data.container.path='x'")
    assert not (tmp_path / "demo").exists()


# ----------------------------------------------------------- the job on a real Slurm


@pytest.mark.slurm
def test_the_job_checks_the_image_under_the_variable_when_it_starts(slurm_cluster_local2n, template, tmp_path,
                                                                       site_root):
    """A smoke-test job with the image at $MYSOFTWARE/...: stops with one line where the
    variable or the file is missing, runs once the image is there (its COMMAND: `true`; the
    stand-in container checks the image it is given)."""
    from lumi_scaffold.plugins import get_catalogue

    from .helpers import render
    from .jobs import job_env, log_of, run_job

    if "local" not in get_catalogue().sites:
        pytest.skip("plugins/lumi-site-local is not installed")
    cluster = slurm_cluster_local2n
    project = render(template, tmp_path / "p", site="local", account="local", partition="batch", gpus_per_node=2,
                     container="custom", container_path="$MYSOFTWARE/containers/pytorch_2.2.0-rocm5.7.3.sif")
    smoke = project / "jobs/smoke-test.sbatch"
    assert smoke.read_text().count("\nCOMMAND=(python -u src/demo/smoke_test.py)\n") == 1
    smoke.write_text(smoke.read_text().replace("\nCOMMAND=(python -u src/demo/smoke_test.py)\n", "\nCOMMAND=(true)\n"))
    env = {k: v for k, v in job_env(cluster, tmp_path, site_root).items() if k not in ("SIF", "MYSOFTWARE")}
    missing, result = run_job(cluster, project, env, "jobs/smoke-test.sbatch")
    assert (result.state, result.exit_code) == ("FAILED", 2)
    assert (f"No image at {IMAGE} (MYSOFTWARE=<unset>): set MYSOFTWARE, or give the image with "
            "SIF=/path/to/image.sif") in log_of(project, missing).splitlines()
    software = tmp_path / "software"
    (software / "containers").mkdir(parents=True)
    (software / "containers/pytorch_2.2.0-rocm5.7.3.sif").write_bytes(b"")
    found, result = run_job(cluster, project, {**env, "MYSOFTWARE": str(software)}, "jobs/smoke-test.sbatch")
    log = log_of(project, found)
    assert result.state == "COMPLETED", log
    assert "No image" not in log


@pytest.mark.parametrize("answers, line", [
    (["walltime=01: 00:00"], "Validation error for question 'walltime': '01: 00:00' is not a Slurm time"),
    (["container=custom", "container_path=/x/$(id).sif"],
     "Validation error for question 'container_path': '/x/$(id).sif' may only contain"),
])
def test_plain_copier_update_refuses_a_bad_answer_in_one_line_and_changes_nothing(tmp_path, answers, line):
    template = template_copy(tmp_path / "template")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "template"], ["tag", "v1.0.0"]):
        subprocess.run([*git, *args], cwd=template, check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    project = tmp_path / "demo"
    made = subprocess.run([sys.executable, "-m", "copier", "copy", "--trust", "--defaults", "--quiet", "-d",
                           "project_name=demo", str(template), str(project)], env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "made"]):
        subprocess.run([*git, *args], cwd=project, check=True, capture_output=True)
    args = [sys.executable, "-m", "copier", "update", "--trust", "--defaults", "--skip-answered", "--quiet"]
    for item in answers:
        args += ["-d", item]
    result = subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert any(text.startswith(line) for text in result.stderr.splitlines()), result.stderr
    status = subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True)
    assert status.stdout == ""


# ------------------------------------------------- storage areas under a variable

def site_changed(monkeypatch, site: str, change) -> plugins.Catalogue:
    """The catalogue with ``change(site model)``'s fields updated on that site (TEST DATA, not
    a fact about the site named), made the one every render of the test sees; returned."""
    real = plugins.get_catalogue()
    cat = plugins.Catalogue(**{**vars(real), "sites": dict(real.sites)})
    cat.sites[site] = cat.sites[site].model_copy(update=change(cat.sites[site]))
    monkeypatch.setattr(plugins, "get_catalogue", lambda: cat)
    return cat


def scratch_under(monkeypatch, site: str, path: str) -> None:
    """The catalogue with the site's scratch area at ``path`` (a site whose scratch is
    ``${MYSCRATCH}/...``)."""
    site_changed(monkeypatch, site, lambda here: {
        "storage": [a.model_copy(update={"path": path}) if a.name == "scratch" else a for a in here.storage]})


STORAGE_LINE = ("MYSCRATCH is not set: the project's paths (data, outputs, caches or the container's binds) start "
                "with ${MYSCRATCH} (scripts/values.sh). Fix: set MYSCRATCH in the shell that submits the job")


def test_storage_under_a_variable_renders_lints_and_is_checked_by_the_job_and_doctor(template, tmp_path, monkeypatch):
    from lumi_scaffold.answers import read_answers
    from lumi_scaffold.doctor import storage_checks

    scratch_under(monkeypatch, "lumi", "${MYSCRATCH}/{project}")
    project = render(template, tmp_path / "p", prestage=True)
    v = values(project)
    assert v["output_root"] == "${MYSCRATCH}/project_465000000/${USER}/demo/outputs"
    assert "TORCH_HOME=${MYSCRATCH}/project_465000000/${USER}/cache/torch_home" in v["cache_env"]
    assert v["storage_variables"] == ["MYSCRATCH"]
    assert lint_project(project, plugins.get_catalogue(), "lumi") == []

    def source(**variables: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k not in ("MYSCRATCH", "OUTPUT_ROOT", "DATA_DIR")}
        script = 'module() { :; }; set -euo pipefail; source scripts/lib/job.sh; echo "${OUTPUT_ROOT}"'  # (no Lmod here)
        return subprocess.run(["bash", "-c", script],
                              cwd=project, env={**env, "SIF": "/x.sif", "USER": "u1", **variables}, capture_output=True,
                              text=True)

    unset = source()
    assert (unset.returncode, unset.stdout, unset.stderr) == (2, "", STORAGE_LINE + "\n")
    found = source(MYSCRATCH="/s")
    assert found.returncode == 0, found.stderr
    assert found.stdout == "/s/project_465000000/u1/demo/outputs\n"
    # doctor, on a login node, checks the variable as the job will.
    answers = read_answers(project)
    data = validate_plugin_data(answers["plugin_data"])
    assert storage_checks(answers, data, environ={}) == [
        "the project's paths (data, outputs, caches or the container's binds) start with ${MYSCRATCH}, and "
        "MYSCRATCH is not set here: set it (jobs "
        "take it from the shell that submits them)"]
    assert storage_checks(answers, data, environ={"MYSCRATCH": "/s"}) == []
    # The plugins' Jinja filter takes the answer as Copier holds it (the recorded dict).
    assert copier_ext.lumi_storage_variables(answers["plugin_data"], "${OTHER}/x.tar") == ["MYSCRATCH", "OTHER"]


def test_a_bind_under_a_variable_is_checked_like_storage(template, tmp_path, monkeypatch):
    """A site whose images get a bind that starts with a variable (TEST DATA; the Leonardo
    example binds ${WORK} and ${FAST}) where no storage path uses it: the job stops with one
    line naming it when it is not set, and binds its value when it is; doctor names it."""
    from lumi_scaffold.answers import read_answers
    from lumi_scaffold.doctor import storage_checks

    cat = site_changed(monkeypatch, "lumi", lambda lumi: {
        "generations": [g.model_copy(update={"binds": [*g.binds, "${MYBIND}/shared"]}) for g in lumi.generations]})
    project = render(template, tmp_path / "p")
    assert values(project)["storage_variables"] == ["MYBIND"] and "${MYBIND}/shared" in values(project)["binds"]
    assert lint_project(project, cat, "lumi") == []
    env = {k: v for k, v in os.environ.items() if k not in ("MYBIND", "BINDS")}
    script = 'module() { :; }; set -euo pipefail; source scripts/lib/job.sh; echo "${BINDS}"'  # (no Lmod here)
    unset = subprocess.run(["bash", "-c", script], cwd=project, env={**env, "SIF": "/x.sif"}, capture_output=True, text=True)
    assert unset.returncode == 2 and unset.stderr.startswith("MYBIND is not set: "), unset.stderr
    found = subprocess.run(["bash", "-c", script], cwd=project, env={**env, "SIF": "/x.sif", "MYBIND": "/b"},
                           capture_output=True, text=True)
    assert found.returncode == 0 and found.stdout.rstrip("\n").endswith(",/b/shared"), (found.stdout, found.stderr)
    answers = read_answers(project)
    checks = storage_checks(answers, validate_plugin_data(answers["plugin_data"]), environ={})
    assert len(checks) == 1 and "start with ${MYBIND}, and MYBIND is not set here" in checks[0], checks


def test_node_local_storage_under_a_variable_is_expanded_on_the_node(template, tmp_path, monkeypatch):
    """A site whose node-local area is ``${TMPDIR}`` (TEST DATA; the Leonardo example's
    sources leave open which area /tmp is): the job's temporary directory and the pre-staging
    directory are under that variable's value, not under a directory named ``${TMPDIR}``."""
    cat = site_changed(monkeypatch, "lumi", lambda lumi: {"node_local_tmp": "${TMPDIR}"})
    project = render(template, tmp_path / "p", prestage=True)
    assert values(project)["node_tmp"] == "${TMPDIR}"
    assert lint_project(project, cat, "lumi") == []
    script = ('module() { :; }; set -euo pipefail; source scripts/lib/job.sh; '
              'printf "%s\\n" "$(job_tmpdir)" "${NODE_TMP}" "${STAGE_DIR}"')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "NODE_TMP", "DATASET_ARCHIVE"))}
    done = subprocess.run(["bash", "-c", script], cwd=project, capture_output=True, text=True,
                          env={**env, "SIF": "/x.sif", "USER": "u1", "TMPDIR": "/node/tmp", "SLURM_JOB_ID": "7",
                               "SLURM_NODEID": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["/node/tmp/u1-tmp-7-1", "/node/tmp", "/node/tmp/u1-demo-7"]


def test_expand_replaces_each_variable_in_place_without_a_subshell(template, tmp_path):
    """values-lib.sh's expand_into sets a variable (run.sh expands ~20 values a rank, and a
    subshell each was ~1 ms); expand prints the same. It has no local variable to hide a
    name (the old one's were ``rest``, ``out`` and ``name``). (A bare ``$`` never reaches it:
    values are checked to hold ``${NAME}`` references only, lumi_scaffold._types.)"""
    project = render(template, tmp_path / "p")
    script = ('set -euo pipefail; source scripts/lib/values-lib.sh; '
              'expand_into got "${VALUE}"; printf "%s\\n" "${got}" "$(expand "${VALUE}")"')
    value = "/a/${USER}-${rest}/${NOT_SET}x/${name}${out}/${USER}"
    done = subprocess.run(["bash", "-c", script], cwd=project, capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "VALUE": value, "USER": "u1", "rest": "r",
                               "name": "n", "out": "o"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["/a/u1-r/x/no/u1"] * 2


def test_a_site_without_variables_has_no_storage_check(template, tmp_path):
    from lumi_scaffold.answers import read_answers
    from lumi_scaffold.doctor import storage_checks

    project = render(template, tmp_path / "p", prestage=True)
    assert values(project)["storage_variables"] == []
    answers = read_answers(project)
    assert storage_checks(answers, validate_plugin_data(answers["plugin_data"]), environ={}) == []


@pytest.mark.slurm
def test_the_job_stops_in_one_line_without_its_storage_variable_and_writes_under_it(
        slurm_cluster_local2n, template, tmp_path, site_root, monkeypatch):
    """A project of a site whose scratch is ${MYSCRATCH}/...: a job submitted without the
    variable stops with one line; with it, the run's outputs are under it (the job's own
    report, scripts/lib/fault.py's: the training script is a stand-in without a framework)."""
    from .jobs import STAND_IN_TRAIN, job_env, log_of, run_job

    if "local" not in plugins.get_catalogue().sites:
        pytest.skip("plugins/lumi-site-local is not installed")
    scratch_under(monkeypatch, "local", "${MYSCRATCH}/{account}")
    cluster = slurm_cluster_local2n
    project = render(template, tmp_path / "p", site="local", account="local", partition="batch", gpus_per_node=2)
    (project / "src/demo/train.py").write_text(STAND_IN_TRAIN)
    env = {k: v for k, v in job_env(cluster, tmp_path, site_root).items()
           if k not in ("MYSCRATCH", "OUTPUT_ROOT", "KERNEL_CACHE_STORE")}
    missing, result = run_job(cluster, project, env, "jobs/smoke-test.sbatch")
    assert (result.state, result.exit_code) == ("FAILED", 2)
    assert log_of(project, missing).splitlines() == [STORAGE_LINE]
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    job, result = run_job(cluster, project, {**env, "MYSCRATCH": str(scratch)}, "jobs/train.sbatch", "--steps", "5")
    log = log_of(project, job)
    assert result.state == "COMPLETED", log
    assert [p.relative_to(scratch).parts[0] for p in scratch.rglob(f"reports/{job}.json")] == ["local"], log


def test_paths_with_spaces_or_other_letters_are_taken_where_every_file_quotes_them(template, tmp_path):
    """A legal path (a space, a non-ASCII letter) is an answer; each file it reaches quotes it:
    values.sh (the jobs read it back whole), the job library, the README."""
    sif, archive = "/scratch/project_465001234/my images/ü.sif", "/scratch/project_465001234/my data/été.tar"
    project = render(template, tmp_path / "p", container="custom", container_path=sif, prestage=True,
                     dataset_archive=archive)
    assert lint_project(project, plugins.get_catalogue()) == []  # bash -n and shellcheck, every shell file
    read = subprocess.run(["bash", "-c", 'source scripts/lib/values-lib.sh && printf "%s|%s" "$(expand "${image}")" '
                           '"$(expand "${dataset_archive}")"'], cwd=project, capture_output=True, text=True)
    assert read.stdout == f"{sif}|{archive}", read.stderr
    assert f"`{sif}`" in (project / "README.md").read_text()
    for bad in ('/x/my"image.sif', "/x/$(id).sif", "/x/a;b.sif", "/x/`id`.sif", "/x/*.sif", "~/x.sif", "/x/a\\b.sif"):
        assert "may only contain" in copier_ext.questions.check("container_path", bad, {"container": "custom"},
                                                                plugins.get_catalogue()), bad
