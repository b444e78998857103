"""copier update: new container paths arrive, the group's own edits survive.

The template is a temporary git repository tagged like releases; the catalogue of each
"era" is the real one with changes applied (the same mechanism serves built-in and
third-party plugin data: both arrive through the catalogue).
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import copier
import pytest
import yaml

from lumi_scaffold import cli, plugins
from lumi_scaffold.models import ContainerImage
from lumi_scaffold.testing import render_project

from .helpers import DEFAULTS, template_copy, values

LAIF_NEW = "/appl/local/laifs/containers/lumi-multitorch-u24r70f21m50t211-20261101_000000/lumi-multitorch-full-u24r70f21m50t211-20261101_000000.sif"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def commit(repo: Path, message: str, tag: str | None = None) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    if tag:
        git(repo, "tag", tag)


@pytest.fixture
def template_repo(tmp_path) -> Path:
    repo = template_copy(tmp_path / "template")
    git(repo, "init", "-q")
    commit(repo, "v1", "v1.0.0")
    return repo


@pytest.fixture
def era(monkeypatch):
    """Switch the catalogue the template sees: 'jan2025' (legacy image recommended),
    'may2026' (no known issues yet: NCCL_NET_GDR_LEVEL on every image), 'now' (the built-in
    data), 'nov2026' (a newer LAIF image became recommended)."""
    real = plugins.get_catalogue()

    def switch(name: str):
        cat = plugins.Catalogue(**{**vars(real), "containers": dict(real.containers), "sites": dict(real.sites)})
        if name == "may2026":  # before the known issues: one env list for every LUMI image
            lumi = cat.sites["lumi"]
            cat.sites["lumi"] = lumi.model_copy(update={"env": [e.model_copy(update={"known_issues": []}) for e in lumi.env]})
            for image in [i for i in cat.containers.values() if i.known_issues]:
                cat.containers[image.id] = image.model_copy(update={"known_issues": []})
        elif name == "jan2025":
            for image_id in [i for i in cat.containers if i.startswith("laif")]:
                del cat.containers[image_id]
            old = cat.containers["lust-pytorch-2.7.1"]
            cat.containers[old.id] = old.model_copy(update={"status": "recommended", "replaced_by": None})
        elif name == "nov2026":
            current = cat.containers["laif-multitorch-20260513"]
            cat.containers[current.id] = current.model_copy(update={"status": "legacy", "replaced_by": "laif-multitorch-20261101"})
            cat.containers["laif-multitorch-20261101"] = ContainerImage(
                id="laif-multitorch-20261101", site="lumi", framework="pytorch", title="LAIF torch 2.11 (test)",
                path=LAIF_NEW, generation="laif", status="recommended", versions={"torch": "2.11.*"})
        monkeypatch.setattr(plugins, "get_catalogue", lambda: cat)
        return cat

    return switch


def copy_project(template: Path, dest: Path, ref: str = "v1.0.0", **answers) -> Path:
    render_project(template, dest, {**DEFAULTS, **answers}, vcs_ref=ref)
    git(dest, "init", "-q")
    commit(dest, "generated")
    return dest


def update(project: Path, *args: str) -> int:
    return cli.main(["update", str(project), "-q", *args])


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_showcase_legacy_image_moves_to_laif_and_edits_survive(template_repo, tmp_path, era):
    era("jan2025")
    p = copy_project(template_repo, tmp_path / "p", nodes=2)
    run = p / "scripts/lib/run.sh"
    assert values(p)["activate_variable"] == "WITH_CONDA" and "/opt/cray" in values(p)["binds"]
    # The group's own edits.
    replace_in(run, 'exec "$@"', 'export OUR_LAB_SETTING=1   # ours\nexec "$@"')
    replace_in(p / "jobs/train.sbatch", "#SBATCH --time=01:00:00", "#SBATCH --time=12:00:00")
    replace_in(p / "src/demo/train.py", "nn.Linear(64, classes)", "nn.Linear(64, classes)  # our model head")
    commit(p, "our edits")
    # A new template release and the January 2026 move of the catalogue.
    replace_in(template_repo / "project-templates/_shared/readme/interactive.md.jinja", "## Interactive work", "## Interactive work (v2)")
    commit(template_repo, "v2", "v2.0.0")
    era("now")

    assert update(p) == 0
    v = values(p)
    assert v["activate_variable"] == "" and "export OUR_LAB_SETTING=1   # ours" in run.read_text()
    assert "load lumi-aif-singularity-bindings" in v["modules"]
    assert "lumi-multitorch-u24r70f21m50t210-20260513_121430" in v["image"]
    assert "sif-images" not in (p / "scripts/values.sh").read_text()
    assert v["binds"] == "/pfs" and v["container_command"] == ["singularity", "run"]
    assert (p / "constraints.txt").read_text().splitlines()[-1] == "# The catalogue says it ships: torch 2.10.* (exact version UNCONFIRMED)."
    assert "#SBATCH --time=12:00:00" in (p / "jobs/train.sbatch").read_text()
    assert "# our model head" in (p / "src/demo/train.py").read_text()
    assert "## Interactive work (v2)" in (p / "README.md").read_text()
    assert "_commit: v2.0.0" in (p / ".copier-answers.yml").read_text()
    assert "<<<<<<<" not in "".join(f.read_text() for f in p.rglob("*") if f.is_file() and ".git" not in f.parts)


def test_known_issue_way_out_drops_gdr_level_and_moves_image_keeping_edits(template_repo, tmp_path, era, capsys):
    """A 2-node project made in May 2026 on 20260415 with NCCL_NET_GDR_LEVEL=PHB: doctor names
    both known issues [LAIF-I28, LAIF-I30], and the update it names brings the project to
    20260513 without the setting, keeping the group's edits."""
    era("may2026")
    p = copy_project(template_repo, tmp_path / "p", nodes=2, container="laif-multitorch-20260415")
    run = p / "scripts/lib/run.sh"
    assert "NCCL_NET_GDR_LEVEL=PHB" in values(p)["image_env"]
    replace_in(run, 'exec "$@"', 'export OUR_LAB_SETTING=1   # ours\nexec "$@"')
    replace_in(p / "src/demo/train.py", "nn.Linear(64, classes)", "nn.Linear(64, classes)  # our model head")
    commit(p, "our edits")
    era("now")
    capsys.readouterr()
    assert cli.main(["doctor", str(p)]) == 0
    out = capsys.readouterr().out
    assert "note: site lumi: data reviewed 2026-11-24" in out
    assert ("warning: Known issue [LAIF-I28] affects image laif-multitorch-20260415 on 2 nodes: multi-node "
            "init_process_group hangs") in out and "Fix: lumi-scaffold update -d container=laif-multitorch-20260513" in out
    assert ("Known issue [LAIF-I30, AIG-PR97] affects NCCL_NET_GDR_LEVEL=PHB (image_env in scripts/values.sh; "
            "scripts/lib/run.sh before 0.4) with a laif image") in out
    assert cli.main(["explain", str(p)]) == 0
    assert "warning: Known issue [LAIF-I28]" in capsys.readouterr().out

    assert update(p, "-d", "container=laif-multitorch-20260513") == 0
    v, text = values(p), (p / "scripts/values.sh").read_text()
    assert not [e for e in v["image_env"] if e.startswith("NCCL_NET_GDR_LEVEL=")]
    assert "# (not set, a known issue with this image) NCCL_NET_GDR_LEVEL: exporting it (PHB or SYS) can make torch.distributed jobs hang" in text
    assert "export OUR_LAB_SETTING=1   # ours" in run.read_text() and "NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3" in v["image_env"]
    assert "# our model head" in (p / "src/demo/train.py").read_text()
    assert "lumi-multitorch-u24r70f21m50t210-20260513_121430" in v["image"]
    assert "<<<<<<<" not in "".join(f.read_text() for f in p.rglob("*") if f.is_file() and ".git" not in f.parts)
    commit(p, "update")
    capsys.readouterr()
    assert cli.main(["doctor", str(p)]) == 0
    assert "Known issue" not in capsys.readouterr().out


def test_update_with_nothing_new_changes_nothing(template_repo, tmp_path, era):
    era("now")
    p = copy_project(template_repo, tmp_path / "p", prestage=True, profiler="rocprofv3")
    assert update(p) == 0
    assert git(p, "status", "--porcelain") == ""
    commit(template_repo, "no template change", "v1.0.1")
    assert update(p) == 0
    assert git(p, "status", "--porcelain").split() == ["M", ".copier-answers.yml"]  # only _commit moves


def test_catalogue_change_arrives_without_a_template_release(template_repo, tmp_path, era):
    era("now")
    p = copy_project(template_repo, tmp_path / "p")
    era("nov2026")
    assert update(p) == 0
    assert values(p)["image"] == LAIF_NEW
    assert "it ships: torch 2.11.* (exact version UNCONFIRMED)" in (p / "constraints.txt").read_text()


def test_pinned_image_stays_and_is_reported(template_repo, tmp_path, era, capsys):
    era("now")
    p = copy_project(template_repo, tmp_path / "p", container="laif-multitorch-20260513")
    era("nov2026")
    assert update(p) == 0
    assert LAIF_NEW not in (p / "scripts/values.sh").read_text()
    # Scripts untouched; the README and the recorded status now say the image is legacy.
    assert git(p, "status", "--porcelain").split() == ["M", ".copier-answers.yml", "M", "README.md"]
    assert "**This image is legacy**: move with `lumi-scaffold update -d container=laif-multitorch-20261101`" in (p / "README.md").read_text()
    err = capsys.readouterr().err
    assert "Container image laif-multitorch-20260513 is legacy. Move to laif-multitorch-20261101" in err
    assert "-d container=laif-multitorch-20261101" in err


def test_custom_image_path_is_never_touched(template_repo, tmp_path, era):
    era("now")
    p = copy_project(template_repo, tmp_path / "p", container="custom", container_path="/project/project_465000000/our.sif")
    era("nov2026")
    assert update(p) == 0
    assert git(p, "status", "--porcelain") == ""
    assert values(p)["image"] == "/project/project_465000000/our.sif"


def test_conflicting_edit_leaves_markers_and_fails(template_repo, tmp_path, era, capsys):
    era("now")
    p = copy_project(template_repo, tmp_path / "p")
    # The image line of values.sh edited by hand (SIF=... from the environment is the way the
    # README gives): the site's move of the image conflicts with it.
    vals = p / "scripts/values.sh"
    replace_in(vals, "image='/appl/local/laifs/containers/", "image='/project/project_465000000/copy-of/")
    commit(p, "our own copy of the image")
    era("nov2026")
    assert update(p) == 1
    err = capsys.readouterr().err
    assert "1 file(s) conflict with your edits:\n  scripts/values.sh" in err and "Fix:" in err
    text = vals.read_text()
    assert "<<<<<<< before updating" in text and ">>>>>>> after updating" in text and LAIF_NEW in text


def test_dirty_project_is_refused_with_a_clear_message(template_repo, tmp_path, era, capsys):
    era("now")
    p = copy_project(template_repo, tmp_path / "p")
    (p / "notes.txt").write_text("not committed\n")
    assert update(p) == 1
    assert "has uncommitted changes (notes.txt). Fix: commit or stash them, then update." in capsys.readouterr().err
    shutil.rmtree(p / ".git")
    assert update(p) == 1
    assert "is not under git" in capsys.readouterr().err


def test_pretend_shows_the_diff_and_writes_nothing(template_repo, tmp_path, era, capsys):
    era("now")
    p = copy_project(template_repo, tmp_path / "p")
    before = (p / "scripts/values.sh").read_text()
    era("nov2026")
    assert cli.main(["update", str(p), "--pretend"]) == 0
    out = capsys.readouterr().out
    assert f"+image='{LAIF_NEW}'" in out and "diff --git a/scripts/values.sh" in out
    assert (p / "scripts/values.sh").read_text() == before and git(p, "status", "--porcelain") == ""


def test_doctor_reports_legacy_image_and_plugin_version_skew(template_repo, tmp_path, era, capsys):
    era("now")
    p = copy_project(template_repo, tmp_path / "p", container="lust-pytorch-2.7.1")
    replace_in(p / ".copier-answers.yml", "        lumi: builtin", "        lumi: 0.9.0")
    assert cli.main(["doctor", str(p)]) == 0
    out = capsys.readouterr().out
    assert "warning: Container image lust-pytorch-2.7.1 is legacy. Move to laif-multitorch-20260513" in out
    assert "warning: plugin lumi was 0.9.0 when this project was made, now builtin" in out


NO_TAGS = "No git tags found in template; using HEAD as ref"


def test_a_relative_template_path_is_refused_in_one_line(template_repo, tmp_path, era, capsys):
    era("now")
    p = copy_project(template_repo, tmp_path / "p")
    replace_in(p / ".copier-answers.yml", f"_src_path: {template_repo}", "_src_path: .")
    commit(p, "what `copier copy .` records")
    assert update(p) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "records the template as the relative path _src_path: ., which Copier" in err


@pytest.mark.slow
def test_readme_sample_project_updates_from_commits_and_warns_once(tmp_path, monkeypatch, capsys):
    """The README's first command, in a clone without tags (tags do not travel with the
    repository until scripts/release makes them); `lumi-scaffold update` then moves the
    sample project along the template's commits, with Copier's warning once (not thrice)."""
    from .helpers import REPO
    from .wheels import source_clone

    clone = source_clone(tmp_path / "lumi-scaffold")
    assert git(clone, "tag") == ""
    line = next(line for line in (REPO / "README.md").read_text().splitlines() if "copier copy" in line)
    subprocess.run(["bash", "-c", line.split("&&", 1)[1]], cwd=clone, check=True, capture_output=True)
    sample = clone / "sample-project"
    assert f"_src_path: {clone}\n" in (sample / ".copier-answers.yml").read_text()
    git(sample, "init", "-q")
    commit(sample, "generated")
    replace_in(clone / "project-templates/_shared/readme/interactive.md.jinja", "## Interactive work", "## Interactive work (next)")
    commit(clone, "a template change, untagged")
    monkeypatch.chdir(tmp_path)  # not where the template is

    capsys.readouterr()
    assert update(sample) == 0
    assert capsys.readouterr().err.count(NO_TAGS) == 1
    assert "## Interactive work (next)" in (sample / "README.md").read_text()
    # Read as YAML: a short hash of digits only is written quoted ('4703667').
    recorded = yaml.safe_load((sample / ".copier-answers.yml").read_text())["_commit"]
    assert str(recorded) == git(clone, "rev-parse", "--short", "HEAD").strip()

    # plain `copier update` works from commits too (it prints the warning itself, per render)
    commit(sample, "updated")
    replace_in(clone / "project-templates/_shared/readme/interactive.md.jinja", "(next)", "(after)")
    commit(clone, "another template change")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        copier.run_update(str(sample), defaults=True, overwrite=True, unsafe=True, quiet=True, settings=copier.Settings())
    assert "## Interactive work (after)" in (sample / "README.md").read_text()
