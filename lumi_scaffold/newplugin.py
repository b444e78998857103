"""``lumi-scaffold new-plugin DEST``: scaffold a new plugin package from plugin_template/.

The plugin template is a small Copier template shipped inside this package. It uses no
Jinja extension, so it is copied without ``unsafe`` (no --trust needed). Errors end in
one line and exit code 1, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["TEMPLATE_DIR", "add_subcommand", "main", "new_plugin"]

TEMPLATE_DIR = Path(__file__).with_name("plugin_template")


class NewPluginError(Exception):
    """Printed as 'lumi-scaffold: error: <message>' with exit code 1."""


def _parse_data(pairs: list[str]) -> dict[str, str]:
    from .cli import CliError, parse_data

    try:
        return parse_data(pairs, None)
    except CliError as exc:
        raise NewPluginError(str(exc)) from None


def _message(exc: BaseException) -> str:
    """Copier's question errors as 'question: message' (shared with ``lumi-scaffold new``)."""
    from .cli import _copier_message

    return _copier_message(exc)


def new_plugin(dest: str | Path, data: dict[str, str] | None = None, *, defaults: bool = False, quiet: bool = False) -> Path:
    """Render the plugin template into ``dest`` (which must be empty or missing)."""
    import copier
    from copier.errors import CopierError

    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise NewPluginError(f"{dest} exists and is not an empty directory; choose a new one")
    try:
        copier.run_copy(str(TEMPLATE_DIR), str(dest), data=data or {}, defaults=defaults, unsafe=False,
                        quiet=quiet, settings=copier.Settings())
    except (CopierError, ValueError) as exc:
        raise NewPluginError(_message(exc)) from None
    except KeyboardInterrupt:
        raise NewPluginError("stopped by the user") from None
    return dest


def _run(args: argparse.Namespace) -> int:
    try:
        new_plugin(args.destination, _parse_data(args.data), defaults=args.defaults, quiet=args.quiet)
    except NewPluginError as exc:
        print(f"lumi-scaffold: error: {exc}", file=sys.stderr)
        return 1
    return 0


def add_subcommand(subparsers) -> argparse.ArgumentParser:
    """Add ``new-plugin`` to the ``lumi-scaffold`` subcommands; its handler returns the exit code."""
    p = subparsers.add_parser("new-plugin", help="scaffold a new site or framework plugin package")
    p.add_argument("destination")
    p.add_argument("-d", "--data", action="append", default=[], metavar="NAME=VALUE",
                   help="answer a question: kind (site|framework), name, plugin_name, title, author, author_email")
    p.add_argument("--defaults", action="store_true", help="do not ask; use defaults for unanswered questions")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=_run)
    return p


def main(argv: list[str] | None = None) -> int:
    """``python -m lumi_scaffold.newplugin new-plugin DEST ...`` (until the CLI wires it in)."""
    parser = argparse.ArgumentParser(prog="lumi-scaffold")
    add_subcommand(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
