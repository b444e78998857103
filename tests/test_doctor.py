"""`lumi-scaffold doctor`: limits that changed since the project was made, and Slurm's own
check of every job file (sbatch --test-only; the real one runs in tests/test_slurm_jobs.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from lumi_scaffold import cli, doctor, plugins
from lumi_scaffold.answers import read_answers
from lumi_scaffold.known_issues import notices
from lumi_scaffold.plugin_data import validate_plugin_data

from .helpers import render

FAKE_SCONTROL = """#!/bin/bash
[ "$1" = ping ] && echo "Slurmctld(primary) at localhost is ${FAKE_SLURM_STATE:-UP}"
[ "${FAKE_SLURM_STATE:-UP}" = UP ]
"""
FAKE_SBATCH = """#!/bin/bash
# Stand-in for sbatch --test-only: refuses the profile job, as Slurm would an unknown QOS.
[ "$1" = --test-only ] || exit 2
case "$2" in
    *profile*) echo "sbatch: error: Batch job submission failed: Invalid qos specification" >&2; exit 1 ;;
    *) echo "sbatch: Job 4242 to start at 2026-11-23T10:00:00 using 8 processors on nodes nid005000 in partition standard-g" >&2 ;;
esac
"""


def test_a_limit_lowered_since_the_project_was_made_is_reported(template, tmp_path, monkeypatch, capsys):
    project = render(template, tmp_path / "p", walltime="2-00:00:00")
    cat = plugins.get_catalogue()
    lumi = cat.sites["lumi"]
    parts = [p.model_copy(update={"max_walltime": "1-00:00:00"}) if p.name == "standard-g" else p for p in lumi.partitions]
    monkeypatch.setitem(cat.sites, "lumi", lumi.model_copy(update={"partitions": parts}))
    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)  # not a login node
    assert cli.main(["doctor", str(project)]) == 1
    out = capsys.readouterr().out
    assert ("problem: train.sbatch: '2-00:00:00' exceeds the standard-g limit of 1-00:00:00 (the catalogue installed now). "
            "Fix: lumi-scaffold update -d walltime=1-00:00:00") in out
    assert "note: no sbatch on PATH" in out


def test_every_job_file_goes_through_sbatch_test_only(template, tmp_path, monkeypatch, capsys):
    project = render(template, tmp_path / "p", profiler="rocprofv3")
    files = sorted(path.name for path in (project / "jobs").glob("*.sbatch"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("sbatch", FAKE_SBATCH), ("scontrol", FAKE_SCONTROL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod((bin_dir / name).stat().st_mode | stat.S_IEXEC)
    sbatch = bin_dir / "sbatch"
    monkeypatch.setattr(doctor, "find_sbatch", lambda: str(sbatch))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["doctor", "p"]) == 1
    out = capsys.readouterr().out.splitlines()
    results = [line for line in out if "sbatch --test-only" in line]
    assert {"profile.sbatch", "smoke-test.sbatch", "train.sbatch"} <= set(files)
    assert [line.split(":")[0:2] for line in results] == [
        ["problem" if name == "profile.sbatch" else "ok", f" jobs/{name}"] for name in files]
    assert "Invalid qos specification" in results[files.index("profile.sbatch")]
    assert "Job 4242 to start" in results[files.index("train.sbatch")]


def fake_slurm_tools(tmp_path, sbatch: str) -> str:
    """A bin directory with this sbatch script and the stand-in scontrol; sbatch's path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("sbatch", sbatch), ("scontrol", FAKE_SCONTROL)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return str(bin_dir / "sbatch")


def test_no_controller_is_a_note_not_a_problem(git_template, tmp_path, monkeypatch, capsys):
    """sbatch installed where no Slurm answers (a laptop, CI): the jobs are not to blame."""
    project = render(git_template, tmp_path / "p")
    sbatch = fake_slurm_tools(tmp_path, "#!/bin/bash\nexit 99\n")
    monkeypatch.setattr(doctor, "find_sbatch", lambda: sbatch)
    monkeypatch.setenv("FAKE_SLURM_STATE", "DOWN")
    assert cli.main(["doctor", str(project)]) == 0
    out = capsys.readouterr().out
    assert "note: sbatch is here but no Slurm controller answers (Slurmctld(primary) at localhost is DOWN)" in out
    assert "No problems found." in out


def test_doctor_counts_the_venvs_files(template, tmp_path, monkeypatch, capsys):
    """A venv is many small files on a parallel file system (file quota, metadata load
    [UG-stor]): doctor says how many, and says nothing without a venv."""
    project = render(template, tmp_path / "p")
    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)
    cli.main(["doctor", str(project)])
    assert "venv/" not in capsys.readouterr().out
    for i in range(3):
        package = project / "venv" / "lib" / f"pkg{i}"
        package.mkdir(parents=True)
        for name in ("__init__.py", "core.py"):
            (package / name).write_text("")
    (project / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    cli.main(["doctor", str(project)])
    out = capsys.readouterr().out
    assert "note: venv/ holds 7 files: every job start looks them up" in out
    assert '(README.md, "Create the venv")' in out and "lumi-scaffold doctor` reports how many files" in (project / "README.md").read_text()



def test_doctor_says_a_packed_venv_is_used_and_when_it_is_older_than_the_requirements(template, tmp_path, monkeypatch, capsys):
    import os

    project = render(template, tmp_path / "p")
    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)
    cli.main(["doctor", str(project)])
    assert "venv.sqsh" not in capsys.readouterr().out
    (project / "venv").mkdir()
    (project / "venv.sqsh").write_bytes(b"hsqs" + bytes(2**20))
    cli.main(["doctor", str(project)])
    out = capsys.readouterr().out
    assert ("note: venv.sqsh (1 MiB, one file) is the venv the jobs use, bound at /user-software (venv/ is not used "
            "while it exists)") in out and "changed after venv.sqsh" not in out
    later = (project / "venv.sqsh").stat().st_mtime + 60
    os.utime(project / "requirements.txt", (later, later))
    cli.main(["doctor", str(project)])
    assert ("note: requirements.txt changed after venv.sqsh was packed. Fix: bash scripts/setup-venv.sh --pack"
            in capsys.readouterr().out)


def login_node(tmp_path, monkeypatch) -> None:
    """sbatch and scontrol that answer as on a login node, where Slurm takes every job."""
    sbatch = fake_slurm_tools(tmp_path, "#!/bin/bash\necho 'sbatch: Job 4242 to start' >&2\n")
    monkeypatch.setattr(doctor, "find_sbatch", lambda: sbatch)


def test_on_a_login_node_doctor_checks_an_absolute_image_path(git_template, tmp_path, monkeypatch, capsys):
    """A fake login node whose /appl (a temporary root) lacks, then has, the image: doctor
    says the image is missing instead of "No problems found", and is content once it is there
    or SIF names another image."""
    monkeypatch.delenv("SIF", raising=False)
    appl = tmp_path / "appl/local/containers"
    image = appl / "mine.sif"
    project = render(git_template, tmp_path / "p", container="custom", container_path=str(image))
    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)  # a laptop: the site's paths are not here to check
    assert cli.main(["doctor", str(project)]) == 0 and "No problems found." in capsys.readouterr().out
    login_node(tmp_path, monkeypatch)
    assert cli.main(["doctor", str(project)]) == 1
    assert (f"problem: no image at {image}: put your image there, or lumi-scaffold update -d "
            "container_path=/path/to/your.sif, or give the image with SIF=/path/to/image.sif") in capsys.readouterr().out.splitlines()
    other = tmp_path / "other.sif"
    monkeypatch.setenv("SIF", str(other))
    assert cli.main(["doctor", str(project)]) == 1
    assert f"problem: no image at SIF={other}: give the path of an image file, or unset SIF" in capsys.readouterr().out
    other.write_bytes(b"")
    assert cli.main(["doctor", str(project)]) == 0 and "No problems found." in capsys.readouterr().out
    monkeypatch.delenv("SIF")
    appl.mkdir(parents=True)
    image.write_bytes(b"")
    assert cli.main(["doctor", str(project)]) == 0
    out = capsys.readouterr().out
    assert "No problems found." in out and "image" not in out


def test_on_a_login_node_doctor_names_a_site_image_that_is_gone(template, tmp_path, monkeypatch, capsys):
    """The catalogue's image (an /appl/... path this machine lacks, as a site's moved image
    is lacking on its login nodes) is a problem with the update that follows the catalogue."""
    monkeypatch.delenv("SIF", raising=False)
    project = render(template, tmp_path / "p")
    from lumi_scaffold.answers import read_answers

    container = read_answers(project)["plugin_data"]["container"]
    assert container["path"].startswith("/appl/") and not os.path.exists(container["path"])
    login_node(tmp_path, monkeypatch)
    assert cli.main(["doctor", str(project)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert (f"problem: no image at {container['path']}: the site no longer has {container['id']} there: lumi-scaffold "
            "update -d container=recommended (the image the catalogue installed now recommends; lumi-scaffold plugins "
            "lists the others), or give the image with SIF=/path/to/image.sif") in out
    assert "No problems found." not in out


def test_doctor_on_a_login_node_checks_that_an_observed_image_is_there(git_template, tmp_path, monkeypatch, capsys):
    """An observed image (seen in public job scripts, not announced) is proven on a login node:
    a problem with the way back to the recommended image while it is missing, a note once it
    is there. The image's path is moved under tmp_path, as a login node would have it."""
    cat = plugins.get_catalogue()
    sif = tmp_path / "appl" / "lumi-multitorch-full-u24r72f21m50t211-20260929_104918.sif"
    image = cat.containers["laif-multitorch-20260929"]
    monkeypatch.setitem(cat.containers, image.id, image.model_copy(update={"path": str(sif)}))
    project = render(git_template, tmp_path / "p", container=image.id)
    sbatch = fake_slurm_tools(tmp_path, FAKE_SBATCH)
    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)  # not a login node: nothing to prove there
    cli.main(["doctor", str(project)])
    out = capsys.readouterr().out
    assert "warning: Container image laif-multitorch-20260929 is observed, not announced" in out
    assert f"is not at {sif}" not in out
    monkeypatch.setattr(doctor, "find_sbatch", lambda: sbatch)
    assert cli.main(["doctor", str(project)]) == 1
    out = capsys.readouterr().out
    assert (f"problem: image laif-multitorch-20260929 (observed, not announced) is not at {sif} on this login node. "
            "Fix: lumi-scaffold update -d container=laif-multitorch-20260513 (the recommended image)") in out
    assert out.count("problem:") == 1, out  # not also the general image check's line
    sif.parent.mkdir()
    sif.write_bytes(b"")
    cli.main(["doctor", str(project)])
    out = capsys.readouterr().out
    assert f"note: image laif-multitorch-20260929 (observed, not announced) is at {sif} on this login node" in out
    assert "problem: image" not in out


def test_doctor_proves_no_announced_image(template, tmp_path):
    project = render(template, tmp_path / "p")
    data = validate_plugin_data(read_answers(project)["plugin_data"])
    assert doctor.observed_image_check(data, plugins.get_catalogue()) is None


FIXTURES = Path(__file__).parent / "fixtures"
GDR = "Known issue [LAIF-I30, AIG-PR97] affects NCCL_NET_GDR_LEVEL=PHB (image_env in scripts/values.sh"
# What the notices said of each older project's data when they read it as a dict (0.3.1).
OLD_NOTICES = {
    "plugin_data-v0.1.json": [GDR],
    "plugin_data-v0.2.json": [GDR],
    "answers-0.3.0/jax-1gpu.yml": ["Container image lust-jax-0.4.28 is legacy. Move to lust-jax-0.4.35 (",
                                   "JAX (jax.distributed) on LUMI has only images of a legacy generation (legacy-sif"],
    "answers-0.3.0/pytorch-2node.yml": [],
    "answers-0.3.0/pytorch-legacy-prestage-rocprof.yml": [
        "Container image lust-pytorch-2.7.1 is legacy. Move to laif-multitorch-20260513 ("],
    "answers-0.3.0/pytorch-torchrun-cotainr-smallg.yml": [
        "torchrun's workers get no CPU binding with cotainr: the image is not known to have"],
}


@pytest.mark.parametrize("name", OLD_NOTICES)
def test_older_projects_data_gives_the_same_notices_through_the_model(name):
    """Data recorded by 0.1 and 0.2 (schema 1, without the computed job fields) and by 0.3.0
    (schema 2: the model reads the shapes and the binding from the recorded options) is read
    through the validated model, with the notices the dict readers gave: the env setting's
    known issue, legacy images, a legacy-only framework, torchrun without binding."""
    recorded = yaml.safe_load((FIXTURES / name).read_text())
    lines = notices(validate_plugin_data(recorded.get("plugin_data", recorded)), plugins.get_catalogue())
    assert [line[:len(start)] for line, start in zip(lines, OLD_NOTICES[name])] == OLD_NOTICES[name]
    assert len(lines) == len(OLD_NOTICES[name]), lines


def test_recorded_data_that_does_not_validate_is_one_line_in_doctor(template, tmp_path, monkeypatch, capsys):
    """plugin_data edited by hand (no job has 0 tasks): doctor says so in one line naming the
    field, its value and the fix, runs its other checks, and never says "No problems found";
    explain refuses it the same way."""
    project = render(template, tmp_path / "p")
    path = project / ".copier-answers.yml"
    answers = yaml.safe_load(path.read_text())
    answers["plugin_data"]["job"]["tasks"] = 0
    path.write_text(yaml.safe_dump(answers))
    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)
    assert cli.main(["doctor", str(project)]) == 0
    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if "plugin_data.job.tasks" in line]
    assert said == [f"warning: {path}: plugin_data.job.tasks=0: Input should be greater than or equal to 1. Fix: "
                    "plugin_data is computed by lumi-scaffold from the installed plugins: do not give it with --data or "
                    "edit it in .copier-answers.yml (restore that file from git, then run lumi-scaffold update)."], out
    assert "No problems found." not in out and "note: no sbatch on PATH" in out
    assert cli.main(["explain", str(project)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "plugin_data.job.tasks=0" in err and "Traceback" not in err


def test_doctor_names_a_library_file_the_user_changed(template, tmp_path, monkeypatch, capsys):
    """scripts/lib/ (and the commands in scripts/) are the template's: SHA256SUMS holds what
    it wrote, for the files this project got; doctor names a changed or removed one with the
    fix, and says nothing of an untouched project, nor of the user's own files."""
    project = render(template, tmp_path / "p", nodes=2)
    sums = (project / "scripts/lib/SHA256SUMS").read_text().splitlines()
    listed = {line.split("  ", 1)[1] for line in sums}
    assert {"scripts/lib/job.sh", "scripts/lib/run.sh", "scripts/lib/python/runlog.py", "scripts/setup-venv.sh",
            "scripts/sweep.py", "scripts/lib/preflight.sh"} <= listed, listed
    assert not {"scripts/values.sh", "jobs/train.sbatch", "scripts/lib/prestage.sh"} & listed  # generated, the user's, not this project's
    assert doctor.library_changes(project) == []
    (project / "jobs/train.sbatch").write_text((project / "jobs/train.sbatch").read_text() + "# the user's\n")
    (project / "scripts/lib/job.sh").write_text((project / "scripts/lib/job.sh").read_text() + "# a change\n")
    (project / "scripts/sweep.py").unlink()
    found = doctor.library_changes(project)
    assert [line.split(":")[0] for line in found] == ["scripts/lib/job.sh was changed", "scripts/sweep.py is gone"], found
    assert "Fix: make the change in the job file (jobs/) or scripts/values.sh" in found[0]
    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)
    cli.main(["doctor", str(project)])
    assert "warning: scripts/lib/job.sh was changed: it is the template's library" in capsys.readouterr().out
