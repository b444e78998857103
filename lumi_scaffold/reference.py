"""The reference pages, made from the code: every question (the registry copier.yml is
written from, with the choices and defaults the built-in plugins give), the catalogue models (lumi_scaffold/models/),
PluginData (lumi_scaffold/plugin_data.py) and the hook specifications
(lumi_scaffold/hookspecs.py).

The documentation site builds them (docs/_hooks/lumi_docs.py), and ``lumi-scaffold
reference PAGE`` prints one offline, from the installed package, so a plugin author has
the field reference without building the site.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from typing import Any

from pydantic import BaseModel

from . import hookspecs, models, plugin_data, plugins, questions
from .glossary import glossary_page

__all__ = ["PAGES", "pages"]

GENERATED = "Generated from `{source}` (the documentation site and `lumi-scaffold reference` make it)."


# `lumi-scaffold reference PAGE` -> (site path, the function that makes it)
PAGES = {
    "questions": ("reference/questions.md", lambda: questions_page()),
    "models": ("reference/models.md", lambda: models_page()),
    "plugin-data": ("reference/plugin-data.md", lambda: plugin_data_page()),
    "hooks": ("reference/hookspecs.md", lambda: hookspecs_page()),
    "glossary": ("glossary.md", lambda: glossary_page()),
}


def pages() -> dict[str, str]:
    """Site path -> Markdown of every generated page."""
    return {path: make() for path, make in PAGES.values()}


def _md(doc: str | None) -> str:
    """reST docstring text as Markdown: ``code`` and :role:`name` become `code`."""
    text = inspect.cleandoc(doc or "")
    text = re.sub(r":[a-z]+:`~?(?:[\w.]+\.)?([\w]+)`", r"`\1`", text)
    return re.sub(r"``(.+?)``", r"`\1`", text, flags=re.S)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _anchor(name: str) -> str:
    return name.lower()


# ---- models


def _model_classes(module: types.ModuleType) -> list[type[BaseModel]]:
    """Public pydantic models defined in ``module`` (or a package's modules), in the order it names them."""
    return [v for n, v in vars(module).items()
            if inspect.isclass(v) and issubclass(v, BaseModel) and v.__module__.startswith(module.__name__)
            and not n.startswith("_") and v.model_fields]


def _type(annotation: Any, links: dict[type, str]) -> str:
    """A field's type as Markdown: nested models link to their section."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type(args[0], links) + _checked_as(args[1:])
    if origin is typing.Literal:
        return " \\| ".join(f"`{a!r}`" if a != "" else "`''`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join("`None`" if a is type(None) else _type(a, links) for a in args)
    if origin in (list, dict, tuple, set):
        return f"{origin.__name__} of " + ", ".join(_type(a, links) for a in args) if args else origin.__name__
    if inspect.isclass(annotation) and annotation in links:
        return f"[{annotation.__name__}]({links[annotation]})"
    return f"`{getattr(annotation, '__name__', annotation)}`"


def _checked_as(metadata: tuple | list) -> str:
    """' (slug)' for a value checked by _check_slug, ' (≥ 1)' for Field(ge=1), ..."""
    notes = []
    for item in metadata:
        func = getattr(item, "func", None)
        if func is not None:
            notes.append(re.sub(r"^_*(check_)?", "", func.__name__).replace("_", " "))
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"), ("min_length", "at least"),
                           ("max_length", "at most")):
            if getattr(item, attr, None) is not None:
                notes.append(f"{sign} {getattr(item, attr)}")
    return f" ({', '.join(notes)})" if notes else ""


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default_factory is not None else field.default
    if isinstance(value, BaseModel):
        value = value.model_dump()
    return f"`{value!r}`" if value not in ("", None) else ("`''`" if value == "" else "`None`")


def model_section(model: type[BaseModel], links: dict[type, str]) -> str:
    lines = [f"## {model.__name__}", "", _md(model.__doc__), "",
             "| Field | Type | Default | Description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        annotation = field.annotation
        constraints = _checked_as(field.metadata)
        lines.append(f"| `{field.alias or name}` | {_type(annotation, links)}{constraints} | {_default(field)} "
                     f"| {_cell(field.description or '')} |")
    return "\n".join(lines) + "\n"


def _models_doc(title: str, intro: str, classes: list[type[BaseModel]], links: dict[type, str]) -> str:
    parts = [f"# {title}", "", intro, ""]
    parts += [model_section(cls, links) for cls in classes]
    return "\n".join(parts)


def _catalogue_classes() -> list[type[BaseModel]]:
    registered = [model for _kind, model, _attr, _key in plugins.KINDS.values()]
    return registered + [c for c in _model_classes(models) if c not in registered]


def models_page() -> str:
    classes = _catalogue_classes()
    links = {c: f"#{_anchor(c.__name__)}" for c in classes}
    hooks = ", ".join(f"[`{hook}`](hookspecs.md#{hook})" for hook in plugins.KINDS)
    intro = (f"{GENERATED.format(source='lumi_scaffold/models/')}\n\n{_md(models.__doc__)}\n\n"
             f"Plugins register the first {len(plugins.KINDS)} through the hooks ({hooks}); the others are their parts. "
             "[The catalogue](../catalogue.md) explains the fields with examples and sources.")
    return _models_doc("Catalogue models", intro, classes, links)


def plugin_data_page() -> str:
    classes = _model_classes(plugin_data)
    classes = [plugin_data.PluginData] + [c for c in classes if c is not plugin_data.PluginData]
    links = {c: f"#{_anchor(c.__name__)}" for c in classes}
    links |= {c: f"models.md#{_anchor(c.__name__)}" for c in _catalogue_classes() if c not in links}
    intro = (f"{GENERATED.format(source='lumi_scaffold/plugin_data.py')}\n\n{_md(plugin_data.__doc__)}\n\n"
             f"Schema version written now: `{plugin_data.SCHEMA}`.")
    return _models_doc("Plugin data (`plugin_data`)", intro, classes, links)


# ---- hooks


def _hookspecs() -> list[types.FunctionType]:
    marker = f"{hookspecs.PROJECT}_spec"
    return [f for f in vars(hookspecs).values() if inspect.isfunction(f) and hasattr(f, marker)]


def hookspecs_page() -> str:
    parts = ["# Hook specifications", "", GENERATED.format(source="lumi_scaffold/hookspecs.py"), "",
             _md(hookspecs.__doc__), "",
             "Each hook with examples and what the host does with what it gets: [Plugin hooks](../hooks.md).", ""]
    for spec in _hookspecs():
        args = ", ".join(inspect.signature(spec).parameters)
        opts = {k: v for k, v in getattr(spec, f"{hookspecs.PROJECT}_spec").items() if v}
        parts += [f"## {spec.__name__}", "", f"```python\n@hookimpl\ndef {spec.__name__}({args}): ...\n```", "",
                  _md(spec.__doc__), ""]
        if spec.__name__ in plugins.KINDS:
            kind, model, _attr, key = plugins.KINDS[spec.__name__]
            parts += [f"`register` takes a [{model.__name__}](models.md#{_anchor(model.__name__)}) or a dict "
                      f"that validates into one; the {kind} is known by its `{key}`.", ""]
        if opts:
            parts += ["pluggy options: " + ", ".join(f"`{k}={v!r}`" for k, v in sorted(opts.items())), ""]
        guide = re.sub(r"[^\w-]", "", f"{spec.__name__}({args})".lower())
        parts += [f"Guide and example: [{spec.__name__}({args})](../hooks.md#{guide}).", ""]
    return "\n".join(parts)


# ---- questions


def builtin_catalogue() -> plugins.Catalogue:
    """The catalogue of the built-in plugins alone, so the page is the same wherever it is
    built, whatever plugins are installed there."""
    import importlib

    import pluggy

    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    infos = []
    for name, module in plugins.DEFAULT_PLUGINS.items():
        pm.register(importlib.import_module(module), name=name)
        infos.append(plugins.PluginInfo(name, module, builtin=True))
    return plugins.build_catalogue(pm, infos)


def _jinja(value: Any) -> str | None:
    """The expression inside ``{{ ... }}``, or None for a literal."""
    match = re.fullmatch(r"\{\{\s*(.*?)\s*\}\}", value.strip(), re.S) if isinstance(value, str) else None
    return match.group(1) if match else None


def questions_page() -> str:
    cat = builtin_catalogue()
    answers: dict[str, Any] = {"project_name": "my-project"}
    parts = [
        "# Every question", "",
        GENERATED.format(source="lumi_scaffold/questions.py"), "",
        "`lumi-scaffold new` (or `copier copy --trust`) asks these in this order. Each answer can be given on the "
        "command line instead, `-d NAME=VALUE` (`--data`), or in a YAML file (`--data-file`); `--defaults` takes "
        "the default of every question not given. The names do not change between versions.", "",
        "Choices and defaults come from the plugins installed beside lumi-scaffold. Shown here are those of the "
        "built-in plugins (LUMI, PyTorch, JAX, the profilers), each computed from the defaults of the questions "
        "before it; `lumi-scaffold plugins` lists what else is installed. Every answer is checked as it is given, "
        "and a wrong one is refused with a message that says what to give instead.", "",
        "| Question | Type | Asked |", "|---|---|---|",
    ]
    parts += [f"| [`{n}`](#{n}) | `{q.kind}` | {_asked(q)} |" for n, q in questions.QUESTIONS.items()]
    parts.append("")
    for q in questions.QUESTIONS.values():
        parts += _question(q, answers, cat)
    return "\n".join(parts)


def _asked(q: questions.Question) -> str:
    if q.computed:
        return "never (computed)"
    return f"when `{q.when.expression}`" if q.when else "always"


def _question(q: questions.Question, answers: dict[str, Any], cat: plugins.Catalogue) -> list[str]:
    name = q.name
    about = q.help or (_md(plugin_data.__doc__).splitlines()[0] if name == "plugin_data" else "")
    out = [f"## {name}", "", _cell(about), "", f"- **Type:** `{q.kind}`", f"- **Asked:** {_asked(q)}"]
    if q.computed:
        value = None
        out.append("- **Value:** computed from the answers and the catalogue, recorded in `.copier-answers.yml`; "
                   "its fields: [Plugin data](plugin-data.md).")
    elif q.default:
        value = questions.default(name, answers, cat)
        out.append(f"- **Default:** from the catalogue; with the built-in plugins: `{value}`")
    elif _jinja(q.literal) is not None:
        value = answers.get(name)
        out.append(f"- **Default:** computed, `{_jinja(q.literal)}`" + (f" (e.g. `{value}`)" if value else ""))
    else:
        value = q.literal
        shown = "''" if value == "" else str(value).lower() if isinstance(value, bool) else value
        out.append(f"- **Default:** `{shown}`")
    if q.choices:
        options = questions.choices(name, answers, cat, whole=True)
        out.append("- **Choices** with the built-in plugins:")
        out += [f"    - `{v}`: {_cell(label.split(': ', 1)[-1])}" for label, v in options.items()]
    if not q.computed:
        example = "true" if q.kind == "bool" else value if value not in (None, "") else "..."
        out.append(f"- **On the command line:** `-d {name}={example}`")
    if value is not None:
        answers[name] = value
    return [*out, ""]
