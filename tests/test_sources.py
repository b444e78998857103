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
            # Plugins written as a third party's cite their own keys (Leonardo's registers them
            # with register_sources, its own tests check them): the tutorial's and Leonardo's.
            if "tests" in path.parts or {"tutorial-plugin", "lumi-site-leonardo"} & set(path.parts):
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
        assert set(entry) - {"sites"} == {"title", "url", "read"} and entry["url"].startswith("https://"), key
        assert entry.get("sites", ["x"]) and all(re.fullmatch(r"[a-z0-9-]+", s) for s in entry.get("sites", [])), key


def test_site_bound_sources_are_the_ones_about_one_site():
    """A key's `sites` follows its title: LUMI's guides, courses and images, Frontier's docs."""
    for key, entry in sources.bibliography().items():
        about = ("lumi" if re.search(r"\bLUMI\b|Getting Started with AI workshop", entry["title"])
                 else "frontier" if entry["title"].startswith("OLCF") else None)
        if key == "COT":  # cotainr's own guide (with LUMI examples) is about the tool, used on any site
            about = None
        assert entry.get("sites") == ([about] if about else None), key


@pytest.mark.parametrize(("text", "site", "cited"), [
    (" [AIG-05], [TM-Bind]", "lumi", " [AIG-05], [TM-Bind]"),
    (" [AIG-05], [TM-Bind]", "setonix", ""),
    ("reads these. [AIG-05]\nnext", "frontier", "reads these.\nnext"),
    ("x [WS-2026, FI-CXI, OLCF-PT] y", "lumi", "x [WS-2026, FI-CXI] y"),
    ("x [WS-2026, FI-CXI, OLCF-PT] y", "frontier", "x [FI-CXI, OLCF-PT] y"),
    ("x [WS-09], [PYPI], [AIG]", "setonix", "x [PYPI]"),
    ("JOBID [NODE] [SL-own]", "setonix", "JOBID [NODE] [SL-own]"),  # not the bibliography's: kept
], ids=["lumi-keeps", "other-drops-all", "blank-before-goes", "one-of-a-group", "frontier-keeps-its-own",
        "run-keeps-the-generic", "unknown-kept"])
def test_cite_drops_the_keys_of_other_sites(text, site, cited):
    assert sources.cite(text, site) == cited


def test_field_for_site_keeps_notes_and_generic_keys():
    assert sources.field_for_site("WS-ref, PYPI (flax 0.8.3), TM-Slurm (sinfo)", "lumi") == \
        "WS-ref, PYPI (flax 0.8.3), TM-Slurm (sinfo)"
    assert sources.field_for_site("WS-ref, PYPI (flax 0.8.3), TM-Slurm (sinfo)", "setonix") == "PYPI (flax 0.8.3)"
    assert sources.field_for_site("WS-ref", "frontier") == ""


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


def test_the_bibliography_reads_as_pyyaml_reads_it():
    """Read with libyaml for speed: the same data as PyYAML's own safe loader."""
    import yaml

    text = sources.BIBLIOGRAPHY.read_text(encoding="utf-8")
    assert sources.bibliography() == yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506


def test_readme_leaves_out_the_keys_of_files_the_project_does_not_get(template, tmp_path):
    """The preflight's values in scripts/values.sh cite [LAIF-R] where the job looks for
    rccl-tests, and only multi-node projects have them (a LAIF image's project cites it in
    its data too: here a LUST image's); the pre-staging values cite [AIG-04], and only
    prestaging projects have them. (A conditional file name renders to Copier's bare
    suffix, `.jinja`.)"""
    def listed(project):
        return set(re.findall(r"^- \*\*([A-Za-z0-9-]+)\*\*: \[", (project / "README.md").read_text(), re.M))

    one = render(template, tmp_path / "one", framework="jax", gpus_per_node=1, container="lust-jax-0.4.28")
    two = render(template, tmp_path / "two", nodes=2)
    assert not (one / "jobs/preflight.sbatch").exists() and "[LAIF-R]" not in (one / "scripts/values.sh").read_text()
    assert "[LAIF-R]" in (two / "scripts/values.sh").read_text()
    assert "LAIF-R" not in listed(one) and "LAIF-R" in listed(two)
    assert not (two / "scripts/lib/prestage.sh").exists() and "AIG-04" not in listed(two)
