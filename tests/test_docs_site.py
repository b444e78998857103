"""The documentation site (mkdocs.yml, docs/): it builds in strict mode, its reference pages
are generated from the code, a broken link fails the build."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lumi_scaffold import cli, home_url, hookspecs, models, plugin_data, reference

from lumi_scaffold.questions import QUESTIONS as REGISTRY

from .helpers import REPO, load_module

lumi_docs = load_module("lumi_docs", REPO / "docs" / "_hooks" / "lumi_docs.py")

QUESTIONS = list(REGISTRY)


def build(root: Path, site: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of the checkout at ``root``, with this checkout's package."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"),
                           "-d", str(site)], capture_output=True, text=True, env=env, timeout=300)


def checkout_copy(tmp_path: Path) -> Path:
    """The repository with docs/ and mkdocs.yml copied (to break them) and the rest linked."""
    root = tmp_path / "repo"
    root.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in (".git", "docs", "mkdocs.yml", "site"):
            (root / entry.name).symlink_to(entry)
    shutil.copytree(REPO / "docs", root / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "mkdocs.yml", root / "mkdocs.yml")
    return root


@pytest.mark.slow
def test_site_builds_strictly_with_a_page_per_question_model_and_hook(tmp_path):
    result = build(REPO, tmp_path / "site")
    assert result.returncode == 0, result.stderr
    site = tmp_path / "site"
    questions = (site / "reference" / "questions" / "index.html").read_text()
    for name in QUESTIONS:
        assert f'id="{name}"' in questions, name
    reference = (site / "reference" / "models" / "index.html").read_text()
    for name in models.__all__:
        assert f'id="{name.lower()}"' in reference, name
    hooks = (site / "reference" / "hookspecs" / "index.html").read_text()
    for name in vars(hookspecs):
        if name.startswith("register_"):
            assert f'id="{name}"' in hooks, name
    home = (site / "index.html").read_text()
    assert (f'href="{home_url()}"' in home) if home_url() else ("lumi-scaffold/blob/" not in home)
    for page in ("install", "first-project", "updating", "catalogue", "hooks", "performance", "sources",
                 "plugins", "reference/plugin-data", "glossary"):
        assert (site / page / "index.html").is_file(), page


BREAKS = {  # what is broken: the page, what is appended to it, what the warning names
    "missing page": ("docs/install.md", "\nSee [the missing page](no-such-page.md).\n", "no-such-page.md"),
    "missing anchor": ("docs/install.md", "\nSee [a section](updating.md#no-such-section).\n", "#no-such-section"),
    "missing repository file": ("docs/updating.md", "\nSee [the notes](../NO-SUCH-FILE.md).\n", "NO-SUCH-FILE.md"),
    "page not in the nav": ("docs/orphan.md", "# Orphan\n", "orphan.md"),
}


@pytest.mark.slow
def test_a_broken_link_or_an_orphan_page_fails_the_build(tmp_path):
    """Each break in one build (a strict build reports every warning, then fails): each is
    named (the intact site builds: the test above)."""
    root = checkout_copy(tmp_path)
    for where, text, _ in BREAKS.values():
        page = root / where
        page.write_text((page.read_text() if page.exists() else "") + text)
    result = build(root, tmp_path / "site")
    assert result.returncode != 0
    warned = result.stderr[result.stderr.index("WARNING"):] if "WARNING" in result.stderr else ""
    assert [name for name, (_, _, named) in BREAKS.items() if named not in warned] == [], result.stderr


# ---------------------------------------------------------------- the generated pages


def test_questions_page_is_generated_from_the_registry(monkeypatch):
    from lumi_scaffold import questions

    added = questions.Question("new_question", "A question added to the registry only", kind="int", literal=7)
    monkeypatch.setattr(questions, "QUESTIONS", {**questions.QUESTIONS, added.name: added})
    page = reference.questions_page()
    assert re.findall(r"^## (\w+)$", page, re.M) == [*QUESTIONS, "new_question"]
    section = page.split("## new_question\n", 1)[1]
    assert "A question added to the registry only" in section and "`int`" in section and "`-d new_question=7`" in section


def test_questions_page_shows_the_built_in_choices_and_defaults():
    page = reference.questions_page()
    sections = dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", page, re.M | re.S))
    assert "- `lumi`: LUMI" in sections["site"]
    assert "with the built-in plugins: `pytorch`" in sections["framework"]
    assert "- `jax`:" in sections["framework"]
    assert "when `container == 'custom'`" in sections["container_path"]
    assert "never (computed)" in sections["plugin_data"]


def test_models_page_has_every_field_with_its_description():
    page = reference.models_page()
    sections = dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", page, re.M | re.S))
    assert set(models.__all__) <= set(sections)
    for name in models.__all__:
        model = getattr(models, name)
        for field_name, field in model.model_fields.items():
            row = next((line for line in sections[name].splitlines() if line.startswith(f"| `{field_name}` |")), None)
            assert row is not None, f"{name}.{field_name}"
            assert " ".join((field.description or "").split()).replace("|", "\\|") in row
    assert "list of [Partition](#partition)" in sections["Site"]


def test_plugin_data_page_links_catalogue_parts_to_the_models_page():
    page = reference.plugin_data_page()
    assert page.index("## PluginData") < page.index("## SiteFacts")
    assert "[RcclCheck](models.md#rcclcheck)" in page
    for field in plugin_data.PluginData.model_fields.values():
        if field.description:
            assert " ".join(field.description.split()) in page


def test_hookspecs_page_has_each_spec_with_its_docstring():
    page = reference.hookspecs_page()
    specs = [f for name, f in vars(hookspecs).items() if name.startswith("register_") and callable(f)]
    assert specs
    for spec_ in specs:
        args = ", ".join(inspect.signature(spec_).parameters)
        assert f"## {spec_.__name__}\n" in page and f"def {spec_.__name__}({args}): ..." in page
        assert reference._md(spec_.__doc__) in page


HOME = "https://example.org/lumi/lumi-scaffold"


def test_links_out_of_the_site_point_at_the_repository_and_missing_ones_are_reported(monkeypatch):
    monkeypatch.setattr(lumi_docs, "home_url", lambda: HOME)
    docs = REPO / "docs"
    text = ("[log](../CHANGELOG.md#030) [dir](../plugins/lumi-site-local/) [page](hooks.md#x) "
            "[web](https://example.org/a.md) [gone](../NO-SUCH-FILE.md)")
    out, missing = lumi_docs.repo_links(text, docs / "updating.md", docs)
    assert f"[log]({HOME}/blob/main/CHANGELOG.md#030)" in out
    assert f"[dir]({HOME}/tree/main/plugins/lumi-site-local)" in out
    assert "[page](hooks.md#x)" in out and "[web](https://example.org/a.md)" in out  # MkDocs's checks; none
    assert missing == ["../NO-SUCH-FILE.md"] and "[gone](../NO-SUCH-FILE.md)" in out
    # From a page one folder down the same links point into docs/: a page (MkDocs reports it
    # missing) and a folder that is not there.
    out, missing = lumi_docs.repo_links(text, docs / "plugins" / "index.md", docs)
    assert "[log](../CHANGELOG.md#030)" in out and missing == ["../plugins/lumi-site-local/"]
    # While the package metadata names no home: the text and the file's path, no link.
    monkeypatch.setattr(lumi_docs, "home_url", lambda: "")
    out, missing = lumi_docs.repo_links(text, docs / "updating.md", docs)
    assert out.startswith("log (`CHANGELOG.md` in the lumi-scaffold repository) "
                          "dir (`plugins/lumi-site-local` in the lumi-scaffold repository) [page](hooks.md#x)"), out
    assert missing == ["../NO-SUCH-FILE.md"]


def test_the_sites_repository_link_is_the_home_url_of_the_package_metadata(monkeypatch):
    class Config:
        repo_url = repo_name = edit_uri = None

    monkeypatch.setattr(lumi_docs, "home_url", lambda: HOME)
    config = lumi_docs.on_config(Config())
    assert (config.repo_url, config.repo_name, config.edit_uri) == (HOME, "lumi/lumi-scaffold", "edit/main/docs/")
    monkeypatch.setattr(lumi_docs, "home_url", lambda: "")
    config = lumi_docs.on_config(Config())
    assert (config.repo_url, config.repo_name, config.edit_uri) == (None, None, None)


# ---------------------------------------------------------------- hand-written commands


def commands(page: str) -> list[str]:
    """The lines of a page's indented code blocks, comments cut off."""
    text = (REPO / "docs" / page).read_text()
    return [line.split("  #")[0].strip() for line in re.findall(r"^    (\S.*)$", text, re.M)]


def test_install_commands_are_the_readmes():
    """docs/install.md repeats the README's install lines, which a test runs."""
    readme = {line.split("  #")[0].strip() for line in (REPO / "README.md").read_text().splitlines()}
    assert commands("install.md")
    assert [c for c in commands("install.md") if c not in readme] == []


def test_first_project_commands_are_the_generated_readmes_or_the_clis():
    golden = {line.split("  #")[0].strip() for path in (REPO / "tests" / "golden").glob("*/README.md")
              for line in path.read_text().splitlines()}
    used = commands("first-project.md")
    assert len(used) >= 6
    for command in used:
        if not command.startswith("lumi-scaffold "):
            assert command in golden, command
            continue
        sub = command.split()[1]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        result = subprocess.run([sys.executable, "-m", "lumi_scaffold.cli", sub, "--help"], capture_output=True,
                                text=True, env=env)
        assert result.returncode == 0, command
        options = re.findall(r"(?<!\w)(--[a-z][\w-]*|-d)(?=[\s=]|$)", command)
        assert [o for o in options if o not in result.stdout] == [], command


@pytest.mark.parametrize("page", cli.REFERENCE_PAGES)
def test_each_reference_page_is_printed_offline_as_the_site_has_it(page, capsys):
    """`lumi-scaffold reference PAGE` prints what the site's build writes, from the package."""
    assert list(cli.REFERENCE_PAGES) == list(reference.PAGES)
    assert cli.main(["reference", page]) == 0
    path = reference.PAGES[page][0]
    assert capsys.readouterr().out == lumi_docs.pages()[path]


def test_the_models_page_lists_every_field_a_plugin_may_give():
    page = reference.models_page()
    for model in (models.Site, models.Partition, models.ContainerImage, models.Framework, models.Source,
                  models.StorageArea, models.EnvModule, models.CotainrSupport):
        for name, field in model.model_fields.items():
            assert f"| `{field.alias or name}` |" in page, (model.__name__, name)


def test_the_glossary_defines_the_questionnaires_terms_with_sources_that_exist():
    from lumi_scaffold.glossary import TERMS
    from lumi_scaffold.sources import bibliography as load_sources

    page = reference.PAGES["glossary"][1]()
    for term in ("GCD", "LAIF", "LUST", "cotainr", "observed, not announced", "issue key", "profile rank", "RCCL",
                 "GPU-hours (billing units)"):
        assert f"\n## {term}\n" in page, term
    keys = set(re.findall(r"\[([A-Z][A-Za-z0-9-]+)\]", " ".join(TERMS.values())))
    assert keys and keys <= set(load_sources()), keys - set(load_sources())
    # the questionnaire's help and the generated README point at it
    assert "lumi-scaffold reference glossary" in (REPO / "copier.yml").read_text()
    assert all("lumi-scaffold reference glossary" in p.read_text() for p in (REPO / "tests" / "golden").glob("*/README.md"))
