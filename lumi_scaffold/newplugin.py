"""``lumi-scaffold new-plugin DEST``: scaffold a new plugin package from plugin_template/.

The plugin template is a small Copier template shipped inside this package. It uses no
Jinja extension, so it is copied without ``unsafe`` (no --trust needed). The command
itself is in cli.py; errors are :class:`~lumi_scaffold.errors.UsageError` (one line).
"""

from __future__ import annotations

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
    try:
        copier.run_copy(str(TEMPLATE_DIR), str(dest), data=data or {}, defaults=defaults, unsafe=False,
                        quiet=quiet, settings=copier.Settings())
    except (CopierError, ValueError) as exc:
        raise UsageError(copier_message(exc)) from None
    except KeyboardInterrupt:
        raise UsageError("stopped by the user") from None
    return dest
