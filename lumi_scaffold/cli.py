"""The ``lumi-scaffold`` command: plugins, new, lint.

Imports are deferred into the commands so that ``lumi-scaffold --help`` stays fast.
Every error the user can cause is a :class:`~lumi_scaffold.errors.LumiScaffoldError`: it
ends in one message and exit code 1, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from .errors import LumiScaffoldError, UsageError, UserMessageError, copier_message

TEMPLATE_ENV = "LUMI_SCAFFOLD_TEMPLATE"


def default_template() -> str:
    """$LUMI_SCAFFOLD_TEMPLATE, else this source checkout, else the template bundled in the
    installed package (recorded as ``~/.cache/lumi-scaffold/template.bundle``, see bundle.py)."""
    from .bundle import SOURCE

    if os.environ.get(TEMPLATE_ENV):
        return os.environ[TEMPLATE_ENV]
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "copier.yml").is_file():
        return str(checkout)
    return SOURCE


def parse_data(pairs: list[str], data_file: str | None) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if data_file:
        from ruamel.yaml import YAML

        try:
            loaded = YAML(typ="safe", pure=True).load(Path(data_file).read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"--data-file {data_file}: {exc}") from None
        if not isinstance(loaded, dict):
            raise UsageError(f"--data-file {data_file}: expected a mapping of question: answer")
        data.update(loaded)
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--data {pair!r}: write NAME=VALUE, e.g. --data nodes=2")
        data[name] = value
    return data


def cmd_plugins(args: argparse.Namespace) -> int:
    from .plugins import get_catalogue

    cat = get_catalogue()
    if args.json:
        payload = {
            "plugins": [
                {
                    "name": p.name,
                    "distribution": p.distribution,
                    "version": p.version,
                    "builtin": p.builtin,
                    "module": p.module,
                    "hooks": p.hooks,
                    "registered": p.registered,
                }
                for p in cat.plugins
            ],
            "problems": [{"plugin": p.plugin, "message": p.message} for p in cat.problems],
        }
        print(json.dumps(payload, indent=2))
    else:
        for p in cat.plugins:
            origin = "built-in" if p.builtin else f"{p.distribution} {p.version}"
            print(f"{p.name} ({origin})")
            print(f"  hooks: {', '.join(p.hooks) or '-'}")
            for kind, names in sorted(p.registered.items()):
                print(f"  {kind}s: {', '.join(names)}")
        for problem in cat.problems:
            print(f"BROKEN {problem.plugin}: {problem.message}")
    return 1 if cat.problems and args.strict else 0


def cmd_new(args: argparse.Namespace) -> int:
    import copier
    from copier.errors import CopierError

    data = parse_data(args.data, args.data_file)
    dest = Path(args.destination)
    if dest.exists() and any(dest.iterdir()):
        raise UsageError(f"{dest} exists and is not empty; choose a new directory")
    _check_types(data)
    from .bundle import template_ref

    vcs_ref = template_ref(args.template, args.vcs_ref)
    try:
        copier.run_copy(
            args.template,
            str(dest),
            data=data,
            defaults=args.defaults,
            unsafe=True,  # the template's own extension: lumi-scaffold itself
            quiet=args.quiet,
            vcs_ref=vcs_ref,
        )
    except BaseException as exc:
        _empty(dest)  # Copier removes a destination it created; one that existed (empty) is emptied here
        if isinstance(exc, LumiScaffoldError):
            raise
        if isinstance(exc, (CopierError, ValueError)):
            raise UsageError(copier_message(exc)) from None
        if isinstance(exc, KeyboardInterrupt):
            raise UsageError("stopped by the user; nothing was generated") from None
        raise
    return 0


def _empty(dest: Path) -> None:
    """Remove what a failed copy left in ``dest`` (which was empty or missing before)."""
    if not dest.is_dir():
        return
    for entry in dest.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


INT_QUESTIONS = ("nodes", "gpus_per_node", "profile_rank")


def _check_types(data: dict[str, Any]) -> None:
    """Copier reports a non-number as a bare int() error; name the question instead."""
    for name in INT_QUESTIONS:
        if name in data:
            try:
                int(data[name])
            except (TypeError, ValueError):
                raise UsageError(f"{name}={data[name]!r}: not a whole number. Fix: e.g. --data {name}=1") from None


def cmd_new_plugin(args: argparse.Namespace) -> int:
    from .newplugin import new_plugin

    new_plugin(args.destination, parse_data(args.data, None), defaults=args.defaults, quiet=args.quiet)
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    from .lint import lint_project
    from .plugins import get_catalogue

    project = Path(args.project)
    if not (project / "jobs").is_dir():
        raise UsageError(f"{project} does not look like a generated project (no jobs/ directory)")
    problems = lint_project(project, get_catalogue())
    for line in problems:
        print(line)
    print(f"{len(problems)} problem(s)" if problems else "clean")
    return 1 if problems else 0


def cmd_update(args: argparse.Namespace) -> int:
    from .update import update_project

    data = parse_data(args.data, args.data_file)
    _check_types(data)
    result = update_project(args.project, data, pretend=args.pretend, vcs_ref=args.vcs_ref, quiet=args.quiet)
    if args.pretend:
        print(result.diff or "No changes.", end="" if result.diff else "\n")
    for notice in result.notices:
        print(f"lumi-scaffold: warning: {notice}", file=sys.stderr)
    if result.conflicts:
        verb = "would conflict" if args.pretend else "conflict"
        listing = "\n  ".join(result.conflicts)
        raise UsageError(
            f"{len(result.conflicts)} file(s) {verb} with your edits:\n  {listing}\n"
            "Fix: edit each file to keep the right lines between <<<<<<< and >>>>>>> (or apply the .rej hunks), "
            "delete the markers and .rej files, then git add and commit."
        )
    if not args.pretend and not args.quiet:
        print(f"Updated {len(result.changed)} file(s); review with `git diff`, then commit." if result.changed else "Already up to date.")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from .lint import lint_project
    from .plugins import get_catalogue
    from .update import project_notices

    from .doctor import SlurmUnreachable, sbatch_test_only

    project = Path(args.project).resolve()
    try:
        notices = project_notices(project)
    except UserMessageError as exc:  # e.g. no template version recorded: the other checks still run
        notices = [exc.message]
    problems = lint_project(project, get_catalogue())
    for line in notices:
        print(f"warning: {line}")
    for line in problems:
        print(f"problem: {line}")
    try:
        checks = sbatch_test_only(project)
    except SlurmUnreachable as exc:
        checks = []
        print(f"note: sbatch is here but no Slurm controller answers ({exc}): run doctor on a login node "
              "to have Slurm check the jobs (sbatch --test-only)")
    if checks is None:
        print("note: no sbatch on PATH: run doctor on a login node to have Slurm check the jobs (sbatch --test-only)")
    for check in checks or []:
        print(f"{'ok' if check.ok else 'problem'}: {check.job}: sbatch --test-only: {check.message}")
    failed = [c for c in checks or [] if not c.ok]
    if not notices and not problems and not failed:
        print("No problems found.")
    return 1 if problems or failed else 0


def cmd_explain(args: argparse.Namespace) -> int:
    from .explain import explain_project, format_report

    report = explain_project(Path(args.project).resolve())
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lumi-scaffold", description="ML projects for LUMI and other MI250X Slurm sites.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("plugins", help="list loaded plugins, what they registered, and broken ones")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--strict", action="store_true", help="exit 1 if any plugin is broken")
    p.set_defaults(func=cmd_plugins)

    p = sub.add_parser("new", help="generate a project (copier copy with clean errors)")
    p.add_argument("destination")
    p.add_argument("-d", "--data", action="append", default=[], metavar="NAME=VALUE", help="answer a question")
    p.add_argument("--data-file", help="YAML file of answers")
    p.add_argument("--defaults", action="store_true", help="do not ask; use defaults for unanswered questions")
    p.add_argument("--template", default=default_template(), help="template source (default: %(default)s)")
    p.add_argument("--vcs-ref", default=None, help="template git ref (default: latest tag, or HEAD)")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_new)

    p = sub.add_parser("new-plugin", help="scaffold a new site or framework plugin package")
    p.add_argument("destination")
    p.add_argument("-d", "--data", action="append", default=[], metavar="NAME=VALUE",
                   help="answer a question: kind (site|framework), name, plugin_name, title, author, author_email")
    p.add_argument("--defaults", action="store_true", help="do not ask; use defaults for unanswered questions")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_new_plugin)

    p = sub.add_parser("update", help="copier update with trust; fails when conflicts are left, --pretend shows the diff")
    p.add_argument("project", nargs="?", default=".")
    p.add_argument("-d", "--data", action="append", default=[], metavar="NAME=VALUE", help="change an answer")
    p.add_argument("--data-file", help="YAML file of answers to change")
    p.add_argument("--pretend", action="store_true", help="show the diff the update would make; change nothing")
    p.add_argument("--vcs-ref", default=None, help="template git ref (default: the newest version tag)")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd_update)

    p = sub.add_parser("explain", help="each job's shape, rank binding and cost (GPU-hours) before you submit it")
    p.add_argument("project", nargs="?", default=".", help="the project directory (default: this one)")
    p.add_argument("--json", action="store_true", help="machine-readable output, every rank")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("doctor", help="legacy images, plugin version skew and lint problems of a project")
    p.add_argument("project", nargs="?", default=".")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("lint", help="bash -n, shellcheck and #SBATCH checks on a generated project")
    p.add_argument("project", nargs="?", default=".")
    p.set_defaults(func=cmd_lint)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except LumiScaffoldError as exc:
        print(f"lumi-scaffold: error: {exc}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
