"""Jinja extension that connects the catalogue to copier.yml and the templates.

Listed in copier.yml under ``_jinja_extensions`` (which is why ``--trust`` is needed).
Globals are prefixed ``lumi_`` so no answer can shadow them, and they only ever grow:
``copier update`` renders old template versions with today's extension.
"""

from __future__ import annotations

import functools
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import pass_context
from jinja2.ext import Extension
from jinja2.runtime import Context

from . import assemble, command, home_url, known_issues, plugins, questions, sources, values
from .errors import RefusedAnswer, LumiScaffoldError

def _catalogue() -> plugins.Catalogue:
    cat = plugins.get_catalogue()
    if cat.problems and not cat.problems_printed:
        cat.problems_printed = True
        for problem in cat.problems:
            if problem.kind != "note":
                print(f"lumi-scaffold: warning: {problem}", file=sys.stderr)
    return cat


def _answers(ctx: Context) -> dict[str, Any]:
    """The answers so far, as the project uses them (trimmed; lumi_scaffold.questions.normalise)."""
    return questions.normalised({k: v for k, v in ctx.get_all().items() if not k.startswith("_") and not callable(v)})


@dataclass
class _Worker:
    """What the lumi_* calls of one Copier worker share: Copier builds a Jinja environment for
    each worker (a copy; an update runs three), and LumiExtension gives each its own."""

    # An answer given with --data that its validator refused: Copier turns whatever a
    # validator raises into a ValueError, which plain `copier copy` prints with a traceback;
    # the next lumi_* call outside a validator raises it as Copier's user error instead
    # (every later question calls one, plugin_data's default last).
    refused: str = ""
    # The plugin_data object last validated and its PluginData: four globals read it, in
    # several files, and every file of a project shares the object.
    validated: tuple[Any, Any] = (None, None)
    # The answers lumi_resolve last computed plugin_data for (and the catalogue), and the
    # result: Copier renders plugin_data's default twice a copy, with the same answers.
    resolved: tuple[Any, Any, Any] = (None, None, None)


def _worker(ctx: Context) -> _Worker:
    state = getattr(ctx.environment, "lumi_worker", None)
    if state is None:  # an environment without LumiExtension (a test's own): one state for it
        state = _Worker()
        ctx.environment.extend(lumi_worker=state)
    return state


def _given(ctx: Context) -> Any:
    conf = ctx.get("_copier_conf")
    try:
        return conf["data"] if conf is not None else None
    except (KeyError, TypeError):
        return None


def _raise_refused(ctx: Context) -> None:
    state = _worker(ctx)
    if state.refused:
        message, state.refused = state.refused, ""
        raise _copier_aware(RefusedAnswer)(message)


def _as_copier_error(exc: LumiScaffoldError) -> BaseException:
    """``exc`` as an instance of a class that is also Copier's UserMessageError (same
    message and attributes, still an instance of its own class)."""
    from copier.errors import UserMessageError as CopierUserError

    if isinstance(exc, CopierUserError):
        return exc
    kind: Any = type(exc)
    cls = _copier_aware(kind)
    new = cls.__new__(cls)
    new.__dict__.update(exc.__dict__)
    new.args = exc.args
    return new


def _user_errors(func: Any) -> Any:
    """``func`` (a lumi_* global or filter) raising every lumi-scaffold error as Copier's
    one-line user error: plain `copier copy` and `copier update` print the message and
    remove what they wrote, instead of a traceback."""
    # Validators cannot raise one (Copier makes a ValueError of whatever they raise).
    takes_context = getattr(func, "jinja_pass_arg", None) is not None and func is not lumi_check

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if takes_context:
            _raise_refused(args[0])
        try:
            return func(*args, **kwargs)
        except LumiScaffoldError as exc:
            raise _as_copier_error(exc) from None

    return wrapper


@pass_context
def lumi_choices(ctx: Context, name: str) -> dict[str, Any]:
    """The question's choices; where it is asked (not given with --data), those its check
    refuses with the answers so far are disabled, with the check's message. A given answer
    is checked by the validator instead (Copier refuses a disabled choice with a traceback)."""
    data = _given(ctx)
    if data is not None and name in data:
        return questions.choices(name, _answers(ctx), _catalogue())
    return questions.offered_choices(name, _answers(ctx), _catalogue())



@pass_context
def lumi_default(ctx: Context, name: str) -> Any:
    return questions.default(name, _answers(ctx), _catalogue())


@pass_context
def lumi_check(ctx: Context, name: str) -> str:
    answers = _answers(ctx)
    message = questions.check(name, answers.get(name), answers, _catalogue())
    data = _given(ctx)
    if name == "plugin_data":
        # Never passed on: the files must not render with refused plugin_data. The last
        # question; an answer refused before it is refused here too (as Copier's ValueError,
        # or, where Copier checks a recorded answer and drops it, by lumi_resolve next).
        return message or _worker(ctx).refused
    if message and data is not None and name in data:
        # Copier would raise a ValueError (a traceback): the next lumi_* call outside a
        # validator raises it instead, at the latest plugin_data's default (lumi_resolve).
        _worker(ctx).refused = f"Validation error for question {name!r}: {message}"
        return ""
    return message


@pass_context
def lumi_resolve(ctx: Context) -> dict[str, Any]:
    answers, cat = _answers(ctx), _catalogue()
    data = _given(ctx)
    if isinstance(data, dict) and (unused := questions.unasked(data, cat, answers)):
        # An answer no question asks (profile_rank=3 with no profiler): Copier would drop it
        # silently (plugin_data, computed, is never validated: its default is where to say so).
        raise RefusedAnswer(unused)
    state = _worker(ctx)
    try:  # (with each answer's type: True and 1 are equal, and do not make the same project)
        key: Any = frozenset((name, type(value), value) for name, value in answers.items())
    except TypeError:  # an unhashable answer (a list given with --data): computed each time
        key = None
    if key is not None and state.resolved[0] is cat and state.resolved[1] == key:
        return state.resolved[2]
    try:
        data = assemble.resolve(answers, cat)
    except ValueError:
        # An answer Copier let through after its validator refused it (copier update checks
        # a recorded answer and drops it silently) is named as Copier would have; else the
        # error stands (plugin data a plugin's value broke: PluginDataError names it).
        for name, value in answers.items():
            if message := questions.check(name, value, answers, cat):
                raise RefusedAnswer(f"Validation error for question {name!r}: {message}") from None
        raise
    _try_plugin_texts(ctx, cat, data)
    state.resolved = (cat, key, data)
    return data


def _try_plugin_texts(ctx: Context, cat: plugins.Catalogue, data: dict[str, Any]) -> None:
    """Render this project's plugin texts (its framework's scripts, its plugin files) once
    while the answers are computed, before Copier writes any file: a plugin's text that
    fails with these answers (an undefined name) stops the copy with nothing written, also
    into a directory that existed before (which Copier does not remove)."""
    values = {**ctx.get_all(), "plugin_data": data}
    fw = cat.frameworks.get(str(ctx.get("framework")))
    if fw is not None:
        plugin = cat.provenance.get(("framework", fw.name), "?")
        for what, script in (("example", "train.py"), ("smoke_test", "smoke_test.py")):
            _render_plugin_text(ctx, getattr(fw, what), plugin, f"Framework {fw.name!r} {what} (the project's {script})",
                                values)
    owners = {"site": str(ctx.get("site")), "framework": str(ctx.get("framework"))}
    for file in cat.files:
        if owners[file.owner] == file.owner_name:
            _render_plugin_text(ctx, file.content, cat.plugin_of_file(file), f"{file.directory}/{file.name}", values)


@pass_context
def lumi_placeholders(ctx: Context) -> list[dict[str, str]]:
    """The answers that are still made-up examples (the site's example account...), each with
    ``name``, ``value``, ``why`` and ``fix``: the command that replaces it."""
    return [dict(p._asdict(), fix=f"lumi-scaffold update -d {p.name}={p.give}")
            for p in questions.placeholder_answers(_answers(ctx), _catalogue())]


def lumi_notices(plugin_data: Any) -> list[str]:
    return known_issues.notices(plugin_data if isinstance(plugin_data, dict) else {}, _catalogue())


@pass_context
def lumi_framework_text(ctx: Context, what: str) -> str:
    """The framework's smoke test or example script, rendered with the answers."""
    cat = _catalogue()
    fw = cat.frameworks.get(str(ctx.get("framework")))
    if fw is None or what not in ("smoke_test", "example"):
        return ""
    script = "train.py" if what == "example" else "smoke_test.py"
    where = f"Framework {fw.name!r} {what} (the project's {script})"
    return _render_plugin_text(ctx, getattr(fw, what), cat.provenance.get(("framework", fw.name), "?"), where)


def _render_plugin_text(ctx: Context, text: str, plugin: str, where: str, values: dict[str, Any] | None = None) -> str:
    """Render plugin-supplied Jinja (with ``values``, by default the context's); any error
    becomes one message naming the plugin, the file and the line."""
    from jinja2 import TemplateSyntaxError

    from .errors import LumiScaffoldError, PluginTemplateError

    try:
        return ctx.environment.from_string(text).render(ctx.get_all() if values is None else values)
    except LumiScaffoldError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the plugin's text does, it is reported, not a traceback
        line = exc.lineno if isinstance(exc, TemplateSyntaxError) else _template_line(exc)
        reason = f"{type(exc).__name__}: {exc}".replace("\n", " ")
        fix = (plugins.RAW_FIX if isinstance(exc, TemplateSyntaxError)
               else "use only the project's answers and plugin_data in the text")
        raise _copier_aware(PluginTemplateError)(plugin, where, line, reason, fix) from None


def _template_line(exc: BaseException) -> int | None:
    """The line of the string template in Jinja's rewritten traceback, if any."""
    line, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


@functools.cache
def _copier_aware(cls: Any) -> Any:
    """``cls`` that is also Copier's UserMessageError, so that ``copier copy`` prints its
    message alone instead of a traceback."""
    from copier.errors import UserMessageError

    return type(cls.__name__, (cls, UserMessageError), {"__module__": cls.__module__})


@pass_context
def lumi_plugin_files(ctx: Context, directory: str) -> list[dict[str, str]]:
    """Plugin-supplied files for ``directory`` that belong to this project's site or framework."""
    owners = {"site": str(ctx.get("site")), "framework": str(ctx.get("framework"))}
    files = [f for f in _catalogue().files if f.directory == directory and owners[f.owner] == f.owner_name]
    return [{"name": f.name, "content": f.content} for f in sorted(files, key=lambda f: f.name)]


@pass_context
def lumi_sources(ctx: Context) -> list[dict[str, str]]:
    """The sources behind this project: the keys its template files cite (in any branch),
    its plugin files and the framework's scripts cite, and the catalogue data it was made
    from (plugin_data's source fields); each with title, address and date read."""
    env, values = ctx.environment, ctx.get_all()
    root = str(ctx["_copier_conf"]["src_path"])
    always, conditional = sources.template_texts(root)
    texts = list(always)
    rendered: dict[str, str | None] = {}  # a folder's part recurs in each of its files' paths
    for name, text in conditional:
        if "yield" in name:  # plugin files: their contents below
            continue
        for part in name.split("/"):
            if part not in rendered:
                try:
                    # Part by part, as Copier renders paths (a file's name without the suffix),
                    # so the parts with Jinja are compiled already; the suffix stays, as before.
                    rendered[part] = _render_part(env, part, values)
                except Exception:  # noqa: BLE001 (a path this context cannot render is not this project's)
                    rendered[part] = None
        parts = [rendered[part] for part in name.split("/")]
        if None in parts:
            continue
        path = "/".join(map(str, parts))
        path = path[:-len(".jinja")] if path.endswith(".jinja") else path  # Copier's template suffix
        if all(path.split("/")):  # no empty part: a file (or folder) this project gets
            texts.append(text)
    texts += [f["content"] for d in ("scripts", "config") for f in lumi_plugin_files(ctx, d)]
    texts.append(lumi_values(ctx))
    cat = _catalogue()
    fw = cat.frameworks.get(str(ctx.get("framework")))
    texts += [fw.example, fw.smoke_test] if fw else []
    # The texts' keys as lumi_cite leaves them for this site; the data's all (the site's own).
    registered = {key: {"title": s.title, "url": s.url, "read": s.read or "(date not given)"}
                  for key, s in cat.sources.items()}
    return sources.cited_in(texts, ctx.get("plugin_data"), site=str(ctx.get("site")), registered=registered)


def _render_part(env: Any, part: str, values: dict[str, Any]) -> str:
    if "{" not in part:
        return part
    stem, suffix = (part[: -len(".jinja")], ".jinja") if part.endswith(".jinja") else (part, "")
    return str(env.from_string(stem).render(values)) + suffix


def _plugin_data(ctx: Context) -> Any:
    """The context's plugin_data validated (lumi_scaffold.plugin_data.validate_plugin_data),
    once per worker for the object every file of a project shares. The data is validated
    again when another object comes, or an equal copy."""
    from .plugin_data import validate_plugin_data

    state, data = _worker(ctx), ctx.get("plugin_data")
    if state.validated[0] is not data or data is None:
        state.validated = (data, validate_plugin_data(data))
    return state.validated[1]


@pass_context
def lumi_values(ctx: Context) -> str:
    """The text of the project's scripts/values.sh (lumi_scaffold.values): every value the
    jobs' static library reads, computed from the answers and plugin_data."""
    pd = _plugin_data(ctx)
    site = str(ctx.get("site"))
    return values.render(values.project_values(_answers(ctx), pd, lambda text: sources.cite(text, site)))


@pass_context
def lumi_refused(ctx: Context, what: str) -> str:
    """Why the answered partition takes no ``what`` (``"chains"``, ``"arrays"``), in the words
    of scripts/values.sh (lumi_scaffold.values.refused_here): plain text, to escape for the
    file's language."""
    return values.refused_here(_plugin_data(ctx),
                               {"chains": values.CHAINS, "arrays": values.ARRAYS}[what])


@pass_context
def lumi_launch_note(ctx: Context) -> list[str]:
    """How the training ranks start and get their CPUs, as comment lines (lumi_scaffold.values)."""
    site = str(ctx.get("site"))
    return command.launch_note(_plugin_data(ctx), str(ctx.get("launcher") or "srun"),
                              lambda text: sources.cite(text, site))


@pass_context
def lumi_command(ctx: Context, kind: str) -> str:
    """The job file's COMMAND for job ``kind`` (lumi_scaffold.values.command), as bash words."""
    fw = _catalogue().frameworks.get(str(ctx.get("framework")))
    words = command.command(_plugin_data(ctx), kind, fw.example if fw else "")
    return " ".join(command.shell_word(w) for w in words)


# The template's own files in a project, which `lumi-scaffold update` rewrites and the user
# does not edit: the library and the commands beside it (static files, copied as they are).
LIBRARY_DIRS = ("project-templates/project/scripts/lib", "project-templates/project/scripts")


@pass_context
def lumi_library_sums(ctx: Context) -> str:
    """``sha256sum``'s lines for the library files this project gets (scripts/lib/ and the
    static commands in scripts/), as the template has them: ``lumi-scaffold doctor`` (or
    ``sha256sum -c scripts/lib/SHA256SUMS``) names a library file that was changed."""
    env, values = ctx.environment, ctx.get_all()
    base = Path(str(ctx["_copier_conf"]["src_path"]))
    prefix = base / "project-templates" / "project"
    lines = []
    for directory in LIBRARY_DIRS:
        for path in sorted(p for p in (base / directory).rglob("*") if p.is_file()):
            relative = path.relative_to(prefix)
            if path.suffix == ".jinja" or path.name == "SHA256SUMS" or "__pycache__" in relative.parts \
                    or (directory.endswith("/scripts") and relative.parts[1] == "lib"):
                continue
            parts = [_render_part(env, part, values) for part in relative.parts]
            if all(parts):
                lines.append(f"{_sha256(path)}  {'/'.join(parts)}")
    return "\n".join(lines)


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


@pass_context
def lumi_cite(ctx: Context, text: str) -> str:
    """``text`` with the [KEY] citations this project's site does not cite left out (a
    LUMI source in a Frontier project), and an emptied citation with the blank before it:
    ``sentence.{{ ' [AIG-05], [TM-Bind]' | lumi_cite }}``. Empty when nothing is left, so
    ``{% if '[WS-ref]' | lumi_cite %}`` keeps prose that names such a source to its site."""
    return sources.cite(str(text), str(ctx.get("site")))


@pass_context
def lumi_render(ctx: Context, text: str) -> str:
    """Render plugin-supplied template text with the project's answers."""
    cat = _catalogue()
    owners = {"site": str(ctx.get("site")), "framework": str(ctx.get("framework"))}
    file = next((f for f in cat.files if f.content == text and owners[f.owner] == f.owner_name), None)
    if file is None:
        return _render_plugin_text(ctx, text, "?", "plugin text")
    return _render_plugin_text(ctx, text, cat.plugin_of_file(file), f"{file.directory}/{file.name}")


def lumi_py_text(value: Any) -> str:
    """Text for the inside of a double-quoted Python string or docstring: backslashes and
    double quotes escaped, so catalogue text (a site's title) cannot end the string."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"')


def lumi_sh(value: Any) -> str:
    """One shell word, quoted only where it needs quotes (catalogue text in a shell line)."""
    return shlex.quote(str(value))


def lumi_yaml(data: Any) -> str:
    """What Copier's ``to_nice_yaml`` writes: block style, 4-space indents (the answers file).

    libyaml's emitter wrote the same bytes for most data ~3 ms faster per copy; below the
    50 ms a second code path has to save to stay (docs/performance.md), so it went."""
    import yaml

    return yaml.dump(data, Dumper=yaml.Dumper, indent=4, allow_unicode=True, default_flow_style=False)


def lumi_path_variable(path: Any) -> str:
    """The environment variable a path starts with (``${MYSOFTWARE}/containers/x.sif``:
    MYSOFTWARE), '' for an absolute path."""
    from ._types import path_variable

    return path_variable(str(path))


def lumi_anchor(title: Any) -> str:
    """The anchor GitHub and GitLab give a Markdown heading: lower case; letters, digits,
    ``-`` and ``_`` kept, each space a ``-``, the rest dropped."""
    return "".join("-" if ch == " " else ch for ch in str(title).lower() if ch.isalnum() or ch in "-_ ")


def lumi_storage_variables(plugin_data: Any, *more: Any) -> list[str]:
    """The environment variables the project's storage paths start with
    (lumi_scaffold.plugin_data.storage_variables; ``more``: other paths, e.g. the dataset archive)."""
    from .plugin_data import storage_variables

    return storage_variables(plugin_data, *map(str, more))


def lumi_gpu(plugin_data: Any) -> dict[str, Any]:
    """What the runtime knows of the project's GPUs (lumi_scaffold.gpu_vendors: devices_variable,
    container_flag, collectives, monitor, title, gpu_word), from ``plugin_data``'s site:
    ``{{ (plugin_data | lumi_gpu).devices_variable }}``."""
    from .gpu_vendors import VENDORS

    site = (plugin_data or {}).get("site") or {}
    return VENDORS[str(site.get("gpu_vendor") or "amd")].facts()


# The Jinja globals and filters plugins and templates may rely on (docs/plugins/compatibility.md).
_GLOBALS = {f.__name__: _user_errors(f) for f in (
    lumi_choices, lumi_default, lumi_check, lumi_resolve, lumi_notices, lumi_placeholders, lumi_framework_text,
    lumi_plugin_files, lumi_sources, lumi_values, lumi_launch_note, lumi_refused, lumi_command, lumi_library_sums)}
_FILTERS = {f.__name__: _user_errors(f) for f in (
    lumi_render, lumi_yaml, lumi_py_text, lumi_sh, lumi_cite, lumi_path_variable, lumi_storage_variables, lumi_gpu,
    lumi_anchor)}


class LumiExtension(Extension):
    """Registers the ``lumi_*`` globals and filters on Copier's Jinja environment."""

    def __init__(self, environment) -> None:
        super().__init__(environment)
        environment.globals.update(_GLOBALS, lumi_home_url=home_url())
        environment.filters.update(_FILTERS)
        environment.extend(lumi_worker=_Worker())
        _share_compiled_code(environment)
        _normalise_answers(environment)


def _normalise_answers(env) -> None:
    """Every template Copier renders (files, paths, questions' fields, the answers file) sees
    the answers normalised (lumi_scaffold.questions.normalise: trimmed, whole numbers as
    ints, walltime as HH:MM:SS), and the answers file records them so; what Copier keeps in
    memory is untouched. The context-class hook of copier-template-extensions' ContextHook,
    on a copy of the context's variables."""
    base = env.context_class

    class LumiContext(base):  # type: ignore[misc, valid-type]
        def __init__(self, environment, parent, name, blocks, globals=None):
            if "_copier_conf" in parent:
                parent = _normalised_context(parent)
            super().__init__(environment, parent, name, blocks, globals=globals)

    env.context_class = LumiContext


def _normalised_context(parent: dict[str, Any]) -> dict[str, Any]:
    changed = {k: v for k, v in ((k, questions.normalise(k, parent[k])) for k in questions.QUESTIONS if k in parent)
               if v is not parent[k]}
    recorded = parent.get("_copier_answers")
    if isinstance(recorded, dict):
        answers = {k: questions.normalise(k, v) if k in questions.QUESTIONS else v for k, v in recorded.items()}
        if any(answers[k] is not recorded[k] for k in answers):
            changed["_copier_answers"] = answers
    return {**parent, **changed} if changed else parent


# Copier builds a new Jinja environment for every copy (three for an update) and compiles
# the same template strings and files in each. Within one process (the test matrix,
# check_conformance, an update) the compiled code is shared between environments of the
# same settings, filters and extensions: it depends on nothing else (Jinja runs filters on
# constants while compiling, and extensions take part in parsing). Nothing is kept across
# processes: a user's one copy compiles its template once (docs/performance.md).
_COMPILED: dict[tuple, Any] = {}
_COMPILED_MAX = 8192


def _settings(env) -> tuple:
    def callables(table) -> tuple:
        return tuple(sorted((name, _where(func), str(getattr(func, "jinja_pass_arg", ""))) for name, func in table.items()))

    autoescape = env.autoescape
    return (
        env.block_start_string, env.block_end_string, env.variable_start_string, env.variable_end_string,
        env.comment_start_string, env.comment_end_string, env.line_statement_prefix, env.line_comment_prefix,
        env.trim_blocks, env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline, env.optimized,
        env.is_async, env.finalize is None, str(getattr(env.finalize, "jinja_pass_arg", "")), type(env).__qualname__,
        tuple(sorted(env.extensions)), autoescape if not callable(autoescape) else _where(autoescape),
        callables(env.filters), callables(env.tests),
    )


def _where(func) -> str:
    return f"{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', type(func).__qualname__)}"


def _share_compiled_code(env) -> None:
    original = env.compile
    settings: list[tuple] = []  # taken at the first compile: the environment is still being built now

    def compile(source, name=None, filename=None, raw=False, defer_init=False):
        if raw or not isinstance(source, str):
            return original(source, name, filename, raw, defer_init)
        if not settings:
            settings.append(_settings(env))
        key = (settings[0], source, name, filename, defer_init)
        code = _COMPILED.get(key)
        if code is None:
            code = original(source, name, filename, raw, defer_init)
            if len(_COMPILED) >= _COMPILED_MAX:
                _COMPILED.clear()
            _COMPILED[key] = code
        else:
            # Extensions' preprocess hooks have side effects (Copier's yield tag resets its
            # state there): they run on a hit too; only parsing and code generation are saved.
            env.preprocess(source, name, filename)
        return code

    env.compile = compile
