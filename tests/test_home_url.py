"""The project's home address is set once, lumi_scaffold.HOME_URL: the generated README and
the docs site (tests/test_docs_site.py) take it from
there, and the files that cannot import it (READMEs, docs, comments) must say the same."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from lumi_scaffold import HOME_URL, copier_ext

from .helpers import REPO, render


def test_the_generated_readme_takes_the_home_url_from_one_constant(template, tmp_path, monkeypatch):
    monkeypatch.setattr(copier_ext, "HOME_URL", "https://example.org/lumi-elsewhere")
    readme = (render(template, tmp_path / "p") / "README.md").read_text()
    assert "[lumi-scaffold](https://example.org/lumi-elsewhere)" in readme


_HOME = re.compile(r"(?:https://github\.com/|gh:)[\w.-]+/lumi-scaffold\b")


def home_url_mismatches(home_url: str) -> list[str]:
    """file: address, for every address of the project's home in a tracked file (READMEs,
    docs and comments cannot import HOME_URL) that is not ``home_url`` or its gh: form."""
    allowed = {home_url, home_url.replace("https://github.com/", "gh:")}
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    out = []
    for name in files:
        path = REPO / name
        if not path.is_file() or path.suffix in (".pyc", ".bundle") or path == Path(__file__):
            continue
        out += [f"{name}: {m}" for m in _HOME.findall(path.read_text(errors="replace")) if m not in allowed]
    return out


def test_every_written_home_address_is_home_url():
    assert home_url_mismatches(HOME_URL) == []
    moved = home_url_mismatches("https://github.com/elsewhere/lumi-scaffold")
    assert any(m.startswith("README.md: gh:org/lumi-scaffold") for m in moved)
    assert any(m.startswith("lumi_scaffold/__init__.py: https://github.com/org/lumi-scaffold") for m in moved)
