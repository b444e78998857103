"""A plugin's own sources (register_sources): cited and listed in the README like the
built-in ones; a key nobody registers is a load warning; a built-in key stays built in."""

from __future__ import annotations

import types

from lumi_scaffold import Source, TemplateFile, hookimpl
from lumi_scaffold.testing import isolated_catalogue, render_project

from .helpers import template_copy

ANSWERS = {"project_name": "demo", "account": "project_465000000", "framework": "pytorch"}
CAMPUS = Source(key="CAMPUS-UG", title="Campus cluster user guide (test data)", url="https://example.org/campus/guide",
                read="2026-11-20")


def plugin(*sources: Source, cites: str = "CAMPUS-UG") -> tuple[str, object]:
    @hookimpl
    def register_template_files(register):
        register(TemplateFile(owner="framework", owner_name="pytorch", directory="config", name="campus.txt",
                              content=f"# the module names follow the site's guide [{cites}]\n"))

    @hookimpl
    def register_sources(register):
        for source in sources:
            register(source)

    return "lumi-campus", types.SimpleNamespace(register_template_files=register_template_files,
                                                register_sources=register_sources)


def test_a_registered_source_is_listed_in_the_readme(tmp_path):
    with isolated_catalogue(plugin(CAMPUS)) as cat:
        assert [str(p) for p in cat.problems] == []
        project = render_project(template_copy(tmp_path / "t"), tmp_path / "p", ANSWERS)
    readme = (project / "README.md").read_text()
    assert "- **CAMPUS-UG**: [Campus cluster user guide (test data)](https://example.org/campus/guide), read 2026-11-20" in readme


def test_a_key_nobody_registers_is_a_note_at_load():
    """Shown by `lumi-scaffold plugins`; not counted by --strict or conformance, so a plugin
    that cited its own keys before 0.4 keeps passing."""
    with isolated_catalogue(plugin()) as cat:
        assert [(p.kind, str(p)) for p in cat.problems] == [("note", (
            "plugin 'lumi-campus': cites [CAMPUS-UG], which neither lumi-scaffold's bibliography nor any plugin "
            "registers, so projects cannot list it. Fix: register it with register_sources (key, title, url, read)"))]


def test_a_built_in_key_is_not_taken_over():
    with isolated_catalogue(plugin(CAMPUS.model_copy(update={"key": "AIG-05"}), cites="AIG-05")) as cat:
        assert [str(p) for p in cat.problems] == [
            "plugin 'lumi-campus': source 'AIG-05' is in lumi-scaffold's own bibliography; yours is ignored. Fix: cite "
            "it as it is, or register it under another key"]
        assert "AIG-05" not in cat.sources


def test_a_bad_address_is_refused_at_load():
    with isolated_catalogue(plugin({"key": "CAMPUS-UG", "title": "x", "url": "javascript:alert(1)"})) as cat:
        problems = [str(p) for p in cat.problems]
    assert any("url" in p and "is not an http(s) address" in p for p in problems), problems
