"""lumi-scaffold: Copier template and plugin SDK for ML projects on LUMI.

Plugin authors need :data:`hookimpl`, the models and :func:`load_data_file`::

    from lumi_scaffold import hookimpl, Site, load_data_file

    @hookimpl
    def register_sites(register):
        register(load_data_file("mysite.yaml", Site))
"""

from __future__ import annotations

from .hookspecs import hookimpl

__version__ = "0.3.0"

# The version of what plugins may rely on: hooks and their arguments, the catalogue's YAML
# fields, the Jinja globals and filters, lumi_scaffold.testing (docs/plugins/compatibility.md).
# (major, minor): a minor version only adds; a major one may remove, after a minor version
# that warned. A plugin that needs a newer one says so with LUMI_SCAFFOLD_API = "1.2" in its
# module, and is then reported by name instead of failing. 1.0: lumi-scaffold 0.2; 1.1: 0.3; 1.2: 0.4.
PLUGIN_API = (1, 2)

# The project's home, the one place it is set: the docs site, `lumi-scaffold new`'s
# published template and every generated README take it from here, and tests check that
# the READMEs and docs that cannot import it say the same. PLACEHOLDER until the project
# has a public repository: change it here and run tests/test_docs_site.py.
HOME_URL = "https://github.com/org/lumi-scaffold"

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
    "hookimpl",
    "load_data_file",
]


def __getattr__(name: str):
    # Lazy re-exports keep `import lumi_scaffold` (and the CLI's start-up) cheap.
    if name == "load_data_file":
        from .datafile import load_data_file

        return load_data_file
    if name in __all__:
        from . import models

        return getattr(models, name)
    raise AttributeError(f"module 'lumi_scaffold' has no attribute {name!r}")
