"""What a generated project tells its user about where it lives and how it is updated, and
what `lumi-scaffold doctor` adds: a project under $HOME."""

from __future__ import annotations

import re

import pytest

from lumi_scaffold import cli, doctor, plugins
from lumi_scaffold.questions import choices

from .helpers import render


def _section(readme: str, title: str) -> str:
    start = readme.index(f"## {title}\n")
    end = readme.find("\n## ", start + 1)
    return readme[start:end if end >= 0 else None]


def test_the_readme_says_where_the_project_belongs(template, tmp_path):
    readme = (render(template, tmp_path / "p", profiler="rocprofv3") / "README.md").read_text()
    text = " ".join(readme[:readme.index("## 1. ")].split())
    assert "Put it in `/project/project_465000000/${USER}` (project: 50 GB (up to 500 GB), 100k files; for code and venvs" in text
    assert "not in your home directory `/users/${USER}` (20 GB, not expandable" in text
    assert ("the jobs' larger files: RCCL's debug files and the watchdog's heartbeats in its `logs/`, profiler "
            "traces (several GB) in its `profiles/` [UG-stor]") in text
    assert "Outputs and checkpoints go to `/scratch/project_465000000/${USER}/demo/outputs`" in text


def test_doctor_warns_about_a_project_under_home(git_template, tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)
    inside = render(git_template, home / "work" / "p")
    outside = render(git_template, tmp_path / "project" / "p")
    assert cli.main(["doctor", str(inside)]) == 0
    warnings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {inside} is under your home directory {home} (20 GB, not expandable; keep caches and data out of it): "
        "its venv and logs/ grow there. Fix: commit it and git clone it into "
        "/project/project_465000000/${USER} (project), then create the venv there"]
    assert cli.main(["doctor", str(outside)]) == 0
    out = capsys.readouterr().out
    assert "home directory" not in out and "No problems found." in out


def test_updating_is_lumi_scaffold_update_with_copier_as_the_alternative(template, tmp_path):
    project = render(template, tmp_path / "p", container="lust-pytorch-2.7.1", prestage=True)
    readme = (project / "README.md").read_text()
    updating = _section(readme, "Updating")
    assert re.search(r"^    lumi-scaffold update --pretend ", updating, re.M)
    assert re.search(r"^    lumi-scaffold update ", updating, re.M)
    assert "Plain\nCopier does the same" in updating and "`copier update --trust --defaults`" in updating
    assert "move with `lumi-scaffold update -d container=recommended`" in updating
    assert "move with `lumi-scaffold update -d container=laif-multitorch-" in readme
    # copier update only as the alternative: nowhere else in the project
    elsewhere = readme.replace(updating, "")
    assert "copier update" not in elsewhere
    for path in project.rglob("*"):
        if path.is_file() and path.name not in ("README.md", ".copier-answers.yml"):
            assert "copier update" not in path.read_text(errors="replace"), path
    assert "(lumi-scaffold update -d dataset_archive=...)" in (project / "scripts/lib/prestage.sh").read_text()


UNBOUND = ("torchrun's workers get no CPU binding with lust-pytorch-2.7.1: the image is not known to have "
           "torch.distributed.run --numa-binding (PyTorch 2.9 and later). The srun launcher binds each rank to "
           "its GPU's cores: lumi-scaffold update -d launcher=srun")


def test_torchrun_on_a_legacy_image_is_said_to_run_unbound(git_template, tmp_path, monkeypatch, capsys):
    cat = plugins.get_catalogue()
    base = {"site": "lumi", "framework": "pytorch", "account": "project_465000000", "project_name": "demo"}
    legacy = choices("launcher", {**base, "container": "lust-pytorch-2.7.1"}, cat)
    assert legacy["torchrun: one task per node; no CPU binding with this image (srun binds)"] == "torchrun"
    assert "torchrun: one task per node spawning one worker per GPU" in choices("launcher", base, cat)  # LAIF: bound
    # after the copy, in the job file and README, and in doctor
    assert cli.main(["new", str(tmp_path / "p"), "--template", str(git_template), "--defaults", "-d", "account=project_465000000",
                     "-d", "container=lust-pytorch-2.7.1", "-d", "launcher=torchrun"]) == 0
    assert f"WARNING: {UNBOUND}" in capsys.readouterr().err
    project = tmp_path / "p"
    assert "# to its GPU's cores (lumi-scaffold update -d launcher=srun)." in (project / "jobs/train.sbatch").read_text()
    assert "to its GPU's cores (lumi-scaffold update -d launcher=srun)." in (project / "README.md").read_text()
    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)
    cli.main(["doctor", str(project)])
    out = capsys.readouterr().out
    assert f"warning: {UNBOUND}" in out and "No problems found." not in out
    bound = render(git_template, tmp_path / "q", launcher="torchrun")
    assert "launcher=srun" not in (bound / "jobs/train.sbatch").read_text()
    assert cli.main(["doctor", str(bound)]) == 0 and "No problems found." in capsys.readouterr().out


def test_doctor_names_a_framework_with_legacy_images_only(git_template, tmp_path, monkeypatch, capsys):
    """JAX on LUMI: no LAIF image yet, so the recommended image is a former LUST one; doctor
    says so instead of "No problems found" (PyTorch, with a LAIF image, gets no such notice)."""
    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)
    project = render(git_template, tmp_path / "p", framework="jax")
    assert cli.main(["doctor", str(project)]) == 0
    out = capsys.readouterr().out
    assert "No problems found." not in out
    assert [line for line in out.splitlines() if line.startswith("warning:")] == [
        "warning: JAX (jax.distributed) on LUMI has only images of a legacy generation (legacy-sif: Former AMD/LUST image "
        "under /appl/local/containers (conda env behind $WITH_CONDA); offered as-is, no further development since the "
        "January 2026 update); lust-jax-0.4.35 is the newest. lumi-scaffold update moves the project once the catalogue "
        "has a newer image"]
    # a legacy PyTorch image: the catalogue has a LAIF one, so only the image's own notice
    legacy = render(git_template, tmp_path / "q", container="lust-pytorch-2.7.1")
    cli.main(["doctor", str(legacy)])
    assert "legacy generation" not in capsys.readouterr().out


@pytest.mark.parametrize(("nodes", "named"), [(2, True), (1, False)])
def test_the_projects_own_files_name_the_images_known_issue_for_its_shape(template, tmp_path, nodes, named):
    """20260807's second-process-group hang [LAIF-I44] strikes across nodes: a 2-node project's
    README (container row) and values.sh (above the image line) say what it is and what to
    do; a 1-node project's do not mention it beyond the image's title line."""
    p = render(template, tmp_path / "p", nodes=nodes, container="laif-multitorch-20260807")
    readme = (p / "README.md").read_text()
    row = next(line for line in readme.split("\n- ") if line.startswith("**Container**"))
    assert ("**Known issue [LAIF-I44]** on 2 nodes, if your code makes a second process group" in row) == named
    assert ("Instead: keep to one process group (plain DDP) on this image" in row) == named
    lines = (p / "scripts" / "values.sh").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("image='/appl/"))
    comment = lines[at - 1]
    assert comment.startswith("# Known issue [LAIF-I44] on 2 nodes, if your code makes a second process group") == named
    assert ("Instead: keep to one process group" in comment) == named
    assert lines[at - 1 - named].startswith("# LAIF lumi-multitorch full, ROCm 7.0, torch 2.10 (2026-08-07)")


def test_an_image_without_issues_gets_no_known_issue_line(template, tmp_path):
    p = render(template, tmp_path / "p", nodes=2)  # the recommended image, 20260513: no open issue in the sources
    assert "Known issue" not in (p / "README.md").read_text()
    assert "Known issue" not in (p / "scripts" / "values.sh").read_text()
    assert "known_issues" not in (p / ".copier-answers.yml").read_text()


def test_a_project_on_an_observed_image_says_so_in_its_readme_and_values(template, tmp_path):
    p = render(template, tmp_path / "p", container="laif-multitorch-20260929")
    readme = (p / "README.md").read_text()
    row = next(line for line in readme.split("\n- ") if line.startswith("**Container**"))
    assert "**This image is observed, not announced**: it was seen in public job scripts [OBS-LAIF]" in row
    assert "`lumi-scaffold doctor` on a login node checks that it is there" in row
    lines = (p / "scripts" / "values.sh").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("image='/appl/"))
    assert lines[at - 1] == ("# Observed in public job scripts, not announced by LUMI: `lumi-scaffold doctor` on a login "
                             "node checks that it is there.")
    recommended = render(template, tmp_path / "q")
    assert "observed" not in (recommended / "README.md").read_text().lower().split("## sources")[0]
