"""lumi-scaffold: Copier template and plugin SDK for ML projects on LUMI.

Plugin authors need :data:`hookimpl`, the models and :func:`load_data_file`::

    from lumi_scaffold import hookimpl, Site, load_data_file

    @hookimpl
    def register_sites(register):
        register(load_data_file("mysite.yaml", Site))
"""

from __future__ import annotations

from .hookspecs import hookimpl

__version__ = "0.5.0"

# The version of what plugins may rely on: hooks and their arguments, the catalogue's YAML
# fields, the Jinja globals and filters, lumi_scaffold.testing (docs/plugins/compatibility.md).
# (major, minor): a minor version only adds; a major one may remove, after a minor version
# that warned. A plugin that needs a newer one says so with LUMI_SCAFFOLD_API = "1.3" in its
# module, and is then reported by name instead of failing. 1.0: lumi-scaffold 0.2; 1.1: 0.3; 1.2: 0.4;
# 1.3: 0.5.
PLUGIN_API = (1, 3)

# The project's home: the first of these Project-URL labels in the installed package's
# metadata (pyproject.toml [project.urls]); "" while it names none (the package is not
# published yet), and then the generated README and the docs site leave the link out.
# Labels compare as PEP 753 normalizes them (lower case, no punctuation or spaces).
HOME_URL_LABELS = ("homepage", "repository", "source")


def home_url() -> str:
    """The project's home address from the package metadata, or "" when it has none."""
    import importlib.metadata
    import re

    try:
        entries = importlib.metadata.metadata("lumi-scaffold").get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that is not installed
        return ""
    urls: dict[str, str] = {}
    for entry in entries:
        label, _, url = entry.partition(",")
        urls.setdefault(re.sub(r"[^a-z0-9]", "", label.lower()), url.strip())
    return next((urls[label] for label in HOME_URL_LABELS if urls.get(label)), "")


__all__ = [
    "ContainerGeneration",
    "ContainerImage",
    "EnvSetting",
    "Framework",
    "HOME_URL",
    "PLUGIN_API",
    "Profiler",
    "Site",
    "Source",
    "TemplateFile",
    "__version__",
    "home_url",
    "hookimpl",
    "load_data_file",
]


def __getattr__(name: str):
    # Lazy re-exports keep `import lumi_scaffold` (and the CLI's start-up) cheap.
    if name == "HOME_URL":  # read when asked: home_url()
        return home_url()
    if name == "load_data_file":
        from .datafile import load_data_file

        return load_data_file
    if name in __all__:
        from . import models

        return getattr(models, name)
    raise AttributeError(f"module 'lumi_scaffold' has no attribute {name!r}")
