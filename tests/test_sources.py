"""Every source key the project cites has an entry in lumi_scaffold/sources.yaml, which
docs/sources.md shows, and every generated README lists the sources its files cite."""

from __future__ import annotations

import os
import re

import pytest

from lumi_scaffold import sources

from .helpers import REPO, render

# Bracketed words that are not citations: usage text ("JOBID [NODE]"), the README's "[KEY]".
NOT_CITATIONS = {"NODE", "KEY"}


def cited_keys() -> dict[str, set[str]]:
    """key -> files citing it: [KEY] in templates, plugin data, examples and docs; source:
    fields in YAML plugin data."""
    found: dict[str, set[str]] = {}
    roots = [REPO / "project-templates", REPO / "lumi_scaffold" / "default_plugins", REPO / "plugins", REPO / "docs"]
    for root in roots:
        for path in root.rglob("*"):
            if not path.is_file() or path.suffix not in (".jinja", ".yaml", ".py", ".md", ".sh", ".json", ""):
                continue
            if "tests" in path.parts or "tutorial-plugin" in path.parts:  # (a third party's plugin cites its own)
                continue
            text = path.read_text(errors="replace")
            keys = sources.keys_in_text(text)
            if path.suffix == ".yaml":
                for value in re.findall(r"^\s*(?:packages_)?source:\s*(.+)$", text, re.M):
                    keys |= sources.keys_in_field(value)
            for key in keys - NOT_CITATIONS:
                found.setdefault(key, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_cited_key_has_a_source():
    known = sources.bibliography()
    missing = {key: sorted(files) for key, files in cited_keys().items() if key not in known}
    assert not missing, f"keys without an entry in lumi_scaffold/sources.yaml: {missing}"
    for key, entry in known.items():
        assert set(entry) == {"title", "url", "read"} and entry["url"].startswith("https://"), key


def test_docs_sources_page_matches_the_bibliography():
    page = REPO / "docs" / "sources.md"
    if os.environ.get("LUMI_SCAFFOLD_UPDATE_GOLDEN") == "1":
        page.write_text(sources.markdown())
    assert page.read_text() == sources.markdown(), "rerun with LUMI_SCAFFOLD_UPDATE_GOLDEN=1"


@pytest.mark.parametrize("answers", [
    {},
    {"nodes": 2, "profiler": "rocprofv3", "profile_rank": 3, "prestage": True,
     "dataset_archive": "/scratch/project_465000000/d.tar"},
    {"framework": "jax", "gpus_per_node": 1, "container": "lust-jax-0.4.28"},
    {"launcher": "torchrun", "container": "cotainr", "gpus_per_node": 4},
], ids=["default", "2node-prestage-profile", "jax", "torchrun-cotainr"])
def test_readme_lists_the_sources_its_files_cite(template, tmp_path, answers):
    project = render(template, tmp_path / "p", **answers)
    readme = (project / "README.md").read_text()
    listed = set(re.findall(r"^- \*\*([A-Za-z0-9-]+)\*\*: \[", readme, re.M))
    cited = set()
    for path in project.rglob("*"):
        if path.is_file() and path.name != "README.md":
            cited |= sources.keys_in_text(path.read_text(errors="replace")) - NOT_CITATIONS
    answers_data = (project / ".copier-answers.yml").read_text()
    cited |= {k for value in re.findall(r"^\s*(?:packages_)?source: (.+)$", answers_data, re.M)
              for k in sources.keys_in_field(value.strip("'\""))}
    assert cited - {""} <= listed, sorted(cited - listed)
    assert listed <= set(sources.bibliography())
