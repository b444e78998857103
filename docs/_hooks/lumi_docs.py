"""MkDocs hooks (mkdocs.yml `hooks:`) for the lumi-scaffold site.

- The reference pages are written at build time from the code, never checked in
  (lumi_scaffold/reference.py, which `lumi-scaffold reference` prints offline too).
- The repository link is lumi_scaffold.home_url(), from the package metadata; none while
  the metadata names none.
- A relative link that leaves the site (../CHANGELOG.md, a plugin's folder) becomes a
  link to that file in the repository (without a home address: its text and the file's
  path in the repository), after checking that the file exists; a missing
  one is a warning, so `mkdocs build --strict` fails on it. Links between pages and their
  anchors are MkDocs's own checks (mkdocs.yml `validation:`).

The link function takes no MkDocs objects, so tests call it directly.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path

from lumi_scaffold import home_url
from lumi_scaffold.reference import pages

log = logging.getLogger("mkdocs.plugins.lumi_docs")
REPO = Path(__file__).resolve().parents[2]
BRANCH = "main"


# ---------------------------------------------------------------- MkDocs events


def on_config(config):
    home = home_url()
    if home:  # else no repository link at all
        config.repo_url = home
        config.repo_name = "/".join(home.rstrip("/").split("/")[-2:])  # owner/name
        config.edit_uri = f"edit/{BRANCH}/docs/"
    return config


def on_files(files, config):
    from mkdocs.structure.files import File

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.generated_by:
        return markdown
    source = Path(config.docs_dir) / page.file.src_path
    text, missing = repo_links(markdown, source, Path(config.docs_dir))
    for target in missing:
        log.warning("Doc file '%s' links to '%s', which is not in the repository.", page.file.src_path, target)
    return text


# ---------------------------------------------------------------- links out of the site

_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s#]+)(#[^)\s]*)?\)")


def repo_links(markdown: str, source: Path, docs_dir: Path) -> tuple[str, list[str]]:
    """``markdown`` with relative links to files that are not pages of the site (outside
    docs/, folders, non-Markdown files) pointed at the repository; and the targets that
    do not exist."""
    missing: list[str] = []
    home = home_url()

    def rewrite(match: re.Match) -> str:
        target = match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return match.group(0)  # external or absolute: left to MkDocs
        path = Path(posixpath.normpath((source.parent / target).as_posix()))
        if path.suffix == ".md" and path.is_relative_to(docs_dir):
            return match.group(0)  # a page: MkDocs checks it and its anchor
        if not path.exists():
            missing.append(target)
            return match.group(0)
        rel = path.relative_to(REPO).as_posix()
        if not home:
            return f"{match.group(1)} (`{rel}` in the lumi-scaffold repository)"
        kind = "tree" if path.is_dir() else "blob"
        return f"[{match.group(1)}]({home}/{kind}/{BRANCH}/{rel}{match.group(3) or ''})"

    return _LINK.sub(rewrite, markdown), missing


