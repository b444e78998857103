"""The ``LUMI_SCAFFOLD_*`` switches of lumi-scaffold itself, read here and nowhere else.

Each is an environment variable, so that one setting reaches every way in: the CLI, plain
``copier copy`` (which imports the extension) and a plugin's test suite. docs/install.md
lists them (a test checks that the page and :data:`SWITCHES` agree).

(The variables a generated project's jobs export for its own scripts, such as
``LUMI_SCAFFOLD_HEARTBEAT``, belong to the project, not to this package.)
"""

from __future__ import annotations

import os
from typing import NamedTuple

__all__ = ["DISABLE_PLUGINS", "PLUGINS", "SWITCHES", "TEMPLATE", "TEST_SITES", "Switch", "disabled_plugins",
           "plugins_to_load", "template", "test_sites"]


class Switch(NamedTuple):
    name: str
    meaning: str


TEMPLATE = "LUMI_SCAFFOLD_TEMPLATE"
PLUGINS = "LUMI_SCAFFOLD_PLUGINS"
DISABLE_PLUGINS = "LUMI_SCAFFOLD_DISABLE_PLUGINS"
TEST_SITES = "LUMI_SCAFFOLD_TEST_SITES"

SWITCHES = (
    Switch(TEMPLATE, "the template `lumi-scaffold new` and the conformance check render: a checkout or a Copier "
                     "source (default: this checkout, else the template bundled in the installed package)"),
    Switch(PLUGINS, "comma-separated entry-point names: load only these of the installed plugins (the built-in "
                    "ones always load); empty: none of them; unset: all"),
    Switch(DISABLE_PLUGINS, "comma-separated plugin names to leave out, built-in ones too (`jax`), e.g. one of two "
                            "plugins that register the same site"),
    Switch(TEST_SITES, "1: offer the sites that exist for lumi-scaffold's own tests (`local`)"),
)


def _names(variable: str) -> list[str] | None:
    value = os.environ.get(variable)
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def template() -> str | None:
    """$LUMI_SCAFFOLD_TEMPLATE, or None where it is unset or empty."""
    return os.environ.get(TEMPLATE) or None


def plugins_to_load() -> list[str] | None:
    """The plugins $LUMI_SCAFFOLD_PLUGINS names (None: unset, every plugin)."""
    return _names(PLUGINS)


def disabled_plugins() -> set[str]:
    """The plugins $LUMI_SCAFFOLD_DISABLE_PLUGINS leaves out."""
    return set(_names(DISABLE_PLUGINS) or [])


def test_sites() -> bool:
    """Whether $LUMI_SCAFFOLD_TEST_SITES asks for the test sites."""
    return os.environ.get(TEST_SITES) == "1"
