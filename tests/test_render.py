"""Rendering: every combination of choice answers, lint, determinism, golden projects."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lumi_scaffold import settings, testing
from lumi_scaffold.jobs import JOB_KINDS
from lumi_scaffold.plugins import get_catalogue
from lumi_scaffold.testing import answer_matrix, lint_projects, scratch_dir

from .copier_shortcuts import copier_shortcuts, render_many
from .helpers import REPO, read_tree, render, values

GOLDEN = Path(__file__).parent / "golden"
UPDATE_GOLDEN = os.environ.get("LUMI_SCAFFOLD_UPDATE_GOLDEN") == "1"


def unconditional_jobs(template: Path = REPO) -> set[str]:
    """The job files every project has: those of the job kinds whose template's name has
    no condition (jobs/<file>.jinja); the conditional ones are listed below."""
    return {k.file for k in JOB_KINDS.values() if (template / "project-templates/project" / f"{k.file}.jinja").is_file()}


def expected_files(a: dict) -> set[str]:
    pkg = a["project_name"].replace("-", "_")
    files = {
        ".copier-answers.yml", ".gitignore", ".shellcheckrc", "README.md", "constraints.txt", "requirements.txt",
        "logs/.gitkeep",
        "scripts/lib/job.sh", "scripts/lib/sweep.sh", "scripts/lib/SHA256SUMS", "scripts/lib/run.sh", "scripts/setup-venv.sh", "scripts/lib/image_packages.py",
        "scripts/attach.sh", "scripts/lib/watchdog.py", "scripts/lib/collective_net.py", "scripts/values.sh", "scripts/lib/project_values.py",
        "scripts/lib/reports.py", "scripts/lib/values-lib.sh", "scripts/lib/nodes.sh", "scripts/lib/ledger.py", "scripts/lib/python/sitecustomize.py",
        f"src/{pkg}/__init__.py", f"src/{pkg}/train.py", f"src/{pkg}/smoke_test.py", f"scripts/lib/python/heartbeat.py",
        f"scripts/lib/python/runlog.py", "scripts/lib/python/jobfiles.py", "scripts/sweep.py", "sweeps/example.txt",
        "pytest.ini", "tests/conftest.py", "tests/test_heartbeat.py", "tests/test_image_packages.py",
        "tests/test_collective_net.py", "tests/test_runlog.py", "tests/test_watchdog.py",
        "scripts/lib/fault.py", "tests/test_fault.py",
        *unconditional_jobs(),
    }
    if a.get("profiler", "none") != "none":
        files |= {"jobs/profile.sbatch", "scripts/lib/run-profile.sh"}
    if a.get("prestage"):
        files.add("scripts/lib/prestage.sh")
    if a.get("container") == "cotainr":
        files |= {"container/environment.yml", "container/build.sh"}
    cat = get_catalogue()
    site, framework = cat.sites[a.get("site", "lumi")], cat.frameworks[a.get("framework", "pytorch")]
    if site.miopen_cache or framework.triton_cache:  # kernel caches carried between jobs
        files.add("scripts/lib/caches.sh")
    if int(a.get("nodes", 1)) > 1:  # the network preflight, and its benchmark where the framework has one
        files |= {"jobs/preflight.sbatch", "scripts/lib/preflight.sh"}
        if framework.name == "jax" or framework.needs_master_addr:
            files.add("scripts/lib/allreduce_bench.py")
    return files


@pytest.fixture
def scratch(tmp_path):
    with scratch_dir(tmp_path) as directory:
        yield directory


def test_full_matrix_renders_lints_and_fits_the_site(template, scratch):
    matrix = list(answer_matrix())
    assert len(matrix) > 1000  # sites x frameworks x containers x launchers x data x prestage x profilers x shapes
    failures = render_many(template, scratch, matrix)
    assert failures == []
    projects = sorted(scratch.iterdir())
    for project, answers in zip(projects, matrix):
        files = {str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()}
        assert files == expected_files(answers), (project, answers)
        not_executable = [f for f in files if f.endswith(".sh") and not os.access(project / f, os.X_OK)]
        assert not_executable == [], project
    assert lint_projects(projects, answers=matrix) == []



def test_the_matrix_offers_the_test_site_only_when_asked(monkeypatch):
    """answer_matrix lists what the questionnaire offers: without LUMI_SCAFFOLD_TEST_SITES the
    local site (installed for the Slurm tests) is not a choice, so no combination names it."""
    monkeypatch.delenv(settings.TEST_SITES)
    assert "local" in get_catalogue().sites
    assert "local" not in {a["site"] for a in answer_matrix()}
    monkeypatch.setenv(settings.TEST_SITES, "1")
    assert "local" in {a["site"] for a in answer_matrix()}

def _tree_with_modes(root: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(root)): (p.stat().st_mode, p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("installed", ["default", "all"])
def test_copier_shortcuts_change_nothing(template, tmp_path, monkeypatch, installed):
    """The matrix's shortcuts (tests/copier_shortcuts.py) only save time.
    "all": every installed plugin, so plugin files ({% yield %} paths), Frontier's
    own-image projects and DeepSpeed's config are in the sample when installed."""
    from lumi_scaffold import plugins

    if installed == "all":
        monkeypatch.delenv(plugins.ENV_DISABLE)
        plugins.reset()
    matrix = list(answer_matrix())
    sample = matrix[::149] + [a for a in matrix if a["framework"] not in ("pytorch", "jax")][::37]
    assert len(sample) >= 10
    with copier_shortcuts() as taken:
        pass
    assert taken == ["filemode", "plain", "context", "bundle", "config", "choices", "answers"], "a Copier upgrade removed what a shortcut replaces"
    assert render_many(template, tmp_path / "fast", sample, workers=1) == []
    assert testing.render_many(template, tmp_path / "plain", sample, workers=1) == []
    for i in range(len(sample)):
        assert _tree_with_modes(tmp_path / "fast" / f"{i:05d}") == _tree_with_modes(tmp_path / "plain" / f"{i:05d}")
    import copier._vcs

    assert copier._vcs.is_git_bundle.__module__ == "copier._vcs"  # restored
    plugins.reset()


def test_copier_shortcuts_on_a_template_that_pokes_the_context(tmp_path):
    """Found in review: templates that mutate or serialise what Copier builds per file."""
    import contextlib

    tpl = tmp_path / "tpl"
    tpl.mkdir()
    (tpl / "copier.yml").write_text("name:\n  type: str\n  default: n\nn:\n  type: int\n  choices: '{{ [1, 2] | tojson }}'\n  default: 1\n")
    body = ("{{ _copier_answers.pop('name', 'gone') }} {{ _copier_conf.answers_file }} "
            "{{ (_copier_conf | to_json) | length > 10 }} {{ _copier_conf.sep }}\n")
    for name in ("a.txt.jinja", "b.txt.jinja"):
        (tpl / name).write_text(body)
    (tpl / "{{ _copier_conf.answers_file }}.jinja").write_text("{{ _copier_answers | to_nice_yaml }}")
    trees = []
    for use in (False, True):
        with copier_shortcuts() if use else contextlib.nullcontext():
            project = testing.render_project(tpl, tmp_path / f"out-{use}", {})
        trees.append(read_tree(project))
    assert trees[0] == trees[1]
    assert trees[1]["b.txt"] == b"n .copier-answers.yml True /\n"


def test_public_render_many_runs_plain_copier(template, tmp_path, monkeypatch):
    """Plugin authors' renders (render_many, so check_conformance) take no shortcut: Copier
    runs its own per-file step, which the "filemode" shortcut skips."""
    import copier._main

    synced: list[str] = []
    original = copier._main.Worker._sync_git_index_executable_bit

    def sync(self, dst_relpath, src_mode):
        synced.append(str(dst_relpath))
        return original(self, dst_relpath, src_mode)

    monkeypatch.setattr(copier._main.Worker, "_sync_git_index_executable_bit", sync)
    answers = next(answer_matrix())
    assert testing.render_many(template, tmp_path / "plain", [answers], workers=1) == []
    written = {str(p.relative_to(tmp_path / "plain" / "00000")) for p in (tmp_path / "plain" / "00000").rglob("*") if p.is_file()}
    assert written <= set(synced)
    synced.clear()
    assert render_many(template, tmp_path / "fast", [answers], workers=1) == []
    assert synced == []


@pytest.mark.parametrize("text", ["plain", "", "two\nlines", "end\n", "a {{ x }}", "{% if 1 %}y{% endif %}", "{# c #}", "cr\r\nlf", "{ braces }", "50% } {"])
@pytest.mark.parametrize("keep_trailing_newline", [True, False])
def test_plain_string_shortcut_only_where_jinja_agrees(text, keep_trailing_newline):
    import jinja2

    from .copier_shortcuts import _renders_to_itself

    env = jinja2.Environment(keep_trailing_newline=keep_trailing_newline)
    # Stray braces and percent signs are no delimiters: those texts take the shortcut too.
    if text in ("plain", "", "two\nlines", "{ braces }", "50% } {") or (text == "end\n" and keep_trailing_newline):
        assert _renders_to_itself(env, text)
    if _renders_to_itself(env, text):
        assert env.from_string(text).render(x=1) == text


def test_same_answers_give_the_same_bytes(template, tmp_path):
    answers = {"nodes": 2, "prestage": True, "profiler": "rocprofv3", "container": "lust-pytorch-2.7.1"}
    first = read_tree(render(template, tmp_path / "a", **answers))
    second = read_tree(render(template, tmp_path / "b", **answers))
    assert first == second


CANONICAL = {
    "pytorch-2node": {"nodes": 2, "gpus_per_node": 8, "walltime": "12:00:00", "tracking": "tensorboard"},
    "jax-1gpu": {"framework": "jax", "gpus_per_node": 1, "container": "lust-jax-0.4.28", "tracking": "wandb"},
    "pytorch-legacy-prestage-rocprof": {
        "nodes": 2, "container": "lust-pytorch-2.7.1", "prestage": True, "data_location": "flash",
        "dataset_archive": "/flash/project_465000000/data/imagenet.tar", "profiler": "rocprof", "profile_rank": 14,
    },
    "pytorch-torchrun-cotainr-smallg": {"launcher": "torchrun", "container": "cotainr", "partition": "small-g", "profiler": "framework",
                                        "tracking": "mlflow"},
}


def _copied_as_they_are() -> dict[str, set[str]]:
    """The sha256 of each file the template copies as it is (no .jinja), by the name it gets
    in a project (a conditional name's condition left out)."""
    found: dict[str, set[str]] = {}
    for path in (REPO / "project-templates" / "project").rglob("*"):
        if path.is_file() and not path.name.endswith(".jinja"):
            name = re.sub(r"\{%.*?%\}", "", path.name)
            found.setdefault(name, set()).add(hashlib.sha256(path.read_bytes()).hexdigest())
    return found


@pytest.mark.parametrize("name", sorted(CANONICAL))
def test_golden_project(template, tmp_path, name):
    """The project as rendered: each file the template renders, whole, in tests/golden/NAME/;
    each file it copies as it is (the runtime library, the project's tests), by its sha256
    in tests/golden/NAME.copied (their text is the template's own: a change to one is one
    line per golden, and the template's diff is the one to read)."""
    project = render(template, tmp_path / name, **CANONICAL[name])
    tree = {k: v.replace(str(template).encode(), b"TEMPLATE") for k, v in read_tree(project).items()}
    sources = _copied_as_they_are()
    copied = {rel: digest for rel, data in tree.items()
              if (digest := hashlib.sha256(data).hexdigest()) in sources.get(Path(rel).name, ())}
    rendered = {rel: data for rel, data in tree.items() if rel not in copied}
    manifest = "".join(f"{digest}  {rel}\n" for rel, digest in sorted(copied.items()))
    golden = GOLDEN / name
    if UPDATE_GOLDEN:
        shutil.rmtree(golden, ignore_errors=True)
        for rel, data in rendered.items():
            (golden / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden / rel).write_bytes(data)
        (GOLDEN / f"{name}.copied").write_text(manifest)
    again = f"rerun with LUMI_SCAFFOLD_UPDATE_GOLDEN=1 and review `git diff tests/golden/{name}*`"
    assert rendered == read_tree(golden), again
    assert manifest == (GOLDEN / f"{name}.copied").read_text(), again


def test_two_node_pytorch_project_has_everything(template, tmp_path):
    p = render(template, tmp_path / "p", nodes=2)
    train = (p / "jobs/train.sbatch").read_text()
    for option in ("--account=project_465000000", "--partition=standard-g", "--time=01:00:00", "--nodes=2",
                   "--ntasks-per-node=8", "--gpus-per-node=8", "--cpus-per-task=7", "--mem=480G", "--output=logs/%x-%j.out"):
        assert f"#SBATCH {option}\n" in train
    env, v = (p / "scripts/lib/job.sh").read_text(), values(p)
    # Each rank bound to its GPU's cores with the site's masks, through srun's --cpu-bind.
    assert v["launcher"] == "srun" and v["cpu_bind"].startswith("verbose,mask_cpu:0x00fe000000000000,0xfe00000000000000,")
    assert '${cpu_bind:+"--cpu-bind=${cpu_bind}"}' in env
    assert "srun --kill-on-bad-exit=1" in env and "make_step run.sh" in env and "train_job \"$@\"" in train
    assert "\nCOMMAND=(python -u src/demo/train.py)\n" in train and '\nWORKDIR="${PROJECT_DIR}"\n' in train
    assert v["rendezvous"] == "1" and 'MASTER_ADDR="$(scontrol show hostnames "${SLURM_JOB_NODELIST}" | head -n 1)"' in env
    assert "load lumi-aif-singularity-bindings" in v["modules"] and v["container_command"] == ["singularity", "run"]
    run = (p / "scripts/lib/run.sh").read_text()
    for line in ("export PYTHONNOUSERSITE=1", 'export RANK="${SLURM_PROCID:-0}"', 'export_values "${image_env[@]}"',
                 'for setting in "${kernel_cache_env[@]}"; do', 'exec "$@"'):
        assert line in run
    assert "NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3" in v["image_env"] and "MIOPEN_USER_DB_PATH=/tmp/${USER}-miopen-cache-${SLURM_JOB_ID}-${SLURM_NODEID}" in v["kernel_cache_env"]
    # A LAIF image: no GDR level, and the comment says why. [LAIF-I30, AIG-PR97]
    assert not [e for e in v["image_env"] if e.startswith("NCCL_NET_GDR_LEVEL=")]
    assert re.search(r"^# \(not set, a known issue with this image\) NCCL_NET_GDR_LEVEL: exporting it \(PHB or SYS\) can make "
                     r"torch.distributed jobs hang with LAIF images .*\[LAIF-I30, AIG-PR97\]$",
                     (p / "scripts/values.sh").read_text(), re.M)
    assert v["activate_variable"] == ""
    assert "torch 2.10.* (exact version UNCONFIRMED)" in (p / "constraints.txt").read_text()
    assert 'set_start_method("spawn")' in (p / "src/demo/train.py").read_text()
    assert "sbatch jobs/train.sbatch" in (p / "README.md").read_text()


def test_legacy_image_keeps_the_gdr_level_with_its_reason(template, tmp_path):
    p = render(template, tmp_path / "p", nodes=2, container="lust-pytorch-2.7.1")
    assert "NCCL_NET_GDR_LEVEL=PHB" in values(p)["image_env"]
    text = (p / "scripts/values.sh").read_text()
    assert "\n# NCCL_NET_GDR_LEVEL=PHB: let RCCL use GPU-direct RDMA between GCD and NIC [WS-09, WS-2026]\n" in text
    assert "known issue with this image" not in text


def test_one_gpu_jax_project_has_everything(template, tmp_path):
    p = render(template, tmp_path / "j", framework="jax", gpus_per_node=1, container="lust-jax-0.4.28")
    train = (p / "jobs/train.sbatch").read_text()
    assert "#SBATCH --partition=small-g\n" in train and "#SBATCH --mem-per-gpu=60G\n" in train
    assert "mask_cpu" not in train and "--exclusive" not in train
    # flax and optax are requirements with this image (it does not ship them); its versions
    # are the catalogue's note, not pins: setup-venv.sh pins what the image really ships.
    assert (p / "requirements.txt").read_text().splitlines()[-2:] == ["flax==0.8.3", "optax==0.2.2"]
    assert "jax 0.4.28, numpy 2.2.2, pandas 2.2.3, scipy 1.15.1" in (p / "constraints.txt").read_text()
    assert not [line for line in (p / "constraints.txt").read_text().splitlines() if line and not line.startswith("#")]
    run, v = (p / "scripts/lib/run.sh").read_text(), values(p)
    assert v["activate_variable"] == "WITH_CONDA"
    assert 'activate="${!activate_variable:?' in run and 'set +u\n    eval "${activate}"\n    set -u' in run
    assert v["rendezvous"] == "0"  # no MASTER_ADDR
    assert "jax.distributed.initialize()" in (p / "src/demo/train.py").read_text()
    assert "/var/spool/slurmd" not in v["binds"]  # single node: no CPE binds


def test_skipped_questions_given_as_data_are_refused_not_dropped(template, tmp_path):
    """An answer no question asks with these answers (Copier would take it and drop it) is
    refused with what it needs, and nothing is written."""
    for given, needs in (({"container_path": "/evil/x.sif"}, "container=custom"), ({"profile_rank": 3}, "a profiler"),
                         ({"dataset_archive": "/x.tar"}, "prestage=true")):
        with pytest.raises(Exception, match=f"applies only with {re.escape(needs)}"):
            render(template, tmp_path / "p", **given)
        assert not (tmp_path / "p").exists()


@pytest.mark.parametrize(
    ("answers", "question"),
    [
        ({"account": "foo"}, "account"),
        ({"gpus_per_node": 9}, "gpus_per_node"),
        ({"nodes": 0}, "nodes"),
        ({"nodes": 5, "partition": "small-g"}, "partition"),
        ({"walltime": "3-00:00:00"}, "walltime"),
        ({"framework": "tensorflow"}, "framework"),
        ({"project_name": "x;rm -rf ~"}, "project_name"),
    ],
)
def test_invalid_answer_leaves_nothing(template, tmp_path, answers, question):
    dest = tmp_path / "out"
    with pytest.raises(ValueError, match=rf"'{question}'"):
        render(template, dest, **answers)
    assert not dest.exists()


def new(*args, cwd):
    return subprocess.run([sys.executable, "-m", "lumi_scaffold.cli", "new", *args], capture_output=True, text=True, cwd=cwd)


def test_cli_new_reports_bad_answer_cleanly(template, tmp_path):
    result = new(str(tmp_path / "p"), "--template", str(template), "--defaults", "-d", "gpus_per_node=9", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().endswith("lumi-scaffold: error: gpus_per_node: 9 GPUs per node is out of range: small-g nodes have 8 GPUs (GCDs). "
                                         "Use gpus_per_node=8.")
    assert "Traceback" not in result.stderr and not (tmp_path / "p").exists()
    result = new(str(tmp_path / "p"), "--template", str(template), "--defaults", "-d", "nodes=two", cwd=tmp_path)
    assert (result.returncode, result.stderr.strip()) == (1, "lumi-scaffold: error: nodes='two': not a whole number. Fix: give one, e.g. nodes=1")


def test_cli_new_generates_with_defaults(template, tmp_path):
    result = new(str(tmp_path / "p"), "--template", str(template), "--defaults", "-q", "-d", "project_name=vit", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "p/src/vit/train.py").exists()
    assert re.search(r"^plugin_data:", (tmp_path / "p/.copier-answers.yml").read_text(), re.M)


def test_plugin_template_files_render_only_for_their_owner(template, tmp_path, monkeypatch):
    from lumi_scaffold.models import TemplateFile

    files = [
        TemplateFile(owner="framework", owner_name="pytorch", name="ds_config.json", content='{"name": "{{ project_name }}"}\n'),
        TemplateFile(owner="site", owner_name="lumi", directory="scripts", name="site-extra.sh", content="#!/bin/bash\necho '{{ account }}'\n"),
    ]
    monkeypatch.setattr(get_catalogue(), "files", files)
    p = render(template, tmp_path / "p")
    assert (p / "config/ds_config.json").read_text() == '{"name": "demo"}\n'
    assert (p / "scripts/site-extra.sh").read_text() == "#!/bin/bash\necho 'project_465000000'\n"
    assert (p / "scripts/lib/run.sh").exists()  # siblings of a plugin slot still render
    j = render(template, tmp_path / "j", framework="jax")
    assert not (j / "config").exists() and (j / "scripts/site-extra.sh").exists()


def test_mlflow_client_is_kept_to_what_lumis_mlflow_app_reads(template, tmp_path, monkeypatch):
    """LUMI's Open OnDemand MLflow app runs MLflow 2.22.0 or 3.11.1 [AIG-PR88]: the venv gets a
    client between them and the README names the app; a site whose viewer needs no version
    gets the tracker's own package."""
    from lumi_scaffold import plugins

    p = render(template, tmp_path / "lumi", tracking="mlflow")
    assert "mlflow-skinny>=2.22,<3.12" in (p / "requirements.txt").read_text().splitlines()
    readme = " ".join((p / "README.md").read_text().split())
    assert "LUMI's web interface (Open OnDemand, https://www.lumi.csc.fi) has an MLflow app (Apps menu) that runs MLflow 2.22.0 or 3.11.1" in readme
    assert "[AIG-08, AIG-PR88]" in readme and "`scripts/setup-venv.sh` stops" in readme
    cat = plugins.get_catalogue()
    lumi = cat.sites["lumi"]
    viewers = [v.model_copy(update={"package": ""}) for v in lumi.tracking_viewers]
    monkeypatch.setitem(cat.sites, "lumi", lumi.model_copy(update={"tracking_viewers": viewers}))
    plain = render(template, tmp_path / "plain", tracking="mlflow")
    assert "mlflow-skinny" in (plain / "requirements.txt").read_text().splitlines()
    assert "setup-venv.sh` stops" not in (plain / "README.md").read_text()
