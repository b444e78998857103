"""``lumi-scaffold new-plugin DEST``: scaffold a new plugin package from plugin_template/.

The plugin template is a small Copier template shipped inside this package. It uses no
Jinja extension, so it is copied without ``unsafe`` (no --trust needed). The command
itself is in cli.py; errors are :class:`~lumi_scaffold.errors.UsageError` (one line).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .errors import UsageError, copier_message

__all__ = ["TEMPLATE_DIR", "new_plugin"]

TEMPLATE_DIR = Path(__file__).with_name("plugin_template")


def new_plugin(dest: str | Path, data: dict[str, str] | None = None, *, defaults: bool = False, quiet: bool = False) -> Path:
    """Render the plugin template into ``dest`` (which must be empty or missing)."""
    import copier
    from copier.errors import CopierError

    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UsageError(f"{dest} exists and is not an empty directory; choose a new one")
    from . import PLUGIN_API, __version__

    needs = {"plugin_api": f"{PLUGIN_API[0]}.{PLUGIN_API[1]}", "lumi_scaffold_min": ".".join(__version__.split(".")[:2])}
    try:
        # Quiet: Copier would say "Copying from template version None" (this template is a
        # directory of the package, not a git repository); the summary below says what made it.
        worker = copier.run_copy(str(TEMPLATE_DIR), str(dest), data={**(data or {}), **needs}, defaults=defaults,
                                 unsafe=False, quiet=True, settings=copier.Settings())
    except (CopierError, ValueError) as exc:
        raise UsageError(copier_message(exc)) from None
    except KeyboardInterrupt:
        raise UsageError("stopped by the user") from None
    if not quiet:
        answers = worker.answers.combined
        for path in sorted(p.relative_to(dest) for p in dest.rglob("*") if p.is_file()):
            print(f"    create  {path}", file=sys.stderr)
        print(f"\nPlugin {answers['plugin_name']} is in {dest}, made by lumi-scaffold {__version__} for plugin API "
              f"{needs['plugin_api']}. Next:\n  cd {dest} && pip install -e '.[test]' && python -m pytest\n"
              "Then replace every value marked EXAMPLE with your own, each with its source.", file=sys.stderr)
    return dest
