"""Hook specifications for lumi-scaffold plugins.

Every hook receives a ``register`` callback. Call it once per object; it accepts a
model instance (``Site``, ``ContainerImage``, ``Framework``, ``Profiler``) or a plain
dict that validates into one. The host validates, rejects duplicate names and records
which plugin supplied what.

Compatibility promise: hooks gain arguments only (an implementation may accept fewer),
and no hook is removed, because ``copier update`` renders old template versions with the
plugins installed today.
"""

from __future__ import annotations

import pluggy

PROJECT = "lumi_scaffold"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_sites(register):
    """Register HPC sites: ``register(Site(...))`` for each site."""


@hookspec
def register_containers(register):
    """Register container images: ``register(ContainerImage(...))`` for each image."""


@hookspec
def register_frameworks(register):
    """Register frameworks (launchers, pins, smoke test, example script): ``register(Framework(...))``."""


@hookspec
def register_profilers(register):
    """Register profilers that wrap one rank: ``register(Profiler(...))``."""


@hookspec
def register_template_files(register):
    """Add files to generated projects: ``register(TemplateFile(...))``.

    Each file belongs to a site or framework and is written only into projects that
    use it; its text is a Jinja template rendered with the project's answers.
    """


@hookspec
def register_sources(register):
    """Register the sources your data and files cite: ``register(Source(key=..., title=...,
    url=..., read=...))``. Projects list them like the built-in ones (plugin API 1.2)."""
