"""The ``lumi-scaffold`` command: plugins, new, update, doctor, lint, completion.

Imports are deferred into the commands so that ``lumi-scaffold --help`` stays fast.
Every error the user can cause ends in one line on stderr and exit code 1 (2 for a
command line argparse cannot parse, 130 for Ctrl-C), never a traceback: errors raised on
purpose are :class:`~lumi_scaffold.errors.LumiScaffoldError`, and what Copier, plumbum,
YAML or the file system raise in ``new`` and ``update`` is turned into one.

argparse, not click or typer: what this module does by hand (one-line errors from Copier
and plumbum, checks of --data, Ctrl-C) would be the same code in either; what they give
for free (--version, help without arguments, completion) is ~60 lines here, and they would
be one more runtime dependency with their own multi-line usage errors.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sys
from pathlib import Path
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NoReturn

from . import settings
from .answers import read_answers, recorded_plugin_data
from .cli_data import check_data, check_site, check_unasked, parse_data, question_types
from .errors import Interrupted, LumiScaffoldError, UsageError, UserMessageError, copier_message, one_line

if TYPE_CHECKING:
    from .plugin_data import PluginData


def default_template() -> str:
    """$LUMI_SCAFFOLD_TEMPLATE, else this source checkout, else the template bundled in the
    installed package (recorded as ``~/.cache/lumi-scaffold/template.bundle``, see bundle.py)."""
    from .bundle import SOURCE

    if chosen := settings.template():
        return chosen
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "copier.yml").is_file():
        return str(checkout)
    return SOURCE


def progress(args: argparse.Namespace, message: str) -> None:
    """One line on stderr before a step that takes seconds (not with --quiet)."""
    if not getattr(args, "quiet", False):
        print(f"lumi-scaffold: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- commands


def reviewed(cat: Any, site: str) -> str:
    """'data reviewed 2026-11-24' (or that the site's plugin gives no date)."""
    when = cat.sites[site].reviewed if site in cat.sites else None
    return f"data reviewed {when.isoformat()}" if when else "no review date in its data (how current it is is unknown)"


def _iso(when: Any) -> str | None:
    return when.isoformat() if when else None


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
                    "reviewed": {n: _iso(cat.sites[n].reviewed) for n in p.registered.get("site", []) if n in cat.sites},
                }
                for p in cat.plugins
            ],
            "problems": [{"plugin": p.plugin, "message": p.message, "kind": p.kind} for p in cat.problems],
        }
        print(json.dumps(payload, indent=2))
    else:
        for p in cat.plugins:
            origin = "built-in" if p.builtin else f"{p.distribution} {p.version}"
            print(f"{p.name} ({origin})")
            print(f"  hooks: {', '.join(p.hooks) or '-'}")
            for kind, names in sorted(p.registered.items()):
                print(f"  {kind}s: {', '.join(names)}")
            for name in p.registered.get("site", []):
                print(f"  site {name}: {reviewed(cat, name)}")
        for problem in cat.problems:
            print(f"{_PROBLEM_LABELS.get(problem.kind, 'BROKEN')} {problem.plugin}: {problem.message}")
    return 1 if [p for p in cat.problems if p.kind != "note"] and args.strict else 0


# A note (an optional image whose site's plugin is not installed) is no fault of the plugin.
_PROBLEM_LABELS = {"warning": "WARNING", "note": "NOTE"}


def _check_destination(dest: Path) -> None:
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"{dest} is a file, not a directory. Fix: give the path of a new directory")
    if dest.is_dir() and any(dest.iterdir()):
        raise UsageError(f"{dest} exists and is not empty; choose a new directory")
    parent = next((p for p in dest.absolute().parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise UsageError(f"{dest}: {parent} is a file, not a directory. Fix: give the path of a new directory")


def cmd_new(args: argparse.Namespace) -> int:
    import copier
    from copier.errors import CopierError

    data = parse_data(args.data, args.data_file)
    dest = Path(args.destination)
    _check_destination(dest)
    check_data(data, question_types(args.template))
    check_site(data)
    check_unasked(data)
    from .bundle import template_ref

    vcs_ref = template_ref(args.template, args.vcs_ref)
    existed = dest.exists()
    try:
        worker = copier.run_copy(
            args.template,
            str(dest),
            data=data,
            defaults=args.defaults,
            unsafe=True,  # the template's own extension: lumi-scaffold itself
            quiet=args.quiet,
            vcs_ref=vcs_ref,
        )
    except BaseException as exc:
        # Copier removes a destination it created, except after Ctrl-C; one that existed
        # (empty) is emptied.
        if existed:
            _empty(dest)
        else:
            shutil.rmtree(dest, ignore_errors=True)
        # Copier's CopierAnswersInterrupt is a KeyboardInterrupt too.
        question = getattr(getattr(exc, "last_question", None), "var_name", None)
        at = f" at question {question!r}" if question else ""
        error = _user_error(exc, f"stopped{at} (Ctrl-C); nothing was generated")
        if error is None:
            raise
        if isinstance(exc, (CopierError, ValueError)) and not isinstance(exc, (LumiScaffoldError, KeyboardInterrupt)) \
                and copier_message(exc) == str(exc).strip():
            # Not about one question (those read 'question: message'): about the template.
            ref = f" at {args.vcs_ref}" if args.vcs_ref else ""
            raise UsageError(f"template {args.template}{ref}: {error}") from None
        raise error from None
    if args.quiet:  # (otherwise Copier's message after the copy names them, one line each)
        _warn_placeholders(dict(worker.answers.combined))
    return 0


def _user_error(exc: BaseException, interrupted: str) -> LumiScaffoldError | None:
    """What a Copier run (new, update) raised, as the error the command reports: Ctrl-C as
    :class:`Interrupted` (``interrupted`` its message), what Copier, plumbum, Jinja, YAML or
    the file system raised as one line; None for anything else, a bug of lumi-scaffold
    itself, which is re-raised with its traceback."""
    from copier.errors import CopierError
    from jinja2 import TemplateError
    from plumbum.commands.processes import ProcessExecutionError

    if isinstance(exc, KeyboardInterrupt):
        return Interrupted(interrupted)
    if isinstance(exc, LumiScaffoldError):  # a refused --data answer too (copier_ext raises it as Copier's words)
        return UsageError(one_line(copier_message(exc)))
    if isinstance(exc, ProcessExecutionError):
        stderr = one_line(exc.stderr or "") if (exc.stderr or "").strip() else f"exit code {exc.retcode}"
        argv = " ".join(map(str, exc.argv[:2])) if exc.argv else "a command"
        return UsageError(f"{argv} failed: {stderr}. Fix: check --template and --vcs-ref")
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return UsageError(f"{where}{exc.strerror or exc}")
    if isinstance(exc, (CopierError, ValueError, TemplateError)):
        return UsageError(one_line(copier_message(exc)))
    return None


def _warn_placeholders(answers: dict[str, Any]) -> None:
    from .plugins import get_catalogue
    from .questions import placeholders

    found = placeholders(answers, get_catalogue())
    if found:
        fix = " ".join(f"-d {item.split('=')[0]}=..." for item in found)
        print(f"lumi-scaffold: warning: placeholder answers left: {'; '.join(found)}. "
              f"Fix: after the first commit, lumi-scaffold update {fix}", file=sys.stderr)


def _empty(dest: Path) -> None:
    """Remove what a failed copy left in ``dest`` (which was empty or missing before)."""
    if not dest.is_dir():
        return
    for entry in dest.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def cmd_new_plugin(args: argparse.Namespace) -> int:
    from .newplugin import new_plugin

    new_plugin(args.destination, parse_data(args.data, None), defaults=args.defaults, quiet=args.quiet)
    return 0


def _project(path: str) -> Path:
    """The project directory as an absolute path: tools run inside it see the same files."""
    project = Path(path).expanduser().resolve()
    if not project.is_dir():
        raise UsageError(f"{path} is not a directory. Fix: give the path of a generated project")
    return project


def _check_plugins_installed(project: Path, answers: dict[str, Any]) -> None:
    """The site and framework of the project must still be in the catalogue: name the
    plugin that made them (from plugin_data.plugins) and how to get it back."""
    from .plugins import get_catalogue
    from .questions import check

    cat = get_catalogue()
    missing = [(kind, answers[kind]) for kind, have in (("site", cat.sites), ("framework", cat.frameworks))
               if answers.get(kind) and answers[kind] not in have]
    if not missing:
        if answers.get("site") in cat.sites and check("site", answers["site"], answers, cat):
            raise UsageError(f"{project}: {check('site', answers['site'], answers, cat)}")
        return
    recorded = (answers.get("plugin_data") or {}).get("plugins") or {}
    current = cat.plugin_versions()
    gone = [name for name, version in recorded.items() if name not in current and version != "builtin"]
    kind, name = missing[0]
    if gone:
        installs = " ".join(gone)
        raise UsageError(f"plugin {', '.join(gone)} made this project ({kind} {name!r}) and is not installed: "
                         f"pip install {installs}")
    raise UsageError(f"{kind} {name!r} of {project} is in no installed plugin. "
                     "Fix: install the plugin that provides it (lumi-scaffold plugins lists those installed)")


def cmd_lint(args: argparse.Namespace) -> int:
    from .lint import LINT_PROGRESS, lint_project
    from .plugins import get_catalogue

    project = _project(args.project)
    if not (project / "jobs").is_dir():
        raise UsageError(f"{args.project} does not look like a generated project (no jobs/ directory)")
    answers = read_answers(project, missing_ok=True)
    print(LINT_PROGRESS, file=sys.stderr, flush=True)
    problems = lint_project(project, get_catalogue(), str(answers.get("site") or ""))
    for line in problems:
        print(line)
    print(f"{len(problems)} problem(s)" if problems else "clean")
    return 1 if problems else 0


def cmd_update(args: argparse.Namespace) -> int:
    from .update import check_project, update_project

    data = parse_data(args.data, args.data_file)
    check_data(data, None)
    project = _project(args.project)
    _check_plugins_installed(project, read_answers(project, missing_ok=True))
    check_project(project)  # quick refusals (not git, uncommitted changes) come before the progress line
    progress(args, "rendering the old and new template versions (this takes a few seconds)...")
    try:
        result = update_project(project, data, pretend=args.pretend, vcs_ref=args.vcs_ref, quiet=args.quiet)
    except BaseException as exc:  # noqa: BLE001 - _user_error re-raises what is not the user's to fix
        error = _user_error(exc, "stopped (Ctrl-C); check `git status` in the project for a half-done update")
        if error is None:
            raise
        if isinstance(error, Interrupted):
            raise error from None
        message = str(error).removeprefix("copier update failed: ")
        raise UsageError(one_line(copier_message(Exception(message)))) from None
    if args.pretend:
        print(result.diff or "No changes.", end="" if result.diff else "\n")
    for notice in result.notices:
        print(f"lumi-scaffold: warning: {notice}", file=sys.stderr)
    if result.conflicts:
        verb = "would conflict" if args.pretend else "conflict"
        listing = "\n  ".join(result.conflicts)
        raise UserMessageError(
            f"{len(result.conflicts)} file(s) {verb} with your edits:\n  {listing}\n"
            "Fix: edit each file to keep the right lines between <<<<<<< and >>>>>>> (or apply the .rej hunks), "
            "delete the markers and .rej files, then git add and commit."
        )
    if not args.pretend and not args.quiet:
        print(updated_advice(result.changed, result.added))
    return 0


def updated_advice(changed: list[str], added: list[str]) -> str:
    """What to do after an update: review the changes, the new files among them too (untracked,
    `git diff` leaves them out), then commit."""
    if not changed:
        return "Already up to date."
    if not added:
        return f"Updated {len(changed)} file(s); review with `git diff`, then commit."
    return (f"Updated {len(changed)} file(s); review with `git diff`, and the {len(added)} new one(s) it does not show "
            f"(`git status` lists them): {', '.join(added)}; then `git add -A` and commit.")


def cmd_doctor(args: argparse.Namespace) -> int:
    from .lint import LINT_PROGRESS, lint_project
    from .plugins import get_catalogue
    from .update import project_notices, update_available

    from .doctor import (home_notice, image_check, ledger_notes, library_changes, observed_image_check, sbatch_test_only,
                         storage_checks, sweep_note, venv_files, venv_pack_notes)
    from .errors import SlurmUnreachable

    project = _project(args.project)
    answers = read_answers(project, missing_ok=True)
    try:
        notices = project_notices(project, answers)
    except UserMessageError as exc:  # e.g. no template version recorded: the other checks still run
        notices = [exc.message]
    data = _doctor_data(project, answers, notices)
    home = home_notice(project, data)
    notices += ([home] if home else []) + library_changes(project)
    print(LINT_PROGRESS, file=sys.stderr, flush=True)
    problems = lint_project(project, get_catalogue(), str(answers.get("site") or ""))
    if data and data.site.name in get_catalogue().sites:
        site = data.site.name
        print(f"note: site {site}: {reviewed(get_catalogue(), site)} (lumi-scaffold plugins lists every site's)")
    for line in notices:
        print(f"warning: {line}")
    for line in problems:
        print(f"problem: {line}")
    on_login_node = True  # Slurm answers here: the environment jobs are submitted from
    try:
        checks = sbatch_test_only(project)
    except SlurmUnreachable as exc:
        checks, on_login_node = [], False
        print(f"note: sbatch is here but no Slurm controller answers ({exc}): run doctor on a login node "
              "to have Slurm check the jobs (sbatch --test-only)")
    if checks is None:
        print("note: no sbatch on PATH: run doctor on a login node to have Slurm check the jobs (sbatch --test-only)")
    elif on_login_node and data:
        observed = observed_image_check(data, get_catalogue())
        # An observed image is proven by its own check below (one line, with the way back),
        # unless SIF gives another image.
        proven = observed is not None and not os.environ.get("SIF")
        checked = [] if proven else [image_check(data.container.path, container=data.container, project=project)]
        for problem in checked + storage_checks(answers, data):
            if problem is not None:
                problems.append(problem)
                print(f"problem: {problem}")
        if observed is not None:
            problems += [] if observed[0] else [observed[1]]
            print(f"{'note' if observed[0] else 'problem'}: {observed[1]}")
    for check in checks or []:
        print(f"{'ok' if check.ok else 'problem'}: {check.job}: sbatch --test-only: {check.message}")
    failed = [c for c in checks or [] if not c.ok]
    files = venv_files(project)
    if files is not None:
        print(f"note: venv/ holds {files} files: every job start looks them up on the file system, and each "
              "counts against its file quota (README.md, \"Create the venv\")")
    sweep = sweep_note(project, data) if data else None
    for note in venv_pack_notes(project) + ([sweep] if sweep else []):
        print(f"note: {note}")
    for note in ledger_notes(project):
        print(f"note: node ledger: {note}")
    newer = update_available(answers)
    if newer:
        print(f"note: {newer}")
    if not notices and not problems and not failed:
        print("No problems found.")
    return 1 if problems or failed else 0


def _doctor_data(project: Path, answers: dict[str, Any], notices: list[str]) -> PluginData | None:
    """The project's plugin_data as the model, or None, with why added to ``notices`` (where
    the update notices have not said it already); the checks that need it are then left out."""
    if not answers:
        return None  # no answers file: the notices say so
    try:
        return recorded_plugin_data(project, answers)
    except UserMessageError as exc:
        notices += [] if exc.message in notices else [exc.message]
        return None


def cmd_explain(args: argparse.Namespace) -> int:
    from .explain import energy_estimate, explain_project, format_report, read_project

    project = Path(args.project).resolve()
    if args.runs:
        from .runs import format_runs, output_root, read_runs

        _, data = read_project(project)
        root = output_root(data.output_root, args.output_root)
        runs = read_runs(root)
        estimates = {kind: f"{cost.at_limit:g} {cost.unit} at limit" for kind, cost in data.job.cost.items()}
        print(json.dumps(runs, indent=2) if args.json else format_runs(root, runs, estimates, energy_estimate(data)["text"]))
        return 0
    report = explain_project(project)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def cmd_completion(args: argparse.Namespace) -> int:
    from .completion import script

    print(script(build_parser(), args.shell, question_types(default_template()) or {}), end="")
    return 0


# ---------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line (usage is one --help away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}. Fix: see {self.prog} --help\n")


def cmd_template(args: argparse.Namespace) -> int:
    from .bundle import SOURCE, refresh

    refresh()
    print(SOURCE)
    return 0


# lumi_scaffold.reference.PAGES, named here so that `--help` does not import the models.
REFERENCE_PAGES = ("questions", "models", "plugin-data", "hooks", "glossary")


def cmd_reference(args: argparse.Namespace) -> int:
    from .reference import PAGES

    print(PAGES[args.page][1](), end="")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(prog="lumi-scaffold", description="ML projects for LUMI and other MI250X Slurm sites.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("plugins", help="list loaded plugins, what they registered, and broken ones")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--strict", action="store_true", help="exit 1 if any plugin is broken or warned about (notes do not count)")
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
                   help="answer a question: kind (site|framework), name, plugin_name, gpu_vendor (a site: amd|nvidia), "
                        "runs_on (a framework: pytorch|none), title, author, author_email")
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
    p.add_argument("--runs", action="store_true",
                   help="the project's runs instead: each job's report (steps, samples/s, step times, data wait, GPU-hours "
                   "and energy, beside explain's estimate)")
    p.add_argument("--output-root", metavar="DIR", help="with --runs: where the runs are (default: $OUTPUT_ROOT, else the project's)")
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("doctor", help="legacy images, plugin version skew and lint problems of a project")
    p.add_argument("project", nargs="?", default=".")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("lint", help="bash -n, shellcheck and #SBATCH checks on a generated project")
    p.add_argument("project", nargs="?", default=".")
    p.set_defaults(func=cmd_lint)

    p = sub.add_parser("template", help="write the installed template to ~/.cache/lumi-scaffold/template.bundle "
                                        "for plain Copier, and print that path",
                       description="Plain Copier: copier copy --trust '~/.cache/lumi-scaffold/template.bundle' "
                                   "my-project (quoted: Copier records the path with ~, the same for your group)")
    p.set_defaults(func=cmd_template)

    p = sub.add_parser("reference", help="print a reference page offline, as Markdown: every question, the catalogue "
                                         "models (every field a plugin may give), plugin data, the hooks, the glossary",
                       description="The pages the documentation site makes from the code (docs/index.md), printed "
                                   "from the installed package: lumi-scaffold reference models | less")
    p.add_argument("page", choices=REFERENCE_PAGES)
    p.set_defaults(func=cmd_reference)

    p = sub.add_parser("completion", help="print a bash or zsh completion script (eval it in your shell's rc file)",
                       description='Add to ~/.bashrc: eval "$(lumi-scaffold completion bash)"; '
                                   'to ~/.zshrc: eval "$(lumi-scaffold completion zsh)"')
    p.add_argument("shell", choices=["bash", "zsh"])
    p.set_defaults(func=cmd_completion)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return 0
    try:
        with plain_when_piped():
            code: int = args.func(args)
    except (LumiScaffoldError, KeyboardInterrupt) as exc:
        return report(exc)
    return code


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class _Plain:
    """A text stream that leaves out colour codes (Copier's ``create`` lines carry colorama's
    whatever the stream is)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(_ANSI.sub("", text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def plain_when_piped() -> Iterator[None]:
    """No colour codes on stdout or stderr where it is not a terminal (``lumi-scaffold new ...
    | tee``, a log file) or NO_COLOR is set (no-color.org); a terminal keeps Copier's colours."""
    saved = sys.stdout, sys.stderr
    no_color = bool(os.environ.get("NO_COLOR"))

    def plain(stream: Any) -> Any:
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        return _Plain(stream) if stream is not None and (no_color or not tty) else stream

    sys.stdout, sys.stderr = plain(saved[0]), plain(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def report(exc: LumiScaffoldError | KeyboardInterrupt) -> int:
    """The one place an error becomes what the command shows: its message on stderr after
    ``lumi-scaffold: error:``, and the exit code its class carries (1; 130 for Ctrl-C,
    :class:`Interrupted`). Every error class lives in :mod:`lumi_scaffold.errors`."""
    error = exc if isinstance(exc, LumiScaffoldError) else Interrupted("stopped (Ctrl-C)")
    print(f"lumi-scaffold: error: {error}", file=sys.stderr)
    return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
