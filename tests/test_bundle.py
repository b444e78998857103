"""`lumi-scaffold new`/`update` from the template bundled in the installed package
(lumi_scaffold/bundle.py), in-process: the bundle is made from a temporary template
repository, as setup.py makes it from the checkout. The same with built wheels in a fresh
venv: tests/test_install.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lumi_scaffold import bundle, cli, settings

from .helpers import DEFAULTS, template_copy
from .wheels import commit, git


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")  # no network: git may read local files only
    monkeypatch.delenv(settings.TEMPLATE, raising=False)
    return home


class Package:
    """A stand-in for the installed package's bundle, made like setup.py makes it."""

    def __init__(self, tmp_path: Path, monkeypatch) -> None:
        self.repo = template_copy(tmp_path / "template")
        git(self.repo, "init", "-q")
        self.bundle = tmp_path / "site-packages" / "lumi_scaffold" / "_template.bundle"
        self.bundle.parent.mkdir(parents=True)
        monkeypatch.setattr(bundle, "PACKAGE_BUNDLE", self.bundle)

    def release(self, message: str, tag: str | None = None) -> None:
        git(self.repo, "add", "-A")
        commit(self.repo, message)
        if tag:
            git(self.repo, "tag", tag)
        git(self.repo, "bundle", "create", str(self.bundle), "HEAD", "--tags")


@pytest.fixture
def package(tmp_path, monkeypatch, home) -> Package:
    pkg = Package(tmp_path, monkeypatch)
    pkg.release("0.3.0", "v0.3.0")
    return pkg


def new(dest: Path, *args: str) -> int:
    data = [arg for key, value in DEFAULTS.items() for arg in ("-d", f"{key}={value}")]
    return cli.main(["new", str(dest), "--defaults", "-q", "--template", bundle.SOURCE, *data, *args])


def answers(project: Path) -> dict[str, str]:
    lines = (project / ".copier-answers.yml").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.startswith("_"))


def test_outside_a_checkout_the_default_template_is_the_bundled_one(monkeypatch, tmp_path, home):
    monkeypatch.setattr(cli, "__file__", str(tmp_path / "site-packages" / "lumi_scaffold" / "cli.py"))
    assert cli.default_template() == bundle.SOURCE == "~/.cache/lumi-scaffold/template.bundle"
    monkeypatch.setenv(settings.TEMPLATE, "gh:someone/fork")
    assert cli.default_template() == "gh:someone/fork"


def test_new_renders_the_package_template_and_records_a_source_everyone_can_use(package, tmp_path, home):
    assert new(tmp_path / "p") == 0
    assert answers(tmp_path / "p") == {"_commit": "v0.3.0", "_src_path": "~/.cache/lumi-scaffold/template.bundle"}
    assert (home / ".cache/lumi-scaffold/template.bundle").read_bytes() == package.bundle.read_bytes()
    assert (tmp_path / "p/jobs/train.sbatch").is_file()


def test_plain_copier_copies_from_the_bundle_lumi_scaffold_template_writes(package, tmp_path, home, capsys):
    """README's plain-Copier path: `lumi-scaffold template` writes the installed package's
    template where the projects record it, and `copier copy --trust '~/...'` renders from it
    and records the same ~ path (Copier expands it; everyone's own cache)."""
    assert cli.main(["template"]) == 0
    assert capsys.readouterr().out == "~/.cache/lumi-scaffold/template.bundle\n"
    assert (home / ".cache/lumi-scaffold/template.bundle").read_bytes() == package.bundle.read_bytes()
    data = [arg for key, value in DEFAULTS.items() for arg in ("-d", f"{key}={value}")]
    copied = subprocess.run([sys.executable, "-m", "copier", "copy", "--trust", "--defaults", "--quiet", *data,
                             "~/.cache/lumi-scaffold/template.bundle", str(tmp_path / "p")],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert copied.returncode == 0, copied.stderr
    assert answers(tmp_path / "p") == {"_commit": "v0.3.0", "_src_path": "~/.cache/lumi-scaffold/template.bundle"}
    assert (tmp_path / "p/jobs/train.sbatch").is_file()


def test_update_after_an_upgrade_brings_the_release_and_keeps_edits(package, tmp_path, home):
    p = tmp_path / "p"
    assert new(p) == 0
    git(p, "init", "-q")
    git(p, "add", "-A")
    commit(p, "generated")
    run = p / "scripts/lib/run.sh"
    run.write_text(run.read_text().replace('exec "$@"', 'export OURS=1\nexec "$@"'))
    git(p, "add", "-A")
    commit(p, "our edit")
    readme = package.repo / "project-templates/_shared/readme/interactive.md.jinja"
    readme.write_text(readme.read_text().replace("## Interactive work", "## Interactive work (0.3.1)"))
    package.release("0.3.1", "v0.3.1")  # the upgraded package's bundle

    assert cli.main(["update", str(p), "-q"]) == 0
    assert "export OURS=1\nexec" in run.read_text()
    assert "## Interactive work (0.3.1)" in (p / "README.md").read_text()
    assert answers(p) == {"_commit": "v0.3.1", "_src_path": "~/.cache/lumi-scaffold/template.bundle"}
    # untagged package builds (from main between releases) update from commits
    readme.write_text(readme.read_text().replace("(0.3.1)", "(main)"))
    package.release("after 0.3.1")
    git(p, "add", "-A")
    commit(p, "updated to 0.3.1")
    assert cli.main(["update", str(p), "-q"]) == 0
    assert "## Interactive work (main)" in (p / "README.md").read_text()
    assert answers(p)["_commit"] == "v0.3.1-1-g" + git(package.repo, "rev-parse", "--short=7", "HEAD").strip()


def test_an_older_package_than_the_project_says_upgrade(package, tmp_path, home, capsys):
    old = package.bundle.read_bytes()
    package.release("0.3.1", "v0.3.1")
    p = tmp_path / "p"
    assert new(p) == 0
    git(p, "init", "-q")
    git(p, "add", "-A")
    commit(p, "generated")
    package.bundle.write_bytes(old)  # an older lumi-scaffold runs the update
    capsys.readouterr()
    assert cli.main(["update", str(p), "-q"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "older than the one that made this project. Fix: pipx upgrade lumi-scaffold" in err


def test_doctor_says_when_the_installed_template_is_newer_as_copier_check_update_does(package, tmp_path, home, capsys,
                                                                                      monkeypatch):
    """A project made by 0.3.0; lumi-scaffold upgraded to 0.3.1: doctor says an update is
    available with the command (not a problem: exit status 0); after the update, or with the
    project's own version installed, it says nothing of it."""
    from lumi_scaffold import doctor

    monkeypatch.setattr(doctor, "find_sbatch", lambda: None)
    p = tmp_path / "p"
    assert new(p) == 0
    git(p, "init", "-q")
    git(p, "add", "-A")
    commit(p, "generated")
    capsys.readouterr()
    assert cli.main(["doctor", str(p)]) == 0
    assert "update is available" not in capsys.readouterr().out
    readme = package.repo / "project-templates/_shared/readme/interactive.md.jinja"
    readme.write_text(readme.read_text().replace("## Interactive work", "## Interactive work (0.3.1)"))
    package.release("0.3.1", "v0.3.1")
    assert cli.main(["doctor", str(p)]) == 0
    from lumi_scaffold import __version__

    assert (f"note: an update is available: this project was made from template v0.3.0, and lumi-scaffold {__version__} "
            "installed here has v0.3.1 (its CHANGELOG says what that brings). Fix: lumi-scaffold update --pretend to "
            "see it, then lumi-scaffold update") in capsys.readouterr().out.splitlines()
    assert cli.main(["update", str(p), "-q"]) == 0
    git(p, "add", "-A")
    commit(p, "updated")
    capsys.readouterr()
    assert cli.main(["doctor", str(p)]) == 0
    assert "update is available" not in capsys.readouterr().out


def test_a_missing_bundle_is_one_line(tmp_path, monkeypatch, home, capsys):
    monkeypatch.setattr(bundle, "PACKAGE_BUNDLE", tmp_path / "nowhere" / "_template.bundle")
    monkeypatch.setattr(bundle, "_CHECKOUT", tmp_path)  # not a checkout either
    assert new(tmp_path / "p") == 1
    err = capsys.readouterr().err
    assert err.startswith("lumi-scaffold: error: this lumi-scaffold installation has no template bundle")
    assert err.count("\n") == 1 and "pipx reinstall lumi-scaffold" in err
    assert not (tmp_path / "p").exists()


def test_an_unwritable_cache_is_one_line(package, tmp_path, home, capsys):
    (home / ".cache").write_text("a file where the cache directory goes\n")
    assert new(tmp_path / "p") == 1
    err = capsys.readouterr().err
    assert err.startswith("lumi-scaffold: error: cannot write the template bundle to ") and err.count("\n") == 1


def test_a_checkout_without_a_built_bundle_bundles_its_own_history(tmp_path, monkeypatch, home):
    # an editable install updating a project made by a wheel: the checkout's history serves
    monkeypatch.setattr(bundle, "PACKAGE_BUNDLE", tmp_path / "nowhere" / "_template.bundle")
    target = bundle.refresh()
    heads = git(tmp_path, "bundle", "list-heads", str(target))
    assert git(Path(bundle.__file__).parent.parent, "rev-parse", "HEAD").strip() + " HEAD" in heads.splitlines()


def test_the_cache_is_replaced_atomically_and_only_when_it_changed(package, home):
    target = bundle.refresh()
    stamp = target.stat().st_mtime_ns
    os.utime(target, ns=(stamp - 10**9, stamp - 10**9))
    assert bundle.refresh() == target and target.stat().st_mtime_ns == stamp - 10**9  # unchanged: not rewritten
    package.release("next", "v0.3.1")
    bundle.refresh()
    assert target.read_bytes() == package.bundle.read_bytes()
    assert [p.name for p in target.parent.iterdir()] == ["template.bundle"]  # no temp files left


def test_without_git_new_says_so(package, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert new(tmp_path / "p") == 1
    err = capsys.readouterr().err
    assert "git is not installed" in err and err.count("\n") == 1
